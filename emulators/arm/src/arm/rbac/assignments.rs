//! `PUT`, `GET` and `DELETE {scope}/providers/Microsoft.Authorization/roleAssignments/{name}`.
//!
//! A PUT is checked in the order the refusals come back from ARM: the name, the body, the
//! scope, the role, the principal (Entra lookup), then the assignments already there — the
//! same name with another principal or role cannot be updated, and the same grant under
//! another name is a conflict. Assignments are synchronous: `201` with the assignment.

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use uuid::Uuid;

use super::principals::{Directory, lookup};
use super::refusals::{
    invalid_role_assignment_id, principal_not_found, role_assignment_exists,
    role_assignment_not_found, role_definition_does_not_exist, unmatched_principal_type,
    update_not_permitted,
};
use super::request::{AssignmentRequest, parse};
use super::{definitions, model::render_assignment, scope};
use crate::arm::Ctx;
use crate::arm::respond::{empty, json_response};
use crate::errors::Result;
use crate::path::AuthzRef;
use crate::store::{Store, StoredAssignment};

/// The canonical id of assignment `name` at `scope_id`; a GUID name in its lower-case hyphenated
/// form, as ARM returns it whatever form was sent.
fn assignment_id(scope_id: &str, name: &str) -> String {
    let name = Uuid::parse_str(name).map_or_else(|_| name.to_owned(), |g| g.to_string());
    format!("{scope_id}/providers/Microsoft.Authorization/roleAssignments/{name}")
}

/// `/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{guid}`: the form
/// ARM stores and returns whatever form was sent (Azure/azure-rest-api-specs#11103).
fn role_definition_id(sub: &str, role: &Uuid) -> String {
    format!("/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role}")
}

/// The GUID at the end of a stored role definition id.
fn role_of(a: &StoredAssignment) -> Option<Uuid> {
    a.role_definition_id
        .rsplit('/')
        .next()
        .and_then(|g| Uuid::parse_str(g).ok())
}

fn principal_of(a: &StoredAssignment) -> Option<Uuid> {
    Uuid::parse_str(&a.principal_id).ok()
}

/// The principal type the assignment records: the one sent (checked against the directory
/// once it can see the principal), else the directory's.
fn principal_type(
    ctx: &Ctx<'_>,
    store: &Store,
    req: &AssignmentRequest,
    sub: &str,
) -> Result<&'static str> {
    let tenant = ctx.emu.tenant_of(sub);
    let not_found = || principal_not_found(&req.principal, &tenant);
    match (
        lookup(ctx.emu, store, &tenant, &req.principal, ctx.now),
        req.principal_type,
    ) {
        (Directory::Unknown, _) => Err(not_found()),
        // The lookup a missing `principalType` forces cannot see the principal yet.
        (Directory::Replicating, None) => Err(not_found()),
        // `principalType` skips the lookup, so there is nothing to contradict it.
        (Directory::Replicating, Some(given)) => Ok(given),
        (Directory::Known(actual), None) => Ok(actual),
        (Directory::Known(actual), Some(given)) if actual == given => Ok(given),
        (Directory::Known(actual), Some(given)) => {
            Err(unmatched_principal_type(&req.principal, actual, given))
        }
    }
}

/// `PUT`: create (`201`), or the same grant again (`200`, description and condition updated).
pub(super) fn put(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &AuthzRef,
    name: &str,
    body: &Bytes,
) -> Result<Response> {
    let guid = Uuid::parse_str(name).map_err(|_| invalid_role_assignment_id(name))?;
    let req = parse(body)?;
    let scope_id = scope::resolve(store, r, true)?;
    if definitions::find(&req.role).is_none() {
        return Err(role_definition_does_not_exist(&req.role));
    }
    let principal_type = principal_type(ctx, store, &req, &r.sub)?;

    let id = assignment_id(&scope_id, &guid.to_string());
    let key = id.to_ascii_lowercase();
    let existing = store.assignment(&key).cloned();
    if let Some(e) = &existing
        && (principal_of(e) != Some(req.principal) || role_of(e) != Some(req.role))
    {
        return Err(update_not_permitted());
    }
    let scope_key = scope_id.to_ascii_lowercase();
    let duplicate = store.assignments().find(|a| {
        a.id.to_ascii_lowercase() != key
            && a.scope.eq_ignore_ascii_case(&scope_key)
            && principal_of(a) == Some(req.principal)
            && role_of(a) == Some(req.role)
    });
    if let Some(d) = duplicate {
        return Err(role_assignment_exists(&d.name));
    }

    let assignment = StoredAssignment {
        id,
        name: guid.to_string(),
        sub: r.sub.clone(),
        scope: scope_id,
        role_definition_id: role_definition_id(&r.sub, &req.role),
        principal_id: req.principal.to_string(),
        principal_type: existing
            .as_ref()
            .filter(|_| req.principal_type.is_none())
            .map_or_else(|| principal_type.to_owned(), |e| e.principal_type.clone()),
        description: req.description,
        condition: req.condition,
        condition_version: req.condition_version,
        delegated_managed_identity_resource_id: req.delegated_managed_identity_resource_id,
        created_on: existing.as_ref().map_or(ctx.now, |e| e.created_on),
        updated_on: ctx.now,
        created_by: existing
            .as_ref()
            .map_or_else(|| ctx.caller.clone(), |e| e.created_by.clone()),
        updated_by: ctx.caller.clone(),
    };
    let rendered = render_assignment(&assignment);
    store.insert_assignment(assignment);
    let status = if existing.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(json_response(status, rendered))
}

/// `GET`: the assignment, or `404 RoleAssignmentNotFound`.
pub(super) fn get(store: &Store, r: &AuthzRef, name: &str) -> Result<Response> {
    let scope_id = scope::resolve(store, r, false)?;
    let key = assignment_id(&scope_id, name).to_ascii_lowercase();
    let a = store
        .assignment(&key)
        .ok_or_else(|| role_assignment_not_found(name))?;
    Ok(json_response(StatusCode::OK, render_assignment(a)))
}

/// `DELETE`: `200` with the deleted assignment, `204` when there is none
/// (RoleAssignments_Delete.json).
pub(super) fn delete(store: &mut Store, r: &AuthzRef, name: &str) -> Result<Response> {
    let scope_id = scope::resolve(store, r, true)?;
    let key = assignment_id(&scope_id, name).to_ascii_lowercase();
    Ok(match store.remove_assignment(&key) {
        Some(a) => json_response(StatusCode::OK, render_assignment(&a)),
        None => empty(StatusCode::NO_CONTENT),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_definition_ids_are_stored_at_the_subscription() {
        let role = Uuid::parse_str("acdd72a7-3385-48ef-bd42-f606fba81ae7").expect("guid");
        assert_eq!(
            role_definition_id("s1", &role),
            "/subscriptions/s1/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"
        );
    }
}
