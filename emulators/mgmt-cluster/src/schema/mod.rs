//! Structural schemas of the served kinds: what fields exist, how lists merge, what is
//! required, enumerated, bounded or defaulted.
//!
//! kube-apiserver drives pruning, defaulting, validation and server-side apply for a custom
//! resource from the CRD's structural `openAPIV3Schema`, and for built-in kinds from their Go
//! types' OpenAPI. This module is the emulator's equivalent: one [`Node`] tree per kind,
//! written with the small builder below. The HyperShift trees are transcribed from
//! `openshift/hypershift` `api/hypershift/v1beta1` (the kubebuilder markers and the generated
//! CRD `zz_generated.featuregated-crd-manifests/*/AAA_ungated.yaml`): every field the product
//! sets, every required one, and every one the simulated operator writes is typed; the other
//! top-level fields HyperShift has are present as [`any`] subtrees, so they are accepted and
//! merged but not validated inside.

mod azure_ids;
mod builder;
mod core;
pub mod docs;
mod hostedcluster;
mod machine;
mod meta;
mod nodepool;
pub mod openapi;
mod pko;
mod rules;
mod shared;
mod workloads;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::Value;

pub use builder::*;
pub use rules::Rule;

use crate::kinds::{self, ResourceId};

/// One schema node.
#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    /// Value set when the field is absent from an object that exists.
    pub default: Option<Value>,
    /// Whether `null` is a value (kept) rather than absence (pruned).
    pub nullable: bool,
    /// `x-kubernetes-validations` the emulator enforces for this node.
    pub rules: Vec<Rule>,
}

/// What a node holds.
#[derive(Debug, Clone)]
pub enum Kind {
    String(StringRules),
    Integer(NumberRules),
    Boolean,
    /// `x-kubernetes-int-or-string`.
    IntOrString(StringRules),
    /// A struct: named properties.
    Object(Object),
    /// `additionalProperties`: a map of string to one value type.
    Map(MapOf),
    List(List),
    /// Anything (`x-kubernetes-preserve-unknown-fields`, or a subtree not modelled here).
    /// Merged as structured-merge-diff's "deduced" type: maps granular, lists atomic.
    Any,
}

#[derive(Debug, Clone, Default)]
pub struct StringRules {
    pub one_of: Vec<&'static str>,
    pub min_len: Option<usize>,
    pub max_len: Option<usize>,
    pub pattern: Option<Pattern>,
}

#[derive(Debug, Clone, Default)]
pub struct NumberRules {
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
}

/// A `pattern` keyword, kept with its source text for the error message.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: &'static str,
    pub regex: regex::Regex,
}

#[derive(Debug, Clone, Default)]
pub struct Object {
    pub fields: BTreeMap<&'static str, Node>,
    pub required: Vec<&'static str>,
    /// `x-kubernetes-map-type: atomic`: replaced as a whole by server-side apply.
    pub atomic: bool,
    pub min_properties: Option<usize>,
    pub max_properties: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct MapOf {
    pub values: Box<Node>,
    pub atomic: bool,
    pub max_properties: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct List {
    pub items: Box<Node>,
    pub list_type: ListType,
    pub min_items: Option<usize>,
    pub max_items: Option<usize>,
}

/// `x-kubernetes-list-type`; absent means atomic for a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    Atomic,
    Set,
    /// Items are objects identified by these key fields (`x-kubernetes-list-map-keys`).
    Map(Vec<&'static str>),
}

impl Node {
    /// The node of property `name` of an object node, or of any key of a map node.
    pub fn field(&self, name: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(o) => o.fields.get(name),
            Kind::Map(m) => Some(&m.values),
            Kind::Any => Some(any_node()),
            _ => None,
        }
    }

    /// Whether `name` is a declared property of an object node.
    pub fn declares(&self, name: &str) -> bool {
        matches!(&self.kind, Kind::Object(o) if o.fields.contains_key(name))
    }
}

/// The shared [`Kind::Any`] node.
pub fn any_node() -> &'static Node {
    static ANY: LazyLock<Node> = LazyLock::new(any);
    &ANY
}

/// The whole-object schema of a served kind.
pub fn for_kind(res: ResourceId) -> &'static Node {
    static SCHEMAS: LazyLock<Vec<Node>> = LazyLock::new(|| {
        (0..kinds::KINDS.len())
            .map(|res| match res {
                kinds::NAMESPACES => core::namespace(),
                kinds::SECRETS => core::secret(),
                kinds::CONFIG_MAPS => core::config_map(),
                kinds::HOSTED_CLUSTERS => hostedcluster::hosted_cluster(),
                kinds::NODE_POOLS => nodepool::node_pool(),
                kinds::EVENTS => core::event(),
                kinds::MACHINES => machine::machine(),
                kinds::DEPLOYMENTS => workloads::deployment(),
                kinds::SERVICE_ACCOUNTS => workloads::service_account(),
                kinds::CLUSTER_ROLES => workloads::role(true),
                kinds::ROLES => workloads::role(false),
                kinds::CLUSTER_ROLE_BINDINGS | kinds::ROLE_BINDINGS => workloads::role_binding(),
                kinds::CRDS => workloads::custom_resource_definition(),
                kinds::OBJECT_DEPLOYMENTS => pko::object_deployment(),
                kinds::OBJECT_SETS => pko::object_set(),
                kinds::OBJECT_SET_PHASES => pko::object_set_phase(),
                kinds::PACKAGES => pko::package(),
                _ => any(),
            })
            .collect()
    });
    SCHEMAS.get(res).unwrap_or_else(|| any_node())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_typed_schema() {
        for res in 0..kinds::KINDS.len() {
            let node = for_kind(res);
            assert!(node.declares("metadata"), "{}", kinds::KINDS[res].kind);
        }
        let hc = for_kind(kinds::HOSTED_CLUSTERS);
        let conditions = hc
            .field("status")
            .and_then(|s| s.field("conditions"))
            .unwrap();
        assert!(
            matches!(&conditions.kind, Kind::List(l) if l.list_type == ListType::Map(vec!["type"]))
        );
    }
}
