//! A network the user brings: only ever read, never written or deleted.

use hypersaga_azure::ids::ResourceId;
use hypersaga_bus::plan::{Change, Finding, Verb};
use hypersaga_bus::{StepCommand, StepError};
use hypersaga_stepkit::plan::{azure, finding_of};
use hypersaga_stepkit::{TenantArm, step_error};
use serde_json::Value;

use crate::NETWORK_API;

/// The user's id in `spec.network.<field>`. Missing is terminal: the gateway validates that
/// VNet, subnet and NSG ids come together, so this is a spec that bypassed validation.
pub(crate) fn given<'a>(field: &str, value: Option<&'a str>) -> Result<&'a str, StepError> {
    value.ok_or_else(|| {
        StepError::terminal(
            "InvalidSpec",
            format!("spec.network.{field} is required when bringing your own network"),
        )
        .with_target(format!("spec.network.{field}"))
    })
}

/// Reads the user's resource `id`; absent is terminal `UserNetworkNotFound` pointing at the
/// spec field, because only the user can fix it.
pub(crate) async fn look_up(arm: &TenantArm, field: &str, id: &str) -> Result<Value, StepError> {
    match arm.client.get(id, NETWORK_API).await.map_err(step_error)? {
        Some(resource) => {
            tracing::info!(resource = field, %id, "user-brought resource found");
            Ok(resource)
        }
        None => Err(StepError::terminal(
            "UserNetworkNotFound",
            format!("{id} does not exist or is not visible to the tenant's principal"),
        )
        .with_target(format!("spec.network.{field}"))),
    }
}

/// The user's resource `id`, read as [`look_up`] reads it for a plan: the read, and a finding
/// on `spec.network.<field>` when it is not there.
pub(crate) async fn plan_look_up(
    arm: &TenantArm,
    field: &str,
    id: &str,
    findings: &mut Vec<Finding>,
) -> Result<Change, StepError> {
    let mut read = azure(Verb::Read, id, NETWORK_API, "");
    match look_up(arm, field, id).await {
        Ok(resource) => {
            read.location = resource["location"].as_str().unwrap_or_default().to_owned();
        }
        Err(e) => findings.push(finding_of(
            e,
            "NETWORK",
            "give the id of a resource that exists in the tenant's subscription, or leave spec.network empty for hypersaga to make the network",
        )?),
    }
    Ok(read)
}

/// Resource group ids (lower-cased) holding anything the user brought: never deleted, even if a
/// name happens to collide with one of ours.
pub(crate) fn user_resource_groups(cmd: &StepCommand) -> Vec<String> {
    let n = &cmd.context.spec.network;
    [&n.vnet_id, &n.subnet_id, &n.nsg_id]
        .into_iter()
        .flatten()
        .filter_map(|id| ResourceId::parse(id).ok())
        .map(|id| id.resource_group_id().to_ascii_lowercase())
        .collect()
}
