//! `controlplane.sweep`: what the control plane of a cluster no live record owns left on any
//! management cluster, found by its labels and deleted in order: the HostedCluster first
//! (HyperShift tears down its control plane and the add-ons' objects there), then the
//! secrets it was given, then its namespace.

use std::fmt::Debug;

use hypersaga_bus::sweep::Made;
use hypersaga_bus::{Outputs, StepCommand, StepError};
use hypersaga_hypershift::HostedCluster;
use hypersaga_model::TenantId;
use hypersaga_stepkit::kube::{self as kube_ops, Check};
use hypersaga_worker::StepResult;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Resource;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::info;

use crate::handler::ControlPlaneHandler;

impl ControlPlaneHandler {
    /// Every `K` labelled for `tenant` (and `cluster`), on every management cluster.
    async fn labelled<K>(
        &self,
        tenant: &TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<Made>, StepError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        let mut found = Vec::new();
        for (name, client) in self.clients.all() {
            found.extend(kube_ops::labelled::<K>(client, name, tenant, cluster).await?);
        }
        Ok(found)
    }

    /// HostedClusters, secrets and namespaces labelled for `tenant` (and `cluster`), in the
    /// order a sweep deletes them.
    pub(crate) async fn labelled_all(
        &self,
        tenant: &TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<Made>, StepError> {
        let mut found = self.labelled::<HostedCluster>(tenant, cluster).await?;
        found.extend(self.labelled::<Secret>(tenant, cluster).await?);
        found.extend(self.labelled::<Namespace>(tenant, cluster).await?);
        Ok(found)
    }

    /// Runs `controlplane.sweep`. Idempotent: each attempt lists again; an object already
    /// going is only waited for.
    pub(crate) async fn sweep(&self, cmd: &StepCommand) -> Result<StepResult, StepError> {
        let (tenant, cluster) = (&cmd.tenant, Some(cmd.cluster.as_str()));
        for made in self.labelled::<HostedCluster>(tenant, cluster).await? {
            let check = kube_ops::delete_made::<HostedCluster>(self.client_on(&made)?, &made);
            if let Some(wait) = self.swept(cmd, &made, check.await?)? {
                return Ok(wait);
            }
        }
        for made in self.labelled::<Secret>(tenant, cluster).await? {
            let check = kube_ops::delete_made::<Secret>(self.client_on(&made)?, &made);
            if let Some(wait) = self.swept(cmd, &made, check.await?)? {
                return Ok(wait);
            }
        }
        for made in self.labelled::<Namespace>(tenant, cluster).await? {
            let check =
                kube_ops::delete_made_cluster_scoped::<Namespace>(self.client_on(&made)?, &made);
            if let Some(wait) = self.swept(cmd, &made, check.await?)? {
                return Ok(wait);
            }
        }
        Ok(StepResult::Done(Outputs::new()))
    }

    /// The client of the management cluster `made` is on.
    fn client_on(&self, made: &Made) -> Result<kube::Client, StepError> {
        self.clients.named(&made.location).ok_or_else(|| {
            StepError::terminal(
                "UnknownManagementCluster",
                format!(
                    "management cluster {:?} is gone from this service's configuration",
                    made.location
                ),
            )
        })
    }

    /// `None` once `made` is gone; the wait for it while it is not.
    fn swept(
        &self,
        cmd: &StepCommand,
        made: &Made,
        check: Check<()>,
    ) -> Result<Option<StepResult>, StepError> {
        match check {
            Check::Done(()) => {
                info!(object = %made.id, kind = %made.kind, on = %made.location, "swept");
                Ok(None)
            }
            Check::Fail(e) => Err(e),
            Check::Wait(why) => self
                .waits
                .wait(cmd, "SweepPending", &made.id, why, Value::Null)
                .map(Some),
        }
    }
}
