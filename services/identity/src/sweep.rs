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

/// The identities tagged for `tenant` (and `cluster`), each after its role assignments.
pub(crate) async fn made(
    arm: &TenantArm,
    tenant: &TenantId,
    cluster: Option<&str>,
) -> Result<Vec<Made>, StepError> {
    let identities = sweep::tagged(arm, tenant, cluster, &[(MSI_TYPE, MSI_API)]).await?;
    let mut found = Vec::new();
    for identity in &identities {
        found.extend(assignments_of(arm, identity).await?);
    }
    found.extend(identities);
    Ok(found)
}

/// The role assignments of `identity`'s principal, anywhere in the subscription.
async fn assignments_of(arm: &TenantArm, identity: &Made) -> Result<Vec<Made>, StepError> {
    let Some(shown) = arm
        .client
        .get(&identity.id, MSI_API)
        .await
        .map_err(step_error)?
    else {
        return Ok(Vec::new());
    };
    let Some(principal) = shown
        .pointer("/properties/principalId")
        .and_then(Value::as_str)
    else {
        return Ok(Vec::new());
    };
    let path = format!(
        "/subscriptions/{}/providers/Microsoft.Authorization/roleAssignments?$filter=principalId%20eq%20%27{principal}%27",
        arm.subscription_id
    );
    let listed = arm
        .client
        .list(&path, AUTHORIZATION_API)
        .await
        .map_err(step_error)?;
    Ok(listed
        .iter()
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
            })
        })
        .collect())
}

/// Runs `identity.sweep`: lists again and deletes, in order. Idempotent: what is gone is
/// neither listed nor deleted twice.
pub(crate) async fn run(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let found = made(arm, &cmd.tenant, Some(&cmd.cluster)).await?;
    sweep::delete_in_order(arm, ops, &found).await?;
    Ok(Outputs::new())
}
