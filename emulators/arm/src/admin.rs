//! The admin API (plain HTTP, never exposed beyond loopback): fault injection (`/faults`
//! refuses requests, `/faults/async` fails operations after acceptance; `DELETE /faults`
//! clears both), request counts, a dump of every stored resource and role assignment, reset,
//! deleting a role assignment behind the caller's back, and vCPU quota limits (`/quotas`: `PUT`
//! one limit, `GET` those set, `DELETE` them all; see [`crate::quota`]), and the directories'
//! app registrations with their credentials and service principals (`GET
//! /directory/applications[?tenant=…]`, as Graph made them, replicated or not). Used by tests,
//! `hypersaga emulator …` and operators rehearsing failures.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::arm::render_assignment;
use crate::config::Principal;
use crate::directories::AddDirectoryError;
use crate::faults::{AsyncFaultSpec, FaultSpec};
use crate::quota::QuotaLimit;
use crate::{Emulator, directories};

pub(crate) fn router(emu: Emulator) -> Router {
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .route(
            "/faults",
            post(add_fault).get(list_faults).delete(clear_faults),
        )
        .route(
            "/faults/async",
            post(add_async_fault).get(list_async_faults),
        )
        .route("/requests", get(requests))
        .route("/resources", get(resources))
        .route(
            "/role-assignments",
            get(role_assignments).delete(delete_role_assignment),
        )
        .route(
            "/quotas",
            get(list_quota_limits)
                .put(set_quota_limit)
                .delete(clear_quota_limits),
        )
        .route("/directory/applications", get(applications))
        .route("/directories", post(add_directory).get(list_directories))
        .route("/reset", post(reset))
        .with_state(emu)
}

async fn add_fault(State(emu): State<Emulator>, Json(spec): Json<FaultSpec>) -> Response {
    match emu.lock().faults.add(spec) {
        Ok(fault) => (StatusCode::CREATED, Json(fault)).into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

async fn add_async_fault(
    State(emu): State<Emulator>,
    Json(spec): Json<AsyncFaultSpec>,
) -> Response {
    match emu.lock().faults.add_async(spec) {
        Ok(fault) => (StatusCode::CREATED, Json(fault)).into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

async fn list_async_faults(State(emu): State<Emulator>) -> Response {
    Json(emu.lock().faults.list_async()).into_response()
}

async fn list_faults(State(emu): State<Emulator>) -> Response {
    Json(emu.lock().faults.list()).into_response()
}

async fn clear_faults(State(emu): State<Emulator>) -> StatusCode {
    emu.lock().faults.clear();
    StatusCode::NO_CONTENT
}

async fn requests(State(emu): State<Emulator>) -> Response {
    Json(emu.lock().requests.stats()).into_response()
}

#[derive(Deserialize)]
struct ResourcesQuery {
    subscription: Option<String>,
}

async fn resources(State(emu): State<Emulator>, Query(q): Query<ResourcesQuery>) -> Response {
    let mut st = emu.lock();
    st.store.settle(time::OffsetDateTime::now_utc());
    Json(st.store.dump(q.subscription.as_deref())).into_response()
}

/// Every role assignment (optionally of one subscription), as ARM renders them.
async fn role_assignments(
    State(emu): State<Emulator>,
    Query(q): Query<ResourcesQuery>,
) -> Response {
    let mut st = emu.lock();
    st.store.settle(time::OffsetDateTime::now_utc());
    let items: Vec<Value> = st
        .store
        .assignments()
        .filter(|a| {
            q.subscription
                .as_deref()
                .is_none_or(|s| a.sub.eq_ignore_ascii_case(s))
        })
        .map(render_assignment)
        .collect();
    Json(items).into_response()
}

#[derive(Deserialize)]
struct AssignmentQuery {
    /// The assignment's full id (any casing).
    id: String,
}

/// Deletes one role assignment without ARM's checks (no token, no RBAC, no throttling), the
/// way an administrator or a policy removes it from under a running system: `200` with the
/// deleted assignment, `404` when there is none.
async fn delete_role_assignment(
    State(emu): State<Emulator>,
    Query(q): Query<AssignmentQuery>,
) -> Response {
    match emu
        .lock()
        .store
        .remove_assignment(&q.id.to_ascii_lowercase())
    {
        Some(a) => Json(render_assignment(&a)).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": format!("no role assignment '{}'", q.id) })),
        )
            .into_response(),
    }
}

/// Sets the limit of one (subscription, region, `cores` or VM family): `200` with the limit as
/// listed (region normalised, family as the usage list spells it), `400` for a location that is
/// not a region or a name nothing meters. VMs already there stay, over the limit or not.
async fn set_quota_limit(State(emu): State<Emulator>, Json(limit): Json<QuotaLimit>) -> Response {
    match emu.lock().store.quota_mut().set(limit) {
        Ok(stored) => Json(stored).into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

/// Every limit set (optionally of one subscription); rows not listed have the configured
/// default.
async fn list_quota_limits(
    State(emu): State<Emulator>,
    Query(q): Query<ResourcesQuery>,
) -> Response {
    Json(emu.lock().store.quota().list(q.subscription.as_deref())).into_response()
}

/// Forgets every limit set: every row is back to the configured default.
async fn clear_quota_limits(State(emu): State<Emulator>) -> StatusCode {
    emu.lock().store.quota_mut().clear();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct DirectoryQuery {
    tenant: Option<String>,
}

/// Every app registration (optionally of one tenant), each with its federated identity
/// credentials and its service principal in its own directory.
async fn applications(State(emu): State<Emulator>, Query(q): Query<DirectoryQuery>) -> Response {
    let st = emu.lock();
    Json(st.store.directory().registrations(q.tenant.as_deref())).into_response()
}

/// Adds an Entra directory (the body is a [`Principal`]): `201` with its listing, `200` when
/// this very directory is there already (a retry), `409` when its tenant, its administrator's
/// client id or one of its subscriptions is another directory's, `400` for a tenant id that is
/// not a GUID or a blank field.
async fn add_directory(State(emu): State<Emulator>, Json(p): Json<Principal>) -> Response {
    let tenant = p.azure_tenant_id.clone();
    let status = match emu.add_directory(p) {
        Ok(true) => StatusCode::CREATED,
        Ok(false) => StatusCode::OK,
        Err(e) => {
            let status = match e {
                AddDirectoryError::Invalid(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::CONFLICT,
            };
            return (status, Json(json!({ "error": e.to_string() }))).into_response();
        }
    };
    let listing = emu
        .directories()
        .into_iter()
        .find(|d| d.azure_tenant_id.eq_ignore_ascii_case(&tenant));
    (status, Json(listing)).into_response()
}

/// Every directory, configured first, without secrets.
async fn list_directories(State(emu): State<Emulator>) -> Json<Vec<directories::DirectoryListing>> {
    Json(emu.directories())
}

async fn reset(State(emu): State<Emulator>) -> StatusCode {
    emu.reset();
    StatusCode::NO_CONTENT
}
