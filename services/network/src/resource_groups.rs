//! `network.resource-groups`: the managed RG, and the VNet and NSG RGs unless the network is
//! the user's (hypershift-azure.md §1.1 rows 1, 3, 5; §1.5 for the delete order).

use hypersaga_bus::{Outputs, StepCommand};
use hypersaga_stepkit::{Halt, Notes, Ops, TenantArm, any, ensure, remove, tags};
use serde_json::{Value, json};

use crate::user_network::user_resource_groups;
use crate::{RESOURCES_API, output};

/// Body of every resource group we create.
pub(crate) fn body(cmd: &StepCommand) -> Value {
    json!({ "location": cmd.context.spec.location, "tags": tags(cmd) })
}

/// (output key, RG name) of the groups this cluster owns, in creation order.
fn owned(cmd: &StepCommand) -> Vec<(&'static str, &str)> {
    let n = &cmd.context.names;
    let mut groups = vec![("managed_rg_id", n.managed_rg.as_str())];
    if !cmd.context.spec.network.is_user_brought() {
        groups.push(("vnet_rg_id", n.vnet_rg.as_str()));
        groups.push(("nsg_rg_id", n.nsg_rg.as_str()));
    }
    groups
}

/// Creates (or adopts) the groups. A resource group has nothing of ours to reconcile, so an
/// existing one is adopted as is (a different location would fail the PUT anyway).
pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand) -> Result<Outputs, Halt> {
    let body = body(cmd);
    let mut out = Outputs::new();
    for (key, rg) in owned(cmd) {
        let id = arm.resource_group_id(rg);
        ensure(
            &arm.client,
            &Ops::of(cmd),
            "resource group",
            &id,
            RESOURCES_API,
            &body,
            any,
        )
        .await?;
        out.extend([output(key, id)]);
    }
    Ok(out)
}

/// Deletes the managed RG, then the VNet RG, then the NSG RG: the subnet in the VNet RG
/// references the NSG, and Azure refuses to delete an NSG in use. 404 is success; a group the
/// user brought is never deleted.
pub(crate) async fn delete(
    arm: &TenantArm,
    cmd: &StepCommand,
    notes: &dyn Notes,
) -> Result<Outputs, Halt> {
    let keep = user_resource_groups(cmd);
    for (_, rg) in owned(cmd) {
        let id = arm.resource_group_id(rg);
        if keep.contains(&id.to_ascii_lowercase()) {
            tracing::warn!(%id, "resource group holds a user-brought resource; not deleting it");
            continue;
        }
        notes
            .note(format!(
                "deleting resource group {rg} and everything in it (can take minutes)"
            ))
            .await;
        remove(
            &arm.client,
            &Ops::of(cmd),
            "resource group",
            &id,
            RESOURCES_API,
        )
        .await?;
    }
    Ok(Outputs::new())
}
