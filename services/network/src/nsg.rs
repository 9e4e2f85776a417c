//! `network.nsg`: the cluster's network security group, in the NSG resource group, created
//! with an empty rule set (docs/reference/hypershift-azure.md §1.1 row 4) — the in-cluster cloud
//! provider adds rules later, which is why an existing NSG is adopted, never re-PUT.

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{NsgOutputs, Outputs, StepCommand, StepError, StepOutputs};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{Halt, Ops, TenantArm, any, ensure, remove, tags};
use serde_json::{Value, json};

use crate::NETWORK_API;
use crate::user_network::{check_location, given, look_up, plan_look_up};

/// ARM type of network security groups.
pub(crate) const TYPE: &str = "Microsoft.Network/networkSecurityGroups";

/// The NSG we create.
pub(crate) fn body(cmd: &StepCommand) -> Value {
    json!({
        "location": cmd.context.spec.location,
        "tags": tags(cmd),
        "properties": { "securityRules": [] },
    })
}

/// Our NSG's id.
pub(crate) fn id(arm: &TenantArm, cmd: &StepCommand) -> String {
    let n = &cmd.context.names;
    arm.resource_id(&n.nsg_rg, TYPE, &n.nsg)
}

pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let network = &cmd.context.spec.network;
    if network.is_user_brought() {
        let nsg_id = given("nsg_id", network.nsg_id.as_deref())?;
        look_up(arm, "nsg_id", nsg_id).await?;
        return Ok(NsgOutputs {
            nsg_id: nsg_id.to_owned(),
        }
        .into_outputs());
    }
    let id = id(arm, cmd);
    ensure(
        &arm.client,
        ops,
        "network security group",
        &id,
        NETWORK_API,
        &body(cmd),
        any,
    )
    .await?;
    Ok(NsgOutputs { nsg_id: id }.into_outputs())
}

/// What [`create`] would do: read the user's NSG, or make ours.
pub(crate) async fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let network = &cmd.context.spec.network;
    let mut findings = Vec::new();
    let (change, nsg_id) = if network.is_user_brought() {
        let nsg_id = given("nsg_id", network.nsg_id.as_deref())?;
        let (read, nsg) = plan_look_up(arm, "nsg_id", nsg_id, &mut findings).await?;
        if let Some(nsg) = &nsg {
            check_location(&mut findings, "nsg_id", nsg, &cmd.context.spec.location);
        }
        (read, nsg_id.to_owned())
    } else {
        let id = id(arm, cmd);
        (azure_create(&id, NETWORK_API, &body(cmd)), id)
    };
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes: vec![change],
        findings,
        outputs: NsgOutputs { nsg_id }.into_outputs(),
    })
}

/// Deletes our NSG. A user-brought NSG is left alone (the saga never asks, but this service
/// does not rely on that).
pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    if !cmd.context.spec.network.is_user_brought() {
        remove(
            &arm.client,
            ops,
            "network security group",
            &id(arm, cmd),
            NETWORK_API,
        )
        .await?;
    }
    Ok(Outputs::new())
}
