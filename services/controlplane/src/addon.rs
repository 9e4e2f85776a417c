//! The `controlplane.addon.<name>` step: one add-on of the cluster, rolled out by Package
//! Operator as an `ObjectDeployment` in the cluster's control-plane namespace.
//!
//! hypersaga does not apply the add-on's objects itself: Package Operator runs the phases in
//! order, the `hosted-cluster` ones through its remote-phase connector into the hosted cluster,
//! and reports. The step applies the `ObjectDeployment` and waits for what Package Operator
//! says of its current template; removing the add-on is deleting it and waiting until Package
//! Operator has torn its objects down and let it go.

use hypersaga_addons::{
    ADDON_LABEL, Catalog, DeploymentStatus, ObjectDeploymentTarget, Owner, is_current_object_set,
    object_deployment, read_status, refusal,
};
use hypersaga_bus::plan::{StepPlan, Target};
use hypersaga_bus::{AddonOutputs, Outputs, StepCommand, StepError, StepOutputs};
use hypersaga_stepkit::kube::{self as kube_ops, Check, Notes, target};
use hypersaga_worker::StepResult;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use kube::core::{ApiResource, DynamicObject};
use serde_json::Value;
use tracing::info;

use crate::handler::ControlPlaneHandler;

/// Package Operator's `ObjectDeployment` (`package-operator.run/v1alpha1`).
fn object_deployments() -> ApiResource {
    ApiResource {
        group: PACKAGE_OPERATOR_GROUP.into(),
        version: PACKAGE_OPERATOR_VERSION.into(),
        api_version: format!("{PACKAGE_OPERATOR_GROUP}/{PACKAGE_OPERATOR_VERSION}"),
        kind: "ObjectDeployment".into(),
        plural: "objectdeployments".into(),
    }
}

/// Package Operator's `ObjectSet`: one per revision of an `ObjectDeployment`'s template,
/// listed (by the add-on's label) to read why the current one cannot become available.
fn object_sets() -> ApiResource {
    ApiResource {
        group: PACKAGE_OPERATOR_GROUP.into(),
        version: PACKAGE_OPERATOR_VERSION.into(),
        api_version: format!("{PACKAGE_OPERATOR_GROUP}/{PACKAGE_OPERATOR_VERSION}"),
        kind: "ObjectSet".into(),
        plural: "objectsets".into(),
    }
}

const PACKAGE_OPERATOR_GROUP: &str = "package-operator.run";
const PACKAGE_OPERATOR_VERSION: &str = "v1alpha1";

impl ControlPlaneHandler {
    /// `do`: the add-on's `ObjectDeployment` at the version the spec pins, available.
    ///
    /// Idempotent: the `ObjectDeployment` is named after the add-on and written by a forced
    /// server-side apply of the whole template, so a repeated `do` is a no-op for Package
    /// Operator (same template, same revision); a re-check only looks.
    pub(crate) async fn addon_do(
        &self,
        cmd: &StepCommand,
        name: &str,
        notes: &dyn Notes,
    ) -> Result<StepResult, StepError> {
        let want = cmd.context.spec.addon(name).ok_or_else(|| {
            StepError::terminal(
                "AddonNotInSpec",
                format!("the cluster's spec carries no add-on {name}"),
            )
        })?;
        let ns = cmd.context.names.control_plane_namespace();
        let what = target("ObjectDeployment", Some(&ns), name);
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.clients.of(cmd)?, &ns, &object_deployments());
        if !cmd.is_recheck() {
            let catalog = self.catalog()?;
            let owner = Owner::of(want.scope, &cmd.tenant);
            let record = catalog
                .get(&owner, name, &want.version)
                .await
                .map_err(|e| StepError::retryable("AddonCatalogUnavailable", e.to_string()))?
                .ok_or_else(|| {
                    StepError::terminal(
                        "AddonVersionNotFound",
                        format!(
                            "add-on {name} version {} is not in the {} catalog (was it deleted?): put it again, or move the cluster to another version",
                            want.version,
                            want.scope.as_str()
                        ),
                    )
                })?;
            notes
                .note(format!(
                    "applying ObjectDeployment {name} (version {}) for Package Operator",
                    want.version
                ))
                .await;
            let labels = crate::handler::base_labels(cmd);
            let od = object_deployment(
                &record.addon,
                &ObjectDeploymentTarget {
                    namespace: &ns,
                    scope: want.scope,
                    labels: &labels,
                },
            );
            let od: DynamicObject = serde_json::from_value(od).map_err(|e| {
                StepError::terminal("AddonEncoding", format!("{what}: {e}")).with_target(&what)
            })?;
            kube_ops::apply(&api, name, &od, &what)
                .await
                .map_err(|e| without_package_operator(e, cmd))?;
        }
        let Some(od) = kube_ops::look(&api, name, &what).await? else {
            return self.waits.wait(
                cmd,
                "AddonNotAvailable",
                &what,
                format!("{what} is not there yet"),
                Value::Null,
            );
        };
        let od = serde_json::to_value(&od).unwrap_or(Value::Null);
        match check_available(&od, &what, &want.version) {
            Check::Done(outputs) => {
                info!(object = %what, version = %outputs.version, "add-on available");
                Ok(StepResult::Done(outputs.into_outputs()))
            }
            Check::Fail(e) => Err(e),
            Check::Wait(why) => {
                let sets: Api<DynamicObject> =
                    Api::namespaced_with(self.clients.of(cmd)?, &ns, &object_sets());
                if let Some(refused) = self.refused(&sets, &od, name, &what).await? {
                    return Err(refused);
                }
                self.waits
                    .wait(cmd, "AddonNotAvailable", &what, why, Value::Null)
            }
        }
    }

    /// Package Operator's refusal of the current revision (its preflight's, or a collision),
    /// as the step's terminal error: no retry applies a template the API server refuses.
    async fn refused(
        &self,
        sets: &Api<DynamicObject>,
        od: &Value,
        name: &str,
        what: &str,
    ) -> Result<Option<StepError>, StepError> {
        let listed = sets
            .list(&ListParams::default().labels(&format!("{ADDON_LABEL}={name}")))
            .await
            .map_err(|e| kube_ops::step_error(&e, what))?;
        Ok(listed
            .items
            .iter()
            .map(|os| serde_json::to_value(os).unwrap_or(Value::Null))
            .find(|os| is_current_object_set(od, os))
            .and_then(|os| refusal(&os))
            .map(|message| {
                StepError::terminal(
                    "AddonRefused",
                    format!("Package Operator cannot roll out {what}: {message}"),
                )
                .with_target(what)
            }))
    }

    /// `undo`: the add-on's `ObjectDeployment` deleted, and gone: Package Operator removes its
    /// objects from both clusters (phases in reverse order) before it lets the object go.
    ///
    /// Idempotent: a 404 is success, and a delete already under way is only watched.
    pub(crate) async fn addon_undo(
        &self,
        cmd: &StepCommand,
        name: &str,
    ) -> Result<StepResult, StepError> {
        let ns = cmd.context.names.control_plane_namespace();
        let what = target("ObjectDeployment", Some(&ns), name);
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.clients.of(cmd)?, &ns, &object_deployments());
        // Foreground: Package Operator's ObjectDeployment has no finalizer of its own, so only
        // the garbage collector's foreground deletion keeps it until its ObjectSets have torn
        // the objects down, in both clusters.
        match kube_ops::delete_check_with(&api, name, &what, &DeleteParams::foreground()).await? {
            Check::Done(()) => {
                info!(object = %what, "add-on removed");
                Ok(StepResult::Done(Outputs::new()))
            }
            Check::Fail(e) => Err(e),
            Check::Wait(why) => self
                .waits
                .wait(cmd, "AddonNotRemoved", &what, why, Value::Null),
        }
    }

    fn catalog(&self) -> Result<&Catalog, StepError> {
        self.catalog.as_ref().ok_or_else(|| {
            StepError::terminal(
                "AddonCatalogUnavailable",
                "this controlplane service runs without the bus's add-on catalog",
            )
        })
    }
}

/// A management cluster that does not serve `ObjectDeployment`s has no Package Operator: no
/// retry helps until one is installed.
fn without_package_operator(e: StepError, cmd: &StepCommand) -> StepError {
    if e.info.code == "NotFound" {
        StepError::terminal(
            "PackageOperatorMissing",
            format!(
                "management cluster {:?} does not serve package-operator.run/v1alpha1 ObjectDeployments: install Package Operator there (its HyperShift integration deploys add-ons into hosted clusters): {}",
                cmd.context.management_cluster, e.info.message
            ),
        )
    } else {
        e
    }
}

/// What Package Operator says of the current template: available (the step is done), or why
/// not yet, in its own words.
fn check_available(od: &Value, what: &str, version: &str) -> Check<AddonOutputs> {
    match read_status(od) {
        DeploymentStatus::Available => Check::Done(AddonOutputs {
            object_deployment_id: format!(
                "objectdeployments.package-operator.run/{}",
                what.trim_start_matches("ObjectDeployment/")
            ),
            version: version.to_owned(),
            revision: od
                .pointer("/status/revision")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
        }),
        DeploymentStatus::Paused { message } => {
            Check::Wait(format!("Package Operator is paused on {what}: {message}"))
        }
        DeploymentStatus::Progressing { message } => {
            Check::Wait(format!("Package Operator is rolling out {what}: {message}"))
        }
    }
}

/// What the add-on step would apply: its ObjectDeployment in the control-plane namespace
/// (Package Operator then makes the add-on's objects, phase by phase).
pub(crate) fn plan(cmd: &StepCommand, name: &str) -> StepPlan {
    let ns = cmd.context.names.control_plane_namespace();
    StepPlan {
        step: cmd.step.clone(),
        changes: vec![hypersaga_stepkit::plan::kube_create(
            Target::ManagementCluster,
            "package-operator.run/v1alpha1",
            "ObjectDeployment",
            &ns,
            name,
        )],
        ..StepPlan::default()
    }
}
