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
    /// Checks of the kind's strategy that compare with the stored object (`ValidateUpdate`:
    /// a RoleBinding's immutable `roleRef`), run on every update of the main resource.
    pub validate_update: Option<fn(&Value, &Value) -> Vec<Cause>>,
    /// Which API servers serve the kind: the management cluster, hosted clusters, or both.
    pub served_by: ServedBy,
    /// Compiled into kube-apiserver (core, apps, rbac, apiextensions) rather than a custom
    /// resource: decides protobuf, strategic merge patch, unconditional updates, and the
    /// names in OpenAPI and errors.
    pub builtin: bool,
}

/// Which kind of API server an emulator instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The management cluster: HyperShift, Cluster API and Package Operator are installed.
    Management,
    /// A hosted cluster's kube-apiserver: only what a fresh OpenShift guest has that the
    /// emulator models (core, RBAC, apps, apiextensions).
    Hosted,
}

/// The servers a kind is served by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBy {
    Management,
    Hosted,
    Both,
}

impl ServedBy {
    pub fn serves(self, profile: Profile) -> bool {
        matches!(
            (self, profile),
            (Self::Both, _)
                | (Self::Management, Profile::Management)
                | (Self::Hosted, Profile::Hosted)
        )
    }
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

    /// The Go package of a built-in kind's internal type (`core`, `apps`, `rbac`,
    /// `apiextensions`): the first label of its group.
    pub fn go_package(&self) -> &'static str {
        match self.group.split('.').next() {
            Some("") | None => "core",
            Some(first) => first,
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
pub const DEPLOYMENTS: ResourceId = 7;
pub const SERVICE_ACCOUNTS: ResourceId = 8;
pub const CLUSTER_ROLES: ResourceId = 9;
pub const CLUSTER_ROLE_BINDINGS: ResourceId = 10;
pub const ROLES: ResourceId = 11;
pub const ROLE_BINDINGS: ResourceId = 12;
pub const CRDS: ResourceId = 13;
pub const OBJECT_DEPLOYMENTS: ResourceId = 14;
pub const OBJECT_SETS: ResourceId = 15;
pub const OBJECT_SET_PHASES: ResourceId = 16;
pub const PACKAGES: ResourceId = 17;

/// `metadata.name` and `metadata.namespace`, which every namespaced kind (and every custom
/// resource) can be selected by (`generic.ObjectMetaFieldsSet`).
const OBJECT_META_LABELS: &[FieldLabel] = &[
    FieldLabel::at("metadata.name", &["/metadata/name"]),
    FieldLabel::at("metadata.namespace", &["/metadata/namespace"]),
];

/// A row with the common defaults: no subresources, no strategy hooks, served by both.
const fn row(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
) -> ResourceDef {
    ResourceDef {
        group,
        version,
        kind,
        plural,
        singular,
        namespaced,
        short_names: &[],
        status_subresource: false,
        generation: false,
        decode: None,
        normalize: None,
        validate: None,
        field_labels: OBJECT_META_LABELS,
        validate_update: None,
        served_by: ServedBy::Both,
        builtin: true,
    }
}

/// A custom resource of the management cluster with a status subresource and generation
/// (HyperShift's, Cluster API's and Package Operator's CRDs).
const fn custom(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    short_names: &'static [&'static str],
) -> ResourceDef {
    ResourceDef {
        short_names,
        status_subresource: true,
        generation: true,
        served_by: ServedBy::Management,
        builtin: false,
        ..row(group, version, kind, plural, singular, true)
    }
}

const RBAC: &str = "rbac.authorization.k8s.io";
const PKO: &str = "package-operator.run";

/// Every served kind. The `*_ID` constants above index into it.
pub static KINDS: [ResourceDef; 18] = [
    ResourceDef {
        short_names: &["ns"],
        status_subresource: true,
        normalize: Some(crate::normalize::normalize_namespace),
        // `addFieldLabelConversionsForNamespace` (`pkg/apis/core/v1/conversion.go`).
        field_labels: &[
            FieldLabel::at("metadata.name", &["/metadata/name"]),
            FieldLabel::at("status.phase", &["/status/phase"]),
        ],
        ..row("", "v1", "Namespace", "namespaces", "namespace", false)
    },
    ResourceDef {
        decode: Some(crate::normalize::normalize_secret),
        // `addFieldLabelConversionsForSecret`.
        field_labels: &[
            FieldLabel::at("metadata.name", &["/metadata/name"]),
            FieldLabel::at("metadata.namespace", &["/metadata/namespace"]),
            FieldLabel::at("type", &["/type"]),
        ],
        ..row("", "v1", "Secret", "secrets", "secret", true)
    },
    ResourceDef {
        short_names: &["cm"],
        ..row("", "v1", "ConfigMap", "configmaps", "configmap", true)
    },
    custom(
        "hypershift.openshift.io",
        "v1beta1",
        "HostedCluster",
        "hostedclusters",
        "hostedcluster",
        &["hc", "hcs"],
    ),
    custom(
        "hypershift.openshift.io",
        "v1beta1",
        "NodePool",
        "nodepools",
        "nodepool",
        &["np", "nps"],
    ),
    ResourceDef {
        short_names: &["ev"],
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
        ..row("", "v1", "Event", "events", "event", true)
    },
    // Cluster API's Machine, one per worker of a NodePool, in the control plane's namespace
    // (`machines.cluster.x-k8s.io`, CRD short name `ma`). The simulated CAPZ writes it; its
    // conditions carry the cloud's refusals in full, which a NodePool's cannot.
    custom(
        "cluster.x-k8s.io",
        "v1beta1",
        "Machine",
        "machines",
        "machine",
        &["ma"],
    ),
    // `apps/v1` Deployment (`pkg/registry/apps/deployment/strategy.go`: status subresource,
    // generation bumped on spec changes; `ValidateDeployment` checks the selector).
    ResourceDef {
        short_names: &["deploy"],
        status_subresource: true,
        generation: true,
        validate: Some(crate::strategies::validate_deployment),
        ..row(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            "deployment",
            true,
        )
    },
    ResourceDef {
        short_names: &["sa"],
        ..row(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            true,
        )
    },
    ResourceDef {
        field_labels: &[FieldLabel::at("metadata.name", &["/metadata/name"])],
        ..row(
            RBAC,
            "v1",
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            false,
        )
    },
    ResourceDef {
        field_labels: &[FieldLabel::at("metadata.name", &["/metadata/name"])],
        validate: Some(crate::strategies::validate_cluster_role_binding),
        validate_update: Some(crate::strategies::validate_role_ref_update),
        ..row(
            RBAC,
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            false,
        )
    },
    row(RBAC, "v1", "Role", "roles", "role", true),
    ResourceDef {
        validate: Some(crate::strategies::validate_role_binding),
        validate_update: Some(crate::strategies::validate_role_ref_update),
        ..row(
            RBAC,
            "v1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            true,
        )
    },
    // `customresourcedefinitions.apiextensions.k8s.io`: cluster-scoped, status subresource,
    // generation (`apiextensions-apiserver/pkg/registry/customresourcedefinition`).
    ResourceDef {
        short_names: &["crd", "crds"],
        status_subresource: true,
        generation: true,
        field_labels: &[FieldLabel::at("metadata.name", &["/metadata/name"])],
        ..row(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinition",
            false,
        )
    },
    // Package Operator's namespaced APIs (`apis/core/v1alpha1`, CRDs in `config/crds`).
    ResourceDef {
        validate: Some(crate::pko::validate),
        ..custom(
            PKO,
            "v1alpha1",
            "ObjectDeployment",
            "objectdeployments",
            "objectdeployment",
            &["objdeploy", "od"],
        )
    },
    ResourceDef {
        validate: Some(crate::pko::validate),
        ..custom(
            PKO,
            "v1alpha1",
            "ObjectSet",
            "objectsets",
            "objectset",
            &["objset", "os"],
        )
    },
    ResourceDef {
        validate: Some(crate::pko::validate),
        ..custom(
            PKO,
            "v1alpha1",
            "ObjectSetPhase",
            "objectsetphases",
            "objectsetphase",
            &["objsetphase", "osp"],
        )
    },
    custom(PKO, "v1alpha1", "Package", "packages", "package", &["pkg"]),
];

/// The row serving `plural` in `group`/`version` on a server of `profile`.
pub fn lookup(profile: Profile, group: &str, version: &str, plural: &str) -> Option<ResourceId> {
    KINDS.iter().position(|d| {
        d.group == group
            && d.version == version
            && d.plural == plural
            && d.served_by.serves(profile)
    })
}

/// The row of `apiVersion`/`kind` served on a server of `profile` (what a client's REST
/// mapping finds for an object it is given).
pub fn by_api_version(profile: Profile, api_version: &str, kind: &str) -> Option<ResourceId> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    KINDS.iter().position(|d| {
        d.group == group && d.version == version && d.kind == kind && d.served_by.serves(profile)
    })
}

/// The row for `kind`.
pub fn by_kind(kind: &str) -> Option<ResourceId> {
    KINDS.iter().position(|d| d.kind == kind)
}

/// The distinct API groups served on a server of `profile` (excluding core), in table order.
pub fn groups(profile: Profile) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for d in KINDS
        .iter()
        .filter(|d| !d.group.is_empty() && d.served_by.serves(profile))
    {
        if !out.contains(&(d.group, d.version)) {
            out.push((d.group, d.version));
        }
    }
    out
}
