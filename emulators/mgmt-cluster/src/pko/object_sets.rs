//! The ObjectSet controller (`internal/controllers/objectsets`): phases reconciled in
//! order, each in-process (`objectsetphases_reconciler.go`) or delegated to an
//! ObjectSetPhase when it has a class (`remotephase_reconciler.go`); the first phase that is
//! not available stops the rollout. Deletion and archival tear the phases down in reverse
//! order (`handleDeletionAndArchival`, `Teardown`) before the `package-operator.run/cached`
//! finalizer goes.

use serde_json::{Value, json};

use super::client::{Api, controller_ref, object_key, text};
use super::ownership::Ownership;
use super::phase::{PhaseError, PhaseOwner};
use super::probes::Prober;
use super::{
    AVAILABLE_MESSAGE, CACHED_FINALIZER, FIELD_OWNER, METRICS_FINALIZER, PHASE_CLASS_LABEL, Pass,
    condition, generation, is_true, protections, remove_condition, report_error,
    set_condition as set,
};
use crate::kinds::{NAMESPACES, OBJECT_SET_PHASES, OBJECT_SETS, Profile};
use crate::meta::{finalizers, is_deleting, meta_str, set_finalizers};
use crate::operator::write_status_as;
use crate::registry;

pub(super) fn reconcile_all(pass: &Pass<'_>) {
    let (sets, _) = pass.shared.store.list(OBJECT_SETS, None);
    for os in &sets {
        reconcile(pass, os);
    }
}

fn api<'a>(pass: &Pass<'a>) -> Api<'a> {
    Api {
        store: &pass.shared.store,
        profile: Profile::Management,
    }
}

fn spec_text<'v>(os: &'v Value, field: &str) -> &'v str {
    os.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn phases(os: &Value) -> Vec<Value> {
    os.pointer("/spec/phases")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn phase_objects(phase: &Value) -> Vec<Value> {
    phase
        .get("objects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("object").cloned())
        .collect()
}

/// The uids objects may be adopted from: the previous revisions named in `spec.previous`
/// and their remote phases (`isControlledByPreviousRevision`).
pub(super) fn previous_uids(
    store: &crate::store::Store,
    ns: &str,
    spec_previous: Option<&Value>,
) -> Vec<String> {
    let mut uids = Vec::new();
    for name in spec_previous
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("name").and_then(Value::as_str))
    {
        let Ok(prev) = store.get(OBJECT_SETS, ns, name) else {
            continue;
        };
        uids.extend(meta_str(&prev, "uid").map(str::to_owned));
        uids.extend(
            prev.pointer("/status/remotePhases")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned)),
        );
    }
    uids
}

fn owner<'a>(pass: &'a Pass<'_>, os: &'a Value, previous: &'a [String]) -> PhaseOwner<'a> {
    PhaseOwner {
        api: api(pass),
        ownership: Ownership::Native,
        owner: os,
        revision: os
            .pointer("/spec/revision")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        previous,
        paused: spec_text(os, "lifecycleState") == "Paused",
        default_namespace: meta_str(os, "namespace"),
    }
}

fn reconcile(pass: &Pass<'_>, os: &Value) {
    if is_true(os, "Archived") {
        // Not touched any more, but the metrics finalizer still goes on deletion (the
        // controller's deferred finalizer handling).
        if is_deleting(os) {
            api(pass).remove_finalizer(os, METRICS_FINALIZER);
        }
        return;
    }
    let archived = spec_text(os, "lifecycleState") == "Archived";
    if is_deleting(os) || archived {
        delete_or_archive(pass, os, archived);
        return;
    }
    let api = api(pass);
    if ensure_finalizers(&api, os) {
        return;
    }
    let ns = meta_str(os, "namespace").unwrap_or_default();
    let observed = generation(os);
    let mut status = os.get("status").cloned().unwrap_or_else(|| json!({}));
    status["revision"] = os.pointer("/spec/revision").cloned().unwrap_or(json!(0));
    let previous = previous_uids(&pass.shared.store, ns, os.pointer("/spec/previous"));
    let owner = owner(pass, os, &previous);
    let prober = Prober::parse(os.pointer("/spec/availabilityProbes"));
    let mut controller_of = Vec::new();
    let mut failed: Option<String> = None;
    for phase in phases(os) {
        let name = text(&phase, "name");
        if !text(&phase, "class").is_empty() {
            let (controlled, failure) = remote_phase(pass, os, &phase, &mut status);
            controller_of.extend(controlled);
            if let Some(why) = failure {
                failed = Some(format!("Phase {name:?} failed: {why}"));
                break;
            }
            continue;
        }
        let desired: Vec<Value> = phase_objects(&phase)
            .iter()
            .map(|o| owner.desired(o))
            .collect();
        let violations = preflight(&owner, &phase, &desired);
        if !violations.is_empty() {
            let message = violations.join(", ");
            report_error(
                &pass.shared.store,
                OBJECT_SETS,
                os,
                status,
                "PreflightError",
                &message,
            );
            return;
        }
        let protections = protections(phase.get("objects"));
        match owner.reconcile(&desired, &prober, |i| {
            protections.get(i).cloned().unwrap_or_default()
        }) {
            Ok(result) => {
                controller_of.extend(owner.controller_of(&result.actual));
                if !result.failures.is_empty() {
                    failed = Some(format!(
                        "Phase {name:?} failed: {}",
                        result.failures.join(", ")
                    ));
                    break;
                }
            }
            Err(PhaseError::Collision(why)) => {
                report_error(
                    &pass.shared.store,
                    OBJECT_SETS,
                    os,
                    status,
                    "CollisionDetected",
                    &why,
                );
                return;
            }
            Err(PhaseError::Other(why)) => {
                // PKO returns the error and retries; the status is not touched.
                tracing::debug!(objectset = %object_key(os), error = %why, "phase not reconciled");
                return;
            }
        }
    }
    status["controllerOf"] = json!(controller_of);
    let in_transition = in_transition(os, &controller_of);
    if in_transition {
        set(
            &mut status,
            "InTransition",
            "True",
            "InTransition",
            "ObjectSet is still rolling out or is being replaced by a newer version.",
            observed,
        );
    } else {
        remove_condition(&mut status, "InTransition");
    }
    match &failed {
        Some(why) => set(
            &mut status,
            "Available",
            "False",
            "ProbeFailure",
            why,
            observed,
        ),
        None => {
            set(
                &mut status,
                "Available",
                "True",
                "Available",
                AVAILABLE_MESSAGE,
                observed,
            );
            let delay = os
                .pointer("/spec/successDelaySeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let succeeded = condition(&json!({"status": status.clone()}), "Succeeded")
                .is_some_and(|c| c["status"] == "True");
            // A success delay is not waited for here: a set with one never succeeds early,
            // it succeeds on the first pass after becoming available with no delay only.
            if delay == 0 && !succeeded && !in_transition {
                set(
                    &mut status,
                    "Succeeded",
                    "True",
                    "RolloutSuccess",
                    "ObjectSet rolled out all objects successfully and was Available at least once.",
                    observed,
                );
            }
        }
    }
    paused_condition(pass, os, &mut status);
    write_status_as(&pass.shared.store, OBJECT_SETS, os, status, FIELD_OWNER);
}

/// Adds the cached and metrics finalizers; true when a write happened.
fn ensure_finalizers(api: &Api<'_>, os: &Value) -> bool {
    let mut list = finalizers(os);
    let before = list.len();
    for f in [CACHED_FINALIZER, METRICS_FINALIZER] {
        if !list.iter().any(|x| x == f) {
            list.push(f.to_owned());
        }
    }
    if list.len() == before {
        return false;
    }
    api.update_meta(os, |next| set_finalizers(next, list))
        .inspect_err(|e| tracing::debug!(error = %e, "finalizers not added"))
        .is_ok()
}

/// The in-process preflight checks of one phase (`preflight.NewAPIExistence`,
/// `NoOwnerReferences`, `NamespaceEscalation`, `DryRun`), each violation positioned as
/// `Phase "<phase>", <Kind> <ns>/<name>: <error>`.
fn preflight(owner: &PhaseOwner<'_>, phase: &Value, desired: &[Value]) -> Vec<String> {
    let phase_name = text(phase, "name");
    let owner_ns = meta_str(owner.owner, "namespace").unwrap_or_default();
    let position = |obj: &Value| {
        format!(
            "Phase {phase_name:?}, {} {}",
            text(obj, "kind"),
            object_key(obj)
        )
    };
    let mut violations = Vec::new();
    for (original, obj) in phase_objects(phase).iter().zip(desired) {
        let errors: Vec<String> = match owner.api.resource(obj) {
            Err(why) => vec![why],
            Ok(res) => {
                let mut errors = Vec::new();
                if original
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|l| !l.is_empty())
                {
                    errors.push("Object must not have a owner reference.".to_owned());
                }
                if meta_str(obj, "namespace").is_some_and(|n| n != owner_ns) {
                    errors.push("Must stay within the same namespace.".to_owned());
                } else if !crate::kinds::KINDS[res].namespaced
                    && meta_str(original, "namespace").is_none_or(str::is_empty)
                {
                    errors.push(
                        "Must be namespaced scoped when part of an non-cluster-scoped API."
                            .to_owned(),
                    );
                }
                errors
            }
        };
        violations.extend(
            errors
                .into_iter()
                .map(|e| format!("{}: {e}", position(obj))),
        );
    }
    if violations.is_empty() {
        violations.extend(
            owner
                .dry_run(desired)
                .into_iter()
                .map(|(obj, e)| format!("{}: {e}", position(&obj))),
        );
    }
    violations
}

/// `isObjectSetInTransition`: some object of the spec is not (yet, or no longer) controlled
/// by this set.
fn in_transition(os: &Value, controller_of: &[Value]) -> bool {
    let key = |group: &str, kind: &str, name: &str| format!("{group}/{kind}/{name}");
    let controlled: Vec<String> = controller_of
        .iter()
        .map(|r| key(text(r, "group"), text(r, "kind"), text(r, "name")))
        .collect();
    phases(os).iter().flat_map(phase_objects).any(|o| {
        let group = text(&o, "apiVersion")
            .rsplit_once('/')
            .map_or("", |(g, _)| g);
        !controlled.contains(&key(
            group,
            text(&o, "kind"),
            meta_str(&o, "name").unwrap_or_default(),
        ))
    })
}

/// `reportPausedCondition`.
fn paused_condition(pass: &Pass<'_>, os: &Value, status: &mut Value) {
    let observed = generation(os);
    let spec_paused = spec_text(os, "lifecycleState") == "Paused";
    let ns = meta_str(os, "namespace").unwrap_or_default();
    let remotes: Vec<String> = status
        .get("remotePhases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let (phases_paused, unknown) = if remotes.is_empty() {
        (spec_paused, false)
    } else {
        let found: Vec<Value> = remotes
            .iter()
            .filter_map(|n| pass.shared.store.get(OBJECT_SET_PHASES, ns, n).ok())
            .collect();
        let paused = found.iter().filter(|p| is_true(p, "Paused")).count();
        (paused == remotes.len(), found.len() < remotes.len())
    };
    if unknown || spec_paused != phases_paused {
        set(
            status,
            "Paused",
            "Unknown",
            "PartiallyPaused",
            "Waiting for ObjectSetPhases.",
            observed,
        );
    } else if spec_paused {
        set(
            status,
            "Paused",
            "True",
            "Paused",
            "Lifecycle state set to paused.",
            observed,
        );
    } else {
        remove_condition(status, "Paused");
    }
}

/// `objectSetRemotePhaseReconciler.Reconcile`: ensures the phase's ObjectSetPhase and reads
/// its availability. Returns what it controls and the probe failure, if any.
fn remote_phase(
    pass: &Pass<'_>,
    os: &Value,
    phase: &Value,
    status: &mut Value,
) -> (Vec<Value>, Option<String>) {
    let store = &pass.shared.store;
    let ns = meta_str(os, "namespace").unwrap_or_default();
    let name = format!(
        "{}-{}",
        meta_str(os, "name").unwrap_or_default(),
        text(phase, "name")
    );
    let paused = spec_text(os, "lifecycleState") == "Paused";
    let current = match store.get(OBJECT_SET_PHASES, ns, &name) {
        Ok(current) => current,
        Err(_) => {
            let mut labels = os
                .pointer("/metadata/labels")
                .cloned()
                .unwrap_or_else(|| json!({}));
            labels[PHASE_CLASS_LABEL] = json!(text(phase, "class"));
            let mut spec = json!({
                "objects": phase.get("objects").cloned().unwrap_or_else(|| json!([])),
                "revision": os.pointer("/spec/revision").cloned().unwrap_or(json!(0)),
            });
            for field in ["availabilityProbes", "previous"] {
                if let Some(v) = os.pointer(&format!("/spec/{field}")) {
                    spec[field] = v.clone();
                }
            }
            if paused {
                spec["paused"] = json!(true);
            }
            let mut metadata = json!({"name": name, "namespace": ns, "labels": labels,
                "ownerReferences": [controller_ref(os)]});
            if let Some(a) = os.pointer("/metadata/annotations") {
                metadata["annotations"] = a.clone();
            }
            let desired = json!({"apiVersion": "package-operator.run/v1alpha1", "kind": "ObjectSetPhase",
                "metadata": metadata, "spec": spec});
            let created = registry::prepare_create(OBJECT_SET_PHASES, ns, desired, FIELD_OWNER)
                .and_then(|o| store.create(OBJECT_SET_PHASES, ns, o, false));
            match created {
                Ok(created) => created,
                Err(e) => {
                    tracing::debug!(error = %e, "ObjectSetPhase not created");
                    return (Vec::new(), Some("no status reported".into()));
                }
            }
        }
    };
    let reference = json!({"name": name, "uid": meta_str(&current, "uid").unwrap_or_default()});
    let mut remotes: Vec<Value> = status
        .get("remotePhases")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match remotes.iter_mut().find(|r| r["name"] == name.as_str()) {
        Some(r) => *r = reference,
        None => remotes.push(reference),
    }
    status["remotePhases"] = json!(remotes);
    if current
        .pointer("/spec/paused")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        != paused
    {
        let patched = Api {
            store,
            profile: Profile::Management,
        }
        .update_meta(&current, |next| {
            next["spec"]["paused"] = json!(paused);
        });
        if let Err(e) = patched {
            tracing::debug!(error = %e, "ObjectSetPhase not paused");
        }
    }
    let controlled = current
        .pointer("/status/controllerOf")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let failure = match condition(&current, "Available") {
        Some(c)
            if c.get("observedGeneration").and_then(Value::as_i64)
                == Some(generation(&current)) =>
        {
            if c["status"] == "True" {
                None
            } else {
                Some(text(c, "message").to_owned())
            }
        }
        _ => Some("no status reported".into()),
    };
    (controlled, failure)
}

/// `handleDeletionAndArchival`.
fn delete_or_archive(pass: &Pass<'_>, os: &Value, archived: bool) {
    let api = api(pass);
    let observed = generation(os);
    let mut status = os.get("status").cloned().unwrap_or_else(|| json!({}));
    let done = !finalizers(os).iter().any(|f| f == CACHED_FINALIZER) || teardown(pass, os);
    remove_condition(&mut status, "Available");
    if !done {
        if archived && !is_deleting(os) {
            set(
                &mut status,
                "Archived",
                "False",
                "ArchivalInProgress",
                "Object teardown in progress.",
                observed,
            );
            write_status_as(&pass.shared.store, OBJECT_SETS, os, status, FIELD_OWNER);
        }
        return;
    }
    if is_deleting(os) {
        let list: Vec<String> = finalizers(os)
            .into_iter()
            .filter(|f| f != CACHED_FINALIZER && f != METRICS_FINALIZER)
            .collect();
        if let Err(e) = api.update_meta(os, |next| set_finalizers(next, list)) {
            tracing::debug!(error = %e, "finalizers not removed");
        }
        return;
    }
    api.remove_finalizer(os, CACHED_FINALIZER);
    let Ok(fresh) = pass.shared.store.get(
        OBJECT_SETS,
        meta_str(os, "namespace").unwrap_or_default(),
        meta_str(os, "name").unwrap_or_default(),
    ) else {
        return;
    };
    set(&mut status, "Archived", "True", "Archived", "", observed);
    if let Some(map) = status.as_object_mut() {
        map.remove("controllerOf");
    }
    write_status_as(&pass.shared.store, OBJECT_SETS, &fresh, status, FIELD_OWNER);
}

/// `objectSetPhasesReconciler.Teardown`: phases in reverse order; true once all are done.
fn teardown(pass: &Pass<'_>, os: &Value) -> bool {
    let ns = meta_str(os, "namespace").unwrap_or_default();
    let previous: Vec<String> = Vec::new();
    let owner = owner(pass, os, &previous);
    for phase in phases(os).iter().rev() {
        let done = if text(phase, "class").is_empty() {
            let desired: Vec<Value> = phase_objects(phase)
                .iter()
                .map(|o| owner.desired(o))
                .collect();
            owner.teardown(&desired)
        } else {
            teardown_remote(pass, os, ns, phase)
        };
        if !done {
            return false;
        }
    }
    true
}

/// `objectSetRemotePhaseReconciler.Teardown`: the ObjectSetPhase is deleted and waited for;
/// when the namespace itself is being deleted (the hosted cluster is going), its finalizers
/// are dropped so it goes at once.
fn teardown_remote(pass: &Pass<'_>, os: &Value, ns: &str, phase: &Value) -> bool {
    let store = &pass.shared.store;
    let name = format!(
        "{}-{}",
        meta_str(os, "name").unwrap_or_default(),
        text(phase, "name")
    );
    let Ok(current) = store.get(OBJECT_SET_PHASES, ns, &name) else {
        return true;
    };
    if super::client::controller_uid(&current) != meta_str(os, "uid") {
        return true;
    }
    let api = Api {
        store,
        profile: Profile::Management,
    };
    let namespace_deleting = store.get(NAMESPACES, "", ns).is_ok_and(|n| is_deleting(&n));
    if namespace_deleting {
        return api
            .update_meta(&current, |next| set_finalizers(next, Vec::new()))
            .is_ok();
    }
    matches!(store.delete(OBJECT_SET_PHASES, ns, &name, false), Err(e) if e.code == 404)
}
