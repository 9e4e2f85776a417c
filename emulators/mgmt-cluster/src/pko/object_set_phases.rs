//! The remote-phase manager PKO runs in each hosted control plane's namespace
//! (`cmd/remote-phase-manager`, `internal/controllers/objectsetphases`): it reconciles the
//! ObjectSetPhases of class `hosted-cluster` there, applying their objects through the
//! hosted cluster's API with the owners annotation, since owner references cannot point
//! across clusters. It runs only once the namespace's `remote-phase` Package is available.

use serde_json::{Value, json};

use super::client::{Api, gvk_string, object_key};
use super::hosted_clusters::remote_phase_ready;
use super::object_sets::previous_uids;
use super::ownership::Ownership;
use super::phase::{PhaseError, PhaseOwner};
use super::probes::Prober;
use super::{
    AVAILABLE_MESSAGE, CACHED_FINALIZER, FIELD_OWNER, HOSTED_CLUSTER_CLASS, PHASE_CLASS_LABEL,
    Pass, generation, protections, remove_condition, report_error, set_condition,
};
use crate::kinds::{OBJECT_SET_PHASES, Profile};
use crate::meta::{finalizers, is_deleting, meta_str};
use crate::operator::write_status_as;

pub(super) fn reconcile_all(pass: &Pass<'_>) {
    let (phases, _) = pass.shared.store.list(OBJECT_SET_PHASES, None);
    for osp in &phases {
        let class = osp
            .pointer(&format!(
                "/metadata/labels/{}",
                PHASE_CLASS_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let ns = meta_str(osp, "namespace").unwrap_or_default();
        if class != HOSTED_CLUSTER_CLASS || !remote_phase_ready(&pass.shared.store, ns) {
            continue;
        }
        let Some(hosted) = pass.hosted.get(ns) else {
            continue;
        };
        reconcile(
            pass,
            osp,
            Api {
                store: &hosted.shared().store,
                profile: Profile::Hosted,
            },
        );
    }
}

fn objects(osp: &Value) -> Vec<Value> {
    osp.pointer("/spec/objects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("object").cloned())
        .collect()
}

fn reconcile(pass: &Pass<'_>, osp: &Value, target: Api<'_>) {
    let mgmt = Api {
        store: &pass.shared.store,
        profile: Profile::Management,
    };
    let ns = meta_str(osp, "namespace").unwrap_or_default();
    let previous = previous_uids(&pass.shared.store, ns, osp.pointer("/spec/previous"));
    let owner = PhaseOwner {
        api: target,
        ownership: Ownership::Annotation,
        owner: osp,
        revision: osp
            .pointer("/spec/revision")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        previous: &previous,
        paused: osp
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        default_namespace: None,
    };
    let desired: Vec<Value> = objects(osp).iter().map(|o| owner.desired(o)).collect();
    if is_deleting(osp) {
        let done =
            !finalizers(osp).iter().any(|f| f == CACHED_FINALIZER) || owner.teardown(&desired);
        if done {
            mgmt.remove_finalizer(osp, CACHED_FINALIZER);
        }
        return;
    }
    if mgmt.ensure_finalizer(osp, CACHED_FINALIZER) {
        return;
    }
    let observed = generation(osp);
    let name = meta_str(osp, "name").unwrap_or_default();
    let mut status = osp.get("status").cloned().unwrap_or_else(|| json!({}));
    let set = |status: &mut Value, type_: &str, value: &str, reason: &str, message: &str| {
        set_condition(status, type_, value, reason, message, observed);
    };
    // boxcutter's phase validation: each object's dry run (`PhaseValidationError`).
    let refused = owner.dry_run(&desired);
    if !refused.is_empty() {
        let objects: Vec<String> = refused
            .iter()
            .map(|(o, e)| format!("{} {}: {e}", gvk_string(o), object_key(o)))
            .collect();
        let message = format!("phase {name:?}: {}", objects.join(", "));
        report_error(
            &pass.shared.store,
            OBJECT_SET_PHASES,
            osp,
            status,
            "PreflightError",
            &message,
        );
        return;
    }
    let prober = Prober::parse(osp.pointer("/spec/availabilityProbes"));
    let protections = protections(osp.pointer("/spec/objects"));
    let result = match owner.reconcile(&desired, &prober, |i| {
        protections.get(i).cloned().unwrap_or_default()
    }) {
        Ok(result) => result,
        Err(PhaseError::Collision(why)) => {
            report_error(
                &pass.shared.store,
                OBJECT_SET_PHASES,
                osp,
                status,
                "CollisionDetected",
                &why,
            );
            return;
        }
        Err(PhaseError::Other(why)) => {
            tracing::debug!(phase = %name, error = %why, "remote phase not reconciled");
            return;
        }
    };
    status["controllerOf"] = json!(owner.controller_of(&result.actual));
    if result.failures.is_empty() {
        set(
            &mut status,
            "Available",
            "True",
            "Available",
            AVAILABLE_MESSAGE,
        );
    } else {
        // boxcutter's phase result report, reduced to the objects that are not complete.
        let objects: Vec<String> = result.failures.iter().map(|f| format!("- {f}")).collect();
        let message = format!(
            "Phase {name:?}\nComplete: false\nObjects:\n{}",
            objects.join("\n")
        );
        set(&mut status, "Available", "False", "ProbeFailure", &message);
    }
    if owner.paused {
        set(
            &mut status,
            "Paused",
            "True",
            "Paused",
            "Lifecycle state set to paused.",
        );
    } else {
        remove_condition(&mut status, "Paused");
    }
    write_status_as(
        &pass.shared.store,
        OBJECT_SET_PHASES,
        osp,
        status,
        FIELD_OWNER,
    );
}
