//! OpenTelemetry: span and metric export over OTLP, and the bridge between the bus's
//! `traceparent` and the spans of `tracing`.
//!
//! Export is switched on by the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, or the
//! per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`;
//! `OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` switch a signal off again), so a
//! deployment configures it the way it configures every other OpenTelemetry SDK. Without it
//! no OpenTelemetry layer is installed and a span costs what it always did.
//!
//! With export on, each hop's span is the parent of the next: a message's `traceparent` names
//! the span that sent it ([`outgoing`]), and the receiver's span takes it as its parent
//! ([`adopt`]). One saga is then one trace: the gateway's request, each coordinator
//! transition, each worker's step and each ARM and Kubernetes call inside it.
//!
//! Attribute names follow one version of OpenTelemetry's semantic conventions,
//! [`SEMCONV_VERSION`], whose schema URL every resource carries.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::TraceParent;

/// The version of OpenTelemetry's semantic conventions whose attribute names the spans and
/// resources use. v1.37.0 is the last in which gRPC spans carry `rpc.grpc.status_code` as the
/// numeric code, which tracing back ends and service graphs read; its HTTP attributes
/// (`http.request.method`, `http.response.status_code`, `server.address`, `error.type`) are
/// the stable ones every later version keeps.
pub const SEMCONV_VERSION: &str = "1.37.0";

/// The schema URL of [`SEMCONV_VERSION`], carried by every exported resource.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.37.0";

/// The variables that name an OTLP endpoint for spans; either switches span export on.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The variables that name an OTLP endpoint for metrics; either switches metric export on.
const METRICS_ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The tracer of the exported spans that are not `tracing` spans (an operation's span, made
/// when it ends, from its start); set once export is on.
static TRACER: OnceLock<opentelemetry_sdk::trace::Tracer> = OnceLock::new();

/// How long shutdown waits for the last spans to leave.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why spans cannot be exported.
#[derive(Debug, thiserror::Error)]
#[error("cannot export traces over OTLP: {0}")]
pub struct ExportError(String);

/// Whether the environment asks for span export.
pub fn export_requested() -> bool {
    requested("OTEL_TRACES_EXPORTER", &ENDPOINT_VARS)
}

/// Whether the environment asks for metric export over OTLP.
pub fn metrics_export_requested() -> bool {
    requested("OTEL_METRICS_EXPORTER", &METRICS_ENDPOINT_VARS)
}

fn requested(exporter: &str, endpoints: &[&str]) -> bool {
    let off = std::env::var(exporter).is_ok_and(|v| v.trim() == "none");
    !off && endpoints
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}

/// Whether spans are exported (the process's provider is installed).
pub fn exporting() -> bool {
    TRACER.get().is_some()
}

/// What every exported span and metric says about the process: `service.name` (`service`,
/// unless `OTEL_SERVICE_NAME` says otherwise), `service.version` (the build's) and
/// `service.instance.id` (new for each process, so replicas can be told apart), under the
/// schema URL of the conventions the attributes follow. `OTEL_RESOURCE_ATTRIBUTES` overrides
/// any of them.
pub(crate) fn resource(service: &str) -> Resource {
    use opentelemetry_sdk::resource::{EnvResourceDetector, TelemetryResourceDetector};
    let name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| service.to_owned());
    let ours = [
        KeyValue::new("service.name", name.clone()),
        KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        KeyValue::new("service.instance.id", instance_id().to_string()),
    ];
    let resource = Resource::builder_empty()
        .with_schema_url(ours, SCHEMA_URL)
        .with_detectors(&[
            Box::new(TelemetryResourceDetector),
            Box::new(EnvResourceDetector::new()),
        ]);
    // The conventions rank OTEL_SERVICE_NAME above OTEL_RESOURCE_ATTRIBUTES.
    match std::env::var("OTEL_SERVICE_NAME") {
        Ok(n) if !n.trim().is_empty() => resource.with_service_name(name),
        _ => resource,
    }
    .build()
}

/// This process's `service.instance.id`: a random UUID (version 4), as the conventions
/// recommend when no stable id is at hand; made once.
fn instance_id() -> uuid::Uuid {
    static ID: OnceLock<uuid::Uuid> = OnceLock::new();
    *ID.get_or_init(uuid::Uuid::new_v4)
}

/// A tracer provider exporting in batches over OTLP/gRPC to the endpoint the environment
/// names, with `resource`. Must run inside the Tokio runtime, whose tasks carry the
/// exporter's connection.
pub(crate) fn provider(resource: Resource) -> Result<SdkTracerProvider, ExportError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
        .map_err(|e| ExportError(e.to_string()))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let _ = TRACER.set(provider.tracer("hypersaga"));
    Ok(provider)
}

/// A meter provider exporting the process's `metrics` over OTLP/gRPC every
/// `OTEL_METRIC_EXPORT_INTERVAL` (60 s unless set), with `resource`, and the recorder that
/// feeds it. Histograms get the same buckets as on `/metrics`. Must run inside the Tokio
/// runtime.
pub(crate) fn meter_provider(
    resource: Resource,
) -> Result<(SdkMeterProvider, metrics_exporter_opentelemetry::Recorder), ExportError> {
    use opentelemetry_sdk::metrics::{Aggregation, Instrument, InstrumentKind, Stream};
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_tonic()
        .build()
        .map_err(|e| ExportError(e.to_string()))?;
    let buckets = |i: &Instrument| {
        if i.kind() != InstrumentKind::Histogram {
            return None;
        }
        Stream::builder()
            .with_aggregation(Aggregation::ExplicitBucketHistogram {
                boundaries: crate::recorder::buckets(i.name()).to_vec(),
                record_min_max: true,
            })
            .build()
            .ok()
    };
    Ok(
        metrics_exporter_opentelemetry::Recorder::builder("hypersaga")
            .with_meter_provider(|b| {
                b.with_resource(resource)
                    .with_periodic_exporter(exporter)
                    .with_view(buckets)
            })
            .build(),
    )
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
        // A span's status says what its code decided ([`crate::mark_error`]), not whether an
        // event in it carried an `error` field: a handled or retried error is not a failure.
        .with_error_events_to_status(false)
}

/// What is exported: our spans and events at info and above, whatever the log filter says.
/// (kube's own HTTP spans are debug, and not exported: [`crate::http::ClientSpans`] makes the
/// management-cluster calls' client spans.)
pub(crate) fn exported(meta: &tracing::Metadata<'_>) -> bool {
    *meta.level() <= tracing::Level::INFO
}

/// Flushes and stops export when dropped (at the end of `main`).
#[must_use = "dropping it stops span and metric export"]
pub struct Exporting {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
}

impl Exporting {
    pub(crate) fn new(
        traces: Option<SdkTracerProvider>,
        metrics: Option<SdkMeterProvider>,
    ) -> Self {
        Self { traces, metrics }
    }

    /// Whether spans are being exported.
    pub fn is_on(&self) -> bool {
        self.traces.is_some()
    }

    /// Whether metrics are being exported over OTLP.
    pub fn metrics_on(&self) -> bool {
        self.metrics.is_some()
    }
}

impl Drop for Exporting {
    fn drop(&mut self) {
        if let Some(provider) = self.traces.take()
            && let Err(e) = provider.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            eprintln!("could not flush the last spans: {e}");
        }
        if let Some(provider) = self.metrics.take()
            && let Err(e) = provider.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            eprintln!("could not flush the last metrics: {e}");
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

/// An operation that has ended, as one span from its start to its end: the top of what the
/// operation did, below the call that started it.
///
/// The operation outlives any process's `tracing` span (it runs across many transitions,
/// replicas and restarts), so its span is made whole when it ends, with the start time it
/// had.
pub struct OperationSpan<'a> {
    /// The span's name (`create cluster`).
    pub name: String,
    /// The span that started the operation (the gateway's call), when known; else the span is
    /// put in `trace_id` under an unexported parent.
    pub parent: Option<TraceParent>,
    /// The operation's trace (32 hex digits).
    pub trace_id: &'a str,
    pub start: SystemTime,
    pub end: SystemTime,
    /// String attributes (`tenant`, `cluster`, `operation`…).
    pub attributes: Vec<(&'static str, String)>,
    /// When the operation failed: the error's code (`error.type`) and message (the status
    /// description).
    pub error: Option<(&'a str, &'a str)>,
}

/// Exports `op` (nothing when spans are not exported).
pub fn record_operation(op: OperationSpan<'_>) {
    let Some(tracer) = TRACER.get() else {
        return;
    };
    let parent = op
        .parent
        .unwrap_or_else(|| TraceParent::with_trace_id(op.trace_id));
    let cx = opentelemetry::Context::new().with_remote_span_context(parent.span_context());
    let mut span = tracer
        .span_builder(op.name)
        .with_kind(SpanKind::Internal)
        .with_start_time(op.start)
        .with_attributes(op.attributes.into_iter().map(|(k, v)| KeyValue::new(k, v)))
        .start_with_context(tracer, &cx);
    if let Some((code, message)) = op.error {
        span.set_attribute(KeyValue::new("error.type", code.to_owned()));
        span.set_status(Status::error(message.to_owned()));
    }
    span.end_with_timestamp(op.end);
}

/// Sets `span`'s status to error, with `error_type` as its `error.type` (an error code, an
/// HTTP status, a gRPC code) and `description` as the status description (empty when the type
/// says it all). Without export it does nothing.
pub fn mark_error(span: &tracing::Span, error_type: &str, description: &str) {
    span.set_attribute("error.type", error_type.to_owned());
    span.set_status(Status::error(description.to_owned()));
}

/// Sets a string attribute of `span` that only the exported span needs (the log does without).
/// Without export it does nothing.
pub fn set_attribute(span: &tracing::Span, key: &'static str, value: impl Into<String>) {
    span.set_attribute(key, value.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_names_the_service_its_version_and_this_process() {
        let resource = resource("hypersaga-test");
        let get = |k: &'static str| resource.get(&opentelemetry::Key::from_static_str(k));
        if std::env::var("OTEL_SERVICE_NAME").is_err() {
            assert_eq!(get("service.name"), Some("hypersaga-test".into()));
        }
        assert_eq!(
            get("service.version"),
            Some(env!("CARGO_PKG_VERSION").into())
        );
        let id = get("service.instance.id").expect("instance id").to_string();
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
        assert_eq!(resource.schema_url(), Some(SCHEMA_URL));
        assert!(SCHEMA_URL.ends_with(SEMCONV_VERSION));
    }
}
