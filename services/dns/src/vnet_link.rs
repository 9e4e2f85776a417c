//! `dns.vnet-link`: link the private zone to the cluster's VNet, without auto-registration, so
//! the guest resolves `*.apps.NAME.BD` privately.

use hypersaga_azure::{ArmError, Progress, ids};
use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{
    Outputs, StepCommand, StepError, StepId, StepOutputs, VnetLinkOutputs, VnetOutputs,
};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{
    Halt, Notes, Ops, TenantArm, provisioning_state, remove, step_error, tags,
};
use serde_json::{Value, json};
use tracing::info;

use crate::{PRIVATE_DNS_API, zone_id};

pub(crate) fn body(cmd: &StepCommand, vnet_id: &str) -> Value {
    json!({
        "location": "global",
        "tags": tags(cmd),
        "properties": { "registrationEnabled": false, "virtualNetwork": { "id": vnet_id } },
    })
}

/// An existing link is adopted when it points at our VNet without auto-registration.
pub(crate) fn matches(existing: &Value, vnet_id: &str) -> bool {
    let p = &existing["properties"];
    p["registrationEnabled"] == json!(false)
        && p.pointer("/virtualNetwork/id")
            .and_then(Value::as_str)
            .is_some_and(|id| id.eq_ignore_ascii_case(vnet_id))
}

/// ARM's "this VNet is already linked to the zone" answer, which HyperShift treats as success.
fn already_linked(e: &hypersaga_azure::ArmError) -> bool {
    e.status() == Some(409) && e.has_code("Conflict")
}

pub(crate) fn id(arm: &TenantArm, cmd: &StepCommand) -> String {
    ids::child_id(
        &zone_id(arm, cmd),
        "virtualNetworkLinks",
        &cmd.context.names.vnet_link,
    )
}

/// Look, adopt, then create — written out rather than through `stepkit::ensure` because one
/// ARM error (409 `Conflict`, already linked) counts as success here.
pub(crate) async fn create(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
    notes: &dyn Notes,
) -> Result<Outputs, Halt> {
    let VnetOutputs { vnet_id, .. } = cmd.context.outputs_of(&StepId::Vnet)?;
    let vnet_id = vnet_id.as_str();
    let id = id(arm, cmd);
    let message =
        format!("waiting for Azure to link the private DNS zone to {vnet_id} (it takes 30-60 s)");
    // A re-check polls the operation the first check started.
    if let Some(pending) = ops.pending(&id) {
        return finish_link(arm.client.poll_once(&pending).await, &id, message);
    }
    let existing = arm
        .client
        .get(&id, PRIVATE_DNS_API)
        .await
        .map_err(step_error)?;
    if let Some(link) = &existing {
        let state = provisioning_state(link);
        if state.eq_ignore_ascii_case("Deleting") {
            return Err(StepError::retryable(
                "ResourceBeingDeleted",
                format!("virtual network link {id} is being deleted"),
            )
            .with_target(id)
            .into());
        }
        if state.eq_ignore_ascii_case("Succeeded") && matches(link, vnet_id) {
            info!(resource = "virtual network link", %id, "adopted");
            return Ok(VnetLinkOutputs { vnet_link_id: id }.into_outputs());
        }
    }
    notes.note(message.clone()).await;
    let started = arm
        .client
        .begin_put(&id, PRIVATE_DNS_API, &body(cmd, vnet_id))
        .await;
    finish_link(started, &id, message)
}

/// Where the link's creation got to: done, still running, or refused (an "already linked"
/// conflict counts as done).
fn finish_link(
    progress: Result<Progress, ArmError>,
    id: &str,
    message: String,
) -> Result<Outputs, Halt> {
    match progress {
        Ok(Progress::Done(_)) => info!(resource = "virtual network link", %id, "created"),
        Ok(Progress::Running(pending)) => {
            return Err(Halt::Wait {
                message,
                id: id.to_owned(),
                pending,
            });
        }
        Err(e) if already_linked(&e) => {
            info!(resource = "virtual network link", %id, "VNet already linked; counted as success")
        }
        Err(e) => return Err(step_error(e).into()),
    }
    Ok(VnetLinkOutputs {
        vnet_link_id: id.to_owned(),
    }
    .into_outputs())
}

/// What [`create`] would make, on the VNet the network plan says.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let VnetOutputs { vnet_id, .. } = cmd.context.outputs_of(&StepId::Vnet)?;
    let id = id(arm, cmd);
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes: vec![azure_create(&id, PRIVATE_DNS_API, &body(cmd, &vnet_id))],
        findings: Vec::new(),
        outputs: VnetLinkOutputs { vnet_link_id: id }.into_outputs(),
    })
}

pub(crate) async fn delete(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
    notes: &dyn Notes,
) -> Result<Outputs, Halt> {
    notes
        .note("deleting the private DNS zone's VNet link".to_owned())
        .await;
    remove(
        &arm.client,
        ops,
        "virtual network link",
        &id(arm, cmd),
        PRIVATE_DNS_API,
    )
    .await?;
    Ok(Outputs::new())
}
