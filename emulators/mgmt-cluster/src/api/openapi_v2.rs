//! OpenAPI v2 (`/openapi/v2`), which kube-apiserver still serves and older kubectl needs:
//! before 1.29 `kubectl explain` reads it, and before server-side field validation (1.25)
//! `kubectl apply`/`create` validate manifests against it — without it they stop with "the
//! server could not find the requested resource". Same schemas and paths as v3 (see
//! [`super::openapi`]), one document for all groups.
//!
//! client-go asks for it only as protobuf — gnostic's `openapi.v2.Document`
//! (`github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`) — so that is written here
//! for the parts the document uses; `application/json` is served too.

use std::sync::LazyLock;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::negotiate::parse_accept;
use super::openapi::{Served, Spec, paths_and_schemas, serve};
use crate::Emulator;
use crate::kinds::{KINDS, Profile};
use crate::protobuf::Writer;
use axum::extract::State;

/// The protobuf media types of kube-openapi's v2 handler; both are answered with the second
/// (the first's `@` is no valid token, so clients could not parse it in a `Content-Type`).
const PROTOBUF_DEPRECATED: &str = "com.github.proto-openapi.spec.v2@v1.0+protobuf";
const PROTOBUF: &str = "com.github.proto-openapi.spec.v2.v1.0+protobuf";

fn document(profile: Profile) -> Value {
    let kinds: Vec<usize> = (0..KINDS.len())
        .filter(|r| KINDS[*r].served_by.serves(profile))
        .collect();
    let (paths, definitions) = paths_and_schemas(&kinds, Spec::V2);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "definitions": definitions,
    })
}

fn encoded(profile: Profile) -> (Served, Served) {
    let doc = document(profile);
    (Served::new(&doc), Served::bytes(encode_document(&doc)))
}

/// The document of `profile` as JSON and as protobuf, built once.
fn document_of(profile: Profile) -> &'static (Served, Served) {
    static MANAGEMENT: LazyLock<(Served, Served)> = LazyLock::new(|| encoded(Profile::Management));
    static HOSTED: LazyLock<(Served, Served)> = LazyLock::new(|| encoded(Profile::Hosted));
    match profile {
        Profile::Management => &MANAGEMENT,
        Profile::Hosted => &HOSTED,
    }
}

pub(super) async fn v2(State(emu): State<Emulator>, headers: HeaderMap) -> Response {
    let document = document_of(emu.shared().profile);
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|a| !a.is_empty())
        .unwrap_or("*/*");
    let vary = [("Vary", "Accept".to_owned())];
    // The first clause (by preference) that any served type matches, JSON tried first.
    for clause in parse_accept(accept) {
        if clause.admits("application", "json") {
            return serve(&document.0, "application/json", &headers, &vary);
        }
        if clause.admits("application", PROTOBUF_DEPRECATED)
            || clause.admits("application", PROTOBUF)
        {
            let content_type = format!("application/{PROTOBUF}");
            return serve(&document.1, &content_type, &headers, &vary);
        }
    }
    StatusCode::NOT_ACCEPTABLE.into_response()
}

/// gnostic `Any`: a value as YAML text (field 2), which is how clients read extensions,
/// enums and defaults.
fn any(w: &mut Writer, field: u32, v: &Value) {
    let yaml = serde_norway::to_string(v).unwrap_or_default();
    w.message(field, |a| a.string(2, &yaml));
}

/// gnostic `NamedAny` entries for the `x-` keys of a JSON object.
fn vendor_extensions(w: &mut Writer, field: u32, obj: &Value) {
    for (k, v) in obj.as_object().into_iter().flatten() {
        if k.starts_with("x-") {
            w.message(field, |n| {
                n.string(1, k);
                any(n, 2, v);
            });
        }
    }
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn float(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// gnostic `Schema`.
fn schema(w: &mut Writer, s: &Value) {
    w.string(1, text(s, "$ref"));
    w.string(2, text(s, "format"));
    w.string(4, text(s, "description"));
    if let Some(d) = s.get("default") {
        any(w, 5, d);
    }
    w.double(7, float(s, "maximum"));
    w.double(9, float(s, "minimum"));
    w.int64(11, int(s, "maxLength"));
    w.int64(12, int(s, "minLength"));
    w.string(13, text(s, "pattern"));
    w.int64(14, int(s, "maxItems"));
    w.int64(15, int(s, "minItems"));
    w.bool(
        16,
        s.get("uniqueItems")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    );
    w.int64(17, int(s, "maxProperties"));
    w.int64(18, int(s, "minProperties"));
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        w.strings(19, required.iter().filter_map(Value::as_str));
    }
    for e in s
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        any(w, 20, e);
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => w.message(21, |a| a.bool(2, *b)),
        Some(sub @ Value::Object(_)) => w.message(21, |a| a.message(1, |x| schema(x, sub))),
        _ => {}
    }
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        w.message(22, |ti| ti.strings(1, [t]));
    }
    if let Some(items) = s.get("items") {
        w.message(23, |i| i.message(1, |x| schema(x, items)));
    }
    for sub in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        w.message(24, |x| schema(x, sub));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        w.message(25, |p| {
            for (name, sub) in props {
                p.message(1, |n| {
                    n.string(1, name);
                    n.message(2, |x| schema(x, sub));
                });
            }
        });
    }
    vendor_extensions(w, 31, s);
}

/// gnostic `Operation`: query parameters, the 200 response and the extensions.
fn operation(w: &mut Writer, op: &Value) {
    for p in op
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // ParametersItem.parameter > Parameter.non_body_parameter >
        // NonBodyParameter.query_parameter_sub_schema
        w.message(8, |item| {
            item.message(1, |param| {
                param.message(2, |non_body| {
                    non_body.message(3, |q| {
                        q.string(2, text(p, "in"));
                        q.string(4, text(p, "name"));
                        q.string(6, text(p, "type"));
                        q.bool(
                            20,
                            p.get("uniqueItems")
                                .and_then(Value::as_bool)
                                .unwrap_or(false),
                        );
                    });
                });
            });
        });
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        w.message(9, |r| {
            for (code, resp) in responses {
                r.message(1, |named| {
                    named.string(1, code);
                    named.message(2, |value| {
                        value.message(1, |response| {
                            response.string(1, text(resp, "description"));
                            if let Some(s) = resp.get("schema") {
                                response.message(2, |item| item.message(1, |x| schema(x, s)));
                            }
                        });
                    });
                });
            }
        });
    }
    vendor_extensions(w, 13, op);
}

/// gnostic `Document`: swagger, info, paths and definitions.
fn encode_document(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, text(doc, "swagger"));
    if let Some(info) = doc.get("info") {
        w.message(2, |i| {
            i.string(1, text(info, "title"));
            i.string(2, text(info, "version"));
        });
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        w.message(8, |p| {
            for (path, item) in paths {
                p.message(2, |named| {
                    named.string(1, path);
                    named.message(2, |pi| {
                        for (method, field) in [
                            ("get", 2),
                            ("put", 3),
                            ("post", 4),
                            ("delete", 5),
                            ("patch", 8),
                        ] {
                            if let Some(op) = item.get(method) {
                                pi.message(field, |o| operation(o, op));
                            }
                        }
                    });
                });
            }
        });
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        w.message(9, |d| {
            for (name, s) in defs {
                d.message(1, |named| {
                    named.string(1, name);
                    named.message(2, |x| schema(x, s));
                });
            }
        });
    }
    w.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves_and_kinds_carry_their_gvk() {
        let doc = document(Profile::Management);
        let defs = doc["definitions"].as_object().unwrap();
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                        out.push(r.to_owned());
                    }
                    m.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        for r in all {
            let name = r.strip_prefix("#/definitions/").unwrap();
            assert!(defs.contains_key(name), "{r}");
        }
        let np = &defs["io.openshift.hypershift.v1beta1.NodePool"];
        assert_eq!(np["x-kubernetes-group-version-kind"][0]["kind"], "NodePool");
        // v2 has no nullable: such a node is untyped (kubectl then accepts null).
        let history = &defs["io.openshift.hypershift.v1beta1.HostedCluster"]["properties"]["status"]
            ["properties"]["version"]["properties"]["history"]["items"]["properties"]["completionTime"];
        assert!(history.get("type").is_none(), "{history}");
        assert!(!encode_document(&doc).is_empty());
    }
}
