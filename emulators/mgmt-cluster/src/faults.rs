//! Injected failures: what the simulated operator should make go wrong.

use serde::{Deserialize, Serialize};

/// Which kind a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultKind {
    HostedCluster,
    NodePool,
}

/// A failure to simulate: matching objects report it in their conditions and never become
/// ready until the fault is cleared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    /// Only objects whose name contains this; all objects of `kind` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    /// Condition reason, e.g. `AzureError`, `InvalidAzureCredentials`, `QuotaExceeded`.
    pub reason: String,
    pub message: String,
    /// HostedCluster: the condition the operator sets `False` with the reason and message
    /// (default `ValidConfiguration`, HyperShift's refusal of the cluster's input). NodePool
    /// faults show on `Ready` and `AllMachinesReady`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

impl Fault {
    /// The condition a HostedCluster fault sets `False`.
    pub fn condition(&self) -> &str {
        self.condition.as_deref().unwrap_or("ValidConfiguration")
    }

    /// Whether this fault applies to the object `kind`/`name`.
    pub fn matches(&self, kind: FaultKind, name: &str) -> bool {
        self.kind == kind
            && self
                .name_contains
                .as_deref()
                .is_none_or(|s| name.contains(s))
    }
}
