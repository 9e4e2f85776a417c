//! The NATS JetStream bus: subject names, streams and KV buckets, the message envelopes every
//! service exchanges, and publishing with `Nats-Msg-Id` de-duplication and `traceparent`.
//!
//! | subject | stream / store | purpose |
//! |---|---|---|
//! | `<p>.<tenant>.cmd.<service>` | `HCP_CMD` (work queue, dedup window) | step commands |
//! | `<p>.<tenant>.evt.<service>` | `HCP_EVT` | completion events from services |
//! | `<p>.<tenant>.saga.start` | `HCP_EVT` | wake-ups for new operations |
//! | `<p>.<tenant>.audit.<cluster>` | `HCP_AUDIT` (limits, long retention) | public lifecycle events |
//! | KV `hcp_sagas`, `hcp_clusters` | JetStream KV | saga state; cluster records |
//! | KV `hcp_active` | JetStream KV | keys of unfinished sagas (the resync's work list) |
#![forbid(unsafe_code)]
// `StepError` is large by design (it keeps Azure's code, message, target and `Retry-After`).
#![allow(clippy::result_large_err)]

pub mod envelope;
pub mod steps;
pub mod subjects;
mod topology;

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, kv};
use hypersaga_telemetry::{TRACEPARENT, TraceParent};
use serde::Serialize;

pub use envelope::*;
pub use steps::*;
pub use subjects::Subjects;
pub use topology::{
    ACTIVE_BUCKET, AUDIT_STREAM, CLUSTERS_BUCKET, CMD_STREAM, EVT_STREAM, SAGAS_BUCKET,
};

/// Errors talking to NATS.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot connect to NATS at {url}")]
    Connect {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("JetStream {what} failed: {message}")]
    JetStream { what: &'static str, message: String },
    #[error("cannot encode message")]
    Encode(#[from] serde_json::Error),
}

impl Error {
    pub(crate) fn js(what: &'static str, e: impl std::fmt::Display) -> Self {
        Self::JetStream {
            what,
            message: e.to_string(),
        }
    }

    /// A short label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Connect { .. } => "connect",
            Self::JetStream { .. } => "jetstream",
            Self::Encode(_) => "encode",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A connection to the bus: core NATS, JetStream and the subject prefix.
#[derive(Clone)]
pub struct Bus {
    client: async_nats::Client,
    js: jetstream::Context,
    subjects: Subjects,
}

impl Bus {
    /// Connects and makes sure the streams and KV buckets exist (idempotent; any replica of
    /// any role may do it at start-up).
    pub async fn connect(url: &str, client_name: &str, prefix: &str) -> Result<Self> {
        let client = async_nats::ConnectOptions::new()
            .name(client_name)
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(5))
            .connect(url)
            .await
            .map_err(|source| Error::Connect {
                url: url.to_owned(),
                source,
            })?;
        let js = jetstream::new(client.clone());
        let bus = Self {
            client,
            js,
            subjects: Subjects::new(prefix),
        };
        topology::ensure(&bus.js, &bus.subjects).await?;
        Ok(bus)
    }

    pub fn subjects(&self) -> &Subjects {
        &self.subjects
    }

    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The saga state bucket.
    pub async fn sagas(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(SAGAS_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_sagas", e))
    }

    /// The index of unfinished sagas (keys only).
    pub async fn active(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(ACTIVE_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_active", e))
    }

    /// The cluster records bucket.
    pub async fn clusters(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(CLUSTERS_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_clusters", e))
    }

    /// Publishes `body` as JSON to a JetStream subject and waits for the stream's ack.
    /// `msg_id` de-duplicates retried publishes within the stream's window.
    pub async fn publish_json<T: Serialize>(
        &self,
        subject: &str,
        msg_id: &str,
        trace: &TraceParent,
        body: &T,
    ) -> Result<()> {
        let payload = serde_json::to_vec(body)?;
        self.publish_raw(subject, msg_id, trace, payload.into())
            .await
    }

    /// Arms the saga's durable timer: at `at`, JetStream publishes `body` on the tenant's
    /// `saga.tick` subject (in `HCP_EVT`, where the coordinator consumes it). One timer per
    /// saga: a later one replaces the earlier (the server rolls the timer subject up).
    pub async fn schedule<T: Serialize>(
        &self,
        tenant: &hypersaga_model::TenantId,
        saga_id: &str,
        at: time::OffsetDateTime,
        msg_id: &str,
        trace: &TraceParent,
        body: &T,
    ) -> Result<Sent> {
        let payload = serde_json::to_vec(body)?;
        let when = at
            .to_offset(time::UtcOffset::UTC)
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| Error::js("format timer", e))?;
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id);
        headers.insert(TRACEPARENT, trace.child().to_string().as_str());
        headers.insert(
            async_nats::header::NATS_SCHEDULE,
            format!("@at {when}").as_str(),
        );
        headers.insert(
            async_nats::header::NATS_SCHEDULE_TARGET,
            self.subjects.saga_tick(tenant).as_str(),
        );
        let ack = self
            .js
            .publish_with_headers(
                self.subjects.saga_timer(tenant, saga_id),
                headers,
                payload.into(),
            )
            .await
            .map_err(|e| Error::js("schedule", e))?;
        Ok(Sent(ack))
    }

    /// As [`Bus::publish_json`], with an already-encoded payload.
    pub async fn publish_raw(
        &self,
        subject: &str,
        msg_id: &str,
        trace: &TraceParent,
        payload: bytes::Bytes,
    ) -> Result<()> {
        self.send_raw(subject, msg_id, trace, payload)
            .await?
            .confirmed()
            .await
    }

    /// Sends `body` as JSON without waiting for the stream's ack: several sends in a row
    /// reach the server in order and cost one round trip, then each [`Sent`] is confirmed.
    pub async fn send_json<T: Serialize>(
        &self,
        subject: &str,
        msg_id: &str,
        trace: &TraceParent,
        body: &T,
    ) -> Result<Sent> {
        let payload = serde_json::to_vec(body)?;
        self.send_raw(subject, msg_id, trace, payload.into()).await
    }

    async fn send_raw(
        &self,
        subject: &str,
        msg_id: &str,
        trace: &TraceParent,
        payload: bytes::Bytes,
    ) -> Result<Sent> {
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id);
        headers.insert(TRACEPARENT, trace.child().to_string().as_str());
        headers.insert("Content-Type", "application/json");
        let ack = self
            .js
            .publish_with_headers(subject.to_owned(), headers, payload)
            .await
            .map_err(|e| Error::js("publish", e))?;
        Ok(Sent(ack))
    }
}

/// A message sent to JetStream whose ack has not been awaited yet.
pub struct Sent(async_nats::jetstream::context::PublishAckFuture);

impl Sent {
    /// Waits for the stream to confirm it stored the message (or de-duplicated it).
    pub async fn confirmed(self) -> Result<()> {
        self.0.await.map_err(|e| Error::js("publish ack", e))?;
        Ok(())
    }
}

/// The trace context of a received message (a new root when it carries none).
pub fn trace_of(headers: Option<&HeaderMap>) -> TraceParent {
    TraceParent::parse_or_new(headers.and_then(|h| h.get(TRACEPARENT)).map(|v| v.as_str()))
}
