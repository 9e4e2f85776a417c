//! The HostedCluster controller: input checks, the control plane's namespace and endpoint,
//! and `status.version`.

use std::time::Instant;

use serde_json::{Value, json};

use hypersaga_hypershift::release_version;

use super::cluster_version::set_version;
use super::conditions::{conditions_mut, set_condition, set_unknown};
use super::release::check_release;
use super::{
    Deadline, MANAGER, Operator, ensure_finalizer, ns_name, record_condition_events,
    remove_finalizer_after, uid, write_status,
};
use crate::Shared;
use crate::faults::{Fault, FaultKind};
use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS, SECRETS};
use crate::meta::{is_deleting, meta_str};
use crate::registry;
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
