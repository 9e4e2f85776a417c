//! `hypersaga bench waits`: do clusters waiting on their control plane hold worker slots?
//!
//! A private nats-server and, in this process, the real gateway, coordinator and worker
//! runtime of the five services. Each service's handler is a stand-in that finishes every step
//! at once, except the HostedCluster of a `slow-` cluster: that answers "wait" each time it is
//! checked, as a HostedCluster stuck short of `Available` does. N slow clusters are created
//! through the gateway and followed until every one waits on its control plane; then, while
//! they wait, the busy worker slots are sampled, and other clusters are created one after
//! another, each timed from its acceptance to its first step and to ready.

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use hypersaga_api::v1 as pb;
use hypersaga_bus::{Bus, Service, StepCommand, StepError, StepId};
use hypersaga_config::{Config, Secret, TenantAzure, TenantConfig};
use hypersaga_model::TenantId;
use hypersaga_worker::{Progress, StepHandler, StepResult, WorkerOptions};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::report::{Summary, Table, Target, emit, num, progress, targets_and_notes};
use super::system::{create_request, list_all};
use crate::client::Client;
use crate::output::{self, Format};

const TENANT: &str = "acme";
const TOKEN: &str = "bench-token-0123456789";
/// Creates sent at once while the waiting clusters are set up.
const BATCH: usize = 50;
/// How many checks of each waiting control plane the checks are watched over.
const WATCH_CHECKS: u32 = 2;
/// Longest a call to the gateway may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args, Debug)]
pub struct WaitsArgs {
    /// Clusters left waiting on their control plane.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub waiting: u32,
    /// Steps each service's worker runs at once (`worker.concurrency`; its default). Were a
    /// wait to hold a slot, the waiting clusters would take them all.
    #[arg(long, default_value_t = hypersaga_config::WorkerConfig::default().concurrency)]
    pub slots: usize,
    /// Seconds between two checks of a waiting control plane (the control-plane service asks
    /// for 2–30 s, growing while it waits; the coordinator spaces checks 30 s apart at most).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=30))]
    pub recheck_secs: u64,
    /// Other clusters created while the others wait, spread over one check period.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub probes: u32,
    /// Longest wait for the waiting clusters to reach their wait, and for each probe.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout_secs: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

#[derive(Debug, Serialize)]
pub struct WaitsReport {
    pub bench: &'static str,
    pub waiting: u32,
    pub slots_per_service: usize,
    pub recheck_secs: u64,
    /// Clusters that reached their control-plane wait, and how long that took.
    pub reached_wait: usize,
    pub setup_secs: f64,
    /// Waiting clusters whose control plane was checked while they were watched (over two
    /// check periods): each of them, if their waits go on.
    pub checked: usize,
    /// Seconds between two checks of one waiting control plane, against `recheck_secs` asked.
    pub check_spacing: Summary,
    pub probes: Vec<Probe>,
    /// Among the waiting clusters at the end: paused or failed (a wait must do neither).
    pub waiting_paused_or_failed: usize,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
}

/// Another cluster created while the others wait.
#[derive(Debug, Serialize)]
pub struct Probe {
    pub name: String,
    /// From the create's request to its first step starting in a worker.
    pub first_step_secs: Option<f64>,
    /// From the create's request to ready.
    pub ready_secs: Option<f64>,
}

/// Finishes every step at once, except the HostedCluster of a `slow-` cluster: never ready.
/// Notes when each cluster's first step started, and when each waiting one was checked.
#[derive(Default)]
struct StuckControlPlanes {
    recheck: Duration,
    waiting: Mutex<HashSet<String>>,
    first_step: Mutex<HashMap<String, Instant>>,
    /// Each waiting cluster's last check, and the time between checks (seconds).
    last_check: Mutex<HashMap<String, Instant>>,
    spacing: Mutex<Vec<f64>>,
}

#[async_trait::async_trait]
impl StepHandler for StuckControlPlanes {
    async fn run(&self, cmd: &StepCommand, _p: &Progress) -> Result<StepResult, StepError> {
        let now = Instant::now();
        lock(&self.first_step)
            .entry(cmd.cluster.clone())
            .or_insert(now);
        if cmd.step.parse() == Ok(StepId::HostedCluster) && cmd.cluster.starts_with("slow-") {
            lock(&self.waiting).insert(cmd.cluster.clone());
            if let Some(last) = lock(&self.last_check).insert(cmd.cluster.clone(), now) {
                lock(&self.spacing).push((now - last).as_secs_f64());
            }
            return Ok(StepResult::wait(
                "Available=False (ControlPlaneComponentsNotAvailable)",
                self.recheck,
            ));
        }
        Ok(StepResult::Done(Default::default()))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub async fn run(args: WaitsArgs) -> anyhow::Result<ExitCode> {
    let (dir, nats) = super::private_nats("waits").await?;
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let config = bench_config(nats.url(), args.waiting)?;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding the gRPC port")?;
    let grpc = format!("http://{}", listener.local_addr()?);
    let mut tasks = tokio::task::JoinSet::new();
    let (c, s) = (config.clone(), shutdown.clone());
    tasks.spawn(async move {
        if let Err(e) = hypersaga_gateway::run(&c, listener, s).await {
            progress(format!("the gateway stopped: {e}"));
        }
    });
    let (c, s) = (config.clone(), shutdown.clone());
    tasks.spawn(async move {
        if let Err(e) = hypersaga_coordinator::run(&c, s).await {
            progress(format!("the coordinator stopped: {e}"));
        }
    });
    let handler = Arc::new(StuckControlPlanes {
        recheck: Duration::from_secs(args.recheck_secs),
        ..Default::default()
    });
    let bus = Bus::connect(nats.url(), "hypersaga-bench-workers", "hcp").await?;
    for service in Service::ALL {
        let opts = WorkerOptions {
            service: service.as_str().into(),
            tenants: vec![TenantId::new(TENANT)?],
            concurrency: args.slots,
            ack_wait: Duration::from_secs(30),
            drain_grace: Duration::from_secs(1),
        };
        let (b, h, s) = (bus.clone(), handler.clone(), shutdown.clone());
        tasks.spawn(async move {
            if let Err(e) = hypersaga_worker::run(b, h, opts, s).await {
                progress(format!("a worker stopped: {e}"));
            }
        });
    }
    let client = connect(&grpc).await?;
    // Nothing of the system is meant to stop before the bench does: if a part does, the bench
    // ends at once rather than waiting out its timeouts.
    let report = tokio::select! {
        r = measure(&client, &handler, &args) => r,
        _ = tasks.join_next() => Err(anyhow::anyhow!("a part of the system stopped during the bench")),
    };
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(15), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    nats.stop().await;
    drop(dir);
    let report = report?;
    emit(args.output, &report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn bench_config(nats_url: &str, waiting: u32) -> anyhow::Result<Config> {
    let mut config = Config::default();
    config.nats.url = nats_url.to_owned();
    config.tenants = vec![TenantConfig {
        id: TenantId::new(TENANT)?,
        tokens: vec![hypersaga_config::TokenDigest::of(TOKEN)],
        audit_credentials: Vec::new(),
        azure: TenantAzure {
            tenant_id: "bench".into(),
            subscription_id: "bench".into(),
            client_id: "bench".into(),
            client_secret: Some(Secret::new("bench")),
        },
    }];
    // About slots, not admission: the tenant may have every cluster of the bench at once.
    config.quotas.max_clusters = waiting.saturating_add(1_000);
    config.quotas.max_operations_in_flight = waiting.saturating_add(1_000);
    config.gateway.requests_per_sec_per_tenant = 0;
    Ok(config)
}

async fn connect(grpc: &str) -> anyhow::Result<Client> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match crate::client::connect(grpc, TOKEN, None).await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() > deadline => return Err(e.context("the gateway")),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn measure(
    client: &Client,
    handler: &StuckControlPlanes,
    args: &WaitsArgs,
) -> anyhow::Result<WaitsReport> {
    let timeout = Duration::from_secs(args.timeout_secs);
    let mut notes = Vec::new();
    let n = args.waiting as usize;
    progress(format!(
        "creating {n} clusters whose control plane never becomes available"
    ));
    let started = Instant::now();
    let names: Vec<String> = (0..n).map(|i| format!("slow-{i:05}")).collect();
    for batch in names.chunks(BATCH) {
        let refused: Vec<String> =
            futures::future::join_all(batch.iter().map(|name| create_with_retries(client, name)))
                .await
                .into_iter()
                .filter_map(Result::err)
                .collect();
        anyhow::ensure!(
            refused.is_empty(),
            "creates refused: {}",
            refused.join("; ")
        );
    }
    let deadline = Instant::now() + timeout;
    let mut last_said = Instant::now();
    let reached_wait = loop {
        let reached = lock(&handler.waiting).len();
        if reached == n || Instant::now() > deadline {
            break reached;
        }
        if last_said.elapsed() > Duration::from_secs(5) {
            progress(format!("{reached} of {n} wait on their control plane"));
            last_said = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let setup_secs = started.elapsed().as_secs_f64();
    if reached_wait < n {
        notes.push(format!(
            "only {reached_wait} of {n} clusters reached their control-plane wait within {} s",
            args.timeout_secs
        ));
    }

    // While the checks go on, other clusters are created, spread over one check period so
    // that they meet the checks' rounds wherever they fall.
    let watch = handler.recheck * WATCH_CHECKS;
    progress(format!(
        "{reached_wait} clusters wait; creating {} other clusters and watching the checks for {} s",
        args.probes,
        watch.as_secs()
    ));
    lock(&handler.spacing).clear();
    let watched = Instant::now();
    let mut probes = Vec::new();
    for i in 0..args.probes {
        let name = format!("probe-{i}");
        probes.push(probe(client, handler, &name, timeout).await?);
        let next = handler.recheck * (i + 1) / args.probes;
        tokio::time::sleep(next.saturating_sub(watched.elapsed())).await;
    }
    tokio::time::sleep(watch.saturating_sub(watched.elapsed())).await;
    let checked = lock(&handler.last_check)
        .values()
        .filter(|at| **at >= watched)
        .count();
    let check_spacing = Summary::of(std::mem::take(&mut *lock(&handler.spacing)));

    let mut c = client.clone();
    let waiting_paused_or_failed = list_all(&mut c)
        .await
        .map_err(|s| anyhow::anyhow!(output::status_text(&s)))?
        .iter()
        .filter(|cl| cl.name.starts_with("slow-") && !still_on_course(cl))
        .count();
    let targets = targets(&probes, reached_wait, waiting_paused_or_failed);
    Ok(WaitsReport {
        bench: "waits",
        waiting: args.waiting,
        slots_per_service: args.slots,
        recheck_secs: args.recheck_secs,
        reached_wait,
        setup_secs,
        checked,
        check_spacing,
        probes,
        waiting_paused_or_failed,
        targets,
        notes,
    })
}

/// Whether a cluster is neither failed nor paused.
fn still_on_course(cl: &pb::Cluster) -> bool {
    cl.status.as_ref().is_none_or(|s| {
        s.phase != pb::ClusterPhase::Failed as i32
            && s.operation
                .as_ref()
                .is_none_or(|o| o.state != pb::OperationState::Paused as i32)
    })
}

/// The figures the issue sets targets for. A probe that never got a first step (or never got
/// ready) makes the slowest unknown, not the slowest of the others.
fn targets(probes: &[Probe], reached_wait: usize, paused_or_failed: usize) -> Vec<Target> {
    let slowest = |f: fn(&Probe) -> Option<f64>| {
        let values: Option<Vec<f64>> = probes.iter().map(f).collect();
        values.and_then(|v| v.into_iter().reduce(f64::max))
    };
    vec![
        Target::new(
            format!("another cluster's first step, slowest of {}", probes.len()),
            slowest(|p| p.first_step_secs).map(|s| s * 1000.0),
            "ms",
            "<= 1000 ms",
        ),
        Target::new(
            format!("clusters waiting: paused or failed (of {reached_wait})"),
            Some(paused_or_failed as f64),
            "count",
            "0",
        ),
        Target::new(
            format!("another cluster ready, slowest of {}", probes.len()),
            slowest(|p| p.ready_secs),
            "s",
            "(no target; for context)",
        ),
    ]
}

/// A request to the gateway that gives up after [`CALL_TIMEOUT`].
fn call<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.set_timeout(CALL_TIMEOUT);
    req
}

/// Whether a call is worth making again: the gateway is loaded, or slow to answer.
fn transient(s: &tonic::Status) -> bool {
    matches!(
        s.code(),
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
    )
}

/// Creates `name`, retrying with the same request id while the gateway answers UNAVAILABLE
/// (as a client of a loaded system does); the refusal, if any.
async fn create_with_retries(client: &Client, name: &str) -> Result<(), String> {
    let req = create_request(name);
    for _ in 0..20 {
        match client.clone().create_cluster(call(req.clone())).await {
            Ok(_) => return Ok(()),
            Err(s) if transient(&s) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(s) => return Err(format!("{name}: {}", output::status_text(&s))),
        }
    }
    Err(format!("{name}: still unavailable after 20 tries"))
}

/// Creates `name` and follows it until it is ready, failed, paused or out of time. Its times
/// count from the create's first request: the first step can start before the answer is back.
async fn probe(
    client: &Client,
    handler: &StuckControlPlanes,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<Probe> {
    progress(format!("while they wait: creating {name}"));
    let sent = Instant::now();
    create_with_retries(client, name)
        .await
        .map_err(anyhow::Error::msg)?;
    let mut c = client.clone();
    let ready_secs = loop {
        let cl = match c
            .get_cluster(call(pb::GetClusterRequest { name: name.into() }))
            .await
        {
            Ok(r) => r.into_inner(),
            Err(s) if transient(&s) && sent.elapsed() < timeout => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(s) => anyhow::bail!("{name}: {}", output::status_text(&s)),
        };
        if cl.status.as_ref().map(|s| s.phase) == Some(pb::ClusterPhase::Ready as i32) {
            break Some(sent.elapsed().as_secs_f64());
        }
        if !still_on_course(&cl) || sent.elapsed() > timeout {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let first_step_secs = lock(&handler.first_step)
        .get(name)
        .map(|at| at.duration_since(sent).as_secs_f64());
    Ok(Probe {
        name: name.to_owned(),
        first_step_secs,
        ready_secs,
    })
}

fn render(r: &WaitsReport) -> String {
    let mut out = format!(
        "hypersaga bench waits: {} clusters waiting on a control plane that never becomes available, {} worker slots per service, checked every {} s\n\n",
        r.waiting, r.slots_per_service, r.recheck_secs
    );
    out.push_str(&format!(
        "{} clusters reached their wait in {} s. Watched for two check periods, {} of them were checked, each {} s after the one before at p50 and {} s at p99 ({} s asked).\n\n",
        r.reached_wait,
        num(Some(r.setup_secs), 1),
        r.checked,
        num(r.check_spacing.p50, 1),
        num(r.check_spacing.p99, 1),
        r.recheck_secs,
    ));
    let mut t = Table::new(["PROBE", "FIRST STEP s", "READY s"]);
    for p in &r.probes {
        t.row([
            p.name.clone(),
            num(p.first_step_secs, 3),
            num(p.ready_secs, 2),
        ]);
    }
    out.push_str(&t.render());
    out.push_str(
        "\nFIRST STEP: from the create's request to its first step starting in a worker. READY: from the create's request to ready. The probes are spread over one check period. Each service's handler finishes a step at once; only the waiting clusters' HostedCluster step waits.\n\n",
    );
    out.push_str(&targets_and_notes(&r.targets, &r.notes));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(first: Option<f64>, ready: Option<f64>) -> Probe {
        Probe {
            name: "p".into(),
            first_step_secs: first,
            ready_secs: ready,
        }
    }

    #[test]
    fn the_slowest_probe_is_the_figure_and_a_probe_that_never_started_makes_it_unknown() {
        let t = targets(
            &[probe(Some(0.004), Some(0.2)), probe(Some(0.25), Some(0.1))],
            1000,
            0,
        );
        assert_eq!(t[0].value, Some(250.0), "the slowest first step, in ms");
        assert_eq!(t[1].value, Some(0.0));
        assert_eq!(t[2].value, Some(0.2));
        let t = targets(&[probe(Some(0.004), Some(0.2)), probe(None, None)], 1000, 3);
        assert_eq!(
            (t[0].value, t[1].value, t[2].value),
            (None, Some(3.0), None)
        );
        assert!(targets_and_notes(&t, &[]).contains("of 1000"));
    }
}
