//! `GET /subscriptions/{s}/resourcegroups/{rg}[/providers/{ns}/{type}/{name}]/providers/
//! Microsoft.Authorization/permissions`: `Permissions_ListForResourceGroup` and
//! `Permissions_ListForResource` of `authorization-RoleDefinitionsCalls.json` (2022-04-01).
//!
//! The answer (`PermissionGetResult`) lists, for the caller, the `Permission` of the role of
//! every assignment to it at the scope or above — one entry per assignment, as the role
//! defines it (`actions`, `notActions`, `dataActions`, `notDataActions`), never merged: a
//! `notActions` entry only subtracts from its own entry's `actions`. The operator's tokens,
//! which the emulator treats as the owner of their subscriptions (`crate::rbac`), get Owner's
//! entry first. The scope must exist: a missing group is ARM's `404 ResourceGroupNotFound`, a
//! missing resource `404 ResourceNotFound`. Only resource groups and resources have the list;
//! a subscription path is answered `404`, as the spec defines no such operation.
//!
//! Reading it is the action `Microsoft.Authorization/permissions/read` over the scope, which
//! any role with `*/read` grants (`crate::rbac::action`).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use uuid::Uuid;

use super::definitions::{BuiltIn, find};
use super::scope;
use crate::arm::Ctx;
use crate::arm::respond::page;
use crate::entra::object_id;
use crate::errors::{ArmError, Result};
use crate::path::{AuthzRef, AuthzScope};
use crate::rbac::at_or_above;
use crate::store::Store;

/// Owner's role definition GUID.
const OWNER: &str = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";

/// One `Permission` as the role defines it. Built-in control-plane roles define no data
/// actions here, so those lists are empty.
fn permission(role: &BuiltIn) -> Value {
    json!({
        "actions": role.actions,
        "notActions": role.not_actions,
        "dataActions": [],
        "notDataActions": [],
    })
}

/// Answers the list for the caller. A read: idempotent, it changes nothing.
pub(super) fn list(ctx: &Ctx<'_>, store: &Store, r: &AuthzRef) -> Result<Response> {
    if matches!(r.scope, AuthzScope::Subscription) {
        return Err(ArmError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!(
                "No HTTP resource was found that matches the request URI '{}'. The \
                 permissions list is served for a resource group or a resource.",
                ctx.path
            ),
        ));
    }
    let scope_id = scope::resolve(store, r, false)?;
    let caller = ctx.caller.as_str();
    let mut items = Vec::new();
    let operator = ctx.emu.with_principals(|all| {
        all.iter().any(|p| {
            object_id(&p.client_id).eq_ignore_ascii_case(caller)
                && p.subscription_ids
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(&r.sub))
        })
    });
    if operator {
        items.extend(
            Uuid::parse_str(OWNER)
                .ok()
                .and_then(|g| find(&g))
                .map(permission),
        );
    }
    let Ok(principal) = Uuid::parse_str(caller) else {
        return Ok(page(ctx, items));
    };
    items.extend(
        store
            .assignments()
            .filter(|a| {
                a.sub.eq_ignore_ascii_case(&r.sub)
                    && Uuid::parse_str(&a.principal_id).is_ok_and(|p| p == principal)
                    && at_or_above(&a.scope, &scope_id)
            })
            .filter_map(|a| {
                a.role_definition_id
                    .rsplit('/')
                    .next()
                    .and_then(|g| Uuid::parse_str(g).ok())
                    .and_then(|g| find(&g))
            })
            .map(permission),
    );
    Ok(page(ctx, items))
}
