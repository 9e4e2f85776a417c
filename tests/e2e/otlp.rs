//! An OTLP/gRPC trace receiver for the tests: what a collector would get, kept in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;

/// One span as received, with the service that sent it.
#[derive(Clone, Debug)]
pub struct Span {
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub attributes: BTreeMap<String, String>,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

#[derive(Default, Clone)]
struct Sink(Arc<Mutex<Vec<Span>>>);

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut got = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|r| attributes(&r.attributes).remove("service.name"))
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    got.push(Span {
                        service: service.clone(),
                        name: span.name,
                        trace_id: hex::encode(span.trace_id),
                        span_id: hex::encode(span.span_id),
                        parent_span_id: hex::encode(span.parent_span_id),
                        attributes: attributes(&span.attributes),
                    });
                }
            }
        }
        self.0.lock().expect("spans").extend(got);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
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
        let service = TraceServiceServer::new(sink.clone());
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
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
        self.sink.0.lock().expect("spans").clone()
    }
}
