//! Tracing set-up and W3C traceparent propagation over NATS headers.
#![forbid(unsafe_code)]
