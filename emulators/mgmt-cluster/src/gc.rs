//! The garbage collector (kube-controller-manager's `pkg/controller/garbagecollector`),
//! reduced to what the emulator's owners need: a dependent all of whose owners are gone is
//! deleted (background propagation, the default); an owner deleted with
//! `propagationPolicy: Foreground` keeps the `foregroundDeletion` finalizer until its
//! dependents are gone, deleting them first.

use serde_json::Value;

use crate::kinds::{KINDS, by_kind};
use crate::meta::{finalizers, is_deleting, meta_str, set_finalizers};
use crate::registry::{self, Scope};
use crate::store::Store;

/// The finalizer of foreground deletion (`metav1.FinalizerDeleteDependents`).
pub(crate) const FOREGROUND: &str = "foregroundDeletion";
/// The garbage collector's field manager.
const MANAGER: &str = "kube-controller-manager";

fn owner_uids(obj: &Value) -> Vec<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .collect()
}

fn locate(obj: &Value) -> Option<(usize, &str, &str)> {
    let res = obj.get("kind").and_then(Value::as_str).and_then(by_kind)?;
    let ns = if KINDS[res].namespaced {
        meta_str(obj, "namespace").unwrap_or_default()
    } else {
        ""
    };
    Some((res, ns, meta_str(obj, "name").unwrap_or_default()))
}

/// One pass over `store`.
pub(crate) fn collect(store: &Store) {
    // Only dependents and owners being deleted in the foreground matter; every uid does.
    let (uids, objects) = store.uids_and(|o| {
        !owner_uids(o).is_empty()
            || (is_deleting(o) && finalizers(o).iter().any(|f| f == FOREGROUND))
    });
    for obj in &objects {
        let owners = owner_uids(obj);
        if !owners.is_empty()
            && !owners.iter().any(|u| uids.contains(*u))
            && !is_deleting(obj)
            && let Some((res, ns, name)) = locate(obj)
        {
            let _ = store.delete(res, ns, name, false);
        }
    }
    for owner in objects
        .iter()
        .filter(|o| is_deleting(o) && finalizers(o).iter().any(|f| f == FOREGROUND))
    {
        let uid = meta_str(owner, "uid").unwrap_or_default();
        let dependents: Vec<&Value> = objects
            .iter()
            .filter(|o| owner_uids(o).contains(&uid))
            .collect();
        for dependent in &dependents {
            if let Some((res, ns, name)) = locate(dependent) {
                let _ = store.delete(res, ns, name, false);
            }
        }
        if dependents.is_empty()
            && let Some((res, ns, name)) = locate(owner)
        {
            let released = store.update(res, ns, name, false, |cur| {
                let mut next = cur.clone();
                let list = finalizers(&next)
                    .into_iter()
                    .filter(|f| f != FOREGROUND)
                    .collect();
                set_finalizers(&mut next, list);
                registry::prepare_update(res, cur, next, Scope::Main, MANAGER)
            });
            if let Err(e) = released {
                tracing::debug!(error = %e, "foregroundDeletion not released");
            }
        }
    }
}
