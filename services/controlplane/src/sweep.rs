//! `controlplane._sweep`: what the control plane of a cluster no live record owns left on any
//! management cluster, found by its labels and deleted in order: the HostedCluster first
//! (HyperShift tears down its control plane and the add-ons' objects there), then its
//! namespace, with the secrets it was given.

use hypersaga_bus::sweep::Made;
use hypersaga_bus::{Outputs, StepCommand, StepError};
use hypersaga_hypershift::HostedCluster;
use hypersaga_model::TenantId;
use hypersaga_stepkit::kube::{self as kube_ops, Check};
use hypersaga_worker::StepResult;
use k8s_openapi::api::core::v1::Namespace;
use serde_json::Value;
use tracing::info;

use crate::handler::ControlPlaneHandler;

impl ControlPlaneHandler {
    /// HostedClusters and namespaces labelled for `tenant` (and `cluster`), on every
    /// management cluster, in the order a sweep deletes them. The secrets hypersaga gives a
    /// HostedCluster go with its namespace (and listing secrets would mean reading every
    /// secret of the management cluster).
    pub(crate) async fn labelled_all(
        &self,
        tenant: &TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<Made>, StepError> {
        let mut found = self
            .clients
            .labelled::<HostedCluster>(tenant, cluster)
            .await?;
        found.extend(self.clients.labelled::<Namespace>(tenant, cluster).await?);
        Ok(found)
    }

    /// Runs `controlplane._sweep`: what the command's cluster made (in its namespace), on any
    /// management cluster, deleted one after another. Idempotent: each attempt lists again; an
    /// object already going is only waited for.
    pub(crate) async fn sweep(&self, cmd: &StepCommand) -> Result<StepResult, StepError> {
        // Its own management cluster must be one this service knows, or what is there would
        // be left while the sweep says it is done.
        self.clients.of(cmd)?;
        let found = self.labelled_all(&cmd.tenant, Some(&cmd.cluster)).await?;
        for made in &hypersaga_stepkit::sweep::of_the_cluster(found, cmd) {
            let client = self.clients.on(made)?;
            let check = if made.kind.ends_with("/Namespace") {
                kube_ops::delete_made_cluster_scoped::<Namespace>(client, made).await?
            } else {
                kube_ops::delete_made::<HostedCluster>(client, made).await?
            };
            match check {
                Check::Done(()) => {
                    info!(object = %made.id, kind = %made.kind, on = %made.location, "swept");
                }
                Check::Fail(e) => return Err(e),
                Check::Wait(why) => {
                    return self
                        .waits
                        .wait(cmd, "SweepPending", &made.id, why, Value::Null);
                }
            }
        }
        Ok(StepResult::Done(Outputs::new()))
    }
}
