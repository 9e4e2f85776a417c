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

/// The user's resource `id`, read as [`look_up`] reads it for a plan: the read and the
/// resource, or a finding on `spec.network.<field>` when it is not there.
pub(crate) async fn plan_look_up(
    arm: &TenantArm,
    field: &str,
    id: &str,
    findings: &mut Vec<Finding>,
) -> Result<(Change, Option<Value>), StepError> {
    let mut read = azure(Verb::Read, id, NETWORK_API, "");
    match look_up(arm, field, id).await {
        Ok(resource) => {
            read.location = resource["location"].as_str().unwrap_or_default().to_owned();
            Ok((read, Some(resource)))
        }
        Err(e) => {
            findings.push(finding_of(
                e,
                "NETWORK",
                "give the id of a resource that exists in the tenant's subscription, or leave spec.network empty for hypersaga to make the network",
            )?);
            Ok((read, None))
        }
    }
}

/// A finding on `spec.network.<field>` when the user's `resource` is not in the cluster's
/// `location` (a VNet and its NSG must be in the region of the VMs that use them).
pub(crate) fn check_location(
    findings: &mut Vec<Finding>,
    field: &str,
    resource: &Value,
    location: &str,
) {
    let there = resource["location"].as_str().unwrap_or_default();
    if !same_region(there, location) {
        findings.push(network_finding(
            field,
            format!(
                "{} is in {there:?}, the cluster in {location:?}",
                resource["id"].as_str().unwrap_or("the resource")
            ),
            "bring a network in the cluster's region, or create the cluster in the network's",
        ));
    }
}

/// What the user brought as a whole: the subnet is one of the VNet's, and the NSG is the one
/// attached to it (if one is).
pub(crate) fn check_fit(
    findings: &mut Vec<Finding>,
    vnet_id: &str,
    subnet_id: &str,
    nsg_id: &str,
    subnet: Option<&Value>,
) {
    let parent = ResourceId::parse(subnet_id)
        .ok()
        .and_then(|s| s.parent())
        .map(|p| p.to_string());
    if !parent.is_some_and(|p| p.eq_ignore_ascii_case(vnet_id)) {
        findings.push(network_finding(
            "subnet_id",
            format!("{subnet_id} is not a subnet of {vnet_id} (spec.network.vnet_id)"),
            "give a subnet of the VNet you bring",
        ));
    }
    let attached = subnet
        .and_then(|s| s.pointer("/properties/networkSecurityGroup/id"))
        .and_then(Value::as_str);
    if let Some(attached) = attached.filter(|a| !a.eq_ignore_ascii_case(nsg_id)) {
        findings.push(network_finding(
            "nsg_id",
            format!("the subnet has {attached} attached, not {nsg_id}"),
            "give the network security group attached to the subnet",
        ));
    }
}

fn network_finding(field: &str, message: String, remedy: &str) -> Finding {
    Finding {
        field: format!("spec.network.{field}"),
        kind: "NETWORK".into(),
        message,
        remedy: remedy.into(),
    }
}

/// Azure region names as ARM compares them: case and spaces aside (`East US` is `eastus`).
fn same_region(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(' ', "");
    norm(a) == norm(b)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NET: &str = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network";

    #[test]
    fn a_brought_network_must_be_in_the_clusters_region_and_hang_together() {
        let vnet = format!("{NET}/virtualNetworks/v");
        let nsg = format!("{NET}/networkSecurityGroups/n");
        let mut findings = Vec::new();
        check_location(
            &mut findings,
            "vnet_id",
            &json!({"id": vnet, "location": "East US"}),
            "eastus",
        );
        let subnet = json!({"properties": {"networkSecurityGroup": {"id": nsg.to_uppercase()}}});
        check_fit(
            &mut findings,
            &vnet,
            &format!("{vnet}/subnets/a"),
            &nsg,
            Some(&subnet),
        );
        assert!(findings.is_empty(), "{findings:?}");

        check_location(
            &mut findings,
            "nsg_id",
            &json!({"id": nsg, "location": "westus"}),
            "eastus",
        );
        let other = format!("{NET}/networkSecurityGroups/other");
        let subnet = json!({"properties": {"networkSecurityGroup": {"id": other}}});
        check_fit(
            &mut findings,
            &vnet,
            &format!("{NET}/virtualNetworks/elsewhere/subnets/a"),
            &nsg,
            Some(&subnet),
        );
        let fields: Vec<&str> = findings.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.network.nsg_id",
                "spec.network.subnet_id",
                "spec.network.nsg_id"
            ]
        );
        assert!(
            findings[0].message.contains("\"westus\""),
            "{}",
            findings[0].message
        );
        assert!(findings[2].message.contains("networkSecurityGroups/other"));
    }
}
