//! `identity.role-assignments`: what each workload identity may do, and where
//! (docs/reference/hypershift-azure.md §2.4). Without them the cloud provider, CAPZ, ingress and
//! the storage drivers of a real cluster cannot act, and it never gets nodes.
//!
//! Each assignment has a deterministic name (UUIDv5 of infra id, component and scope, as
//! HyperShift derives it), so a retry adopts what an earlier attempt made and the undo finds
//! it without a look-up. `principalType` is always sent: a new identity's principal takes a
//! while to replicate in Entra, and without the type ARM answers `PrincipalNotFound` until it
//! has.

use futures::future::join_all;
use hypersaga_azure::ids::{self, ResourceId};
use hypersaga_bus::plan::{StepPlan, Verb};
use hypersaga_bus::{
    Outputs, PublicZoneOutputs, ResourceGroupsOutputs, RoleAssignmentsOutputs, StepCommand,
    StepError, StepId, StepOutputs, WorkloadIdentitiesOutputs,
};
use hypersaga_model::identities::{ROLE_GRANTS, RoleScope, role_assignment_name};
use hypersaga_stepkit::plan::azure;
use hypersaga_stepkit::{Halt, Ops, TenantArm, step_error};
use serde_json::{Value, json};
use tracing::info;

/// `Microsoft.Authorization/roleAssignments` api-version HyperShift uses.
pub const AUTHORIZATION_API: &str = "2022-04-01";

/// One assignment to make: who, what, where, under which name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub id: String,
    pub principal_id: String,
    pub role_definition_id: String,
}

/// The group of a resource the user brought (or owns, as the public zone).
fn group_of_resource(id: &str) -> Result<String, StepError> {
    let parsed = ResourceId::parse(id)
        .map_err(|e| StepError::terminal("InvalidResourceId", e.to_string()))?;
    Ok(ids::resource_group_id(
        parsed.subscription(),
        parsed.resource_group(),
    ))
}

/// The public zone's group, from `dns.public-zone`'s outputs.
fn zone_group(cmd: &StepCommand) -> Result<String, StepError> {
    let PublicZoneOutputs { public_zone } = cmd.context.outputs_of(&StepId::PublicZone)?;
    group_of_resource(&public_zone)
}

/// Every assignment of the cluster, from the identities' principals and the groups' ids.
pub(crate) fn wanted(arm: &TenantArm, cmd: &StepCommand) -> Result<Vec<Assignment>, StepError> {
    assignments(arm, cmd, Some(&zone_group(cmd)?))
}

/// The assignments of the cluster; those on the public zone's group only when it is known.
fn assignments(
    arm: &TenantArm,
    cmd: &StepCommand,
    zone_rg: Option<&str>,
) -> Result<Vec<Assignment>, StepError> {
    let identities: WorkloadIdentitiesOutputs =
        cmd.context.outputs_of(&StepId::WorkloadIdentities)?;
    let groups: ResourceGroupsOutputs = cmd.context.outputs_of(&StepId::ResourceGroups)?;
    let network = &cmd.context.spec.network;
    let group_of =
        |ours: &Option<String>, brought: &Option<String>, what: &str| match (ours, brought) {
            (Some(id), _) => Ok(id.clone()),
            (None, Some(brought)) => group_of_resource(brought),
            (None, None) => Err(StepError::terminal(
                "MissingInput",
                format!("no {what} resource group: neither made by the network step nor brought"),
            )),
        };
    let vnet_rg = group_of(&groups.vnet_rg_id, &network.vnet_id, "VNet")?;
    let nsg_rg = group_of(&groups.nsg_rg_id, &network.nsg_id, "NSG")?;
    let infra = &cmd.context.names.infra_id;
    let mut out = Vec::new();
    for grant in ROLE_GRANTS {
        let principal = identities
            .workload_principals
            .get(grant.identity)
            .ok_or_else(|| {
                StepError::terminal(
                    "MissingInput",
                    format!(
                        "identity.workload output workload_principals has no {:?}",
                        grant.identity
                    ),
                )
            })?;
        for scope in grant.scopes {
            let scope = match (scope, zone_rg) {
                (RoleScope::Managed, _) => groups.managed_rg_id.as_str(),
                (RoleScope::Vnet, _) => vnet_rg.as_str(),
                (RoleScope::Nsg, _) => nsg_rg.as_str(),
                (RoleScope::PublicZone, Some(zone_rg)) => zone_rg,
                (RoleScope::PublicZone, None) => continue,
            };
            let name = role_assignment_name(infra, grant.component, scope);
            out.push(Assignment {
                id: ids::extension_id(scope, "Microsoft.Authorization/roleAssignments", &name),
                principal_id: principal.clone(),
                role_definition_id: format!(
                    "{}/providers/Microsoft.Authorization/roleDefinitions/{}",
                    ids::subscription_id(&arm.subscription_id),
                    grant.role
                ),
            });
        }
    }
    Ok(out)
}

/// What [`ensure`] would make: every assignment, named as it will be (the principals they
/// grant are Entra's to assign when the identities are made).
/// Without the public zone (its own finding), the others are planned all the same, so what
/// they need is checked in the same answer.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let wanted = assignments(arm, cmd, zone_group(cmd).ok().as_deref())?;
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes: wanted
            .iter()
            .map(|a| azure(Verb::Create, &a.id, AUTHORIZATION_API, ""))
            .collect(),
        findings: Vec::new(),
        outputs: RoleAssignmentsOutputs {
            role_assignments: wanted.into_iter().map(|a| a.id).collect(),
        }
        .into_outputs(),
    })
}

/// Makes every assignment (in parallel: they are independent writes).
pub(crate) async fn ensure(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let wanted = wanted(arm, cmd)?;
    let results = join_all(wanted.iter().map(|a| ensure_one(arm, ops, a))).await;
    crate::workload::all_of(results)?;
    Ok(RoleAssignmentsOutputs {
        role_assignments: wanted.into_iter().map(|a| a.id).collect(),
    }
    .into_outputs())
}

/// Removes every assignment the cluster's create would make (already gone is done).
pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    // Without the create's outputs (it never got that far) nothing was assigned.
    let Ok(wanted) = wanted(arm, cmd) else {
        return Ok(Outputs::new());
    };
    let results = join_all(wanted.iter().map(|a| async move {
        hypersaga_stepkit::remove(
            &arm.client,
            ops,
            "role assignment",
            &a.id,
            AUTHORIZATION_API,
        )
        .await
    }))
    .await;
    crate::workload::all_of(results)?;
    Ok(Outputs::new())
}

/// Look, adopt, then create. An assignment of the same name that grants something else (left
/// by an earlier cluster with the same infra id) is replaced: ARM refuses to change one in
/// place. `RoleAssignmentExists` means the same grant exists under another name: done.
async fn ensure_one(arm: &TenantArm, ops: &Ops, a: &Assignment) -> Result<(), Halt> {
    if ops.done(&a.id).is_some() {
        return Ok(());
    }
    let existing = arm
        .client
        .get(&a.id, AUTHORIZATION_API)
        .await
        .map_err(step_error)?;
    if let Some(existing) = &existing {
        if grants(existing, a) {
            ops.finished(&a.id, &Value::Null);
            return Ok(());
        }
        info!(assignment = %a.id, "replacing a stale role assignment of the same name");
        arm.client
            .delete(&a.id, AUTHORIZATION_API)
            .await
            .map_err(step_error)?;
    }
    let body = json!({ "properties": {
        "roleDefinitionId": a.role_definition_id,
        "principalId": a.principal_id,
        "principalType": "ServicePrincipal",
    }});
    match arm.client.put(&a.id, AUTHORIZATION_API, &body).await {
        Ok(_) => {}
        Err(e) if e.code() == Some("RoleAssignmentExists") => {
            info!(assignment = %a.id, "the same grant exists under another name");
        }
        Err(e) => return Err(step_error(e).into()),
    }
    ops.finished(&a.id, &Value::Null);
    Ok(())
}

/// Whether `existing` grants what `a` asks: same principal, same role (ARM may answer the
/// role with or without the subscription prefix; the GUID decides).
fn grants(existing: &Value, a: &Assignment) -> bool {
    let p = &existing["properties"];
    let guid = |id: &str| id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    p["principalId"]
        .as_str()
        .is_some_and(|id| id.eq_ignore_ascii_case(&a.principal_id))
        && p["roleDefinitionId"]
            .as_str()
            .is_some_and(|id| guid(id) == guid(&a.role_definition_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_judged_by_principal_and_role_guid() {
        let a = Assignment {
            id: "/x".into(),
            principal_id: "P".into(),
            role_definition_id:
                "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
                    .into(),
        };
        let stored = |principal: &str, role: &str| json!({"properties": {"principalId": principal, "roleDefinitionId": role}});
        let tail = "/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c";
        assert!(grants(&stored("p", &format!("/subscriptions/s{tail}")), &a));
        assert!(grants(&stored("P", tail), &a));
        assert!(!grants(&stored("other", tail), &a));
        assert!(!grants(
            &stored(
                "P",
                "/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"
            ),
            &a
        ));
    }
}
