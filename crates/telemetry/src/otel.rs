//! OpenTelemetry: span export over OTLP, and the bridge between the bus's `traceparent` and the
//! spans of `tracing`.
//!
//! Export is switched on by the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_TRACES_EXPORTER=none` switches it off again), so
//! a deployment configures it the way it configures every other OpenTelemetry SDK. Without
//! it no OpenTelemetry layer is installed and a span costs what it always did.
//!
//! With export on, each hop's span is the parent of the next: a message's `traceparent` names
//! the span that sent it ([`outgoing`]), and the receiver's span takes it as its parent
//! ([`adopt`]). One saga is then one trace: the gateway's request, each coordinator
//! transition, each worker's step and each ARM and Kubernetes call inside it.

use std::time::Duration;

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::TraceParent;

/// The variables that name an OTLP endpoint; either switches export on.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// How long shutdown waits for the last spans to leave.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why spans cannot be exported.
#[derive(Debug, thiserror::Error)]
#[error("cannot export traces over OTLP: {0}")]
pub struct ExportError(String);

/// Whether the environment asks for span export.
pub fn export_requested() -> bool {
    let off = std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.trim() == "none");
    !off && ENDPOINT_VARS
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}

/// A tracer provider exporting in batches over OTLP/gRPC to the endpoint the environment
/// names, as `service` (unless `OTEL_SERVICE_NAME` says otherwise). Must run inside the Tokio
/// runtime, whose tasks carry the exporter's connection.
pub(crate) fn provider(service: &str) -> Result<SdkTracerProvider, ExportError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
        .map_err(|e| ExportError(e.to_string()))?;
    // The builder's detectors read OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; ours is
    // only the default.
    let mut resource = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(service.to_owned());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// The `tracing` layer that turns spans into OpenTelemetry spans of `provider`.
pub(crate) fn layer<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("hypersaga"))
        .with_error_records_to_exceptions(true)
}

/// What is exported: our spans and events at info and above, and kube's HTTP spans (debug,
/// one per call to the management cluster), whatever the log filter says.
pub(crate) fn exported(meta: &tracing::Metadata<'_>) -> bool {
    *meta.level() <= tracing::Level::INFO
        || (meta.is_span() && meta.target().starts_with("kube_client"))
}

/// Flushes and stops export when dropped (at the end of `main`).
#[must_use = "dropping it stops span export"]
pub struct Exporting(Option<SdkTracerProvider>);

impl Exporting {
    pub(crate) fn new(provider: Option<SdkTracerProvider>) -> Self {
        Self(provider)
    }

    /// Whether spans are being exported.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for Exporting {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            eprintln!("could not flush the last spans: {e}");
        }
    }
}

impl TraceParent {
    fn span_context(&self) -> SpanContext {
        let flags = if self.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanContext::new(
            TraceId::from_bytes(self.trace_id),
            SpanId::from_bytes(self.span_id),
            flags,
            true,
            TraceState::default(),
        )
    }

    fn of_span(span: &tracing::Span) -> Option<Self> {
        let cx = span.context();
        let sc = cx.span().span_context().clone();
        sc.is_valid().then(|| Self {
            trace_id: sc.trace_id().to_bytes(),
            span_id: sc.span_id().to_bytes(),
            sampled: sc.is_sampled(),
        })
    }
}

/// The trace context to send with a message about `trace`: the current span when it belongs
/// to that trace (so the receiver's span becomes its child), else a fresh span id in `trace`.
pub fn outgoing(trace: &TraceParent) -> TraceParent {
    match TraceParent::of_span(&tracing::Span::current()) {
        Some(current) if current.trace_id == trace.trace_id => current,
        _ => trace.child(),
    }
}

/// The current span's trace context, when spans are exported (`None` otherwise).
pub fn current() -> Option<TraceParent> {
    TraceParent::of_span(&tracing::Span::current())
}

/// Makes `span` a child of the remote span `parent` (the sender of a message, a caller).
/// Must be called before the span is first entered; without export it does nothing.
pub fn adopt(span: &tracing::Span, parent: &TraceParent) {
    let cx = opentelemetry::Context::new().with_remote_span_context(parent.span_context());
    // Without the layer (export off) there is nothing to set: not an error.
    let _ = span.set_parent(cx);
}
