//! Whether an object's kind is namespaced: a phase for the management cluster may hold only
//! objects of the control-plane namespace (Package Operator's namespaced `ObjectSet`s manage
//! nothing else), and a hosted-cluster object of a namespaced kind must say its namespace.
//!
//! Built-in kinds are known by their group; a kind defined by a CRD the add-on itself carries
//! takes the CRD's `spec.scope`; any other kind is taken as namespaced, as most custom
//! resources are (its author then names a namespace, which a cluster-scoped kind's API
//! refuses loudly rather than silently).

use serde_json::Value;

/// Cluster-scoped kinds of Kubernetes and OpenShift, by API group and kind.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("networking.k8s.io", "IngressClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("security.openshift.io", "SecurityContextConstraints"),
    ("config.openshift.io", "ClusterOperator"),
    ("config.openshift.io", "ClusterVersion"),
    ("operators.coreos.com", "OperatorGroup"),
];

/// The API group of an `apiVersion` (`apps/v1` → `apps`, `v1` → the core group `""`).
pub(crate) fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The kinds the add-on's own CRDs define, with whether each is namespaced.
pub(crate) struct Scopes {
    defined: Vec<(String, String, bool)>,
}

impl Scopes {
    /// Learns the kinds of every `CustomResourceDefinition` among `objects`.
    pub(crate) fn new<'a>(objects: impl Iterator<Item = &'a Value>) -> Self {
        let defined = objects
            .filter(|o| {
                o["kind"] == "CustomResourceDefinition"
                    && group_of(o["apiVersion"].as_str().unwrap_or_default())
                        == "apiextensions.k8s.io"
            })
            .filter_map(|crd| {
                let spec = &crd["spec"];
                Some((
                    spec["group"].as_str()?.to_owned(),
                    spec["names"]["kind"].as_str()?.to_owned(),
                    spec["scope"].as_str() != Some("Cluster"),
                ))
            })
            .collect();
        Self { defined }
    }

    /// Whether objects of `kind` in `group` live in a namespace.
    pub(crate) fn namespaced(&self, group: &str, kind: &str) -> bool {
        if let Some((_, _, namespaced)) = self
            .defined
            .iter()
            .find(|(g, k, _)| g == group && k == kind)
        {
            return *namespaced;
        }
        !CLUSTER_SCOPED.contains(&(group, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_kinds_by_group_and_the_add_ons_own_crds_by_their_scope() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "logging.example.com", "scope": "Cluster", "names": {"kind": "LogPolicy"}}});
        let s = Scopes::new([&crd].into_iter());
        assert!(!s.namespaced("", "Namespace"));
        assert!(s.namespaced("", "ConfigMap"));
        assert!(
            s.namespaced("example.com", "Namespace"),
            "another group's Namespace"
        );
        assert!(!s.namespaced("logging.example.com", "LogPolicy"));
        assert!(s.namespaced("logging.example.com", "Other"));
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
    }
}
