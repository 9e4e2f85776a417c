//! `dns.vnet-link`: link the private zone to the cluster's VNet, without auto-registration, so
//! the guest resolves `*.apps.NAME.BD` privately.

use hypersaga_azure::ids;
use hypersaga_bus::{Outputs, StepCommand, StepError};
use hypersaga_stepkit::{
    Notes, TenantArm, missing_output, provisioning_state, remove, step_error, tags,
};
use serde_json::{Value, json};
use tracing::info;

use crate::{PRIVATE_DNS_API, output, steps, zone_id};

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
    notes: &dyn Notes,
) -> Result<Outputs, StepError> {
    let vnet_id = cmd
        .context
        .output(steps::NETWORK_VNET, "vnet_id")
        .ok_or_else(|| missing_output(steps::NETWORK_VNET, "vnet_id"))?;
    let id = id(arm, cmd);
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
            .with_target(id));
        }
        if state.eq_ignore_ascii_case("Succeeded") && matches(link, vnet_id) {
            info!(resource = "virtual network link", %id, "adopted");
            return Ok(Outputs::from([output("vnet_link_id", id)]));
        }
    }
    notes
        .note(format!(
            "waiting for private DNS zone link to {vnet_id} (Azure takes 30-60 s)"
        ))
        .await;
    match arm
        .client
        .put(&id, PRIVATE_DNS_API, &body(cmd, vnet_id))
        .await
    {
        Ok(_) => info!(resource = "virtual network link", %id, "created"),
        Err(e) if already_linked(&e) => {
            info!(resource = "virtual network link", %id, "VNet already linked; counted as success")
        }
        Err(e) => return Err(step_error(e)),
    }
    Ok(Outputs::from([output("vnet_link_id", id)]))
}

pub(crate) async fn delete(
    arm: &TenantArm,
    cmd: &StepCommand,
    notes: &dyn Notes,
) -> Result<Outputs, StepError> {
    notes
        .note("deleting the private DNS zone's VNet link".to_owned())
        .await;
    remove(
        &arm.client,
        "virtual network link",
        &id(arm, cmd),
        PRIVATE_DNS_API,
    )
    .await?;
    Ok(Outputs::new())
}
