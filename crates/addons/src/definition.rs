//! An add-on as its author writes it: Package Operator's `ObjectDeployment` template, with a
//! name and a version in front (`name`, `version`, `phases[]` of `{name, class?, objects[]}`,
//! optional `availabilityProbes`), in YAML or JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The phase class Package Operator routes to the hosted cluster's API (its remote-phase
/// connector in the control-plane namespace); a phase without one runs on the management
/// cluster, in that namespace.
pub const HOSTED_CLUSTER_CLASS: &str = "hosted-cluster";

/// One add-on, at one version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Addon {
    pub name: String,
    pub version: String,
    /// What the add-on is, for people listing the catalog.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub phases: Vec<Phase>,
    /// Package Operator's `availabilityProbes`; when empty, a Deployment is available when its
    /// `Available` condition is and all its replicas are updated, a CRD when `Established`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub availability_probes: Vec<Value>,
}

/// One phase: its objects are applied together, and the next phase starts once they are all
/// available (`ObjectSetTemplatePhase`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Phase {
    pub name: String,
    /// Absent for the management cluster; [`HOSTED_CLUSTER_CLASS`] for the hosted cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(default)]
    pub objects: Vec<PhaseObject>,
}

impl Phase {
    /// Whether the phase's objects go to the hosted cluster.
    pub fn is_hosted(&self) -> bool {
        self.class.as_deref() == Some(HOSTED_CLUSTER_CLASS)
    }
}

/// One object of a phase (`ObjectSetObject`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseObject {
    pub object: Value,
    /// Package Operator's `conditionMappings`, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition_mappings: Option<Value>,
}

/// A document that is not an add-on, with where it goes wrong.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ParseError {
    /// The field path (`phases[1].objects[0]`), or `""` for the document itself.
    pub field: String,
    pub message: String,
}

impl Addon {
    /// Reads an add-on from YAML or JSON (JSON is YAML), naming the field that is wrong.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let value: Value = serde_norway::from_str(text).map_err(|e| ParseError {
            field: String::new(),
            message: format!("not YAML or JSON: {e}"),
        })?;
        Self::from_value(value)
    }

    /// Reads an add-on from a JSON value, naming the field that is wrong.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let field = e.path().to_string();
            ParseError {
                field: if field == "." { String::new() } else { field },
                message: e.into_inner().to_string(),
            }
        })
    }

    /// The add-on as canonical JSON (what its digest is of, and what the catalog stores).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A digest of the definition: the same add-on put twice has the same one.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(self.to_json()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_in_package_operators_shape_reads() {
        let a = Addon::parse(
            "name: logging\nversion: 1.0.0\nphases:\n- name: rbac\n  class: hosted-cluster\n  objects:\n  - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}\n- name: deploy\n  objects: []\n",
        )
        .unwrap();
        assert_eq!(a.phases.len(), 2);
        assert!(a.phases[0].is_hosted() && !a.phases[1].is_hosted());
        assert_eq!(
            a.digest(),
            Addon::from_value(serde_json::to_value(&a).unwrap())
                .unwrap()
                .digest()
        );
    }

    #[test]
    fn a_wrong_field_is_named_by_its_path() {
        let e =
            Addon::parse("name: x\nversion: '1'\nphases:\n- name: a\n  objekts: []\n").unwrap_err();
        assert_eq!(e.field, "phases[0].objekts");
        assert!(e.message.contains("unknown field `objekts`"), "{e}");
        let e = Addon::parse("name: x\nphases: []\n").unwrap_err();
        assert!(e.message.contains("missing field `version`"), "{e}");
        let e = Addon::parse("- a\n").unwrap_err();
        assert_eq!(e.field, "");
    }
}
