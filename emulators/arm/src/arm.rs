//! The ARM request pipeline: authenticate, authorise, throttle, check the api-version,
//! inject faults, then run a generic handler driven by the type table.

use std::collections::HashMap;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::Emulator;
use crate::errors::{ArmError, Result};
use crate::path::{self, OpView, ResourceRef, Target};
use crate::store::{self, OpKind, Operation, Pending, Store, StoredResource};
use crate::throttle::{Draw, OpClass, Remaining, Scope};
use crate::types::{
    DeleteShape, FillCtx, LocationRule, OperationUrls, PutCheck, PutShape, ResourceType, Storage,
};

/// Response extension naming the resource type and subscription, read by the request
/// recorder (its presence is also what marks an answer as ARM's rather than Entra's).
#[derive(Clone)]
pub(crate) struct TypeTag {
    pub type_name: String,
    pub subscription: Option<String>,
}

/// The `x-ms-ratelimit-remaining-subscription-*` values an answer carries: only the request's
/// class, as ARM does. Filled as far as the pipeline got — an unauthenticated request has no
/// principal bucket to report, a path without a subscription has no bucket at all.
#[derive(Default)]
struct RateHeaders {
    class: Option<OpClass>,
    principal: Option<u64>,
    global: Option<u64>,
}

impl RateHeaders {
    fn new(class: OpClass, r: Remaining) -> Self {
        Self {
            class: Some(class),
            principal: Some(r.principal),
            global: r.global,
        }
    }

    fn apply(&self, headers: &mut HeaderMap) {
        let Some(class) = self.class else {
            return;
        };
        if let Some(n) = self.principal {
            headers.insert(class.header(), HeaderValue::from(n));
        }
        if let Some(n) = self.global {
            headers.insert(class.global_header(), HeaderValue::from(n));
        }
    }
}

/// `x-ms-routing-request-id`: `<REGION>:<yyyyMMddTHHmmssZ>:<uuid>`, which ARM support asks
/// for and which tells a client which regional instance (hence which buckets) answered.
fn routing_request_id(region: &str, now: OffsetDateTime) -> String {
    format!(
        "{}:{:04}{:02}{:02}T{:02}{:02}{:02}Z:{}",
        crate::throttle::region_key(region).to_ascii_uppercase(),
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        uuid::Uuid::new_v4()
    )
}

/// Per-request facts the handlers need.
struct Ctx<'a> {
    emu: &'a Emulator,
    base: String,
    api_version: String,
    now: OffsetDateTime,
    query: &'a HashMap<String, String>,
    path: &'a str,
}

/// The public base URL, from the request's Host (HTTP/1.1) or authority (HTTP/2).
fn base_url(parts: &Parts) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into());
    format!("https://{host}")
}

/// Fallback handler for every ARM path.
pub(crate) async fn handle(State(emu): State<Emulator>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let mut rate = RateHeaders::default();
    let mut subscription = None;
    let (type_name, result) = match axum::body::to_bytes(body, 8 * 1024 * 1024).await {
        Err(_) => (
            "-".to_owned(),
            Err(ArmError::bad_request(
                "InvalidRequestContent",
                "The request content could not be read.",
            )),
        ),
        Ok(bytes) => match path::parse(parts.uri.path()) {
            Err(e) => ("-".to_owned(), Err(e)),
            Ok(target) => {
                subscription = Some(target.subscription().to_owned());
                let t = target.type_name();
                (t, process(&emu, &parts, &target, &bytes, &mut rate).await)
            }
        },
    };
    let mut resp = result.unwrap_or_else(IntoResponse::into_response);
    let headers = resp.headers_mut();
    rate.apply(headers);
    if let Ok(v) = HeaderValue::from_str(&routing_request_id(
        &emu.config().region,
        OffsetDateTime::now_utc(),
    )) {
        headers.insert("x-ms-routing-request-id", v);
    }
    resp.extensions_mut().insert(TypeTag {
        type_name,
        subscription,
    });
    resp
}

fn action(method: &Method, target: &Target) -> String {
    let verb = match *method {
        Method::GET | Method::HEAD => "read",
        Method::DELETE => "delete",
        _ => "write",
    };
    format!("{}/{verb}", target.type_name())
}

async fn process(
    emu: &Emulator,
    parts: &Parts,
    target: &Target,
    body: &Bytes,
    rate: &mut RateHeaders,
) -> Result<Response> {
    let sub = target.subscription();
    let class = OpClass::from_method(&parts.method);
    let region = emu.config().region.as_str();
    let claims = match emu.authenticate(&parts.headers) {
        Ok(c) => c,
        Err(e) => {
            // No verified principal, so only the subscription's shared bucket can be reported.
            let global = emu
                .lock()
                .throttle
                .peek_global(sub, region, class, Instant::now());
            *rate = RateHeaders {
                class: Some(class),
                principal: None,
                global,
            };
            return Err(e);
        }
    };
    // ARM keys the caller's bucket on the principal's object id, the "actor" of its 429s.
    let scope = Scope {
        subscription: sub,
        principal: &claims.oid,
        region,
    };
    if let Err(e) = emu.authorize(
        &claims,
        sub,
        &action(&parts.method, target),
        parts.uri.path(),
    ) {
        // Refused before reaching the buckets: report them, take nothing.
        *rate = RateHeaders::new(
            class,
            emu.lock().throttle.peek(scope, class, Instant::now()),
        );
        return Err(e);
    }

    match emu.lock().throttle.draw(scope, class, Instant::now()) {
        Draw::Allowed(r) => *rate = RateHeaders::new(class, r),
        Draw::Throttled {
            retry_after,
            remaining,
        } => {
            *rate = RateHeaders::new(class, remaining);
            return Err(ArmError::subscription_throttled(
                class.noun(),
                sub,
                &claims.oid,
                retry_after,
            ));
        }
    }

    let query: HashMap<String, String> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let api_version = query
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("api-version"))
        .map(|(_, v)| v.clone())
        .ok_or_else(ArmError::missing_api_version)?;
    if let Some(versions) = target.api_versions()
        && !versions
            .iter()
            .any(|v| v.eq_ignore_ascii_case(&api_version))
    {
        return Err(ArmError::invalid_api_version(&api_version, versions));
    }

    let fault = emu
        .lock()
        .faults
        .take(parts.method.as_str(), &target.type_name(), target.name());
    if let Some(f) = fault {
        let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let message = f
            .message
            .unwrap_or_else(|| format!("Injected fault {} for {}.", f.code, target.type_name()));
        let mut err = ArmError::new(status, f.code, message);
        err.retry_after = f.retry_after_secs;
        return Err(err);
    }

    // Synchronous RPs still take a moment; wait outside the lock. Per-type overrides only
    // govern asynchronous operations, so they never stretch a synchronous answer.
    if let Target::Resource(r) = target
        && ((parts.method == Method::PUT && r.rtype.put == PutShape::Sync)
            || (parts.method == Method::DELETE && r.rtype.delete == DeleteShape::Sync))
    {
        let delay = emu.config().latency.apply(r.rtype.sync_latency);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }

    let ctx = Ctx {
        emu,
        base: base_url(parts),
        api_version,
        now: OffsetDateTime::now_utc(),
        query: &query,
        path: parts.uri.path(),
    };
    let mut guard = emu.lock();
    let store = &mut guard.store;
    store.settle(ctx.now);
    match (&parts.method, target) {
        (&Method::GET, Target::Resource(r)) => get_resource(store, r),
        (&Method::HEAD, Target::Resource(r)) => Ok(head_resource(store, r)),
        (&Method::PUT, Target::Resource(r)) => put_resource(&ctx, store, r, body),
        (&Method::PATCH, Target::Resource(r)) => patch_resource(store, r, body),
        (&Method::DELETE, Target::Resource(r)) => delete_resource(&ctx, store, r),
        (
            &Method::GET,
            Target::Collection {
                sub,
                rg,
                rtype,
                parent_names,
            },
        ) => list_collection(&ctx, store, sub, rg.as_deref(), rtype, parent_names),
        (&Method::GET, Target::ResourceGroupList { sub }) => {
            let items: Vec<Value> = store
                .all()
                .filter(|r| r.rtype.is_resource_group() && r.sub.eq_ignore_ascii_case(sub))
                .map(|r| store.render(r))
                .collect();
            Ok(page(&ctx, items))
        }
        (&Method::GET, Target::Inventory { sub, rg }) => inventory(&ctx, store, sub, rg.as_deref()),
        (&Method::GET, Target::Operation { sub, id, view }) => {
            operation(store, sub, id, *view, ctx.now)
        }
        _ => Err(ArmError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "The requested method '{}' is not allowed for this resource.",
                parts.method
            ),
        )),
    }
}

fn json_response(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// RG must exist (and, for writes, not be deleting).
fn check_rg<'s>(store: &'s Store, r: &ResourceRef, write: bool) -> Result<&'s StoredResource> {
    let rg = store
        .get(&r.rg_key())
        .ok_or_else(|| ArmError::resource_group_not_found(&r.rg))?;
    if write
        && rg
            .pending
            .as_ref()
            .is_some_and(|p| p.kind == OpKind::Delete)
    {
        return Err(ArmError::resource_group_being_deleted(&rg.name));
    }
    Ok(rg)
}

fn not_found(r: &ResourceRef) -> ArmError {
    if r.rtype.is_resource_group() {
        ArmError::resource_group_not_found(&r.rg)
    } else {
        ArmError::resource_not_found(&r.type_and_name(), &r.rg)
    }
}

/// Finds an embedded child (subnet) in its parent's array.
fn embedded<'s>(
    store: &'s Store,
    r: &ResourceRef,
    array: &str,
) -> Option<(&'s StoredResource, usize)> {
    let parent = store.get(&r.parent_key())?;
    let items = parent.properties.get(array)?.as_array()?;
    let idx = items.iter().position(|i| {
        i.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(r.name()))
    })?;
    Some((parent, idx))
}

fn render_embedded(store: &Store, parent: &StoredResource, array: &str, idx: usize) -> Value {
    store
        .render(parent)
        .pointer(&format!("/properties/{array}/{idx}"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn get_resource(store: &Store, r: &ResourceRef) -> Result<Response> {
    if !r.rtype.is_resource_group() {
        check_rg(store, r, false)?;
    }
    if let Storage::Embedded { array } = r.rtype.storage {
        let (parent, idx) = embedded(store, r, array).ok_or_else(|| not_found(r))?;
        return Ok(json_response(
            StatusCode::OK,
            render_embedded(store, parent, array, idx),
        ));
    }
    let res = store.get(&r.key()).ok_or_else(|| not_found(r))?;
    Ok(json_response(StatusCode::OK, store.render(res)))
}

fn head_resource(store: &Store, r: &ResourceRef) -> Response {
    let exists = match r.rtype.storage {
        Storage::Embedded { array } => embedded(store, r, array).is_some(),
        Storage::Standalone => store.get(&r.key()).is_some(),
    };
    empty(if exists {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    })
}

fn parse_body(body: &Bytes) -> Result<Map<String, Value>> {
    if body.is_empty() {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The request content was invalid and could not be deserialized: 'empty body'.",
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The request content must be a JSON object.",
        )),
        Err(e) => Err(ArmError::bad_request(
            "InvalidRequestContent",
            format!("The request content was invalid and could not be deserialized: '{e}'."),
        )),
    }
}

/// Operation URL paths (status, result) for a type, or `None` for synchronous ones.
fn op_paths(
    rtype: &ResourceType,
    r: &ResourceRef,
    location: &str,
    op_id: &str,
) -> (Option<String>, Option<String>) {
    let loc = location.to_ascii_lowercase().replace(' ', "");
    match rtype.operation_urls {
        OperationUrls::None => (None, None),
        OperationUrls::NetworkLocation => {
            let b = format!(
                "/subscriptions/{}/providers/Microsoft.Network/locations/{loc}",
                r.sub
            );
            (
                Some(format!("{b}/operations/{op_id}")),
                Some(format!("{b}/operationResults/{op_id}")),
            )
        }
        OperationUrls::PrivateDns => {
            let b = format!(
                "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network",
                r.sub, r.rg
            );
            (
                Some(format!("{b}/privateDnsOperationStatuses/{op_id}")),
                Some(format!("{b}/privateDnsOperationResults/{op_id}")),
            )
        }
        OperationUrls::Subscription => (
            None,
            Some(format!("/subscriptions/{}/operationresults/{op_id}", r.sub)),
        ),
    }
}

/// Starts an operation on `resource_key` and returns (op, absolute status URL, absolute result URL).
fn start_op(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
    resource_key: &str,
    location: &str,
    kind: OpKind,
    duration: std::time::Duration,
) -> (Pending, Option<String>, Option<String>) {
    let op_id = uuid::Uuid::new_v4().to_string();
    let (status_path, result_path) = op_paths(r.rtype, r, location, &op_id);
    let q = format!("?api-version={}", ctx.api_version);
    let status_url = status_path.as_ref().map(|p| format!("{}{p}{q}", ctx.base));
    let result_url = result_path.as_ref().map(|p| format!("{}{p}{q}", ctx.base));
    let done_at = ctx.now + duration;
    let retry_after = (r.rtype.delete == DeleteShape::ResourceGroup)
        .then(|| ctx.emu.config().latency.retry_after(15))
        .flatten();
    store.add_op(Operation {
        id: op_id.clone(),
        sub: r.sub.clone(),
        resource_key: resource_key.to_owned(),
        kind,
        rtype: r.rtype,
        start: ctx.now,
        done_at,
        status_path,
        result_url: result_url.clone(),
        retry_after,
    });
    (
        Pending {
            op_id,
            kind,
            done_at,
        },
        status_url,
        result_url,
    )
}

fn set_header(resp: &mut Response, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

/// Gives inline sub-resources (LB frontends, NSG rules, subnets) their ids and types.
fn fill_inline(props: &mut Map<String, Value>, rtype: &ResourceType, id: &str, etag: Option<&str>) {
    for array in rtype.inline_children {
        let Some(items) = props.get_mut(*array).and_then(Value::as_array_mut) else {
            continue;
        };
        for item in items {
            let Some(obj) = item.as_object_mut() else {
                continue;
            };
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            obj.insert("id".into(), json!(format!("{id}/{array}/{name}")));
            obj.insert(
                "type".into(),
                json!(format!("{}/{array}", rtype.full_name())),
            );
            if let Some(e) = etag {
                obj.insert("etag".into(), json!(e));
            }
            if !obj.get("properties").is_some_and(Value::is_object) {
                obj.insert("properties".into(), json!({}));
            }
        }
    }
}

fn put_resource(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
    body: &Bytes,
) -> Result<Response> {
    let mut body = parse_body(body)?;
    let rtype = r.rtype;
    let key = r.key();
    let parent_key = r.parent_key();

    // Where it hangs: the subscription (RG), the RG, or a parent resource.
    let parent_id = if rtype.is_resource_group() {
        format!("/subscriptions/{}", r.sub)
    } else {
        let rg = check_rg(store, r, true)?;
        if rtype.depth() == 1 {
            format!("{}/providers/{}", rg.id, rtype.namespace)
        } else {
            let parent = store
                .get(&parent_key)
                .ok_or_else(|| ArmError::parent_not_found(&r.parent_type_and_name()))?;
            if parent
                .pending
                .as_ref()
                .is_some_and(|p| p.kind == OpKind::Delete)
            {
                return Err(ArmError::new(
                    StatusCode::CONFLICT,
                    "AnotherOperationInProgress",
                    format!(
                        "Another operation on this or dependent resource is in progress: the parent '{}' is being deleted.",
                        parent.id
                    ),
                ));
            }
            parent.id.clone()
        }
    };

    if let Storage::Embedded { array } = rtype.storage {
        return put_embedded(ctx, store, r, body, array);
    }

    let existing = store.get(&key).cloned();
    if existing
        .as_ref()
        .is_some_and(|e| e.pending.as_ref().is_some_and(|p| p.kind == OpKind::Delete))
    {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "AnotherOperationInProgress",
            format!(
                "Another operation on this or dependent resource is in progress. The resource '{}' is being deleted.",
                r.id()
            ),
        ));
    }
    let name = existing
        .as_ref()
        .map_or_else(|| r.name().to_owned(), |e| e.name.clone());
    let id = if rtype.is_resource_group() {
        format!("{parent_id}/resourceGroups/{name}")
    } else if rtype.depth() == 1 {
        format!("{parent_id}/{}/{name}", rtype.type_path)
    } else {
        format!("{parent_id}/{}/{name}", rtype.last_segment())
    };

    let location = match rtype.location {
        LocationRule::Required => {
            let loc = body
                .remove("location")
                .and_then(|l| l.as_str().map(str::to_owned))
                .filter(|l| !l.is_empty());
            let loc = loc.ok_or_else(|| {
                ArmError::bad_request(
                    "LocationRequired",
                    "The location property is required for this definition.",
                )
            })?;
            if rtype.is_resource_group()
                && let Some(prev) = existing.as_ref().and_then(|e| e.location.as_deref())
                && !prev.eq_ignore_ascii_case(&loc)
            {
                return Err(ArmError::new(
                    StatusCode::CONFLICT,
                    "InvalidResourceGroupLocation",
                    format!(
                        "Invalid resource group location '{loc}'. The Resource group already exists in location '{prev}'."
                    ),
                ));
            }
            Some(loc)
        }
        LocationRule::Global => {
            body.remove("location");
            Some("global".to_owned())
        }
        LocationRule::None => {
            body.remove("location");
            None
        }
    };
    let tags = match body.remove("tags") {
        None | Some(Value::Null) => None,
        Some(Value::Object(t)) => Some(Value::Object(t)),
        Some(_) => {
            return Err(ArmError::bad_request(
                "InvalidTag",
                "The tags must be an object of string values.",
            ));
        }
    };
    let mut properties = take_properties(&mut body)?;
    for k in ["id", "name", "type", "etag"] {
        body.remove(k);
    }
    properties.remove("provisioningState");

    if let Some(check) = rtype.check_put {
        check(
            store,
            &PutCheck {
                key: &key,
                parent_key: &parent_key,
                properties: &properties,
            },
        )?;
    }
    if let Some((max, code, msg)) = rtype.max_per_parent {
        let siblings = store
            .children_of(&parent_key)
            .filter(|c| std::ptr::eq(c.rtype, rtype) && c.id.to_ascii_lowercase() != key)
            .count();
        if existing.is_none() && siblings >= max {
            return Err(ArmError::bad_request(code, msg));
        }
    }

    let tenant = ctx.emu.tenant_of(&r.sub);
    if let Some(fill) = rtype.fill {
        fill(
            &mut properties,
            &FillCtx {
                id: &id,
                previous: existing.as_ref().map(|e| &e.properties),
                tenant_id: &tenant,
                name: &name,
            },
        );
    }
    let etag = store::new_etag(rtype.etag);
    fill_inline(&mut properties, rtype, &id, etag.as_deref());

    let created = existing.is_none();
    let mut resource = StoredResource {
        id: id.clone(),
        parent_key: parent_key.clone(),
        rtype,
        name,
        sub: r.sub.clone(),
        rg: r.rg.clone(),
        location: location.clone(),
        tags,
        properties,
        extra: body,
        etag,
        pending: None,
        created: existing.as_ref().map_or(ctx.now, |e| e.created),
    };

    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    match rtype.put {
        PutShape::Sync => {
            resource
                .properties
                .insert("provisioningState".into(), json!("Succeeded"));
            store.insert(resource);
            let rendered = store
                .get(&key)
                .map(|res| store.render(res))
                .unwrap_or(Value::Null);
            Ok(json_response(status, rendered))
        }
        PutShape::AsyncInBody | PutShape::Accepted => {
            let duration = ctx.emu.latency_for(rtype, rtype.create_latency);
            let loc = location.as_deref().unwrap_or("global");
            let (pending, status_url, result_url) =
                start_op(ctx, store, r, &key, loc, OpKind::Write, duration);
            let state = if rtype.put == PutShape::Accepted && created {
                "Creating"
            } else {
                "Updating"
            };
            resource
                .properties
                .insert("provisioningState".into(), json!(state));
            resource.pending = Some(pending);
            store.insert(resource);
            let mut resp = if rtype.put == PutShape::Accepted {
                let mut resp = empty(StatusCode::ACCEPTED);
                if let Some(u) = &result_url {
                    set_header(&mut resp, "location", u);
                }
                resp
            } else {
                let rendered = store
                    .get(&key)
                    .map(|res| store.render(res))
                    .unwrap_or(Value::Null);
                let mut resp = json_response(status, rendered);
                set_header(&mut resp, "azure-asyncnotification", "Enabled");
                resp
            };
            if let Some(u) = &status_url {
                set_header(&mut resp, "azure-asyncoperation", u);
            }
            Ok(resp)
        }
    }
}

/// PUT of a child kept inline in its parent (subnet): rewrites the parent's array.
fn put_embedded(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
    mut body: Map<String, Value>,
    array: &str,
) -> Result<Response> {
    let parent_key = r.parent_key();
    let Some(parent) = store.get(&parent_key).cloned() else {
        return Err(ArmError::parent_not_found(&r.parent_type_and_name()));
    };
    let mut properties = take_properties(&mut body)?;
    properties.remove("provisioningState");
    let mut items = parent
        .properties
        .get(array)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let pos = items.iter().position(|i| {
        i.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(r.name()))
    });
    let name = pos
        .and_then(|p| {
            items[p]
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| r.name().to_owned());
    let element = json!({ "name": name, "properties": properties });
    let created = pos.is_none();
    match pos {
        Some(p) => items[p] = element,
        None => items.push(element),
    }
    let mut updated = parent;
    updated.properties.insert(array.into(), Value::Array(items));
    updated.etag = store::new_etag(updated.rtype.etag);
    let (id, prtype, etag) = (updated.id.clone(), updated.rtype, updated.etag.clone());
    fill_inline(&mut updated.properties, prtype, &id, etag.as_deref());
    let duration = ctx.emu.latency_for(r.rtype, r.rtype.create_latency);
    let loc = updated.location.clone().unwrap_or_else(|| "global".into());
    let (pending, status_url, _) =
        start_op(ctx, store, r, &parent_key, &loc, OpKind::Write, duration);
    updated
        .properties
        .insert("provisioningState".into(), json!("Updating"));
    updated.pending = Some(pending);
    store.insert(updated);
    let (parent, idx) = embedded(store, r, array).ok_or_else(|| not_found(r))?;
    let rendered = render_embedded(store, parent, array, idx);
    let mut resp = json_response(
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        rendered,
    );
    if let Some(u) = &status_url {
        set_header(&mut resp, "azure-asyncoperation", u);
    }
    Ok(resp)
}

/// PATCH: ARM's "update tags" (replaces the whole `tags` map).
fn patch_resource(store: &mut Store, r: &ResourceRef, body: &Bytes) -> Result<Response> {
    if !r.rtype.is_resource_group() {
        check_rg(store, r, true)?;
    }
    let body = parse_body(body)?;
    let key = r.key();
    let res = store.get_mut(&key).ok_or_else(|| not_found(r))?;
    if let Some(tags) = body.get("tags") {
        res.tags = if tags.is_null() {
            None
        } else {
            Some(tags.clone())
        };
    }
    let res = store.get(&key).ok_or_else(|| not_found(r))?;
    Ok(json_response(StatusCode::OK, store.render(res)))
}

fn delete_resource(ctx: &Ctx<'_>, store: &mut Store, r: &ResourceRef) -> Result<Response> {
    let rtype = r.rtype;
    let key = r.key();
    if !rtype.is_resource_group() {
        check_rg(store, r, true)?;
    }
    if let Storage::Embedded { array } = rtype.storage {
        let Some((parent, idx)) = embedded(store, r, array) else {
            return Ok(empty(StatusCode::NO_CONTENT));
        };
        let mut updated = parent.clone();
        if let Some(items) = updated
            .properties
            .get_mut(array)
            .and_then(Value::as_array_mut)
        {
            items.remove(idx);
        }
        let duration = ctx.emu.latency_for(rtype, rtype.delete_latency);
        let loc = updated.location.clone().unwrap_or_else(|| "global".into());
        let parent_key = r.parent_key();
        let (pending, status_url, result_url) =
            start_op(ctx, store, r, &parent_key, &loc, OpKind::Write, duration);
        updated
            .properties
            .insert("provisioningState".into(), json!("Updating"));
        updated.pending = Some(pending);
        store.insert(updated);
        return Ok(accepted(status_url.as_deref(), result_url.as_deref(), None));
    }

    let Some(existing) = store.get(&key).cloned() else {
        return Ok(empty(StatusCode::NO_CONTENT));
    };
    // A delete already under way answers with the same operation.
    if let Some(p) = existing
        .pending
        .as_ref()
        .filter(|p| p.kind == OpKind::Delete)
        && let Some(op) = store.op(&p.op_id)
    {
        let status_url = op
            .status_path
            .as_ref()
            .map(|s| format!("{}{s}?api-version={}", ctx.base, ctx.api_version));
        return Ok(accepted(
            status_url.as_deref(),
            op.result_url.as_deref(),
            op.retry_after,
        ));
    }
    if let Some(check) = rtype.check_delete {
        check(store, &existing)?;
    }
    if !rtype.blocking_children.is_empty() {
        let blockers: Vec<String> = store
            .children_of(&key)
            .filter(|c| {
                rtype
                    .blocking_children
                    .iter()
                    .any(|b| c.rtype.last_segment().eq_ignore_ascii_case(b))
            })
            .map(|c| c.id.split("/providers/").nth(1).unwrap_or(&c.id).to_owned())
            .collect();
        if !blockers.is_empty() {
            return Err(ArmError::new(
                StatusCode::CONFLICT,
                "CannotDeleteResource",
                format!(
                    "Cannot delete resource while nested resources exist. Some existing nested resource IDs include: '{}'. \
                     Please delete all nested resources before deleting this resource.",
                    blockers.join("','")
                ),
            ));
        }
    }
    match rtype.delete {
        DeleteShape::Sync => {
            store.remove_tree(&key);
            Ok(empty(StatusCode::OK))
        }
        DeleteShape::Async | DeleteShape::ResourceGroup => {
            let base = if rtype.is_resource_group() {
                ctx.emu.rg_delete_latency(store.descendants(&key).count())
            } else {
                rtype.delete_latency
            };
            let duration = ctx.emu.latency_for(rtype, base);
            let loc = existing.location.clone().unwrap_or_else(|| "global".into());
            let (pending, status_url, result_url) =
                start_op(ctx, store, r, &key, &loc, OpKind::Delete, duration);
            let retry = (rtype.delete == DeleteShape::ResourceGroup)
                .then(|| ctx.emu.config().latency.retry_after(15))
                .flatten();
            if let Some(res) = store.get_mut(&key) {
                res.properties
                    .insert("provisioningState".into(), json!("Deleting"));
                res.pending = Some(pending);
            }
            Ok(accepted(
                status_url.as_deref(),
                result_url.as_deref(),
                retry,
            ))
        }
    }
}

fn accepted(
    status_url: Option<&str>,
    result_url: Option<&str>,
    retry_after: Option<u64>,
) -> Response {
    let mut resp = empty(StatusCode::ACCEPTED);
    if let Some(u) = result_url {
        set_header(&mut resp, "location", u);
    }
    if let Some(u) = status_url {
        set_header(&mut resp, "azure-asyncoperation", u);
    }
    if let Some(s) = retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    resp
}

fn operation(
    store: &Store,
    sub: &str,
    id: &str,
    view: OpView,
    now: OffsetDateTime,
) -> Result<Response> {
    let op = store
        .op(id)
        .filter(|o| o.sub.eq_ignore_ascii_case(sub))
        .ok_or_else(|| {
            ArmError::new(
                StatusCode::NOT_FOUND,
                "OperationNotFound",
                format!("The operation '{id}' could not be found."),
            )
        })?;
    let done = op.done(now);
    match view {
        OpView::Status => {
            let mut body = json!({
                "id": op.status_path.clone().unwrap_or_default(),
                "name": op.id,
                "status": if done { "Succeeded" } else { "InProgress" },
                "startTime": store::rfc3339(op.start),
            });
            if done {
                body["endTime"] = json!(store::rfc3339(op.done_at));
            }
            Ok(json_response(StatusCode::OK, body))
        }
        OpView::Result if !done => Ok(accepted(None, op.result_url.as_deref(), op.retry_after)),
        OpView::Result => match op.kind {
            OpKind::Delete if op.rtype.is_resource_group() => Ok(empty(StatusCode::OK)),
            OpKind::Delete => Ok(empty(StatusCode::NO_CONTENT)),
            OpKind::Write => match store.get(&op.resource_key) {
                Some(res) => Ok(json_response(StatusCode::OK, store.render(res))),
                None => Ok(empty(StatusCode::NO_CONTENT)),
            },
        },
    }
}

fn list_collection(
    ctx: &Ctx<'_>,
    store: &Store,
    sub: &str,
    rg: Option<&str>,
    rtype: &'static ResourceType,
    parent_names: &[String],
) -> Result<Response> {
    let Some(rg) = rg else {
        // Subscription-wide list of a top-level type.
        let items = store
            .all()
            .filter(|r| std::ptr::eq(r.rtype, rtype) && r.sub.eq_ignore_ascii_case(sub))
            .map(|r| store.render(r))
            .collect();
        return Ok(page(ctx, items));
    };
    let parent = ResourceRef {
        sub: sub.to_owned(),
        rg: rg.to_owned(),
        rtype,
        names: parent_names
            .iter()
            .cloned()
            .chain([String::new()])
            .collect(),
    };
    check_rg(store, &parent, false)?;
    let parent_key = parent.parent_key();
    if let Storage::Embedded { array } = rtype.storage {
        let owner = store
            .get(&parent_key)
            .ok_or_else(|| ArmError::parent_not_found(&parent.parent_type_and_name()))?;
        let rendered = store.render(owner);
        let items = rendered
            .pointer(&format!("/properties/{array}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        return Ok(page(ctx, items));
    }
    if rtype.depth() > 1 && store.get(&parent_key).is_none() {
        return Err(ArmError::resource_not_found(
            &parent.parent_type_and_name(),
            rg,
        ));
    }
    let items = store
        .children_of(&parent_key)
        .filter(|r| std::ptr::eq(r.rtype, rtype))
        .map(|r| store.render(r))
        .collect();
    Ok(page(ctx, items))
}

/// `resourceType eq 'X'` — the only `$filter` form the inventory understands.
fn filter_type(filter: &str) -> Option<String> {
    let (lhs, rhs) = filter.split_once(" eq ")?;
    if !lhs.trim().eq_ignore_ascii_case("resourceType") {
        return None;
    }
    Some(rhs.trim().trim_matches('\'').to_owned())
}

fn inventory(ctx: &Ctx<'_>, store: &Store, sub: &str, rg: Option<&str>) -> Result<Response> {
    if let Some(rg) = rg {
        let key = format!("/subscriptions/{sub}/resourcegroups/{rg}").to_ascii_lowercase();
        if store.get(&key).is_none() {
            return Err(ArmError::resource_group_not_found(rg));
        }
    }
    let filter = ctx.query.get("$filter").map(String::as_str);
    let wanted = match filter {
        None => None,
        Some(f) => Some(filter_type(f).ok_or_else(|| {
            ArmError::bad_request(
                "InvalidFilterInQueryString",
                format!("Invalid $filter '{f}' specified in the query string."),
            )
        })?),
    };
    let items = store
        .all()
        .filter(|r| r.sub.eq_ignore_ascii_case(sub) && r.rtype.in_inventory)
        .filter(|r| rg.is_none_or(|g| r.rg.eq_ignore_ascii_case(g)))
        .filter(|r| {
            wanted
                .as_deref()
                .is_none_or(|t| r.rtype.full_name().eq_ignore_ascii_case(t))
        })
        .map(|r| store.render_inventory(r))
        .collect();
    Ok(page(ctx, items))
}

/// One page of a list, `nextLink` carrying `$skipToken` (an offset) and the other query args.
fn page(ctx: &Ctx<'_>, items: Vec<Value>) -> Response {
    let size = ctx.emu.config().page_size.max(1);
    let skip: usize = ctx
        .query
        .get("$skipToken")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let total = items.len();
    let value: Vec<Value> = items.into_iter().skip(skip).take(size).collect();
    let mut body = json!({ "value": value });
    if skip + size < total {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in ctx.query.iter().filter(|(k, _)| k.as_str() != "$skipToken") {
            q.append_pair(k, v);
        }
        q.append_pair("$skipToken", &(skip + size).to_string());
        body["nextLink"] = json!(format!("{}{}?{}", ctx.base, ctx.path, q.finish()));
    }
    json_response(StatusCode::OK, body)
}

/// Takes `properties` out of a request body: absent or null is empty; anything but an object
/// is refused as ARM refuses it.
fn take_properties(body: &mut Map<String, Value>) -> Result<Map<String, Value>> {
    match body.remove("properties") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(p)) => Ok(p),
        Some(_) => Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The 'properties' must be an object.",
        )),
    }
}
