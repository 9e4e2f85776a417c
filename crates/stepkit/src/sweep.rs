//! What a service made in Azure, found again by its tags: the sweeper's listing and each
//! `<service>.sweep` step's work (see [`hypersaga_bus::sweep`]).
//!
//! Every resource hypersaga makes carries `hypersaga.io_tenant` and `hypersaga.io_cluster`
//! ([`crate::tags`]). ARM lists a subscription's resources and resource groups by tag name
//! (`$filter=tagName eq '…'`; with a tag value too, ARM leaves the tags out of its answer, so
//! the tenant and the cluster are matched here). Each service keeps the types it owns and
//! deletes them in its own dependency order.

use hypersaga_bus::plan::Target;
use hypersaga_bus::sweep::Made;
use hypersaga_model::TenantId;
use serde_json::Value;

use crate::{
    CLUSTER_TAG, Halt, Ops, RESOURCES_API, SAGA_TAG, StepError, TENANT_TAG, TenantArm, remove,
    step_error,
};

/// ARM type of resource groups.
pub const RESOURCE_GROUP_TYPE: &str = "Microsoft.Resources/resourceGroups";

/// `$filter=tagName eq '<CLUSTER_TAG>'`, encoded for a query string.
fn by_cluster_tag() -> String {
    format!("$filter=tagName%20eq%20%27{CLUSTER_TAG}%27")
}

/// Every resource and resource group of the tenant's subscription that hypersaga tagged for
/// `tenant` (and `cluster`, when given), of the `owned` types (`(type, api-version)`: the
/// api-version each is deleted with), in the order `owned` lists the types.
pub async fn tagged(
    arm: &TenantArm,
    tenant: &TenantId,
    cluster: Option<&str>,
    owned: &[(&str, &str)],
) -> Result<Vec<Made>, StepError> {
    let sub = &arm.subscription_id;
    let mut listed = Vec::new();
    let wants_groups = owned
        .iter()
        .any(|(t, _)| t.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE));
    if owned
        .iter()
        .any(|(t, _)| !t.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE))
    {
        let path = format!("/subscriptions/{sub}/resources?{}", by_cluster_tag());
        listed.extend(
            arm.client
                .list(&path, RESOURCES_API)
                .await
                .map_err(step_error)?,
        );
    }
    if wants_groups {
        let path = format!("/subscriptions/{sub}/resourcegroups?{}", by_cluster_tag());
        listed.extend(
            arm.client
                .list(&path, RESOURCES_API)
                .await
                .map_err(step_error)?,
        );
    }
    let mut found = Vec::new();
    for (kind, api_version) in owned {
        for r in &listed {
            if let Some(made) = made_of(r, tenant, cluster, kind, api_version) {
                found.push(made);
            }
        }
    }
    Ok(found)
}

/// `r` as what hypersaga made, when it is of type `kind` and its tags name `tenant` (and
/// `cluster`).
fn made_of(
    r: &Value,
    tenant: &TenantId,
    cluster: Option<&str>,
    kind: &str,
    api_version: &str,
) -> Option<Made> {
    let tag = |name: &str| r.pointer(&format!("/tags/{name}")).and_then(Value::as_str);
    let r_type = r["type"].as_str()?;
    if !r_type.eq_ignore_ascii_case(kind) || tag(TENANT_TAG) != Some(tenant.as_str()) {
        return None;
    }
    let of = tag(CLUSTER_TAG)?;
    if cluster.is_some_and(|c| c != of) {
        return None;
    }
    // The tenant's workload-identity group is shared by all its clusters: it is never one
    // cluster's leftover, whichever cluster's create made it (and tagged it, before groups
    // shared by a tenant were tagged for the tenant only).
    let name = r["name"].as_str().unwrap_or_default();
    if kind.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE)
        && name.eq_ignore_ascii_case(&hypersaga_model::names::identity_resource_group(tenant))
    {
        return None;
    }
    Some(Made {
        cluster: of.to_owned(),
        target: Some(Target::Azure),
        kind: kind.to_owned(),
        name: name.to_owned(),
        id: r["id"].as_str()?.to_owned(),
        api_version: (*api_version).to_owned(),
        location: r["location"].as_str().unwrap_or_default().to_owned(),
        operation: tag(SAGA_TAG).unwrap_or_default().to_owned(),
        of: String::new(),
    })
}

/// A `<service>._sweep` step's run: what the service made for the command's cluster (its own
/// infra id's, see [`Made::is_of`]), of the `owned` types, found by its tags and deleted in
/// that order; a resource in a group that is deleted too goes with its group. Idempotent:
/// each attempt lists again, and what is gone is neither listed nor deleted twice.
pub async fn sweep_step(
    arm: &TenantArm,
    cmd: &hypersaga_bus::StepCommand,
    ops: &Ops,
    owned: &[(&str, &str)],
) -> Result<hypersaga_bus::Outputs, Halt> {
    let found = of_the_cluster(
        tagged(arm, &cmd.tenant, Some(&cmd.cluster), owned).await?,
        cmd,
    );
    let mut found = outside_groups_deleted(found);
    groups_last_managed_first(&mut found, &cmd.context.names);
    delete_in_order(arm, ops, &found).await?;
    Ok(hypersaga_bus::Outputs::new())
}

/// Resource groups after everything else, the managed group (the VMs and NICs CAPZ made, on
/// the VNet's subnet) before the VNet's, and that before the NSG's (attached to the subnet).
fn groups_last_managed_first(found: &mut [Made], names: &hypersaga_model::Names) {
    let order = [&names.managed_rg, &names.vnet_rg, &names.nsg_rg];
    found.sort_by_key(|m| {
        if !m.kind.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE) {
            return 0;
        }
        1 + order
            .iter()
            .position(|g| g.eq_ignore_ascii_case(&m.name))
            .unwrap_or(order.len())
    });
}

/// What of `found` the command's cluster made (not an earlier cluster's of its name).
pub fn of_the_cluster(found: Vec<Made>, cmd: &hypersaga_bus::StepCommand) -> Vec<Made> {
    found
        .into_iter()
        .filter(|m| m.is_of(&cmd.context.names))
        .collect()
}

/// `found` without what lies in a resource group `found` deletes too: ARM deletes a group with
/// everything in it, in its own order, so a VNet whose subnet a VM still uses is not deleted
/// ahead of that VM.
fn outside_groups_deleted(found: Vec<Made>) -> Vec<Made> {
    let groups: Vec<String> = found
        .iter()
        .filter(|m| m.kind.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE))
        .map(|m| format!("{}/", m.id.to_ascii_lowercase()))
        .collect();
    found
        .into_iter()
        .filter(|m| {
            let id = m.id.to_ascii_lowercase();
            !groups.iter().any(|g| id.starts_with(g.as_str()))
        })
        .collect()
}

/// Deletes each of `found`, in order, each once the one before is gone: [`Halt::Wait`] while
/// ARM works on one. Already gone is done, so a sweep step can run any number of times.
pub async fn delete_in_order(arm: &TenantArm, ops: &Ops, found: &[Made]) -> Result<(), Halt> {
    for made in found {
        remove(&arm.client, ops, &made.kind, &made.id, &made.api_version).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_is_in_a_group_deleted_goes_with_it() {
        let made = |kind: &str, id: &str| Made {
            kind: kind.into(),
            id: id.into(),
            ..Made::default()
        };
        let found = vec![
            made(
                "Microsoft.Network/virtualNetworks",
                "/subscriptions/s/resourceGroups/demo-vnet-x/providers/Microsoft.Network/virtualNetworks/v",
            ),
            made(
                "Microsoft.Network/networkSecurityGroups",
                "/subscriptions/s/resourceGroups/elsewhere/providers/Microsoft.Network/networkSecurityGroups/n",
            ),
            made(
                RESOURCE_GROUP_TYPE,
                "/subscriptions/s/resourceGroups/demo-vnet-x",
            ),
        ];
        let ids: Vec<String> = outside_groups_deleted(found)
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(
            ids,
            [
                "/subscriptions/s/resourceGroups/elsewhere/providers/Microsoft.Network/networkSecurityGroups/n",
                "/subscriptions/s/resourceGroups/demo-vnet-x"
            ]
        );
    }

    #[test]
    fn only_the_tenants_resources_of_the_type_and_cluster_asked_are_kept() {
        let acme = TenantId::new("acme").unwrap();
        let r = |tenant: &str, cluster: &str, kind: &str| {
            json!({"id": format!("/subscriptions/s/resourceGroups/g/providers/{kind}/x"), "name": "x", "type": kind,
                   "location": "eastus", "tags": {TENANT_TAG: tenant, CLUSTER_TAG: cluster, SAGA_TAG: "saga-1"}})
        };
        let vnet = "Microsoft.Network/virtualNetworks";
        let made = made_of(
            &r("acme", "demo", vnet),
            &acme,
            Some("demo"),
            vnet,
            "2023-11-01",
        )
        .expect("kept");
        assert_eq!(
            (
                made.cluster.as_str(),
                made.operation.as_str(),
                made.api_version.as_str()
            ),
            ("demo", "saga-1", "2023-11-01")
        );
        assert!(made_of(&r("acme", "demo", vnet), &acme, None, vnet, "v").is_some());
        assert!(made_of(&r("globex", "demo", vnet), &acme, None, vnet, "v").is_none());
        assert!(made_of(&r("acme", "other", vnet), &acme, Some("demo"), vnet, "v").is_none());
        assert!(
            made_of(
                &r("acme", "demo", "Microsoft.Network/networkSecurityGroups"),
                &acme,
                None,
                vnet,
                "v"
            )
            .is_none()
        );
        let untagged = json!({"id": "/x", "type": vnet, "tags": {TENANT_TAG: "acme"}});
        assert!(made_of(&untagged, &acme, None, vnet, "v").is_none());
        let shared = json!({"id": "/subscriptions/s/resourceGroups/hcp-acme-identities", "name": "hcp-acme-identities",
                            "type": RESOURCE_GROUP_TYPE, "tags": {TENANT_TAG: "acme", CLUSTER_TAG: "demo"}});
        assert!(
            made_of(&shared, &acme, None, RESOURCE_GROUP_TYPE, "v").is_none(),
            "the tenant's identity group is no cluster's"
        );
    }
}
