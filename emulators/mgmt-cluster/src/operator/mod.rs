//! The simulated HyperShift operator.
//!
//! One task serves every object: it wakes on each store change or at the earliest pending
//! deadline, and reconciles level-triggered from the stored objects plus a little private
//! state (when it first saw each object, when a control-plane rollout started, when a
//! deletion began, and each NodePool's MachineDeployment, which is not served). It writes
//! only what differs, so its own writes settle in one extra pass.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;

use hypersaga_hypershift::HYPERSHIFT_FINALIZER;

use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS, ResourceId};
use crate::meta::{finalizers, meta_str, set_finalizers};
use crate::recorder::{EventType, Recorder};
use crate::registry::{self, Scope};
use crate::store::Store;
use crate::workers::Workers;
use crate::{Shared, lock};

mod cluster_version;
pub(crate) mod conditions;
mod hc_inputs;
pub(crate) mod hosted_api;
mod hosted_cluster;
mod node_pool;
mod np_conditions;
mod np_spec;
mod release;
pub(crate) mod supported_versions;
pub(crate) mod workloads;

/// The field manager of the simulated operator's writes: controller-runtime clients default
/// to the binary's name (`hypershift-operator`) and write with updates, not apply.
pub(crate) const MANAGER: &str = "hypershift-operator";

/// Runs until `shutdown` or until the emulator is dropped.
pub(crate) async fn run(
    shared: Weak<Shared>,
    changed: Arc<Notify>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut op = Operator::default();
    if let Some(shared) = shared.upgrade() {
        op.workers = Workers::new(&shared.config, changed.clone());
    }
    loop {
        let now = Instant::now();
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            op.reconcile(&shared, now)
        };
        // Wake at least every second to notice the emulator being dropped.
        let wait = next
            .map_or(Duration::from_secs(1), |d| d.saturating_duration_since(now))
            .min(Duration::from_secs(1));
        tokio::select! {
            _ = &mut shutdown => return,
            _ = changed.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

#[derive(Default)]
struct Track {
    /// HostedCluster: the release rollout in progress or last done.
    rollout: Option<hosted_cluster::Rollout>,
    /// HostedCluster: its control plane has been deployed (it keeps running whatever input
    /// HyperShift refuses later).
    deployed: bool,
    first_seen: Option<Instant>,
    deleting_since: Option<Instant>,
}

#[derive(Default)]
struct Operator {
    tracks: HashMap<String, Track>,
    /// The deployment and CRD controllers of every cluster.
    workloads: workloads::Workloads,
    /// The simulated Package Operator.
    pko: crate::pko::Pko,
    /// CAPI and CAPZ: Azure NodePools' Machines and their VMs.
    workers: Workers,
}

/// Earliest of the pending deadlines.
#[derive(Default)]
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    pub(crate) fn at(&mut self, t: Instant) {
        self.0 = Some(self.0.map_or(t, |d| d.min(t)));
    }
}

impl Operator {
    fn reconcile(&mut self, shared: &Shared, now: Instant) -> Option<Instant> {
        let faults = lock(&shared.faults).clone();
        let mut deadline = Deadline::default();
        supported_versions::ensure(shared);
        let (hosted_clusters, _) = shared.store.list(HOSTED_CLUSTERS, None);
        let (pools, _) = shared.store.list(NODE_POOLS, None);
        let mut live = Vec::new();
        for hc in &hosted_clusters {
            live.push(uid(hc));
            self.hosted_cluster(shared, hc, &pools, &faults, now, &mut deadline);
        }
        for np in &pools {
            live.push(uid(np));
            self.node_pool(shared, np, &faults, now, &mut deadline);
        }
        self.tracks.retain(|k, _| live.contains(k));
        self.workers.retain(&live);
        hosted_api::prune(shared);
        let hosted = hosted_api::all(shared);
        // Pods need nodes: in a hosted cluster, a ready node of its NodePools.
        let mut clusters = vec![workloads::Cluster {
            store: &shared.store,
            nodes: true,
        }];
        for (ns, api) in &hosted {
            let nodes = clusters_nodes(&hosted_clusters, &pools, ns);
            clusters.push(workloads::Cluster {
                store: &api.shared().store,
                nodes,
            });
        }
        self.workloads.reconcile(
            &clusters,
            shared.config.deployment_available_after,
            now,
            &mut deadline,
        );
        let pass = crate::pko::Pass {
            shared,
            hosted: &hosted,
            now,
        };
        self.pko.reconcile(&pass, &mut deadline);
        crate::gc::collect(&shared.store);
        shared.store.finalize_namespaces();
        deadline.0
    }
}

/// Whether the HostedCluster whose control plane runs in `cp_namespace` has a ready node.
fn clusters_nodes(clusters: &[Value], pools: &[Value], cp_namespace: &str) -> bool {
    clusters.iter().any(|hc| {
        let (ns, name) = ns_name(hc);
        format!("{ns}-{name}").replace('.', "-") == cp_namespace
            && pools
                .iter()
                .filter(|np| {
                    meta_str(np, "namespace") == Some(ns)
                        && np.pointer("/spec/clusterName").and_then(Value::as_str) == Some(name)
                })
                .filter_map(|np| np.pointer("/status/replicas").and_then(Value::as_i64))
                .sum::<i64>()
                > 0
    })
}

fn uid(obj: &Value) -> String {
    meta_str(obj, "uid").unwrap_or_default().to_owned()
}

fn ns_name(obj: &Value) -> (&str, &str) {
    (
        meta_str(obj, "namespace").unwrap_or_default(),
        meta_str(obj, "name").unwrap_or_default(),
    )
}

/// Adds the HyperShift finalizer; true when a write happened.
fn ensure_finalizer(store: &Store, res: ResourceId, obj: &Value) -> bool {
    let mut list = finalizers(obj);
    if list.iter().any(|f| f == HYPERSHIFT_FINALIZER) {
        return false;
    }
    list.push(HYPERSHIFT_FINALIZER.to_owned());
    let (ns, name) = ns_name(obj);
    store
        .update(res, ns, name, false, |cur| {
            let mut next = cur.clone();
            let mut fins = finalizers(&next);
            if !fins.iter().any(|f| f == HYPERSHIFT_FINALIZER) {
                fins.push(HYPERSHIFT_FINALIZER.to_owned());
            }
            set_finalizers(&mut next, fins);
            registry::prepare_update(res, cur, next, Scope::Main, MANAGER)
        })
        .inspect_err(|e| tracing::debug!(error = %e, "finalizer not added"))
        .is_ok()
}

fn remove_finalizer_after(
    store: &Store,
    res: ResourceId,
    obj: &Value,
    at: Instant,
    now: Instant,
    deadline: &mut Deadline,
) {
    if now < at {
        deadline.at(at);
        return;
    }
    let (ns, name) = ns_name(obj);
    let removed = store.update(res, ns, name, false, |cur| {
        let mut next = cur.clone();
        let fins = finalizers(&next)
            .into_iter()
            .filter(|f| f != HYPERSHIFT_FINALIZER)
            .collect();
        set_finalizers(&mut next, fins);
        registry::prepare_update(res, cur, next, Scope::Main, MANAGER)
    });
    if let Err(e) = removed {
        tracing::debug!(error = %e, "finalizer not removed");
    }
}

/// Writes `status` unless unchanged; true when it was written.
fn write_status(store: &Store, res: ResourceId, obj: &Value, status: Value) -> bool {
    write_status_as(store, res, obj, status, MANAGER)
}

/// Writes `status` as field manager `manager` unless unchanged; true when it was written.
pub(crate) fn write_status_as(
    store: &Store,
    res: ResourceId,
    obj: &Value,
    status: Value,
    manager: &str,
) -> bool {
    if obj.get("status") == Some(&status) {
        return false;
    }
    let (ns, name) = ns_name(obj);
    let rv = meta_str(obj, "resourceVersion")
        .unwrap_or_default()
        .to_owned();
    // Written against the version we read, as a full object (what a controller's
    // `Status().Update` sends): if a client changed the object meanwhile, the conflict is
    // ignored and the change's wake-up reconciles again.
    let mut desired = obj.clone();
    desired["status"] = status;
    desired["metadata"]["resourceVersion"] = json!(rv);
    let written = store.update(res, ns, name, false, |cur| {
        registry::prepare_update(res, cur, desired, Scope::Status, manager)
    });
    if let Err(e) = &written {
        tracing::debug!(error = %e, "status not written");
    }
    written.is_ok()
}

/// Records an event for each of `conditions` that is new on `obj` or has another status than
/// it had: reason the condition's, message `<Type>=<Status>: <message>`; a warning when a
/// type in `warn_if_false` turned `False`.
fn record_condition_events(
    store: &Store,
    component: &str,
    obj: &Value,
    conditions: Option<Value>,
    warn_if_false: &[&str],
) {
    let recorder = Recorder {
        store,
        component,
        manager: MANAGER,
    };
    let before = obj.pointer("/status/conditions").and_then(Value::as_array);
    for c in conditions.iter().filter_map(Value::as_array).flatten() {
        let text = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default();
        let (type_, status) = (text("type"), text("status"));
        let was = before.and_then(|l| l.iter().find(|o| o["type"] == type_));
        if was.is_some_and(|o| o["status"] == status) {
            continue;
        }
        let kind = if status == "False" && warn_if_false.contains(&type_) {
            EventType::Warning
        } else {
            EventType::Normal
        };
        let message = match text("message") {
            "" => format!("{type_}={status}"),
            m => format!("{type_}={status}: {m}"),
        };
        recorder.event(obj, kind, text("reason"), &message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::NAMESPACES;
    use crate::{Config, Emulator};

    /// The operator writes only what differs, so its own writes settle; status writes go
    /// through the status subresource and never move `metadata.generation` (a loop here
    /// would starve a single-threaded runtime).
    #[test]
    fn writes_settle_without_moving_generation() {
        let emu = Emulator::new(Config::fast("t", Duration::ZERO));
        let shared = emu.shared();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c"}});
        let ns = registry::prepare_create(NAMESPACES, "", ns, "t").unwrap();
        shared.store.create(NAMESPACES, "", ns, false).unwrap();
        let hc = json!({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": "a", "namespace": "c"},
            "spec": {"release": {"image": "quay.io/x:4.19.0-x86_64"}, "pullSecret": {"name": "p"},
                "services": [], "platform": {"type": "None"}}});
        let hc = registry::prepare_create(HOSTED_CLUSTERS, "c", hc, "t").unwrap();
        shared
            .store
            .create(HOSTED_CLUSTERS, "c", hc, false)
            .unwrap();
        let mut op = Operator::default();
        let mut last = 0;
        for _ in 0..5 {
            op.reconcile(shared, Instant::now());
            last = shared.store.resource_version();
        }
        op.reconcile(shared, Instant::now());
        assert_eq!(shared.store.resource_version(), last, "no more writes");
        let hc = shared.store.get(HOSTED_CLUSTERS, "c", "a").unwrap();
        assert_eq!(hc["metadata"]["generation"], 1);
        assert_eq!(hc["status"]["conditions"][0]["status"], "True");
    }
}
