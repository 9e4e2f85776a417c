//! The HostedCluster controller: input checks, the control plane's namespace, endpoint and
//! kubeconfig, its availability, and its release rollouts (install and upgrades).
//!
//! Timing: a new cluster is `Available` `hosted_cluster_available_after` after it is first
//! seen; an accepted upgrade rolls for `control_plane_upgrade_after`. Either rollout is
//! `Completed` in `status.version.history` only once its time is up and the cluster has
//! ready nodes (the CVO finishes on workers: with none, HyperShift's upgrade never ends).
//! Control-plane pods restart over the first half of a rollout: `Degraded=True`
//! (`UnavailableReplicas`) meanwhile. NodePools are not touched by any of it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cluster_version::{
    Cvo, complete, completed_version, desire, desired_image, newest_completed, set_cvo_conditions,
};
use super::conditions::{conditions_mut, set_condition, set_unknown};
use super::hc_inputs::{blocking_condition, check_pull_secret, check_release, ensure_namespace};
use super::{
    Deadline, Operator, Track, ensure_finalizer, ns_name, record_condition_events,
    remove_finalizer_after, uid, write_status,
};
use crate::Shared;
use crate::config::Config;
use crate::faults::{Fault, FaultKind};
use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS};
use crate::meta::{is_deleting, meta_str};
use crate::store::Store;

/// Event source. HyperShift's HostedCluster controller records no events, so the name here
/// only parallels the NodePool controller's.
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

/// Which rollout a release is: the first one, or an upgrade of a running control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RolloutKind {
    Install,
    Upgrade,
}

/// The release being rolled out, since when.
#[derive(Clone, Debug)]
pub(super) struct Rollout {
    pub image: String,
    pub since: Instant,
    pub kind: RolloutKind,
}

impl Rollout {
    fn duration(&self, cfg: &Config) -> Duration {
        match self.kind {
            RolloutKind::Install => cfg.hosted_cluster_available_after,
            RolloutKind::Upgrade => cfg.control_plane_upgrade_after,
        }
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Operator {
    pub(super) fn hosted_cluster(
        &mut self,
        shared: &Shared,
        hc: &Value,
        pools: &[Value],
        faults: &[Fault],
        now: Instant,
        deadline: &mut Deadline,
    ) {
        let store = &shared.store;
        let cfg = &shared.config;
        let (ns, name) = ns_name(hc);
        let track = self.tracks.entry(uid(hc)).or_default();
        if is_deleting(hc) {
            delete_hosted_cluster(store, cfg, hc, pools, track, now, deadline);
            return;
        }
        if ensure_finalizer(store, HOSTED_CLUSTERS, hc) {
            return; // the write wakes us again
        }
        let image = text(hc, "/spec/release/image").to_owned();
        let first_seen = *track.first_seen.get_or_insert(now);
        let available_at = first_seen + cfg.hosted_cluster_available_after;
        let fault = faults
            .iter()
            .find(|f| f.matches(FaultKind::HostedCluster, name));
        let generation = hc
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let config_problem = self.workers.signing_key_problem(store, hc);

        let mut status = hc.get("status").cloned().unwrap_or_else(|| json!({}));
        // A control plane that was deployed keeps running whatever HyperShift refuses later.
        let deployed = track.deployed || status.get("controlPlaneEndpoint").is_some();
        let release_check = check_pull_secret(store, ns, hc)
            .and_then(|()| check_release(hc, &status).map_err(|why| ("InvalidImage", why)));
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
        match release_check {
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
        // An injected fault takes the whole control plane down, deployed or not; a refused
        // input of a running cluster (a release it may not move to) leaves it running.
        let running = deployed && fault.is_none();
        if let Some(why) = &blocked {
            set_condition(conds, "Progressing", false, "Blocked", why, generation);
            if !running {
                // Nothing is deployed: the reconcile stops until the input changes.
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
                set_cvo_conditions(conds, &Cvo::NotFound, generation);
                if !deployed {
                    // Before there is a control plane HyperShift bootstraps the version.
                    let version = hypersaga_hypershift::release_version(&image);
                    desire(
                        &mut status,
                        &image,
                        version.as_deref().unwrap_or_default(),
                        generation,
                    );
                }
                self.finish(store, hc, status, fault);
                return;
            }
        } else {
            track.deployed = true;
            // HyperShift's own spelling of the reason.
            set_condition(
                conds,
                "ReconciliationSucceeded",
                true,
                "ReconciliatonSucceeded",
                "Reconciliation completed successfully",
                generation,
            );
            // The desired release follows the spec's in the same pass, so HyperShift's
            // Progressing is False during an install and an upgrade alike.
            set_condition(
                conds,
                "Progressing",
                false,
                "AsExpected",
                "HostedCluster is at expected version",
                generation,
            );
        }
        let available = now >= available_at;
        let (reason, message) = if available {
            ("AsExpected", "The hosted control plane is available")
        } else {
            (
                "WaitingForAvailable",
                "Waiting for hosted control plane to be healthy",
            )
        };
        set_condition(conds, "Available", available, reason, message, generation);
        if !available {
            deadline.at(available_at);
        }

        // The release: accepted unless refused, rolled out, completed on nodes.
        let track = self.tracks.entry(uid(hc)).or_default();
        if blocked.is_none() && track.rollout.as_ref().is_none_or(|r| r.image != image) {
            track.rollout = Some(Rollout {
                image: image.clone(),
                since: now,
                kind: if deployed {
                    RolloutKind::Upgrade
                } else {
                    RolloutKind::Install
                },
            });
        }
        let rollout = track.rollout.clone().unwrap_or_else(|| Rollout {
            image: desired_image(&status).unwrap_or(&image).to_owned(),
            since: first_seen,
            kind: RolloutKind::Install,
        });
        if blocked.is_none() {
            let version = hypersaga_hypershift::release_version(&image).unwrap_or_default();
            desire(&mut status, &image, &version, generation);
        }
        let duration = rollout.duration(cfg);
        // Control-plane pods restart over the first half of a rollout.
        let settled_at = rollout.since + duration / 2;
        let conds = conditions_mut(&mut status);
        if now < settled_at {
            set_condition(
                conds,
                "Degraded",
                true,
                "UnavailableReplicas",
                "kube-apiserver deployment has 2 unavailable replicas",
                generation,
            );
            deadline.at(settled_at);
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
        let done_at = rollout.since + duration;
        if available && now >= done_at && nodes_ready(hc, pools) {
            complete(&mut status);
        } else if now < done_at {
            deadline.at(done_at);
        }
        let desired = (
            desired_image(&status).unwrap_or_default().to_owned(),
            status
                .pointer("/version/desired/version")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        );
        let done = completed_version(&status);
        let cvo = if !available {
            Cvo::NotFound
        } else if newest_completed(&status) {
            Cvo::Done {
                image: &desired.0,
                version: &desired.1,
            }
        } else {
            Cvo::Working {
                desired: (&desired.0, &desired.1),
                done: done.as_deref(),
            }
        };
        set_cvo_conditions(conditions_mut(&mut status), &cvo, generation);
        // The deployed control plane's kube-apiserver serves its own API.
        let api = super::hosted_api::ensure(shared, &cp_namespace);
        let secret = format!("{name}-admin-kubeconfig");
        let kubeconfig =
            super::hosted_api::write_kubeconfigs(shared, &api, &cp_namespace, ns, &secret);
        if available {
            let host = endpoint_ip(ns, name);
            status["controlPlaneEndpoint"] = json!({"host": host, "port": KAS_PORT});
            if kubeconfig {
                status["kubeconfig"] = json!({"name": secret});
            }
        }
        self.finish(store, hc, status, fault);
    }

    /// Writes the HostedCluster's status and records its condition changes.
    fn finish(&self, store: &Store, hc: &Value, status: Value, fault: Option<&Fault>) {
        let conditions = status.get("conditions").cloned();
        if write_status(store, HOSTED_CLUSTERS, hc, status) {
            let mut warn = REFUSALS.to_vec();
            warn.extend(fault.map(Fault::condition));
            record_condition_events(store, HOSTED_CLUSTER_EVENTS, hc, conditions, &warn);
        }
    }
}

/// A deleted HostedCluster: its NodePools go first, then its control plane's namespace,
/// then the finalizer.
fn delete_hosted_cluster(
    store: &Store,
    cfg: &Config,
    hc: &Value,
    pools: &[Value],
    track: &mut Track,
    now: Instant,
    deadline: &mut Deadline,
) {
    let (ns, name) = ns_name(hc);
    let since = *track.deleting_since.get_or_insert(now);
    let mut own_pools = 0;
    for np in pools
        .iter()
        .filter(|np| meta_str(np, "namespace") == Some(ns) && text(np, "/spec/clusterName") == name)
    {
        own_pools += 1;
        let _ = store.delete(
            NODE_POOLS,
            ns,
            meta_str(np, "name").unwrap_or_default(),
            false,
        );
    }
    if own_pools > 0 {
        return;
    }
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

/// Whether every NodePool of `hc` is `Ready` and there is at least one node: the guest
/// cluster's version rollout completes only on nodes (with none, HyperShift's upgrade never
/// completes: openshift/hypershift#1577).
fn nodes_ready(hc: &Value, pools: &[Value]) -> bool {
    let (ns, name) = ns_name(hc);
    let mine: Vec<&Value> = pools
        .iter()
        .filter(|np| meta_str(np, "namespace") == Some(ns) && text(np, "/spec/clusterName") == name)
        .collect();
    let nodes = |np: &Value| {
        np.pointer("/status/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let ready = |np: &Value| {
        np.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    };
    mine.iter().map(|np| nodes(np)).sum::<i64>() > 0 && mine.iter().all(|np| ready(np))
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
