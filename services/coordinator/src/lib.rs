//! The saga coordinator: sequences every operation's steps and compensates on failure.
//!
//! It is the only writer of sagas. The gateway accepts an operation by writing the cluster
//! record alone (naming the operation) and publishing a start wake-up; the coordinator builds
//! the saga from that record, and its resync builds any whose wake-up was lost.
//!
//! Stateless between events: each saga lives in the `hcp_sagas` KV bucket and is changed only
//! by compare-and-set on its revision, so any replica can handle any event and a crash at any
//! instant loses nothing. Every transition writes the saga *with its outbox* (the commands and
//! audit events it decided to send) in one CAS, then publishes the outbox with `Nats-Msg-Id`s,
//! then clears it; a crash in between is repaired by whoever next touches the saga, and the
//! event that caused the transition is acknowledged only at the very end.
#![forbid(unsafe_code)]

mod active;
mod backlog;
mod cache;
mod engine;
mod lag;
mod snapshot;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, pull};
use futures::StreamExt;
use hypersaga_bus::{
    Bus, DeadCode, EVT_STREAM, OperatorCall, RedriveRequest, Redriven, Refused, Role, SagaWake,
    StepEvent,
};
use hypersaga_config::Config;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, warn};

pub use engine::{Engine, Input};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bus(#[from] hypersaga_bus::Error),
    #[error("KV {what} failed: {message}")]
    Kv { what: &'static str, message: String },
    #[error("saga record {key} is unreadable")]
    Decode {
        key: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("saga record {key} does not encode")]
    Encode {
        key: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("saga {key} stayed contended after {tries} compare-and-set attempts")]
    Contended { key: String, tries: u32 },
    #[error("saga {key} as read is older than the event applied to it; retrying")]
    Behind { key: String },
}

impl Error {
    pub(crate) fn kv(what: &'static str, e: impl std::fmt::Display) -> Self {
        Self::Kv {
            what,
            message: e.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs a coordinator replica until `shutdown`.
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<()> {
    let bus = Bus::connect_configured(&config.nats, &hypersaga_bus::Role::Coordinator).await?;
    let engine = Arc::new(Engine::new(bus.clone(), config).await?);
    let resync = tokio::spawn(resync_loop(
        engine.clone(),
        Duration::from_millis(config.coordinator.resync_interval_ms),
        shutdown.clone(),
    ));
    let catching_up = tokio::spawn(catch_up_loop(engine.clone(), shutdown.clone()));
    let lag = tokio::spawn(lag::watch(bus.clone(), shutdown.clone()));
    let following = {
        let (engine, shutdown) = (engine.clone(), shutdown.clone());
        tokio::spawn(async move { engine.follow_active(shutdown).await })
    };
    let result = consume(bus, engine.clone(), &config.coordinator, shutdown.clone()).await;
    shutdown.cancel();
    let _ = resync.await;
    let _ = catching_up.await;
    let _ = lag.await;
    let _ = following.await;
    // Leave no published outbox behind for another replica to publish again, and no progress
    // unwritten.
    engine.catch_up(true).await;
    result
}

/// Does, a little after the fact, what transitions put off (see [`Engine::catch_up`]).
async fn catch_up_loop(engine: Arc<Engine>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(cache::CLEAR_AFTER);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => engine.catch_up(false).await,
        }
    }
}

/// Consumes completion events and wake-ups from `HCP_EVT` through one durable consumer shared
/// by all coordinator replicas.
async fn consume(
    bus: Bus,
    engine: Arc<Engine>,
    config: &hypersaga_config::CoordinatorConfig,
    shutdown: CancellationToken,
) -> Result<()> {
    let concurrency = config.concurrency;
    // An input that fails every time (a saga record this version cannot read, a saga
    // contended without end) is tried this often, then moved aside.
    let poison_after = i64::from(config.poison_after.max(1));
    let stream = bus
        .jetstream()
        .get_stream(EVT_STREAM)
        .await
        .map_err(|e| Error::kv("open HCP_EVT", e))?;
    let consumer = stream
        .get_or_create_consumer(
            "coordinator",
            pull::Config {
                durable_name: Some("coordinator".into()),
                filter_subjects: bus.subjects().coordinator_filters(),
                ack_policy: AckPolicy::Explicit,
                ack_wait: Duration::from_secs(config.ack_wait_s),
                // In-flight work is bounded locally by the semaphore; the server-side cap is
                // shared by every replica and must not be what limits them.
                max_ack_pending: 10_000,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| Error::kv("create coordinator consumer", e))?;
    // Short pulls with frequent heartbeats: a pull lost with its server (a consumer leader
    // failing over in a cluster) is noticed and renewed within seconds, not the 30 s default.
    let mut messages = consumer
        .stream()
        .max_messages_per_batch(concurrency)
        .expires(Duration::from_secs(5))
        .heartbeat(Duration::from_secs(1))
        .messages()
        .await
        .map_err(|e| Error::kv("pull from HCP_EVT", e))?;
    info!("coordinator consuming events");
    hypersaga_telemetry::probes::set_ready(true);
    let permits = Arc::new(Semaphore::new(concurrency));
    let mut tasks = JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = shutdown.cancelled() => break,
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let msg = tokio::select! {
            _ = shutdown.cancelled() => break,
            m = messages.next() => match m {
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    warn!(error = %e, "pull failed");
                    engine.intake_broken();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                None => return Err(Error::kv("consume HCP_EVT", "message stream ended")),
            },
        };
        let engine = engine.clone();
        let bus = bus.clone();
        // A child of whoever sent the message: the gateway, a worker's step, an earlier
        // transition (a timer).
        let received = tracing::info_span!("coordinator.receive", subject = %msg.subject, otel.kind = "consumer");
        let sender = hypersaga_bus::trace_of(msg.headers.as_ref());
        hypersaga_telemetry::otel::adopt(&received, &sender);
        tasks.spawn(async move {
            let _permit = permit;
            let stored = msg.info().ok().map(|i| i.published);
            let decoded = decode(bus.subjects(), &msg.subject, &msg.payload, stored);
            metrics::counter!("hypersaga_coordinator_inputs_total", "kind" => input_label(decoded.as_ref())).increment(1);
            let result = match decoded {
                Some(Decoded::Start(wake)) => engine.start(&wake, Some(&sender)).await,
                Some(Decoded::Input(key, input)) => engine.process(&key, &input).await,
                Some(Decoded::Refused(reason)) => {
                    warn!(subject = %msg.subject, %reason, "message refused unread; dead-lettered");
                    let refused = Refused::of(&msg, &Role::Coordinator, DeadCode::Disowned, reason);
                    bus.dead_letter(&refused).await.map_err(Error::from)
                }
                Some(Decoded::Redrive(tenant, request)) => redrive(&bus, &tenant, &request).await,
                None => Ok(()),
            };
            match result {
                Ok(()) => {
                    if let Err(e) = msg.ack().await {
                        warn!(error = %e, "ack failed; the event will be re-applied idempotently");
                    }
                }
                Err(e) => {
                    let delivered = msg.info().map(|i| i.delivered).unwrap_or(1);
                    if delivered >= poison_after {
                        // Moved aside, never dropped silently: the saga's lease and deadline
                        // pause it if this input mattered.
                        let reason = format!("not processed after {delivered} deliveries: {e}");
                        warn!(subject = %msg.subject, %reason, "input given up on; dead-lettered");
                        let refused = Refused::of(&msg, &Role::Coordinator, DeadCode::Poison, reason);
                        match bus.dead_letter(&refused).await {
                            Ok(()) => { let _ = msg.ack_with(async_nats::jetstream::AckKind::Term).await; }
                            Err(d) => {
                                warn!(error = %d, "could not dead-letter an input; retrying later");
                                let _ = msg.ack_with(async_nats::jetstream::AckKind::Nak(Some(retry_delay(delivered)))).await;
                            }
                        }
                    } else {
                        warn!(error = %e, subject = %msg.subject, delivered, "input not processed; retrying later");
                        let _ = msg.ack_with(async_nats::jetstream::AckKind::Nak(Some(retry_delay(delivered)))).await;
                    }
                }
            }
        }.instrument(received));
        while tasks.try_join_next().is_some() {}
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

/// Sends dead letter `request.sequence` of `tenant` again where it was sent, once (see
/// [`Bus::redrive_dead_letter`]). Idempotent: a request repeated (redelivered after this
/// replica died between the publish and the delete, or asked twice) publishes with the same
/// `Nats-Msg-Id`, which JetStream drops, or finds the dead letter gone and does nothing. A
/// request that cannot apply is logged and dropped: it is an admin's, checked by the gateway
/// first, and never anyone's input to a saga.
async fn redrive(bus: &Bus, tenant: &str, request: &RedriveRequest) -> Result<()> {
    let sequence = request.sequence;
    match bus.redrive_dead_letter(tenant, sequence).await? {
        Redriven::Sent { subject, msg_id } => {
            info!(dead_letter = sequence, %tenant, %subject, %msg_id, actor = %request.actor, "dead letter redriven");
        }
        Redriven::Gone => {
            info!(dead_letter = sequence, %tenant, actor = %request.actor, "dead letter already redriven, purged or expired; nothing to do");
        }
        Redriven::Refused(why) => {
            warn!(dead_letter = sequence, %tenant, actor = %request.actor, %why, "dead letter not redriven");
        }
    }
    Ok(())
}

/// The pause before an input that failed is delivered again: half a second, growing with
/// each delivery to 30 s, so a failing input neither spins nor waits long after a blip.
fn retry_delay(delivered: i64) -> Duration {
    let step = u32::try_from(delivered.clamp(1, 60)).unwrap_or(60);
    (Duration::from_millis(500) * step).min(Duration::from_secs(30))
}

/// Saga ids become KV keys: anything else is dropped rather than retried forever.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What one message asks of the engine.
enum Decoded {
    /// An accepted operation: build its saga from the cluster record if need be, then advance.
    Start(SagaWake),
    /// An input to the saga at this key.
    Input(String, Input),
    /// A message whose body disagrees with its subject about who sent it: the subject is what
    /// permissions vouch for, so the body is not believed.
    Refused(String),
    /// An admin's request to send one of the tenant's dead letters again (the tenant as the
    /// subject names it).
    Redrive(String, RedriveRequest),
}

/// The `kind` label of the coordinator's input counter.
fn input_label(decoded: Option<&Decoded>) -> &'static str {
    match decoded {
        Some(Decoded::Start(_)) => "start",
        Some(Decoded::Input(_, Input::Event(_))) => "event",
        Some(Decoded::Input(_, Input::Tick | Input::Timer { .. })) => "tick",
        Some(Decoded::Input(_, Input::Operate(_))) => "operator_call",
        Some(Decoded::Input(_, _)) => "other",
        Some(Decoded::Refused(_)) => "refused",
        Some(Decoded::Redrive(..)) => "redrive",
        None => "undecodable",
    }
}

/// Whether `subject` vouches for a message about `tenant` (and, for events, about a step of
/// `service`): `None` if so, else why not.
fn disowned(
    subjects: &hypersaga_bus::Subjects,
    subject: &str,
    tenant: &hypersaga_model::TenantId,
    service: Option<&str>,
) -> Option<String> {
    let Some((sent_for, kind, rest)) = subjects.address(subject) else {
        return Some("subject outside the bus's prefix".into());
    };
    if sent_for != tenant.as_str() {
        return Some(format!(
            "body names tenant {tenant:?}, subject tenant {sent_for:?}"
        ));
    }
    match service {
        Some(service) if kind == "evt" && rest != service => Some(format!(
            "an event about a step of {service:?} sent as {rest:?}"
        )),
        _ => None,
    }
}

/// `stored`: when the server stored the message (for a timer's tick, when it fired).
fn decode(
    subjects: &hypersaga_bus::Subjects,
    subject: &str,
    payload: &[u8],
    stored: Option<time::OffsetDateTime>,
) -> Option<Decoded> {
    if subject.ends_with(".saga.operate") {
        return match serde_json::from_slice::<OperatorCall>(payload) {
            Ok(c) if let Some(why) = disowned(subjects, subject, &c.tenant, None) => {
                Some(Decoded::Refused(why))
            }
            Ok(c) if valid_id(&c.saga_id) => Some(Decoded::Input(
                hypersaga_bus::subjects::saga_key(&c.tenant, &c.saga_id),
                Input::Operate(Box::new(c)),
            )),
            Ok(c) => {
                warn!(operation = %c.saga_id, %subject, "operator call with an invalid saga id dropped");
                None
            }
            Err(e) => {
                warn!(error = %e, %subject, "undecodable operator call dropped");
                None
            }
        };
    }
    if subject.ends_with(".saga.redrive") {
        let tenant = subjects
            .address(subject)
            .map(|(tenant, _, _)| tenant.to_owned());
        return match (tenant, serde_json::from_slice::<RedriveRequest>(payload)) {
            (Some(tenant), Ok(r)) => Some(Decoded::Redrive(tenant, r)),
            (None, _) => {
                warn!(%subject, "redrive request outside the bus's prefix dropped");
                None
            }
            (_, Err(e)) => {
                warn!(error = %e, %subject, "undecodable redrive request dropped");
                None
            }
        };
    }
    if subject.ends_with(".saga.start") || subject.ends_with(".saga.tick") {
        match serde_json::from_slice::<SagaWake>(payload) {
            Ok(w) if let Some(why) = disowned(subjects, subject, &w.tenant, None) => {
                Some(Decoded::Refused(why))
            }
            Ok(w) if valid_id(&w.saga_id) => {
                if subject.ends_with(".saga.tick") {
                    Some(Decoded::Input(
                        hypersaga_bus::subjects::saga_key(&w.tenant, &w.saga_id),
                        Input::Timer {
                            fired_at: stored.unwrap_or_else(time::OffsetDateTime::now_utc),
                        },
                    ))
                } else {
                    // A cluster name that cannot be a key part names no record.
                    let cluster = w.cluster.filter(|c| valid_id(c));
                    Some(Decoded::Start(SagaWake { cluster, ..w }))
                }
            }
            Ok(w) => {
                warn!(operation = %w.saga_id, %subject, "wake-up with an invalid saga id dropped");
                None
            }
            Err(e) => {
                warn!(error = %e, %subject, "undecodable wake-up dropped");
                None
            }
        }
    } else {
        match serde_json::from_slice::<StepEvent>(payload) {
            Ok(ev)
                if let Some(why) = disowned(subjects, subject, &ev.tenant, Some(ev.service())) =>
            {
                Some(Decoded::Refused(why))
            }
            Ok(ev) if valid_id(&ev.saga_id) => Some(Decoded::Input(
                hypersaga_bus::subjects::saga_key(&ev.tenant, &ev.saga_id),
                Input::Event(Box::new(ev)),
            )),
            Ok(ev) => {
                warn!(operation = %ev.saga_id, %subject, "event with an invalid saga id dropped");
                None
            }
            Err(e) => {
                warn!(error = %e, %subject, "undecodable event dropped");
                None
            }
        }
    }
}

/// Level-triggered safety net: re-examines every unfinished saga (deadlines, outboxes left by a
/// crash, wake-ups that never arrived) and builds the saga of every accepted operation that
/// has none (a start wake-up that never arrived).
async fn resync_loop(engine: Arc<Engine>, every: Duration, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    for round in 0u64.. {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = engine.resync(round % FULL_RESYNC_EVERY == 0).await {
            warn!(error = %e, "resync failed");
        }
    }
}

/// Every how many resyncs one lists every saga and cluster record (the first one too): a
/// safety net under safety nets, since a lost start wake-up is also re-sent by the client's
/// retry and every saga is indexed from the moment it is built.
const FULL_RESYNC_EVERY: u64 = 12;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redrive_request_is_read_with_the_tenant_its_subject_names() {
        let subjects = hypersaga_bus::Subjects::new("hcp");
        let request = RedriveRequest {
            v: 1,
            sequence: 12,
            actor: "admin:ops".into(),
        };
        let body = serde_json::to_vec(&request).unwrap();
        match decode(&subjects, "hcp.acme.saga.redrive", &body, None) {
            Some(Decoded::Redrive(tenant, read)) => {
                assert_eq!(tenant, "acme");
                assert_eq!(read, request);
            }
            _ => panic!("not read as a redrive request"),
        }
        assert!(
            decode(&subjects, "hcp.acme.saga.redrive", b"{", None).is_none(),
            "an undecodable request is dropped, not retried"
        );
    }
}
