//! Tracing and metrics set-up, and W3C trace context.
//!
//! Every bus message carries a `traceparent` header (W3C Trace Context), so one trace id
//! follows a saga from the gateway through the coordinator into every service. With OTLP
//! export on ([`otel`]), the header names the span that sent the message, and the spans of
//! one saga form one trace. Calls to other systems are client spans ([`http`]); a span whose
//! work failed says so ([`mark_error`]).
#![forbid(unsafe_code)]

pub mod http;
pub mod otel;
pub mod probes;
mod recorder;

pub use otel::mark_error;

use std::fmt;

use rand::Rng;

/// The NATS/HTTP header carrying the trace context.
pub const TRACEPARENT: &str = "traceparent";

/// A W3C `traceparent`: version 00, 16-byte trace id, 8-byte parent span id, flags.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    sampled: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid traceparent {0:?}")]
pub struct InvalidTraceParent(pub String);

impl TraceParent {
    /// Starts a new trace (a new operation).
    pub fn new_root() -> Self {
        let mut rng = rand::rng();
        Self {
            trace_id: rng.random(),
            span_id: rng.random(),
            sampled: true,
        }
    }

    /// A new span id in the same trace, for the next hop.
    pub fn child(&self) -> Self {
        Self {
            span_id: rand::rng().random(),
            ..*self
        }
    }

    /// A new span in the trace `trace_id` (32 hex digits), e.g. a saga's stored trace.
    pub fn with_trace_id(trace_id: &str) -> Self {
        match hex(trace_id).and_then(|v| <[u8; 16]>::try_from(v).ok()) {
            Some(id) if id != [0; 16] => Self {
                trace_id: id,
                span_id: rand::rng().random(),
                sampled: true,
            },
            _ => Self::new_root(),
        }
    }

    /// Parses a `traceparent` header value.
    pub fn parse(s: &str) -> Result<Self, InvalidTraceParent> {
        let bad = || InvalidTraceParent(s.to_owned());
        let parts: Vec<&str> = s.trim().split('-').collect();
        if parts.len() != 4 || parts[0] != "00" {
            return Err(bad());
        }
        let trace_id: [u8; 16] = hex(parts[1])
            .and_then(|v| v.try_into().ok())
            .ok_or_else(bad)?;
        let span_id: [u8; 8] = hex(parts[2])
            .and_then(|v| v.try_into().ok())
            .ok_or_else(bad)?;
        let flags = hex(parts[3])
            .and_then(|v| v.first().copied())
            .ok_or_else(bad)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(bad());
        }
        Ok(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    /// Parses, or starts a new trace when the header is absent or malformed.
    pub fn parse_or_new(s: Option<&str>) -> Self {
        s.and_then(|s| Self::parse(s).ok())
            .unwrap_or_else(Self::new_root)
    }

    /// The trace id as 32 lower-case hex digits.
    pub fn trace_id(&self) -> String {
        hex::encode(self.trace_id)
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written into one buffer: this runs for every message the bus sends.
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        let encoded = hex::encode_to_slice(self.trace_id, &mut out[3..35])
            .and_then(|()| hex::encode_to_slice(self.span_id, &mut out[36..52]))
            .and_then(|()| hex::encode_to_slice([u8::from(self.sampled)], &mut out[53..55]));
        match (encoded, std::str::from_utf8(&out)) {
            (Ok(()), Ok(s)) => f.write_str(s),
            _ => Err(fmt::Error),
        }
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2)
        || !s
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        return None;
    }
    hex::decode(s).ok()
}

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Installs the global tracing subscriber: `RUST_LOG`-style `filter` (e.g. `info,hypersaga=debug`)
/// and the chosen format, writing to stderr. Safe to call twice (the second call does nothing).
/// Exports no spans: for the tools around the services (emulators, `dev`).
pub fn init(filter: &str, format: LogFormat) {
    let _ = install(filter, format, None);
}

/// As [`init`], for a process that is one of the system's roles (`service` is
/// `hypersaga-<role>`): with span export and metric export over OTLP when the environment
/// asks for them ([`otel::export_requested`], [`otel::metrics_export_requested`]), and the
/// metrics recorder ([`probes::metrics`]) installed with `hypersaga_build_info`. Must run
/// inside the Tokio runtime. Keep the returned value until the process ends: dropping it
/// flushes the last spans and metrics.
pub fn init_service(
    service: &str,
    filter: &str,
    format: LogFormat,
) -> Result<otel::Exporting, otel::ExportError> {
    let resource = otel::resource(service);
    let traces = otel::export_requested()
        .then(|| otel::provider(resource.clone()))
        .transpose()?;
    let (meters, recorder) = match otel::metrics_export_requested() {
        true => {
            let (provider, recorder) = otel::meter_provider(resource)?;
            (Some(provider), Some(recorder))
        }
        false => (None, None),
    };
    recorder::install(recorder);
    recorder::build_info(service.strip_prefix("hypersaga-").unwrap_or(service));
    install(filter, format, traces.as_ref());
    Ok(otel::Exporting::new(traces, meters))
}

fn install(
    filter: &str,
    format: LogFormat,
    provider: Option<&opentelemetry_sdk::trace::SdkTracerProvider>,
) -> bool {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours only on a terminal: log files and collectors get plain text.
        .with_ansi(std::io::stderr().is_terminal());
    let fmt = match format {
        LogFormat::Text => fmt.with_target(false).boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    // Each layer filters for itself: the log's filter does not decide what is exported.
    let exporting = provider
        .map(|p| otel::layer(p).with_filter(tracing_subscriber::filter::filter_fn(otel::exported)));
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(exporting)
        .try_init()
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_children_keep_the_trace() {
        let root = TraceParent::new_root();
        let header = root.to_string();
        assert_eq!(TraceParent::parse(&header).unwrap(), root);
        let child = root.child();
        assert_eq!(child.trace_id(), root.trace_id());
        assert_ne!(child.to_string(), header);
    }

    #[test]
    fn rejects_malformed_headers() {
        for bad in [
            "",
            "00-xyz-abc-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad).is_err(), "{bad}");
        }
        // The W3C Trace Context examples, written back exactly as read.
        for good in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        ] {
            assert_eq!(TraceParent::parse(good).unwrap().to_string(), good);
        }
    }
}
