//! The `ObjectDeployment` that rolls an add-on out on one cluster, and what its status says.
//!
//! One per add-on, named after it, in the cluster's control-plane namespace: Package Operator
//! turns its template into an `ObjectSet` revision and runs the phases in order, the
//! `hosted-cluster` ones through its remote-phase connector into the hosted cluster. A new
//! version is a new template (a new revision; the objects move to it); removing the add-on is
//! deleting the `ObjectDeployment` (Package Operator tears its objects down first).

use std::collections::BTreeMap;

use hypersaga_model::AddonScope;
use serde_json::{Value, json};

use crate::definition::Addon;

/// Label naming the add-on on its `ObjectDeployment` and its template (the selector).
pub const ADDON_LABEL: &str = "hypersaga.io/addon";
const VERSION_LABEL: &str = "hypersaga.io/addon-version";
const SCOPE_LABEL: &str = "hypersaga.io/addon-scope";
const DIGEST_ANNOTATION: &str = "hypersaga.io/addon-digest";

pub(crate) const API_VERSION: &str = "package-operator.run/v1alpha1";

/// Where the `ObjectDeployment` goes and what labels say whose it is.
#[derive(Clone, Debug)]
pub struct ObjectDeploymentTarget<'a> {
    /// The cluster's control-plane namespace on its management cluster.
    pub namespace: &'a str,
    pub scope: AddonScope,
    /// `hypersaga.io/tenant`, `hypersaga.io/cluster`…: what every object hypersaga makes on
    /// the management cluster carries.
    pub labels: &'a BTreeMap<String, String>,
}

/// Package Operator's own examples of availability (it has no defaults): a Deployment when
/// `Available` with every replica updated, a StatefulSet likewise, a CRD when `Established`.
/// Used when the add-on declares no probes of its own.
fn default_probes() -> Vec<Value> {
    let replicas = |group: &str, kind: &str| {
        json!({
            "selector": {"kind": {"group": group, "kind": kind}},
            "probes": [
                {"condition": {"type": "Available", "status": "True"}},
                {"fieldsEqual": {"fieldA": ".status.updatedReplicas", "fieldB": ".status.replicas"}},
            ],
        })
    };
    vec![
        replicas("apps", "Deployment"),
        replicas("apps", "StatefulSet"),
        json!({
            "selector": {"kind": {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"}},
            "probes": [{"condition": {"type": "Established", "status": "True"}}],
        }),
    ]
}

/// The `ObjectDeployment` of `addon` at `target`. Objects of management-cluster phases get
/// the control-plane namespace (a namespaced `ObjectSet` manages only its own namespace).
pub fn object_deployment(addon: &Addon, target: &ObjectDeploymentTarget<'_>) -> Value {
    let mut labels: BTreeMap<String, String> = target.labels.clone();
    labels.insert(ADDON_LABEL.into(), addon.name.clone());
    labels.insert(VERSION_LABEL.into(), addon.version.clone());
    labels.insert(SCOPE_LABEL.into(), target.scope.as_str().into());
    let phases: Vec<Value> = addon
        .phases
        .iter()
        .map(|phase| {
            let objects: Vec<Value> = phase
                .objects
                .iter()
                .map(|o| {
                    let mut object = o.object.clone();
                    if !phase.is_hosted() {
                        object["metadata"]["namespace"] = json!(target.namespace);
                    }
                    let mut entry = json!({ "object": object });
                    if let Some(m) = &o.condition_mappings {
                        entry["conditionMappings"] = m.clone();
                    }
                    entry
                })
                .collect();
            let mut p = json!({ "name": phase.name, "objects": objects });
            if let Some(class) = &phase.class {
                p["class"] = json!(class);
            }
            p
        })
        .collect();
    let probes = if addon.availability_probes.is_empty() {
        default_probes()
    } else {
        addon.availability_probes.clone()
    };
    json!({
        "apiVersion": API_VERSION,
        "kind": "ObjectDeployment",
        "metadata": {
            "name": addon.name,
            "namespace": target.namespace,
            "labels": labels,
            "annotations": { DIGEST_ANNOTATION: addon.digest() },
        },
        "spec": {
            "selector": { "matchLabels": { ADDON_LABEL: addon.name } },
            "template": {
                "metadata": { "labels": {
                    ADDON_LABEL: addon.name,
                    VERSION_LABEL: addon.version,
                } },
                "spec": { "phases": phases, "availabilityProbes": probes },
            },
        },
    })
}

/// What an `ObjectDeployment`'s status says of the rollout of its current template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeploymentStatus {
    /// The current template's revision is available and the update has concluded
    /// (`Available=True` and `Progressing=False` at the object's generation). `Available`
    /// alone is not enough: during an update Package Operator keeps it `True` while the
    /// previous revision is still available.
    Available,
    /// `spec.paused`, or Package Operator says it is paused.
    Paused { message: String },
    /// Still rolling out (or Package Operator has not looked at this generation yet), with
    /// what it says.
    Progressing { message: String },
}

/// The annotation Package Operator marks an `ObjectSet` with the template hash it was made
/// from (`status.templateHash` of its `ObjectDeployment`).
const HASH_ANNOTATION: &str = "package-operator.run/hash";

/// Reads `Available`, `Progressing` and `Paused` of `od` as Package Operator reports them.
/// A condition observed at an older generation says nothing of the current template.
pub fn read_status(od: &Value) -> DeploymentStatus {
    let generation = od.pointer("/metadata/generation").and_then(Value::as_i64);
    let current = |t: &str| current_condition(od, t, generation);
    if let Some(c) = current("Paused").filter(|c| c["status"] == "True") {
        return DeploymentStatus::Paused { message: said(c) };
    }
    if od.pointer("/spec/paused") == Some(&Value::Bool(true)) {
        return DeploymentStatus::Paused {
            message: "spec.paused is set".into(),
        };
    }
    let available = current("Available");
    let progressing = current("Progressing");
    let concluded = progressing.is_some_and(|c| c["status"] == "False");
    if available.is_some_and(|c| c["status"] == "True") && concluded {
        return DeploymentStatus::Available;
    }
    let message = progressing
        .filter(|c| c["status"] == "True")
        .or(available)
        .map(said)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "Package Operator has not reported on this version yet".into());
    DeploymentStatus::Progressing { message }
}

/// Whether `object_set` is the revision of `od`'s current template.
pub fn is_current_object_set(od: &Value, object_set: &Value) -> bool {
    let hash = od.pointer("/status/templateHash").and_then(Value::as_str);
    let key = format!(
        "/metadata/annotations/{}",
        HASH_ANNOTATION.replace('/', "~1")
    );
    hash.is_some() && object_set.pointer(&key).and_then(Value::as_str) == hash
}

/// Why an `ObjectSet` can never become available as it is: Package Operator's preflight
/// refused an object (the API server's dry run said no: `PreflightError`) or an object
/// belongs to something else (`CollisionDetected`). Its message, with the reason in front.
/// Anything else (a probe not yet passing) is progress.
pub fn refusal(object_set: &Value) -> Option<String> {
    let generation = object_set
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let c = current_condition(object_set, "Available", generation)?;
    let refused = c["status"] == "False"
        && matches!(
            c["reason"].as_str(),
            Some("PreflightError" | "CollisionDetected")
        );
    refused.then(|| said(c))
}

/// Condition `type_` of `obj`, if observed at `generation` (or when either is unknown).
fn current_condition<'a>(
    obj: &'a Value,
    type_: &str,
    generation: Option<i64>,
) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| {
            c["type"] == type_
                && (generation.is_none()
                    || c["observedGeneration"].as_i64().is_none()
                    || c["observedGeneration"].as_i64() == generation)
        })
}

/// `<reason>: <message>`, or whichever of the two there is.
fn said(c: &Value) -> String {
    let reason = c["reason"].as_str().unwrap_or_default();
    let text = c["message"].as_str().unwrap_or_default();
    match (reason.is_empty(), text.is_empty()) {
        (true, _) => text.to_owned(),
        (false, false) => format!("{reason}: {text}"),
        (false, true) => reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addon() -> Addon {
        Addon::parse(
            "name: logging\nversion: 1.4.0\nphases:\n- name: rbac\n  class: hosted-cluster\n  objects:\n  - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}\n- name: deploy\n  objects:\n  - object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: fwd}}\n",
        )
        .unwrap()
    }

    #[test]
    fn the_object_deployment_carries_the_phases_with_management_objects_namespaced() {
        let labels = BTreeMap::from([("hypersaga.io/cluster".to_owned(), "demo".to_owned())]);
        let od = object_deployment(
            &addon(),
            &ObjectDeploymentTarget {
                namespace: "hcp-x-demo",
                scope: AddonScope::Platform,
                labels: &labels,
            },
        );
        assert_eq!(od["metadata"]["name"], "logging");
        assert_eq!(od["metadata"]["labels"]["hypersaga.io/cluster"], "demo");
        assert_eq!(
            od["metadata"]["labels"]["hypersaga.io/addon-scope"],
            "platform"
        );
        let phases = &od["spec"]["template"]["spec"]["phases"];
        assert_eq!(phases[0]["class"], "hosted-cluster");
        assert!(
            phases[0]["objects"][0]["object"]["metadata"]
                .get("namespace")
                .is_none()
        );
        assert_eq!(
            phases[1]["objects"][0]["object"]["metadata"]["namespace"],
            "hcp-x-demo"
        );
        assert!(phases[1].get("class").is_none());
        assert_eq!(
            od["spec"]["selector"]["matchLabels"],
            od["spec"]["template"]["metadata"]["labels"]
                .as_object()
                .map(|m| json!({ADDON_LABEL: m[ADDON_LABEL]}))
                .unwrap()
        );
        let probes = od["spec"]["template"]["spec"]["availabilityProbes"]
            .as_array()
            .unwrap();
        assert_eq!(
            probes.len(),
            3,
            "Package Operator's examples when the add-on has none"
        );
    }

    #[test]
    fn status_counts_only_conditions_of_the_current_generation() {
        let mut od = json!({"metadata": {"generation": 2}, "status": {"conditions": [
            {"type": "Available", "status": "True", "observedGeneration": 2,
             "reason": "Available", "message": "Previous Revision 'logging-abc' is still Available."},
            {"type": "Progressing", "status": "True", "observedGeneration": 2,
             "reason": "LatestRevisionPendingSuccess", "message": "Latest Revision is Unavailable: Phase \"deploy\" failed"},
        ]}});
        assert_eq!(
            read_status(&od),
            DeploymentStatus::Progressing {
                message: "LatestRevisionPendingSuccess: Latest Revision is Unavailable: Phase \"deploy\" failed".into()
            },
            "the previous revision being available is not this version being available"
        );
        od["status"]["conditions"][1] = json!({"type": "Progressing", "status": "False",
            "observedGeneration": 1, "reason": "Idle", "message": "Update concluded."});
        assert!(
            matches!(read_status(&od), DeploymentStatus::Progressing { .. }),
            "an older generation's"
        );
        od["status"]["conditions"][1]["observedGeneration"] = json!(2);
        assert_eq!(read_status(&od), DeploymentStatus::Available);
        assert!(matches!(
            read_status(&json!({"metadata": {"generation": 1}})),
            DeploymentStatus::Progressing { .. }
        ));
    }

    #[test]
    fn a_preflight_refusal_of_the_current_revision_is_final() {
        let od = json!({"status": {"templateHash": "7d9f"}});
        let os = json!({"metadata": {"generation": 1, "annotations": {"package-operator.run/hash": "7d9f"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "observedGeneration": 1,
                "reason": "PreflightError", "message": "apps/v1 Deployment ns/fwd: selector does not match"}]}});
        assert!(is_current_object_set(&od, &os));
        assert_eq!(
            refusal(&os).as_deref(),
            Some("PreflightError: apps/v1 Deployment ns/fwd: selector does not match")
        );
        let probing = json!({"metadata": {"generation": 1}, "status": {"conditions": [{"type": "Available",
            "status": "False", "observedGeneration": 1, "reason": "ProbeFailure", "message": "not yet"}]}});
        assert_eq!(refusal(&probing), None);
        assert!(!is_current_object_set(
            &json!({"status": {"templateHash": "other"}}),
            &os
        ));
    }
}
