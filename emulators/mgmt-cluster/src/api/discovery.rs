//! Discovery documents (`/version`, `/api`, `/apis`, resource lists), enough for
//! `kube::discovery` and kubectl's REST mapper. Only the unaggregated form is served: when
//! kubectl asks for aggregated discovery it accepts plain `application/json` and falls back.

use axum::Json;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::kinds::{self, KINDS, ResourceDef};

pub(super) async fn version() -> Json<Value> {
    Json(json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0-hypersaga",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc",
        "platform": "linux/amd64",
    }))
}

pub(super) async fn core_versions() -> Json<Value> {
    Json(json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }))
}

fn resource_list(group: &str, version: &str) -> Value {
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut resources = Vec::new();
    for def in KINDS
        .iter()
        .filter(|d| d.group == group && d.version == version)
    {
        resources.push(resource_entry(def));
        if def.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", def.plural), "singularName": "", "namespaced": def.namespaced,
                "kind": def.kind, "verbs": ["get", "patch", "update"],
            }));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

fn resource_entry(def: &ResourceDef) -> Value {
    let mut entry = json!({
        "name": def.plural, "singularName": def.singular, "namespaced": def.namespaced,
        "kind": def.kind,
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    });
    if !def.short_names.is_empty() {
        entry["shortNames"] = json!(def.short_names);
    }
    if !def.group.is_empty() {
        entry["categories"] = json!(["all"]);
    }
    entry
}

pub(super) async fn core_resources() -> Json<Value> {
    Json(resource_list("", "v1"))
}

fn group_doc(group: &str) -> Option<Value> {
    let versions: Vec<Value> = kinds::groups()
        .into_iter()
        .filter(|(g, _)| *g == group)
        .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first()?.clone();
    Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
}

pub(super) async fn groups() -> Json<Value> {
    let mut names: Vec<&str> = kinds::groups().into_iter().map(|(g, _)| g).collect();
    names.dedup();
    let groups: Vec<Value> = names.into_iter().filter_map(group_doc).collect();
    Json(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

pub(super) async fn group(Path(group): Path<String>) -> Response {
    match group_doc(&group) {
        Some(mut doc) => {
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            Json(doc).into_response()
        }
        None => ApiError::resource_not_found(&format!("/apis/{group}")).into_response(),
    }
}

pub(super) async fn group_resources(Path((group, version)): Path<(String, String)>) -> Response {
    if !kinds::groups()
        .iter()
        .any(|(g, v)| *g == group && *v == version)
    {
        return ApiError::resource_not_found(&format!("/apis/{group}/{version}")).into_response();
    }
    Json(resource_list(&group, &version)).into_response()
}
