//! `hypersaga bench …`: figures and ratios for the engine, a fleet, fairness between
//! tenants, many tenants' creates at once and idle tenants' memory, clusters waiting on their control plane and one create's Azure phase. Every bench starts what it measures itself (a private nats-server, or a whole
//! `hypersaga dev` in a temporary directory), stops it and removes its files at the end, on
//! error and on Ctrl-C. The benches report numbers beside the targets; they never
//! judge them (the exit code says only whether the bench ran).

mod azure_phase;
mod chaos;
mod day2;
mod engine;
mod fairness;
mod fleet;
mod report;
mod system;
mod tenants;
mod waits;

use std::process::ExitCode;

use clap::Subcommand;

pub use azure_phase::AzurePhaseArgs;
pub use day2::Day2Args;
pub use engine::EngineArgs;
pub use fairness::FairnessArgs;
pub use fleet::FleetArgs;
pub use tenants::TenantsArgs;
pub use waits::WaitsArgs;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// The saga engine's throughput and per-step cost, beside the raw JetStream pattern.
    ///
    /// Starts a private nats-server and, in this process, the real coordinator and the real
    /// worker runtime with a handler that does nothing. N sagas of K chained no-op steps are
    /// written as the gateway writes them (cluster record, saga record, `saga.start`) with M in
    /// flight at a time, for each M of --in-flight; the same N, K and M then run through the
    /// raw pattern on the same server (KV create, then per step a command published with ack
    /// and pulled, an event likewise, a KV compare-and-set), with payloads as large as the
    /// engine's. Then --finished finished sagas are written and the engine runs again; its
    /// unloaded run is compared with one timed just before they were written (same streams,
    /// same history), so the comparison sees the finished sagas and nothing else.
    ///
    /// Printed per run: sagas/s; saga time p50/p99; step round trip p50/p99; the coordinator's
    /// own time per step p50/p99 (one transition applying a step's result, timed on the
    /// coordinator's span); the worker runtime's per command; resident memory per saga in
    /// flight (this process and nats-server). Each run stops starting sagas after
    /// --max-run-secs, and says so.
    ///
    /// Targets (printed beside the figures, not asserted): engine ≥ 50 % of the raw pattern's
    /// sagas/s; coordinator per step p50 ≤ 1 ms, and unchanged (±10 %) with 10,000 finished
    /// sagas present.
    Engine(EngineArgs),
    /// N clusters at once in one subscription, against the ARM emulator at ARM's real budgets.
    ///
    /// Starts `hypersaga dev` (temporary state directory), creates one cluster alone and
    /// deletes it (each operation's critical path), then creates N clusters at once as tenant
    /// acme through the gateway and follows them until each is ready, failed or paused; then
    /// deletes them all at once and follows them until gone. Reads the ARM emulator's request
    /// counters before and after each phase.
    ///
    /// Printed per phase: clusters ready/gone, failed, paused, refused; time until all were
    /// done; the bound the ARM budget sets, = one alone + max(0, requests admitted − burst) /
    /// rate (writes = PUT, PATCH, POST: 200 burst, 10/s; deletes: 200, 10/s) and the ratio to
    /// it; ARM requests and the share answered 429. Then what is left in the subscription, by
    /// type (what outlives clusters: the user's public DNS zone and its group, the tenant's identity group).
    ///
    /// Targets (not asserted): time to all ready ≤ 1.25 × the write-budget bound; 429s ≤ 2 %
    /// of ARM requests.
    Fleet(FleetArgs),
    /// One tenant's burst beside another tenant's single create.
    ///
    /// Starts `hypersaga dev` (temporary state directory). Tenant globex creates one cluster
    /// (unmeasured: it sets up globex's persistent identities), then one more alone, timed to
    /// ready. Then tenant acme submits --burst creates at once and, as soon as they are
    /// accepted, globex creates one more, timed to ready. Printed: both times, their ratio,
    /// how many of acme's clusters were ready by then, and each subscription's 429 share.
    ///
    /// Target (not asserted): globex's time during the burst ≤ 1.5 × its time alone.
    Fairness(FairnessArgs),
    /// Clusters waiting on their control plane hold no worker slot.
    ///
    /// Starts a private nats-server and, in this process, the real gateway, coordinator and
    /// worker runtime of the five services, each with --slots slots and a stand-in handler:
    /// every step is done at once, except the HostedCluster of the --waiting `slow-` clusters,
    /// which answers "wait" (Available=False) at every check, asking for the next in
    /// --recheck-secs. Creates those clusters through the gateway and follows them until each
    /// waits on its control plane; then, for two check periods, watches their checks and
    /// creates --probes other clusters spread over the first, each timed from its create's
    /// request to its first step and to ready. Printed: how many waiting clusters were checked
    /// and how far apart their checks were, each probe's times, and how many waiting clusters
    /// were paused or failed.
    ///
    /// Targets (not asserted): another cluster's first step within 1 s, with 1,000 clusters
    /// waiting; none of them paused or failed.
    Waits(WaitsArgs),
    /// One create's Azure phase at Azure's real latencies, beside its critical path.
    ///
    /// Starts `hypersaga dev --profile real` (temporary state directory: ARM's latency model
    /// at time scale 1.0) and creates one cluster. The Azure phase runs from the operation's
    /// start until the last Azure step the HostedCluster waits for is done (identity ∥
    /// network, then the private DNS zone and its VNet link), read from the operation's step
    /// timestamps; then the bench stops (the control plane's minutes are not measured).
    ///
    /// Printed: each Azure step's modelled duration (what the emulator's latencies make of
    /// its requests), start and end; the measured phase; the critical path of the DAG through
    /// the modelled durations; HyperShift's sequential time for the same work (156.1 s,
    /// docs/reference/azure-latencies.md §4.4). Takes about two minutes.
    ///
    /// Targets (not asserted): phase ≤ critical path + 2 %; about half the sequential time.
    AzurePhase(AzurePhaseArgs),
    /// Day-2 work on one cluster, beside the time the simulated HyperShift operator needs for it.
    ///
    /// Starts `hypersaga dev` (the real profile by default: ARM's latencies unscaled, each
    /// node ready 7 min after its machine, a control-plane upgrade 20 min) and creates one
    /// cluster (not measured). Then: a pool of 0 nodes is added and scaled to --nodes; the
    /// control plane is upgraded to the next minor; then the first pool to it. Each
    /// operation's time (its start to its end, as the API reports them) is printed beside the
    /// operator's for the same work, read off the management cluster every 100 ms: from its
    /// object asking for the change to it showing the change done. At the real profile this
    /// takes about an hour.
    ///
    /// Target (not asserted): each operation ≤ the operator's time + 2 %.
    Day2(Day2Args),
    /// N tenants, each in its own subscription, × M clusters created at once; then the
    /// memory of 1,000 idle tenants.
    ///
    /// Starts `hypersaga dev` (temporary state directory). Tenant acme creates one cluster
    /// alone, then a second: their times and ARM writes make one subscription's bound for M
    /// creates, = the first alone + max(0, its writes + (M − 1) × the second's − burst) / rate
    /// (the write budget hypersaga paces itself at: ARM's 200 burst and 10/s × headroom 0.9).
    /// Then --tenants tenants are onboarded live, --onboard-concurrency at a time, each as a
    /// customer would be: its own Entra directory and subscription, hypersaga's application
    /// registered by its administrator with a federated credential, the admin's AddTenant,
    /// the user's public DNS zone. Each then creates --clusters clusters, all at once through
    /// its own token, followed until ready, failed or paused.
    ///
    /// Printed: time to all ready beside the bound and the ratio; ARM writes per subscription;
    /// the 429 share of the tenants' subscriptions; CPU seconds of the services and
    /// nats-server (from /proc) per cluster. Then, on a fresh `hypersaga dev`: each process's
    /// resident memory and JetStream's streams and consumers with the 2 configured tenants,
    /// and again once --idle-tenants tenants are onboarded through the admin API alone (no
    /// Azure side) and the memory has settled, side by side.
    ///
    /// Target (not asserted): 100 tenants × 10 clusters ready within 1.25 × the bound for 10.
    Tenants(TenantsArgs),
}

/// A nats-server of the bench's own, in a temporary directory named for `bench`: stop the
/// server, then drop the directory (both also go when dropped, on error).
async fn private_nats(
    bench: &str,
) -> anyhow::Result<(tempfile::TempDir, hypersaga_procs::NatsServer)> {
    use anyhow::Context;
    let dir = tempfile::Builder::new()
        .prefix(&format!("hypersaga-bench-{bench}-"))
        .tempdir()
        .context("creating a temporary directory")?;
    report::progress("starting a private nats-server");
    let nats = hypersaga_procs::NatsServer::start(&dir.path().join("nats"))
        .await
        .context("starting nats-server (./scripts/setup.sh installs it; or set NATS_SERVER_BIN)")?;
    Ok((dir, nats))
}

pub async fn run(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    let shutdown = crate::serve::shutdown_on_signals()?;
    let bench = async {
        match cmd {
            BenchCommand::Engine(a) => engine::run(a).await,
            BenchCommand::Fleet(a) => fleet::run(a).await,
            BenchCommand::Fairness(a) => fairness::run(a).await,
            BenchCommand::Waits(a) => waits::run(a).await,
            BenchCommand::AzurePhase(a) => azure_phase::run(a).await,
            BenchCommand::Day2(a) => day2::run(a).await,
            BenchCommand::Tenants(a) => tenants::run(a).await,
        }
    };
    // On Ctrl-C the bench is dropped: what it started stops with it (child processes get
    // SIGTERM or are killed, temporary directories are removed).
    tokio::select! {
        r = bench => r,
        _ = shutdown.cancelled() => {
            report::progress("interrupted; stopping what the bench started");
            Ok(ExitCode::from(130))
        }
    }
}
