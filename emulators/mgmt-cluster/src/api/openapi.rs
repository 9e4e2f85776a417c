//! A minimal OpenAPI v3 document set. kubectl refuses `apply` without one ("failed to download
//! openapi"); what it needs is to see, per group-version, PATCH operations that accept the
//! `fieldValidation` parameter — then it leaves validation to the server instead of
//! validating client-side against schemas. No schemas are published, so for custom resources
//! kubectl falls back to JSON merge patches, which is what the real server expects for them.

use axum::Json;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::kinds::{KINDS, ResourceDef};

/// `api/v1` or `apis/{group}/{version}` for a kind.
fn gv_path(def: &ResourceDef) -> String {
    if def.group.is_empty() {
        format!("api/{}", def.version)
    } else {
        format!("apis/{}/{}", def.group, def.version)
    }
}

pub(super) async fn root() -> Json<Value> {
    let mut paths = Map::new();
    for def in KINDS.iter() {
        let gv = gv_path(def);
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash=hypersaga")}),
        );
    }
    Json(json!({"paths": paths}))
}

fn operations(def: &ResourceDef) -> Value {
    let gvk = json!({"group": def.group, "version": def.version, "kind": def.kind});
    let op = |action: &str| {
        json!({
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            ],
            "responses": {"200": {"description": "OK"}},
        })
    };
    json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")})
}

pub(super) async fn group_version(Path(rest): Path<String>) -> Response {
    let rest = rest.trim_matches('/');
    let defs: Vec<&ResourceDef> = KINDS.iter().filter(|d| gv_path(d) == rest).collect();
    if defs.is_empty() {
        return ApiError::resource_not_found(&format!("/openapi/v3/{rest}")).into_response();
    }
    let mut paths = Map::new();
    for def in defs {
        let item = if def.namespaced {
            format!("/{rest}/namespaces/{{namespace}}/{}/{{name}}", def.plural)
        } else {
            format!("/{rest}/{}/{{name}}", def.plural)
        };
        paths.insert(item, operations(def));
    }
    Json(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
    .into_response()
}
