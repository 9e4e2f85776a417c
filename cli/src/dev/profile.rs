//! Timing profiles of the local system: `demo` is slow enough to watch each step; `fast` is
//! for tests, every simulated delay near zero and retries quick; `real` takes as long as Azure
//! and HyperShift do (`docs/reference/azure-latencies.md` at time scale 1.0), for measuring against them.

use std::time::Duration;

use clap::ValueEnum;
use hypersaga_config::{CoordinatorConfig, WorkerConfig};
use hypersaga_emulator_arm::LatencyModel;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// Azure latencies scaled to 5 % of real; the control plane and nodes take a few seconds.
    #[default]
    Demo,
    /// Near-zero delays and quick retries, for tests.
    Fast,
    /// As long as Azure and HyperShift take at p50 (docs/reference/azure-latencies.md, time scale 1.0): ARM's
    /// latency model unscaled, the HostedCluster `Available` after 5 min, each node ready 7 min
    /// after its machine, deletion 11 min, a control-plane upgrade 20 min; LROs polled when
    /// Azure's `Retry-After` says (every 0.5 s where it says nothing, as private DNS). A create
    /// takes about 13 minutes.
    Real,
}

/// p50 durations of HyperShift on self-managed Azure (docs/reference/azure-latencies.md §1 and §4.1).
mod real {
    use std::time::Duration;

    /// Row 13a: HostedCluster created → `Available` (HyperShift's SLO panel: < 300 s).
    pub const HOSTED_CLUSTER_AVAILABLE: Duration = Duration::from_secs(300);
    /// §4.1: `Available` → the NodePool's nodes Ready (10–15 min in all, row 13d).
    pub const NODE_POOL_READY: Duration = Duration::from_secs(420);
    /// Row 13e: HostedCluster deletion, ~11 min (SLO panel: < 720 s).
    pub const DELETION: Duration = Duration::from_secs(660);
    /// A control-plane upgrade until the version history says `Completed`: the hosted
    /// cluster's ClusterVersion finishes once its operators have rolled, which ARO-HCP's
    /// tracker puts at tens of minutes ("upgrades can exceed 30 min", ARO-HCP #4658). No p50
    /// is published; 20 minutes is taken.
    pub const CONTROL_PLANE_UPGRADE: Duration = Duration::from_secs(1_200);
}

pub struct Timings {
    pub arm_latency: LatencyModel,
    pub hosted_cluster_available_after: Duration,
    pub node_pool_ready_after: Duration,
    pub deletion_after: Duration,
    /// A control-plane upgrade's rollout, until its history entry is `Completed`.
    pub control_plane_upgrade_after: Duration,
    pub lro_poll_interval_ms: u64,
    /// How often a HostedCluster or NodePool still coming up is looked at again.
    pub kube_recheck_interval_ms: u64,
    pub coordinator: CoordinatorConfig,
    pub worker: WorkerConfig,
}

impl Profile {
    pub fn timings(self) -> Timings {
        match self {
            Profile::Demo => Timings {
                arm_latency: LatencyModel::Scaled(0.05),
                hosted_cluster_available_after: Duration::from_secs(6),
                node_pool_ready_after: Duration::from_secs(5),
                deletion_after: Duration::from_secs(2),
                control_plane_upgrade_after: Duration::from_secs(8),
                lro_poll_interval_ms: 500,
                kube_recheck_interval_ms: 1_000,
                coordinator: CoordinatorConfig {
                    base_delay_ms: 1_000,
                    max_delay_ms: 10_000,
                    // Timers drive leases and deadlines; the scan is only a safety net.
                    resync_interval_ms: 60_000,
                    lease_ms: 15_000,
                    start_lease_ms: 60_000,
                    step_timeout_s: 600,
                    recheck_min_ms: 200,
                    ..CoordinatorConfig::default()
                },
                worker: WorkerConfig {
                    concurrency: 16,
                    ack_wait_s: 10,
                },
            },
            Profile::Fast => Timings {
                arm_latency: LatencyModel::Zero,
                hosted_cluster_available_after: Duration::from_millis(300),
                node_pool_ready_after: Duration::from_millis(300),
                deletion_after: Duration::from_millis(200),
                control_plane_upgrade_after: Duration::from_millis(300),
                lro_poll_interval_ms: 50,
                kube_recheck_interval_ms: 100,
                coordinator: CoordinatorConfig {
                    max_attempts: 6,
                    base_delay_ms: 200,
                    max_delay_ms: 2_000,
                    // Timers drive leases and deadlines; the scan is only a safety net.
                    resync_interval_ms: 15_000,
                    ack_wait_s: 3,
                    lease_ms: 3_000,
                    start_lease_ms: 6_000,
                    step_timeout_s: 120,
                    recheck_min_ms: 50,
                    ..CoordinatorConfig::default()
                },
                worker: WorkerConfig {
                    concurrency: 16,
                    ack_wait_s: 3,
                },
            },
            Profile::Real => Timings {
                arm_latency: LatencyModel::Scaled(1.0),
                hosted_cluster_available_after: real::HOSTED_CLUSTER_AVAILABLE,
                node_pool_ready_after: real::NODE_POOL_READY,
                deletion_after: real::DELETION,
                control_plane_upgrade_after: real::CONTROL_PLANE_UPGRADE,
                // Only where Azure sends no `Retry-After` (private DNS): its SDKs then wait
                // 30 s, which puts up to 30 s on each of the zone and the link, the create's
                // critical path. Twice a second costs one cluster ~130 polls over the two,
                // inside Private DNS's 500 reads per 5 minutes for a few clusters at once,
                // and puts ~0.3 s on each (once a second measured 1.1 s each).
                lro_poll_interval_ms: 500,
                // A HostedCluster takes minutes: a look every 2 s costs nothing and adds at
                // most 2 s to a wait of 300.
                kube_recheck_interval_ms: 2_000,
                coordinator: CoordinatorConfig {
                    // Azure's own pace: a 5xx is retried after seconds, not milliseconds.
                    base_delay_ms: 2_000,
                    max_delay_ms: 60_000,
                    // Timers drive leases and deadlines; the scan is only a safety net.
                    resync_interval_ms: 60_000,
                    // A step's wait polls at Azure's pace (15 s `Retry-After` on deletes);
                    // leases stay well above that.
                    lease_ms: 60_000,
                    start_lease_ms: 300_000,
                    // NodePools take up to 30 min after `Available` in a bad case (row 13d,
                    // hypershift#7287): 45 min before a step pauses.
                    step_timeout_s: 2_700,
                    recheck_min_ms: 500,
                    recheck_max_ms: 30_000,
                    ..CoordinatorConfig::default()
                },
                worker: WorkerConfig {
                    concurrency: 16,
                    ack_wait_s: 30,
                },
            },
        }
    }
}
