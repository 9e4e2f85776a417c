//! Admin API (plain HTTP, no auth): fault injection, object dump and request counts for tests
//! and the CLI. Separate from the Kubernetes API so no Kubernetes client can reach it by accident.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};

use crate::{Emulator, Fault};

pub(crate) fn router(emu: Emulator) -> Router {
    Router::new()
        .route(
            "/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/objects", get(objects))
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

async fn clear_faults(State(emu): State<Emulator>) -> StatusCode {
    emu.clear_faults();
    StatusCode::NO_CONTENT
}

async fn objects(State(emu): State<Emulator>) -> Json<Vec<serde_json::Value>> {
    Json(emu.objects())
}

async fn requests(State(emu): State<Emulator>) -> Json<std::collections::BTreeMap<String, u64>> {
    Json(emu.request_counts())
}
