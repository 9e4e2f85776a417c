//! Discovery (`/version`, `/api`, `/apis`, group and resource lists), for `kube::discovery`
//! and kubectl's REST mapper.
//!
//! `/api` and `/apis` answer in aggregated form (`apidiscovery.k8s.io/v2`
//! `APIGroupDiscoveryList`: every group, version and resource in one response) when the
//! client's `Accept` prefers it — kubectl since 1.30 asks for it first — and as the classic
//! `APIVersions`/`APIGroupList` otherwise, after which clients fetch each group-version's
//! `APIResourceList`. The older `v2beta1` form, gone from kube-apiserver 1.33, is not served.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use serde_json::{Value, json};

use super::negotiate::parse_accept;
use crate::Emulator;
use crate::error::ApiError;
use crate::kinds::{self, KINDS, Profile, ResourceDef};

/// The media type of aggregated discovery v2, as client-go asks for and recognizes it.
const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const STATUS_VERBS: [&str; 3] = ["get", "patch", "update"];

pub(super) async fn version() -> Json<Value> {
    Json(json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0-hypersaga",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc",
        "platform": "linux/amd64",
    }))
}

/// Whether the client prefers aggregated discovery v2 to the classic documents: the first
/// clause (by preference) that either form satisfies decides.
fn wants_aggregated(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    for clause in parse_accept(accept) {
        if !clause.admits("application", "json") {
            continue;
        }
        match (clause.param("as"), clause.param("g"), clause.param("v")) {
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2")) => {
                return true;
            }
            (None, None, None) => return false,
            _ => {}
        }
    }
    false
}

fn aggregated(items: Vec<Value>) -> Response {
    let doc = json!({
        "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {}, "items": items,
    });
    let body = serde_json::to_vec(&doc).unwrap_or_default();
    Response::builder()
        .header(http::header::CONTENT_TYPE, AGGREGATED_V2)
        .header(http::header::VARY, "Accept")
        .body(Body::from(body))
        .unwrap_or_else(|e| ApiError::internal(e.to_string()).into_response())
}

fn served<'a>(
    profile: Profile,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'static ResourceDef> + 'a {
    KINDS
        .iter()
        .filter(move |d| d.group == group && d.version == version && d.served_by.serves(profile))
}

/// `APIResourceDiscovery` of one kind.
fn resource_discovery(def: &ResourceDef) -> Value {
    let kind = json!({"group": def.group, "version": def.version, "kind": def.kind});
    let mut r = json!({
        "resource": def.plural, "responseKind": kind,
        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": def.singular, "verbs": VERBS,
    });
    if !def.short_names.is_empty() {
        r["shortNames"] = json!(def.short_names);
    }
    if def.status_subresource {
        r["subresources"] =
            json!([{"subresource": "status", "responseKind": kind, "verbs": STATUS_VERBS}]);
    }
    r
}

/// `APIGroupDiscovery` of a group (`""` for the core group).
fn group_discovery(profile: Profile, group: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let mut resources: Vec<&ResourceDef> = served(profile, group, v).collect();
            resources.sort_by_key(|d| d.plural);
            json!({
                "version": v,
                "resources": resources.into_iter().map(resource_discovery).collect::<Vec<_>>(),
                "freshness": "Current",
            })
        })
        .collect();
    let mut metadata = json!({"creationTimestamp": null});
    if !group.is_empty() {
        metadata["name"] = json!(group);
    }
    json!({"metadata": metadata, "versions": versions})
}

pub(super) async fn core_versions(State(emu): State<Emulator>, headers: HeaderMap) -> Response {
    if wants_aggregated(&headers) {
        return aggregated(vec![group_discovery(emu.shared().profile, "", &["v1"])]);
    }
    Json(json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }))
    .into_response()
}

fn resource_list(profile: Profile, group: &str, version: &str) -> Value {
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut resources = Vec::new();
    for def in served(profile, group, version) {
        resources.push(resource_entry(def));
        if def.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", def.plural), "singularName": "", "namespaced": def.namespaced,
                "kind": def.kind, "verbs": STATUS_VERBS,
            }));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

/// An `APIResource`. None of the served kinds is in a category: HyperShift's CRDs declare
/// none, so `kubectl get all` does not list them.
fn resource_entry(def: &ResourceDef) -> Value {
    let mut entry = json!({
        "name": def.plural, "singularName": def.singular, "namespaced": def.namespaced,
        "kind": def.kind, "verbs": VERBS,
    });
    if !def.short_names.is_empty() {
        entry["shortNames"] = json!(def.short_names);
    }
    entry
}

pub(super) async fn core_resources(State(emu): State<Emulator>) -> Json<Value> {
    Json(resource_list(emu.shared().profile, "", "v1"))
}

fn group_doc(profile: Profile, group: &str) -> Option<Value> {
    let versions: Vec<Value> = kinds::groups(profile)
        .into_iter()
        .filter(|(g, _)| *g == group)
        .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first()?.clone();
    Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
}

fn group_names(profile: Profile) -> Vec<&'static str> {
    let mut names: Vec<&str> = kinds::groups(profile).into_iter().map(|(g, _)| g).collect();
    names.dedup();
    names
}

pub(super) async fn groups(State(emu): State<Emulator>, headers: HeaderMap) -> Response {
    let profile = emu.shared().profile;
    if wants_aggregated(&headers) {
        let items = group_names(profile)
            .into_iter()
            .map(|g| {
                let versions: Vec<&str> = kinds::groups(profile)
                    .into_iter()
                    .filter(|(name, _)| *name == g)
                    .map(|(_, v)| v)
                    .collect();
                group_discovery(profile, g, &versions)
            })
            .collect();
        return aggregated(items);
    }
    let groups: Vec<Value> = group_names(profile)
        .into_iter()
        .filter_map(|g| group_doc(profile, g))
        .collect();
    Json(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})).into_response()
}

pub(super) async fn group(State(emu): State<Emulator>, Path(group): Path<String>) -> Response {
    match group_doc(emu.shared().profile, &group) {
        Some(mut doc) => {
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            Json(doc).into_response()
        }
        None => ApiError::resource_not_found(&format!("/apis/{group}")).into_response(),
    }
}

pub(super) async fn group_resources(
    State(emu): State<Emulator>,
    Path((group, version)): Path<(String, String)>,
) -> Response {
    let profile = emu.shared().profile;
    if !kinds::groups(profile)
        .iter()
        .any(|(g, v)| *g == group && *v == version)
    {
        return ApiError::resource_not_found(&format!("/apis/{group}/{version}")).into_response();
    }
    Json(resource_list(profile, &group, &version)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, v.parse().unwrap());
        h
    }

    #[test]
    fn aggregated_only_when_preferred() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                       application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(&accept(kubectl)));
        let older = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(!wants_aggregated(&accept(older)));
        assert!(!wants_aggregated(&accept("application/json, */*")));
    }

    #[test]
    fn aggregated_resources_name_their_kinds() {
        let g = group_discovery(Profile::Management, "hypershift.openshift.io", &["v1beta1"]);
        let hc = &g["versions"][0]["resources"][0];
        assert_eq!(hc["resource"], "hostedclusters");
        assert_eq!(hc["responseKind"]["kind"], "HostedCluster");
        assert_eq!(hc["scope"], "Namespaced");
        assert_eq!(hc["shortNames"], json!(["hc", "hcs"]));
        assert_eq!(hc["subresources"][0]["subresource"], "status");
        let core = group_discovery(Profile::Management, "", &["v1"]);
        assert!(core["metadata"].get("name").is_none());
        let names: Vec<&str> = core["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["resource"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "configmaps",
                "events",
                "namespaces",
                "secrets",
                "serviceaccounts"
            ]
        );
        let hosted = group_names(Profile::Hosted);
        assert!(hosted.contains(&"apps") && !hosted.contains(&"hypershift.openshift.io"));
    }
}
