//! Client spans of the HTTP calls made to other systems (ARM, the management cluster's API
//! server), as OpenTelemetry's semantic conventions ([`crate::otel::SEMCONV_VERSION`]) describe
//! them: kind `CLIENT`, named for the method, with `http.request.method`, `server.address`,
//! `server.port`, `url.full` (without its query, which may carry signatures) and
//! `http.response.status_code`. A tracing back end then shows ARM and the API server as the
//! services' dependencies.
//!
//! A 4xx or 5xx answer marks the span as an error (`error.type` the status), except a 404 the
//! code asked for: a look before a create, or a delete of what may be gone already, runs in
//! [`expecting_absence`], and a 404 that says "not there" is then the answer it hoped for.
//!
//! The ARM client makes its spans with [`client_span`]; the management-cluster client gets
//! them from the [`ClientSpans`] layer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tracing::Instrument as _;

tokio::task_local! {
    /// Set while the task's code expects that what it asks for may not exist.
    static ABSENCE_EXPECTED: ();
}

/// Runs `fut`, in which a 404 saying that the thing asked for is not there is expected: the
/// client spans of such answers are not errors.
pub async fn expecting_absence<F: Future>(fut: F) -> F::Output {
    ABSENCE_EXPECTED.scope((), fut).await
}

/// Whether the running code expects absence ([`expecting_absence`]).
fn absence_expected() -> bool {
    ABSENCE_EXPECTED.try_with(|()| ()).is_ok()
}

/// The server requests go to: its scheme, host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    scheme: String,
    host: String,
    port: u16,
}

impl Endpoint {
    /// `port` defaults to the scheme's (443 for `https`, 80 otherwise).
    pub fn new(scheme: &str, host: &str, port: Option<u16>) -> Self {
        let default = if scheme.eq_ignore_ascii_case("https") {
            443
        } else {
            80
        };
        Self {
            scheme: scheme.to_ascii_lowercase(),
            host: host.to_owned(),
            port: port.unwrap_or(default),
        }
    }

    /// The endpoint of an absolute URI (`None` without a host).
    pub fn of_uri(uri: &http::Uri) -> Option<Self> {
        let host = uri.host()?;
        // An IPv6 literal's brackets are not part of `server.address`.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(Self::new(
            uri.scheme_str().unwrap_or("https"),
            host,
            uri.port_u16(),
        ))
    }

    fn url(&self, path: &str) -> String {
        if self.host.contains(':') {
            format!("{}://[{}]:{}{path}", self.scheme, self.host, self.port)
        } else {
            format!("{}://{}:{}{path}", self.scheme, self.host, self.port)
        }
    }
}

/// The methods the conventions name; any other is `_OTHER`.
const KNOWN_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// The span of one request of `method` to `path` on `endpoint`; `resend` is how many times
/// this same request was sent before (0 for the first try). Enter it (or instrument the call
/// with it), then [`record_response`] or [`record_failure`].
pub fn client_span(endpoint: &Endpoint, method: &str, path: &str, resend: u32) -> tracing::Span {
    let known = KNOWN_METHODS
        .iter()
        .find(|m| m.eq_ignore_ascii_case(method));
    let (method, name) = match known {
        Some(m) => (*m, *m),
        None => ("_OTHER", "HTTP"),
    };
    let span = tracing::info_span!(
        "http.client",
        otel.name = name,
        otel.kind = "client",
        http.request.method = method,
        server.address = %endpoint.host,
        server.port = endpoint.port,
        url.full = %endpoint.url(path),
        http.response.status_code = tracing::field::Empty,
        http.request.resend_count = tracing::field::Empty,
    );
    if resend > 0 {
        span.record("http.request.resend_count", resend);
    }
    span
}

/// Records the answer's `status` on `span`, and marks it an error when it is 4xx or 5xx —
/// unless it is a 404 saying the thing is not there (`absent`) in code that expected that
/// ([`expecting_absence`]). `description` is said only when it adds to the status (an API's
/// own error code).
pub fn record_response(span: &tracing::Span, status: u16, absent: bool, description: &str) {
    span.record("http.response.status_code", status);
    let expected = status == 404 && absent && absence_expected();
    if status >= 400 && !expected {
        crate::mark_error(span, &status.to_string(), description);
    }
}

/// Marks `span` an error for a request that got no answer: `error_type` a short, fixed name
/// of what went wrong (`timeout`, `connection`), `description` the error.
pub fn record_failure(span: &tracing::Span, error_type: &str, description: &str) {
    crate::mark_error(span, error_type, description);
}

/// A `tower` layer giving every request through the service it wraps a [`client_span`] on
/// `endpoint` (the service sees paths only: the base URI is added below it).
#[derive(Clone, Debug)]
pub struct ClientSpans {
    endpoint: Endpoint,
}

impl ClientSpans {
    pub fn new(endpoint: Endpoint) -> Self {
        Self { endpoint }
    }
}

impl<S> tower::Layer<S> for ClientSpans {
    type Service = ClientSpanService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientSpanService {
            inner,
            endpoint: self.endpoint.clone(),
        }
    }
}

/// The service of [`ClientSpans`].
#[derive(Clone, Debug)]
pub struct ClientSpanService<S> {
    inner: S,
    endpoint: Endpoint,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<http::Request<B>> for ClientSpanService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let span = client_span(&self.endpoint, req.method().as_str(), req.uri().path(), 0);
        let call = span.in_scope(|| self.inner.call(req));
        Box::pin(async move {
            let result = call.instrument(span.clone()).await;
            match &result {
                Ok(response) => {
                    let status = response.status().as_u16();
                    // The API server answers 404 only for what is not there.
                    record_response(&span, status, status == 404, "");
                }
                Err(e) => record_failure(&span, failure_type(&e.to_string()), &e.to_string()),
            }
            result
        })
    }
}

/// A short name for a failure without an answer, from its message.
fn failure_type(message: &str) -> &'static str {
    let message = message.to_ascii_lowercase();
    if message.contains("timed out") || message.contains("timeout") {
        "timeout"
    } else {
        "connection"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_urls() {
        let uri: http::Uri = "https://api.mgmt.example:6443/ignored".parse().unwrap();
        let e = Endpoint::of_uri(&uri).unwrap();
        assert_eq!(e, Endpoint::new("https", "api.mgmt.example", Some(6443)));
        assert_eq!(
            e.url("/api/v1/namespaces"),
            "https://api.mgmt.example:6443/api/v1/namespaces"
        );
        let v6 = Endpoint::of_uri(&"http://[::1]/".parse().unwrap()).unwrap();
        assert_eq!(v6.url("/x"), "http://[::1]:80/x");
        assert!(Endpoint::of_uri(&"/relative".parse().unwrap()).is_none());
    }

    #[tokio::test]
    async fn absence_is_expected_only_inside_the_scope() {
        assert!(!absence_expected());
        assert!(expecting_absence(async { absence_expected() }).await);
        assert!(!absence_expected());
    }

    #[test]
    fn failures_without_an_answer_are_named() {
        assert_eq!(failure_type("operation timed out"), "timeout");
        assert_eq!(failure_type("connection refused"), "connection");
    }
}
