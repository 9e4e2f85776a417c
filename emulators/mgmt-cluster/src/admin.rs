//! Admin API (plain HTTP, no auth): fault injection (`/faults` for objects the simulated
//! operator fails, `/faults/api` for errors the Kubernetes API answers), the simulated
//! workload of autoscaled NodePools (`/nodepools/{namespace}/{name}/demand`), object dump
//! (`/objects`, and `/hosted/{namespace}/objects` for a hosted cluster's API, listed by
//! `/hosted`)
//! and request counts for tests and the CLI. Separate from the Kubernetes API so no
//! Kubernetes client can reach it by accident.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};

use crate::{ApiFault, Emulator, Fault, InstalledApiFault};

pub(crate) fn router(emu: Emulator) -> Router {
    Router::new()
        .route(
            "/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/faults/api", get(list_api_faults).post(add_api_fault))
        .route(
            "/faults/objects/{name_contains}",
            axum::routing::delete(remove_faults),
        )
        .route(
            "/nodepools/{namespace}/{name}/demand",
            axum::routing::put(set_demand).delete(clear_demand),
        )
        .route("/demand", get(demands))
        .route("/objects", get(objects))
        .route("/hosted", get(hosted_apis))
        .route("/hosted/{namespace}/objects", get(hosted_objects))
        .route("/requests", get(requests))
        .with_state(emu)
}

async fn list_faults(State(emu): State<Emulator>) -> Json<Vec<Fault>> {
    Json(emu.faults())
}

async fn add_fault(State(emu): State<Emulator>, Json(fault): Json<Fault>) -> impl IntoResponse {
    emu.inject_fault(fault.clone());
    (StatusCode::CREATED, Json(fault))
}

async fn list_api_faults(State(emu): State<Emulator>) -> Json<Vec<InstalledApiFault>> {
    Json(emu.api_faults())
}

async fn add_api_fault(
    State(emu): State<Emulator>,
    Json(fault): Json<ApiFault>,
) -> axum::response::Response {
    match emu.add_api_fault(fault) {
        Ok(f) => (StatusCode::CREATED, Json(f)).into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({ "error": e })),
        )
            .into_response(),
    }
}

/// Removes the faults (of objects and of the API) scoped by exactly this name fragment
/// (object names hold no `/`): `200` with how many went.
async fn remove_faults(
    State(emu): State<Emulator>,
    axum::extract::Path(name_contains): axum::extract::Path<String>,
) -> Json<serde_json::Value> {
    Json(serde_json::json!({ "removed": emu.remove_faults(&name_contains) }))
}

async fn clear_faults(State(emu): State<Emulator>) -> StatusCode {
    emu.clear_faults();
    StatusCode::NO_CONTENT
}

/// The body of `PUT /nodepools/{namespace}/{name}/demand`.
#[derive(serde::Deserialize, serde::Serialize)]
struct Demand {
    /// Nodes the pool's pending workload needs.
    nodes: u32,
}

/// Sets a NodePool's simulated workload: `200` with it.
async fn set_demand(
    State(emu): State<Emulator>,
    axum::extract::Path((namespace, name)): axum::extract::Path<(String, String)>,
    Json(demand): Json<Demand>,
) -> Json<Demand> {
    emu.set_node_pool_demand(&namespace, &name, demand.nodes);
    Json(demand)
}

/// Forgets a NodePool's simulated workload: `204`, or `404` when it had none.
async fn clear_demand(
    State(emu): State<Emulator>,
    axum::extract::Path((namespace, name)): axum::extract::Path<(String, String)>,
) -> StatusCode {
    if emu.clear_node_pool_demand(&namespace, &name) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

async fn demands(State(emu): State<Emulator>) -> Json<std::collections::BTreeMap<String, i64>> {
    Json(emu.node_pool_demands())
}

async fn objects(State(emu): State<Emulator>) -> Json<Vec<serde_json::Value>> {
    Json(emu.objects())
}

/// The hosted clusters' APIs: control-plane namespace → path under the served URL.
async fn hosted_apis(
    State(emu): State<Emulator>,
) -> Json<std::collections::BTreeMap<String, String>> {
    Json(emu.hosted_apis())
}

/// One hosted cluster's objects; 404 when it has no API (not deployed, or deleted).
async fn hosted_objects(
    State(emu): State<Emulator>,
    axum::extract::Path(namespace): axum::extract::Path<String>,
) -> axum::response::Response {
    match emu.hosted_objects(&namespace) {
        Some(objects) => Json(objects).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            format!("no hosted cluster API for namespace {namespace}"),
        )
            .into_response(),
    }
}

async fn requests(State(emu): State<Emulator>) -> Json<std::collections::BTreeMap<String, u64>> {
    Json(emu.request_counts())
}
