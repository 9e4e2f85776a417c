//! The ObjectDeployment controller (`internal/controllers/objectdeployments`): the template
//! hash (`hash_reconciler.go`), a new ObjectSet revision `<name>-<hash>` for a new template
//! (`new_revision_reconciler.go`), pausing and archiving older revisions once the latest is
//! available and pruning beyond `revisionHistoryLimit` (`archive_reconciler.go`), and the
//! status (`objectset_reconciler.go`'s `setObjectDeploymentStatus`).
//!
//! An ObjectDeployment has no finalizer: deleting it lets the garbage collector delete its
//! ObjectSets, whose own finalizers hold them until their objects are torn down. A client
//! that wants "gone" to mean "objects removed" deletes with `propagationPolicy: Foreground`.

use serde_json::{Value, json};

use super::client::{Api, controller_ref, controller_uid, text};
use super::{
    DEPLOYMENT_LABEL, FIELD_OWNER, HASH_ANNOTATION, PAUSED_BY_PARENT_ANNOTATION, Pass, condition,
    generation, is_true, remove_condition, set_condition as set,
};
use crate::kinds::{OBJECT_DEPLOYMENTS, OBJECT_SETS, Profile};
use crate::label_selector;
use crate::meta::{is_deleting, meta_str};
use crate::operator::workloads::{fnv32a, safe_encode};
use crate::operator::write_status_as;
use crate::registry;

pub(super) fn reconcile_all(pass: &Pass<'_>) {
    let (deployments, _) = pass.shared.store.list(OBJECT_DEPLOYMENTS, None);
    for od in deployments.iter().filter(|od| !is_deleting(od)) {
        reconcile(pass, od);
    }
}

/// `utils.ComputeFNV32Hash` of the template and collision count. PKO hashes the Go struct's
/// dump; the emulator hashes the canonical JSON, so values differ but the form is the same.
fn template_hash(od: &Value) -> String {
    let mut bytes = od
        .pointer("/spec/template")
        .map(Value::to_string)
        .unwrap_or_default()
        .into_bytes();
    if let Some(count) = od.pointer("/status/collisionCount").and_then(Value::as_i64) {
        bytes.extend((count as u32).to_le_bytes());
        bytes.extend([0u8; 4]);
    }
    safe_encode(fnv32a(&bytes))
}

fn revision(os: &Value) -> i64 {
    os.pointer("/spec/revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn lifecycle(os: &Value) -> &str {
    os.pointer("/spec/lifecycleState")
        .and_then(Value::as_str)
        .unwrap_or("Active")
}

fn annotation<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
        .and_then(Value::as_str)
}

fn reconcile(pass: &Pass<'_>, od: &Value) {
    let store = &pass.shared.store;
    let api = Api {
        store,
        profile: Profile::Management,
    };
    let ns = meta_str(od, "namespace").unwrap_or_default();
    let observed = generation(od);
    let hash = template_hash(od);
    let mut status = od.get("status").cloned().unwrap_or_else(|| json!({}));
    status["templateHash"] = json!(hash);

    let selector = od.pointer("/spec/selector");
    let (all, _) = store.list(OBJECT_SETS, Some(ns));
    let mut sets: Vec<Value> = all
        .into_iter()
        .filter(|os| {
            label_selector::matches(
                selector,
                os.pointer("/metadata/labels").and_then(Value::as_object),
            )
        })
        .collect();
    sets.sort_by_key(revision);
    let current = sets
        .last()
        .filter(|os| annotation(os, HASH_ANNOTATION) == Some(hash.as_str()))
        .cloned();
    let previous: Vec<Value> = match &current {
        Some(_) => sets[..sets.len() - 1].to_vec(),
        None => sets.clone(),
    };

    // The ObjectDeployment's pause drives its ObjectSets'.
    let paused = od
        .pointer("/spec/paused")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for os in sets.iter().filter(|os| lifecycle(os) != "Archived") {
        let by_parent = lifecycle(os) == "Paused"
            && annotation(os, PAUSED_BY_PARENT_ANNOTATION) == Some("true");
        if paused != by_parent {
            let changed = api.update_meta(os, |next| {
                if paused {
                    next["metadata"]["annotations"][PAUSED_BY_PARENT_ANNOTATION] = json!("true");
                    next["spec"]["lifecycleState"] = json!("Paused");
                } else {
                    if let Some(a) = next
                        .pointer_mut("/metadata/annotations")
                        .and_then(Value::as_object_mut)
                    {
                        a.remove(PAUSED_BY_PARENT_ANNOTATION);
                    }
                    next["spec"]["lifecycleState"] = json!("Active");
                }
            });
            if let Err(e) = changed {
                tracing::debug!(error = %e, "ObjectSet pause not changed");
            }
            return;
        }
    }

    if !paused {
        let phases = od
            .pointer("/spec/template/spec/phases")
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty());
        if current.is_none() && phases {
            if let Err(true) = new_revision(pass, od, &hash, &previous) {
                let count = od
                    .pointer("/status/collisionCount")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                status["collisionCount"] = json!(count + 1);
                write_status_as(store, OBJECT_DEPLOYMENTS, od, status, FIELD_OWNER);
            }
            return;
        }
        if archive(&api, &sets) {
            return;
        }
        let limit = od
            .pointer("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
            .unwrap_or(10);
        let excess = i64::try_from(previous.len()).unwrap_or(0) - limit;
        for os in previous
            .iter()
            .take(usize::try_from(excess.max(0)).unwrap_or(0))
        {
            let _ = store.delete(
                OBJECT_SETS,
                ns,
                meta_str(os, "name").unwrap_or_default(),
                false,
            );
        }
    }
    set_status(&mut status, observed, current.as_ref(), &previous);
    write_status_as(store, OBJECT_DEPLOYMENTS, od, status, FIELD_OWNER);
}

/// Creates the ObjectSet of the current template; `Err(true)` when its name is taken by
/// another object (a hash collision).
fn new_revision(pass: &Pass<'_>, od: &Value, hash: &str, previous: &[Value]) -> Result<(), bool> {
    let store = &pass.shared.store;
    let ns = meta_str(od, "namespace").unwrap_or_default();
    let name = format!("{}-{hash}", meta_str(od, "name").unwrap_or_default());
    let template = od
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    labels[DEPLOYMENT_LABEL] = json!(meta_str(od, "name").unwrap_or_default());
    let mut annotations = od
        .pointer("/metadata/annotations")
        .cloned()
        .unwrap_or_else(|| json!({}));
    annotations[HASH_ANNOTATION] = json!(hash);
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    spec["previous"] = json!(
        previous
            .iter()
            .map(|p| json!({"name": meta_str(p, "name").unwrap_or_default()}))
            .collect::<Vec<_>>()
    );
    spec["revision"] = json!(previous.last().map_or(0, revision) + 1);
    let os = json!({"apiVersion": "package-operator.run/v1alpha1", "kind": "ObjectSet",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations,
                     "ownerReferences": [controller_ref(od)]},
        "spec": spec});
    let created = registry::prepare_create(OBJECT_SETS, ns, os, FIELD_OWNER)
        .and_then(|os| store.create(OBJECT_SETS, ns, os, false));
    match created {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => {
            // Ours already (a slow cache in PKO): no collision.
            let ours = store.get(OBJECT_SETS, ns, &name).is_ok_and(|existing| {
                controller_uid(&existing) == meta_str(od, "uid")
                    && lifecycle(&existing) != "Archived"
            });
            Err(!ours)
        }
        Err(e) => {
            tracing::debug!(error = %e, "ObjectSet not created");
            Err(false)
        }
    }
}

/// `archiveReconciler`: once a revision is available, every older one is paused and, once
/// its status says paused, archived. True when something was written.
fn archive(api: &Api<'_>, sets: &[Value]) -> bool {
    let Some(latest_available) = sets.iter().rposition(|os| is_true(os, "Available")) else {
        return false;
    };
    let latest_revision = revision(&sets[latest_available]);
    let mut wrote = false;
    for os in sets[..latest_available]
        .iter()
        .filter(|os| lifecycle(os) != "Archived" && revision(os) < latest_revision)
    {
        let next_state = if is_true(os, "Paused") {
            "Archived"
        } else if lifecycle(os) == "Paused" {
            continue;
        } else {
            "Paused"
        };
        let written = api.update_meta(os, |next| {
            next["spec"]["lifecycleState"] = json!(next_state)
        });
        if let Err(e) = &written {
            tracing::debug!(error = %e, "ObjectSet not archived");
        }
        wrote |= written.is_ok();
    }
    wrote
}

/// `conditionFromPreviousObjectSets`.
fn available_from_previous(status: &mut Value, observed: i64, previous: &[Value]) {
    let available = previous.iter().find(|os| {
        condition(os, "Available").is_some_and(|c| {
            c["status"] == "True"
                && c.get("observedGeneration").and_then(Value::as_i64) == Some(generation(os))
        })
    });
    match available {
        Some(os) => set(
            status,
            "Available",
            "True",
            "Available",
            &format!(
                "Previous Revision '{}' is still Available.",
                meta_str(os, "name").unwrap_or_default()
            ),
            observed,
        ),
        None => set(
            status,
            "Available",
            "False",
            "ObjectSetUnready",
            "No ObjectSet is available.",
            observed,
        ),
    }
}

/// `setObjectDeploymentStatus`.
fn set_status(status: &mut Value, observed: i64, current: Option<&Value>, previous: &[Value]) {
    let Some(current) = current else {
        set(
            status,
            "Progressing",
            "True",
            "Progressing",
            "Progressing to a new ObjectSet.",
            observed,
        );
        available_from_previous(status, observed, previous);
        if let Some(first) = previous.first() {
            status["revision"] = json!(revision(first));
        }
        return;
    };
    status["revision"] = json!(revision(current));
    if !is_true(current, "Succeeded") {
        let message = match condition(current, "Available") {
            Some(c) if c["status"] == "False" => {
                available_from_previous(status, observed, previous);
                format!("Latest Revision is Unavailable: {}", text(c, "message"))
            }
            Some(_) => "Latest Revision is Available: pending success delay period".to_owned(),
            None => "Latest Revision Status Unknown".to_owned(),
        };
        set(
            status,
            "Progressing",
            "True",
            "LatestRevisionPendingSuccess",
            &message,
            observed,
        );
        return;
    }
    set(
        status,
        "Progressing",
        "False",
        "Idle",
        "Update concluded.",
        observed,
    );
    if !is_true(current, "Available") {
        available_from_previous(status, observed, previous);
        return;
    }
    set(
        status,
        "Available",
        "True",
        "Available",
        "Latest Revision is Available.",
        observed,
    );
    let refs: Vec<Value> = previous
        .iter()
        .chain(std::iter::once(current))
        .map(|os| {
            json!({"kind": "ObjectSet", "group": "package-operator.run",
            "name": meta_str(os, "name").unwrap_or_default(),
            "namespace": meta_str(os, "namespace").unwrap_or_default(), "version": ""})
        })
        .collect();
    status["controllerOf"] = json!(refs);
    match condition(current, "Paused").filter(|c| c["status"] == "True") {
        Some(c) => set(
            status,
            "Paused",
            "True",
            "Paused",
            &format!("Latest revision is paused: {}", text(c, "message")),
            observed,
        ),
        None => remove_condition(status, "Paused"),
    }
}
