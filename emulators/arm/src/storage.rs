//! Azure Storage's blob data plane with faults: a reverse proxy in front of a real blob
//! service (Azurite) that answers a request matching an installed fault as Storage answers a
//! refusal, and passes every other request through untouched.
//!
//! Azurite is Microsoft's own emulator and has no fault injection; the proxy adds the faults
//! the ARM emulator already has (`POST /faults`, matched by method, type, name and path) for
//! the data plane, whose types are [`BLOB_TYPE`] and [`CONTAINER_TYPE`]. Shared Key
//! signatures name the account and path, not the host, so signed requests pass unchanged.

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::Emulator;
use crate::faults::{FaultRequest, FaultSpec};

/// The fault type of a blob (`/<account>/<container>/<blob…>`).
pub const BLOB_TYPE: &str = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs";
/// The fault type of a container (`/<account>/<container>?restype=container`).
pub const CONTAINER_TYPE: &str = "Microsoft.Storage/storageAccounts/blobServices/containers";
/// The fault type of an account-level request (`/<account>?comp=list`).
pub const SERVICE_TYPE: &str = "Microsoft.Storage/storageAccounts/blobServices";

/// Bodies the proxy passes on (blobs here are OIDC documents and keys: kilobytes).
const MAX_BODY: usize = 64 * 1024 * 1024;

#[derive(Clone)]
struct Proxy {
    emulator: Emulator,
    /// The blob service's base, e.g. `http://127.0.0.1:10000`.
    upstream: String,
    client: reqwest::Client,
}

impl Emulator {
    /// A router that proxies the blob data plane to `upstream` (the blob service's base URL,
    /// without the account), failing what this emulator's faults match.
    pub fn storage_proxy(&self, upstream: &str) -> Router {
        Router::new().fallback(forward).with_state(Proxy {
            emulator: self.clone(),
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
        })
    }
}

/// The type and name a fault matches a data-plane path by.
fn addressed(path: &str) -> (&'static str, &str) {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [] | [_] => (SERVICE_TYPE, ""),
        [_, container] => (CONTAINER_TYPE, container),
        [.., blob] => (BLOB_TYPE, blob),
    }
}

async fn forward(State(p): State<Proxy>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let (resource_type, name) = addressed(path);
    let fault = p.emulator.lock().faults.take(&FaultRequest {
        method: parts.method.as_str(),
        resource_type,
        name,
        path,
    });
    if let Some(fault) = fault {
        return refusal(&fault, parts.method == axum::http::Method::HEAD);
    }
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let target = format!(
        "{}{}",
        p.upstream,
        parts.uri.path_and_query().map_or(path, |pq| pq.as_str())
    );
    let mut request = p.client.request(parts.method.clone(), target);
    for (name, value) in &parts.headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            request = request.header(name, value);
        }
    }
    let answer = match request.body(body).send().await {
        Ok(a) => a,
        Err(e) => {
            return (
                StatusCode::BAD_GATEWAY,
                format!("the blob service did not answer: {e}"),
            )
                .into_response();
        }
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != header::TRANSFER_ENCODING && name != header::CONNECTION {
            response = response.header(name, value);
        }
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    response
        .body(Body::from(bytes))
        .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
}

/// Storage's refusal: the error code in `x-ms-error-code` and an XML `<Error>` body (none for
/// HEAD), as the blob service writes them.
fn refusal(fault: &FaultSpec, head: bool) -> Response {
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let request_id = uuid::Uuid::new_v4().to_string();
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let message = fault
        .message
        .clone()
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
    let body = if head {
        String::new()
    } else {
        format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{}</Code><Message>{}\nRequestId:{request_id}\nTime:{now}</Message></Error>",
            xml_escape(&fault.code),
            xml_escape(&message)
        )
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    for (name, value) in [
        ("x-ms-error-code", fault.code.clone()),
        ("x-ms-request-id", request_id),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    }
    if let Some(secs) = fault.retry_after_secs {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_plane_paths_name_their_type_and_resource() {
        assert_eq!(addressed("/devstoreaccount1"), (SERVICE_TYPE, ""));
        assert_eq!(
            addressed("/devstoreaccount1/oidc-acme"),
            (CONTAINER_TYPE, "oidc-acme")
        );
        assert_eq!(
            addressed("/devstoreaccount1/oidc-acme/.well-known/openid-configuration"),
            (BLOB_TYPE, "openid-configuration")
        );
    }
}
