//! `hypersaga bench engine`: the saga engine's own cost, beside the bare JetStream pattern it
//! is built on.
//!
//! One private nats-server; in this process the real coordinator (`hypersaga_coordinator::run`)
//! and the real worker runtime (`hypersaga_worker::run`) with a handler that does nothing. Sagas
//! of K chained no-op steps are started as the gateway and the coordinator's build start an
//! operation: the cluster record, the saga (create-only) and its entry in the active index,
//! then a `saga.start` wake-up. The bench writes the saga itself because the coordinator would
//! build a real cluster's plan; the wake-up names no cluster record, so the coordinator goes
//! straight to the saga instead of building that plan only to find the saga there. At most M
//! are in flight. The public
//! audit stream says when each step started and succeeded and when each saga finished. The raw
//! pattern runs on the same server in the same process: KV create, then per step a command
//! (JetStream publish, acknowledged), consumed by a pull consumer, an event likewise, and a KV
//! compare-and-set, with payloads as large as the engine's. It runs twice: bare, as the issue
//! defines it, and with the public audit events the design obliges any implementation to
//! publish (one per message: the operation's start and end, every step's start and success),
//! so the output shows how much of the gap is the audit contract and how much the engine.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer, kv, stream};
use clap::Args;
use futures::StreamExt;
use hypersaga_bus::subjects::{cluster_key, saga_key};
use hypersaga_bus::{
    AUDIT_STREAM, Bus, ENVELOPE_VERSION, Outcome, Outputs, StepCommand, StepContext, StepError,
    StepEvent,
};
use hypersaga_config::{Config, Secret, TenantAzure, TenantConfig};
use hypersaga_model::record::{CLUSTER_RECORD_VERSION, OperationKind};
use hypersaga_model::{ClusterRecord, ClusterSpec, Names, NetworkSpec, NodePoolSpec, TenantId};
use hypersaga_saga::{Effect, NewSaga, RetryPolicy, Saga, StepDef, Timing, UndoPolicy};
use hypersaga_telemetry::TraceParent;
use hypersaga_worker::{Progress, StepHandler, StepResult, WorkerOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::report::{
    Summary, Table, Target, cpu_secs, emit, num, progress, ratio, rss_bytes, targets_and_notes,
};
use crate::output::Format;

/// The bench's tenant and service (`bench.step-<i>` steps go to the `bench` worker).
const TENANT: &str = "bench";
const SERVICE: &str = "bench";
/// Sagas of the unloaded run (one in flight) that measures the coordinator's own cost.
const UNLOADED_SAGAS: u64 = 200;
/// A run that sees no saga finish for this long gives up on the ones left.
const STALL: Duration = Duration::from_secs(30);

#[derive(Args, Debug)]
pub struct EngineArgs {
    /// Sagas per run (fewer when a run would take longer than --max-run-secs). Enough that
    /// the bare patterns, several times faster, still run for seconds, not a noisy fraction
    /// of one.
    #[arg(long, default_value_t = 6000, value_parser = clap::value_parser!(u64).range(1..))]
    pub sagas: u64,
    /// No-op steps per saga, chained: each starts when the one before has succeeded.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub steps: u32,
    /// Sagas kept in flight (a new one starts when one finishes); one run per value.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 256])]
    pub in_flight: Vec<usize>,
    /// Finished sagas (with their cluster records) written before the engine runs again
    /// (0: skip that round).
    #[arg(long, default_value_t = 10_000)]
    pub finished: usize,
    /// A run stops starting sagas after this many seconds; N is scaled down to fit, and the
    /// output says so.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_run_secs: u64,
    /// The coordinator's resync interval. Shorter than the default so that every run includes
    /// resyncs (which look at the active index, not at every saga; a full listing comes only
    /// every 12th), which is what the second round is about.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    pub resync_secs: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// The whole result, as `-o json` prints it.
#[derive(Debug, Serialize)]
pub struct EngineReport {
    pub bench: &'static str,
    pub steps: u32,
    pub sagas_requested: u64,
    pub in_flight: Vec<usize>,
    pub finished_present: usize,
    pub finished_write_secs: Option<f64>,
    pub max_run_secs: u64,
    pub resync_secs: u64,
    pub runs: Vec<RunResult>,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
}

/// One run: one pattern at one number of sagas in flight.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// `engine`, `raw` or `raw+audit`.
    pub pattern: &'static str,
    /// Finished sagas present in the buckets during the run.
    pub finished_present: usize,
    /// The unloaded run timed just before the finished sagas were written, on streams with
    /// the same history as the run after: what that run is compared with, so that the
    /// comparison sees the finished sagas and nothing else.
    pub before_finished: bool,
    pub in_flight: usize,
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Still in flight when the run gave up waiting (nothing finished for 30 s).
    pub stuck: u64,
    /// Whether the run stopped starting sagas at `--max-run-secs`.
    pub capped: bool,
    /// From the first start to the last finish.
    pub secs: f64,
    pub sagas_per_sec: Option<f64>,
    /// Start (first write) to the saga's terminal event.
    pub saga_ms: Summary,
    /// Engine: `step.started` → `step.succeeded` (coordinator timestamps); raw: command
    /// published → compare-and-set done.
    pub step_round_trip_ms: Summary,
    /// Engine only: one coordinator transition applying a step's result (and dispatching the
    /// next step), i.e. `Engine::process` for a completion event.
    pub coordinator_step_ms: Summary,
    /// Engine only: the first transition of a saga (its wake-up).
    pub coordinator_wake_ms: Summary,
    /// Engine only: the worker runtime per command (fence check, handler, event, ack).
    pub worker_step_ms: Summary,
    /// Growth of this process's resident memory at steady state over the run's start, per
    /// saga in flight.
    pub rss_per_in_flight_kib: Option<f64>,
    /// The same for nats-server.
    pub nats_rss_per_in_flight_kib: Option<f64>,
    /// CPU time this process (coordinator, worker and driver) used during the run, per saga
    /// completed: with `nats_cpu_ms_per_saga`, what a saga costs the machine.
    pub cpu_ms_per_saga: Option<f64>,
    /// The same for nats-server.
    pub nats_cpu_ms_per_saga: Option<f64>,
    /// Messages stored during the run per step completed, by stream (a KV bucket is a stream
    /// `KV_<bucket>`): what the pattern costs the server, whatever the machine.
    pub writes_per_step: BTreeMap<String, f64>,
}

impl RunResult {
    fn total_writes_per_step(&self) -> Option<f64> {
        (!self.writes_per_step.is_empty()).then(|| self.writes_per_step.values().sum())
    }

    fn label(&self) -> String {
        match (self.pattern, self.finished_present) {
            ("raw", _) => "raw JetStream".to_owned(),
            ("raw+audit", _) => "raw JetStream + audit".to_owned(),
            (p, 0) if self.before_finished => format!("{p}, before finished"),
            (p, 0) => p.to_owned(),
            (p, f) => format!("{p}, {f} finished"),
        }
    }
}

pub async fn run(args: EngineArgs) -> anyhow::Result<std::process::ExitCode> {
    let spans = spans::SpanTimes::install();
    let mut in_flight: Vec<usize> = args.in_flight.iter().copied().filter(|m| *m > 0).collect();
    in_flight.dedup();
    anyhow::ensure!(
        !in_flight.is_empty(),
        "--in-flight needs at least one positive number"
    );
    let max_m = in_flight.iter().copied().max().unwrap_or(1);
    let cap = Duration::from_secs(args.max_run_secs);

    let (dir, nats) = super::private_nats("engine").await?;
    let shutdown = CancellationToken::new();
    let stop_on_error = shutdown.clone().drop_guard();

    let config = bench_config(nats.url(), max_m, args.resync_secs)?;
    let coordinator = {
        let (c, s) = (config.clone(), shutdown.clone());
        tokio::spawn(async move {
            if let Err(e) = hypersaga_coordinator::run(&c, s).await {
                progress(format!("the coordinator stopped: {e}"));
            }
        })
    };
    let bus = Bus::connect(nats.url(), "hypersaga-bench", "hcp").await?;
    let worker = tokio::spawn(hypersaga_worker::run(
        bus.clone(),
        Arc::new(NoOp),
        WorkerOptions {
            service: SERVICE.into(),
            tenants: vec![TenantId::new(TENANT)?],
            concurrency: max_m.max(16),
            ack_wait: Duration::from_secs(30),
            drain_grace: Duration::from_secs(1),
        },
        shutdown.clone(),
    ));
    let engine = EngineDriver::new(bus.clone(), args.steps).await?;
    let sizes = engine.sizes()?;
    let raw = RawPattern::new(
        Bare::Raw,
        bus.jetstream().clone(),
        args.steps,
        sizes,
        shutdown.clone(),
    )
    .await?;
    let raw_audit = RawPattern::new(
        Bare::WithAudit,
        bus.jetstream().clone(),
        args.steps,
        sizes,
        shutdown.clone(),
    )
    .await?;
    let nats_pid = nats.pid();

    progress("warming up");
    let warm = (args.sagas as usize).min(100) as u64;
    engine.run(16, warm, cap, 0, nats_pid, &spans).await?;
    raw.run(16, warm, cap, nats_pid).await?;
    raw_audit.run(16, warm, cap, nats_pid).await?;

    let mut runs = Vec::new();
    // The coordinator's own cost per step is timed with one saga in flight, nothing else
    // queued: under load a transition's time is mostly waiting for a CPU shared with
    // nats-server and the worker.
    let unloaded = !in_flight.contains(&1);
    let unloaded_n = args.sagas.min(UNLOADED_SAGAS);
    if unloaded {
        progress(format!(
            "engine, unloaded: {unloaded_n} sagas of {} steps, 1 in flight",
            args.steps
        ));
        runs.push(engine.run(1, unloaded_n, cap, 0, nats_pid, &spans).await?);
    }
    for &m in &in_flight {
        progress(format!(
            "engine: {} sagas of {} steps, {m} in flight",
            args.sagas, args.steps
        ));
        runs.push(engine.run(m, args.sagas, cap, 0, nats_pid, &spans).await?);
        progress(format!("raw JetStream pattern: {m} in flight"));
        runs.push(raw.run(m, args.sagas, cap, nats_pid).await?);
        progress(format!(
            "raw JetStream pattern with the public audit events: {m} in flight"
        ));
        runs.push(raw_audit.run(m, args.sagas, cap, nats_pid).await?);
    }
    let mut finished_write_secs = None;
    if args.finished > 0 {
        // The first run at 1 in flight saw nearly empty streams; the one after the finished
        // sagas sees every loaded run's messages too. This one sees the same as that.
        progress("engine, 1 in flight, just before the finished sagas are written");
        let n = if unloaded { unloaded_n } else { args.sagas };
        let mut baseline = engine.run(1, n, cap, 0, nats_pid, &spans).await?;
        baseline.before_finished = true;
        runs.push(baseline);
        progress(format!(
            "writing {} finished sagas and their cluster records",
            args.finished
        ));
        finished_write_secs = Some(engine.write_finished(args.finished).await?);
        if unloaded {
            progress(format!(
                "engine, unloaded, with {} finished sagas present",
                args.finished
            ));
            runs.push(
                engine
                    .run(1, unloaded_n, cap, args.finished, nats_pid, &spans)
                    .await?,
            );
        }
        for &m in &in_flight {
            progress(format!(
                "engine with {} finished sagas present: {m} in flight",
                args.finished
            ));
            runs.push(
                engine
                    .run(m, args.sagas, cap, args.finished, nats_pid, &spans)
                    .await?,
            );
        }
    }

    drop(stop_on_error);
    let _ = tokio::time::timeout(Duration::from_secs(15), async {
        let _ = coordinator.await;
        let _ = worker.await;
    })
    .await;
    nats.stop().await;
    drop(dir);

    let report = EngineReport {
        bench: "engine",
        steps: args.steps,
        sagas_requested: args.sagas,
        in_flight: in_flight.clone(),
        finished_present: args.finished,
        finished_write_secs,
        max_run_secs: args.max_run_secs,
        resync_secs: args.resync_secs,
        targets: targets(&runs, &in_flight, args.finished),
        notes: notes(&runs, args.sagas, args.max_run_secs),
        runs,
    };
    emit(args.output, &report, || render(&report))?;
    Ok(std::process::ExitCode::SUCCESS)
}

fn bench_config(nats_url: &str, max_m: usize, resync_secs: u64) -> anyhow::Result<Config> {
    let mut config = Config::default();
    config.nats.url = nats_url.to_owned();
    config.tenants = vec![TenantConfig {
        id: TenantId::new(TENANT)?,
        tokens: vec![hypersaga_config::TokenDigest::of("bench-token-0123456789")],
        audit_credentials: Vec::new(),
        azure: TenantAzure {
            tenant_id: "bench".into(),
            subscription_id: "bench".into(),
            client_id: "bench".into(),
            client_secret: Some(Secret::new("bench")),
        },
    }];
    // Every saga in flight may have an event being applied at once.
    config.coordinator.concurrency = max_m.max(64);
    config.coordinator.resync_interval_ms = resync_secs * 1000;
    Ok(config)
}

/// A step that is done the moment it is asked.
struct NoOp;

#[async_trait::async_trait]
impl StepHandler for NoOp {
    async fn run(&self, _cmd: &StepCommand, _p: &Progress) -> Result<StepResult, StepError> {
        Ok(StepResult::Done(Outputs::new()))
    }
}

/// Sagas in flight and what the run measured; shared with the tasks that see sagas finish.
#[derive(Default)]
struct Tracker {
    state: Mutex<TrackState>,
    changed: Notify,
}

#[derive(Default)]
struct TrackState {
    flights: HashMap<String, Flight>,
    step_started: HashMap<(String, String), OffsetDateTime>,
    saga_ms: Vec<f64>,
    step_ms: Vec<f64>,
    completed: u64,
    failed: u64,
    last_done: Option<Instant>,
}

struct Flight {
    _permit: OwnedSemaphorePermit,
    started: Instant,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, TrackState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin(&self, id: String, permit: OwnedSemaphorePermit) {
        self.lock().flights.insert(
            id,
            Flight {
                _permit: permit,
                started: Instant::now(),
            },
        );
    }

    /// A saga finished (or failed); its slot is free again.
    fn end(&self, id: &str, ok: bool) {
        {
            let mut st = self.lock();
            let Some(flight) = st.flights.remove(id) else {
                return;
            };
            st.saga_ms
                .push(flight.started.elapsed().as_secs_f64() * 1e3);
            if ok {
                st.completed += 1;
            } else {
                st.failed += 1;
            }
            st.last_done = Some(Instant::now());
        }
        self.changed.notify_waiters();
    }

    fn step_started(&self, op: String, step: String, at: OffsetDateTime) {
        self.lock().step_started.insert((op, step), at);
    }

    fn step_succeeded(&self, op: String, step: String, at: OffsetDateTime) {
        let mut st = self.lock();
        if let Some(started) = st.step_started.remove(&(op, step)) {
            st.step_ms.push((at - started).as_seconds_f64() * 1e3);
        }
    }

    fn step_ms(&self, ms: f64) {
        self.lock().step_ms.push(ms);
    }

    fn in_flight(&self) -> usize {
        self.lock().flights.len()
    }

    /// Clears what the last run measured (not the sagas still in flight).
    fn reset(&self) {
        let mut st = self.lock();
        st.step_started.clear();
        st.saga_ms.clear();
        st.step_ms.clear();
        st.completed = 0;
        st.failed = 0;
        st.last_done = None;
    }

    /// Gives up on every saga still in flight; answers how many there were.
    fn abandon(&self) -> u64 {
        let mut st = self.lock();
        let n = st.flights.len() as u64;
        st.flights.clear();
        n
    }
}

/// What the generic part of a run measured.
struct Drive {
    started: u64,
    capped: bool,
    stuck: u64,
    secs: f64,
    completed: u64,
    failed: u64,
    saga_ms: Summary,
    step_ms: Summary,
    rss_per_in_flight_kib: Option<f64>,
    nats_rss_per_in_flight_kib: Option<f64>,
    cpu_ms_per_saga: Option<f64>,
    nats_cpu_ms_per_saga: Option<f64>,
}

/// Resident bytes of (this process, nats-server).
type Rss = (Option<u64>, Option<u64>);

/// Starts up to `n` sagas, at most `m` in flight, none after `cap`; waits for them to finish;
/// samples memory while the run is at full flight.
async fn drive<F, Fut>(
    tracker: &Arc<Tracker>,
    m: usize,
    n: u64,
    cap: Duration,
    nats_pid: Option<u32>,
    mut start: F,
) -> anyhow::Result<Drive>
where
    F: FnMut(u64) -> (String, Fut),
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    tracker.reset();
    let permits = Arc::new(Semaphore::new(m));
    let baseline = (rss_bytes(None), rss_bytes(nats_pid));
    let cpu_before = (cpu_secs(None), cpu_secs(nats_pid));
    let samples: Arc<Mutex<Vec<Rss>>> = Arc::default();
    let sampling = CancellationToken::new();
    let sampler = {
        let (tracker, samples, stop) = (tracker.clone(), samples.clone(), sampling.clone());
        // Full flight: M sagas, or all of them when there are fewer.
        let full = (m.min(usize::try_from(n).unwrap_or(usize::MAX)) * 9 / 10).max(1);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                if tracker.in_flight() >= full {
                    let s = (rss_bytes(None), rss_bytes(nats_pid));
                    samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
                }
            }
        })
    };
    let t0 = Instant::now();
    let mut started = 0u64;
    let mut capped = false;
    while started < n {
        if t0.elapsed() >= cap {
            capped = true;
            break;
        }
        let permit = permits.clone().acquire_owned().await?;
        let (id, fut) = start(started);
        tracker.begin(id.clone(), permit);
        let tracker = tracker.clone();
        tokio::spawn(async move {
            if let Err(e) = fut.await {
                progress(format!("could not start {id}: {e:#}"));
                tracker.end(&id, false);
            }
        });
        started += 1;
    }
    sampling.cancel();
    let _ = sampler.await;
    // Wait for the last ones, giving up when nothing finishes for a while.
    let mut last_progress = Instant::now();
    let mut left = tracker.in_flight();
    while left > 0 && last_progress.elapsed() < STALL {
        let _ = tokio::time::timeout(Duration::from_millis(200), tracker.changed.notified()).await;
        let now_left = tracker.in_flight();
        if now_left < left {
            last_progress = Instant::now();
        }
        left = now_left;
    }
    let cpu_after = (cpu_secs(None), cpu_secs(nats_pid));
    let stuck = tracker.abandon();
    let st = std::mem::take(&mut *tracker.lock());
    let cpu_ms = |before: Option<f64>, after: Option<f64>| {
        (st.completed > 0).then_some((after? - before?) * 1e3 / st.completed as f64)
    };
    let secs = st.last_done.map_or(0.0, |d| (d - t0).as_secs_f64());
    let samples = samples.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let growth = |pick: fn(&Rss) -> Option<u64>, base: Option<u64>| {
        let values: Vec<f64> = samples.iter().filter_map(pick).map(|b| b as f64).collect();
        let steady = Summary::of(values).p50?;
        Some(((steady - base? as f64) / 1024.0 / m as f64).max(0.0))
    };
    Ok(Drive {
        started,
        capped,
        stuck,
        secs,
        completed: st.completed,
        failed: st.failed,
        saga_ms: Summary::of(st.saga_ms),
        step_ms: Summary::of(st.step_ms),
        rss_per_in_flight_kib: growth(|s| s.0, baseline.0),
        nats_rss_per_in_flight_kib: growth(|s| s.1, baseline.1),
        cpu_ms_per_saga: cpu_ms(cpu_before.0, cpu_after.0),
        nats_cpu_ms_per_saga: cpu_ms(cpu_before.1, cpu_after.1),
    })
}

/// Payload sizes of the engine's messages, so the raw pattern moves as many bytes.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    saga: usize,
    command: usize,
    event: usize,
    audit: usize,
}

/// Drives sagas through the real coordinator and worker.
struct EngineDriver {
    bus: Bus,
    sagas: kv::Store,
    clusters: kv::Store,
    active: kv::Store,
    tenant: TenantId,
    steps: u32,
    tracker: Arc<Tracker>,
    runs: AtomicUsize,
}

/// The fields of an audit event the bench needs.
#[derive(Deserialize)]
struct AuditLite {
    #[serde(rename = "type")]
    kind: String,
    operation: String,
    #[serde(default)]
    step: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    time: OffsetDateTime,
}

impl EngineDriver {
    async fn new(bus: Bus, steps: u32) -> anyhow::Result<Self> {
        let tenant = TenantId::new(TENANT)?;
        let tracker = Arc::new(Tracker::default());
        // Follow the tenant's audit stream from now on: it says when steps start and succeed
        // and when sagas end.
        let audit = bus
            .jetstream()
            .get_stream(AUDIT_STREAM)
            .await
            .context("opening the audit stream")?;
        let consumer = audit
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: bus.subjects().audit_filter(Some(&tenant)),
                deliver_policy: consumer::DeliverPolicy::New,
                ..Default::default()
            })
            .await
            .context("following the audit stream")?;
        let mut messages = consumer
            .messages()
            .await
            .context("following the audit stream")?;
        let t = tracker.clone();
        tokio::spawn(async move {
            while let Some(msg) = messages.next().await {
                let msg = match msg {
                    Ok(m) => m,
                    Err(e) => {
                        progress(format!("audit stream: {e}"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(ev) = serde_json::from_slice::<AuditLite>(&msg.payload) else {
                    continue;
                };
                match (ev.kind.as_str(), ev.step) {
                    ("step.started", Some(step)) => t.step_started(ev.operation, step, ev.time),
                    ("step.succeeded", Some(step)) => t.step_succeeded(ev.operation, step, ev.time),
                    ("cluster.ready", _) => t.end(&ev.operation, true),
                    ("cluster.failed" | "saga.paused", _) => t.end(&ev.operation, false),
                    _ => {}
                }
            }
        });
        Ok(Self {
            sagas: bus.sagas().await?,
            clusters: bus.clusters().await?,
            active: bus.active().await?,
            bus,
            tenant,
            steps,
            tracker,
            runs: AtomicUsize::new(0),
        })
    }

    fn sizes(&self) -> anyhow::Result<Sizes> {
        let now = OffsetDateTime::now_utc();
        let (mut saga, _) = new_saga(&self.tenant, "sizes", "op-sizes", self.steps, now)?;
        let saga_len = serde_json::to_vec(&saga)?.len();
        saga.advance(now);
        let cmd = saga
            .outbox_commands()
            .into_iter()
            .next()
            .context("the bench saga dispatches nothing")?;
        let event = StepEvent::new(
            &cmd,
            Outcome::Succeeded {
                outputs: Outputs::new(),
            },
        );
        let audit = saga
            .outbox
            .iter()
            .find_map(|e| match e {
                Effect::Audit(ev) => serde_json::to_vec(ev).ok().map(|v| v.len()),
                _ => None,
            })
            .context("the bench saga audits nothing")?;
        Ok(Sizes {
            saga: saga_len,
            command: serde_json::to_vec(&cmd)?.len(),
            event: serde_json::to_vec(&event)?.len(),
            audit,
        })
    }

    /// One run of up to `n` sagas, `m` in flight.
    async fn run(
        &self,
        m: usize,
        n: u64,
        cap: Duration,
        finished_present: usize,
        nats_pid: Option<u32>,
        spans: &spans::SpanTimes,
    ) -> anyhow::Result<RunResult> {
        let run = self.runs.fetch_add(1, Ordering::Relaxed);
        spans.take();
        let stored_before = stored(self.bus.jetstream(), |s| !is_bare(s)).await?;
        let d = drive(&self.tracker, m, n, cap, nats_pid, |i| {
            let op = format!("op-{}", uuid::Uuid::new_v4().simple());
            let cluster = format!("e{run}-{i}");
            let (bus, sagas, clusters, active, tenant, steps) = (
                self.bus.clone(),
                self.sagas.clone(),
                self.clusters.clone(),
                self.active.clone(),
                self.tenant.clone(),
                self.steps,
            );
            let id = op.clone();
            let fut = async move {
                let now = OffsetDateTime::now_utc();
                let (mut saga, record) = new_saga(&tenant, &cluster, &op, steps, now)?;
                // As the coordinator's build does: written with its first transition applied.
                saga.advance(now);
                saga.reschedule(now);
                clusters
                    .create(
                        cluster_key(&tenant, &cluster),
                        serde_json::to_vec(&record)?.into(),
                    )
                    .await
                    .context("writing the cluster record")?;
                // As the coordinator's build does: indexed first, then written.
                let key = saga_key(&tenant, &op);
                active
                    .put(&key, Default::default())
                    .await
                    .context("indexing the saga")?;
                sagas
                    .create(&key, serde_json::to_vec(&saga)?.into())
                    .await
                    .context("writing the saga")?;
                // Built as JSON so the bench keeps up with fields the wake-up gains. No
                // cluster: the saga is there, nothing to build.
                let wake = json!({
                    "v": ENVELOPE_VERSION,
                    "tenant": tenant,
                    "saga_id": op,
                });
                bus.publish_json(
                    &bus.subjects().saga_start(&tenant),
                    &format!("{op}:wake"),
                    &TraceParent::with_trace_id(&saga.trace_id),
                    &wake,
                )
                .await
                .context("waking the coordinator")?;
                Ok(())
            };
            (id, fut)
        })
        .await?;
        // A saga's last transition still updates its cluster record and leaves the active
        // index after the terminal event is out: let those spans close before reading them.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let times = spans.take();
        let stored_after = stored(self.bus.jetstream(), |s| !is_bare(s)).await?;
        Ok(RunResult {
            pattern: "engine",
            finished_present,
            before_finished: false,
            in_flight: m,
            started: d.started,
            completed: d.completed,
            failed: d.failed,
            stuck: d.stuck,
            capped: d.capped,
            secs: d.secs,
            sagas_per_sec: (d.secs > 0.0).then(|| d.completed as f64 / d.secs),
            saga_ms: d.saga_ms,
            step_round_trip_ms: d.step_ms,
            coordinator_step_ms: Summary::of(times.coordinator_event_ms),
            coordinator_wake_ms: Summary::of(times.coordinator_wake_ms),
            worker_step_ms: Summary::of(times.worker_ms),
            rss_per_in_flight_kib: d.rss_per_in_flight_kib,
            nats_rss_per_in_flight_kib: d.nats_rss_per_in_flight_kib,
            cpu_ms_per_saga: d.cpu_ms_per_saga,
            nats_cpu_ms_per_saga: d.nats_cpu_ms_per_saga,
            writes_per_step: per_step(
                &stored_before,
                &stored_after,
                d.completed * u64::from(self.steps),
            ),
        })
    }

    /// Writes `count` finished sagas and their (ready) cluster records; answers the seconds
    /// it took.
    async fn write_finished(&self, count: usize) -> anyhow::Result<f64> {
        let t0 = Instant::now();
        let results: Vec<anyhow::Result<()>> = futures::stream::iter(0..count)
            .map(|i| {
                let (sagas, clusters, tenant, steps) = (
                    self.sagas.clone(),
                    self.clusters.clone(),
                    self.tenant.clone(),
                    self.steps,
                );
                async move {
                    let op = format!("op-{}", uuid::Uuid::new_v4().simple());
                    let cluster = format!("done-{i}");
                    let now = OffsetDateTime::now_utc();
                    let (saga, record) = finished_saga(&tenant, &cluster, &op, steps, now)?;
                    clusters
                        .put(
                            cluster_key(&tenant, &cluster),
                            serde_json::to_vec(&record)?.into(),
                        )
                        .await?;
                    sagas
                        .put(saga_key(&tenant, &op), serde_json::to_vec(&saga)?.into())
                        .await?;
                    Ok(())
                }
            })
            .buffer_unordered(64)
            .collect()
            .await;
        let failed = results.iter().filter(|r| r.is_err()).count();
        if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
            anyhow::bail!("{failed} of {count} finished sagas could not be written: {e:#}");
        }
        Ok(t0.elapsed().as_secs_f64())
    }
}

/// The plan: `bench.step-1` → `bench.step-2` → … (each depends on the one before).
fn plan(steps: u32) -> Vec<StepDef> {
    (1..=steps)
        .map(|i| StepDef {
            id: format!("{SERVICE}.step-{i}"),
            deps: if i > 1 {
                vec![format!("{SERVICE}.step-{}", i - 1)]
            } else {
                Vec::new()
            },
            undo: UndoPolicy::Undo,
        })
        .collect()
}

fn spec() -> ClusterSpec {
    ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into(),
        node_pools: vec![NodePoolSpec::new("workers", 2, "Standard_D4s_v5")],
        network: NetworkSpec::default(),
        addons: Vec::new(),
    }
}

/// A new saga of the bench plan and its cluster record, as the gateway writes them.
fn new_saga(
    tenant: &TenantId,
    cluster: &str,
    op: &str,
    steps: u32,
    now: OffsetDateTime,
) -> anyhow::Result<(Saga, ClusterRecord)> {
    let spec = spec();
    let uid = uuid::Uuid::new_v4().to_string();
    let infra = hypersaga_model::names::infra_id(cluster, &uid);
    let actor = format!("tenant:{tenant}");
    let saga = Saga::new(
        NewSaga {
            id: op.to_owned(),
            tenant: tenant.clone(),
            cluster: cluster.to_owned(),
            kind: OperationKind::Create,
            plan: plan(steps),
            context: StepContext {
                cluster_uid: uid.clone(),
                names: Names::new(tenant, cluster, &infra, &spec.base_domain),
                spec: spec.clone(),
                outputs: Default::default(),
                management_cluster: "default".into(),
            },
            retry: RetryPolicy::default(),
            timing: Timing::default(),
            timeout: time::Duration::hours(1),
            request_id: None,
            actor,
            trace_id: TraceParent::new_root().trace_id(),
            after: None,
            node_pool: None,
            addon: None,
        },
        now,
    );
    let record = cluster_record(&saga, &uid, &infra, &spec, "accepted", 0, now)?;
    Ok((saga, record))
}

/// A saga of the bench plan run to its end (every step succeeded), with its cluster record.
fn finished_saga(
    tenant: &TenantId,
    cluster: &str,
    op: &str,
    steps: u32,
    now: OffsetDateTime,
) -> anyhow::Result<(Saga, ClusterRecord)> {
    let (mut saga, record) = new_saga(tenant, cluster, op, steps, now)?;
    saga.advance(now);
    for _ in 0..=steps {
        let commands = saga.outbox_commands();
        saga.outbox.clear();
        if commands.is_empty() {
            break;
        }
        for c in commands {
            let done = StepEvent::new(
                &c,
                Outcome::Succeeded {
                    outputs: Outputs::new(),
                },
            );
            saga.apply(&done, now);
        }
    }
    // As the engine leaves a finished saga: its last outbox published, and kept.
    anyhow::ensure!(saga.is_finished(), "the bench saga did not finish");
    let record = cluster_record(
        &saga,
        &record.uid,
        &record.infra_id,
        &record.spec,
        "ready",
        saga.seq,
        now,
    )?;
    Ok((saga, record))
}

/// The cluster record naming `saga` as its operation. Built as JSON and read back, so the
/// bench keeps working as the record gains (defaulted) fields.
fn cluster_record(
    saga: &Saga,
    uid: &str,
    infra: &str,
    spec: &ClusterSpec,
    message: &str,
    saga_seq: u64,
    now: OffsetDateTime,
) -> anyhow::Result<ClusterRecord> {
    let value = json!({
        "v": CLUSTER_RECORD_VERSION,
        "tenant": saga.tenant,
        "name": saga.cluster,
        "uid": uid,
        "infra_id": infra,
        "spec": spec,
        "created_at": now.format(&Rfc3339)?,
        "phase": saga.cluster_phase(),
        "message": message,
        "operation": saga.view(),
        "resources": saga.resources(),
        "saga_seq": saga_seq,
        "management_cluster": "default",
        "intent": {
            "operation": saga.id,
            "actor": saga.actor,
            "trace_id": saga.trace_id,
        },
    });
    serde_json::from_value(value).context("building the bench's cluster record")
}

/// Which bare pattern a [`RawPattern`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bare {
    /// The issue's: a KV record, and per step a command, an event and a compare-and-set.
    Raw,
    /// The same, plus the public audit events the design obliges every implementation to
    /// publish, one per message: the operation's start and end, each step's start and
    /// success. What no engine honouring that contract can do with less.
    WithAudit,
}

impl Bare {
    fn pattern(self) -> &'static str {
        match self {
            Bare::Raw => "raw",
            Bare::WithAudit => "raw+audit",
        }
    }

    /// Stream, subject and bucket names: `(stream prefix, subject prefix, bucket)`.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Bare::Raw => ("BENCH_RAW", "bench.raw", "bench_raw"),
            Bare::WithAudit => ("BENCH_RAWAUDIT", "bench.rawaudit", "bench_rawaudit"),
        }
    }
}

/// The bare JetStream pattern: what one saga of K steps costs with nothing but a KV record,
/// a command stream and an event stream (and, [`Bare::WithAudit`], an audit stream).
struct RawPattern {
    bare: Bare,
    js: jetstream::Context,
    kv: kv::Store,
    tracker: Arc<Tracker>,
    pads: Arc<Pads>,
    base: Instant,
    runs: AtomicUsize,
}

/// Padding that makes the raw pattern's record, commands, events and audit events as large as
/// the engine's, and the subjects it publishes on.
struct Pads {
    record: String,
    command: String,
    event: String,
    audit: String,
    steps: u32,
    cmd_subject: String,
    evt_subject: String,
    /// `None`: no audit events ([`Bare::Raw`]).
    audit_subject: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct RawMsg {
    key: String,
    step: u32,
    rev: u64,
    /// When the command was published, in ns since the bench's base instant.
    sent_ns: u64,
    #[serde(default)]
    pad: String,
}

impl Pads {
    /// A message of this pattern on `subject`, padded with `pad`.
    fn msg(
        subject: &str,
        id: String,
        key: &str,
        step: u32,
        rev: u64,
        sent_ns: u64,
        pad: &str,
    ) -> Out {
        Out {
            subject: subject.to_owned(),
            id,
            body: RawMsg {
                key: key.to_owned(),
                step,
                rev,
                sent_ns,
                pad: pad.to_owned(),
            },
        }
    }

    /// The audit event `what` of the saga at `key` (none without an audit stream).
    fn audit(&self, key: &str, step: u32, what: &str) -> Option<Out> {
        let subject = self.audit_subject.as_deref()?;
        Some(Self::msg(
            subject,
            format!("{key}:{step}:{what}"),
            key,
            step,
            0,
            0,
            &self.audit,
        ))
    }

    /// The command for `step`, then (with an audit stream) its `step.started` event.
    fn dispatch(&self, key: &str, step: u32, rev: u64, sent_ns: u64) -> Vec<Out> {
        let cmd = Self::msg(
            &self.cmd_subject,
            format!("{key}:{step}:cmd"),
            key,
            step,
            rev,
            sent_ns,
            &self.command,
        );
        std::iter::once(cmd)
            .chain(self.audit(key, step, "started"))
            .collect()
    }
}

/// One message to publish.
struct Out {
    subject: String,
    id: String,
    body: RawMsg,
}

impl RawPattern {
    async fn new(
        bare: Bare,
        js: jetstream::Context,
        steps: u32,
        sizes: Sizes,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Self> {
        let (stream, subject, bucket) = bare.names();
        let mut subjects = vec![(format!("{stream}_CMD"), format!("{subject}.cmd"), true)];
        subjects.push((format!("{stream}_EVT"), format!("{subject}.evt"), false));
        if bare == Bare::WithAudit {
            subjects.push((format!("{stream}_AUDIT"), format!("{subject}.audit"), false));
        }
        for (name, subject, work_queue) in &subjects {
            js.get_or_create_stream(stream::Config {
                name: name.clone(),
                subjects: vec![subject.clone()],
                retention: if *work_queue {
                    stream::RetentionPolicy::WorkQueue
                } else {
                    stream::RetentionPolicy::Limits
                },
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .with_context(|| format!("creating the stream {name}"))?;
        }
        let kv = js
            .create_key_value(kv::Config {
                bucket: bucket.into(),
                history: 5,
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .context("creating the raw KV bucket")?;
        // Framing (key, step, revision, time) is ~100 bytes of each message.
        let pad = |n: usize| "x".repeat(n.saturating_sub(100));
        let pads = Arc::new(Pads {
            record: pad(sizes.saga),
            command: pad(sizes.command),
            event: pad(sizes.event),
            audit: pad(sizes.audit),
            steps,
            cmd_subject: subjects[0].1.clone(),
            evt_subject: subjects[1].1.clone(),
            audit_subject: subjects.get(2).map(|s| s.1.clone()),
        });
        let raw = Self {
            bare,
            tracker: Arc::new(Tracker::default()),
            pads,
            base: Instant::now(),
            runs: AtomicUsize::new(0),
            kv,
            js,
        };
        raw.spawn_worker(shutdown.clone()).await?;
        raw.spawn_coordinator(shutdown.clone()).await?;
        if bare == Bare::WithAudit {
            raw.spawn_audit_subscriber(shutdown).await?;
        }
        Ok(raw)
    }

    /// The streams (and the bucket's stream) this pattern writes.
    fn owns(&self, name: &str) -> bool {
        let (stream, _, bucket) = self.bare.names();
        [
            format!("{stream}_CMD"),
            format!("{stream}_EVT"),
            format!("{stream}_AUDIT"),
            format!("KV_{bucket}"),
        ]
        .iter()
        .any(|n| n == name)
    }

    async fn pull(&self, kind: &str) -> anyhow::Result<consumer::pull::Stream> {
        let (stream, _, _) = self.bare.names();
        let stream = format!("{stream}_{}", kind.to_uppercase());
        let name = format!("raw-{kind}");
        let consumer = self
            .js
            .get_stream(&stream)
            .await?
            .get_or_create_consumer(
                &name,
                consumer::pull::Config {
                    durable_name: Some(name.clone()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    max_ack_pending: 10_000,
                    ..Default::default()
                },
            )
            .await
            .with_context(|| format!("creating consumer {name}"))?;
        Ok(consumer
            .stream()
            .max_messages_per_batch(256)
            .messages()
            .await?)
    }

    /// Consumes each command and answers it with an event (published, acknowledged), then
    /// acknowledges the command.
    async fn spawn_worker(&self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let mut messages = self.pull("cmd").await?;
        let (js, pads) = (self.js.clone(), self.pads.clone());
        tokio::spawn(async move {
            loop {
                let msg = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    m = messages.next() => match m {
                        Some(Ok(m)) => m,
                        Some(Err(_)) => continue,
                        None => return,
                    },
                };
                let (js, pads) = (js.clone(), pads.clone());
                tokio::spawn(async move {
                    if let Ok(m) = serde_json::from_slice::<RawMsg>(&msg.payload) {
                        let id = format!("{}:{}:evt", m.key, m.step);
                        let evt = Pads::msg(
                            &pads.evt_subject,
                            id,
                            &m.key,
                            m.step,
                            m.rev,
                            m.sent_ns,
                            &pads.event,
                        );
                        if publish(&js, vec![evt]).await.is_err() {
                            return;
                        }
                    }
                    let _ = msg.ack().await;
                });
            }
        });
        Ok(())
    }

    /// Consumes each event: compare-and-set of the record, then the next command (and, with
    /// an audit stream, the step's success and the next step's start, or the saga's end), all
    /// published at once and then their acks awaited, as an outbox is.
    async fn spawn_coordinator(&self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let mut messages = self.pull("evt").await?;
        let (js, kv, pads, tracker, base) = (
            self.js.clone(),
            self.kv.clone(),
            self.pads.clone(),
            self.tracker.clone(),
            self.base,
        );
        tokio::spawn(async move {
            loop {
                let msg = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    m = messages.next() => match m {
                        Some(Ok(m)) => m,
                        Some(Err(_)) => continue,
                        None => return,
                    },
                };
                let (js, kv, pads, tracker) =
                    (js.clone(), kv.clone(), pads.clone(), tracker.clone());
                tokio::spawn(async move {
                    let Ok(ev) = serde_json::from_slice::<RawMsg>(&msg.payload) else {
                        let _ = msg.ack().await;
                        return;
                    };
                    let value = json!({ "step": ev.step, "pad": pads.record });
                    let rev = match kv.update(&ev.key, value.to_string().into(), ev.rev).await {
                        Ok(r) => r,
                        Err(_) => {
                            tracker.end(&ev.key, false);
                            let _ = msg.ack().await;
                            return;
                        }
                    };
                    let now_ns = base.elapsed().as_nanos() as u64;
                    tracker.step_ms(now_ns.saturating_sub(ev.sent_ns) as f64 / 1e6);
                    let mut out: Vec<Out> = pads
                        .audit(&ev.key, ev.step, "succeeded")
                        .into_iter()
                        .collect();
                    let last = ev.step >= pads.steps;
                    if last {
                        out.extend(pads.audit(&ev.key, 0, "ready"));
                    } else {
                        out.extend(pads.dispatch(&ev.key, ev.step + 1, rev, now_ns));
                    }
                    if publish(&js, out).await.is_err() {
                        tracker.end(&ev.key, false);
                    } else if last {
                        tracker.end(&ev.key, true);
                    }
                    let _ = msg.ack().await;
                });
            }
        });
        Ok(())
    }

    /// Follows the audit stream as the engine's run does (an ordered consumer reading every
    /// event), so both pay for one audit subscriber.
    async fn spawn_audit_subscriber(&self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let (stream, _, _) = self.bare.names();
        let mut messages = self
            .js
            .get_stream(format!("{stream}_AUDIT"))
            .await?
            .create_consumer(consumer::pull::OrderedConfig {
                deliver_policy: consumer::DeliverPolicy::New,
                ..Default::default()
            })
            .await
            .context("following the raw audit stream")?
            .messages()
            .await?;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    m = messages.next() => match m {
                        Some(Ok(m)) => {
                            let _ = serde_json::from_slice::<RawMsg>(&m.payload);
                        }
                        Some(Err(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
                        None => return,
                    },
                }
            }
        });
        Ok(())
    }

    async fn run(
        &self,
        m: usize,
        n: u64,
        cap: Duration,
        nats_pid: Option<u32>,
    ) -> anyhow::Result<RunResult> {
        let run = self.runs.fetch_add(1, Ordering::Relaxed);
        let owns = |s: &str| self.owns(s);
        let stored_before = stored(&self.js, owns).await?;
        let d = drive(&self.tracker, m, n, cap, nats_pid, |i| {
            let key = format!("r{run}-{i}");
            let (js, kv, pads, base) = (
                self.js.clone(),
                self.kv.clone(),
                self.pads.clone(),
                self.base,
            );
            let id = key.clone();
            let fut = async move {
                let value = json!({ "step": 0, "pad": pads.record });
                let rev = kv
                    .create(&key, value.to_string().into())
                    .await
                    .context("KV create")?;
                let sent_ns = base.elapsed().as_nanos() as u64;
                let out = pads
                    .audit(&key, 0, "accepted")
                    .into_iter()
                    .chain(pads.dispatch(&key, 1, rev, sent_ns))
                    .collect();
                publish(&js, out).await
            };
            (id, fut)
        })
        .await?;
        Ok(RunResult {
            pattern: self.bare.pattern(),
            finished_present: 0,
            before_finished: false,
            in_flight: m,
            started: d.started,
            completed: d.completed,
            failed: d.failed,
            stuck: d.stuck,
            capped: d.capped,
            secs: d.secs,
            sagas_per_sec: (d.secs > 0.0).then(|| d.completed as f64 / d.secs),
            saga_ms: d.saga_ms,
            step_round_trip_ms: d.step_ms,
            coordinator_step_ms: Summary::default(),
            coordinator_wake_ms: Summary::default(),
            worker_step_ms: Summary::default(),
            rss_per_in_flight_kib: d.rss_per_in_flight_kib,
            nats_rss_per_in_flight_kib: d.nats_rss_per_in_flight_kib,
            cpu_ms_per_saga: d.cpu_ms_per_saga,
            nats_cpu_ms_per_saga: d.nats_cpu_ms_per_saga,
            writes_per_step: per_step(
                &stored_before,
                &stored(&self.js, owns).await?,
                d.completed * u64::from(self.pads.steps),
            ),
        })
    }
}

/// Whether `stream` is one of the bare patterns' (their buckets are the streams `KV_<bucket>`).
fn is_bare(stream: &str) -> bool {
    [Bare::Raw, Bare::WithAudit].iter().any(|b| {
        let (prefix, _, bucket) = b.names();
        stream.starts_with(&format!("{prefix}_")) || stream == format!("KV_{bucket}")
    })
}

/// Messages each stream chosen by `pick` has stored so far (its last sequence: what was
/// written, whatever has expired or been consumed since).
async fn stored(
    js: &jetstream::Context,
    pick: impl Fn(&str) -> bool,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let mut streams = js.streams();
    while let Some(info) = streams.next().await {
        let info = info.context("listing streams")?;
        if pick(&info.config.name) {
            out.insert(info.config.name, info.state.last_sequence);
        }
    }
    Ok(out)
}

/// Messages stored between `before` and `after` per step completed, by stream.
fn per_step(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    steps: u64,
) -> BTreeMap<String, f64> {
    if steps == 0 {
        return BTreeMap::new();
    }
    after
        .iter()
        .filter_map(|(name, &last)| {
            let wrote = last.saturating_sub(before.get(name).copied().unwrap_or(0));
            (wrote > 0).then(|| (name.clone(), wrote as f64 / steps as f64))
        })
        .collect()
}

/// JetStream publishes with de-duplication ids, all sent before any ack is awaited.
async fn publish(js: &jetstream::Context, out: Vec<Out>) -> anyhow::Result<()> {
    let mut acks = Vec::with_capacity(out.len());
    for one in out {
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, one.id.as_str());
        let payload = serde_json::to_vec(&one.body)?;
        acks.push(
            js.publish_with_headers(one.subject, headers, payload.into())
                .await?,
        );
    }
    for ack in acks {
        ack.await?;
    }
    Ok(())
}

fn find<'a>(
    runs: &'a [RunResult],
    pattern: &str,
    m: usize,
    finished: usize,
) -> Option<&'a RunResult> {
    runs.iter().find(|r| {
        r.pattern == pattern
            && r.in_flight == m
            && r.finished_present == finished
            && !r.before_finished
    })
}

/// The figures, each beside its target.
fn targets(runs: &[RunResult], in_flight: &[usize], finished: usize) -> Vec<Target> {
    let mut out = Vec::new();
    for &m in in_flight {
        let engine = find(runs, "engine", m, 0);
        let raw = find(runs, "raw", m, 0);
        out.push(Target::new(
            format!("engine / raw sagas/s @{m}"),
            ratio(
                engine.and_then(|r| r.sagas_per_sec),
                raw.and_then(|r| r.sagas_per_sec),
            ),
            "ratio",
            ">= 0.50",
        ));
        let with_audit = find(runs, "raw+audit", m, 0);
        out.push(Target::new(
            format!("raw+audit / raw sagas/s @{m}"),
            ratio(
                with_audit.and_then(|r| r.sagas_per_sec),
                raw.and_then(|r| r.sagas_per_sec),
            ),
            "ratio",
            "(no target; the most any engine publishing the audit contract can reach)",
        ));
        out.push(Target::new(
            format!("engine / raw+audit sagas/s @{m}"),
            ratio(
                engine.and_then(|r| r.sagas_per_sec),
                with_audit.and_then(|r| r.sagas_per_sec),
            ),
            "ratio",
            "(no target; the engine's own cost)",
        ));
    }
    let unloaded = find(runs, "engine", 1, 0);
    out.push(Target::new(
        "coordinator per step p50, unloaded (1 in flight)",
        unloaded.and_then(|r| r.coordinator_step_ms.p50),
        "ms",
        "<= 1 ms",
    ));
    out.push(Target::new(
        "coordinator per step p99, unloaded (1 in flight)",
        unloaded.and_then(|r| r.coordinator_step_ms.p99),
        "ms",
        "(no target; for context)",
    ));
    for &m in in_flight.iter().filter(|m| **m != 1) {
        let engine = find(runs, "engine", m, 0);
        out.push(Target::new(
            format!("coordinator per step p50 @{m}"),
            engine.and_then(|r| r.coordinator_step_ms.p50),
            "ms",
            "(no target; waits for CPU included)",
        ));
    }
    if finished > 0 {
        let with = find(runs, "engine", 1, finished);
        let before = runs
            .iter()
            .find(|r| r.pattern == "engine" && r.in_flight == 1 && r.before_finished)
            .or(unloaded);
        out.push(Target::new(
            format!("coordinator per step p50, {finished} finished / none, unloaded"),
            ratio(
                with.and_then(|r| r.coordinator_step_ms.p50),
                before.and_then(|r| r.coordinator_step_ms.p50),
            ),
            "ratio",
            "0.90 – 1.10",
        ));
        for &m in in_flight.iter().filter(|m| **m != 1) {
            let without = find(runs, "engine", m, 0);
            let with = find(runs, "engine", m, finished);
            out.push(Target::new(
                format!("coordinator per step p50, {finished} finished / none @{m}"),
                ratio(
                    with.and_then(|r| r.coordinator_step_ms.p50),
                    without.and_then(|r| r.coordinator_step_ms.p50),
                ),
                "ratio",
                "(no target; waits for CPU included)",
            ));
            out.push(Target::new(
                format!("sagas/s, {finished} finished / none @{m}"),
                ratio(
                    with.and_then(|r| r.sagas_per_sec),
                    without.and_then(|r| r.sagas_per_sec),
                ),
                "ratio",
                "(no target; for context)",
            ));
        }
    }
    out
}

fn notes(runs: &[RunResult], requested: u64, cap: u64) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        if r.capped {
            out.push(format!(
                "{} @{}: N scaled down from {requested} to {} to keep the run under {cap} s",
                r.label(),
                r.in_flight,
                r.started
            ));
        }
        if r.failed > 0 || r.stuck > 0 {
            out.push(format!(
                "{} @{}: {} failed, {} still unfinished after {} s without progress",
                r.label(),
                r.in_flight,
                r.failed,
                r.stuck,
                STALL.as_secs()
            ));
        }
    }
    if cfg!(debug_assertions) {
        out.push(
            "this hypersaga is a debug build: absolute figures are pessimistic (the engine's \
             serialisation suffers more than the raw pattern's); for figures to judge, \
             `cargo build --release -p hypersaga` and run target/release/hypersaga"
                .to_owned(),
        );
    }
    if runs
        .iter()
        .any(|r| r.pattern == "engine" && r.coordinator_step_ms.n == 0)
    {
        out.push(
            "no coordinator transitions were timed: the coordinator's `saga` span was not seen \
             (renamed?), so COORD columns are empty"
                .to_owned(),
        );
    }
    out
}

fn ms(s: &Summary) -> (String, String) {
    (num(s.p50, 2), num(s.p99, 2))
}

fn render(r: &EngineReport) -> String {
    let mut out = format!(
        "hypersaga bench engine: sagas of {} chained no-op steps through the real coordinator \
         and worker runtime, beside the raw JetStream pattern, on one private nats-server\n\n",
        r.steps
    );
    let mut t = Table::new([
        "RUN",
        "IN-FLIGHT",
        "SAGAS",
        "SECS",
        "SAGAS/S",
        "SAGA P50",
        "SAGA P99",
        "STEP P50",
        "STEP P99",
        "COORD P50",
        "COORD P99",
        "WAKE P50",
        "WORKER P50",
        "KiB/SAGA",
        "NATS KiB/SAGA",
        "WRITES/STEP",
    ]);
    for run in &r.runs {
        let (saga50, saga99) = ms(&run.saga_ms);
        let (step50, step99) = ms(&run.step_round_trip_ms);
        let (c50, c99) = ms(&run.coordinator_step_ms);
        t.row([
            run.label(),
            run.in_flight.to_string(),
            run.completed.to_string(),
            num(Some(run.secs), 1),
            num(run.sagas_per_sec, 1),
            saga50,
            saga99,
            step50,
            step99,
            c50,
            c99,
            num(run.coordinator_wake_ms.p50, 2),
            num(run.worker_step_ms.p50, 2),
            num(run.rss_per_in_flight_kib, 1),
            num(run.nats_rss_per_in_flight_kib, 1),
            num(run.total_writes_per_step(), 2),
        ]);
    }
    out.push_str(&t.render());
    out.push_str("\nMessages stored per step, by stream:\n");
    for run in r.runs.iter().filter(|r| !r.writes_per_step.is_empty()) {
        let by: Vec<String> = run
            .writes_per_step
            .iter()
            .map(|(stream, n)| format!("{stream} {n:.2}"))
            .collect();
        out.push_str(&format!(
            "  {} @{}: {}\n",
            run.label(),
            run.in_flight,
            by.join(", ")
        ));
    }
    out.push_str(
        "\nCPU per saga completed, in ms (this process: coordinator, worker and driver; \
         nats-server; both):\n",
    );
    for run in &r.runs {
        if let (Some(own), Some(nats)) = (run.cpu_ms_per_saga, run.nats_cpu_ms_per_saga) {
            out.push_str(&format!(
                "  {} @{}: {own:.2} + {nats:.2} = {:.2}\n",
                run.label(),
                run.in_flight,
                own + nats
            ));
        }
    }
    out.push_str(
        "\nTimes in ms. SAGA: first write to the saga's terminal audit event. STEP: step.started \
         to step.succeeded (engine; the coordinator's timestamps), command published to \
         compare-and-set done (raw). COORD: one coordinator transition applying a step's result \
         and dispatching the next (Engine::process of a completion event; WAKE: of the \
         wake-up). WORKER: the worker runtime per command. KiB/SAGA: resident memory at full \
         flight over the run's start, per saga in flight (this process: coordinator, worker and \
         driver; and nats-server). WRITES/STEP: messages stored in all streams and buckets per \
         step completed (the engine's include what the bench writes as the gateway would).\n",
    );
    if let Some(secs) = r.finished_write_secs {
        out.push_str(&format!(
            "{} finished sagas and cluster records were written in {secs:.1} s before the last \
             round; the coordinator resyncs its active sagas each {} s.\n",
            r.finished_present, r.resync_secs
        ));
    }
    out.push('\n');
    out.push_str(&targets_and_notes(&r.targets, &r.notes));
    out
}

/// Times the coordinator's and the worker's spans, so the engine's own share of a step is
/// measured inside the real code paths without changing them.
mod spans {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id};
    use tracing::{Metadata, Subscriber};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::registry::LookupSpan;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};

    /// Durations in ms of the spans seen since the last [`SpanTimes::take`].
    #[derive(Debug, Default)]
    pub struct Times {
        pub coordinator_event_ms: Vec<f64>,
        pub coordinator_wake_ms: Vec<f64>,
        pub worker_ms: Vec<f64>,
    }

    #[derive(Clone, Default)]
    pub struct SpanTimes(Arc<Mutex<Times>>);

    enum Kind {
        Coordinator(String),
        Worker,
    }

    struct Opened {
        at: Instant,
        kind: Kind,
    }

    /// The `input` field of the coordinator's span (`wake`, `event`, `tick`, …).
    #[derive(Default)]
    struct InputField(Option<String>);

    impl Visit for InputField {
        fn record_str(&mut self, field: &Field, value: &str) {
            if field.name() == "input" {
                self.0 = Some(value.to_owned());
            }
        }

        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "input" {
                self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
            }
        }
    }

    fn kind_of(meta: &Metadata<'_>) -> Option<bool> {
        match (meta.name(), meta.target()) {
            ("saga", t) if t.starts_with("hypersaga_coordinator") => Some(true),
            ("step", t) if t.starts_with("hypersaga_worker") => Some(false),
            _ => None,
        }
    }

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for SpanTimes {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
            let Some(coordinator) = kind_of(attrs.metadata()) else {
                return;
            };
            let kind = if coordinator {
                let mut input = InputField::default();
                attrs.record(&mut input);
                Kind::Coordinator(input.0.unwrap_or_default())
            } else {
                Kind::Worker
            };
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(Opened {
                    at: Instant::now(),
                    kind,
                });
            }
        }

        fn on_close(&self, id: Id, ctx: Context<'_, S>) {
            let Some(span) = ctx.span(&id) else { return };
            let ext = span.extensions();
            let Some(opened) = ext.get::<Opened>() else {
                return;
            };
            let ms = opened.at.elapsed().as_secs_f64() * 1e3;
            let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match &opened.kind {
                Kind::Coordinator(i) if i == "event" => t.coordinator_event_ms.push(ms),
                Kind::Coordinator(i) if i == "wake" => t.coordinator_wake_ms.push(ms),
                Kind::Coordinator(_) => {}
                Kind::Worker => t.worker_ms.push(ms),
            }
        }
    }

    impl SpanTimes {
        /// Installs the process's tracing: warnings to stderr, and this timer.
        pub fn install() -> Self {
            let times = Self::default();
            let timer = times
                .clone()
                .with_filter(tracing_subscriber::filter::filter_fn(|m| {
                    m.is_span() && kind_of(m).is_some()
                }));
            let log = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_target(false)
                .with_filter(EnvFilter::new("warn"));
            let _ = tracing_subscriber::registry()
                .with(log)
                .with(timer)
                .try_init();
            times
        }

        /// What was timed since the last call.
        pub fn take(&self) -> Times {
            std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_saga_chains_its_steps_and_finishes_with_a_ready_record() {
        let tenant = TenantId::new(TENANT).unwrap();
        let now = OffsetDateTime::now_utc();
        let (saga, rec) = new_saga(&tenant, "c1", "op-1", 3, now).unwrap();
        assert_eq!(saga.steps.len(), 3);
        assert_eq!(saga.steps[2].deps, vec!["bench.step-2".to_owned()]);
        assert_eq!(rec.operation.id, "op-1");
        assert_eq!(rec.phase, hypersaga_model::ClusterPhase::Accepted);
        let (done, rec) = finished_saga(&tenant, "c2", "op-2", 3, now).unwrap();
        assert!(done.is_finished() && done.outbox_commands().is_empty());
        assert_eq!(rec.phase, hypersaga_model::ClusterPhase::Ready);
        assert_eq!(rec.saga_seq, done.seq);
    }

    fn run(pattern: &'static str, m: usize, finished: usize, rate: f64, p50: f64) -> RunResult {
        RunResult {
            pattern,
            finished_present: finished,
            before_finished: false,
            in_flight: m,
            started: 100,
            completed: 100,
            failed: 0,
            stuck: 0,
            capped: finished > 0,
            secs: 100.0 / rate,
            sagas_per_sec: Some(rate),
            saga_ms: Summary::of(vec![10.0]),
            step_round_trip_ms: Summary::of(vec![2.0]),
            coordinator_step_ms: Summary::of(if pattern == "engine" {
                vec![p50]
            } else {
                Vec::new()
            }),
            coordinator_wake_ms: Summary::default(),
            worker_step_ms: Summary::default(),
            rss_per_in_flight_kib: Some(12.5),
            nats_rss_per_in_flight_kib: None,
            cpu_ms_per_saga: Some(0.5),
            nats_cpu_ms_per_saga: (pattern == "engine").then_some(0.75),
            writes_per_step: [("KV_hcp_sagas".to_owned(), 1.25)].into(),
        }
    }

    #[test]
    fn the_report_puts_each_figure_beside_its_target() {
        let mut before = run("engine", 1, 0, 5.0, 0.6);
        before.before_finished = true;
        let runs = vec![
            run("engine", 1, 0, 5.0, 0.5),
            run("engine", 64, 0, 60.0, 0.8),
            run("raw", 64, 0, 100.0, 0.0),
            before,
            run("engine", 64, 500, 57.0, 0.88),
            run("engine", 1, 500, 5.0, 0.66),
        ];
        let targets = targets(&runs, &[64], 500);
        let value = |name: &str| {
            targets
                .iter()
                .find(|t| t.name == name)
                .and_then(|t| t.value)
        };
        assert_eq!(value("engine / raw sagas/s @64"), Some(0.6));
        assert_eq!(
            value("coordinator per step p50, unloaded (1 in flight)"),
            Some(0.5)
        );
        assert_eq!(value("coordinator per step p50 @64"), Some(0.8));
        // Against the run just before the finished sagas, not the first one.
        let r = value("coordinator per step p50, 500 finished / none, unloaded").unwrap();
        assert!((r - 1.1).abs() < 1e-9, "{r}");
        let r = value("coordinator per step p50, 500 finished / none @64").unwrap();
        assert!((r - 1.1).abs() < 1e-9, "{r}");
        let report = EngineReport {
            bench: "engine",
            steps: 5,
            sagas_requested: 2000,
            in_flight: vec![64],
            finished_present: 500,
            finished_write_secs: Some(1.5),
            max_run_secs: 60,
            resync_secs: 15,
            notes: notes(&runs, 2000, 60),
            targets,
            runs,
        };
        let text = render(&report);
        assert!(text.contains("engine, 500 finished"), "{text}");
        assert!(text.contains("raw JetStream"), "{text}");
        assert!(text.contains("engine @64: KV_hcp_sagas 1.25"), "{text}");
        // CPU per saga is shown where both processes could be read.
        assert!(
            text.contains("  engine @64: 0.50 + 0.75 = 1.25\n"),
            "{text}"
        );
        assert!(!text.contains("  raw JetStream @64: 0.50"), "{text}");
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_default()
                .to_owned()
        };
        let ratio_line = line("engine / raw sagas/s @64");
        assert!(
            ratio_line.contains("0.60×") && ratio_line.ends_with(">= 0.50"),
            "{text}"
        );
        assert!(
            line("coordinator per step p50, unloaded").contains("0.500 ms"),
            "{text}"
        );
        assert!(text.contains("engine, before finished"), "{text}");
        assert!(
            text.contains("note: engine, 500 finished @64: N scaled down from 2000 to 100"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["runs"][1]["pattern"], "engine");
        assert_eq!(json["runs"][1]["coordinator_step_ms"]["p50"], 0.8);
        assert_eq!(
            json["runs"][2]["coordinator_step_ms"]["p50"],
            serde_json::Value::Null
        );
        assert_eq!(json["targets"][0]["goal"], ">= 0.50");
    }
}
