//! The NATS JetStream bus: subject names, streams and KV buckets, the message envelopes every
//! service exchanges, and publishing with `Nats-Msg-Id` de-duplication and `traceparent`.
//!
//! | subject | stream / store | purpose |
//! |---|---|---|
//! | `<p>.<tenant>.cmd.<service>` | `HCP_CMD` (work queue, dedup window) | step commands |
//! | `<p>.<tenant>.evt.<service>` | `HCP_EVT` | completion events from services |
//! | `<p>.<tenant>.saga.start` | `HCP_EVT` | wake-ups for new operations |
//! | `<p>.<tenant>.audit.<cluster>` | `HCP_AUDIT` (limits, long retention) | public lifecycle events |
//! | `<p>.<tenant>.plan.<service>` | none (request and reply) | what an operation would do ([`plan`]) |
//! | `<p>.<tenant>.sweep.<service>` | none (request and reply) | what a service made, by tags and labels ([`sweep`]) |
//! | `<p>.<tenant>.dead.<role>` | `HCP_DEAD` (30 days) | messages refused unread or given up on ([`dead`]) |
//! | `<p>.<tenant>.saga.redrive` | `HCP_EVT` | an admin's request to send a dead letter again |
//! | KV `hcp_sagas`, `hcp_clusters` | JetStream KV | saga state; cluster records |
//! | KV `hcp_active` | JetStream KV | keys of unfinished sagas (the resync's work list) |
//! | KV `hcp_tenants` | JetStream KV | onboarded tenants, followed live by every role |
#![forbid(unsafe_code)]
// `StepError` is large by design (it keeps Azure's code, message, target and `Retry-After`).
#![allow(clippy::result_large_err)]

pub mod access;
pub mod callout;
pub mod dead;
pub mod envelope;
pub mod plan;
pub mod steps;
pub mod subjects;
pub mod sweep;
mod topology;

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, kv};
use hypersaga_telemetry::{TRACEPARENT, TraceParent};
use serde::Serialize;

pub use access::{Permissions, Role};
pub use dead::{
    DEAD_CODE_HEADER, DEAD_CONSUMER_HEADER, DEAD_REASON_HEADER, DEAD_ROLE_HEADER,
    DEAD_SUBJECT_HEADER, DeadCode, DeadLetter, REDRIVEN_FROM_HEADER, RedriveRequest, Redriven,
    Refused,
};
pub use envelope::*;
pub use steps::*;
pub use subjects::Subjects;
pub use topology::{
    ACTIVE_BUCKET, ADDONS_BUCKET, AUDIT_STREAM, BUDGETS_BUCKET, CLUSTERS_BUCKET, CMD_STREAM,
    DEAD_STREAM, DEDUP_WINDOW, EVT_STREAM, MANAGEMENT_BUCKET, ROLLOUTS_BUCKET, SAGAS_BUCKET,
    TENANTS_BUCKET,
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
    #[error("invalid NATS server URL {url:?}: {message}")]
    BadUrl { url: String, message: String },
    #[error("JetStream {what} failed: {message}")]
    JetStream { what: &'static str, message: String },
    #[error("cannot encode message")]
    Encode(#[from] serde_json::Error),
    #[error("cannot read the bus credentials of role {role} at {path}")]
    Credentials {
        role: String,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
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
            Self::Connect { .. } | Self::BadUrl { .. } => "connect",
            Self::JetStream { .. } => "jetstream",
            Self::Encode(_) => "encode",
            Self::Credentials { .. } => "credentials",
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
    /// Connects to an open bus (no credentials, no TLS) and makes sure the streams and KV
    /// buckets exist (idempotent). For tests and benches that run their own nats-server.
    pub async fn connect(url: &str, client_name: &str, prefix: &str) -> Result<Self> {
        let options = async_nats::ConnectOptions::new().name(client_name);
        let bus = Self::from_client(open(url, options).await?, prefix);
        topology::ensure(&bus.js, &bus.subjects, 1).await?;
        Ok(bus)
    }

    /// Connects as `role` with its credentials. The coordinator makes sure the streams and
    /// buckets exist and match this version at `replicas` copies each; every other role waits
    /// until they exist.
    pub async fn connect_as(
        url: &str,
        prefix: &str,
        role: &Role,
        access: &Access,
        replicas: usize,
    ) -> Result<Self> {
        let client = client_as(url, role, access).await?;
        let bus = Self::from_client(client, prefix);
        if matches!(role, Role::Coordinator | Role::Worker(_)) {
            // Shown from zero: the first dead letter is then an increase a rule can see.
            metrics::counter!("hypersaga_dead_letters_total", "role" => role.name()).increment(0);
        }
        if role.owns_topology() || access.is_open() {
            topology::ensure(&bus.js, &bus.subjects, replicas).await?;
        } else {
            topology::wait_for(&bus.js).await?;
        }
        Ok(bus)
    }

    /// Connects as `role`, as the configuration's `nats` section says.
    pub async fn connect_configured(
        nats: &hypersaga_config::NatsConfig,
        role: &Role,
    ) -> Result<Self> {
        let access = Access::for_role(
            nats.credentials_dir.as_deref(),
            role,
            nats.ca_file.as_deref(),
        )?;
        Self::connect_as(&nats.url, &nats.prefix, role, &access, nats.replicas).await
    }

    fn from_client(client: async_nats::Client, prefix: &str) -> Self {
        let js = jetstream::new(client.clone());
        Self {
            client,
            js,
            subjects: Subjects::new(prefix),
        }
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
    /// Tenants' rollouts, by `<tenant>.<id>`.
    pub async fn rollouts(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(ROLLOUTS_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_rollouts", e))
    }

    /// The add-on catalog, by `<owner>.<name>.<version>`.
    pub async fn addons(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(ADDONS_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_addons", e))
    }

    /// The management clusters, by name.
    pub async fn management(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(MANAGEMENT_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_management", e))
    }

    /// The onboarded tenants, by id.
    pub async fn tenants(&self) -> Result<kv::Store> {
        self.js
            .get_key_value(TENANTS_BUCKET)
            .await
            .map_err(|e| Error::js("open KV hcp_tenants", e))
    }

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
        headers.insert(
            TRACEPARENT,
            hypersaga_telemetry::otel::outgoing(trace)
                .to_string()
                .as_str(),
        );
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
        headers.insert(
            TRACEPARENT,
            hypersaga_telemetry::otel::outgoing(trace)
                .to_string()
                .as_str(),
        );
        headers.insert("Content-Type", "application/json");
        let ack = self
            .js
            .publish_with_headers(subject.to_owned(), headers, payload)
            .await
            .map_err(|e| Error::js("publish", e))?;
        Ok(Sent(ack))
    }
}

/// A plain NATS connection as `role`: for readers that need no streams of their own (an audit
/// subscriber may look at the audit stream and nothing else).
pub async fn client_as(url: &str, role: &Role, access: &Access) -> Result<async_nats::Client> {
    let mut options = async_nats::ConnectOptions::new()
        .name(format!("hypersaga-{}", role.name()))
        .custom_inbox_prefix(role.inbox_prefix());
    if let Some(seed) = &access.nkey_seed {
        options = options.nkey(seed.clone());
    }
    if let Some(password) = &access.password {
        // A tenant's reader: the callout knows it by its role's name.
        options = options.user_and_password(role.name(), password.clone());
    }
    if let Some(ca) = &access.ca_file {
        options = options.add_root_certificates(ca.clone()).require_tls(true);
    }
    open(url, options).await
}

async fn open(url: &str, options: async_nats::ConnectOptions) -> Result<async_nats::Client> {
    options
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5))
        // A permission the server refuses shows up here, not at the call that needed it
        // (which only times out): say it loudly.
        .event_callback(|event| async move {
            match event {
                async_nats::Event::ServerError(e) => {
                    tracing::error!(error = %e, "the NATS server refused an operation")
                }
                async_nats::Event::Disconnected => tracing::warn!("disconnected from NATS"),
                other => tracing::debug!(event = %other, "NATS connection event"),
            }
        })
        .connect(servers(url)?)
        .await
        .map_err(|source| Error::Connect {
            url: url.to_owned(),
            source,
        })
}

/// The servers of `url`: one URL, or several separated by commas (a cluster's, any of which
/// will do; the client fails over between them).
fn servers(url: &str) -> Result<Vec<async_nats::ServerAddr>> {
    url.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|u| {
            u.parse::<async_nats::ServerAddr>()
                .map_err(|e| Error::BadUrl {
                    url: u.to_owned(),
                    message: e.to_string(),
                })
        })
        .collect()
}

/// How a role authenticates to the bus and trusts it.
#[derive(Clone, Default)]
pub struct Access {
    /// The role's nkey seed (`S…`); `None` on an open bus.
    pub nkey_seed: Option<String>,
    /// A tenant reader's password (issued at onboarding; the callout checks it), sent with the
    /// role's name as user.
    pub password: Option<String>,
    /// CA bundle that signed the server's certificate; set, the connection requires TLS.
    pub ca_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Access {
    // The seed is a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("nkey_seed", &self.nkey_seed.as_ref().map(|_| "<redacted>"))
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl Access {
    /// The credentials of `role` kept in `dir`, as `hypersaga dev` and the deployment's
    /// per-role Secret lay them out: `<dir>/<role>.nk`, an nkey seed, for hypersaga's roles;
    /// `<dir>/audit-<tenant>.secret`, the password issued at onboarding, for a tenant's reader.
    /// None without a directory.
    pub fn for_role(
        dir: Option<&std::path::Path>,
        role: &Role,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Self> {
        let mut access = Self {
            ca_file: ca_file.map(ToOwned::to_owned),
            ..Self::default()
        };
        let Some(dir) = dir else {
            return Ok(access);
        };
        let tenant_reader = matches!(role, Role::Audit(Some(_)));
        let extension = if tenant_reader { "secret" } else { "nk" };
        let path = dir.join(format!("{}.{extension}", role.name()));
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Credentials {
            role: role.name(),
            path,
            source,
        })?;
        let text = Some(text.trim().to_owned());
        if tenant_reader {
            access.password = text;
        } else {
            access.nkey_seed = text;
        }
        Ok(access)
    }

    /// Whether the bus is open (no credentials at all).
    pub fn is_open(&self) -> bool {
        self.nkey_seed.is_none() && self.password.is_none()
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

/// How requests are repeated while the bus settles: after a server is lost, its streams and
/// consumers elect new leaders, and until they have, requests go unanswered or find "no
/// stream". From 200 ms, doubling up to 2 s between tries (with jitter), for up to `bound`.
pub fn settling(bound: Duration) -> backon::ExponentialBuilder {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(2))
        .with_total_delay(Some(bound))
        .without_max_times()
        .with_jitter()
}
