//! `identity.sweep`: the workload identities tagged for a cluster no live record owns, and
//! every role assignment of their principals (wherever it is: the cluster's groups, the
//! user's network, the public zone), assignments first. Role assignments take no tags, so
//! they are found from the identities; the federated credentials go with their identity.

use hypersaga_bus::plan::Target;
use hypersaga_bus::sweep::Made;
use hypersaga_bus::{Outputs, StepCommand, StepError};
use hypersaga_model::TenantId;
use hypersaga_stepkit::{Halt, Ops, TenantArm, step_error, sweep};
use serde_json::Value;

use crate::roles::AUTHORIZATION_API;
use crate::workload::{MSI_API, MSI_TYPE};

/// ARM type of role assignments.
const ROLE_ASSIGNMENT_TYPE: &str = "Microsoft.Authorization/roleAssignments";

/// The identities tagged for `tenant` (and `cluster`), each after its role assignments. The
/// subscription's assignments are listed once, and each identity read for its principal.
pub(crate) async fn made(
    arm: &TenantArm,
    tenant: &TenantId,
    cluster: Option<&str>,
) -> Result<Vec<Made>, StepError> {
    let identities = sweep::tagged(arm, tenant, cluster, &[(MSI_TYPE, MSI_API)]).await?;
    if identities.is_empty() {
        return Ok(identities);
    }
    let path = format!(
        "/subscriptions/{}/providers/Microsoft.Authorization/roleAssignments",
        arm.subscription_id
    );
    let assignments = arm
        .client
        .list(&path, AUTHORIZATION_API)
        .await
        .map_err(step_error)?;
    let mut found = Vec::new();
    for identity in &identities {
        if let Some(principal) = principal_of(arm, identity).await? {
            found.extend(assignments_of(&assignments, &principal, identity));
        }
    }
    found.extend(identities);
    Ok(found)
}

/// `identity`'s principal (object) id, if it still exists.
async fn principal_of(arm: &TenantArm, identity: &Made) -> Result<Option<String>, StepError> {
    let shown = arm
        .client
        .get(&identity.id, MSI_API)
        .await
        .map_err(step_error)?;
    Ok(shown.and_then(|s| {
        s.pointer("/properties/principalId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }))
}

/// The role assignments of `principal` among `assignments`, as found through `identity`.
fn assignments_of(assignments: &[Value], principal: &str, identity: &Made) -> Vec<Made> {
    assignments
        .iter()
        .filter(|a| a.pointer("/properties/principalId").and_then(Value::as_str) == Some(principal))
        .filter_map(|a| {
            Some(Made {
                cluster: identity.cluster.clone(),
                target: Some(Target::Azure),
                kind: ROLE_ASSIGNMENT_TYPE.to_owned(),
                name: a["name"].as_str()?.to_owned(),
                id: a["id"].as_str()?.to_owned(),
                api_version: AUTHORIZATION_API.to_owned(),
                location: String::new(),
                operation: identity.operation.clone(),
                of: identity.id.clone(),
            })
        })
        .collect()
}

/// Runs `identity._sweep`: lists again, keeps what the command's cluster made, and deletes it
/// in order. Idempotent: what is gone is neither listed nor deleted twice.
pub(crate) async fn run(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let found = sweep::of_the_cluster(made(arm, &cmd.tenant, Some(&cmd.cluster)).await?, cmd);
    sweep::delete_in_order(arm, ops, &found).await?;
    Ok(Outputs::new())
}
