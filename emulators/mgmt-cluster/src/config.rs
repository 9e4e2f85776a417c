//! Emulator settings.

use std::time::Duration;

/// How the emulator behaves: who may call it and how fast the simulated operator converges.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bearer token every API request must carry.
    pub token: String,
    /// Time from HostedCluster creation (or a release change) to `Available=True`.
    /// Real self-managed Azure: 3–6 min, up to 20–30 (reference latencies row 13a).
    pub hosted_cluster_available_after: Duration,
    /// Time from a Machine's infrastructure running (its VM, with Azure; its creation,
    /// without) to its node being ready: the per-machine time scaling and rollouts wait for.
    /// Real: a new pool's nodes are ready 6–9 min after `Available` (row 13d).
    pub node_pool_ready_after: Duration,
    /// Time a control-plane upgrade (a new `spec.release.image` HyperShift accepts) rolls
    /// before its `status.version.history` entry is `Completed`, given ready nodes. Real:
    /// 15–30 min and more (ARO-HCP #4658).
    pub control_plane_upgrade_after: Duration,
    /// Time the operator's finalizer holds a deleted object (row 13e: ~11 min real). A
    /// HostedCluster also waits for its NodePools to go.
    pub deletion_after: Duration,
    /// Time from a Deployment's new generation to its pods being available (the simulated
    /// deployment controller's `Available=True`), given nodes to run on; also how long Package
    /// Operator's per-cluster `remote-phase` Package takes to become available.
    pub deployment_available_after: Duration,
    /// Watch events kept for resumption; older resourceVersions get 410 `Expired`.
    pub watch_history: usize,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Namespaces that exist from the start (`default`, `kube-system`, …).
    pub initial_namespaces: Vec<String>,
    /// Where the simulated CAPZ creates an Azure NodePool's worker VMs, as the cluster's
    /// `nodePoolManagement` workload identity. `None`: Machines get emulated infrastructure
    /// at once and their nodes come up after `node_pool_ready_after`, with nothing made in
    /// any cloud (tests of the Kubernetes API).
    pub azure: Option<AzureEndpoints>,
}

/// The Azure a management cluster's CAPZ talks to: ARM, Entra, and the CA that signs their
/// certificates when they are emulators.
#[derive(Debug, Clone)]
pub struct AzureEndpoints {
    /// `https://management.azure.com` or the ARM emulator's URL (no trailing slash needed).
    pub arm_url: String,
    /// `https://login.microsoftonline.com` or the emulator's Entra URL.
    pub entra_url: String,
    /// PEM of the only CA trusted for both (the dev CA); `None` trusts the platform's roots.
    pub ca_pem: Option<String>,
}

impl Default for Config {
    /// Settings for `hypersaga dev`: a few seconds per step, so a demo shows progress.
    fn default() -> Self {
        Self {
            token: "hypersaga-dev-token".into(),
            hosted_cluster_available_after: Duration::from_secs(5),
            node_pool_ready_after: Duration::from_secs(5),
            control_plane_upgrade_after: Duration::from_secs(8),
            deletion_after: Duration::from_secs(3),
            deployment_available_after: Duration::from_secs(2),
            watch_history: 1000,
            bookmark_interval: Duration::from_secs(5),
            initial_namespaces: ["default", "kube-system", "kube-public", "kube-node-lease"]
                .map(String::from)
                .to_vec(),
            azure: None,
        }
    }
}

impl Config {
    /// Settings for tests: `token`, and every simulated delay set to `delay`.
    pub fn fast(token: impl Into<String>, delay: Duration) -> Self {
        Self {
            token: token.into(),
            hosted_cluster_available_after: delay,
            node_pool_ready_after: delay,
            control_plane_upgrade_after: delay,
            deletion_after: delay,
            deployment_available_after: delay,
            bookmark_interval: Duration::from_millis(500),
            ..Self::default()
        }
    }
}
