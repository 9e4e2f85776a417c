//! The step-worker runtime every service shares.
//!
//! A service is a [`StepHandler`]; this crate runs it: it pulls the service's commands from a
//! durable JetStream consumer that all replicas of the service share, holds back retries until
//! their `not_before` (NAK with delay: the wait lives in JetStream, not in a timer here), keeps
//! long steps alive with in-progress acks, publishes the result as a completion event and only
//! then acknowledges the command. A replica killed mid-step loses nothing: the unacknowledged
//! command is redelivered to another replica after the ack wait, and the handler, idempotent
//! by contract, finds and adopts what the first attempt created.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{AckKind, kv};
use async_nats::jetstream::consumer::{AckPolicy, pull};
use futures::StreamExt;
use hypersaga_bus::{Bus, CMD_STREAM, Outcome, Outputs, StepCommand, StepError, StepEvent, trace_of};
use time::OffsetDateTime;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field, info, info_span, warn};

mod fence;

/// Runs one attempt of a step of a saga.
///
/// Every implementation must be idempotent — look, adopt, then create — because a command
/// can be delivered more than once (a replica dying after the work but before the ack).
#[async_trait::async_trait]
pub trait StepHandler: Send + Sync + 'static {
    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<Outputs, StepError>;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bus(#[from] hypersaga_bus::Error),
    #[error("consumer {consumer} failed: {message}")]
    Consumer { consumer: String, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a service's worker runs.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Service name: consumes `<p>.*.cmd.<service>`.
    pub service: String,
    /// Steps run at once by this replica.
    pub concurrency: usize,
    /// After this long without an ack or progress, JetStream redelivers a command.
    pub ack_wait: Duration,
    /// How long in-flight steps may take to finish after shutdown is asked.
    pub drain_grace: Duration,
}

/// Lets a handler say what it is waiting on; shown to users on the step while it runs.
pub struct Progress {
    bus: Bus,
    cmd: StepCommand,
    trace: hypersaga_telemetry::TraceParent,
}

impl Progress {
    /// Publishes a progress note (best effort: a lost note never fails the step).
    pub async fn note(&self, message: impl Into<String>) {
        let event = StepEvent::new(&self.cmd, Outcome::Progress { message: message.into() });
        let subject = self.bus.subjects().evt(&self.cmd.tenant, self.cmd.service());
        if let Err(e) = self.bus.publish_json(&subject, &event.msg_id(), &self.trace, &event).await {
            warn!(error = %e, "could not publish progress");
        }
    }
}

/// Runs the worker until `shutdown`, then lets in-flight steps finish within the grace period.
pub async fn run(bus: Bus, handler: Arc<dyn StepHandler>, opts: WorkerOptions, shutdown: CancellationToken) -> Result<()> {
    let name = format!("svc-{}", opts.service);
    let err = |e: &dyn std::fmt::Display| Error::Consumer { consumer: name.clone(), message: e.to_string() };
    let stream = bus.jetstream().get_stream(CMD_STREAM).await.map_err(|e| err(&e))?;
    let consumer = stream
        .get_or_create_consumer(
            &name,
            pull::Config {
                durable_name: Some(name.clone()),
                filter_subject: bus.subjects().cmd_filter(&opts.service),
                ack_policy: AckPolicy::Explicit,
                ack_wait: opts.ack_wait,
                // Attempts are counted and bounded by the coordinator, not by redelivery.
                max_deliver: -1,
                // Work is bounded by this replica's semaphore; the server-side cap is shared
                // by all replicas and holds NAK-delayed retries too, so keep it out of the way.
                max_ack_pending: 10_000,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| err(&e))?;
    let sagas = bus.sagas().await?;
    info!(service = %opts.service, consumer = %name, "worker started");
    let permits = Arc::new(Semaphore::new(opts.concurrency));
    let mut tasks = JoinSet::new();
    loop {
        // Pull only as many commands as there are free slots: a command fetched ahead and left
        // waiting in a buffer would outlive its ack wait, be redelivered elsewhere, and could
        // then run after the saga had already moved on.
        let first = tokio::select! {
            _ = shutdown.cancelled() => break,
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let mut slots = vec![first];
        while let Ok(p) = permits.clone().try_acquire_owned() {
            slots.push(p);
        }
        let batch = tokio::select! {
            _ = shutdown.cancelled() => break,
            b = consumer.batch().max_messages(slots.len()).expires(Duration::from_secs(5)).messages() => b,
        };
        let mut batch = match batch {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "pull failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => None,
                m = batch.next() => m,
            };
            match next {
                None => break,
                Some(Err(e)) => warn!(error = %e, "pull failed"),
                Some(Ok(msg)) => {
                    let Some(permit) = slots.pop() else { break };
                    let (bus, sagas, handler, ack_wait) = (bus.clone(), sagas.clone(), handler.clone(), opts.ack_wait);
                    tasks.spawn(async move {
                        handle(bus, sagas, handler, msg, ack_wait).await;
                        drop(permit);
                    });
                }
            }
        }
        while tasks.try_join_next().is_some() {}
    }
    info!(in_flight = tasks.len(), "draining");
    let drained = tokio::time::timeout(opts.drain_grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        warn!("drain grace elapsed; unfinished steps will be redelivered to another replica");
    }
    Ok(())
}

async fn handle(bus: Bus, sagas: kv::Store, handler: Arc<dyn StepHandler>, msg: async_nats::jetstream::Message, ack_wait: Duration) {
    let trace = trace_of(msg.headers.as_ref());
    let cmd: StepCommand = match serde_json::from_slice(&msg.payload) {
        Ok(c) => c,
        Err(e) => {
            reject_undecodable(&bus, &msg, &trace, &e).await;
            return;
        }
    };
    let now = OffsetDateTime::now_utc();
    if let Some(not_before) = cmd.not_before.filter(|t| *t > now) {
        let wait = (not_before - now).try_into().unwrap_or(Duration::from_secs(1));
        let _ = msg.ack_with(AckKind::Nak(Some(wait))).await;
        return;
    }
    match fence::still_wanted(&sagas, &cmd).await {
        Ok(true) => {}
        Ok(false) => {
            info!(saga = %cmd.saga_id, step = %cmd.step, attempt = cmd.attempt, "command is stale (the saga moved on); dropping it");
            let _ = msg.double_ack().await;
            return;
        }
        Err(e) => {
            warn!(error = %e, "cannot read the saga to check the command; retrying later");
            let _ = msg.ack_with(AckKind::Nak(Some(Duration::from_secs(1)))).await;
            return;
        }
    }
    let delivered = msg.info().map(|i| i.delivered).unwrap_or(1);
    let span = info_span!(
        "step",
        tenant = %cmd.tenant,
        cluster = %cmd.cluster,
        saga = %cmd.saga_id,
        step = %cmd.step,
        action = cmd.action.as_str(),
        attempt = cmd.attempt,
        delivery = delivered,
        trace_id = %trace.trace_id(),
        outcome = field::Empty,
    );
    async move {
        let progress = Progress { bus: bus.clone(), cmd: cmd.clone(), trace };
        // Keep the command ours while the step runs (long Azure operations, waiting for a
        // HostedCluster to become Available).
        let heartbeat = async {
            let mut tick = tokio::time::interval(ack_wait / 3);
            tick.tick().await;
            loop {
                tick.tick().await;
                let _ = msg.ack_with(AckKind::Progress).await;
            }
        };
        let result = tokio::select! {
            r = handler.run(&cmd, &progress) => r,
            _ = heartbeat => unreachable_heartbeat(),
        };
        let outcome = match result {
            Ok(outputs) => {
                tracing::Span::current().record("outcome", "succeeded");
                info!("step succeeded");
                Outcome::Succeeded { outputs }
            }
            Err(error) => {
                tracing::Span::current().record("outcome", if error.is_retryable() { "retryable" } else { "terminal" });
                warn!(%error, retryable = error.is_retryable(), "step failed");
                Outcome::Failed { error }
            }
        };
        let event = StepEvent::new(&cmd, outcome);
        let subject = bus.subjects().evt(&cmd.tenant, cmd.service());
        if let Err(e) = bus.publish_json(&subject, &event.msg_id(), &trace, &event).await {
            warn!(error = %e, "could not publish result; command will be redelivered");
            let _ = msg.ack_with(AckKind::Nak(Some(Duration::from_secs(1)))).await;
            return;
        }
        if let Err(e) = msg.double_ack().await {
            warn!(error = %e, "ack failed; a redelivery will re-run this idempotent step");
        }
    }
    .instrument(span)
    .await
}

/// A command that does not decode is reported as a terminal failure of its step when at least
/// its address can be read, so the saga compensates instead of waiting forever; otherwise it is
/// terminated (and the coordinator's deadline takes over).
async fn reject_undecodable(bus: &Bus, msg: &async_nats::jetstream::Message, trace: &hypersaga_telemetry::TraceParent, e: &serde_json::Error) {
    warn!(subject = %msg.subject, error = %e, "undecodable command");
    if let Ok(h) = serde_json::from_slice::<fence::CommandAddress>(&msg.payload) {
        let event = StepEvent {
            v: hypersaga_bus::ENVELOPE_VERSION,
            saga_id: h.saga_id,
            tenant: h.tenant,
            cluster: h.cluster,
            step: h.step,
            action: h.action,
            attempt: h.attempt,
            outcome: Outcome::Failed { error: StepError::terminal("UndecodableCommand", format!("the command could not be read: {e}")) },
            time: OffsetDateTime::now_utc(),
        };
        let service = event.step.split('.').next().unwrap_or_default().to_owned();
        let subject = bus.subjects().evt(&event.tenant, &service);
        if bus.publish_json(&subject, &event.msg_id(), trace, &event).await.is_err() {
            let _ = msg.ack_with(AckKind::Nak(Some(Duration::from_secs(1)))).await;
            return;
        }
    }
    let _ = msg.ack_with(AckKind::Term).await;
}

fn unreachable_heartbeat() -> Result<Outputs, StepError> {
    Err(StepError::retryable("InternalError", "heartbeat loop ended"))
}
