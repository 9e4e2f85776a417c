//! The simulated HyperShift operator.
//!
//! One task serves every object: it wakes on each store change or at the earliest pending
//! deadline, and reconciles level-triggered from the stored objects plus a little private
//! timing state (when it first saw each object, when a rollout or scale started, when a
//! deletion began). It writes only what differs, so its own writes settle in one extra pass.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Notify;

use hypersaga_hypershift::{HYPERSHIFT_FINALIZER, release_version};

use crate::faults::{Fault, FaultKind};
use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS, ResourceId, SECRETS};
use crate::meta::{finalizers, is_deleting, meta_str, now_rfc3339, set_finalizers};
use crate::recorder::{EventType, Recorder};
use crate::registry::{self, Scope};
use crate::store::Store;
use crate::workers::Workers;
use crate::{Shared, lock};

/// The field manager of the simulated operator's writes: controller-runtime clients default
/// to the binary's name (`hypershift-operator`) and write with updates, not apply.
pub(crate) const MANAGER: &str = "hypershift-operator";

/// Event sources. HyperShift's NodePool controller records as `nodepool-controller`; its
/// HostedCluster controller records no events, so the name here only parallels that one.
const NODE_POOL_EVENTS: &str = "nodepool-controller";
const HOSTED_CLUSTER_EVENTS: &str = "hostedcluster-controller";

/// Input checks whose `False` is HyperShift refusing the cluster: recorded as warnings.
const REFUSALS: [&str; 5] = [
    "SupportedHostedCluster",
    "ValidConfiguration",
    "ValidReleaseImage",
    "PlatformCredentialsFound",
    "ReconciliationSucceeded",
];

/// Port of the hosted kube-apiserver load balancer on Azure (6443 collides with the
/// management cluster's own rule).
const KAS_PORT: i64 = 7443;

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
    /// When the current release rollout started (HostedCluster) and for which image.
    rollout: Option<(String, Instant)>,
    first_seen: Option<Instant>,
    /// NodePool: replica target being converged and since when.
    scale: Option<(i64, Instant)>,
    deleting_since: Option<Instant>,
}

#[derive(Default)]
struct Operator {
    tracks: HashMap<String, Track>,
    /// CAPI and CAPZ: Azure NodePools' Machines and their VMs.
    workers: Workers,
}

/// Earliest of the pending deadlines.
#[derive(Default)]
struct Deadline(Option<Instant>);

impl Deadline {
    fn at(&mut self, t: Instant) {
        self.0 = Some(self.0.map_or(t, |d| d.min(t)));
    }
}

impl Operator {
    fn reconcile(&mut self, shared: &Shared, now: Instant) -> Option<Instant> {
        let faults = lock(&shared.faults).clone();
        let mut deadline = Deadline::default();
        let (clusters, _) = shared.store.list(HOSTED_CLUSTERS, None);
        let (pools, _) = shared.store.list(NODE_POOLS, None);
        let mut live = Vec::new();
        for hc in &clusters {
            live.push(uid(hc));
            self.hosted_cluster(shared, hc, &pools, &faults, now, &mut deadline);
        }
        for np in &pools {
            live.push(uid(np));
            self.node_pool(shared, np, &faults, now, &mut deadline);
        }
        self.tracks.retain(|k, _| live.contains(k));
        self.workers.retain(&live);
        shared.store.finalize_namespaces();
        deadline.0
    }

    fn hosted_cluster(
        &mut self,
        shared: &Shared,
        hc: &Value,
        pools: &[Value],
        faults: &[Fault],
        now: Instant,
        deadline: &mut Deadline,
    ) {
        let store = &shared.store;
        let (ns, name) = ns_name(hc);
        let track = self.tracks.entry(uid(hc)).or_default();
        let cfg = &shared.config;
        if is_deleting(hc) {
            let since = *track.deleting_since.get_or_insert(now);
            let mut own_pools = 0;
            for np in pools.iter().filter(|np| {
                meta_str(np, "namespace") == Some(ns)
                    && np.pointer("/spec/clusterName").and_then(Value::as_str) == Some(name)
            }) {
                own_pools += 1;
                let _ = store.delete(
                    NODE_POOLS,
                    ns,
                    meta_str(np, "name").unwrap_or_default(),
                    false,
                );
            }
            if own_pools == 0 {
                // The control plane goes with its namespace, then the finalizer.
                if now >= since + cfg.deletion_after {
                    let cp_namespace = format!("{ns}-{name}").replace('.', "-");
                    let _ = store.delete(crate::kinds::NAMESPACES, "", &cp_namespace, false);
                }
                remove_finalizer_after(
                    store,
                    HOSTED_CLUSTERS,
                    hc,
                    since + cfg.deletion_after,
                    now,
                    deadline,
                );
            }
            return;
        }
        if ensure_finalizer(store, HOSTED_CLUSTERS, hc) {
            return; // the write wakes us again
        }
        let image = hc
            .pointer("/spec/release/image")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let first_seen = *track.first_seen.get_or_insert(now);
        if track.rollout.as_ref().is_none_or(|(i, _)| *i != image) {
            track.rollout = Some((image.clone(), now));
        }
        let rollout_started = track.rollout.as_ref().map_or(now, |(_, t)| *t);
        let available_at = first_seen + cfg.hosted_cluster_available_after;
        // Control-plane pods start over the first half of the wait: HyperShift reports
        // `Degraded=True` (`UnavailableReplicas`) meanwhile, on every create and rollout.
        let started_at = rollout_started.max(first_seen) + cfg.hosted_cluster_available_after / 2;
        let fault = faults
            .iter()
            .find(|f| f.matches(FaultKind::HostedCluster, name));
        let generation = hc
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let version = release_version(&image).unwrap_or_default();
        let config_problem = self.workers.signing_key_problem(store, hc);

        let mut status = hc.get("status").cloned().unwrap_or_else(|| json!({}));
        let conds = conditions_mut(&mut status);
        // The input checks come first and are True or False from the first pass.
        set_condition(
            conds,
            "SupportedHostedCluster",
            true,
            "AsExpected",
            "HostedCluster is supported by operator configuration",
            generation,
        );
        match &config_problem {
            None => set_condition(
                conds,
                "ValidConfiguration",
                true,
                "AsExpected",
                "Configuration passes validation",
                generation,
            ),
            Some(why) => set_condition(
                conds,
                "ValidConfiguration",
                false,
                "InvalidConfiguration",
                why,
                generation,
            ),
        }
        match check_pull_secret(store, ns, hc)
            .and_then(|()| check_release(&image).map_err(|why| ("InvalidImage", why)))
        {
            Ok(()) => set_condition(
                conds,
                "ValidReleaseImage",
                true,
                "AsExpected",
                "Release image is valid",
                generation,
            ),
            Err((reason, why)) => {
                set_condition(conds, "ValidReleaseImage", false, reason, &why, generation)
            }
        }
        // HyperShift checks the cloud credentials on every reconcile, so a cluster whose
        // credentials were missing recovers once they are found.
        set_condition(
            conds,
            "PlatformCredentialsFound",
            true,
            "AsExpected",
            "Required platform credentials are found",
            generation,
        );
        if let Some(f) = fault {
            set_condition(
                conds,
                f.condition(),
                false,
                &f.reason,
                &f.message,
                generation,
            );
        }
        // HyperShift runs the control plane in `<namespace>-<name>`.
        let cp_namespace = format!("{ns}-{name}").replace('.', "-");
        let blocked = blocking_condition(conds).or_else(|| {
            ensure_namespace(store, &cp_namespace).err().inspect(|why| {
                set_condition(
                    conds,
                    "ReconciliationSucceeded",
                    false,
                    "ReconciliationError",
                    why,
                    generation,
                );
            })
        });
        let available = blocked.is_none() && now >= available_at;
        let rolled_out = available
            && now >= rollout_started + cfg.hosted_cluster_available_after
            && nodes_ready(hc, pools);
        match &blocked {
            Some(why) => {
                // Nothing is deployed: the reconcile stops until the input changes.
                set_condition(conds, "Progressing", false, "Blocked", why, generation);
                set_condition(
                    conds,
                    "Available",
                    false,
                    "WaitingForAvailable",
                    why,
                    generation,
                );
                set_unknown(
                    conds,
                    "Degraded",
                    "The hosted control plane is not found",
                    generation,
                );
            }
            None => {
                // HyperShift's own spelling of the reason.
                set_condition(
                    conds,
                    "ReconciliationSucceeded",
                    true,
                    "ReconciliatonSucceeded",
                    "Reconciliation completed successfully",
                    generation,
                );
                let (reason, message) = if available {
                    ("AsExpected", "The hosted control plane is available")
                } else {
                    (
                        "WaitingForAvailable",
                        "Waiting for hosted control plane to be healthy",
                    )
                };
                set_condition(conds, "Available", available, reason, message, generation);
                if now < started_at {
                    set_condition(
                        conds,
                        "Degraded",
                        true,
                        "UnavailableReplicas",
                        "kube-apiserver deployment has 2 unavailable replicas",
                        generation,
                    );
                    deadline.at(started_at);
                } else {
                    set_condition(
                        conds,
                        "Degraded",
                        false,
                        "AsExpected",
                        "The hosted cluster is not degraded",
                        generation,
                    );
                }
                // The desired image is the spec's from the first pass, so HyperShift's
                // Progressing is False during an install.
                set_condition(
                    conds,
                    "Progressing",
                    false,
                    "AsExpected",
                    "HostedCluster is at expected version",
                    generation,
                );
                if !available {
                    deadline.at(available_at);
                }
            }
        }
        set_version(&mut status, &image, &version, rolled_out, generation);
        if available {
            let host = endpoint_ip(ns, name);
            status["controlPlaneEndpoint"] = json!({"host": host, "port": KAS_PORT});
            let secret = format!("{name}-admin-kubeconfig");
            ensure_kubeconfig_secret(store, ns, &secret, &host);
            status["kubeconfig"] = json!({"name": secret});
        }
        let conditions = status.get("conditions").cloned();
        if write_status(store, HOSTED_CLUSTERS, hc, status) {
            let mut warn = REFUSALS.to_vec();
            warn.extend(fault.map(Fault::condition));
            record_condition_events(store, HOSTED_CLUSTER_EVENTS, hc, conditions, &warn);
        }
    }

    fn node_pool(
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

/// Releases this operator supports (HyperShift's `supportedversion`: a minimum for the
/// platform and a latest it knows).
const MIN_SUPPORTED: (u64, u64) = (4, 14);
const LATEST_SUPPORTED: (u64, u64) = (4, 22);

/// HyperShift's release check: an image it cannot read is refused like an unsupported one
/// (reason `InvalidImage`, messages as `validateReleaseImage` words them).
fn check_release(image: &str) -> Result<(), String> {
    let Some(version) = release_version(image) else {
        return Err(format!(
            "failed to lookup release image: failed to extract release metadata: failed to \
             obtain root manifest for {image}: manifest unknown"
        ));
    };
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
        return Err(format!("failed to parse release version {version:?}"));
    };
    let show = |(a, b): (u64, u64)| format!("{a}.{b}.0");
    if (major, minor) > LATEST_SUPPORTED {
        return Err(format!(
            "the latest version supported is: {:?}. Attempting to use: {version:?}",
            show(LATEST_SUPPORTED)
        ));
    }
    if (major, minor) < MIN_SUPPORTED {
        return Err(format!(
            "the minimum version supported for platform Azure is: {:?}. Attempting to use: \
             {version:?}",
            show(MIN_SUPPORTED)
        ));
    }
    Ok(())
}

/// HyperShift reads the pull secret before it looks the release up (`validateReleaseImage`):
/// a missing secret is reason `SecretNotFound`, one without `.dockerconfigjson` `InvalidImage`,
/// each in HyperShift's words. Checked on every pass, so a secret put in place later clears it.
fn check_pull_secret(store: &Store, ns: &str, hc: &Value) -> Result<(), (&'static str, String)> {
    let name = hc
        .pointer("/spec/pullSecret/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Ok(secret) = store.get(SECRETS, ns, name) else {
        return Err((
            "SecretNotFound",
            format!("failed to get pull secret: secrets \"{name}\" not found"),
        ));
    };
    let has_key = ["data", "stringData"]
        .iter()
        .any(|field| secret[*field].get(".dockerconfigjson").is_some());
    if has_key {
        Ok(())
    } else {
        Err((
            "InvalidImage",
            "expected .dockerconfigjson key in pull secret".to_owned(),
        ))
    }
}

/// The first input condition that is False, as HyperShift's Progressing words it then.
fn blocking_condition(conds: &[Value]) -> Option<String> {
    [
        "SupportedHostedCluster",
        "ValidConfiguration",
        "ValidReleaseImage",
        "PlatformCredentialsFound",
    ]
    .iter()
    .find_map(|t| {
        let c = conds
            .iter()
            .find(|c| c["type"] == *t && c["status"] == "False")?;
        Some(format!(
            "{t} condition is false: {}",
            c["message"].as_str().unwrap_or_default()
        ))
    })
}

/// Creates the control plane's namespace unless it exists; refused as kube-apiserver refuses
/// a name over 63 characters.
fn ensure_namespace(store: &Store, name: &str) -> Result<(), String> {
    if store.get(crate::kinds::NAMESPACES, "", name).is_ok() {
        return Ok(());
    }
    if name.len() > 63 {
        return Err(format!(
            "failed to ensure control plane namespace: Namespace \"{name}\" is invalid: \
             metadata.name: Invalid value: \"{name}\": must be no more than 63 characters"
        ));
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    registry::prepare_create(crate::kinds::NAMESPACES, "", ns, MANAGER)
        .and_then(|ns| store.create(crate::kinds::NAMESPACES, "", ns, false))
        .map(|_| ())
        .map_err(|e| format!("failed to ensure control plane namespace: {e}"))
}

/// Whether every NodePool of `hc` has its replicas as ready nodes, and there is at least one
/// node: the guest cluster's version rollout completes only on nodes.
fn nodes_ready(hc: &Value, pools: &[Value]) -> bool {
    let (ns, name) = ns_name(hc);
    let mine: Vec<&Value> = pools
        .iter()
        .filter(|np| {
            meta_str(np, "namespace") == Some(ns)
                && np.pointer("/spec/clusterName").and_then(Value::as_str) == Some(name)
        })
        .collect();
    let wanted = |np: &Value| {
        np.pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let ready = |np: &Value| {
        np.pointer("/status/replicas").and_then(Value::as_i64) == Some(wanted(np))
            && np
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
    };
    mine.iter().map(|np| wanted(np)).sum::<i64>() > 0 && mine.iter().all(|np| ready(np))
}

/// A condition HyperShift has not evaluated yet (nothing to copy from the control plane).
fn set_unknown(list: &mut Vec<Value>, type_: &str, message: &str, generation: i64) {
    put_condition(list, type_, "Unknown", "StatusUnknown", message, generation);
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
        registry::prepare_update(res, cur, desired, Scope::Status, MANAGER)
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

fn conditions_mut(status: &mut Value) -> &mut Vec<Value> {
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    match status.get_mut("conditions") {
        Some(Value::Array(list)) => list,
        _ => unreachable!("just set to an array"),
    }
}

/// Sets a condition, keeping `lastTransitionTime` unless the status flips (metav1 semantics).
fn set_condition(
    list: &mut Vec<Value>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: i64,
) {
    let status = if status { "True" } else { "False" };
    put_condition(list, type_, status, reason, message, generation);
}

/// Sets a condition to `status` (`True`, `False` or `Unknown`).
fn put_condition(
    list: &mut Vec<Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    generation: i64,
) {
    let existing = list.iter_mut().find(|c| c["type"] == type_);
    let transition = match &existing {
        Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
        _ => json!(now_rfc3339()),
    };
    let cond = json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": transition, "observedGeneration": generation,
    });
    match existing {
        Some(c) => *c = cond,
        None => list.push(cond),
    }
}

fn set_version(status: &mut Value, image: &str, version: &str, completed: bool, generation: i64) {
    let mut history: Vec<Value> = status
        .pointer("/version/history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if history.first().is_none_or(|h| h["image"] != image) {
        history.insert(0, json!({"state": "Partial", "image": image, "version": version, "startedTime": now_rfc3339(), "completionTime": null, "verified": false}));
    }
    if completed
        && let Some(h) = history.first_mut()
        && h["state"] != "Completed"
    {
        h["state"] = json!("Completed");
        h["completionTime"] = json!(now_rfc3339());
    }
    // `availableUpdates` and `completionTime` are required (nullable) by the CRD schema.
    status["version"] = json!({
        "availableUpdates": null,
        "desired": {"image": image, "version": version},
        "history": history,
        "observedGeneration": generation,
    });
}

/// A stable private address per cluster, like the internal LB IP the real one gets.
fn endpoint_ip(ns: &str, name: &str) -> String {
    let mut h: u32 = 2166136261;
    for b in ns.bytes().chain([b'/']).chain(name.bytes()) {
        h = (h ^ u32::from(b)).wrapping_mul(16777619);
    }
    let [a, b, c, _] = h.to_be_bytes();
    format!("10.{a}.{b}.{}", c.max(1))
}

fn ensure_kubeconfig_secret(store: &Store, ns: &str, name: &str, host: &str) {
    if store.get(SECRETS, ns, name).is_ok() {
        return;
    }
    let kubeconfig = crate::kubeconfig::kubeconfig_yaml(
        &format!("https://{host}:{KAS_PORT}"),
        "",
        "simulated-admin-token",
    );
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": ns,
            "labels": {"hypershift.openshift.io/safe-to-delete-with-cluster": "true"}},
        "type": "Opaque",
        "stringData": {"kubeconfig": kubeconfig},
    });
    let created = registry::prepare_create(SECRETS, ns, secret, MANAGER)
        .and_then(|secret| store.create(SECRETS, ns, secret, false));
    if let Err(e) = created {
        tracing::debug!(error = %e, "kubeconfig secret not created");
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
