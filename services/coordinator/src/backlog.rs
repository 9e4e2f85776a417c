//! Whether a service is alive: taking commands off its queues, as opposed to consuming
//! nothing. A lapsed lease of a live service's step is renewed; a step of a service that
//! consumes nothing (stopped, hung, not deployed) loses it.
//!
//! The evidence is JetStream's, not the coordinator's: under load the coordinator may read a
//! worker's heartbeats later than the lease, but the service's consumers say whether it
//! delivers work (to any tenant — a tenant's command may wait while another tenant's work
//! fills the slots, and that is queueing, not loss) or holds commands it has not yet
//! acknowledged. A command lost in a live service is caught once the service goes idle, or by
//! the step's deadline. A consumer that cannot be read right now (its leader being elected
//! after a server was lost) is no evidence either way, and expires no lease; one that does not
//! exist does. And while the bus is settling — some consumer could not be read, or the
//! coordinator's own pull of events failed, within a lease's length (leaders being elected
//! after a server was lost) — silence is evidence about no service: workers' pulls and
//! reports may be failing too, and no lease expires.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use async_nats::jetstream::consumer::Info;
use hypersaga_bus::CMD_STREAM;
use hypersaga_bus::subjects::worker_consumer;
use hypersaga_model::TenantId;
use time::OffsetDateTime;
use tracing::warn;

/// How long one answer about a consumer is trusted (every lapsed lease asks).
const FRESH_FOR: Duration = Duration::from_secs(1);

pub(crate) struct Backlogs {
    js: jetstream::Context,
    /// Per service: the names of its tenants' consumers, and when they were listed.
    names: Mutex<HashMap<String, (Instant, Vec<String>)>>,
    /// Per consumer: when it was read, and whether it was active.
    cache: Mutex<HashMap<String, (Instant, bool)>>,
    /// When the bus last failed to answer: a consumer that could not be read, the
    /// coordinator's pull of events failing.
    disrupted: Mutex<Option<Instant>>,
}

impl Backlogs {
    pub fn new(js: jetstream::Context) -> Self {
        Self {
            js,
            names: Mutex::new(HashMap::new()),
            cache: Mutex::new(HashMap::new()),
            disrupted: Mutex::new(None),
        }
    }

    /// The bus failed to answer just now.
    pub fn disrupted(&self) {
        *self.disrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// Whether the bus failed to answer within `horizon`.
    fn disrupted_within(&self, horizon: Duration) -> bool {
        self.disrupted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < horizon)
    }

    /// Which of `services` (whose leases lapsed) are alive, by [`Backlogs::busy`]; all of
    /// them while the bus is settling. Every consumer is read first, so one that cannot be
    /// read counts for all, whatever their order.
    pub async fn busy_services(
        &self,
        services: &[String],
        tenant: &TenantId,
        horizon: Duration,
    ) -> std::collections::HashSet<String> {
        let mut busy = std::collections::HashSet::new();
        if self.disrupted_within(horizon) {
            busy.extend(services.iter().cloned());
            return busy; // no read could say otherwise
        }
        for service in services {
            if self.busy(service, tenant, horizon).await {
                busy.insert(service.clone());
            }
        }
        if self.disrupted_within(horizon) {
            busy.extend(services.iter().cloned());
        }
        busy
    }

    /// Whether `service` delivered work (to anyone) within `horizon` or holds commands it has
    /// not acknowledged. A consumer that cannot be read counts as alive (no evidence); one
    /// that does not exist as not. `tenant`'s own queue is looked at first: it is the
    /// likeliest to say yes; then the service's other queues that exist (tenants' queues come
    /// and go with their work, so only those are read, however many tenants are onboarded).
    async fn busy(&self, service: &str, tenant: &TenantId, horizon: Duration) -> bool {
        let own = worker_consumer(service, tenant);
        if self.active(&own, horizon, true).await {
            return true;
        }
        let Some(others) = self.consumers_of(service).await else {
            return true; // cannot list: no evidence of loss
        };
        for name in others.iter().filter(|n| **n != own) {
            if self.active(name, horizon, false).await {
                return true;
            }
        }
        false
    }

    /// The names of `service`'s consumers (one per tenant with a queue), listed at most once
    /// per [`FRESH_FOR`]; `None` when the stream cannot be listed now.
    async fn consumers_of(&self, service: &str) -> Option<Vec<String>> {
        use futures::StreamExt;
        if let Some((at, names)) = self
            .names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(service)
            && at.elapsed() < FRESH_FOR
        {
            return Some(names.clone());
        }
        let prefix = worker_consumer(service, &TenantId::new("x").ok()?);
        let prefix = prefix.trim_end_matches('x');
        use async_nats::jetstream::context::GetStreamErrorKind;
        let stream = match self.js.get_stream(CMD_STREAM).await {
            Ok(s) => s,
            // No stream, no queue: nothing takes any service's commands.
            Err(e)
                if matches!(e.kind(), GetStreamErrorKind::JetStream(ref j)
                if j.error_code() == async_nats::jetstream::ErrorCode::STREAM_NOT_FOUND) =>
            {
                return Some(Vec::new());
            }
            Err(e) => {
                warn!(error = %e, "cannot list the services' consumers now");
                self.disrupted();
                return None;
            }
        };
        let mut listed = stream.consumer_names();
        let mut names = Vec::new();
        while let Some(name) = listed.next().await {
            match name {
                Ok(n) if n.starts_with(prefix) => names.push(n),
                Ok(_) => {}
                Err(e) => {
                    warn!(error = %e, "cannot list the services' consumers now");
                    self.disrupted();
                    return None;
                }
            }
        }
        self.names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(service.to_owned(), (Instant::now(), names.clone()));
        Some(names)
    }

    /// Whether consumer `name` delivered within `horizon` or holds unacknowledged commands.
    /// `expected`: its absence is worth a warning (the saga's own tenant's queue).
    async fn active(&self, name: &str, horizon: Duration, expected: bool) -> bool {
        if let Some((at, active)) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            && at.elapsed() < FRESH_FOR
        {
            return *active;
        }
        let active = match self.read(name).await {
            Read::Info(info) => {
                let recent = info.delivered.last_active.is_some_and(|t| {
                    OffsetDateTime::now_utc() - t
                        <= time::Duration::try_from(horizon).unwrap_or(time::Duration::MAX)
                });
                recent || info.num_ack_pending > 0
            }
            Read::Missing(why) => {
                if expected {
                    warn!(consumer = %name, %why, "a service's consumer does not exist; treating it as idle");
                }
                false
            }
            // The cluster electing a new leader for the consumer, a server going away: no
            // answer is no evidence of loss. The lease is looked at again at the next timer,
            // and the step's deadline bounds how long this can last.
            Read::Unknown(why) => {
                warn!(consumer = %name, %why, "cannot read a service's consumer now; the bus is settling, expiring no lease");
                self.disrupted();
                true
            }
        };
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned(), (Instant::now(), active));
        active
    }

    async fn read(&self, name: &str) -> Read {
        use async_nats::jetstream::context::{ConsumerInfoErrorKind, GetStreamErrorKind};
        let stream = match self.js.get_stream(CMD_STREAM).await {
            Ok(stream) => stream,
            Err(e)
                if matches!(e.kind(), GetStreamErrorKind::JetStream(ref j)
                if j.error_code() == async_nats::jetstream::ErrorCode::STREAM_NOT_FOUND) =>
            {
                return Read::Missing(e.to_string());
            }
            Err(e) => return Read::Unknown(e.to_string()),
        };
        match stream.consumer_info(name).await {
            Ok(info) => Read::Info(Box::new(info)),
            Err(e)
                if matches!(
                    e.kind(),
                    ConsumerInfoErrorKind::NotFound
                        | ConsumerInfoErrorKind::StreamNotFound
                        | ConsumerInfoErrorKind::InvalidName
                ) =>
            {
                Read::Missing(e.to_string())
            }
            Err(e) => Read::Unknown(e.to_string()),
        }
    }
}

/// What reading a consumer told.
enum Read {
    Info(Box<Info>),
    /// It does not exist: nothing consumes the service's queue.
    Missing(String),
    /// No answer (timed out, no responders, a leader being elected).
    Unknown(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a real nats-server: a queue nothing consumes is no sign of life, until the bus
    /// is settling; then no service's lease expires, for a lease's length.
    #[tokio::test]
    async fn while_the_bus_settles_no_service_counts_as_idle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nats = hypersaga_procs::NatsServer::start(dir.path())
            .await
            .expect("nats-server");
        let client = async_nats::connect(nats.url()).await.expect("connect");
        let tenant = TenantId::new("acme").expect("tenant");
        let backlogs = Backlogs::new(jetstream::new(client));
        let services = vec!["identity".to_owned(), "network".to_owned()];
        let horizon = Duration::from_millis(300);

        // No command stream, so no consumer: nothing takes these services' commands.
        let busy = backlogs.busy_services(&services, &tenant, horizon).await;
        assert!(busy.is_empty(), "{busy:?}");

        // The coordinator's pull of events failed: every lapsed service counts as alive.
        backlogs.disrupted();
        let busy = backlogs.busy_services(&services, &tenant, horizon).await;
        assert_eq!(busy.len(), 2, "{busy:?}");

        // A lease's length later the bus has settled, and silence is evidence again.
        tokio::time::sleep(horizon + Duration::from_millis(100)).await;
        let busy = backlogs.busy_services(&services, &tenant, horizon).await;
        assert!(busy.is_empty(), "{busy:?}");
        nats.stop().await;
    }
}
