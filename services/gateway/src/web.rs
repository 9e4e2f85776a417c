//! The live view: one web page that shows the tenant's operations and, for one operation, its
//! DAG as it runs (each step's state, attempts, timing, what it waits on and since when, why
//! the operation is paused) with the operator's calls; and the small HTTP JSON API the page
//! reads, served beside gRPC when `gateway.web_listen` is set.
//!
//! The page is one static file (HTML, CSS and script, no build step, nothing from elsewhere)
//! compiled into the binary. A browser cannot speak gRPC, so the API is HTTP, and every route
//! goes through the gRPC service's own code with the caller's `Authorization: Bearer` header
//! as the call's metadata: the same authentication, rate limit, checks and refusals. An error
//! is the gRPC status as JSON (`code`, `message`, `reason`, `field_violations`) with the HTTP
//! status Google's APIs map its code to.
//!
//! - `GET /`: the page (no token needed: it asks for one, and keeps it in the tab's
//!   `sessionStorage`; a `#token=…` fragment, which never reaches a server, is taken once).
//! - `GET /api/v1/operations?state=&cluster=&page_size=&page_token=`: `ListOperations`.
//! - `GET /api/v1/operations/{id}`: `GetOperation`, and `calls`: the operator calls that
//!   apply to it now.
//! - `GET /api/v1/operations/{id}/events`: Server-Sent Events: `operation` (the same
//!   document) now and at every change, fed by `WatchCluster`'s watch of its cluster;
//!   `end` once it has finished; `error` if the watch fails.
//! - `POST /api/v1/operations/{id}/{resume|retry-step|compensate|abandon}`, body
//!   `{"request_id": "…", "step": "…"}` (both optional but `step` for `retry-step`):
//!   `ResumeOperation`, `RetryOperationStep`, `CompensateOperation`, `AbandonOperation`;
//!   `202 Accepted` with the operation as it was when the call was accepted.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use hypersaga_api::v1 as pb;
use hypersaga_api::v1::cluster_service_server::ClusterService;
use hypersaga_bus::OperatorAction;
use hypersaga_config::{GatewayTls, TenantConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::Digest;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status};
use tonic_types::StatusExt;
use tracing::{info, warn};

use crate::service::OperationNow;
use crate::{Error, Gateway, Result};

/// The page: HTML, CSS and script in one file.
const PAGE: &str = include_str!("web/index.html");

/// How long open event streams get to end once the gateway stops.
const GRACE: Duration = Duration::from_secs(2);

#[derive(Clone)]
struct Web {
    gateway: Gateway,
    /// Ends the event streams when the gateway stops.
    shutdown: CancellationToken,
}

/// Serves the live view on an already-bound listener until `shutdown`: over TLS with `tls`
/// ([`tls_config`]), else plain HTTP.
pub(crate) async fn serve(
    gateway: Gateway,
    listener: std::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: CancellationToken,
) -> Result<()> {
    let addr = listener.local_addr()?;
    let app = router(gateway, shutdown.clone());
    let handle = axum_server::Handle::new();
    let stopping = handle.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        stop.cancelled().await;
        stopping.graceful_shutdown(Some(GRACE));
    });
    info!(%addr, tls = tls.is_some(), "gateway serving the live view");
    let service = app.into_make_service();
    match tls {
        Some(tls) => {
            let config = axum_server::tls_rustls::RustlsConfig::from_config(tls);
            axum_server::from_tcp_rustls(listener, config)?
                .handle(handle)
                .serve(service)
                .await?
        }
        None => {
            axum_server::from_tcp(listener)?
                .handle(handle)
                .serve(service)
                .await?
        }
    }
    Ok(())
}

fn router(gateway: Gateway, shutdown: CancellationToken) -> Router {
    let page = Page::new(PAGE);
    Router::new()
        .route("/", get(move || std::future::ready(page.clone())))
        .route("/api/v1/operations", get(list_operations))
        .route("/api/v1/operations/{id}", get(get_operation))
        .route("/api/v1/operations/{id}/events", get(events))
        .route("/api/v1/operations/{id}/{call}", post(operate))
        .with_state(Web { gateway, shutdown })
}

/// The page, with a Content-Security-Policy that lets only its own inline script and style
/// run (by their digests) and lets it talk only to this origin.
#[derive(Clone)]
struct Page {
    html: &'static str,
    policy: HeaderValue,
}

impl Page {
    fn new(html: &'static str) -> Self {
        let policy = format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; \
             img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            inline_digest(html, "script"),
            inline_digest(html, "style"),
        );
        Self {
            html,
            policy: HeaderValue::from_str(&policy)
                .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'")),
        }
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                ),
                (header::CONTENT_SECURITY_POLICY, self.policy),
                (
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                ),
                (
                    header::REFERRER_POLICY,
                    HeaderValue::from_static("no-referrer"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            self.html,
        )
            .into_response()
    }
}

/// `sha256-<base64>` of the text of the page's one `<tag>` element, as CSP names it.
fn inline_digest(html: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let body = html
        .find(&open)
        .map(|at| &html[at + open.len()..])
        .and_then(|rest| rest.find(&close).map(|end| &rest[..end]))
        .unwrap_or_default();
    let digest = sha2::Sha256::digest(body.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// A gRPC call carrying the HTTP request's credentials (and trace context) as metadata.
fn call<T>(headers: &HeaderMap, message: T) -> tonic::Request<T> {
    let mut metadata = HeaderMap::new();
    let passed = [
        header::AUTHORIZATION,
        header::HeaderName::from_static(hypersaga_telemetry::TRACEPARENT),
    ];
    for name in passed {
        if let Some(v) = headers.get(&name) {
            let v = v.clone();
            metadata.insert(name, v);
        }
    }
    tonic::Request::from_parts(
        tonic::metadata::MetadataMap::from_headers(metadata),
        Default::default(),
        message,
    )
}

/// A refused or failed call, answered as JSON.
struct ApiError(Status);

impl From<Status> for ApiError {
    fn from(s: Status) -> Self {
        Self(s)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = http_status(self.0.code());
        let mut response = (status, axum::Json(status_json(&self.0))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A gRPC status as the page reads it: the code's name, the message, and the details a
/// program branches on (`reason` of `google.rpc.ErrorInfo`, every field violation).
fn status_json(s: &Status) -> Value {
    let mut body = json!({ "code": code_name(s.code()), "message": s.message() });
    if let Some(info) = s.get_details_error_info() {
        body["reason"] = Value::from(info.reason);
        body["metadata"] = json!(info.metadata);
    }
    if let Some(bad) = s.get_details_bad_request() {
        body["field_violations"] = bad
            .field_violations
            .iter()
            .map(|v| json!({ "field": v.field, "description": v.description }))
            .collect();
    }
    body
}

/// The HTTP status of a gRPC code, as Google's APIs map them (`google.rpc.Code`).
fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            StatusCode::BAD_REQUEST
        }
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        // 499, "client closed request", as Google's mapping has it.
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// `FAILED_PRECONDITION`, as `google.rpc.Code` spells it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// An invalid request, naming the field, as the gRPC API answers one.
fn invalid(field: &str, description: impl Into<String>) -> ApiError {
    ApiError(Status::with_error_details(
        Code::InvalidArgument,
        format!("invalid request: {field}"),
        tonic_types::ErrorDetails::with_bad_request(vec![tonic_types::FieldViolation::new(
            field,
            description,
        )]),
    ))
}

/// An API answer: JSON, never cached.
fn answer(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        axum::Json(body),
    )
        .into_response()
}

/// An operation with the operator calls that apply to it now (`resume`, `retry_step`,
/// `compensate`, `abandon`).
fn operation_json(now: &OperationNow) -> Value {
    let mut doc = hypersaga_api::json::operation(&now.operation);
    doc["calls"] = now.calls.iter().map(|c| c.as_str()).collect();
    doc
}

/// Whether an operation has ended: nothing will change it any more.
fn finished(op: &pb::Operation) -> bool {
    matches!(
        pb::OperationState::try_from(op.state),
        Ok(pb::OperationState::Succeeded | pb::OperationState::Failed)
    )
}

#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    state: Option<String>,
    cluster: Option<String>,
    page_size: Option<String>,
    page_token: Option<String>,
}

/// `ListOperations`. Read-only, so idempotent.
async fn list_operations(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let state = match q.state.as_deref().map(str::trim) {
        None | Some("") | Some("all") => pb::OperationState::Unspecified,
        Some(s) => pb::OperationState::from_str_name(&format!(
            "OPERATION_STATE_{}",
            s.to_ascii_uppercase()
        ))
        .ok_or_else(|| {
            invalid(
                "state",
                format!("{s:?} is not a state: running, compensating, paused, succeeded or failed"),
            )
        })?,
    };
    let page_size = match q.page_size.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(n) => n
            .parse::<i32>()
            .map_err(|_| invalid("page_size", format!("{n:?} is not a number")))?,
    };
    let req = pb::ListOperationsRequest {
        state: state as i32,
        cluster: q.cluster.unwrap_or_default(),
        page_size,
        page_token: q.page_token.unwrap_or_default(),
    };
    let page = web
        .gateway
        .list_operations(call(&headers, req))
        .await?
        .into_inner();
    Ok(answer(
        StatusCode::OK,
        json!({
            "operations": page.operations.iter().map(hypersaga_api::json::operation).collect::<Vec<_>>(),
            "next_page_token": page.next_page_token,
        }),
    ))
}

/// `GetOperation`, with the calls that apply. Read-only, so idempotent.
async fn get_operation(
    State(web): State<Web>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let tenant = web.gateway.tenant(&call(&headers, ()))?;
    let now = web.gateway.operation_now(&tenant, &id).await?;
    Ok(answer(StatusCode::OK, operation_json(&now)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallBody {
    #[serde(default)]
    request_id: String,
    #[serde(default)]
    step: String,
}

/// An operator call: the gRPC call of the same name, answered `202 Accepted` with the
/// operation as it was when the call was accepted (the coordinator applies it just after).
/// Idempotent with a `request_id`: the same id within two minutes is applied once.
async fn operate(
    State(web): State<Web>,
    headers: HeaderMap,
    Path((id, name)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body: CallBody = if body.iter().all(u8::is_ascii_whitespace) {
        CallBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            invalid(
                "body",
                format!("is not a JSON object of request_id and step: {e}"),
            )
        })?
    };
    let action = match name.as_str() {
        "resume" => OperatorAction::Resume,
        "retry-step" => OperatorAction::RetryStep,
        "compensate" => OperatorAction::Compensate,
        "abandon" => OperatorAction::Abandon,
        other => {
            return Err(ApiError(Status::not_found(format!(
                "no operator call {other:?}: resume, retry-step, compensate or abandon"
            ))));
        }
    };
    let g = &web.gateway;
    let CallBody { request_id, step } = body;
    let accepted = match action {
        OperatorAction::Resume => {
            let req = pb::ResumeOperationRequest { id, request_id };
            g.resume_operation(call(&headers, req)).await
        }
        OperatorAction::RetryStep => {
            let req = pb::RetryOperationStepRequest {
                id,
                step,
                request_id,
            };
            g.retry_operation_step(call(&headers, req)).await
        }
        OperatorAction::Compensate => {
            let req = pb::CompensateOperationRequest { id, request_id };
            g.compensate_operation(call(&headers, req)).await
        }
        OperatorAction::Abandon => {
            let req = pb::AbandonOperationRequest { id, request_id };
            g.abandon_operation(call(&headers, req)).await
        }
    }?
    .into_inner();
    Ok(answer(
        StatusCode::ACCEPTED,
        hypersaga_api::json::operation(&accepted),
    ))
}

type Events = Sse<
    axum::response::sse::KeepAliveStream<
        tokio_stream::wrappers::ReceiverStream<Result<Event, Infallible>>,
    >,
>;

/// The operation now, then at every change of its cluster's record (`WatchCluster`'s
/// watch), read again from its saga with the calls that apply; `end` once it has finished.
/// Read-only, so idempotent: a page that reconnects gets the operation as it is first.
async fn events(
    State(web): State<Web>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Events, ApiError> {
    let tenant = web.gateway.tenant(&call(&headers, ()))?;
    let first = web.gateway.operation_now(&tenant, &id).await?;
    // Opened before answering, so a cluster that cannot be watched is this call's error.
    let changes = if finished(&first.operation) {
        None
    } else {
        Some(
            web.gateway
                .watch_record(&tenant, &first.operation.cluster)
                .await?,
        )
    };
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(follow(web, tenant, first, changes, tx));
    Ok(Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()))
}

/// Sends the operation's changes until it ends, its watch does, the page goes away or the
/// gateway stops.
async fn follow(
    web: Web,
    tenant: TenantConfig,
    first: OperationNow,
    changes: Option<mpsc::Receiver<Result<pb::Cluster, Status>>>,
    tx: mpsc::Sender<Result<Event, Infallible>>,
) {
    let id = first.operation.id.clone();
    let mut shown = operation_json(&first);
    if send(&tx, "operation", &shown).await.is_err() {
        return;
    }
    let Some(mut changes) = changes else {
        let _ = send(&tx, "end", &json!({ "id": id })).await;
        return;
    };
    loop {
        let change = tokio::select! {
            () = web.shutdown.cancelled() => return,
            () = tx.closed() => return,
            change = changes.recv() => change,
        };
        // Another operation has the cluster now (or the watch ended): this one is over.
        let moved_on = match &change {
            Some(Ok(cluster)) => cluster
                .status
                .as_ref()
                .and_then(|s| s.operation.as_ref())
                .is_some_and(|op| op.id != id),
            Some(Err(status)) => {
                warn!(operation = %id, error = %status, "live view: the watch failed");
                let _ = send(&tx, "error", &status_json(status)).await;
                return;
            }
            None => true,
        };
        let now = match web.gateway.operation_now(&tenant, &id).await {
            Ok(now) => now,
            Err(status) => {
                let _ = send(&tx, "error", &status_json(&status)).await;
                return;
            }
        };
        let doc = operation_json(&now);
        if doc != shown {
            if send(&tx, "operation", &doc).await.is_err() {
                return;
            }
            shown = doc;
        }
        if finished(&now.operation) || moved_on {
            let _ = send(&tx, "end", &json!({ "id": id })).await;
            return;
        }
    }
}

async fn send(
    tx: &mpsc::Sender<Result<Event, Infallible>>,
    event: &str,
    data: &Value,
) -> Result<(), mpsc::error::SendError<Result<Event, Infallible>>> {
    tx.send(Ok(Event::default().event(event).data(data.to_string())))
        .await
}

/// The gRPC listener's TLS as rustls has it: its certificate and key, and client
/// certificates verified against `client_ca_file` (required with `require_client_cert`).
pub(crate) fn tls_config(tls: &GatewayTls) -> Result<Arc<rustls::ServerConfig>> {
    let pem = |path: &std::path::Path| {
        std::fs::read(path).map_err(|source| Error::Tls {
            path: path.to_owned(),
            source,
        })
    };
    let bad = |path: &std::path::Path| {
        let path = path.to_owned();
        move |source| Error::WebPem { path, source }
    };
    let certs = CertificateDer::pem_slice_iter(&pem(&tls.cert_file)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad(&tls.cert_file))?;
    let key = PrivateKeyDer::from_pem_slice(&pem(&tls.key_file)?).map_err(bad(&tls.key_file))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(Error::WebTls)?;
    let builder = match &tls.client_ca_file {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem(ca)?) {
                roots.add(cert.map_err(bad(ca))?).map_err(Error::WebTls)?;
            }
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider);
            let verifier = if tls.require_client_cert {
                verifier
            } else {
                verifier.allow_unauthenticated()
            };
            builder.with_client_cert_verifier(verifier.build()?)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(Error::WebTls)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_one_file_with_nothing_from_elsewhere_and_its_policy_names_its_own_code() {
        // Nothing fetched from elsewhere: no source attribute, stylesheet link, import or
        // URL but this origin's API (the SVG namespace is a name, not a fetch).
        for outside in ["src=", "<link", "@import", "url(", "//cdn", "https://"] {
            assert!(!PAGE.contains(outside), "the page loads {outside:?}");
        }
        assert_eq!(PAGE.matches("http://").count(), 1, "only the SVG namespace");
        assert_eq!(PAGE.matches("<script>").count(), 1);
        assert_eq!(PAGE.matches("<style>").count(), 1);
        let page = Page::new(PAGE);
        let policy = page.policy.to_str().unwrap_or_default().to_owned();
        assert!(
            policy.starts_with("default-src 'none'; script-src 'sha256-"),
            "{policy}"
        );
        assert!(policy.contains("connect-src 'self'"), "{policy}");
        // The digest changes with the script: a policy that let any script run would not.
        assert_ne!(
            inline_digest(PAGE, "script"),
            inline_digest("<script>x</script>", "script")
        );
    }

    #[test]
    fn a_refusal_reads_as_json_with_its_reason_and_fields_and_googles_http_status() {
        let refused = Status::with_error_details(
            Code::FailedPrecondition,
            "not paused",
            tonic_types::ErrorDetails::with_error_info(
                "OperationNotPaused",
                "hypersaga.io",
                std::collections::HashMap::new(),
            ),
        );
        let body = status_json(&refused);
        assert_eq!(body["code"], "FAILED_PRECONDITION");
        assert_eq!(body["reason"], "OperationNotPaused");
        assert_eq!(http_status(refused.code()), StatusCode::BAD_REQUEST);
        let ApiError(bad) = invalid("step", "is required");
        let body = status_json(&bad);
        assert_eq!(body["field_violations"][0]["field"], "step");
        assert_eq!(http_status(Code::Unauthenticated), StatusCode::UNAUTHORIZED);
        assert_eq!(
            http_status(Code::ResourceExhausted),
            StatusCode::TOO_MANY_REQUESTS
        );
        let response = ApiError(Status::unauthenticated("unknown token")).into_response();
        assert_eq!(
            response.headers().get(header::WWW_AUTHENTICATE),
            Some(&HeaderValue::from_static("Bearer"))
        );
    }

    #[test]
    fn a_call_carries_only_the_credentials_and_the_trace_of_the_http_request() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer t0k"),
        );
        headers.insert(header::COOKIE, HeaderValue::from_static("session=1"));
        let req = call(&headers, ());
        assert_eq!(
            req.metadata()
                .get("authorization")
                .and_then(|v| v.to_str().ok()),
            Some("Bearer t0k")
        );
        assert!(req.metadata().get("cookie").is_none());
    }
}
