//! `hypersaga bench tenants`: many tenants, each in its own subscription, creating clusters at
//! once; and what idle tenants cost the running system.
//!
//! One subscription's ARM write budget (what hypersaga allows itself of it: ARM's 200 burst
//! and 10/s, × the budget's headroom) bounds how fast M creates in it can finish: the writes
//! of M creates beyond the burst, over the rate, after the time one create takes alone. Each
//! tenant has its own subscription, hence its own budget: N tenants × M clusters should finish
//! near that same bound for M, until the machine's CPU (not the engine) binds. The bench
//! prints the time N × M creates took beside that bound, the share of ARM requests answered
//! 429, and the CPU seconds the whole system spent per cluster.
//!
//! Tenants are live data (the admin API's `AddTenant`): the bench also onboards many idle
//! tenants into a fresh system and prints each process's resident memory, and the JetStream
//! consumers, beside the same with the two tenants `hypersaga dev` configures.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use hypersaga_api::v1 as pb;
use hypersaga_config::FederationConfig;
use serde::Serialize;

use super::report::{
    Summary, Table, Target, budget_bound, cpu_secs, emit, num, pct, progress, ratio, rss_bytes,
    targets_and_notes,
};
use super::system::{
    ArmDelta, DevSystem, Outcome, Processes, Settled, SystemArgs, classify, create_all, create_one,
    http_json, list_all,
};
use crate::client::{AdminClient, Client};
use crate::endpoints::DevTenant;
use crate::output::Format;

/// The configured tenant whose subscription the lone creates (the bound's inputs) run in.
const PROBE: &str = "acme";
/// Tenants `hypersaga dev` configures: the idle-memory baseline.
const CONFIGURED_TENANTS: u32 = 2;
/// How long resident memory may take to settle before it is read anyway.
const SETTLE_MAX: Duration = Duration::from_secs(90);

#[derive(Args, Debug)]
pub struct TenantsArgs {
    /// Tenants onboarded live, each with its own Entra directory, subscription, hypersaga's
    /// application (federated) and public DNS zone. 0: skip the load phase.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub tenants: u32,
    /// Clusters each tenant creates, all tenants' at once.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub clusters: u32,
    /// Tenants onboarded (through the admin API only) into a fresh system for the idle-memory
    /// phase, the two configured ones included. 0: skip that phase.
    #[arg(long, default_value_t = 1000, value_parser = idle_tenants)]
    pub idle_tenants: u32,
    /// Tenants onboarded at a time.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub onboard_concurrency: u32,
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// `--idle-tenants`: 0 (skip), or more than the configured two, at most 10,000.
fn idle_tenants(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(0) => Ok(0),
        Ok(n) if n > CONFIGURED_TENANTS && n <= 10_000 => Ok(n),
        _ => Err(format!(
            "{s:?}: give 0 (skip the phase) or a number of tenants from {} to 10000",
            CONFIGURED_TENANTS + 1
        )),
    }
}

#[derive(Debug, Serialize)]
pub struct TenantsReport {
    pub bench: &'static str,
    pub tenants: u32,
    pub clusters_per_tenant: u32,
    pub idle_tenants: u32,
    pub profile: String,
    pub replicas: usize,
    pub arm_budget_scale: f64,
    pub load: Option<Load>,
    pub idle: Option<Idle>,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
}

/// The lone creates in one subscription that the bound is made of.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Alone {
    /// The subscription's first create: seconds to ready (its critical path, the tenant's
    /// one-time identity set-up included) and the ARM writes it made.
    pub first_secs: Option<f64>,
    pub first_writes: u64,
    /// A second create, alone: the writes of every create after the first.
    pub next_secs: Option<f64>,
    pub next_writes: u64,
}

/// The hypersaga-side write budget of one subscription: what its pacer allows itself.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WriteBudget {
    pub burst: f64,
    pub per_sec: f64,
}

impl WriteBudget {
    /// `ArmBudget`'s writes as `hypersaga dev --arm-budget-scale` scales them, × headroom (as
    /// the services' pacer takes them).
    pub fn paced(scale: f64) -> Self {
        let b = hypersaga_config::ArmBudget::default();
        let headroom = b.headroom.clamp(0.05, 1.0);
        let burst = ((f64::from(b.writes_burst) * scale).round() as u32).max(1);
        Self {
            burst: f64::from(((f64::from(burst) * headroom) as u32).max(1)),
            per_sec: b.writes_per_sec * scale * headroom,
        }
    }
}

/// ARM writes of `m` creates in a fresh subscription: the first's, then `next` each.
pub fn writes_for(alone: &Alone, m: u32) -> u64 {
    alone.first_writes + alone.next_writes * u64::from(m.saturating_sub(1))
}

/// One subscription's bound for `m` creates at once: the first create's time alone, plus
/// what their writes exceed the burst by over the rate.
pub fn one_subscription_bound(alone: &Alone, m: u32, budget: WriteBudget) -> Option<f64> {
    let first = alone.first_secs?;
    if m == 0 || alone.first_writes == 0 {
        return None;
    }
    budget_bound(writes_for(alone, m), budget.burst, budget.per_sec).map(|b| first + b)
}

/// CPU the system spent over a phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuUse {
    /// Services and nats-server(s): the system under test.
    pub system_secs: f64,
    pub by_process: BTreeMap<String, f64>,
    /// `hypersaga dev` itself: the ARM and management-cluster emulators (not the system).
    pub emulators_secs: Option<f64>,
    /// Processes whose pid changed (restarted): counted from their new start only.
    pub restarted: Vec<String>,
}

/// CPU seconds per process between two readings (name → (pid, seconds)); a process whose pid
/// changed is counted from its restart, one gone is left out.
pub fn cpu_between(
    before: &BTreeMap<String, (u32, f64)>,
    after: &BTreeMap<String, (u32, f64)>,
) -> CpuUse {
    let mut out = CpuUse::default();
    for (name, (pid, secs)) in after {
        let used = match before.get(name) {
            Some((p, s)) if p == pid => (secs - s).max(0.0),
            Some(_) => {
                out.restarted.push(name.clone());
                *secs
            }
            None => *secs,
        };
        out.by_process.insert(name.clone(), used);
        out.system_secs += used;
    }
    for name in before.keys() {
        if !after.contains_key(name) {
            out.restarted.push(format!("{name} (gone)"));
        }
    }
    out
}

fn cpu_reading(p: &Processes) -> BTreeMap<String, (u32, f64)> {
    p.pids
        .iter()
        .filter_map(|(n, pid)| Some((n.clone(), (*pid, cpu_secs(Some(*pid))?))))
        .collect()
}

/// N tenants × M clusters at once.
#[derive(Debug, Default, Serialize)]
pub struct Load {
    /// Tenants onboarded (of `--tenants`), and how long it took.
    pub onboarded: usize,
    pub onboarding_secs: f64,
    pub onboarding_failures: Vec<String>,
    pub alone: Alone,
    pub budget: Option<WriteBudget>,
    /// ARM writes of M creates in one subscription, from the lone creates.
    pub bound_writes: Option<u64>,
    pub bound_secs: Option<f64>,
    pub clusters: usize,
    pub rejected: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub paused: usize,
    pub timed_out: usize,
    /// From sending the first create until every cluster was ready; `None` when some were not.
    pub time_to_all_secs: Option<f64>,
    pub time_to_settled_secs: Option<f64>,
    pub cluster_secs: Summary,
    /// `time_to_all / bound`.
    pub ratio_to_bound: Option<f64>,
    /// ARM writes admitted during the phase (every subscription), and per tenant's.
    pub arm_writes: u64,
    pub writes_per_subscription: Option<f64>,
    /// ARM requests naming the tenants' subscriptions, and those answered 429.
    pub arm_requests: u64,
    pub arm_throttled: u64,
    pub throttled_share: Option<f64>,
    /// The worst subscription's 429 share.
    pub max_subscription_throttled_share: Option<f64>,
    pub cpu: CpuUse,
    /// `cpu.system_secs / clusters ready`.
    pub cpu_secs_per_cluster: Option<f64>,
    /// The first few refusals, failures and pauses, `tenant/name: reason`.
    pub problems: Vec<String>,
}

/// Resident memory of one process, with the configured tenants and with the idle ones.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryRow {
    pub process: String,
    pub base_bytes: Option<u64>,
    pub idle_bytes: Option<u64>,
    pub ratio: Option<f64>,
}

/// JetStream as nats-server's `/jsz` counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JetStreamCounts {
    pub streams: u64,
    pub consumers: u64,
}

/// Idle tenants, onboarded through the admin API only.
#[derive(Debug, Default, Serialize)]
pub struct Idle {
    pub base_tenants: u32,
    /// Tenants present at the second reading (the configured ones included).
    pub tenants: u32,
    pub added: usize,
    pub add_secs: f64,
    /// Each `AddTenant` call's seconds.
    pub add_call_secs: Summary,
    /// Seconds from the last `AddTenant` until its token was served.
    pub last_token_served_secs: Option<f64>,
    pub add_failures: Vec<String>,
    /// The services and nats-server(s); `total` last.
    pub memory: Vec<MemoryRow>,
    /// `hypersaga dev` itself (the emulators): not the system, for context.
    pub emulators: MemoryRow,
    pub base_jetstream: Option<JetStreamCounts>,
    pub idle_jetstream: Option<JetStreamCounts>,
    /// Whether the readings settled (total resident memory within 2 % over 5 s).
    pub base_settled: bool,
    pub idle_settled: bool,
}

pub async fn run(args: TenantsArgs) -> anyhow::Result<ExitCode> {
    let mut notes = Vec::new();
    let load = if args.tenants > 0 {
        let sys = DevSystem::start(&args.system).await?;
        let result = measure_load(&sys, &args, &mut notes).await;
        if result.is_err() {
            dev_log_tail(&sys);
        }
        sys.stop().await;
        Some(result?)
    } else {
        None
    };
    let idle = if args.idle_tenants > 0 {
        let sys = DevSystem::start(&args.system).await?;
        let result = measure_idle(&sys, &args, &mut notes).await;
        if result.is_err() {
            dev_log_tail(&sys);
        }
        sys.stop().await;
        Some(result?)
    } else {
        None
    };
    let report = TenantsReport {
        bench: "tenants",
        tenants: args.tenants,
        clusters_per_tenant: args.clusters,
        idle_tenants: args.idle_tenants,
        profile: format!("{:?}", args.system.profile).to_ascii_lowercase(),
        replicas: args.system.replicas.max(1),
        arm_budget_scale: args.system.arm_budget_scale,
        targets: targets(load.as_ref(), idle.as_ref(), args.clusters),
        load,
        idle,
        notes,
    };
    emit(args.output, &report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn dev_log_tail(sys: &DevSystem) {
    let text = std::fs::read_to_string(sys.log_path()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    progress(format!(
        "the run failed; the last lines of hypersaga dev's log:\n{}",
        lines[lines.len().saturating_sub(15)..].join("\n")
    ));
}

/// A tenant onboarded for the load, and its client.
struct LoadTenant {
    id: String,
    subscription: String,
    client: Client,
}

async fn admin_client(sys: &DevSystem) -> anyhow::Result<AdminClient> {
    let token = sys
        .endpoints
        .admin_token
        .as_deref()
        .context("the endpoints file names no admin token")?;
    crate::client::connect_admin(&sys.endpoints.grpc, token, Some(&sys.endpoints.ca_bundle)).await
}

/// hypersaga's issuer, as the services sign as it (`federation` of the state's config).
fn federation(sys: &DevSystem) -> anyhow::Result<FederationConfig> {
    let path = sys.endpoints.state_dir.join("config.json");
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
    )?;
    serde_json::from_value(config["federation"].clone()).context("the config's federation")
}

/// Waits until `token` is served (its tenant's calls answered), at most 60 s.
async fn token_served(sys: &DevSystem, token: &str) -> anyhow::Result<Client> {
    let mut client =
        crate::client::connect(&sys.endpoints.grpc, token, Some(&sys.endpoints.ca_bundle)).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client
            .list_clusters(pb::ListClustersRequest::default())
            .await
        {
            Ok(_) => return Ok(client),
            Err(s) if Instant::now() > deadline => {
                anyhow::bail!(
                    "its token was not served within 60 s: {}",
                    crate::output::status_text(&s)
                )
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Onboards `id` as a customer would be: its own directory and subscription, hypersaga's
/// application registered by its administrator (federated with hypersaga's issuer), the
/// admin's `AddTenant`, the user's public DNS zone; answers once its token is served.
async fn onboard(
    sys: &DevSystem,
    admin: &AdminClient,
    federation: &FederationConfig,
    ca_pem: &str,
    id: &str,
) -> anyhow::Result<LoadTenant> {
    let customer = hypersaga_emulator_arm::Principal {
        azure_tenant_id: uuid::Uuid::new_v4().to_string(),
        client_id: uuid::Uuid::new_v4().to_string(),
        client_secret: format!("secret-{}", uuid::Uuid::new_v4().simple()),
        subscription_ids: vec![uuid::Uuid::new_v4().to_string()],
    };
    sys.admin()?
        .add_directory(&customer)
        .await
        .context("adding its directory to the ARM emulator")?;
    let mut user = DevTenant {
        name: id.to_owned(),
        token: String::new(),
        hypersaga_client_id: String::new(),
        azure_tenant_id: customer.azure_tenant_id.clone(),
        subscription_id: customer.subscription_ids[0].clone(),
        client_id: customer.client_id.clone(),
        client_secret: customer.client_secret.clone(),
    };
    let arm_url = &sys.endpoints.arm_url;
    user.hypersaga_client_id =
        crate::dev::world::register_app(arm_url, ca_pem, federation, &user).await?;
    let added = admin
        .clone()
        .add_tenant(pb::AddTenantRequest {
            id: id.to_owned(),
            azure: Some(pb::TenantAzure {
                tenant_id: user.azure_tenant_id.clone(),
                subscription_id: user.subscription_id.clone(),
                client_id: user.hypersaga_client_id.clone(),
            }),
        })
        .await
        .map_err(|s| anyhow::anyhow!("AddTenant: {}", crate::output::status_text(&s)))?
        .into_inner();
    crate::dev::world::make_public_zone(arm_url, ca_pem, &user)
        .await
        .context("making its public DNS zone")?;
    let client = token_served(sys, &added.api_token).await?;
    Ok(LoadTenant {
        id: id.to_owned(),
        subscription: user.subscription_id,
        client,
    })
}

async fn measure_load(
    sys: &DevSystem,
    args: &TenantsArgs,
    notes: &mut Vec<String>,
) -> anyhow::Result<Load> {
    let timeout = args.system.timeout();
    let arm = sys.admin()?;
    let budget = WriteBudget::paced(args.system.arm_budget_scale);
    let mut load = Load {
        budget: Some(budget),
        ..Load::default()
    };

    // The bound's inputs: one subscription's first create alone, then a second.
    progress(format!(
        "tenant {PROBE}: one create alone, then another (the one-subscription bound)"
    ));
    let probe = sys.client(PROBE).await?;
    for (i, name) in ["alone-1", "alone-2"].into_iter().enumerate() {
        let before = arm.requests().await?;
        let o = create_one(&probe, name, timeout).await;
        let after = arm.requests().await?;
        let writes = ArmDelta::between(&before, &after, "").writes;
        let secs = (o.settled == Settled::Succeeded).then_some(o.secs);
        if secs.is_none() {
            notes.push(format!(
                "{PROBE}'s lone create {name} did not succeed ({:?}): no bound",
                o.settled
            ));
        }
        if i == 0 {
            (load.alone.first_secs, load.alone.first_writes) = (secs, writes);
        } else {
            (load.alone.next_secs, load.alone.next_writes) = (secs, writes);
        }
    }
    if load.alone.next_secs.is_none() {
        load.alone.first_secs = None;
    }
    load.bound_writes = Some(writes_for(&load.alone, args.clusters));
    load.bound_secs = one_subscription_bound(&load.alone, args.clusters, budget);

    // Onboarding, some at a time.
    let n = args.tenants as usize;
    progress(format!(
        "onboarding {n} tenants ({} at a time): directory, subscription, federated app, \
         AddTenant, public DNS zone",
        args.onboard_concurrency
    ));
    let admin = admin_client(sys).await?;
    let fed = federation(sys)?;
    let ca_pem = std::fs::read_to_string(&sys.endpoints.ca_bundle)?;
    let t_onboard = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(String, anyhow::Result<LoadTenant>)> =
        futures::stream::iter((0..n).map(|i| format!("load-{i:04}")))
            .map(|id| {
                let (admin, fed, ca_pem, done) = (&admin, &fed, &ca_pem, &done);
                async move {
                    let r = onboard(sys, admin, fed, ca_pem, &id).await;
                    let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if k % 10 == 0 || k == n {
                        progress(format!(
                            "onboarded {k}/{n} in {:.1} s",
                            t_onboard.elapsed().as_secs_f64()
                        ));
                    }
                    (id, r)
                }
            })
            .buffer_unordered(args.onboard_concurrency as usize)
            .collect()
            .await;
    load.onboarding_secs = t_onboard.elapsed().as_secs_f64();
    let mut tenants = Vec::new();
    for (id, r) in results {
        match r {
            Ok(t) => tenants.push(t),
            Err(e) => load.onboarding_failures.push(format!("{id}: {e:#}")),
        }
    }
    tenants.sort_by(|a, b| a.id.cmp(&b.id));
    load.onboarded = tenants.len();
    anyhow::ensure!(
        !tenants.is_empty(),
        "no tenant was onboarded: {}",
        load.onboarding_failures
            .first()
            .cloned()
            .unwrap_or_default()
    );
    load.onboarding_failures.truncate(10);

    // The creates, every tenant's at once.
    let m = args.clusters as usize;
    let names: Vec<String> = (0..m).map(|i| format!("c-{i:03}")).collect();
    load.clusters = tenants.len() * m;
    progress(format!(
        "creating {} clusters at once: {} tenants × {m}",
        load.clusters,
        tenants.len()
    ));
    let before = arm.requests().await?;
    let cpu_before = cpu_reading(&sys.processes());
    let dev_before = cpu_secs(sys.pid());
    let t0 = Instant::now();
    let sent = futures::future::join_all(tenants.iter().map(|t| {
        let names = &names;
        async move { (t.id.clone(), create_all(&t.client, names).await) }
    }))
    .await;
    let mut accepted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (tenant, answers) in sent {
        for (name, r) in answers {
            match r {
                Ok(()) => accepted.entry(tenant.clone()).or_default().push(name),
                Err(e) => {
                    load.rejected += 1;
                    load.problems.push(format!("{tenant}/{name}: refused: {e}"));
                }
            }
        }
    }
    progress(format!(
        "{} creates accepted in {:.1} s; following them",
        load.clusters - load.rejected,
        t0.elapsed().as_secs_f64()
    ));
    let outcomes = follow_tenants(&tenants, &accepted, t0, timeout).await;
    let cpu_after = cpu_reading(&sys.processes());
    let dev_after = cpu_secs(sys.pid());
    let after = arm.requests().await?;

    // What the phase did.
    for (tenant, o) in &outcomes {
        match &o.settled {
            Settled::Succeeded => load.succeeded += 1,
            Settled::Failed(e) => {
                load.failed += 1;
                load.problems
                    .push(format!("{tenant}/{}: failed: {e}", o.name));
            }
            Settled::Paused(e) => {
                load.paused += 1;
                load.problems
                    .push(format!("{tenant}/{}: paused: {e}", o.name));
            }
            Settled::TimedOut => {
                load.timed_out += 1;
                load.problems
                    .push(format!("{tenant}/{}: timed out", o.name));
            }
        }
    }
    load.problems.truncate(10);
    load.time_to_settled_secs = outcomes.iter().map(|(_, o)| o.secs).reduce(f64::max);
    if load.succeeded == load.clusters && load.clusters > 0 {
        load.time_to_all_secs = load.time_to_settled_secs;
    }
    load.cluster_secs = Summary::of(outcomes.iter().map(|(_, o)| o.secs).collect());
    load.ratio_to_bound = ratio(load.time_to_all_secs, load.bound_secs);
    load.arm_writes = ArmDelta::between(&before, &after, "").writes;
    load.writes_per_subscription = Some(load.arm_writes as f64 / tenants.len() as f64);
    let mut worst: Option<f64> = None;
    for t in &tenants {
        let d = ArmDelta::between(&before, &after, &t.subscription);
        load.arm_requests += d.requests;
        load.arm_throttled += d.throttled;
        if let Some(s) = d.throttled_share() {
            worst = Some(worst.map_or(s, |w| w.max(s)));
        }
    }
    load.throttled_share =
        (load.arm_requests > 0).then(|| load.arm_throttled as f64 / load.arm_requests as f64);
    load.max_subscription_throttled_share = worst;
    load.cpu = cpu_between(&cpu_before, &cpu_after);
    load.cpu.emulators_secs = match (dev_before, dev_after) {
        (Some(b), Some(a)) => Some((a - b).max(0.0)),
        _ => None,
    };
    load.cpu_secs_per_cluster =
        (load.succeeded > 0).then(|| load.cpu.system_secs / load.succeeded as f64);
    if !load.cpu.restarted.is_empty() {
        notes.push(format!(
            "restarted during the creates (their CPU counted from the restart): {}",
            load.cpu.restarted.join(", ")
        ));
    }
    notes.push(
        "the bound is one subscription's: its first create alone (the tenant's one-time \
         identity set-up included) + max(0, WRITES − burst) / rate, with WRITES = the first \
         create's ARM writes + (M − 1) × a second's, and the budget hypersaga paces itself \
         at (ARM's 200 burst and 10/s × headroom)"
            .to_owned(),
    );
    Ok(load)
}

/// Follows every tenant's clusters until each settled (or `timeout` from `t0`): one
/// `ListClusters` per tenant and round, a few tenants at a time, a round at most every second.
async fn follow_tenants(
    tenants: &[LoadTenant],
    accepted: &BTreeMap<String, Vec<String>>,
    t0: Instant,
    timeout: Duration,
) -> Vec<(String, Outcome)> {
    let mut pending: BTreeMap<String, BTreeMap<String, ()>> = accepted
        .iter()
        .map(|(t, names)| (t.clone(), names.iter().map(|n| (n.clone(), ())).collect()))
        .collect();
    let total: usize = pending.values().map(BTreeMap::len).sum();
    let mut out: Vec<(String, Outcome)> = Vec::new();
    let mut last_progress = Instant::now();
    while pending.values().any(|p| !p.is_empty()) {
        let round = Instant::now();
        let listed: Vec<(String, Option<Vec<pb::Cluster>>)> = futures::stream::iter(
            tenants
                .iter()
                .filter(|t| pending.get(&t.id).is_some_and(|p| !p.is_empty())),
        )
        .map(|t| async move {
            let mut c = t.client.clone();
            (t.id.clone(), list_all(&mut c).await.ok())
        })
        .buffer_unordered(16)
        .collect()
        .await;
        let secs = t0.elapsed().as_secs_f64();
        for (tenant, clusters) in listed {
            let Some(p) = pending.get_mut(&tenant) else {
                continue;
            };
            for cl in clusters.unwrap_or_default() {
                if p.contains_key(&cl.name)
                    && let Some(settled) = classify(&cl, false)
                {
                    p.remove(&cl.name);
                    out.push((
                        tenant.clone(),
                        Outcome {
                            name: cl.name.clone(),
                            settled,
                            secs,
                        },
                    ));
                }
            }
        }
        if last_progress.elapsed() >= Duration::from_secs(10) {
            last_progress = Instant::now();
            let ready = out
                .iter()
                .filter(|(_, o)| o.settled == Settled::Succeeded)
                .count();
            progress(format!(
                "{secs:.0} s: {ready}/{total} ready, {} otherwise settled",
                out.len() - ready
            ));
        }
        if t0.elapsed() >= timeout {
            for (tenant, p) in std::mem::take(&mut pending) {
                for name in p.into_keys() {
                    out.push((
                        tenant.clone(),
                        Outcome {
                            name,
                            settled: Settled::TimedOut,
                            secs: t0.elapsed().as_secs_f64(),
                        },
                    ));
                }
            }
            break;
        }
        let pause = Duration::from_secs(1).saturating_sub(round.elapsed());
        tokio::time::sleep(pause.max(Duration::from_millis(100))).await;
    }
    out
}

/// Resident memory of each process once the total has settled (within 2 % over 5 readings a
/// second apart), or after [`SETTLE_MAX`]; and whether it settled.
async fn settled_rss(sys: &DevSystem) -> (BTreeMap<String, u64>, Option<u64>, bool) {
    let start = Instant::now();
    let mut totals: Vec<u64> = Vec::new();
    loop {
        let reading: BTreeMap<String, u64> = sys
            .processes()
            .pids
            .iter()
            .filter_map(|(n, pid)| Some((n.clone(), rss_bytes(Some(*pid))?)))
            .collect();
        totals.push(reading.values().sum());
        let last: &[u64] = &totals[totals.len().saturating_sub(5)..];
        let settled = last.len() == 5 && {
            let (lo, hi) = (
                last.iter().min().copied().unwrap_or(0),
                last.iter().max().copied().unwrap_or(0),
            );
            (hi - lo) as f64 <= 0.02 * hi as f64
        };
        if settled || start.elapsed() >= SETTLE_MAX {
            return (reading, rss_bytes(sys.pid()), settled);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Streams and consumers, summed over the nats-servers' `/jsz`.
async fn jetstream_counts(p: &Processes) -> Option<JetStreamCounts> {
    let mut out = JetStreamCounts::default();
    for m in &p.nats_monitors {
        let jsz = http_json(m, "/jsz").await.ok()?;
        out.streams += jsz["streams"].as_u64()?;
        out.consumers += jsz["consumers"].as_u64()?;
    }
    (!p.nats_monitors.is_empty()).then_some(out)
}

/// One `AddTenant`: its seconds and the API token, or why it failed.
type AddResult = Result<(f64, String), String>;

async fn measure_idle(
    sys: &DevSystem,
    args: &TenantsArgs,
    notes: &mut Vec<String>,
) -> anyhow::Result<Idle> {
    let mut idle = Idle {
        base_tenants: CONFIGURED_TENANTS,
        ..Idle::default()
    };
    progress(format!(
        "idle tenants: resident memory with the {CONFIGURED_TENANTS} configured tenants"
    ));
    // The gateway answers: every service is up.
    sys.client(PROBE)
        .await?
        .list_clusters(pb::ListClustersRequest::default())
        .await
        .map_err(|s| anyhow::anyhow!("the gateway: {}", crate::output::status_text(&s)))?;
    let (base, base_dev, base_settled) = settled_rss(sys).await;
    idle.base_settled = base_settled;
    idle.base_jetstream = jetstream_counts(&sys.processes()).await;

    let add = args.idle_tenants.saturating_sub(CONFIGURED_TENANTS) as usize;
    progress(format!(
        "adding {add} idle tenants through the admin API ({} at a time)",
        args.onboard_concurrency
    ));
    let admin = admin_client(sys).await?;
    let t_add = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(String, AddResult)> =
        futures::stream::iter((0..add).map(|i| format!("idle-{i:05}")))
            .map(|id| {
                let (admin, done) = (&admin, &done);
                async move {
                    let t = Instant::now();
                    let r = admin
                        .clone()
                        .add_tenant(pb::AddTenantRequest {
                            id: id.clone(),
                            azure: Some(pb::TenantAzure {
                                tenant_id: uuid::Uuid::new_v4().to_string(),
                                subscription_id: uuid::Uuid::new_v4().to_string(),
                                client_id: uuid::Uuid::new_v4().to_string(),
                            }),
                        })
                        .await
                        .map(|a| (t.elapsed().as_secs_f64(), a.into_inner().api_token))
                        .map_err(|s| crate::output::status_text(&s));
                    let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if k % 100 == 0 || k == add {
                        progress(format!(
                            "added {k}/{add} in {:.1} s",
                            t_add.elapsed().as_secs_f64()
                        ));
                    }
                    (id, r)
                }
            })
            .buffer_unordered(args.onboard_concurrency as usize)
            .collect()
            .await;
    idle.add_secs = t_add.elapsed().as_secs_f64();
    let mut call_secs = Vec::new();
    let mut last_token = None;
    for (id, r) in results {
        match r {
            Ok((secs, token)) => {
                call_secs.push(secs);
                idle.added += 1;
                last_token = Some(token);
            }
            Err(e) => idle.add_failures.push(format!("{id}: {e}")),
        }
    }
    idle.add_call_secs = Summary::of(call_secs);
    let failures = idle.add_failures.len();
    idle.add_failures.truncate(10);
    if failures > 0 {
        notes.push(format!("{failures} AddTenant calls failed"));
    }
    idle.tenants = CONFIGURED_TENANTS + idle.added as u32;
    // The last one added is served: every service has seen them all.
    if let Some(token) = last_token {
        let t = Instant::now();
        match token_served(sys, &token).await {
            Ok(_) => idle.last_token_served_secs = Some(t.elapsed().as_secs_f64()),
            Err(e) => notes.push(format!("the last idle tenant added: {e:#}")),
        }
    }
    progress(format!(
        "resident memory with {} tenants, once it settles",
        idle.tenants
    ));
    let (after, idle_dev, idle_settled) = settled_rss(sys).await;
    idle.idle_settled = idle_settled;
    idle.idle_jetstream = jetstream_counts(&sys.processes()).await;
    for (which, settled) in [("first", base_settled), ("second", idle_settled)] {
        if !settled {
            notes.push(format!(
                "the {which} memory reading did not settle within {} s; read anyway",
                SETTLE_MAX.as_secs()
            ));
        }
    }
    idle.memory = memory_rows(&base, &after);
    idle.emulators = MemoryRow {
        process: "hypersaga dev (emulators)".into(),
        base_bytes: base_dev,
        idle_bytes: idle_dev,
        ratio: ratio(idle_dev.map(|b| b as f64), base_dev.map(|b| b as f64)),
    };
    Ok(idle)
}

/// One row per process of either reading, then `total` (of the processes in both).
pub fn memory_rows(base: &BTreeMap<String, u64>, idle: &BTreeMap<String, u64>) -> Vec<MemoryRow> {
    let mut names: Vec<&String> = base.keys().chain(idle.keys()).collect();
    names.sort();
    names.dedup();
    let row = |process: String, b: Option<u64>, i: Option<u64>| MemoryRow {
        process,
        base_bytes: b,
        idle_bytes: i,
        ratio: ratio(i.map(|v| v as f64), b.map(|v| v as f64)),
    };
    let mut rows: Vec<MemoryRow> = names
        .iter()
        .map(|n| row((*n).clone(), base.get(*n).copied(), idle.get(*n).copied()))
        .collect();
    let both: Vec<&&String> = names
        .iter()
        .filter(|n| base.contains_key(**n) && idle.contains_key(**n))
        .collect();
    rows.push(row(
        "total".into(),
        Some(both.iter().map(|n| base[**n]).sum()),
        Some(both.iter().map(|n| idle[**n]).sum()),
    ));
    rows
}

fn targets(load: Option<&Load>, idle: Option<&Idle>, m: u32) -> Vec<Target> {
    let mut out = Vec::new();
    if let Some(l) = load {
        out.push(Target::new(
            format!("time to all ready / one subscription's write-budget bound for {m}"),
            l.ratio_to_bound,
            "ratio",
            "<= 1.25",
        ));
        out.push(Target::new(
            "429s / ARM requests (as bench fleet)",
            l.throttled_share,
            "share",
            "<= 2 %",
        ));
    }
    if let Some(i) = idle
        && let Some(total) = i.memory.last()
    {
        out.push(Target::new(
            format!(
                "resident memory, {} idle tenants / {}",
                i.tenants, i.base_tenants
            ),
            total.ratio,
            "ratio",
            "printed, not set",
        ));
    }
    out
}

fn mib(b: Option<u64>) -> String {
    num(b.map(|b| b as f64 / (1024.0 * 1024.0)), 1)
}

fn render(r: &TenantsReport) -> String {
    let mut out = format!(
        "hypersaga bench tenants: {} tenants × {} clusters at once, each tenant in its own \
         subscription; then {} idle tenants (profile {}, {} replica(s), ARM budgets × {})\n",
        r.tenants, r.clusters_per_tenant, r.idle_tenants, r.profile, r.replicas, r.arm_budget_scale
    );
    if let Some(l) = &r.load {
        out.push_str(&format!(
            "\nOnboarded {} tenants in {:.1} s (directory, subscription, federated app, \
             AddTenant, public DNS zone; token served).\n",
            l.onboarded, l.onboarding_secs
        ));
        for f in &l.onboarding_failures {
            out.push_str(&format!("onboarding failed: {f}\n"));
        }
        out.push_str(&format!(
            "One subscription alone ({PROBE}): first create {} s, {} ARM writes; a second {} s, \
             {} writes. Write budget as paced: burst {}, {}/s.\n\n",
            num(l.alone.first_secs, 1),
            l.alone.first_writes,
            num(l.alone.next_secs, 1),
            l.alone.next_writes,
            num(l.budget.map(|b| b.burst), 0),
            num(l.budget.map(|b| b.per_sec), 1),
        ));
        let mut t = Table::new([
            "CLUSTERS",
            "READY",
            "FAILED",
            "PAUSED",
            "REFUSED",
            "TIMED OUT",
            "TIME TO ALL s",
            "P50 s",
            "P99 s",
            "BOUND WRITES",
            "BOUND s",
            "RATIO",
            "WRITES/SUB",
            "ARM REQUESTS",
            "429s",
            "429 SHARE",
            "MAX SUB 429",
            "CPU s",
            "CPU s/CLUSTER",
        ]);
        t.row([
            l.clusters.to_string(),
            l.succeeded.to_string(),
            l.failed.to_string(),
            l.paused.to_string(),
            l.rejected.to_string(),
            l.timed_out.to_string(),
            num(l.time_to_all_secs, 1),
            num(l.cluster_secs.p50, 1),
            num(l.cluster_secs.p99, 1),
            l.bound_writes.map_or("-".into(), |w| w.to_string()),
            num(l.bound_secs, 1),
            num(l.ratio_to_bound, 2),
            num(l.writes_per_subscription, 1),
            l.arm_requests.to_string(),
            l.arm_throttled.to_string(),
            pct(l.throttled_share),
            pct(l.max_subscription_throttled_share),
            num(Some(l.cpu.system_secs), 1),
            num(l.cpu_secs_per_cluster, 2),
        ]);
        out.push_str(&t.render());
        out.push_str(
            "\nTIME TO ALL: from sending the creates until every cluster was ready; empty when \
             some were not. BOUND WRITES: ARM writes of M creates in one subscription (its \
             first's + (M − 1) × a second's). BOUND: the first create alone + max(0, BOUND \
             WRITES − burst) / rate. WRITES/SUB: ARM writes admitted during the creates ÷ \
             tenants. 429s: of the tenants' subscriptions' ARM requests. CPU: the services and \
             nats-server, from /proc.\n",
        );
        if let Some(s) = l.time_to_settled_secs
            && l.time_to_all_secs.is_none()
        {
            out.push_str(&format!("the last cluster settled after {s:.1} s\n"));
        }
        for p in &l.problems {
            out.push_str(&format!("{p}\n"));
        }
        let mut t = Table::new(["PROCESS", "CPU s"]);
        for (p, s) in &l.cpu.by_process {
            t.row([p.clone(), num(Some(*s), 1)]);
        }
        t.row(["system".to_owned(), num(Some(l.cpu.system_secs), 1)]);
        t.row([
            "hypersaga dev (emulators, not counted)".to_owned(),
            num(l.cpu.emulators_secs, 1),
        ]);
        out.push_str("\nCPU during the creates:\n");
        out.push_str(&t.render());
    }
    if let Some(i) = &r.idle {
        out.push_str(&format!(
            "\nIdle tenants: {} added through the admin API in {:.1} s (AddTenant p50 {} s, \
             p99 {} s); the last one's token served {} s after it was added.\n",
            i.added,
            i.add_secs,
            num(i.add_call_secs.p50, 3),
            num(i.add_call_secs.p99, 3),
            num(i.last_token_served_secs, 1),
        ));
        for f in &i.add_failures {
            out.push_str(&format!("AddTenant failed: {f}\n"));
        }
        let (b, n) = (i.base_tenants, i.tenants);
        let mut t = Table::new([
            "PROCESS".to_owned(),
            format!("RSS MiB @{b}"),
            format!("RSS MiB @{n}"),
            "RATIO".to_owned(),
        ]);
        for row in i.memory.iter().chain([&i.emulators]) {
            t.row([
                row.process.clone(),
                mib(row.base_bytes),
                mib(row.idle_bytes),
                num(row.ratio, 2),
            ]);
        }
        let js = |j: Option<JetStreamCounts>, f: fn(JetStreamCounts) -> u64| {
            j.map_or("-".to_owned(), |j| f(j).to_string())
        };
        let rs = |f: fn(JetStreamCounts) -> u64| {
            ratio(
                i.idle_jetstream.map(|j| f(j) as f64),
                i.base_jetstream.map(|j| f(j) as f64),
            )
        };
        t.row([
            "JetStream streams".to_owned(),
            js(i.base_jetstream, |j| j.streams),
            js(i.idle_jetstream, |j| j.streams),
            num(rs(|j| j.streams), 2),
        ]);
        t.row([
            "JetStream consumers".to_owned(),
            js(i.base_jetstream, |j| j.consumers),
            js(i.idle_jetstream, |j| j.consumers),
            num(rs(|j| j.consumers), 2),
        ]);
        out.push('\n');
        out.push_str(&t.render());
        out.push_str(
            "\nRSS: resident memory (/proc VmRSS) once the total settled; total: the services \
             and nats-server. The emulators run in hypersaga dev's own process (not the \
             system).\n",
        );
    }
    out.push('\n');
    out.push_str(&targets_and_notes(&r.targets, &r.notes));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        bench: super::super::BenchCommand,
    }

    fn parse(args: &[&str]) -> Result<TenantsArgs, clap::Error> {
        let cli = Cli::try_parse_from(["bench", "tenants"].iter().chain(args))?;
        match cli.bench {
            super::super::BenchCommand::Tenants(a) => Ok(a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn arguments_default_to_the_issue_and_are_bounded() {
        let a = parse(&[]).expect("defaults");
        assert_eq!((a.tenants, a.clusters, a.idle_tenants), (100, 10, 1000));
        assert_eq!(a.onboard_concurrency, 16);
        assert_eq!(a.system.profile, crate::dev::Profile::default());
        assert_eq!(a.system.replicas, 1);
        let a = parse(&[
            "--tenants",
            "2",
            "--clusters",
            "1",
            "--idle-tenants",
            "20",
            "--profile",
            "fast",
            "--replicas",
            "3",
        ])
        .expect("given");
        assert_eq!((a.tenants, a.clusters, a.idle_tenants), (2, 1, 20));
        assert_eq!(a.system.profile, crate::dev::Profile::Fast);
        assert_eq!(a.system.replicas, 3);
        assert_eq!(
            parse(&["--tenants", "0", "--idle-tenants", "0"])
                .map(|a| (a.tenants, a.idle_tenants))
                .ok(),
            Some((0, 0))
        );
        assert!(parse(&["--idle-tenants", "2"]).is_err());
        assert!(parse(&["--idle-tenants", "10001"]).is_err());
        assert!(parse(&["--clusters", "0"]).is_err());
        assert!(parse(&["--tenants", "1001"]).is_err());
    }

    #[test]
    fn the_bound_is_one_subscriptions_writes_over_its_paced_budget() {
        // ARM's 200 / 10 s⁻¹, at 0.9 headroom.
        let b = WriteBudget::paced(1.0);
        assert_eq!(b.burst, 180.0);
        assert!((b.per_sec - 9.0).abs() < 1e-9);
        let b2 = WriteBudget::paced(2.0);
        assert_eq!(b2.burst, 360.0);
        assert!((b2.per_sec - 18.0).abs() < 1e-9);

        let alone = Alone {
            first_secs: Some(30.0),
            first_writes: 60,
            next_secs: Some(25.0),
            next_writes: 40,
        };
        // 60 + 9 × 40 = 420 writes: 240 beyond the burst, 26.7 s at 9/s.
        assert_eq!(writes_for(&alone, 10), 420);
        let bound = one_subscription_bound(&alone, 10, b).expect("bound");
        assert!((bound - (30.0 + 240.0 / 9.0)).abs() < 1e-9);
        // Within the burst: the critical path alone.
        assert_eq!(one_subscription_bound(&alone, 2, b), Some(30.0));
        // No lone create, no bound.
        let none = Alone {
            first_secs: None,
            ..alone.clone()
        };
        assert_eq!(one_subscription_bound(&none, 10, b), None);
        assert_eq!(ratio(Some(bound * 1.25), Some(bound)), Some(1.25));
    }

    #[test]
    fn cpu_counts_restarted_processes_from_their_restart() {
        let before = BTreeMap::from([
            ("gateway-0".to_owned(), (10, 5.0)),
            ("identity-0".to_owned(), (11, 2.0)),
            ("nats-server".to_owned(), (12, 1.0)),
        ]);
        let after = BTreeMap::from([
            ("gateway-0".to_owned(), (10, 7.5)),
            ("identity-0".to_owned(), (21, 0.5)),
            ("nats-server".to_owned(), (12, 4.0)),
        ]);
        let c = cpu_between(&before, &after);
        assert!((c.system_secs - 6.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c.by_process["gateway-0"], 2.5);
        assert_eq!(c.restarted, vec!["identity-0".to_owned()]);
    }

    #[test]
    fn memory_rows_put_each_process_beside_itself_and_a_total_last() {
        let base = BTreeMap::from([
            ("gateway-0".to_owned(), 100),
            ("nats-server".to_owned(), 50),
        ]);
        let idle = BTreeMap::from([
            ("gateway-0".to_owned(), 150),
            ("nats-server".to_owned(), 100),
        ]);
        let rows = memory_rows(&base, &idle);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].ratio, Some(1.5));
        assert_eq!(rows[2].process, "total");
        assert_eq!(
            (rows[2].base_bytes, rows[2].idle_bytes),
            (Some(150), Some(250))
        );
    }

    #[test]
    fn the_report_prints_the_figures_beside_their_bounds() {
        let load = Load {
            onboarded: 2,
            budget: Some(WriteBudget::paced(1.0)),
            alone: Alone {
                first_secs: Some(20.0),
                first_writes: 50,
                next_secs: Some(15.0),
                next_writes: 40,
            },
            bound_secs: Some(20.0),
            bound_writes: Some(90),
            clusters: 4,
            succeeded: 4,
            time_to_all_secs: Some(24.0),
            ratio_to_bound: Some(1.2),
            arm_requests: 1000,
            arm_throttled: 5,
            throttled_share: Some(0.005),
            cpu_secs_per_cluster: Some(1.5),
            ..Load::default()
        };
        let mib = 1024 * 1024;
        let idle = Idle {
            base_tenants: 2,
            tenants: 20,
            added: 18,
            memory: memory_rows(
                &BTreeMap::from([("gateway-0".to_owned(), 10 * mib)]),
                &BTreeMap::from([("gateway-0".to_owned(), 12 * mib)]),
            ),
            emulators: MemoryRow {
                process: "hypersaga dev (emulators)".into(),
                base_bytes: None,
                idle_bytes: None,
                ratio: None,
            },
            base_jetstream: Some(JetStreamCounts {
                streams: 10,
                consumers: 20,
            }),
            idle_jetstream: Some(JetStreamCounts {
                streams: 10,
                consumers: 20,
            }),
            ..Idle::default()
        };
        let report = TenantsReport {
            bench: "tenants",
            tenants: 2,
            clusters_per_tenant: 2,
            idle_tenants: 20,
            profile: "fast".into(),
            replicas: 1,
            arm_budget_scale: 1.0,
            targets: targets(Some(&load), Some(&idle), 2),
            load: Some(load),
            idle: Some(idle),
            notes: Vec::new(),
        };
        let text = render(&report);
        assert!(text.contains("burst 180, 9.0/s"), "{text}");
        assert!(text.contains("RSS MiB @2  RSS MiB @20"), "{text}");
        assert!(text.contains("gateway-0"), "{text}");
        assert!(text.contains("JetStream consumers"), "{text}");
        assert!(
            text.contains("write-budget bound for 2   1.20×  <= 1.25"),
            "{text}"
        );
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["load"]["ratio_to_bound"], 1.2);
        assert_eq!(json["idle"]["memory"][1]["process"], "total");
    }
}
