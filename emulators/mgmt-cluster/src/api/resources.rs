//! The verbs on resource URLs: get, list, watch, delete here; create, update and patch in
//! [`super::writes`].

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use super::strict::{Warnings, warning_header};
use super::{Target, options, parse_target, table, watch};
use crate::Emulator;
use crate::error::{ApiError, ApiResult};
use crate::kinds::{KINDS, ResourceDef};
use crate::meta::meta_str;
use crate::registry::Scope;
use crate::selectors::Selectors;

pub(super) type Params = HashMap<String, String>;

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

pub(super) struct Req<'a> {
    pub(super) emu: &'a Emulator,
    pub(super) target: &'a Target,
    pub(super) def: &'static ResourceDef,
    pub(super) params: &'a Params,
    pub(super) headers: &'a HeaderMap,
    pub(super) body: &'a Bytes,
}

pub(super) fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
}

fn json_response(code: StatusCode, obj: Value) -> Response {
    (code, Json(obj)).into_response()
}

impl Req<'_> {
    pub(super) fn ns(&self) -> &str {
        self.target.namespace.as_deref().unwrap_or("")
    }

    pub(super) fn name(&self) -> &str {
        self.target.name.as_deref().unwrap_or("")
    }

    pub(super) fn scope(&self) -> Scope {
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
    pub(super) fn body_json(&self) -> ApiResult<Value> {
        let ct = content_type(self.headers);
        if ct.contains("protobuf") || ct.contains("cbor") {
            // Binary encodings are not served; client-go retries such requests as JSON on 415.
            return Err(ApiError::unsupported_media_type(ct));
        }
        let looks_json = self
            .body
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b == b'{' || *b == b'[');
        let parsed = if ct.contains("yaml") && !looks_json {
            serde_yaml::from_slice::<Value>(self.body).map_err(|e| e.to_string())
        } else {
            serde_json::from_slice::<Value>(self.body).map_err(|e| e.to_string())
        };
        parsed.map_err(|e| ApiError::bad_request(format!("the request body is invalid: {e}")))
    }

    pub(super) fn respond(&self, code: StatusCode, obj: Value) -> ApiResult<Response> {
        if self.wants_table() {
            return Ok(json_response(code, table::table(self.def, &[obj])));
        }
        Ok(json_response(code, obj))
    }

    /// [`Req::respond`] with one `Warning` header per collected warning.
    pub(super) fn respond_warning(
        &self,
        code: StatusCode,
        obj: Value,
        warnings: &Warnings,
    ) -> ApiResult<Response> {
        let mut response = self.respond(code, obj)?;
        for text in &warnings.0 {
            if let Ok(value) = http::HeaderValue::from_str(&warning_header(text)) {
                response.headers_mut().append(http::header::WARNING, value);
            }
        }
        Ok(response)
    }

    pub(super) fn require_namespace(&self) -> ApiResult<()> {
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

    /// `dryRun` of a delete: from the query or from the `DeleteOptions` body.
    fn delete_dry_run(&self, options: Option<&Value>) -> ApiResult<bool> {
        let mut values: Vec<String> = self.params.get("dryRun").cloned().into_iter().collect();
        if let Some(list) = options
            .and_then(|o| o.get("dryRun"))
            .and_then(Value::as_array)
        {
            values.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        let causes = options::dry_run_causes(&values);
        if !causes.is_empty() {
            return Err(ApiError::invalid_options("DeleteOptions", &causes));
        }
        Ok(!values.is_empty())
    }

    fn delete(&self) -> ApiResult<Response> {
        let store = &self.emu.shared().store;
        let options = if self.body.is_empty() {
            None
        } else {
            serde_json::from_slice::<Value>(self.body).ok()
        };
        let dry_run = self.delete_dry_run(options.as_ref())?;
        if let Some(options) = &options {
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
        let obj = store.delete(self.target.res, self.ns(), self.name(), dry_run)?;
        self.respond(StatusCode::OK, obj)
    }

    fn delete_collection(&self) -> ApiResult<Response> {
        self.require_namespace()
            .or_else(|e| if self.def.namespaced { Err(e) } else { Ok(()) })?;
        let selectors = self.selectors()?;
        let dry_run = self.delete_dry_run(None)?;
        let store = &self.emu.shared().store;
        let (items, _) = store.list(self.target.res, self.target.namespace.as_deref());
        let mut deleted = Vec::new();
        for obj in items.iter().filter(|o| selectors.matches(o)) {
            let name = meta_str(obj, "name").unwrap_or_default();
            if let Ok(d) = store.delete(self.target.res, self.ns(), name, dry_run) {
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
