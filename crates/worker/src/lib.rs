//! The step-worker runtime every service shares.
//!
//! A service is a [`StepHandler`]; this crate runs it: it pulls the service's commands from a
//! durable JetStream consumer that all replicas of the service share, holds back retries until
//! their `not_before` (NAK with delay: the wait lives in JetStream, not in a timer here), lets
//! a command change nothing outside unless the saga record names its fence (asked before every
//! mutating call, before a redelivered command runs at all, and at every heartbeat; see
//! [`before_mutation`]), heartbeats while the handler works
//! (renewing both JetStream's ack wait and the coordinator's lease, and stopping the handler
//! if the saga has taken the step back), publishes the result as a completion event and only
//! then acknowledges the command. A replica killed mid-step loses nothing: the unacknowledged
//! command is redelivered to another replica after the ack wait, and the handler, idempotent
//! by contract, finds and adopts what the first attempt created.
//!
//! A handler never sits waiting on Azure or HyperShift: it answers [`StepResult::Wait`] and
//! the saga sends a re-check later, so a slot only ever does work.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::{AckKind, kv};
use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Bus, Outcome, Outputs, StepCommand, StepError, StepEvent, trace_of};
use serde_json::Value;
use time::OffsetDateTime;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field, info, info_span, warn};

mod fair;
mod fence;
mod guard;
mod requests;

pub use guard::{Fenced, before_mutation};
pub use requests::serve_requests;

/// Runs one attempt of a step of a saga.
///
/// Every implementation must be idempotent — look, adopt, then create — because a command
/// can be delivered more than once (a replica dying after the work but before the ack).
///
/// Every call that changes something outside must ask [`before_mutation`] first and not be
/// made when refused: a late command may run, but only its reads. The ARM clients and the
/// management-cluster helpers of `hypersaga-stepkit` ask on the handler's behalf.
#[async_trait::async_trait]
pub trait StepHandler: Send + Sync + 'static {
    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError>;

    /// What `cmd`'s step would do, and what stands in its way, changing nothing: the dry run
    /// and the preflight of an operation (see [`hypersaga_bus::plan`]). It must come from the
    /// code [`StepHandler::run`] runs, so a plan cannot disagree with the real run; every
    /// mutating call made meanwhile is refused ([`Fenced::Planning`]).
    async fn plan(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        Err(StepError::terminal(
            "PlanUnsupported",
            format!("the {} service cannot plan {} yet", cmd.service(), cmd.step),
        ))
    }

    /// What this service made for `tenant` (for `cluster`, or for any of its clusters), found
    /// by the tags and labels it puts on everything it makes: the sweeper's listing, and what
    /// each `<service>.sweep` step deletes. It changes nothing (every mutating call is refused
    /// while a listing runs).
    async fn made(
        &self,
        tenant: &hypersaga_model::TenantId,
        _cluster: Option<&str>,
    ) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError> {
        Err(StepError::terminal(
            "SweepUnsupported",
            format!("this service cannot list what it made for tenant {tenant}"),
        ))
    }

    /// How long `cmd` should be held back before it runs at all — e.g. its subscription's
    /// ARM budget is spent that far ahead. The worker defers it without taking a slot, so
    /// one tenant's exhausted budget never occupies the slots another tenant's work needs.
    async fn defer(&self, _cmd: &StepCommand) -> Option<Duration> {
        None
    }
}

/// How far a handler got.
#[derive(Clone, Debug, PartialEq)]
pub enum StepResult {
    /// The step is done; these are its outputs.
    Done(Outputs),
    /// Nothing to do but wait (an ARM operation running, a HostedCluster not yet
    /// `Available`): check again after `recheck_after`, handing `memo` back in the command.
    Wait {
        message: String,
        recheck_after: Duration,
        memo: Value,
    },
}

impl StepResult {
    /// A wait with nothing to remember between checks.
    pub fn wait(message: impl Into<String>, recheck_after: Duration) -> Self {
        Self::Wait {
            message: message.into(),
            recheck_after,
            memo: Value::Null,
        }
    }
}

impl From<Outputs> for StepResult {
    fn from(outputs: Outputs) -> Self {
        Self::Done(outputs)
    }
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
    /// Service name: consumes `<p>.<tenant>.cmd.<service>`.
    pub service: String,
    /// The tenants known at start, whose queues are opened at once; a tenant onboarded later
    /// is served from its first command. Commands are taken from tenants in turn (one consumer
    /// each).
    pub tenants: Vec<hypersaga_model::TenantId>,
    /// Steps run at once by this replica.
    pub concurrency: usize,
    /// After this long without an ack or progress, JetStream redelivers a command.
    pub ack_wait: Duration,
    /// How long in-flight steps may take to finish after shutdown is asked.
    pub drain_grace: Duration,
}

tokio::task_local! {
    /// Milliseconds the running attempt has waited for shared budgets, not yet reported.
    static PACED: Arc<AtomicU64>;
}

/// Counts `wait` as time the step running on this task spent waiting for a budget it shares
/// with every other step (its subscription's ARM requests). The next progress note reports
/// it, and the coordinator does not count it against the step's deadline. Outside a worker's
/// step (tests, tools) it is dropped.
pub fn count_paced(wait: Duration) {
    let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
    if ms > 0 {
        let _ = PACED.try_with(|paced| paced.fetch_add(ms, Ordering::Relaxed));
    }
}

/// Lets a handler say what it is waiting on; shown to users on the step while it runs. The
/// latest note is also what the heartbeat repeats.
pub struct Progress {
    bus: Bus,
    cmd: Arc<StepCommand>,
    trace: hypersaga_telemetry::TraceParent,
    last: std::sync::Mutex<String>,
    /// See [`count_paced`]; taken by the next note or heartbeat.
    paced: Arc<AtomicU64>,
}

impl Progress {
    fn new(bus: Bus, cmd: Arc<StepCommand>, trace: hypersaga_telemetry::TraceParent) -> Self {
        Self {
            bus,
            cmd,
            trace,
            last: std::sync::Mutex::new(String::new()),
            paced: Arc::default(),
        }
    }

    /// Publishes a progress note (best effort: a lost note never fails the step).
    pub async fn note(&self, message: impl Into<String>) {
        let message = message.into();
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = message.clone();
        self.publish(message).await;
    }

    /// Renews the step's lease with the coordinator, repeating the latest note.
    async fn heartbeat(&self) {
        let message = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.publish(message).await;
    }

    /// Runs `work` with [`count_paced`] counting into this attempt's progress.
    async fn pacing<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        PACED.scope(self.paced.clone(), work).await
    }

    async fn publish(&self, message: String) {
        let paced_ms = self.paced.swap(0, Ordering::Relaxed);
        let event = StepEvent::new(&self.cmd, Outcome::Progress { message, paced_ms });
        let subject = self
            .bus
            .subjects()
            .evt(&self.cmd.tenant, self.cmd.service());
        if let Err(e) = self
            .bus
            .publish_json(&subject, &event.msg_id(), &self.trace, &event)
            .await
        {
            warn!(error = %e, "could not publish progress");
        }
    }
}

/// Runs the worker until `shutdown`, then lets in-flight steps finish within the grace period.
pub async fn run(
    bus: Bus,
    handler: Arc<dyn StepHandler>,
    opts: WorkerOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let mut queues =
        fair::TenantQueues::open(&bus, &opts.service, &opts.tenants, opts.ack_wait).await?;
    // Shared by every command's task (a store's clone copies its stream's whole info).
    let sagas = Arc::new(bus.sagas().await?);
    info!(service = %opts.service, tenants = opts.tenants.len(), "worker started");
    hypersaga_telemetry::probes::set_ready(true);
    // One handle, shared by every task: each step adds itself while it runs.
    let in_flight =
        metrics::gauge!("hypersaga_worker_steps_in_flight", "service" => opts.service.clone());
    // Shown from zero before the first step, without setting it: another worker run in the
    // same process (a test's, or several services) shares the series and may have steps in
    // flight, which would then count below zero as they end.
    in_flight.increment(0.0);
    let permits = Arc::new(Semaphore::new(opts.concurrency));
    let mut tasks = JoinSet::new();
    loop {
        // Take commands only for free slots: a command fetched ahead and left waiting in a
        // buffer would outlive its ack wait, be redelivered elsewhere, and could then run after
        // the saga had already moved on.
        let first = tokio::select! {
            _ = shutdown.cancelled() => break,
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        // Only this loop takes permits, so the free ones stay free until it takes them.
        let free = 1 + permits.available_permits();
        let batch = queues.next(free, &shutdown).await;
        if batch.is_empty() {
            break;
        }
        let mut first = Some(first);
        for msg in batch {
            let permit = match first.take() {
                Some(p) => p,
                None => match permits.clone().try_acquire_owned() {
                    Ok(p) => p,
                    // Cannot happen (see above); should it, the command goes back at once.
                    Err(_) => {
                        let _ = msg.ack_with(AckKind::Nak(None)).await;
                        continue;
                    }
                },
            };
            let (bus, sagas, handler, ack_wait, due) = (
                bus.clone(),
                sagas.clone(),
                handler.clone(),
                opts.ack_wait,
                queues.due(),
            );
            let counted = InFlight::start(&in_flight);
            tasks.spawn(async move {
                handle(bus, sagas, handler, msg, ack_wait, due).await;
                drop(counted);
                drop(permit);
            });
        }
        while tasks.try_join_next().is_some() {}
    }
    hypersaga_telemetry::probes::set_ready(false);
    info!(in_flight = tasks.len(), "draining");
    let drained = tokio::time::timeout(opts.drain_grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!("drain grace elapsed; unfinished steps will be redelivered to another replica");
    }
    Ok(())
}

/// One command being handled, counted in `hypersaga_worker_steps_in_flight` from when it is
/// taken until its task ends (however it ends), so the gauge is right at every scrape.
struct InFlight(metrics::Gauge);

impl InFlight {
    fn start(gauge: &metrics::Gauge) -> Self {
        gauge.increment(1.0);
        Self(gauge.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// Runs one delivered command: reads it, turns it away or holds it back if it is not for
/// now, runs its step while keeping it ours, and reports the result before acknowledging.
async fn handle(
    bus: Bus,
    sagas: Arc<kv::Store>,
    handler: Arc<dyn StepHandler>,
    msg: async_nats::jetstream::Message,
    ack_wait: Duration,
    due: fair::Due,
) {
    let trace = trace_of(msg.headers.as_ref());
    let Some(cmd) = read_command(&bus, &msg, &trace).await else {
        return;
    };
    if hold_back(&msg, &cmd, &due).await {
        return;
    }
    // A first delivery is checked at its first mutating call (see `guard`). A redelivery is
    // checked before anything runs: late commands usually come that way (as does every command
    // held back for its `not_before`, retries and re-checks included), and one dropped here
    // spends none of its subscription's budget on reads.
    let delivered = msg.info().map(|i| i.delivered).ok();
    let guard = guard::Guard::new(sagas.clone(), cmd.clone());
    if delivered.is_none_or(|d| d > 1)
        && let Err(refused) = guard.check().await
    {
        hand_back(&msg, &cmd, &refused, &due).await;
        return;
    }
    let progress = Progress::new(bus.clone(), cmd.clone(), trace);
    if defer_for_budget(handler.as_ref(), &msg, &cmd, &progress, &due).await {
        return;
    }
    let span = step_span(&cmd, &trace, delivered);
    // A child of the coordinator's transition that sent the command.
    hypersaga_telemetry::otel::adopt(&span, &trace);
    async move {
        let started = std::time::Instant::now();
        let beat = Duration::from_millis(cmd.lease_ms.max(300) / 3).min(ack_wait / 3);
        let result = tokio::select! {
            r = progress.pacing(guard.scope(handler.run(&cmd, &progress))) => r,
            () = heartbeat(&msg, &sagas, &cmd, &progress, beat) => {
                warn!("the saga took this step back (lease lost); stopping the handler");
                tracing::Span::current().record("outcome", "lease_lost");
                let _ = msg.ack().await;
                return;
            }
        };
        // A refused mutation means the handler's answer is not the saga's to hear.
        if let Some(refused) = guard.refusal() {
            tracing::Span::current().record("outcome", "fenced");
            hand_back(&msg, &cmd, &refused, &due).await;
            return;
        }
        let outcome = outcome_of(result);
        metrics::histogram!(
            "hypersaga_step_attempt_seconds",
            "step" => cmd.step.clone(),
            "action" => cmd.action.as_str(),
            "outcome" => outcome_label(&outcome),
        )
        .record(started.elapsed().as_secs_f64());
        report(&bus, &msg, &cmd, &trace, outcome).await;
    }
    .instrument(span)
    .await
}

/// The delivered command, or `None` when it was turned away: a body that does not decode, or
/// one that disagrees with the subject it came on (the subject is what permissions vouch
/// for), is dead-lettered.
async fn read_command(
    bus: &Bus,
    msg: &async_nats::jetstream::Message,
    trace: &hypersaga_telemetry::TraceParent,
) -> Option<Arc<StepCommand>> {
    let cmd: StepCommand = match serde_json::from_slice(&msg.payload) {
        Ok(c) => c,
        Err(e) => {
            reject_undecodable(bus, msg, trace, &e).await;
            return None;
        }
    };
    let Some((tenant, _, service)) = bus.subjects().address(&msg.subject) else {
        return Some(Arc::new(cmd));
    };
    if tenant == cmd.tenant.as_str() && service == cmd.service() {
        return Some(Arc::new(cmd));
    }
    let reason = format!(
        "a command for tenant {:?}, step {:?} sent as {:?}",
        cmd.tenant.as_str(),
        cmd.step,
        msg.subject.as_str()
    );
    warn!(subject = %msg.subject, %reason, "command refused unread; dead-lettered");
    let role = hypersaga_bus::Role::Worker(service.to_owned());
    let refused = hypersaga_bus::Refused::of(msg, &role, hypersaga_bus::DeadCode::Disowned, reason);
    match bus.dead_letter(&refused).await {
        Ok(()) => {
            let _ = msg.ack_with(AckKind::Term).await;
        }
        Err(e) => {
            warn!(error = %e, "could not dead-letter a refused command; retrying later");
            let _ = msg
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
        }
    }
    None
}

/// Whether the command is held back until its `not_before` (a retry's backoff, a re-check's
/// spacing): JetStream keeps the timer, by a NAK with that delay.
async fn hold_back(
    msg: &async_nats::jetstream::Message,
    cmd: &StepCommand,
    due: &fair::Due,
) -> bool {
    let now = OffsetDateTime::now_utc();
    let Some(not_before) = cmd.not_before.filter(|t| *t > now) else {
        return false;
    };
    let wait = (not_before - now)
        .try_into()
        .unwrap_or(Duration::from_secs(1));
    nak_for(msg, cmd, wait, due).await;
    true
}

/// Hands `cmd` back to be delivered again after `wait`, and tells this replica's queues when
/// it comes due, so it is fetched then.
async fn nak_for(
    msg: &async_nats::jetstream::Message,
    cmd: &StepCommand,
    wait: Duration,
    due: &fair::Due,
) {
    let _ = msg.ack_with(AckKind::Nak(Some(wait))).await;
    due.after(&cmd.tenant, wait);
}

/// Whether the subscription's ARM request budget defers the command: it comes back well
/// within its lease, and a heartbeat with the reason keeps the step ours meanwhile.
async fn defer_for_budget(
    handler: &dyn StepHandler,
    msg: &async_nats::jetstream::Message,
    cmd: &StepCommand,
    progress: &Progress,
    due: &fair::Due,
) -> bool {
    let Some(wait) = handler.defer(cmd).await else {
        return false;
    };
    let wait = wait.min(Duration::from_millis(cmd.lease_ms / 2).max(Duration::from_millis(100)));
    progress.paced.fetch_add(
        u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    progress
        .note(format!(
            "waiting for the subscription's ARM request budget (~{} s)",
            wait.as_secs().max(1)
        ))
        .await;
    nak_for(msg, cmd, wait, due).await;
    true
}

/// The span of one attempt of one step, with every field the logs and traces are searched by.
fn step_span(
    cmd: &StepCommand,
    trace: &hypersaga_telemetry::TraceParent,
    delivered: Option<i64>,
) -> tracing::Span {
    info_span!(
        "step",
        tenant = %cmd.tenant,
        cluster = %cmd.cluster,
        operation = %cmd.saga_id,
        step = %cmd.step,
        action = cmd.action.as_str(),
        attempt = cmd.attempt,
        fence = cmd.fence,
        delivery = delivered.unwrap_or(0),
        recheck = cmd.is_recheck(),
        trace_id = %trace.trace_id(),
        outcome = field::Empty,
        otel.name = %format_args!("{} {}", cmd.step, cmd.action.as_str()),
        otel.kind = "consumer",
    )
}

/// While the handler works: keeps the command ours in JetStream, renews the coordinator's
/// lease every `beat`, and returns once the saga has taken the step back (the lease is lost).
async fn heartbeat(
    msg: &async_nats::jetstream::Message,
    sagas: &kv::Store,
    cmd: &StepCommand,
    progress: &Progress,
    beat: Duration,
) {
    let mut tick = tokio::time::interval(beat);
    tick.tick().await;
    loop {
        tick.tick().await;
        let _ = msg.ack_with(AckKind::Progress).await;
        if let Ok(fence::Verdict::MovedOn) = fence::check(sagas, cmd).await {
            return;
        }
        progress.heartbeat().await;
    }
}

/// What the handler's answer tells the saga, recorded on the step's span.
fn outcome_of(result: Result<StepResult, StepError>) -> Outcome {
    let span = tracing::Span::current();
    match result {
        Ok(StepResult::Done(outputs)) => {
            span.record("outcome", "succeeded");
            info!("step succeeded");
            Outcome::Succeeded { outputs }
        }
        Ok(StepResult::Wait {
            message,
            recheck_after,
            memo,
        }) => {
            span.record("outcome", "waiting");
            let recheck_after_ms = u64::try_from(recheck_after.as_millis()).unwrap_or(u64::MAX);
            info!(%message, recheck_after_ms, "step waiting");
            Outcome::Waiting {
                message,
                recheck_after_ms,
                memo,
            }
        }
        Err(error) => {
            let class = if error.throttled {
                "throttled"
            } else if error.is_retryable() {
                "retryable"
            } else {
                "terminal"
            };
            span.record("outcome", class);
            hypersaga_telemetry::mark_error(&span, &error.info.code, &error.info.message);
            warn!(%error, retryable = error.is_retryable(), throttled = error.throttled, "step failed");
            Outcome::Failed { error }
        }
    }
}

/// Publishes the step's result, then acknowledges the command: a result that cannot be
/// published leaves the command to be delivered again.
async fn report(
    bus: &Bus,
    msg: &async_nats::jetstream::Message,
    cmd: &StepCommand,
    trace: &hypersaga_telemetry::TraceParent,
    outcome: Outcome,
) {
    let event = StepEvent::new(cmd, outcome);
    let subject = bus.subjects().evt(&cmd.tenant, cmd.service());
    if let Err(e) = bus
        .publish_json(&subject, &event.msg_id(), trace, &event)
        .await
    {
        warn!(error = %e, "could not publish result; command will be redelivered");
        let _ = msg
            .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
            .await;
        return;
    }
    // Not waited on: an ack lost on the way only means a redelivery after the ack wait, which
    // the fence turns away once the saga has applied the result (and which the idempotent
    // handler makes harmless before that).
    if let Err(e) = msg.ack().await {
        warn!(error = %e, "ack failed; a redelivery will be fenced off");
    }
}

/// A command the fence refused, before it ran or at one of its changes: dropped when the saga
/// has moved on from it, else handed back to come again shortly. Nothing is reported.
async fn hand_back(
    msg: &async_nats::jetstream::Message,
    cmd: &StepCommand,
    refused: &Fenced,
    due: &fair::Due,
) {
    match refused.retry_after() {
        None => {
            info!(operation = %cmd.saga_id, step = %cmd.step, fence = cmd.fence, reason = %refused, "command fenced off; dropping it");
            let _ = msg.ack().await;
        }
        Some(wait) => {
            if let Fenced::Unreadable(_) = refused {
                warn!(operation = %cmd.saga_id, step = %cmd.step, reason = %refused, "command not vouched for; retrying later");
            } else {
                info!(operation = %cmd.saga_id, step = %cmd.step, fence = cmd.fence, reason = %refused, "command fenced for now; retrying shortly");
            }
            nak_for(msg, cmd, wait, due).await;
        }
    }
}

/// The `outcome` label of step metrics.
fn outcome_label(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Succeeded { .. } => "succeeded",
        Outcome::Waiting { .. } => "waiting",
        Outcome::Progress { .. } => "progress",
        Outcome::Failed { error } if error.throttled => "throttled",
        Outcome::Failed { error } if error.is_retryable() => "retryable",
        Outcome::Failed { .. } => "terminal",
    }
}

/// A command that does not decode is reported as a terminal failure of its step when at least
/// its address can be read, so the saga compensates instead of waiting forever; otherwise it is
/// terminated (and the coordinator's deadline takes over).
async fn reject_undecodable(
    bus: &Bus,
    msg: &async_nats::jetstream::Message,
    trace: &hypersaga_telemetry::TraceParent,
    e: &serde_json::Error,
) {
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
            fence: h.fence,
            outcome: Outcome::Failed {
                error: StepError::terminal(
                    "UndecodableCommand",
                    format!("the command could not be read: {e}"),
                ),
            },
            time: OffsetDateTime::now_utc(),
        };
        let service = event.step.split('.').next().unwrap_or_default().to_owned();
        let subject = bus.subjects().evt(&event.tenant, &service);
        if bus
            .publish_json(&subject, &event.msg_id(), trace, &event)
            .await
            .is_err()
        {
            let _ = msg
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
            return;
        }
    }
    let _ = msg.ack_with(AckKind::Term).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn budget_waits_are_counted_for_the_step_running_on_the_task_only() {
        let paced = Arc::new(AtomicU64::new(0));
        count_paced(Duration::from_secs(1));
        PACED
            .scope(paced.clone(), async {
                count_paced(Duration::from_millis(1_500));
                tokio::task::yield_now().await;
                count_paced(Duration::from_millis(500));
                // Another task (another step) counts for itself.
                tokio::spawn(async { count_paced(Duration::from_secs(9)) })
                    .await
                    .expect("task");
            })
            .await;
        assert_eq!(paced.load(Ordering::Relaxed), 2_000);
    }
}
