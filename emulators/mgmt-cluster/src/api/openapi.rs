//! OpenAPI v3 (`/openapi/v3` and `/openapi/v3/<group-version>`), generated from the same
//! schema trees the emulator prunes, defaults and validates with (module `schema`).
//!
//! kubectl reads it for three things: `explain` (a schema per kind, found by its
//! `x-kubernetes-group-version-kind`, with field descriptions); deciding that the server
//! validates fields itself (`fieldValidation` among the query parameters of a PATCH
//! operation for the kind — then `--validate=strict` leaves it to the server); and, for
//! built-in kinds, `kubectl apply`'s strategic merge patches (the patch extensions).
//!
//! The same schemas are served as OpenAPI v2 by [`super::openapi_v2`] for older clients.
//!
//! As kube-openapi's `handler3` serves it: the root lists each group-version's document
//! under a `?hash=` of its content (uppercase hex SHA-512); a document fetched with its
//! current hash is immutable and cacheable for a year, one fetched with a stale hash
//! redirects (301) to the current one.

use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use super::negotiate::parse_accept;
use super::resources::Params;
use crate::Emulator;
use crate::error::ApiError;
use crate::kinds::{KINDS, NAMESPACES, Profile, ResourceDef};
use crate::schema;
use crate::schema::docs::description;
use crate::schema::openapi::{Style, to_openapi};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// Which OpenAPI a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spec {
    V2,
    V3,
}

impl Spec {
    fn ref_url(self, name: &str) -> String {
        match self {
            Self::V2 => format!("#/definitions/{name}"),
            Self::V3 => format!("#/components/schemas/{name}"),
        }
    }

    /// A reference to a named schema as a property: v3 wraps it in `allOf` so siblings
    /// such as `description` are allowed, as kube-openapi publishes it.
    fn reference(self, name: &str) -> Value {
        match self {
            Self::V2 => json!({"$ref": self.ref_url(name)}),
            Self::V3 => json!({"allOf": [{"$ref": self.ref_url(name)}]}),
        }
    }
}

/// `api/v1` or `apis/{group}/{version}` for a kind.
fn gv_path(def: &ResourceDef) -> String {
    if def.group.is_empty() {
        format!("api/{}", def.version)
    } else {
        format!("apis/{}/{}", def.group, def.version)
    }
}

/// The component name of a kind: `io.k8s.api.core.v1.Secret` for built-in kinds (the
/// apiextensions server's own package for CRDs), the reversed group for custom resources
/// (`io.openshift.hypershift.v1beta1.HostedCluster`).
fn component(def: &ResourceDef, kind: &str) -> String {
    if def.group == "apiextensions.k8s.io" {
        format!(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{kind}",
            def.version
        )
    } else if def.builtin {
        format!("io.k8s.api.{}.{}.{kind}", def.go_package(), def.version)
    } else {
        let reversed: Vec<&str> = def.group.split('.').rev().collect();
        format!("{}.{}.{kind}", reversed.join("."), def.version)
    }
}

fn gvk(def: &ResourceDef, kind: &str) -> Value {
    json!([{"group": def.group, "kind": kind, "version": def.version}])
}

/// A description of the envelope fields every kind shares.
fn envelope_doc(def: &ResourceDef, field: &str) -> Option<&'static str> {
    description(def.kind, field).or_else(|| description("Envelope", field))
}

/// The kind's schema: its tree, with `metadata` a reference to `ObjectMeta` as the CRD
/// OpenAPI builder publishes it.
fn kind_schema(res: usize, spec: Spec) -> Value {
    let def = &KINDS[res];
    let style = Style {
        docs: def.kind,
        builtin: def.builtin,
        v2: spec == Spec::V2,
    };
    let mut s = to_openapi(schema::for_kind(res), style, "");
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        for field in ["apiVersion", "kind"] {
            if let (Some(p), Some(d)) = (props.get_mut(field), envelope_doc(def, field)) {
                p["description"] = json!(d);
            }
        }
        let mut metadata = spec.reference(OBJECT_META);
        if let Some(d) = envelope_doc(def, "metadata") {
            metadata["description"] = json!(d);
        }
        props.insert("metadata".into(), metadata);
    }
    s["x-kubernetes-group-version-kind"] = gvk(def, def.kind);
    s
}

fn list_schema(def: &ResourceDef, spec: Spec) -> Value {
    let kind = format!("{}List", def.kind);
    let mut metadata = spec.reference(LIST_META);
    metadata["description"] = json!(description("Envelope", "listMetadata"));
    json!({
        "description": format!("{kind} is a list of {}", def.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": envelope_doc(def, "apiVersion")},
            "items": {"type": "array", "items": {"$ref": spec.ref_url(&component(def, def.kind))}},
            "kind": {"type": "string", "description": envelope_doc(def, "kind")},
            "metadata": metadata,
        },
        "x-kubernetes-group-version-kind": gvk(def, &kind),
    })
}

/// `ObjectMeta`, from the tree every kind's `metadata` is validated with.
fn object_meta_schema(spec: Spec) -> Value {
    schema::for_kind(NAMESPACES)
        .field("metadata")
        .map(|node| {
            to_openapi(
                node,
                Style {
                    docs: "ObjectMeta",
                    builtin: true,
                    v2: spec == Spec::V2,
                },
                "",
            )
        })
        .unwrap_or_else(|| json!({"type": "object"}))
}

fn list_meta_schema() -> Value {
    let prop = |name: &str, type_: &str| {
        let mut p = json!({"type": type_});
        if let Some(d) = description("ListMeta", name) {
            p["description"] = json!(d);
        }
        p
    };
    json!({
        "description": description("ListMeta", ""),
        "type": "object",
        "properties": {
            "continue": prop("continue", "string"),
            "remainingItemCount": prop("remainingItemCount", "integer"),
            "resourceVersion": prop("resourceVersion", "string"),
            "selfLink": prop("selfLink", "string"),
        },
    })
}

fn query(name: &str, spec: Spec) -> Value {
    match spec {
        Spec::V2 => json!({"name": name, "in": "query", "type": "string", "uniqueItems": true}),
        Spec::V3 => {
            json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
        }
    }
}

/// One operation of a path, tagged with the kind it serves.
fn operation(
    def: &ResourceDef,
    action: &str,
    params: &[&str],
    response: &str,
    spec: Spec,
) -> Value {
    let parameters: Vec<Value> = params.iter().map(|p| query(p, spec)).collect();
    let schema = json!({"$ref": spec.ref_url(response)});
    let ok = match spec {
        Spec::V2 => json!({"description": "OK", "schema": schema}),
        Spec::V3 => json!({"description": "OK", "content": {
            "application/json": {"schema": schema},
            "application/yaml": {"schema": schema},
        }}),
    };
    json!({
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": def.group, "version": def.version, "kind": def.kind},
        "parameters": parameters,
        "responses": {"200": ok},
    })
}

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "pretty",
    "resourceVersion",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "pretty"];
const PATCH_PARAMS: &[&str] = &[
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "pretty",
];

fn paths_for(def: &ResourceDef, gv: &str, spec: Spec, paths: &mut Map<String, Value>) {
    let object = component(def, def.kind);
    let list = component(def, &format!("{}List", def.kind));
    let collection = if def.namespaced {
        format!("/{gv}/namespaces/{{namespace}}/{}", def.plural)
    } else {
        format!("/{gv}/{}", def.plural)
    };
    paths.insert(
        collection.clone(),
        json!({
            "get": operation(def, "list", LIST_PARAMS, &list, spec),
            "post": operation(def, "post", WRITE_PARAMS, &object, spec),
            "delete": operation(def, "deletecollection", &["dryRun", "fieldSelector", "labelSelector"], &list, spec),
        }),
    );
    if def.namespaced {
        paths.insert(
            format!("/{gv}/{}", def.plural),
            json!({"get": operation(def, "list", LIST_PARAMS, &list, spec)}),
        );
    }
    let item = format!("{collection}/{{name}}");
    paths.insert(
        item.clone(),
        json!({
            "get": operation(def, "get", &["pretty"], &object, spec),
            "put": operation(def, "put", WRITE_PARAMS, &object, spec),
            "patch": operation(def, "patch", PATCH_PARAMS, &object, spec),
            "delete": operation(def, "delete", &["dryRun", "gracePeriodSeconds", "propagationPolicy"], &object, spec),
        }),
    );
    if def.status_subresource {
        paths.insert(
            format!("{item}/status"),
            json!({
                "get": operation(def, "get", &["pretty"], &object, spec),
                "put": operation(def, "put", WRITE_PARAMS, &object, spec),
                "patch": operation(def, "patch", PATCH_PARAMS, &object, spec),
            }),
        );
    }
}

/// The paths and schemas of `kinds` (indexes into [`KINDS`]).
pub(super) fn paths_and_schemas(
    kinds: &[usize],
    spec: Spec,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for &res in kinds {
        let def = &KINDS[res];
        paths_for(def, &gv_path(def), spec, &mut paths);
        schemas.insert(component(def, def.kind), kind_schema(res, spec));
        schemas.insert(
            component(def, &format!("{}List", def.kind)),
            list_schema(def, spec),
        );
    }
    schemas.insert(OBJECT_META.into(), object_meta_schema(spec));
    schemas.insert(LIST_META.into(), list_meta_schema());
    (paths, schemas)
}

/// One group-version's document.
fn document(profile: Profile, gv: &str) -> Option<Value> {
    let kinds: Vec<usize> = (0..KINDS.len())
        .filter(|r| gv_path(&KINDS[*r]) == gv && KINDS[*r].served_by.serves(profile))
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let (paths, schemas) = paths_and_schemas(&kinds, Spec::V3);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// A served document: its bytes and their hash.
pub(super) struct Served {
    pub body: Vec<u8>,
    pub hash: String,
}

impl Served {
    pub fn new(doc: &Value) -> Self {
        Self::bytes(serde_json::to_vec(doc).unwrap_or_default())
    }

    pub fn bytes(body: Vec<u8>) -> Self {
        let hash = Sha512::digest(&body)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        Self { body, hash }
    }
}

/// Every group-version's document, built once (the schemas never change while running).
/// Every group-version's document served on a server of `profile`.
fn build_documents(profile: Profile) -> Vec<(String, Served)> {
    let mut gvs: Vec<String> = KINDS
        .iter()
        .filter(|d| d.served_by.serves(profile))
        .map(gv_path)
        .collect();
    gvs.dedup();
    gvs.into_iter()
        .filter_map(|gv| document(profile, &gv).map(|d| (gv, Served::new(&d))))
        .collect()
}

/// The documents of `profile`, built once (the schemas never change while running).
fn documents(profile: Profile) -> &'static [(String, Served)] {
    static MANAGEMENT: LazyLock<Vec<(String, Served)>> =
        LazyLock::new(|| build_documents(Profile::Management));
    static HOSTED: LazyLock<Vec<(String, Served)>> =
        LazyLock::new(|| build_documents(Profile::Hosted));
    match profile {
        Profile::Management => &MANAGEMENT,
        Profile::Hosted => &HOSTED,
    }
}

fn served_url(gv: &str, hash: &str) -> String {
    format!("/openapi/v3/{gv}?hash={hash}")
}

fn build_root(profile: Profile) -> Served {
    let paths: Map<String, Value> = documents(profile)
        .iter()
        .map(|(gv, s)| {
            (
                gv.clone(),
                json!({"serverRelativeURL": served_url(gv, &s.hash)}),
            )
        })
        .collect();
    Served::new(&json!({"paths": paths}))
}

/// The `/openapi/v3` index of `profile`.
fn root_of(profile: Profile) -> &'static Served {
    static MANAGEMENT: LazyLock<Served> = LazyLock::new(|| build_root(Profile::Management));
    static HOSTED: LazyLock<Served> = LazyLock::new(|| build_root(Profile::Hosted));
    match profile {
        Profile::Management => &MANAGEMENT,
        Profile::Hosted => &HOSTED,
    }
}

fn quoted(hash: &str) -> String {
    format!("\"{hash}\"")
}

/// `http.ServeContent` with an ETag: 304 when the client has this version.
pub(super) fn serve(
    served: &Served,
    content_type: &str,
    headers: &HeaderMap,
    extra: &[(&str, String)],
) -> Response {
    let etag = quoted(&served.hash);
    let fresh = headers
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut builder = Response::builder()
        .header(http::header::ETAG, etag)
        .header(http::header::CONTENT_TYPE, content_type);
    for (k, v) in extra {
        builder = builder.header(*k, v);
    }
    let response = if fresh {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::empty())
    } else {
        builder
            .status(StatusCode::OK)
            .body(Body::from(served.body.clone()))
    };
    response.unwrap_or_else(|e| ApiError::internal(e.to_string()).into_response())
}

/// An HTTP date a year from now (`Expires`).
fn http_date_in_a_year() -> String {
    let at = time::OffsetDateTime::now_utc() + time::Duration::days(365);
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    at.format(&format).unwrap_or_default()
}

pub(super) async fn root(State(emu): State<Emulator>, headers: HeaderMap) -> Response {
    serve(
        root_of(emu.shared().profile),
        "application/json",
        &headers,
        &[],
    )
}

/// Whether `Accept` admits JSON (kube-openapi also serves protobuf, which the emulator
/// does not; a client asking only for that gets 406).
fn accepts_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    parse_accept(accept)
        .iter()
        .any(|c| c.admits("application", "json"))
}

pub(super) async fn group_version(
    State(emu): State<Emulator>,
    Path(rest): Path<String>,
    Query(params): Query<Params>,
    headers: HeaderMap,
) -> Response {
    let gv = rest.trim_matches('/');
    let Some((_, served)) = documents(emu.shared().profile)
        .iter()
        .find(|(g, _)| g == gv)
    else {
        return ApiError::resource_not_found(&format!("/openapi/v3/{gv}")).into_response();
    };
    if !accepts_json(&headers) {
        return StatusCode::NOT_ACCEPTABLE.into_response();
    }
    let mut extra = vec![("Vary", "Accept".to_owned())];
    if let Some(hash) = params.get("hash").filter(|h| !h.is_empty()) {
        if *hash != served.hash {
            return Response::builder()
                .status(StatusCode::MOVED_PERMANENTLY)
                .header(http::header::LOCATION, served_url(gv, &served.hash))
                .body(Body::empty())
                .unwrap_or_else(|e| ApiError::internal(e.to_string()).into_response());
        }
        extra.push(("Cache-Control", "public, immutable".to_owned()));
        extra.push(("Expires", http_date_in_a_year()));
    }
    serve(served, "application/json", &headers, &extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_finds_each_kind_by_its_gvk() {
        let doc = document(Profile::Management, "apis/hypershift.openshift.io/v1beta1").unwrap();
        let schemas = &doc["components"]["schemas"];
        let hc = &schemas["io.openshift.hypershift.v1beta1.HostedCluster"];
        assert_eq!(
            hc["x-kubernetes-group-version-kind"],
            json!([{"group": "hypershift.openshift.io", "kind": "HostedCluster", "version": "v1beta1"}])
        );
        assert_eq!(
            hc["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(schemas[OBJECT_META]["properties"]["name"].is_object());
        // kubectl's fieldValidation check: a PATCH of the kind with the parameter.
        let patch = &doc["paths"]["/apis/hypershift.openshift.io/v1beta1/namespaces/{namespace}/nodepools/{name}"]
            ["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "NodePool");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        let core = document(Profile::Management, "api/v1").unwrap();
        assert!(core["components"]["schemas"]["io.k8s.api.core.v1.Event"].is_object());
        assert!(root_of(Profile::Management).hash.len() == 128);
        let hosted = documents(Profile::Hosted);
        assert!(hosted.iter().all(|(gv, _)| !gv.contains("hypershift")));
    }
}
