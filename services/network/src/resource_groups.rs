//! `network.resource-groups`: the managed RG, and the VNet and NSG RGs unless the network is
//! the user's (docs/reference/hypershift-azure.md §1.1 rows 1, 3, 5; §1.5 for the delete order).

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Outputs, ResourceGroupsOutputs, StepCommand, StepOutputs};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{Halt, Notes, Ops, TenantArm, any, ensure, remove, tags};
use serde_json::{Value, json};

use crate::RESOURCES_API;
use crate::user_network::user_resource_groups;

/// Body of every resource group we create.
pub(crate) fn body(cmd: &StepCommand) -> Value {
    json!({ "location": cmd.context.spec.location, "tags": tags(cmd) })
}

/// What a group this cluster owns is for.
#[derive(Clone, Copy)]
enum Role {
    Managed,
    Vnet,
    Nsg,
}

/// The groups this cluster owns, in creation order.
fn owned(cmd: &StepCommand) -> Vec<(Role, &str)> {
    let n = &cmd.context.names;
    let mut groups = vec![(Role::Managed, n.managed_rg.as_str())];
    if !cmd.context.spec.network.is_user_brought() {
        groups.push((Role::Vnet, n.vnet_rg.as_str()));
        groups.push((Role::Nsg, n.nsg_rg.as_str()));
    }
    groups
}

/// The groups' ids, in creation order, and the outputs that name them: what a create makes
/// and what its plan says it would.
fn desired(arm: &TenantArm, cmd: &StepCommand) -> (Vec<String>, Outputs) {
    let mut out = ResourceGroupsOutputs {
        managed_rg_id: String::new(),
        vnet_rg_id: None,
        nsg_rg_id: None,
    };
    let mut ids = Vec::new();
    for (role, rg) in owned(cmd) {
        let id = arm.resource_group_id(rg);
        match role {
            Role::Managed => out.managed_rg_id = id.clone(),
            Role::Vnet => out.vnet_rg_id = Some(id.clone()),
            Role::Nsg => out.nsg_rg_id = Some(id.clone()),
        }
        ids.push(id);
    }
    (ids, out.into_outputs())
}

/// Creates (or adopts) the groups. A resource group has nothing of ours to reconcile, so an
/// existing one is adopted as is (a different location would fail the PUT anyway).
pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let body = body(cmd);
    let (ids, outputs) = desired(arm, cmd);
    for id in ids {
        ensure(
            &arm.client,
            ops,
            "resource group",
            &id,
            RESOURCES_API,
            &body,
            any,
        )
        .await?;
    }
    Ok(outputs)
}

/// What [`create`] would make.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> StepPlan {
    let body = body(cmd);
    let (ids, outputs) = desired(arm, cmd);
    StepPlan {
        step: cmd.step.clone(),
        changes: ids
            .iter()
            .map(|id| azure_create(id, RESOURCES_API, &body))
            .collect(),
        findings: Vec::new(),
        outputs,
    }
}

/// Deletes the managed RG, then the VNet RG, then the NSG RG: the subnet in the VNet RG
/// references the NSG, and Azure refuses to delete an NSG in use. 404 is success; a group the
/// user brought is never deleted.
pub(crate) async fn delete(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
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
        remove(&arm.client, ops, "resource group", &id, RESOURCES_API).await?;
    }
    Ok(Outputs::new())
}
