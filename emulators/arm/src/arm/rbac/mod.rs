//! `Microsoft.Authorization`: role assignments at any scope, the built-in role definitions, and
//! the caller's permissions at a resource group or resource ([`permissions`]).
//!
//! Behaviour follows `specification/authorization/resource-manager/Microsoft.Authorization/
//! stable/2022-04-01/authorization-RoleAssignmentsCalls.json` and its examples, and the refusals
//! ARM is seen answering: a second assignment of the same role to the same principal at the
//! same scope (`409 RoleAssignmentExists`), changing an assignment's principal or role
//! (`400 RoleAssignmentUpdateNotPermitted`), a principal Entra does not know or has not yet
//! replicated (`400 PrincipalNotFound`), a role that does not exist.

mod assignments;
mod definitions;
mod list;
mod model;
mod permissions;
mod principals;
mod refusals;
mod request;
mod scope;

use std::time::Duration;

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;

use super::Ctx;
use crate::errors::{ArmError, Result};
use crate::path::{AuthzKind, AuthzRef};
use crate::store::Store;

pub(crate) use definitions::find as find_role;
pub(crate) use model::render_assignment;

/// Realistic time ARM takes to answer a role-assignment write (docs/reference/azure-latencies.md
/// 10a: 1-2 s).
pub const WRITE_LATENCY: Duration = Duration::from_millis(1500);

/// Runs a request on a role assignment or role definition (or a collection of them).
pub(super) fn route(
    ctx: &Ctx<'_>,
    store: &mut Store,
    method: &Method,
    r: &AuthzRef,
    body: &Bytes,
) -> Result<Response> {
    match (r.kind, method, r.name.as_deref()) {
        (AuthzKind::RoleAssignments, &Method::PUT, Some(name)) => {
            assignments::put(ctx, store, r, name, body)
        }
        (AuthzKind::RoleAssignments, &Method::GET, Some(name)) => assignments::get(store, r, name),
        (AuthzKind::RoleAssignments, &Method::DELETE, Some(name)) => {
            assignments::delete(store, r, name)
        }
        (AuthzKind::RoleAssignments, &Method::GET, None) => list::assignments(ctx, store, r),
        (AuthzKind::RoleDefinitions, &Method::GET, Some(name)) => definitions::get(store, r, name),
        (AuthzKind::RoleDefinitions, &Method::GET, None) => definitions::list(ctx, store, r),
        (AuthzKind::Permissions, &Method::GET, None) => permissions::list(ctx, store, r),
        _ => Err(ArmError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("The requested method '{method}' is not allowed for this resource."),
        )),
    }
}
