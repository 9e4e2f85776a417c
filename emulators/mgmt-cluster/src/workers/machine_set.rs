//! Cluster API's MachineSet: it makes or deletes Machines until it has its `spec.replicas`,
//! all the missing or extra ones in one reconcile (`syncReplicas`), and picks the Machines
//! to delete by its deletion order.
//!
//! HyperShift sets no deletion order, so CAPI's default `Random` applies
//! (`randomDeletionOrder`): Machines already being deleted first, then those annotated
//! `cluster.x-k8s.io/delete-machine` (the cluster-autoscaler's choice), then unhealthy ones
//! (no node, or `NodeHealthy=False`), then the rest; ties in name order.

use serde_json::Value;

use crate::meta::{is_deleting, meta_str};

/// The annotation that marks a Machine to be deleted first (`DeleteMachineAnnotation`).
pub const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";

/// `deletePriority` of `randomDeletionOrder`, highest deleted first.
fn priority(machine: &Value) -> u8 {
    if is_deleting(machine) {
        return 100; // mustDelete
    }
    let annotated = machine
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DELETE_MACHINE_ANNOTATION))
        .is_some();
    if annotated {
        return 80; // shouldDeleteFirst
    }
    if !healthy(machine) {
        return 50; // betterDelete
    }
    20 // couldDelete
}

/// `isMachineHealthy`: a node, and `NodeHealthy` not `False`.
fn healthy(machine: &Value) -> bool {
    if machine.pointer("/status/nodeRef").is_none() {
        return false;
    }
    !machine
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "NodeHealthy" && c["status"] == "False")
        })
}

/// The `count` Machines of `machines` a MachineSet deletes to scale down by `count`.
pub fn to_delete(machines: &[&Value], count: usize) -> Vec<String> {
    let mut ranked: Vec<(u8, &str)> = machines
        .iter()
        .map(|m| (priority(m), meta_str(m, "name").unwrap_or_default()))
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    ranked
        .into_iter()
        .take(count)
        .map(|(_, name)| name.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unhealthy_and_annotated_machines_go_first_then_by_name() {
        let ready = |name: &str| {
            json!({"metadata": {"name": name}, "status": {"nodeRef": {"name": name},
                "conditions": [{"type": "NodeHealthy", "status": "True"}]}})
        };
        let marked = json!({"metadata": {"name": "w-a",
            "annotations": {DELETE_MACHINE_ANNOTATION: ""}}, "status": {"nodeRef": {"name": "w-a"}}});
        let waiting = json!({"metadata": {"name": "w-z"}});
        let (b, c) = (ready("w-b"), ready("w-c"));
        let all = [&c, &waiting, &b, &marked];
        assert_eq!(to_delete(&all, 1), ["w-a"]);
        assert_eq!(to_delete(&all, 2), ["w-a", "w-z"]);
        assert_eq!(to_delete(&all, 3), ["w-a", "w-z", "w-b"]);
        assert_eq!(to_delete(&all, 9).len(), 4);
    }
}
