//! A network the user brings: only ever read, never written or deleted.

use hypersaga_azure::ids::ResourceId;
use hypersaga_bus::plan::{Change, Finding, Verb};
use hypersaga_bus::{StepCommand, StepError};
use hypersaga_model::ClusterSpec;
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

/// Addresses Azure keeps in every subnet (the network's, the gateway's, two for DNS, the
/// broadcast).
const AZURE_KEEPS: u64 = 5;

/// A finding when the brought subnet has fewer free addresses than the cluster's pools may
/// take (one per node, at their largest: replicas, or the autoscaler's maximum), from its
/// prefix and the IP configurations ARM lists in it. Pools that bring a subnet of their own
/// are not counted.
pub(crate) fn check_room(
    findings: &mut Vec<Finding>,
    subnet_id: &str,
    subnet: Option<&Value>,
    spec: &ClusterSpec,
) {
    let Some(subnet) = subnet else {
        return;
    };
    let prefix = subnet
        .pointer("/properties/addressPrefix")
        .and_then(Value::as_str)
        .or_else(|| {
            subnet
                .pointer("/properties/addressPrefixes/0")
                .and_then(Value::as_str)
        });
    let Some(len) = prefix
        .filter(|p| !p.contains(':'))
        .and_then(|p| p.split_once('/'))
        .and_then(|(_, l)| l.parse::<u32>().ok())
        .filter(|l| *l <= 32)
    else {
        return;
    };
    let size = 1u64 << (32 - len);
    let taken = subnet
        .pointer("/properties/ipConfigurations")
        .and_then(Value::as_array)
        .map_or(0, |c| c.len() as u64);
    let free = size.saturating_sub(AZURE_KEEPS).saturating_sub(taken);
    let needed: u64 = spec
        .node_pools
        .iter()
        .filter(|p| {
            p.subnet_id
                .as_deref()
                .is_none_or(|s| s.eq_ignore_ascii_case(subnet_id))
        })
        .map(|p| u64::try_from(p.autoscaling.map_or(p.replicas, |a| a.max)).unwrap_or(0))
        .sum();
    if needed > free {
        findings.push(network_finding(
            "subnet_id",
            format!(
                "{subnet_id} ({}) has {free} free addresses ({size} in all, {taken} taken, \
                 {AZURE_KEEPS} kept by Azure); the node pools need up to {needed}",
                prefix.unwrap_or_default()
            ),
            "bring a larger subnet, or one with more free addresses, or ask for fewer nodes",
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

    #[test]
    fn a_brought_subnet_must_have_room_for_every_node_its_pools_may_have() {
        let subnet_id = format!("{NET}/virtualNetworks/v/subnets/a");
        let mut spec = hypersaga_testkit::spec();
        spec.node_pools = vec![hypersaga_model::NodePoolSpec::new(
            "a",
            3,
            "Standard_D4s_v5",
        )];
        // A /29: 8 addresses, 5 kept by Azure, 1 taken: 2 free.
        let subnet = json!({"properties": {"addressPrefix": "10.0.0.0/29",
            "ipConfigurations": [{"id": "/subscriptions/s/x/networkInterfaces/n/ipConfigurations/c"}]}});
        let mut findings = Vec::new();
        check_room(&mut findings, &subnet_id, Some(&subnet), &spec);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].field, "spec.network.subnet_id");
        assert!(
            findings[0].message.contains("has 2 free addresses")
                && findings[0].message.contains("need up to 3"),
            "{findings:?}"
        );
        // Two nodes fit; a pool on a subnet of its own does not count.
        spec.node_pools[0].replicas = 2;
        let mut other = hypersaga_model::NodePoolSpec::new("b", 9, "Standard_D4s_v5");
        other.subnet_id = Some(format!("{NET}/virtualNetworks/v/subnets/b"));
        spec.node_pools.push(other);
        let mut findings = Vec::new();
        check_room(&mut findings, &subnet_id, Some(&subnet), &spec);
        assert!(findings.is_empty(), "{findings:?}");
    }
}
