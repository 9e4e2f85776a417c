//! The request pipeline: authenticate, authorise, throttle, check the api-version, inject
//! faults, then route to the handler for the method and target.

use std::cell::Cell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use time::OffsetDateTime;

use super::delete::delete_resource;
use super::headers::{RateHeaders, routing_request_id};
use super::lro::operation;
use super::patch::patch_resource;
use super::put::put_resource;
use super::read::{get_resource, head_resource, inventory, list_collection, list_resource_groups};
use super::skus::list_skus;
use super::usages::list_usages;
use super::{Ctx, api_version, rbac};
use crate::Emulator;
use crate::errors::{ArmError, Result};
use crate::faults::{FaultRequest, Faults, OpFailure};
use crate::path::{self, AuthzKind, ResourceRef, Target};
use crate::store::Store;
use crate::throttle::{Draw, OpClass, Scope};
use crate::types::{DeleteShape, PutShape};

/// Response extension naming the resource type and subscription, read by the request
/// recorder (its presence is also what marks an answer as ARM's rather than Entra's).
#[derive(Clone)]
pub(crate) struct TypeTag {
    pub type_name: String,
    pub subscription: Option<String>,
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
    let claims = match emu
        .authenticate(&parts.headers)
        .and_then(|c| emu.check_token_tenant(&c, sub).map(|()| c))
    {
        Ok(c) => c,
        Err(e) => {
            let global = emu
                .lock()
                .throttle
                .peek_global(sub, region, class, Instant::now());
            *rate = RateHeaders::unauthenticated(class, global);
            return Err(e);
        }
    };
    // ARM keys the caller's bucket on the principal's object id, the "actor" of its 429s.
    let scope = Scope {
        subscription: sub,
        principal: &claims.oid,
        region,
    };
    let permission = crate::rbac::Request::new(&parts.method, target, parts.uri.path()).with_body(
        &parts.method,
        target,
        body,
    );
    if let Err(e) = emu.authorize(&claims, &permission) {
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
    api_version::check(emu, target, &api_version, body)?;

    injected_fault(emu, &parts.method, target, parts.uri.path())?;

    // Synchronous RPs still take a moment; wait outside the lock.
    let mut delay = emu
        .config()
        .latency
        .apply(sync_latency(&parts.method, target));
    if let Target::Resource(r) = target
        && r.rtype.exclusive_parent_writes
        && (parts.method == Method::PUT || parts.method == Method::DELETE)
    {
        delay = delay.max(emu.config().min_exclusive_write_window);
        claim_exclusive_write(emu, r, delay)?;
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }

    let mut guard = emu.lock();
    let st = &mut *guard;
    let ctx = Ctx {
        emu,
        base: base_url(parts),
        api_version,
        now: OffsetDateTime::now_utc(),
        query: &query,
        path: parts.uri.path(),
        caller: claims.oid.clone(),
        fail_with: async_fault(&st.faults, &parts.method, target, parts.uri.path()),
        fail_used: Cell::new(false),
    };
    st.store.settle(ctx.now);
    let resp = route(&ctx, &mut st.store, &parts.method, target, body);
    if ctx.fail_used.get()
        && let Some((id, _)) = &ctx.fail_with
    {
        st.faults.consume_async(id);
    }
    resp
}

/// The failure-after-acceptance installed for this request, if it is a PUT or DELETE that
/// starts an asynchronous operation.
fn async_fault(
    faults: &Faults,
    method: &Method,
    target: &Target,
    path: &str,
) -> Option<(String, OpFailure)> {
    let Target::Resource(r) = target else {
        return None;
    };
    let starts_op = (*method == Method::PUT && r.rtype.put != PutShape::Sync)
        || (*method == Method::DELETE && r.rtype.delete != DeleteShape::Sync);
    if !starts_op {
        return None;
    }
    let f = faults.peek_async(&FaultRequest {
        method: method.as_str(),
        resource_type: &target.type_name(),
        name: target.name(),
        path,
    })?;
    Some((
        f.id,
        OpFailure {
            code: f.spec.code,
            message: f.spec.message,
        },
    ))
}

/// Holds the parent's one write slot for `window` (the time the write is in flight), or
/// answers the resource provider's 409 when another write holds it. No window, no slot.
fn claim_exclusive_write(emu: &Emulator, r: &ResourceRef, window: Duration) -> Result<()> {
    if window.is_zero() {
        return Ok(());
    }
    let now = OffsetDateTime::now_utc();
    if emu
        .lock()
        .store
        .claim_exclusive_write(&r.parent_key(), now, now + window)
    {
        return Ok(());
    }
    // ARM names the identity with lower-cased type segments and the names as given.
    let parent = r.names.first().map_or("", String::as_str);
    let identity = format!(
        "/subscriptions/{}/resourcegroups/{}/providers/{}/{}/{parent}",
        r.sub,
        r.rg,
        r.rtype.namespace.to_ascii_lowercase(),
        r.rtype
            .segments()
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase(),
    );
    Err(ArmError::concurrent_fic_writes(&identity))
}

/// The first installed fault matching the request, as the error it asks for.
fn injected_fault(emu: &Emulator, method: &Method, target: &Target, path: &str) -> Result<()> {
    let fault = emu.lock().faults.take(&FaultRequest {
        method: method.as_str(),
        resource_type: &target.type_name(),
        name: target.name(),
        path,
    });
    let Some(f) = fault else {
        return Ok(());
    };
    let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = f
        .message
        .unwrap_or_else(|| format!("Injected fault {} for {}.", f.code, target.type_name()));
    let mut err = ArmError::new(status, f.code, message);
    err.retry_after = f.retry_after_secs;
    Err(err)
}

/// The realistic time a synchronous resource provider takes to answer. Per-type overrides only
/// govern asynchronous operations, so they never stretch a synchronous answer.
fn sync_latency(method: &Method, target: &Target) -> Duration {
    let writes = *method == Method::PUT || *method == Method::DELETE;
    match target {
        Target::Resource(r)
            if (*method == Method::PUT && r.rtype.put == PutShape::Sync)
                || (*method == Method::DELETE && r.rtype.delete == DeleteShape::Sync) =>
        {
            r.rtype.sync_latency
        }
        Target::Authorization(a) if writes && a.kind == AuthzKind::RoleAssignments => {
            rbac::WRITE_LATENCY
        }
        _ => Duration::ZERO,
    }
}

/// The handler for a method on a target; anything else is `405 MethodNotAllowed`.
fn route(
    ctx: &Ctx<'_>,
    store: &mut Store,
    method: &Method,
    target: &Target,
    body: &Bytes,
) -> Result<Response> {
    match (method, target) {
        (&Method::GET, Target::Resource(r)) => get_resource(ctx, store, r),
        (&Method::HEAD, Target::Resource(r)) => Ok(head_resource(store, r)),
        (&Method::PUT, Target::Resource(r)) => put_resource(ctx, store, r, body),
        (&Method::PATCH, Target::Resource(r)) => patch_resource(store, r, body),
        (&Method::DELETE, Target::Resource(r)) => delete_resource(ctx, store, r),
        (
            &Method::GET,
            Target::Collection {
                sub,
                rg,
                rtype,
                parent_names,
            },
        ) => list_collection(ctx, store, sub, rg.as_deref(), rtype, parent_names),
        (&Method::GET, Target::ResourceGroupList { sub }) => list_resource_groups(ctx, store, sub),
        (&Method::GET, Target::Inventory { sub, rg }) => inventory(ctx, store, sub, rg.as_deref()),
        (&Method::GET, Target::ResourceSkus { .. }) => list_skus(ctx),
        (&Method::GET, Target::ComputeUsages { sub, location }) => {
            list_usages(ctx, store, sub, location)
        }
        (_, Target::Authorization(a)) => rbac::route(ctx, store, method, a, body),
        (&Method::GET, Target::Operation { sub, id, view }) => {
            // Compute serves both views on one path; `monitor=true` asks for the result.
            let view = if ctx.query.get("monitor").is_some_and(|m| m == "true") {
                path::OpView::Result
            } else {
                *view
            };
            operation(store, sub, id, view, ctx.now)
        }
        _ => Err(ArmError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("The requested method '{method}' is not allowed for this resource."),
        )),
    }
}
