//! The built-in controllers the emulator runs for the kinds both kinds of cluster serve:
//! kube-controller-manager's deployment controller (`pkg/controller/deployment`, conditions
//! from `deployment/util/deployment_util.go`) and apiextensions-apiserver's naming and
//! establishing controllers (`pkg/controller/{status,establish}`).
//!
//! A Deployment's pods need nodes: on the management cluster there always are; in a hosted
//! cluster a Deployment becomes available only while its HostedCluster has a ready node,
//! `deployment_available_after` after its generation was first seen. There are no
//! ReplicaSets or Pods: only the Deployment's status moves.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{Value, json};

use super::{Deadline, write_status_as as write_status};
use crate::kinds::{CRDS, DEPLOYMENTS};
use crate::meta::{is_deleting, meta_str, now_rfc3339};
use crate::store::Store;

/// The field manager of kube-controller-manager's status writes.
const DEPLOYMENT_MANAGER: &str = "kube-controller-manager";
/// The field manager of apiextensions-apiserver's CRD status writes.
const CRD_MANAGER: &str = "kube-apiserver";

/// When the deployment controller first saw each generation of each Deployment, by
/// `<uid>/<generation>`.
#[derive(Default)]
pub(crate) struct Workloads {
    seen: HashMap<String, Instant>,
}

/// One cluster's API server as the controllers see it.
pub(crate) struct Cluster<'a> {
    pub store: &'a Store,
    /// Whether pods can run: the cluster has a ready node.
    pub nodes: bool,
}

impl Workloads {
    /// Reconciles every Deployment and CRD of `clusters`; forgets Deployments that are gone.
    pub(crate) fn reconcile(
        &mut self,
        clusters: &[Cluster<'_>],
        delay: std::time::Duration,
        now: Instant,
        deadline: &mut Deadline,
    ) {
        let mut live = Vec::new();
        for cluster in clusters {
            let (deployments, _) = cluster.store.list(DEPLOYMENTS, None);
            for d in deployments.iter().filter(|d| !is_deleting(d)) {
                let key = format!(
                    "{}/{}",
                    meta_str(d, "uid").unwrap_or_default(),
                    generation(d)
                );
                let since = *self.seen.entry(key.clone()).or_insert(now);
                live.push(key);
                let ready_at = since + delay;
                let available = cluster.nodes && now >= ready_at;
                if cluster.nodes && !available {
                    deadline.at(ready_at);
                }
                write_status(
                    cluster.store,
                    DEPLOYMENTS,
                    d,
                    deployment_status(d, available),
                    DEPLOYMENT_MANAGER,
                );
            }
            let (crds, _) = cluster.store.list(CRDS, None);
            for crd in crds.iter().filter(|c| !is_deleting(c)) {
                write_status(cluster.store, CRDS, crd, crd_status(crd), CRD_MANAGER);
            }
        }
        self.seen.retain(|k, _| live.contains(k));
    }
}

fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// `controller.ComputeHash` of the pod template, as the name suffix of the ReplicaSet the
/// controller would make (FNV-32a, then `rand.SafeEncodeString`).
pub(crate) fn template_hash(template: &Value) -> String {
    safe_encode(fnv32a(template.to_string().as_bytes()))
}

/// FNV-1a, 32 bits.
pub(crate) fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for b in bytes {
        h = (h ^ u32::from(*b)).wrapping_mul(16_777_619);
    }
    h
}

/// `rand.SafeEncodeString` of the decimal digits of `n`: each digit mapped into an alphabet
/// without vowels or look-alikes.
pub(crate) fn safe_encode(n: u32) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    n.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// A `DeploymentCondition`, keeping `lastTransitionTime` while the status holds.
fn condition(old: Option<&Value>, type_: &str, status: bool, reason: &str, message: &str) -> Value {
    let status = if status { "True" } else { "False" };
    let previous = old
        .and_then(|s| s.pointer("/conditions"))
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|c| c["type"] == type_));
    let now = now_rfc3339();
    let (transition, update) = match previous {
        Some(c) if c["status"] == status && c["reason"] == reason => {
            (c["lastTransitionTime"].clone(), c["lastUpdateTime"].clone())
        }
        Some(c) if c["status"] == status => (c["lastTransitionTime"].clone(), json!(now)),
        _ => (json!(now), json!(now)),
    };
    json!({"type": type_, "status": status, "lastUpdateTime": update,
           "lastTransitionTime": transition, "reason": reason, "message": message})
}

/// What the deployment controller reports: every replica updated; available (ready) only
/// once the pods run.
fn deployment_status(d: &Value, available: bool) -> Value {
    let replicas = d
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let available = available || replicas == 0;
    let name = meta_str(d, "name").unwrap_or_default();
    let rs = format!(
        "{name}-{}",
        template_hash(d.pointer("/spec/template").unwrap_or(&Value::Null))
    );
    let old = d.get("status");
    let (ready, unavailable) = if available {
        (replicas, 0)
    } else {
        (0, replicas)
    };
    let conditions = if available {
        vec![
            condition(
                old,
                "Available",
                true,
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            ),
            condition(
                old,
                "Progressing",
                true,
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{rs}\" has successfully progressed."),
            ),
        ]
    } else {
        vec![
            condition(
                old,
                "Available",
                false,
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
            condition(
                old,
                "Progressing",
                true,
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{rs}\" is progressing."),
            ),
        ]
    };
    let mut status = json!({
        "observedGeneration": generation(d),
        "replicas": replicas,
        "updatedReplicas": replicas,
        "conditions": conditions,
    });
    // The controller omits zero counts (`omitempty`).
    for (field, n) in [
        ("readyReplicas", ready),
        ("availableReplicas", ready),
        ("unavailableReplicas", unavailable),
    ] {
        if n > 0 {
            status[field] = json!(n);
        }
    }
    status
}

/// The naming controller's `NamesAccepted` and the establishing controller's `Established`,
/// with the accepted names and stored versions.
fn crd_status(crd: &Value) -> Value {
    let old = crd.get("status");
    let kept = |type_: &str| {
        old.and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|l| l.iter().find(|c| c["type"] == type_))
            .map(|c| c["lastTransitionTime"].clone())
            .unwrap_or_else(|| json!(now_rfc3339()))
    };
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true)
        .filter_map(|v| v.get("name").cloned())
        .collect();
    json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": kept("NamesAccepted"),
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": kept("Established"),
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({})),
        "storedVersions": stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_conditions_read_like_the_controller() {
        let d = json!({"metadata": {"name": "web", "generation": 2},
            "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}}}});
        let s = deployment_status(&d, false);
        assert_eq!(s["observedGeneration"], 2);
        assert_eq!(s["conditions"][0]["reason"], "MinimumReplicasUnavailable");
        assert!(s.get("availableReplicas").is_none());
        let s = deployment_status(&d, true);
        assert_eq!(s["availableReplicas"], 2);
        let msg = s["conditions"][1]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("ReplicaSet \"web-")
                && msg.ends_with("\" has successfully progressed.")
        );
        assert_eq!(safe_encode(0), "4");
    }
}
