//! A role assignment as ARM returns it (`RoleAssignment` in
//! `authorization-RoleAssignmentsCalls.json` 2022-04-01): every property present, unset ones
//! `null`, as the live service sends them.

use serde_json::{Value, json};

use crate::store::{StoredAssignment, rfc3339};

/// The JSON of an assignment (PUT, GET, DELETE and list answers, and the admin API).
pub(crate) fn render_assignment(a: &StoredAssignment) -> Value {
    json!({
        "id": a.id,
        "type": "Microsoft.Authorization/roleAssignments",
        "name": a.name,
        "properties": {
            "roleDefinitionId": a.role_definition_id,
            "principalId": a.principal_id,
            "principalType": a.principal_type,
            "scope": a.scope,
            "condition": a.condition,
            "conditionVersion": a.condition_version,
            "description": a.description,
            "createdOn": rfc3339(a.created_on),
            "updatedOn": rfc3339(a.updated_on),
            "createdBy": a.created_by,
            "updatedBy": a.updated_by,
            "delegatedManagedIdentityResourceId": a.delegated_managed_identity_resource_id,
        },
    })
}
