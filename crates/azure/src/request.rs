//! One ARM HTTP exchange: build the request, send it through the pipeline, keep the answer
//! (status, headers, body) and turn error statuses into [`ArmError`] with ARM's code kept.

use std::time::Duration;

use azure_core::http::headers::{HeaderName, Headers};
use azure_core::http::{Context, Method, Pipeline, PipelineSendOptions, Request};
use tracing::Instrument as _;
use url::Url;

use crate::error::{ArmError, ArmErrorBody, Result};
use crate::ids::type_label;
use crate::retry_after;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-request-id");
const CORRELATION_ID: HeaderName = HeaderName::from_static("x-ms-correlation-request-id");
/// Bodies of non-JSON errors are cut to this many bytes in messages.
const MAX_ERROR_TEXT: usize = 512;

/// An HTTP answer from ARM (any status).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub headers: Headers,
    pub body: azure_core::Bytes,
}

impl Answer {
    /// `Retry-After` (any of ARM's spellings).
    pub fn retry_after(&self) -> Option<Duration> {
        retry_after::from_headers(&self.headers)
    }

    /// `x-ms-request-id`, falling back to the correlation id.
    pub fn request_id(&self) -> Option<String> {
        self.headers
            .get_optional_string(&REQUEST_ID)
            .or_else(|| self.headers.get_optional_string(&CORRELATION_ID))
    }

    /// A header value by lower-case name.
    pub fn header(&self, name: &'static str) -> Option<&str> {
        self.headers
            .get_optional_str(&HeaderName::from_static(name))
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A 404 saying the resource is not there (see [`crate::classify::means_absent`]).
    pub fn is_absent(&self) -> bool {
        self.status == 404
            && crate::classify::means_absent(
                parse_error_body(&self.body)
                    .as_ref()
                    .and_then(|e| e.effective_code()),
            )
    }

    /// The body as JSON; an empty body is `None`.
    pub fn json(&self, path: &str) -> Result<Option<serde_json::Value>> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        serde_json::from_slice(&self.body)
            .map(Some)
            .map_err(|e| ArmError::InvalidResponse {
                path: path.to_owned(),
                message: format!("body is not JSON: {e}"),
            })
    }

    /// This (error-status) answer as an [`ArmError::Http`].
    pub fn into_error(self, method: &Method, path: &str) -> ArmError {
        let error = parse_error_body(&self.body);
        ArmError::Http {
            method: method.to_string(),
            path: path.to_owned(),
            status: self.status,
            retry_after: self.retry_after(),
            request_id: self.request_id(),
            error,
        }
    }
}

/// ARM's `{"error":{…}}`, or a top-level `{code,message}` some RPs send, or the body text.
fn parse_error_body(body: &[u8]) -> Option<ArmErrorBody> {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let obj = value.get("error").unwrap_or(&value);
        if let Ok(e) = serde_json::from_value::<ArmErrorBody>(obj.clone())
            && (!e.code.is_empty() || !e.message.is_empty())
        {
            return Some(e);
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut message: String = text.chars().take(MAX_ERROR_TEXT).collect();
    if message.len() < text.len() {
        message.push('…');
    }
    Some(ArmErrorBody {
        message,
        ..Default::default()
    })
}

/// The path of `url` without its query: safe to log and to put in errors (poll URLs carry
/// signatures in their query).
pub(crate) fn log_path(url: &Url) -> String {
    url.path().to_owned()
}

/// The subscription a path names (`/subscriptions/{id}/…`), lower-cased; `none` for
/// requests outside any (tenant-level reads).
fn subscription_label(path: &str) -> String {
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    match (parts.next(), parts.next()) {
        (Some(s), Some(id)) if s.eq_ignore_ascii_case("subscriptions") => id.to_ascii_lowercase(),
        _ => "none".to_owned(),
    }
}

/// The client span of one ARM request (see [`hypersaga_telemetry::http`]), with the ARM
/// resource type it is about (`arm.resource_type`).
fn request_span(method: &Method, url: &Url, path: &str, attempt: u32) -> tracing::Span {
    let endpoint = hypersaga_telemetry::http::Endpoint::new(
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default(),
    );
    let span = hypersaga_telemetry::http::client_span(
        &endpoint,
        method.as_ref(),
        path,
        attempt.saturating_sub(1),
    );
    hypersaga_telemetry::otel::set_attribute(&span, "arm.resource_type", type_label(path));
    span
}

/// Sends one request and returns the answer whatever its status; only "no answer" is an error.
/// `attempt` counts the tries of this same request (1 for the first).
pub(crate) async fn send(
    pipeline: &Pipeline,
    method: Method,
    url: &Url,
    body: Option<&serde_json::Value>,
    attempt: u32,
) -> Result<Answer> {
    let path = log_path(url);
    let span = request_span(&method, url, &path, attempt);
    let marked = span.clone();
    async {
        let mut request = Request::new(url.clone(), method);
        request.insert_header("accept", "application/json");
        if let Some(body) = body {
            let bytes = serde_json::to_vec(body)
                .map_err(|e| ArmError::Config(format!("request body: {e}")))?;
            request.insert_header("content-type", "application/json");
            request.set_body(bytes);
        }
        let ctx = Context::new();
        let options = PipelineSendOptions {
            skip_checks: true,
            ..Default::default()
        };
        let response = match pipeline.send(&ctx, &mut request, Some(options)).await {
            Ok(response) => response,
            Err(e) => {
                let error = map_pipeline_error(e, &method, &path);
                hypersaga_telemetry::http::record_failure(
                    &marked,
                    failure_type(&error),
                    &error.to_string(),
                );
                return Err(error);
            }
        };
        let (status, headers, body) = response.deconstruct();
        let answer = Answer {
            status: u16::from(status),
            headers,
            body: body.into(),
        };
        record(&marked, &method, &path, &answer);
        Ok(answer)
    }
    .instrument(span)
    .await
}

/// What an answer tells the span, the log and the metrics.
fn record(span: &tracing::Span, method: &Method, path: &str, answer: &Answer) {
    let status = answer.status;
    // ARM's own code (`AuthorizationFailed`, `TooManyRequests`) says more than the status.
    let code = (status >= 400)
        .then(|| parse_error_body(&answer.body))
        .flatten()
        .map(|e| e.effective_code().unwrap_or_default().to_owned())
        .unwrap_or_default();
    hypersaga_telemetry::http::record_response(span, status, answer.is_absent(), &code);
    tracing::debug!(status, "ARM answered");
    metrics::counter!(
        "hypersaga_arm_requests_total",
        "method" => method.to_string(),
        "type" => type_label(path),
        "status" => status.to_string(),
    )
    .increment(1);
    if status == 429 {
        metrics::counter!(
            "hypersaga_arm_throttled_total",
            "subscription" => subscription_label(path),
        )
        .increment(1);
    }
}

/// The `error.type` of a request that got no answer.
fn failure_type(error: &ArmError) -> &'static str {
    match error {
        ArmError::Credential { .. } => "credential",
        ArmError::Transport { .. } => "connection",
        _ => "_OTHER",
    }
}

/// Maps an error the pipeline raised before any HTTP answer reached us.
fn map_pipeline_error(err: azure_core::Error, method: &Method, path: &str) -> ArmError {
    use azure_core::error::ErrorKind as K;
    match err.kind() {
        K::Credential => ArmError::Credential {
            status: credential_status(&err),
            message: err.to_string(),
            source: err,
        },
        K::Connection | K::Io => ArmError::Transport {
            method: method.to_string(),
            path: path.to_owned(),
            message: error_chain(&err),
            source: err,
        },
        K::HttpResponse { status, .. } => ArmError::Credential {
            status: Some(u16::from(*status)),
            message: err.to_string(),
            source: err,
        },
        _ => ArmError::Config(format!("{method} {path}: {}", error_chain(&err))),
    }
}

/// The token endpoint's HTTP status buried in a credential error, if it answered at all.
fn credential_status(err: &azure_core::Error) -> Option<u16> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(az) = e.downcast_ref::<azure_core::Error>()
            && let Some(s) = az.http_status()
        {
            return Some(u16::from(s));
        }
        current = e.source();
    }
    None
}

/// `outer: inner: innermost`, so "connection refused" or a TLS failure is visible. Without
/// the request's URL, which reqwest puts in its errors: its query may be signed (an LRO's
/// poll URL), and this message goes to logs, span statuses and the saga.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut s = err.to_string();
    let mut urls = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(url) = e
            .downcast_ref::<reqwest::Error>()
            .and_then(reqwest::Error::url)
        {
            urls.push(url.clone());
        }
        let m = e.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        current = e.source();
    }
    for url in urls {
        s = s
            .replace(&format!(" for url ({url})"), "")
            .replace(url.as_str(), "<url>");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_transport_error_says_what_failed_but_not_the_url_and_its_query() {
        // Nothing listens on port 9: the connection is refused.
        let url = "http://127.0.0.1:9/poll/op-1?api-version=2024-01-01&sig=s3cr3t";
        let err = reqwest::Client::new()
            .get(url)
            .send()
            .await
            .expect_err("connection refused");
        let err = azure_core::Error::with_error(
            azure_core::error::ErrorKind::Io,
            err,
            "failed to execute `reqwest` request",
        );
        let message = error_chain(&err);
        assert!(message.contains("error sending request"), "{message}");
        assert!(!message.contains("sig="), "{message}");
        assert!(!message.contains("127.0.0.1:9"), "{message}");
        let arm = map_pipeline_error(err, &Method::Get, "/poll/op-1");
        assert!(!arm.to_string().contains("s3cr3t"), "{arm}");
    }

    #[test]
    fn subscriptions_of_paths() {
        assert_eq!(
            subscription_label("/subscriptions/ABC-1/resourceGroups/rg"),
            "abc-1"
        );
        assert_eq!(subscription_label("/providers/Microsoft.Network"), "none");
        assert_eq!(subscription_label("/subscriptions"), "none");
    }

    #[test]
    fn error_bodies() {
        let e = parse_error_body(br#"{"error":{"code":"A","message":"b","target":"c"}}"#).unwrap();
        assert_eq!(
            (e.code.as_str(), e.message.as_str(), e.target.as_deref()),
            ("A", "b", Some("c"))
        );
        let e = parse_error_body(br#"{"code":"X","message":"y"}"#).unwrap();
        assert_eq!(e.code, "X");
        let e = parse_error_body(b"<html>bad gateway</html>").unwrap();
        assert_eq!(e.code, "");
        assert!(e.message.contains("bad gateway"));
        assert!(parse_error_body(b"").is_none());
    }
}
