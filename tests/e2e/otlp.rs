//! An OTLP/gRPC receiver for the tests (traces and metrics): what a collector would get, kept
//! in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;

/// OTLP's span kinds, as numbered in the protocol.
pub const KIND_SERVER: i32 = 2;
pub const KIND_CLIENT: i32 = 3;

/// OTLP's span status codes.
pub const STATUS_UNSET: i32 = 0;
pub const STATUS_ERROR: i32 = 2;

/// One span as received, with the resource that sent it.
#[derive(Clone, Debug)]
pub struct Span {
    pub service: String,
    /// The sender's resource attributes (`service.version`, `service.instance.id`…).
    pub resource: BTreeMap<String, String>,
    /// The resource's schema URL.
    pub schema_url: String,
    pub name: String,
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub attributes: BTreeMap<String, String>,
    pub status_code: i32,
    pub status_message: String,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    pub fn is_error(&self) -> bool {
        self.status_code == STATUS_ERROR
    }
}

/// One metric as received: who sent it, its name, what it is.
#[derive(Clone, Debug)]
pub struct Metric {
    pub service: String,
    pub name: String,
    /// `gauge`, `sum`, `histogram`, `exponential_histogram` or `summary`.
    pub data: &'static str,
    /// For a histogram: the bucket bounds of its first data point.
    pub bounds: Vec<f64>,
}

#[derive(Default, Clone)]
struct Sink {
    spans: Arc<Mutex<Vec<Span>>>,
    metrics: Arc<Mutex<Vec<Metric>>>,
}

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut got = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans
                .resource
                .as_ref()
                .map(|r| attributes(&r.attributes))
                .unwrap_or_default();
            let service = resource.get("service.name").cloned().unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    let status = span.status.clone().unwrap_or_default();
                    got.push(Span {
                        service: service.clone(),
                        resource: resource.clone(),
                        schema_url: resource_spans.schema_url.clone(),
                        name: span.name,
                        kind: span.kind,
                        trace_id: hex::encode(span.trace_id),
                        span_id: hex::encode(span.span_id),
                        parent_span_id: hex::encode(span.parent_span_id),
                        attributes: attributes(&span.attributes),
                        status_code: status.code,
                        status_message: status.message,
                    });
                }
            }
        }
        self.spans.lock().expect("spans").extend(got);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let mut got = Vec::new();
        for resource_metrics in request.into_inner().resource_metrics {
            let service = resource_metrics
                .resource
                .as_ref()
                .and_then(|r| attributes(&r.attributes).remove("service.name"))
                .unwrap_or_default();
            for scope in resource_metrics.scope_metrics {
                for metric in scope.metrics {
                    let (data, bounds) = match &metric.data {
                        Some(Data::Gauge(_)) => ("gauge", Vec::new()),
                        Some(Data::Sum(_)) => ("sum", Vec::new()),
                        Some(Data::Histogram(h)) => (
                            "histogram",
                            h.data_points
                                .first()
                                .map(|p| p.explicit_bounds.clone())
                                .unwrap_or_default(),
                        ),
                        Some(Data::ExponentialHistogram(_)) => {
                            ("exponential_histogram", Vec::new())
                        }
                        Some(Data::Summary(_)) => ("summary", Vec::new()),
                        None => ("none", Vec::new()),
                    };
                    got.push(Metric {
                        service: service.clone(),
                        name: metric.name,
                        data,
                        bounds,
                    });
                }
            }
        }
        self.metrics.lock().expect("metrics").extend(got);
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

/// A receiver on a free loopback port; stops when dropped.
pub struct Receiver {
    pub endpoint: String,
    sink: Sink,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let sink = Sink::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let traces = TraceServiceServer::new(sink.clone());
        let metrics = MetricsServiceServer::new(sink.clone());
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(traces)
                .add_service(metrics)
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    async {
                        let _ = stopped.await;
                    },
                )
                .await;
        });
        Receiver {
            endpoint,
            sink,
            _stop: stop,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.sink.spans.lock().expect("spans").clone()
    }

    /// Every metric received so far (one entry per metric per export).
    pub fn metrics(&self) -> Vec<Metric> {
        self.sink.metrics.lock().expect("metrics").clone()
    }
}
