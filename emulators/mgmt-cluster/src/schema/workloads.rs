//! Built-in kinds a hosted cluster (and the management cluster) serves beyond core/v1's:
//! `apps/v1` Deployment, core/v1 ServiceAccount, `rbac.authorization.k8s.io/v1` roles and
//! bindings, `apiextensions.k8s.io/v1` CustomResourceDefinition (`k8s.io/api/{apps,core,
//! rbac}/v1/types.go`, `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1`).
//!
//! As for the other built-in kinds, `required` is not in their OpenAPI: kube-apiserver checks
//! such fields in Go ([`crate::strategies`]). A pod template's spec, a CRD's versions and
//! names are [`any`] subtrees: kept and merged, not validated inside.

use serde_json::json;

use super::Node;
use super::builder::*;
use super::meta::envelope;

/// `metav1.LabelSelector` (`+structType=atomic`).
pub fn label_selector() -> Node {
    object([
        ("matchLabels", map_of(string())),
        (
            "matchExpressions",
            atomic_list(
                object([
                    ("key", string()),
                    ("operator", string()),
                    ("values", atomic_list(string())),
                ])
                .require(&["key", "operator"]),
            ),
        ),
    ])
    .atomic()
}

/// A `status.conditions` entry of the apps and apiextensions kinds (`DeploymentCondition`,
/// `CustomResourceDefinitionCondition`): `+listType=map`, keyed by `type`.
fn typed_conditions(extra: &[&'static str]) -> Node {
    let mut fields = vec![
        ("type", string()),
        ("status", string()),
        ("lastTransitionTime", string()),
        ("reason", string()),
        ("message", string()),
    ];
    fields.extend(extra.iter().map(|f| (*f, string())));
    let mut condition = object([]);
    if let super::Kind::Object(o) = &mut condition.kind {
        o.fields.extend(fields);
    }
    map_list(condition, &["type"])
}

/// `apps/v1` Deployment, with the defaults `SetDefaults_Deployment` fills in.
pub fn deployment() -> Node {
    let template = object([
        (
            "metadata",
            object([
                ("labels", map_of(string())),
                ("annotations", map_of(string())),
                ("name", string()),
            ]),
        ),
        ("spec", any()),
    ]);
    envelope([
        (
            "spec",
            object([
                ("replicas", integer().default(json!(1))),
                ("selector", label_selector()),
                ("template", template),
                (
                    "strategy",
                    any().default(json!({"type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})),
                ),
                ("minReadySeconds", integer()),
                ("revisionHistoryLimit", integer().default(json!(10))),
                ("paused", boolean()),
                ("progressDeadlineSeconds", integer().default(json!(600))),
            ]),
        ),
        (
            "status",
            object([
                ("observedGeneration", integer()),
                ("replicas", integer()),
                ("updatedReplicas", integer()),
                ("readyReplicas", integer()),
                ("availableReplicas", integer()),
                ("unavailableReplicas", integer()),
                ("terminatingReplicas", integer()),
                ("collisionCount", integer()),
                ("conditions", typed_conditions(&["lastUpdateTime"])),
            ]),
        ),
    ])
}

fn local_reference() -> Node {
    object([("name", string())]).atomic()
}

/// core/v1 ServiceAccount.
pub fn service_account() -> Node {
    envelope([
        ("secrets", atomic_list(any())),
        ("imagePullSecrets", atomic_list(local_reference())),
        ("automountServiceAccountToken", boolean()),
    ])
}

/// `PolicyRule`.
fn rules() -> Node {
    atomic_list(object([
        ("verbs", atomic_list(string())),
        ("apiGroups", atomic_list(string())),
        ("resources", atomic_list(string())),
        ("resourceNames", atomic_list(string())),
        ("nonResourceURLs", atomic_list(string())),
    ]))
}

/// `Role` and, with `aggregationRule`, `ClusterRole`.
pub fn role(cluster: bool) -> Node {
    let mut node = envelope([("rules", rules())]);
    if cluster && let super::Kind::Object(o) = &mut node.kind {
        o.fields.insert("aggregationRule", any());
    }
    node
}

/// `RoleBinding` and `ClusterRoleBinding`: `subjects`, and `roleRef`, which the strategy
/// requires and never lets change ([`crate::strategies`]).
pub fn role_binding() -> Node {
    envelope([
        (
            "subjects",
            atomic_list(object([
                ("kind", string()),
                ("apiGroup", string()),
                ("name", string()),
                ("namespace", string()),
            ])),
        ),
        (
            "roleRef",
            object([
                ("apiGroup", string()),
                ("kind", string()),
                ("name", string()),
            ])
            .atomic(),
        ),
    ])
}

/// `apiextensions.k8s.io/v1` CustomResourceDefinition.
pub fn custom_resource_definition() -> Node {
    envelope([
        (
            "spec",
            object([
                ("group", string()),
                ("names", any()),
                ("scope", string()),
                ("versions", atomic_list(any())),
                ("conversion", any()),
                ("preserveUnknownFields", boolean()),
            ]),
        ),
        (
            "status",
            object([
                ("conditions", typed_conditions(&[])),
                ("acceptedNames", any()),
                ("storedVersions", atomic_list(string())),
            ]),
        ),
    ])
}
