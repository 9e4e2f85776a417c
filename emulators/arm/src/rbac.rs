//! Authorization of ARM requests: who may perform which action over which scope.
//!
//! Tokens of the configured app registrations stand for the operator, who owns the
//! subscriptions configured for them: they may do anything there and nothing elsewhere, unless
//! a role assignment says otherwise. Every other caller — the managed identities that get their
//! tokens through workload identity federation — is authorized only by role assignments, as
//! ARM authorizes: an assignment to the caller's object id, at the request's scope or one of
//! its ancestors, whose role's `actions` match the action and whose `notActions` do not
//! (`role-definitions.md` in MicrosoftDocs/azure-docs: `notActions` subtract from the same
//! role's `actions` and deny nothing another assignment grants), and whose condition, if any,
//! allows the role assignment being written or deleted ([`condition`]). A refusal is ARM's
//! `403 AuthorizationFailed`.

mod action;
mod condition;
mod permissions;

use axum::http::StatusCode;

use crate::Emulator;
use crate::entra::{Claims, object_id};
use crate::errors::ArmError;

pub(crate) use action::Request;
pub(crate) use permissions::at_or_above;

impl Emulator {
    /// Whether the caller of `claims` may perform `req`, or ARM's refusal.
    pub(crate) fn authorize(&self, claims: &Claims, req: &Request) -> Result<(), ArmError> {
        let operator = self.with_principals(|all| {
            all.iter().any(|p| {
                p.client_id.eq_ignore_ascii_case(&claims.appid)
                    && object_id(&p.client_id).eq_ignore_ascii_case(&claims.oid)
                    && p.subscription_ids
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(&req.sub))
            })
        });
        if operator {
            return Ok(());
        }
        let allowed = {
            let mut st = self.lock();
            st.store.settle(time::OffsetDateTime::now_utc());
            let scope = req.evaluated_scope(&st.store);
            let deleted = req.deleted_assignment(&st.store);
            let subject = permissions::Subject {
                request: req.written_assignment.as_ref(),
                resource: deleted.as_ref(),
            };
            if req.within {
                permissions::permits_within(&st.store, &claims.oid, &req.action, &scope, subject)
            } else {
                permissions::permits(&st.store, &claims.oid, &req.action, &scope, subject)
            }
        };
        if allowed {
            return Ok(());
        }
        Err(authorization_failed(&claims.oid, &req.action, &req.scope))
    }
}

/// ARM's refusal. For a service principal ARM prints the object id as the client too.
fn authorization_failed(oid: &str, action: &str, scope: &str) -> ArmError {
    ArmError::new(
        StatusCode::FORBIDDEN,
        "AuthorizationFailed",
        format!(
            "The client '{oid}' with object id '{oid}' does not have authorization to perform \
             action '{action}' over scope '{scope}' or the scope is invalid. If access was \
             recently granted, please refresh your credentials."
        ),
    )
}
