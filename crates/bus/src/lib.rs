//! The NATS JetStream bus: subjects, streams, KV buckets, envelopes, traceparent headers.
#![forbid(unsafe_code)]
