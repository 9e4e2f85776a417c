//! What a NodePool reports of its MachineDeployment and Machines, as HyperShift copies it:
//! `status.replicas` is the MachineDeployment's available replicas, `Ready` its v1beta1
//! `Ready` (`Minimum availability requires N replicas, current M available`, N being the
//! replicas less `maxUnavailable`), `AllMachinesReady` and `AllNodesHealthy` the Machines'
//! aggregated conditions, and `status.version` the template's version once the rollout is
//! complete (`MachineDeploymentComplete`: every replica of the new MachineSet available and
//! no other Machine left).

use std::time::Instant;

use super::capi::PoolCondition;

/// The NodePool's view of its Machines, for the operator to put in its status.
pub(crate) struct PoolView {
    /// Machines whose node has joined.
    pub available: i64,
    /// `replicas - maxUnavailable`: what `Ready` needs.
    pub min_available: i64,
    /// `MachineDeploymentComplete`.
    pub complete: bool,
    /// The version of the current template, if there is a MachineDeployment.
    pub version: Option<String>,
    pub all_machines_ready: PoolCondition,
    pub all_nodes_healthy: PoolCondition,
    /// When to look again without a change (a node that becomes ready).
    pub wake: Option<Instant>,
}

impl PoolView {
    /// The NodePool's `Ready`, `AllMachinesReady` and `AllNodesHealthy`, as (type, true?,
    /// reason, message).
    pub fn conditions(&self) -> Vec<(&'static str, bool, String, String)> {
        let ready = if self.ready() {
            (true, "AsExpected".to_owned(), String::new())
        } else {
            (
                false,
                "WaitingForAvailableMachines".to_owned(),
                format!(
                    "Minimum availability requires {} replicas, current {} available",
                    self.min_available, self.available
                ),
            )
        };
        let (m, n) = (&self.all_machines_ready, &self.all_nodes_healthy);
        vec![
            ("Ready", ready.0, ready.1, ready.2),
            ("AllMachinesReady", m.0, m.1.clone(), m.2.clone()),
            ("AllNodesHealthy", n.0, n.1.clone(), n.2.clone()),
        ]
    }

    /// The MachineDeployment is available: enough nodes have joined.
    pub fn ready(&self) -> bool {
        self.available >= self.min_available
    }
}
