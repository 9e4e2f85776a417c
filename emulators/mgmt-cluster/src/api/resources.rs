//! The verbs on resource URLs: get, list, watch, create, update, patch, delete.

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use super::{Target, parse_target, table, watch};
use crate::Emulator;
use crate::error::{ApiError, ApiResult};
use crate::kinds::{KINDS, ResourceDef};
use crate::meta::{meta_str, metadata_mut};
use crate::patch;
use crate::selectors::Selectors;
use crate::store::Scope;

type Params = HashMap<String, String>;

pub(super) async fn core(
    State(emu): State<Emulator>,
    Path(rest): Path<String>,
    method: Method,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&emu, "", "v1", &rest, method, &params, &headers, &body)
}

pub(super) async fn grouped(
    State(emu): State<Emulator>,
    Path((group, version, rest)): Path<(String, String, String)>,
    method: Method,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(
        &emu, &group, &version, &rest, method, &params, &headers, &body,
    )
}

#[allow(clippy::too_many_arguments)]
fn handle(
    emu: &Emulator,
    group: &str,
    version: &str,
    rest: &str,
    method: Method,
    params: &Params,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let result = parse_target(group, version, rest).and_then(|target| {
        let verb = verb(&method, &target, params)?;
        let def = &KINDS[target.res];
        let resource = match &target.subresource {
            Some(sub) => format!("{}/{sub}", def.plural),
            None => def.plural.to_owned(),
        };
        emu.count_request(format!("{verb} {resource}"));
        let req = Req {
            emu,
            target: &target,
            def,
            params,
            headers,
            body,
        };
        match verb {
            "get" => req.get(),
            "list" => req.list(),
            "watch" => req.watch(),
            "create" => req.create(),
            "update" => req.update(),
            "patch" => req.patch(),
            "delete" => req.delete(),
            "deletecollection" => req.delete_collection(),
            _ => Err(ApiError::method_not_allowed(format!(
                "{method} is not supported"
            ))),
        }
    });
    result.unwrap_or_else(IntoResponse::into_response)
}

fn verb(method: &Method, target: &Target, params: &Params) -> ApiResult<&'static str> {
    let is_watch = params.get("watch").is_some_and(|w| w == "1" || w == "true");
    let item = target.name.is_some();
    let sub = target.subresource.is_some();
    Ok(match (method.as_str(), item) {
        ("GET", false) if is_watch => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) if !sub => "delete",
        ("DELETE", false) => "deletecollection",
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
    })
}

struct Req<'a> {
    emu: &'a Emulator,
    target: &'a Target,
    def: &'static ResourceDef,
    params: &'a Params,
    headers: &'a HeaderMap,
    body: &'a Bytes,
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
}

fn json_response(code: StatusCode, obj: Value) -> Response {
    (code, Json(obj)).into_response()
}

impl Req<'_> {
    fn ns(&self) -> &str {
        self.target.namespace.as_deref().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.target.name.as_deref().unwrap_or("")
    }

    fn scope(&self) -> Scope {
        if self.target.subresource.is_some() {
            Scope::Status
        } else {
            Scope::Main
        }
    }

    fn wants_table(&self) -> bool {
        self.headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("as=Table"))
    }

    /// The request body as JSON (YAML accepted too, as kubectl may send apply bodies so).
    fn body_json(&self) -> ApiResult<Value> {
        let ct = content_type(self.headers);
        if ct.contains("protobuf") || ct.contains("cbor") {
            // Binary encodings are not served; client-go retries such requests as JSON on 415.
            return Err(ApiError::unsupported_media_type(ct));
        }
        let parsed = if ct.contains("yaml") {
            serde_yaml::from_slice::<Value>(self.body).map_err(|e| e.to_string())
        } else {
            serde_json::from_slice::<Value>(self.body).map_err(|e| e.to_string())
        };
        parsed.map_err(|e| ApiError::bad_request(format!("the request body is invalid: {e}")))
    }

    fn respond(&self, code: StatusCode, obj: Value) -> ApiResult<Response> {
        if self.wants_table() {
            return Ok(json_response(code, table::table(self.def, &[obj])));
        }
        Ok(json_response(code, obj))
    }

    fn require_namespace(&self) -> ApiResult<()> {
        if self.def.namespaced && self.target.namespace.is_none() {
            return Err(ApiError::method_not_allowed(
                "a namespace is required for this request",
            ));
        }
        Ok(())
    }

    fn get(&self) -> ApiResult<Response> {
        let obj = self
            .emu
            .shared()
            .store
            .get(self.target.res, self.ns(), self.name())?;
        self.respond(StatusCode::OK, obj)
    }

    fn selectors(&self) -> ApiResult<Selectors> {
        Selectors::parse(
            self.params.get("labelSelector").map(String::as_str),
            self.params.get("fieldSelector").map(String::as_str),
        )
    }

    fn list(&self) -> ApiResult<Response> {
        let selectors = self.selectors()?;
        let (items, rv) = self
            .emu
            .shared()
            .store
            .list(self.target.res, self.target.namespace.as_deref());
        let mut items: Vec<Value> = items.into_iter().filter(|o| selectors.matches(o)).collect();
        let mut list_meta = json!({"resourceVersion": rv.to_string()});
        if let Some(token) = self.params.get("continue").filter(|t| !t.is_empty()) {
            let after = decode_continue(token)?;
            items.retain(|o| item_key(o) > after);
        }
        if let Some(limit) = self
            .params
            .get("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|l| *l > 0)
            && items.len() > limit
        {
            let remaining = items.len() - limit;
            items.truncate(limit);
            if let Some(last) = items.last() {
                let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(item_key(last));
                list_meta["continue"] = json!(token);
                list_meta["remainingItemCount"] = json!(remaining);
            }
        }
        if self.wants_table() {
            let mut t = table::table(self.def, &items);
            t["metadata"] = list_meta;
            return Ok(json_response(StatusCode::OK, t));
        }
        Ok(json_response(
            StatusCode::OK,
            json!({
                "kind": format!("{}List", self.def.kind), "apiVersion": self.def.api_version(),
                "metadata": list_meta, "items": items,
            }),
        ))
    }

    fn watch(&self) -> ApiResult<Response> {
        let options = watch::Options {
            res: self.target.res,
            namespace: self.target.namespace.clone(),
            selectors: self.selectors()?,
            resource_version: self.params.get("resourceVersion").cloned(),
            timeout_seconds: self
                .params
                .get("timeoutSeconds")
                .and_then(|t| t.parse().ok()),
            bookmarks: self
                .params
                .get("allowWatchBookmarks")
                .is_some_and(|b| b == "true" || b == "1"),
            table: self.wants_table(),
        };
        watch::respond(self.emu, options)
    }

    fn create(&self) -> ApiResult<Response> {
        self.require_namespace()?;
        let mut obj = self.body_json()?;
        if let Some(body_ns) = meta_str(&obj, "namespace")
            && self.def.namespaced
            && body_ns != self.ns()
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        metadata_mut(&mut obj).remove("resourceVersion");
        let created = self
            .emu
            .shared()
            .store
            .create(self.target.res, self.ns(), obj)?;
        self.respond(StatusCode::CREATED, created)
    }

    fn update(&self) -> ApiResult<Response> {
        let body = self.body_json()?;
        let written = self.emu.shared().store.modify(
            self.target.res,
            self.ns(),
            self.name(),
            self.scope(),
            false,
            |_| Ok(body),
        )?;
        self.respond(StatusCode::OK, written.object)
    }

    fn patch(&self) -> ApiResult<Response> {
        let ct = content_type(self.headers)
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        let body = self.body_json()?;
        let store = &self.emu.shared().store;
        let (res, ns, name, scope) = (self.target.res, self.ns(), self.name(), self.scope());
        let written = match ct.as_str() {
            "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                if ct.starts_with("application/strategic") && !self.def.group.is_empty() {
                    return Err(ApiError::unsupported_media_type(&ct));
                }
                store.modify(res, ns, name, scope, false, |cur| {
                    let mut next = cur.cloned().unwrap_or_default();
                    patch::merge_patch(&mut next, &body);
                    Ok(next)
                })?
            }
            "application/json-patch+json" => store.modify(res, ns, name, scope, false, |cur| {
                let mut next = cur.cloned().unwrap_or_default();
                patch::json_patch(&mut next, &body)?;
                Ok(next)
            })?,
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                if self.params.get("fieldManager").is_none_or(String::is_empty) {
                    return Err(ApiError::invalid(
                        self.def,
                        name,
                        &[crate::error::Cause::required(
                            "metadata.managedFields.fieldManager",
                        )],
                    ));
                }
                if self.def.namespaced
                    && let Some(body_ns) = meta_str(&body, "namespace")
                    && body_ns != ns
                {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                store.modify(res, ns, name, scope, true, |cur| match cur {
                    None => Ok(body.clone()),
                    Some(cur) => {
                        let mut next = cur.clone();
                        patch::apply(&mut next, &body);
                        Ok(next)
                    }
                })?
            }
            other => return Err(ApiError::unsupported_media_type(other)),
        };
        let code = if written.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        self.respond(code, written.object)
    }

    fn delete(&self) -> ApiResult<Response> {
        let store = &self.emu.shared().store;
        if !self.body.is_empty()
            && let Ok(options) = serde_json::from_slice::<Value>(self.body)
        {
            let current = store.get(self.target.res, self.ns(), self.name())?;
            for (field, label) in [("resourceVersion", "ResourceVersion"), ("uid", "UID")] {
                if let Some(want) = options
                    .pointer(&format!("/preconditions/{field}"))
                    .and_then(Value::as_str)
                    && Some(want) != meta_str(&current, field)
                {
                    let mut err = ApiError::conflict(self.def, self.name());
                    err.message = format!(
                        "Precondition failed: {label} in precondition: {want}, {label} in object meta: {}",
                        meta_str(&current, field).unwrap_or("")
                    );
                    return Err(err);
                }
            }
        }
        let obj = store.delete(self.target.res, self.ns(), self.name())?;
        self.respond(StatusCode::OK, obj)
    }

    fn delete_collection(&self) -> ApiResult<Response> {
        self.require_namespace()
            .or_else(|e| if self.def.namespaced { Err(e) } else { Ok(()) })?;
        let selectors = self.selectors()?;
        let store = &self.emu.shared().store;
        let (items, _) = store.list(self.target.res, self.target.namespace.as_deref());
        let mut deleted = Vec::new();
        for obj in items.iter().filter(|o| selectors.matches(o)) {
            let name = meta_str(obj, "name").unwrap_or_default();
            if let Ok(d) = store.delete(self.target.res, self.ns(), name) {
                deleted.push(d);
            }
        }
        Ok(json_response(
            StatusCode::OK,
            json!({"kind": format!("{}List", self.def.kind), "apiVersion": self.def.api_version(),
                   "metadata": {"resourceVersion": store.resource_version().to_string()}, "items": deleted}),
        ))
    }
}

fn item_key(obj: &Value) -> String {
    // NUL sorts before every name character, so string order equals (namespace, name) order.
    format!(
        "{}\u{0}{}",
        meta_str(obj, "namespace").unwrap_or(""),
        meta_str(obj, "name").unwrap_or("")
    )
}

fn decode_continue(token: &str) -> ApiResult<String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| ApiError::bad_request("invalid continue token"))
}
