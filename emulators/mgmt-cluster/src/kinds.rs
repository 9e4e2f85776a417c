//! The table of served resource types.
//!
//! Storage, discovery, validation and the HTTP layer are all driven from this one table, so
//! serving another kind is a new row, not new code paths.

use serde_json::Value;

use crate::error::Cause;
use crate::selectors::FieldLabel;

/// A served resource type.
#[derive(Debug)]
pub struct ResourceDef {
    /// API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Whether `/status` is a separate subresource (main writes keep status, status writes keep
    /// everything else).
    pub status_subresource: bool,
    /// Whether `metadata.generation` tracks spec changes.
    pub generation: bool,
    /// What decoding a request body does to it (Secret `stringData` → `data`).
    pub decode: Option<fn(&mut Value)>,
    /// What the strategy does on every write (Namespace finalizer and phase).
    pub normalize: Option<fn(&mut Value)>,
    /// Checks of the kind's strategy beyond its schema (an Event's namespaces), run on every
    /// write of the main resource.
    pub validate: Option<fn(&Value) -> Vec<Cause>>,
    /// The `fieldSelector` labels the kind supports (its `GetAttrs`/field label conversion).
    pub field_labels: &'static [FieldLabel],
}

impl ResourceDef {
    /// `apiVersion` of objects of this kind.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` as in error messages (`hostedclusters.hypershift.openshift.io`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Index of a row in [`KINDS`]; cheap to copy into keys and events.
pub type ResourceId = usize;

pub const NAMESPACES: ResourceId = 0;
pub const SECRETS: ResourceId = 1;
pub const CONFIG_MAPS: ResourceId = 2;
pub const HOSTED_CLUSTERS: ResourceId = 3;
pub const NODE_POOLS: ResourceId = 4;
pub const EVENTS: ResourceId = 5;
pub const MACHINES: ResourceId = 6;

/// `metadata.name` and `metadata.namespace`, which every namespaced kind (and every custom
/// resource) can be selected by (`generic.ObjectMetaFieldsSet`).
const OBJECT_META_LABELS: &[FieldLabel] = &[
    FieldLabel::at("metadata.name", &["/metadata/name"]),
    FieldLabel::at("metadata.namespace", &["/metadata/namespace"]),
];

/// Every served kind. The `*_ID` constants above index into it.
pub static KINDS: [ResourceDef; 7] = [
    ResourceDef {
        group: "",
        version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        singular: "namespace",
        namespaced: false,
        short_names: &["ns"],
        status_subresource: true,
        generation: false,
        decode: None,
        normalize: Some(crate::normalize::normalize_namespace),
        validate: None,
        // `addFieldLabelConversionsForNamespace` (`pkg/apis/core/v1/conversion.go`).
        field_labels: &[
            FieldLabel::at("metadata.name", &["/metadata/name"]),
            FieldLabel::at("status.phase", &["/status/phase"]),
        ],
    },
    ResourceDef {
        group: "",
        version: "v1",
        kind: "Secret",
        plural: "secrets",
        singular: "secret",
        namespaced: true,
        short_names: &[],
        status_subresource: false,
        generation: false,
        decode: Some(crate::normalize::normalize_secret),
        normalize: None,
        validate: None,
        // `addFieldLabelConversionsForSecret`.
        field_labels: &[
            FieldLabel::at("metadata.name", &["/metadata/name"]),
            FieldLabel::at("metadata.namespace", &["/metadata/namespace"]),
            FieldLabel::at("type", &["/type"]),
        ],
    },
    ResourceDef {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        singular: "configmap",
        namespaced: true,
        short_names: &["cm"],
        status_subresource: false,
        generation: false,
        decode: None,
        normalize: None,
        validate: None,
        field_labels: OBJECT_META_LABELS,
    },
    ResourceDef {
        group: "hypershift.openshift.io",
        version: "v1beta1",
        kind: "HostedCluster",
        plural: "hostedclusters",
        singular: "hostedcluster",
        namespaced: true,
        short_names: &["hc", "hcs"],
        status_subresource: true,
        generation: true,
        decode: None,
        normalize: None,
        validate: None,
        field_labels: OBJECT_META_LABELS,
    },
    ResourceDef {
        group: "hypershift.openshift.io",
        version: "v1beta1",
        kind: "NodePool",
        plural: "nodepools",
        singular: "nodepool",
        namespaced: true,
        short_names: &["np", "nps"],
        status_subresource: true,
        generation: true,
        decode: None,
        normalize: None,
        validate: None,
        field_labels: OBJECT_META_LABELS,
    },
    ResourceDef {
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        singular: "event",
        namespaced: true,
        short_names: &["ev"],
        status_subresource: false,
        generation: false,
        decode: None,
        normalize: None,
        validate: Some(crate::events::validate),
        // `addFieldLabelConversionsForEvent`; `source` reads the component, or the
        // reporting controller of events that have none (the event strategy's
        // `ToSelectableFields`).
        field_labels: &[
            FieldLabel::at("metadata.name", &["/metadata/name"]),
            FieldLabel::at("metadata.namespace", &["/metadata/namespace"]),
            FieldLabel::at("involvedObject.kind", &["/involvedObject/kind"]),
            FieldLabel::at("involvedObject.namespace", &["/involvedObject/namespace"]),
            FieldLabel::at("involvedObject.name", &["/involvedObject/name"]),
            FieldLabel::at("involvedObject.uid", &["/involvedObject/uid"]),
            FieldLabel::at("involvedObject.apiVersion", &["/involvedObject/apiVersion"]),
            FieldLabel::at(
                "involvedObject.resourceVersion",
                &["/involvedObject/resourceVersion"],
            ),
            FieldLabel::at("involvedObject.fieldPath", &["/involvedObject/fieldPath"]),
            FieldLabel::at("reason", &["/reason"]),
            FieldLabel::at("source", &["/source/component", "/reportingComponent"]),
            FieldLabel::at("type", &["/type"]),
        ],
    },
    // Cluster API's Machine, one per worker of a NodePool, in the control plane's namespace
    // (`machines.cluster.x-k8s.io`, CRD short name `ma`). The simulated CAPZ writes it; its
    // conditions carry the cloud's refusals in full, which a NodePool's cannot.
    ResourceDef {
        group: "cluster.x-k8s.io",
        version: "v1beta1",
        kind: "Machine",
        plural: "machines",
        singular: "machine",
        namespaced: true,
        short_names: &["ma"],
        status_subresource: true,
        generation: true,
        decode: None,
        normalize: None,
        validate: None,
        field_labels: OBJECT_META_LABELS,
    },
];

/// The row serving `plural` in `group`/`version`.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<ResourceId> {
    KINDS
        .iter()
        .position(|d| d.group == group && d.version == version && d.plural == plural)
}

/// The row for `kind`.
pub fn by_kind(kind: &str) -> Option<ResourceId> {
    KINDS.iter().position(|d| d.kind == kind)
}

/// The distinct API groups served (excluding core), in table order.
pub fn groups() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for d in KINDS.iter().filter(|d| !d.group.is_empty()) {
        if !out.contains(&(d.group, d.version)) {
            out.push((d.group, d.version));
        }
    }
    out
}
