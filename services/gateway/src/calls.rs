//! Every gRPC call the gateway answers, as a server span and in its metrics, by method and
//! status code.
//!
//! The span follows OpenTelemetry's conventions for gRPC servers (`hypersaga_telemetry::otel::
//! SEMCONV_VERSION`): kind `SERVER`, named `hypersaga.v1.ClusterService/CreateCluster`, with
//! `rpc.system`, `rpc.service`, `rpc.method` and `rpc.grpc.status_code`; only the codes that
//! say the server failed (`UNKNOWN`, `DEADLINE_EXCEEDED`, `UNIMPLEMENTED`, `INTERNAL`,
//! `UNAVAILABLE`, `DATA_LOSS`) make it an error — a refused or invalid request is the caller's.
//! It continues the caller's trace when its `traceparent` metadata names one.
//!
//! The code comes in the response's headers when the call fails at once, else in the trailers
//! after the last message; a call whose response is dropped first (the caller went away)
//! counts as `CANCELLED`. The metrics are `hypersaga_gateway_requests_total` and
//! `hypersaga_gateway_request_duration_seconds` (to the end of the call: a watch's stream is
//! as long as it lasts), by `method` and `code`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http_body::{Body, Frame, SizeHint};
use tracing::Instrument as _;

/// The codes of a server's own failures (an error span); the others are the caller's.
const SERVER_FAULTS: [i32; 6] = [2, 4, 12, 13, 14, 15];

/// `UNIMPLEMENTED`: the method named is none of ours. Its name is not a label.
const UNIMPLEMENTED: i32 = 12;

/// gRPC's status codes by number, as the conventions and `grpc-status` write them.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

fn code_name(code: i32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|c| CODES.get(c))
        .copied()
        .unwrap_or("UNKNOWN")
}

/// The `grpc-status` in `headers` (a response's, or its trailers).
fn grpc_status(headers: &http::HeaderMap) -> Option<i32> {
    headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The layer that spans and counts every call.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Calls;

impl<S> tower::Layer<S> for Calls {
    type Service = CallService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CallService { inner }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct CallService<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<http::Request<B>> for CallService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Body + Unpin + Send + 'static,
{
    type Response = http::Response<CallBody<R>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let mut call = Call::start(req.uri().path(), req.headers());
        let span = call.span.clone();
        let answer = span.in_scope(|| self.inner.call(req));
        Box::pin(
            async move {
                match answer.await {
                    Ok(response) => Ok(call.respond(response)),
                    Err(e) => {
                        // Turned into a status outside this layer; not one we can read.
                        call.finish(2);
                        Err(e)
                    }
                }
            }
            .instrument(span),
        )
    }
}

/// One call, until its status is known.
struct Call {
    span: tracing::Span,
    /// `<package>.<service>/<method>`.
    method: String,
    started: Instant,
    finished: bool,
}

impl Call {
    fn start(path: &str, headers: &http::HeaderMap) -> Self {
        let method = path.trim_start_matches('/').to_owned();
        let (rpc_service, rpc_method) = method.split_once('/').unwrap_or((&method, ""));
        let span = tracing::info_span!(
            "grpc",
            otel.name = %method,
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = rpc_service,
            rpc.method = rpc_method,
            rpc.grpc.status_code = tracing::field::Empty,
        );
        if let Some(caller) = crate::service::caller_trace(headers) {
            hypersaga_telemetry::otel::adopt(&span, &caller);
        }
        Self {
            span,
            method,
            started: Instant::now(),
            finished: false,
        }
    }

    /// The response's headers: the code, when the call failed at once; else the body carries
    /// the call on to its trailers.
    fn respond<R>(mut self, response: http::Response<R>) -> http::Response<CallBody<R>> {
        match grpc_status(response.headers()) {
            Some(code) => {
                self.finish(code);
                response.map(|inner| CallBody { inner, call: None })
            }
            None => response.map(|inner| CallBody {
                inner,
                call: Some(self),
            }),
        }
    }

    fn finish(&mut self, code: i32) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let name = code_name(code);
        self.span.record("rpc.grpc.status_code", code);
        let method = if code == UNIMPLEMENTED {
            // Whatever the caller asked for: neither a label nor a span name.
            self.span.record("otel.name", "grpc");
            "_OTHER".to_owned()
        } else {
            self.method.clone()
        };
        if SERVER_FAULTS.contains(&code) {
            hypersaga_telemetry::mark_error(&self.span, name, "");
        }
        metrics::counter!(
            "hypersaga_gateway_requests_total",
            "method" => method.clone(),
            "code" => name,
        )
        .increment(1);
        metrics::histogram!(
            "hypersaga_gateway_request_duration_seconds",
            "method" => method,
            "code" => name,
        )
        .record(self.started.elapsed().as_secs_f64());
    }
}

impl Drop for Call {
    /// A call whose response went before its status: the caller cancelled it.
    fn drop(&mut self) {
        self.finish(1);
    }
}

/// A response body that finishes its call at the trailers (or at its end, or when dropped).
pub(crate) struct CallBody<B> {
    inner: B,
    call: Option<Call>,
}

impl<B: Body + Unpin> Body for CallBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(grpc_status)
                    && let Some(mut call) = self.call.take()
                {
                    call.finish(code);
                }
            }
            // The body failed: the call did not end as the server meant it to.
            Poll::Ready(Some(Err(_))) => {
                if let Some(mut call) = self.call.take() {
                    call.finish(2);
                }
            }
            // Ended with no status: gRPC reads that as UNKNOWN.
            Poll::Ready(None) => {
                if let Some(mut call) = self.call.take() {
                    call.finish(2);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_as_grpc_names_them() {
        assert_eq!(code_name(0), "OK");
        assert_eq!(code_name(5), "NOT_FOUND");
        assert_eq!(code_name(16), "UNAUTHENTICATED");
        assert_eq!(code_name(99), "UNKNOWN");
        assert_eq!(code_name(-1), "UNKNOWN");
        let mut headers = http::HeaderMap::new();
        assert_eq!(grpc_status(&headers), None);
        headers.insert("grpc-status", http::HeaderValue::from_static("5"));
        assert_eq!(grpc_status(&headers), Some(5));
    }
}
