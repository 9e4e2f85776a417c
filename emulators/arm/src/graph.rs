//! A Microsoft Graph (v1.0) subset: app registrations, their federated identity credentials,
//! and service principals, which a tenant's administrator makes so that an outside workload
//! (hypersaga) can reach the tenant's subscription through workload identity federation.
//!
//! Graph lives at `https://graph.microsoft.com`; the emulator serves the same paths under
//! `/v1.0/` on its own listener, so a client sets its Graph base URL to the emulator's URL (and
//! still asks Entra for scope `https://graph.microsoft.com/.default`). A request is
//! authenticated ([`auth`]: a Graph-audience token of this emulator), its path read ([`path`]),
//! authorized by the token's application permissions, then served in the token's directory
//! (`tid`) from the [`crate::directory`] in the store. Answers and refusals are Graph's shapes
//! and codes ([`render`], [`error`]); each carries `request-id` and `client-request-id`.

mod applications;
mod auth;
mod body;
mod credentials;
mod error;
mod filter;
mod path;
mod render;
mod service_principals;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header, request::Parts};
use axum::response::Response;
use time::OffsetDateTime;

use crate::Emulator;
use crate::arm::TypeTag;
use crate::store::Store;
use error::{GraphError, RequestIds};
use path::Target;

/// Largest body read (Graph's directory objects are small).
const MAX_BODY: usize = 1024 * 1024;

/// What a handler needs to know about the request.
pub(crate) struct Ctx<'a> {
    emu: &'a Emulator,
    /// The caller's directory: the token's `tid`.
    tenant: &'a str,
    now: OffsetDateTime,
    /// `https://{host}/v1.0/`, what `@odata.context` URLs start with.
    base: String,
    /// The `$filter` query option, if any.
    filter: Option<&'a str>,
}

fn header(parts: &Parts, name: &str) -> Option<String> {
    parts
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The `$filter` query option, decoded.
fn filter_of(parts: &Parts) -> Option<String> {
    url::form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "$filter")
        .map(|(_, v)| v.into_owned())
}

/// Handler of `/v1.0/{*path}`.
pub(crate) async fn handle(State(emu): State<Emulator>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let request_id = uuid::Uuid::new_v4().to_string();
    let ids = RequestIds {
        client_request_id: header(&parts, "client-request-id")
            .unwrap_or_else(|| request_id.clone()),
        request_id,
    };
    let result = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => serve(&emu, &parts, &bytes),
        Err(_) => Err(GraphError::unreadable_body()),
    };
    let mut resp = result.unwrap_or_else(|e| e.render(&ids));
    let headers = resp.headers_mut();
    for (name, value) in [
        ("request-id", ids.request_id.as_str()),
        ("client-request-id", ids.client_request_id.as_str()),
        ("odata-version", "4.0"),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    }
    resp.extensions_mut().insert(TypeTag {
        type_name: "Graph".to_owned(),
        subscription: None,
    });
    resp
}

/// Authenticate, read the path, authorize, then run the handler under the store's lock.
fn serve(emu: &Emulator, parts: &Parts, body: &Bytes) -> Result<Response, GraphError> {
    let claims = auth::authenticate(emu, &parts.headers)?;
    let path = parts.uri.path();
    let target = path::parse(path.strip_prefix("/v1.0").unwrap_or(path))?;
    auth::authorize(&claims, &parts.method)?;
    let host = header(parts, header::HOST.as_str())
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into());
    let filter = filter_of(parts);
    let ctx = Ctx {
        emu,
        tenant: &claims.tid,
        now: OffsetDateTime::now_utc(),
        base: format!("https://{host}/v1.0/"),
        filter: filter.as_deref(),
    };
    let mut st = emu.lock();
    st.store.settle(ctx.now);
    route(&ctx, &mut st.store, &parts.method, target, body)
}

fn route(
    ctx: &Ctx<'_>,
    store: &mut Store,
    method: &Method,
    target: Target,
    body: &[u8],
) -> Result<Response, GraphError> {
    match (method, target) {
        (&Method::GET, Target::Applications) => applications::list(ctx, store),
        (&Method::POST, Target::Applications) => applications::create(ctx, store, body),
        (&Method::GET, Target::Application(key)) => applications::get(ctx, store, key),
        (&Method::DELETE, Target::Application(key)) => applications::delete(ctx, store, key),
        (&Method::GET, Target::Credentials(key)) => credentials::list(ctx, store, key),
        (&Method::POST, Target::Credentials(key)) => credentials::create(ctx, store, key, body),
        (&Method::GET, Target::Credential(key, c)) => credentials::get(ctx, store, key, &c),
        (&Method::DELETE, Target::Credential(key, c)) => credentials::delete(ctx, store, key, &c),
        (&Method::GET, Target::ServicePrincipals) => service_principals::list(ctx, store),
        (&Method::POST, Target::ServicePrincipals) => service_principals::create(ctx, store, body),
        (&Method::GET, Target::ServicePrincipal(key)) => service_principals::get(ctx, store, key),
        (&Method::DELETE, Target::ServicePrincipal(key)) => {
            service_principals::delete(ctx, store, key)
        }
        _ => Err(GraphError::method_not_allowed()),
    }
}
