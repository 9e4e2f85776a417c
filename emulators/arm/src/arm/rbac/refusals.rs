//! The errors the Authorization resource provider answers, worded as ARM words them.
//!
//! Where ARM prints a GUID inside a sentence it prints it without hyphens (`Principal
//! 0f14a80d42e54d57afe046acf9dfae05 does not exist…`, `…existing role assignment is
//! 716c4d159bc8476da3c16ccb70082517.`), so clients that parse these messages see the same form.

use axum::http::StatusCode;
use uuid::Uuid;

use crate::errors::ArmError;

/// A GUID as ARM prints it in messages: 32 hex digits, no hyphens.
pub(super) fn simple(id: &Uuid) -> String {
    id.simple().to_string()
}

/// Azure/HubAndSpokeResearchEnclave#50, Azure/avdaccelerator#76: the same text whether the
/// principal does not exist or has not replicated yet, which is why it names the fix.
pub(super) fn principal_not_found(principal: &Uuid, tenant: &str) -> ArmError {
    ArmError::bad_request(
        "PrincipalNotFound",
        format!(
            "Principal {} does not exist in the directory {tenant}. Check that you have the \
             correct principal ID. If you are creating this principal and then immediately \
             assigning a role, this error might be related to a replication delay. In this case, \
             set the role assignment principalType property to a value, such as \
             ServicePrincipal, User, or Group.  See https://aka.ms/docs-principaltype",
            simple(principal)
        ),
    )
}

/// Azure/modern-web-app-pattern-dotnet#129 (ARM's own spelling, `PrinciaplType` included).
pub(super) fn unmatched_principal_type(principal: &Uuid, actual: &str, given: &str) -> ArmError {
    ArmError::bad_request(
        "UnmatchedPrincipalType",
        format!(
            "The PrincipalId '{}' has type '{actual}' , which is different from specified \
             PrinciaplType '{given}'.",
            simple(principal)
        ),
    )
}

/// `409`: another assignment already grants this role to this principal at this scope.
pub(super) fn role_assignment_exists(existing_name: &str) -> ArmError {
    let shown = Uuid::parse_str(existing_name)
        .map(|u| simple(&u))
        .unwrap_or_else(|_| existing_name.to_owned());
    ArmError::new(
        StatusCode::CONFLICT,
        "RoleAssignmentExists",
        format!(
            "The role assignment already exists. The ID of the existing role assignment is \
             {shown}."
        ),
    )
}

/// Re-PUT of an existing assignment name with another principal or role (deployments report
/// it under `BadRequest`, i.e. HTTP 400).
pub(super) fn update_not_permitted() -> ArmError {
    ArmError::bad_request(
        "RoleAssignmentUpdateNotPermitted",
        "Tenant ID, application ID, principal ID, and scope are not allowed to be updated.",
    )
}

/// hashicorp/terraform-provider-azurerm#8547: the malformed last segment is quoted.
pub(super) fn invalid_role_definition_id(given: &str) -> ArmError {
    ArmError::bad_request(
        "InvalidRoleDefinitionId",
        format!("The role definition ID '{given}' is not valid."),
    )
}

/// A well-formed role definition id naming no role.
pub(super) fn role_definition_does_not_exist(id: &Uuid) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "RoleDefinitionDoesNotExist",
        format!(
            "The specified role definition with ID '{}' does not exist.",
            simple(id)
        ),
    )
}

/// Azure/Azure-Landing-Zones#3419: assignment names must be GUIDs.
pub(super) fn invalid_role_assignment_id(name: &str) -> ArmError {
    ArmError::bad_request(
        "InvalidRoleAssignmentId",
        format!(
            "The role assignment ID '{name}' is not valid. The role assignment ID must be a GUID."
        ),
    )
}

pub(super) fn invalid_principal_id() -> ArmError {
    ArmError::bad_request(
        "InvalidPrincipalId",
        "A valid principal ID must be provided for role assignment.",
    )
}

pub(super) fn role_assignment_not_found(name: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "RoleAssignmentNotFound",
        format!("The role assignment '{name}' is not found."),
    )
}

/// A body that does not deserialize into the request model.
pub(super) fn invalid_content(detail: &str) -> ArmError {
    ArmError::bad_request(
        "InvalidRequestContent",
        format!("The request content was invalid and could not be deserialized: '{detail}'."),
    )
}

pub(super) fn invalid_filter(filter: &str) -> ArmError {
    ArmError::bad_request(
        "InvalidFilterInQueryString",
        format!("Invalid $filter '{filter}' specified in the query string."),
    )
}
