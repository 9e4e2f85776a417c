//! `dns.private-zone`: the private zone `NAME.BD` in the managed RG, location `global`.

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Outputs, PrivateZoneOutputs, StepCommand, StepOutputs};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{Halt, Notes, Ops, TenantArm, any, ensure, remove, tags};
use serde_json::{Value, json};

use crate::{PRIVATE_DNS_API, zone_id};

/// ARM type of private DNS zones.
pub(crate) const TYPE: &str = "Microsoft.Network/privateDnsZones";

pub(crate) fn body(cmd: &StepCommand) -> Value {
    json!({ "location": "global", "tags": tags(cmd) })
}

/// Creates or adopts the zone; an existing zone holds nothing of ours to reconcile (the
/// guest ingress operator writes `*.apps` records into it later).
pub(crate) async fn create(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
    notes: &dyn Notes,
) -> Result<Outputs, Halt> {
    let id = zone_id(arm, cmd);
    notes
        .note(format!(
            "waiting for private DNS zone {} (Azure takes 30-60 s to create one)",
            cmd.context.names.private_zone
        ))
        .await;
    ensure(
        &arm.client,
        ops,
        "private DNS zone",
        &id,
        PRIVATE_DNS_API,
        &body(cmd),
        any,
    )
    .await?;
    Ok(PrivateZoneOutputs {
        private_zone_id: id,
    }
    .into_outputs())
}

/// What [`create`] would make.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> StepPlan {
    let id = zone_id(arm, cmd);
    StepPlan {
        step: cmd.step.clone(),
        changes: vec![azure_create(&id, PRIVATE_DNS_API, &body(cmd))],
        findings: Vec::new(),
        outputs: PrivateZoneOutputs {
            private_zone_id: id,
        }
        .into_outputs(),
    }
}

/// Deletes the zone (with its record sets). Its VNet links are undone first by the DAG;
/// should one remain, ARM answers 409 and the step is retried.
pub(crate) async fn delete(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
    notes: &dyn Notes,
) -> Result<Outputs, Halt> {
    notes
        .note(format!(
            "deleting private DNS zone {}",
            cmd.context.names.private_zone
        ))
        .await;
    remove(
        &arm.client,
        ops,
        "private DNS zone",
        &zone_id(arm, cmd),
        PRIVATE_DNS_API,
    )
    .await?;
    Ok(Outputs::new())
}
