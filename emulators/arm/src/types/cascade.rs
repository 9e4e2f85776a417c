//! What the end of an accepted DELETE does.
//!
//! A resource goes with its nested resources and with what its delete options take along (a
//! VM's NICs and disks marked `deleteOption: Delete`). A resource group goes with all of its
//! resources, users before what they use, so a group holding VMs, their NICs and disks, the
//! VNet and the NSG empties cleanly, as deleting such a group does in Azure. What a resource
//! outside the group still uses stays, with the resource provider's own refusal, and the
//! group stays too: ARM rolls its provisioning state back and fails the operation with
//! `ResourceGroupDeletionBlocked` (docs/reference/hypershift-azure.md §1.5 orders its group
//! deletes, VNet group before NSG group, for exactly this reason; Azure/sap-hana#211 shows what
//! happens otherwise).

use serde_json::json;

use super::in_use::{nested, surviving_users};
use crate::errors::ArmError;
use crate::store::Store;

/// Completes the delete of `key` that operation `op_id` ran.
pub fn finish_delete(store: &mut Store, key: &str, op_id: &str) {
    let group = store.get(key).is_some_and(|r| r.rtype.is_resource_group());
    if group {
        finish_group_delete(store, key, op_id);
    } else {
        remove_with(store, key);
    }
}

/// Removes `key`'s tree, then whatever its delete options take along.
fn remove_with(store: &mut Store, key: &str) {
    let along = store
        .get(key)
        .and_then(|r| r.rtype.delete_with.map(|f| f(r)))
        .unwrap_or_default();
    store.remove_tree(key);
    for k in along {
        if store.get(&k).is_some() {
            remove_with(store, &k);
        }
    }
}

/// `…/providers/Microsoft.Network/networkSecurityGroups/n` → `Microsoft.Network/networkSecurityGroups/n`.
fn type_and_name(id: &str) -> String {
    id.split_once("/providers/")
        .map_or_else(|| id.to_owned(), |(_, t)| t.to_owned())
}

fn finish_group_delete(store: &mut Store, rg_key: &str, op_id: &str) {
    let mut going: Vec<String> = store
        .children_of(rg_key)
        .map(|r| r.id.to_ascii_lowercase())
        .collect();
    // A resource held from outside stays; then so does whatever it holds, until nothing more
    // is refused.
    let mut blocked: Vec<(String, ArmError)> = Vec::new();
    loop {
        let refused: Vec<(String, ArmError)> = going
            .iter()
            .filter_map(|k| {
                let r = store.get(k)?;
                let refuse = r.rtype.in_use?;
                let users = surviving_users(store, k, &going);
                (!users.is_empty()).then(|| (r.id.clone(), refuse(r, &users)))
            })
            .collect();
        if refused.is_empty() {
            break;
        }
        going.retain(|k| !refused.iter().any(|(id, _)| id.eq_ignore_ascii_case(k)));
        blocked.extend(refused);
    }
    for k in &going {
        remove_with(store, k);
    }
    if blocked.is_empty() {
        store.remove_tree(rg_key);
        return;
    }
    blocked.sort_by(|a, b| a.0.cmp(&b.0));
    let rg_name = store
        .get(rg_key)
        .map(|r| r.name.clone())
        .unwrap_or_default();
    let identifiers: Vec<String> = blocked.iter().map(|(id, _)| type_and_name(id)).collect();
    let details = blocked.iter().map(|(id, e)| nested(id, e)).collect();
    let error = ArmError::resource_group_deletion_blocked(&rg_name, &identifiers, details);
    if let Some(rg) = store.get_mut(rg_key) {
        rg.pending = None;
        rg.properties
            .insert("provisioningState".into(), json!("Succeeded"));
    }
    if let Some(op) = store.op_mut(op_id) {
        op.error = Some(error);
    }
}
