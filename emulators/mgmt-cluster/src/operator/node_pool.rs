//! The NodePool controller.

use std::time::Instant;

use serde_json::{Value, json};

use hypersaga_hypershift::release_version;

use super::conditions::{conditions_mut, set_condition};
use super::{
    Deadline, Operator, ensure_finalizer, ns_name, record_condition_events, remove_finalizer_after,
    uid, write_status,
};
use crate::Shared;
use crate::faults::{Fault, FaultKind};
use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS};
use crate::meta::is_deleting;

/// Event source: HyperShift's NodePool controller records as `nodepool-controller`.
const NODE_POOL_EVENTS: &str = "nodepool-controller";

impl Operator {
    pub(super) fn node_pool(
        &mut self,
        shared: &Shared,
        np: &Value,
        faults: &[Fault],
        now: Instant,
        deadline: &mut Deadline,
    ) {
        let store = &shared.store;
        let cfg = &shared.config;
        let (ns, name) = ns_name(np);
        let track = self.tracks.entry(uid(np)).or_default();
        if is_deleting(np) {
            let since = *track.deleting_since.get_or_insert(now);
            let cluster = np.pointer("/spec/clusterName").and_then(Value::as_str);
            let hc = cluster.and_then(|c| store.get(HOSTED_CLUSTERS, ns, c).ok());
            if self.workers.manages(np, hc.as_ref())
                && !self
                    .workers
                    .released(store, np, hc.as_ref(), cfg.node_pool_ready_after, now)
            {
                return; // CAPZ is still removing the workers; its reports wake us
            }
            remove_finalizer_after(
                store,
                NODE_POOLS,
                np,
                since + cfg.deletion_after,
                now,
                deadline,
            );
            return;
        }
        if ensure_finalizer(store, NODE_POOLS, np) {
            return;
        }
        let generation = np
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let target = np
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .or_else(|| np.pointer("/spec/autoScaling/min").and_then(Value::as_i64))
            .unwrap_or(0);
        let cluster = np
            .pointer("/spec/clusterName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let hc_available = store.get(HOSTED_CLUSTERS, ns, cluster).is_ok_and(|hc| {
            !is_deleting(&hc)
                && hc
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Available" && c["status"] == "True")
                    })
        });
        let image = np
            .pointer("/spec/release/image")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Azure workers: CAPI's Machines and CAPZ's VMs, once the control plane is up.
        let view = store
            .get(HOSTED_CLUSTERS, ns, cluster)
            .ok()
            .filter(|hc| {
                hc_available
                    && !faults.iter().any(|f| f.matches(FaultKind::NodePool, name))
                    && self.workers.manages(np, Some(hc))
            })
            .map(|hc| {
                self.workers
                    .converge(store, np, &hc, target, cfg.node_pool_ready_after, now)
            });
        let mut status = np.get("status").cloned().unwrap_or_else(|| json!({}));
        let current = status.get("replicas").and_then(Value::as_i64).unwrap_or(0);
        let conds = conditions_mut(&mut status);
        let fault = faults.iter().find(|f| f.matches(FaultKind::NodePool, name));
        let mut ready_now = false;
        if let Some(f) = fault {
            set_condition(conds, "Ready", false, &f.reason, &f.message, generation);
            set_condition(
                conds,
                "AllMachinesReady",
                false,
                &f.reason,
                &f.message,
                generation,
            );
            track.scale = None;
        } else if !hc_available {
            let msg = format!("Waiting for HostedCluster {cluster} to be available");
            set_condition(
                conds,
                "Ready",
                false,
                "WaitingForAvailableHostedCluster",
                &msg,
                generation,
            );
            set_condition(
                conds,
                "AllMachinesReady",
                false,
                "WaitingForAvailableHostedCluster",
                &msg,
                generation,
            );
            track.scale = None;
        } else if let Some(view) = &view {
            track.scale = None;
            for (type_, ok, reason, message) in view.conditions(target) {
                set_condition(conds, type_, ok, &reason, &message, generation);
            }
            ready_now = view.ready(target);
            if let Some(at) = view.wake {
                deadline.at(at);
            }
        } else {
            if track.scale.is_none_or(|(t, _)| t != target) {
                track.scale = Some((target, now));
            }
            let since = track.scale.map_or(now, |(_, t)| t);
            if current == target || now >= since + cfg.node_pool_ready_after {
                ready_now = true;
                set_condition(conds, "Ready", true, "AsExpected", "", generation);
                set_condition(
                    conds,
                    "AllMachinesReady",
                    true,
                    "AsExpected",
                    "All is well",
                    generation,
                );
                set_condition(
                    conds,
                    "AllNodesHealthy",
                    true,
                    "AsExpected",
                    "All is well",
                    generation,
                );
            } else {
                let msg = format!(
                    "Minimum availability requires {target} replicas, current {current} available"
                );
                set_condition(conds, "Ready", false, "WaitingForNodes", &msg, generation);
                set_condition(
                    conds,
                    "AllMachinesReady",
                    false,
                    "WaitingForMachines",
                    &msg,
                    generation,
                );
                deadline.at(since + cfg.node_pool_ready_after);
            }
        }
        if ready_now {
            status["replicas"] = json!(target);
            if let Some(v) = release_version(image) {
                status["version"] = json!(v);
            }
        } else if status.get("replicas").is_none() {
            status["replicas"] = json!(0);
        }
        if let Some(view) = &view {
            status["replicas"] = json!(view.available);
        }
        let conditions = status.get("conditions").cloned();
        if write_status(store, NODE_POOLS, np, status) {
            let warn: &[&str] = if fault.is_some() {
                &["Ready", "AllMachinesReady"]
            } else {
                &[]
            };
            record_condition_events(store, NODE_POOL_EVENTS, np, conditions, warn);
        }
    }
}
