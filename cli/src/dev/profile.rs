//! Timing profiles of the local system: `demo` is slow enough to watch each step; `fast` is
//! for tests, every simulated delay near zero and retries quick.

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
}

pub struct Timings {
    pub arm_latency: LatencyModel,
    pub hosted_cluster_available_after: Duration,
    pub node_pool_ready_after: Duration,
    pub deletion_after: Duration,
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
        }
    }
}
