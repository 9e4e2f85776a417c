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
    /// `Available=True` at the object's generation: every phase is available.
    Available,
    /// `spec.paused`, or Package Operator says it is paused.
    Paused { message: String },
    /// Still rolling out (or Package Operator has not looked at this generation yet), with
    /// what it says.
    Progressing { message: String },
}

/// Reads `Available`, `Progressing` and `Paused` of `od` as Package Operator reports them.
/// A condition observed at an older generation says nothing of the current template.
pub fn read_status(od: &Value) -> DeploymentStatus {
    let generation = od.pointer("/metadata/generation").and_then(Value::as_i64);
    let conditions = od
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = |t: &str| {
        conditions.iter().find(|c| {
            c["type"] == t
                && (generation.is_none() || c["observedGeneration"].as_i64() == generation)
        })
    };
    let message = |c: &Value| {
        let reason = c["reason"].as_str().unwrap_or_default();
        let text = c["message"].as_str().unwrap_or_default();
        match (reason.is_empty(), text.is_empty()) {
            (true, _) => text.to_owned(),
            (false, false) => format!("{reason}: {text}"),
            (false, true) => reason.to_owned(),
        }
    };
    if let Some(c) = current("Paused").filter(|c| c["status"] == "True") {
        return DeploymentStatus::Paused {
            message: message(c),
        };
    }
    if od.pointer("/spec/paused") == Some(&Value::Bool(true)) {
        return DeploymentStatus::Paused {
            message: "spec.paused is set".into(),
        };
    }
    match current("Available") {
        Some(c) if c["status"] == "True" => DeploymentStatus::Available,
        available => {
            let said = current("Progressing")
                .map(message)
                .filter(|m| !m.is_empty())
                .or_else(|| available.map(message).filter(|m| !m.is_empty()))
                .unwrap_or_else(|| "Package Operator has not reported on this version yet".into());
            DeploymentStatus::Progressing { message: said }
        }
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
            {"type": "Available", "status": "True", "observedGeneration": 1},
            {"type": "Progressing", "status": "True", "observedGeneration": 2,
             "reason": "Progressing", "message": "Progressing to a new ObjectSet."},
        ]}});
        assert_eq!(
            read_status(&od),
            DeploymentStatus::Progressing {
                message: "Progressing: Progressing to a new ObjectSet.".into()
            }
        );
        od["status"]["conditions"][0]["observedGeneration"] = json!(2);
        assert_eq!(read_status(&od), DeploymentStatus::Available);
        assert!(matches!(
            read_status(&json!({"metadata": {"generation": 1}})),
            DeploymentStatus::Progressing { .. }
        ));
    }
}
