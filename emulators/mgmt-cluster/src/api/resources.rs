//! The verbs on resource URLs: get, list, watch, delete here; create, update and patch in
//! [`super::writes`].

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use super::negotiate::{self, Input, Output};
use super::strict::{Warnings, warning_header};
use super::{Target, options, parse_target, table, watch};
use crate::error::{ApiError, ApiResult};
use crate::kinds::{KINDS, ResourceDef};
use crate::meta::meta_str;
use crate::protobuf;
use crate::registry::Scope;
use crate::selectors::Selectors;
use crate::{ApiFault, Emulator};

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
    let prepared = parse_target(emu.shared().profile, group, version, rest).and_then(|target| {
        let verb = verb(&method, &target, params)?;
        let def = &KINDS[target.res];
        let resource = match &target.subresource {
            Some(sub) => format!("{}/{sub}", def.plural),
            None => def.plural.to_owned(),
        };
        emu.count_request(format!("{verb} {resource}"));
        // The handlers negotiate the response first: a client that accepts nothing the
        // server can produce learns so before anything is done.
        let out = negotiate::output(headers, params, verb == "watch")?;
        let fault = emu.take_api_fault(verb, &resource, target.name.as_deref().unwrap_or(""));
        Ok((target, verb, out, fault))
    });
    let (target, verb, out, fault) = match prepared {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Some(f) = fault {
        return injected(&out, &f, &method, &target);
    }
    let req = Req {
        emu,
        target: &target,
        def: &KINDS[target.res],
        params,
        headers,
        body,
        out,
    };
    let result = match verb {
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
    };
    result.unwrap_or_else(|e| negotiate::error(&out, &e))
}

/// The answer of an injected [`ApiFault`], worded as kube-apiserver words it.
fn injected(out: &Output, f: &ApiFault, method: &Method, target: &Target) -> Response {
    let def = &KINDS[target.res];
    let name = target.name.as_deref().unwrap_or("");
    let reason = f.reason().unwrap_or("InternalError");
    let message = f.message.clone().unwrap_or_else(|| match f.status {
        403 => format!(
            "{}.{} \"{name}\" is forbidden: User cannot {} resource \"{}\" in API group \"{}\"",
            def.plural,
            def.group,
            method.as_str().to_ascii_lowercase(),
            def.plural,
            def.group
        ),
        429 => "Too many requests, please try again later.".to_owned(),
        _ => "Internal error occurred: injected by hypersaga emulator".to_owned(),
    });
    let mut details = json!({ "name": name, "group": def.group, "kind": def.plural });
    if let Some(s) = f.retry_after_secs {
        details["retryAfterSeconds"] = json!(s);
    }
    let err = ApiError {
        code: f.status,
        reason,
        message,
        details: Some(details),
    };
    let mut resp = negotiate::error(out, &err);
    if let Some(s) = f.retry_after_secs
        && let Ok(v) = http::HeaderValue::from_str(&s.to_string())
    {
        resp.headers_mut().insert(http::header::RETRY_AFTER, v);
    }
    resp
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
    /// The negotiated response representation.
    pub(super) out: Output,
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

    /// The request body as JSON, read as its `Content-Type` says: JSON, YAML (a YAML patch
    /// type reads as YAML too), or for built-in kinds protobuf.
    pub(super) fn body_json(&self) -> ApiResult<Value> {
        let media_type = negotiate::media_type(self.headers);
        let input = if media_type.ends_with("yaml") {
            Input::Yaml
        } else if media_type.ends_with("+json") {
            Input::Json
        } else {
            negotiate::input(self.headers)?
        };
        let parsed = match input {
            Input::Protobuf => return self.protobuf_body(),
            // YAML is a superset of JSON; a JSON body sent as YAML is read as JSON.
            Input::Yaml if !looks_json(self.body) => {
                serde_norway::from_slice::<Value>(self.body).map_err(|e| e.to_string())
            }
            Input::Yaml => serde_json::from_slice::<Value>(self.body).map_err(|e| e.to_string()),
            Input::Json => serde_json::from_slice::<Value>(self.body).map_err(|e| e.to_string()),
        };
        parsed.map_err(|e| ApiError::bad_request(format!("the request body is invalid: {e}")))
    }

    /// A protobuf body, a failure worded as `transformDecodeError` words it. Custom
    /// resources have no protobuf form: kube-apiserver's CRD handler lists the protobuf
    /// serializer, so the request is no 415, but it cannot decode into an unstructured object.
    fn protobuf_body(&self) -> ApiResult<Value> {
        let expected = self.def.kind;
        if !self.def.builtin {
            return Err(ApiError::bad_request(format!(
                "{expected} in version {:?} cannot be handled as a {expected}: custom resources \
                 cannot be decoded from protobuf",
                self.def.version
            )));
        }
        protobuf::decode(self.body, &self.def.api_version(), expected).map_err(|f| match f.kind {
            Some((version, kind)) => ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {expected}: {}",
                f.error
            )),
            None => ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {expected}): {} ({})",
                f.error,
                summarize(self.body)
            )),
        })
    }

    /// A `DeleteOptions` body, decoded like any body; an undecodable one fails as
    /// kube-apiserver's delete handler fails it (a 500: the decoder's error is no `Status`).
    fn delete_options(&self) -> ApiResult<Option<Value>> {
        if self.body.is_empty() {
            return Ok(None);
        }
        let parsed = match negotiate::input(self.headers)? {
            Input::Json => serde_json::from_slice::<Value>(self.body).map_err(|e| e.to_string()),
            Input::Yaml => serde_norway::from_slice::<Value>(self.body).map_err(|e| e.to_string()),
            Input::Protobuf => protobuf::decode(self.body, "meta.k8s.io/v1", "DeleteOptions")
                .map_err(|f| f.error.to_string()),
        };
        parsed.map(Some).map_err(ApiError::internal)
    }

    pub(super) fn respond(&self, code: StatusCode, obj: Value) -> ApiResult<Response> {
        let body = match self.out.convert {
            Some(convert) => table::one(self.def, obj, convert, self.params)?,
            None => obj,
        };
        Ok(negotiate::respond(&self.out, code, &body))
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
            self.def.field_labels,
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
        let body = match self.out.convert {
            Some(convert) => table::list(self.def, &items, list_meta, convert, self.params)?,
            None => json!({
                "kind": format!("{}List", self.def.kind), "apiVersion": self.def.api_version(),
                "metadata": list_meta, "items": items,
            }),
        };
        Ok(negotiate::respond(&self.out, StatusCode::OK, &body))
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
            convert: self.out.convert,
            table_options: match self.out.convert {
                Some(negotiate::Convert::Table(_)) => table::TableOptions::parse(self.params)?,
                _ => table::TableOptions::default(),
            },
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
        let options = self.delete_options()?;
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
        let policy = self
            .params
            .get("propagationPolicy")
            .map(String::as_str)
            .or_else(|| {
                options
                    .as_ref()
                    .and_then(|o| o.get("propagationPolicy"))
                    .and_then(Value::as_str)
            });
        if policy == Some("Foreground") && !dry_run {
            // The garbage collector deletes the dependents first (`crate::gc`).
            let res = self.target.res;
            store.update(res, self.ns(), self.name(), false, |cur| {
                let mut next = cur.clone();
                let mut list = crate::meta::finalizers(&next);
                if !list.iter().any(|f| f == crate::gc::FOREGROUND) {
                    list.push(crate::gc::FOREGROUND.to_owned());
                }
                crate::meta::set_finalizers(&mut next, list);
                crate::registry::prepare_update(res, cur, next, Scope::Main, "kube-apiserver")
            })?;
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
        let list_meta = json!({"resourceVersion": store.resource_version().to_string()});
        let body = match self.out.convert {
            Some(convert) => table::list(self.def, &deleted, list_meta, convert, self.params)?,
            None => json!({"kind": format!("{}List", self.def.kind),
                "apiVersion": self.def.api_version(), "metadata": list_meta, "items": deleted}),
        };
        Ok(negotiate::respond(&self.out, StatusCode::OK, &body))
    }
}

/// `summarizeData(body, 30)`: a JSON-looking body as text, anything else in hex.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let head = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

fn looks_json(body: &[u8]) -> bool {
    body.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
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
