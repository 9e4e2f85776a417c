//! Package Operator's namespaced APIs, from `package-operator/package-operator`
//! `apis/core/v1alpha1` and the CRDs generated from it (`config/crds/package-operator.run_*.yaml`):
//! ObjectDeployment, ObjectSet, ObjectSetPhase, Package. What the CRDs require, default and
//! enumerate is here; `objects[].object` is an embedded resource whose `apiVersion` and
//! `kind` kube-apiserver requires ([`crate::pko::validate`]).

use serde_json::json;

use super::Node;
use super::builder::*;
use super::meta::envelope;
use super::shared::metav1_condition;
use super::workloads::label_selector;

/// `status.conditions`: `[]metav1.Condition` without a list-type marker (atomic).
fn conditions() -> Node {
    atomic_list(metav1_condition())
}

/// `ControlledObjectReference`.
fn controlled_object_reference() -> Node {
    object([
        ("kind", string()),
        ("group", string()),
        ("name", string()),
        ("namespace", string()),
        ("version", string()),
    ])
    .require(&["group", "kind", "name", "version"])
}

/// `ObjectSetProbe`: probes and the selector of the objects they apply to.
fn availability_probes() -> Node {
    let probe = object([
        (
            "condition",
            object([
                ("type", string()),
                ("status", string().default(json!("True"))),
            ])
            .require(&["status", "type"]),
        ),
        (
            "fieldsEqual",
            object([("fieldA", string()), ("fieldB", string())]).require(&["fieldA", "fieldB"]),
        ),
        (
            "cel",
            object([("rule", string()), ("message", string())]).require(&["message", "rule"]),
        ),
    ]);
    atomic_list(
        object([
            ("probes", atomic_list(probe)),
            (
                "selector",
                object([
                    (
                        "kind",
                        object([("group", string()), ("kind", string())])
                            .require(&["group", "kind"]),
                    ),
                    ("selector", label_selector()),
                ])
                .require(&["kind"]),
            ),
        ])
        .require(&["probes", "selector"]),
    )
}

/// `ObjectSetObject`.
fn phase_object() -> Node {
    object([
        ("object", any()),
        (
            "collisionProtection",
            string().default(json!("Prevent")),
        ),
        (
            "conditionMappings",
            atomic_list(
                object([
                    ("sourceType", string()),
                    (
                        "destinationType",
                        string().pattern(
                            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
                        ),
                    ),
                ])
                .require(&["destinationType", "sourceType"]),
            ),
        ),
    ])
    .require(&["object"])
}

/// `ObjectSetTemplatePhase`.
fn phases() -> Node {
    atomic_list(
        object([
            ("name", string()),
            ("class", string()),
            ("objects", atomic_list(phase_object())),
            ("slices", atomic_list(string())),
        ])
        .require(&["name"]),
    )
}

/// The fields of `ObjectSetTemplateSpec`, inlined into the ObjectSet's spec.
fn template_spec_fields() -> [(&'static str, Node); 3] {
    [
        ("phases", phases()),
        ("availabilityProbes", availability_probes()),
        ("successDelaySeconds", integer()),
    ]
}

fn object_with<const N: usize, const M: usize>(
    base: [(&'static str, Node); N],
    more: [(&'static str, Node); M],
) -> Node {
    let mut node = object(base);
    if let super::Kind::Object(o) = &mut node.kind {
        o.fields.extend(more);
    }
    node
}

/// `ObjectDeployment`.
pub fn object_deployment() -> Node {
    envelope([
        (
            "spec",
            object([
                ("revisionHistoryLimit", integer().default(json!(10))),
                ("selector", label_selector()),
                (
                    "template",
                    object([
                        (
                            "metadata",
                            object([
                                ("labels", map_of(string())),
                                ("annotations", map_of(string())),
                            ]),
                        ),
                        ("spec", object(template_spec_fields())),
                    ])
                    .require(&["metadata", "spec"]),
                ),
                ("paused", boolean()),
            ])
            .require(&["selector", "template"]),
        ),
        (
            "status",
            object([
                ("conditions", conditions()),
                ("collisionCount", integer()),
                ("templateHash", string()),
                ("revision", integer()),
                ("controllerOf", atomic_list(controlled_object_reference())),
            ]),
        ),
    ])
}

/// `ObjectSet`: the template spec inlined, with lifecycle state, previous revisions and
/// revision.
pub fn object_set() -> Node {
    envelope([
        (
            "spec",
            object_with(
                template_spec_fields(),
                [
                    (
                        "lifecycleState",
                        string()
                            .one_of(&["Active", "Paused", "Archived"])
                            .default(json!("Active")),
                    ),
                    (
                        "previous",
                        atomic_list(object([("name", string())]).require(&["name"])),
                    ),
                    ("revision", integer()),
                ],
            ),
        ),
        (
            "status",
            object([
                ("conditions", conditions()),
                ("revision", integer()),
                (
                    "remotePhases",
                    atomic_list(
                        object([("name", string()), ("uid", string())]).require(&["name", "uid"]),
                    ),
                ),
                ("controllerOf", atomic_list(controlled_object_reference())),
            ]),
        ),
    ])
}

/// `ObjectSetPhase`: one phase delegated to a phase class's controller.
pub fn object_set_phase() -> Node {
    envelope([
        (
            "spec",
            object([
                ("paused", boolean()),
                ("revision", integer()),
                (
                    "previous",
                    atomic_list(object([("name", string())]).require(&["name"])).max_items(32),
                ),
                ("availabilityProbes", availability_probes().max_items(32)),
                ("objects", atomic_list(phase_object()).max_items(32)),
            ])
            .require(&["objects", "revision"]),
        ),
        (
            "status",
            object([
                ("conditions", conditions()),
                ("controllerOf", atomic_list(controlled_object_reference())),
            ]),
        ),
    ])
}

/// `Package`.
pub fn package() -> Node {
    envelope([
        (
            "spec",
            object([
                ("image", string()),
                ("config", any()),
                ("component", string()),
                ("paused", boolean()),
            ])
            .require(&["image"]),
        ),
        (
            "status",
            object([
                ("conditions", conditions()),
                ("unpackedHash", string()),
                ("revision", integer()),
            ]),
        ),
    ])
}
