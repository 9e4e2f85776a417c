//! The NodePool controller: HyperShift's condition chain, its MachineDeployment, and the
//! NodePool's status from what CAPI reports.
//!
//! As in HyperShift (`nodepool_controller.go`), the input conditions come in order and one
//! that fails stops the reconcile: an invalid `spec.management` leaves everything else as
//! it was; a release HyperShift refuses (`ValidReleaseImage=False`) leaves the
//! MachineDeployment as it was — no rollout, no scaling — while CAPI keeps converging to it
//! and the NodePool's `status.replicas` and `Ready` are not refreshed. Otherwise the skew
//! and version-update conditions are set, the MachineDeployment takes the spec (replicas or
//! the autoscaler's, rollout strategy, template, in-place fields), and the status follows
//! the Machines: `status.replicas` the available ones, `status.version` the new release
//! only once the rollout is complete.

use std::time::Instant;

use serde_json::{Value, json};

use super::conditions::{conditions_mut, put_condition, set_condition};
use super::np_conditions::{
    Cond, autoscaling_enabled, in_place_refused, release, supported_version_skew,
    update_management, updating_version, valid_release_image,
};
use super::np_spec::intent;
use super::{
    Deadline, Operator, ensure_finalizer, ns_name, record_condition_events, remove_finalizer_after,
    uid, write_status,
};
use crate::faults::{Fault, FaultKind};
use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS};
use crate::meta::is_deleting;
use crate::{Shared, lock};

/// Event source: HyperShift's NodePool controller records as `nodepool-controller`.
const NODE_POOL_EVENTS: &str = "nodepool-controller";

fn put(list: &mut Vec<Value>, c: &Cond, generation: i64) {
    put_condition(list, c.type_, c.status, c.reason, &c.message, generation);
}

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
        let cluster = np
            .pointer("/spec/clusterName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let hc = store.get(HOSTED_CLUSTERS, ns, cluster).ok();
        if is_deleting(np) {
            let since = *track.deleting_since.get_or_insert(now);
            if !self
                .workers
                .released(store, np, hc.as_ref(), cfg.node_pool_ready_after, now)
            {
                return; // the Machines' infrastructure is still going; reports wake us
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
        let hc_available = hc.as_ref().is_some_and(|hc| {
            !is_deleting(hc)
                && hc
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Available" && c["status"] == "True")
                    })
        });
        let fault = faults.iter().find(|f| f.matches(FaultKind::NodePool, name));
        let mut status = np.get("status").cloned().unwrap_or_else(|| json!({}));
        let conds = conditions_mut(&mut status);
        match (fault, hc.as_ref().filter(|_| hc_available)) {
            (Some(f), _) => {
                // Held back: nothing of the pool moves.
                set_condition(conds, "Ready", false, &f.reason, &f.message, generation);
                set_condition(
                    conds,
                    "AllMachinesReady",
                    false,
                    &f.reason,
                    &f.message,
                    generation,
                );
            }
            (None, None) => {
                let msg = format!("Waiting for HostedCluster {cluster} to be available");
                for type_ in ["Ready", "AllMachinesReady"] {
                    set_condition(
                        conds,
                        type_,
                        false,
                        "WaitingForAvailableHostedCluster",
                        &msg,
                        generation,
                    );
                }
            }
            (None, Some(hc)) => {
                let demand = lock(&shared.demand).get(&format!("{ns}/{name}")).copied();
                self.reconcile_node_pool(shared, np, hc, demand, &mut status, now, deadline);
            }
        }
        if status.get("replicas").is_none() {
            status["replicas"] = json!(0);
        }
        let conditions = status.get("conditions").cloned();
        if write_status(store, NODE_POOLS, np, status) {
            let warn: &[&str] = if fault.is_some() {
                &["Ready", "AllMachinesReady"]
            } else {
                &["ValidReleaseImage", "UpdateManagementEnabled"]
            };
            record_condition_events(store, NODE_POOL_EVENTS, np, conditions, warn);
        }
    }

    /// HyperShift's reconcile of a NodePool whose HostedCluster is available, into `status`.
    #[allow(clippy::too_many_arguments)]
    fn reconcile_node_pool(
        &mut self,
        shared: &Shared,
        np: &Value,
        hc: &Value,
        demand: Option<i64>,
        status: &mut Value,
        now: Instant,
        deadline: &mut Deadline,
    ) {
        let store = &shared.store;
        let cfg = &shared.config;
        let generation = np
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let conds = conditions_mut(status);
        put(conds, &autoscaling_enabled(np), generation);
        let management = update_management(np);
        put(conds, &management, generation);
        if management.status != "True" {
            return; // HyperShift waits for the input to change
        }
        let checked = release(np, hc);
        put(conds, &valid_release_image(np, &checked), generation);
        let version = match checked {
            Ok(v) => v,
            Err(_) => {
                // No MachineDeployment change; CAPI goes on with what it has.
                let view =
                    self.workers
                        .converge(store, np, hc, None, cfg.node_pool_ready_after, now);
                if let Some(at) = view.wake {
                    deadline.at(at);
                }
                return;
            }
        };
        put(conds, &supported_version_skew(version, hc), generation);
        put(conds, &updating_version(np, version), generation);
        let target = version.to_string();
        let roll = !in_place_refused(np, &target);
        let intent = intent(np, &target, demand, roll);
        let view =
            self.workers
                .converge(store, np, hc, Some(&intent), cfg.node_pool_ready_after, now);
        let conds = conditions_mut(status);
        for (type_, ok, reason, message) in view.conditions() {
            set_condition(conds, type_, ok, &reason, &message, generation);
        }
        status["replicas"] = json!(view.available);
        if view.complete
            && let Some(v) = view.version
        {
            status["version"] = json!(v);
        }
        if let Some(at) = view.wake {
            deadline.at(at);
        }
    }
}
