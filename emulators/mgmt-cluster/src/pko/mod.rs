//! The simulated Package Operator (PKO) and its HyperShift integration, from
//! `package-operator/package-operator` (`internal/controllers/{objectdeployments,objectsets,
//! objectsetphases,hostedclusters,packages}`, `internal/preflight`, `internal/probing`) and
//! boxcutter (`probing`, `ownerhandling`, `validation`).
//!
//! Run by the management cluster's operator task, level-triggered, writing only what differs,
//! as field manager `package-operator`:
//!
//! - per HostedCluster that is `Available`, the `remote-phase` Package in its control plane's
//!   namespace ([`hosted_clusters`]), available after `deployment_available_after`;
//! - ObjectDeployment → ObjectSet revisions, archival, status ([`object_deployments`]);
//! - ObjectSet phases in order, in-process or delegated to an ObjectSetPhase, teardown
//!   ([`object_sets`]);
//! - ObjectSetPhases of class `hosted-cluster`, applied through the hosted cluster's API once
//!   its `remote-phase` Package is available ([`object_set_phases`]); any other class is left
//!   to an out-of-tree controller that does not exist here, as with PKO.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde_json::Value;

use crate::error::Cause;
use crate::operator::Deadline;
use crate::{Emulator, Shared};

mod client;
mod hosted_clusters;
mod object_deployments;
mod object_set_phases;
mod object_sets;
mod ownership;
mod phase;
mod probes;

/// PKO's field manager (`constants.FieldOwner`).
pub(crate) const FIELD_OWNER: &str = "package-operator";
/// Frees PKO's caches; held until an ObjectSet's or ObjectSetPhase's objects are torn down
/// (`constants.CachedFinalizer`).
pub(crate) const CACHED_FINALIZER: &str = "package-operator.run/cached";
/// Held until an ObjectSet's metrics are recorded (`constants.MetricsFinalizer`).
pub(crate) const METRICS_FINALIZER: &str = "package-operator.run/metrics";
/// On every object PKO manages (`constants.DynamicCacheLabel`).
pub(crate) const CACHE_LABEL: &str = "package-operator.run/cache";
/// The revision of the ObjectSet that last reconciled an object
/// (`ObjectSetRevisionAnnotation`).
pub(crate) const REVISION_ANNOTATION: &str = "package-operator.run/revision";
/// Owners across clusters (`constants.OwnerStrategyAnnotationKey`).
pub(crate) const OWNERS_ANNOTATION: &str = "package-operator.run/owners";
/// The template hash of an ObjectSet (`objectdeployments.ObjectSetHashAnnotation`).
pub(crate) const HASH_ANNOTATION: &str = "package-operator.run/hash";
/// The ObjectDeployment an ObjectSet belongs to (`controllers.DeploymentLabel`).
pub(crate) const DEPLOYMENT_LABEL: &str = "package-operator.run/object-deployment";
/// The class of an ObjectSetPhase (`ObjectSetPhaseClassLabel`).
pub(crate) const PHASE_CLASS_LABEL: &str = "package-operator.run/phase-class";
/// Set with lifecycle state `Paused` when the ObjectDeployment is paused.
pub(crate) const PAUSED_BY_PARENT_ANNOTATION: &str = "package-operator.run/paused-by-parent";
/// The phase class the remote-phase manager serves (`cmd/remote-phase-manager` default).
pub(crate) const HOSTED_CLUSTER_CLASS: &str = "hosted-cluster";

/// What PKO remembers between passes: when each Package was first seen.
#[derive(Default)]
pub(crate) struct Pko {
    packages_seen: HashMap<String, Instant>,
}

/// What one pass works with.
pub(crate) struct Pass<'a> {
    pub shared: &'a Shared,
    /// The hosted clusters' APIs by control-plane namespace.
    pub hosted: &'a BTreeMap<String, Emulator>,
    pub now: Instant,
}

impl Pko {
    pub(crate) fn reconcile(&mut self, pass: &Pass<'_>, deadline: &mut Deadline) {
        hosted_clusters::bootstrap(pass);
        hosted_clusters::packages(pass, &mut self.packages_seen, deadline);
        object_deployments::reconcile_all(pass);
        object_sets::reconcile_all(pass);
        object_set_phases::reconcile_all(pass);
    }
}

fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The condition `type_` of `obj`, if any.
fn condition<'v>(obj: &'v Value, type_: &str) -> Option<&'v Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == type_)
}

fn is_true(obj: &Value, type_: &str) -> bool {
    condition(obj, type_).is_some_and(|c| c["status"] == "True")
}

/// `meta.SetStatusCondition` on `status.conditions`.
fn set_condition(
    status: &mut Value,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    observed: i64,
) {
    let conditions = crate::operator::conditions::conditions_mut(status);
    crate::operator::conditions::put_condition(conditions, type_, value, reason, message, observed);
}

/// The `Available` message of an ObjectSet or ObjectSetPhase whose objects all pass.
const AVAILABLE_MESSAGE: &str = "Object is available and passes all probes.";

/// `UpdateObjectSetOrPhaseStatusFromError`: a preflight error or refused adoption is
/// reported as `Available=False` with `reason`, nothing else of the status changes.
fn report_error(
    store: &crate::store::Store,
    res: crate::kinds::ResourceId,
    obj: &Value,
    mut status: Value,
    reason: &str,
    message: &str,
) {
    set_condition(
        &mut status,
        "Available",
        "False",
        reason,
        message,
        generation(obj),
    );
    crate::operator::write_status_as(store, res, obj, status, FIELD_OWNER);
}

/// The `collisionProtection` of each object of a phase (`ObjectSetObject`s), in order.
fn protections(objects: Option<&Value>) -> Vec<String> {
    objects
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|o| {
            o.get("collisionProtection")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn remove_condition(status: &mut Value, type_: &str) {
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.retain(|c| c["type"] != type_);
    }
}

/// kube-apiserver's checks of `x-kubernetes-embedded-resource` objects in PKO's CRDs:
/// `apiVersion` and `kind` must be set on every phase object.
pub(crate) fn validate(obj: &Value) -> Vec<Cause> {
    let (phases, prefix) = match obj.get("kind").and_then(Value::as_str) {
        Some("ObjectDeployment") => (
            obj.pointer("/spec/template/spec/phases"),
            "spec.template.spec.phases",
        ),
        Some("ObjectSet") => (obj.pointer("/spec/phases"), "spec.phases"),
        Some("ObjectSetPhase") => {
            return embedded(obj.pointer("/spec/objects"), "spec.objects");
        }
        _ => return Vec::new(),
    };
    phases
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .flat_map(|(i, p)| embedded(p.get("objects"), &format!("{prefix}[{i}].objects")))
        .collect()
}

fn embedded(objects: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (j, o) in objects
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(object) = o.get("object") else {
            continue;
        };
        for field in ["apiVersion", "kind"] {
            if object
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                causes.push(Cause::required_because(
                    format!("{path}[{j}].object.{field}"),
                    "must not be empty",
                ));
            }
        }
    }
    causes
}
