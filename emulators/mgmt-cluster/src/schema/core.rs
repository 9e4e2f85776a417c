//! The built-in kinds the emulator serves, from `k8s.io/api/core/v1/types.go`.

use super::Node;
use super::builder::*;
use super::meta::envelope;

/// `Namespace`: `spec.finalizers` (atomic), `status.phase` and `status.conditions`
/// (`+listType=map`, `+listMapKey=type`).
pub fn namespace() -> Node {
    envelope([
        ("spec", object([("finalizers", atomic_list(string()))])),
        (
            "status",
            object([
                ("phase", string()),
                (
                    "conditions",
                    map_list(
                        object([
                            ("type", string()),
                            ("status", string()),
                            ("lastTransitionTime", string()),
                            ("reason", string()),
                            ("message", string()),
                        ])
                        .require(&["type", "status"]),
                        &["type"],
                    ),
                ),
            ]),
        ),
    ])
}

/// `Secret`: `data` and `stringData` are string maps (granular), `type`, `immutable`.
pub fn secret() -> Node {
    envelope([
        ("data", map_of(string())),
        ("stringData", map_of(string())),
        ("type", string()),
        ("immutable", boolean()),
    ])
}

/// `ConfigMap`.
pub fn config_map() -> Node {
    envelope([
        ("data", map_of(string())),
        ("binaryData", map_of(string())),
        ("immutable", boolean()),
    ])
}

/// `ObjectReference` (`+structType=atomic`).
fn object_reference() -> Node {
    object([
        ("apiVersion", string()),
        ("fieldPath", string()),
        ("kind", string()),
        ("name", string()),
        ("namespace", string()),
        ("resourceVersion", string()),
        ("uid", string()),
    ])
    .atomic()
}

/// core/v1 `Event`. Its timestamps are `metav1.Time`/`MicroTime`, which serialize a zero
/// time as `null` — so `null` is kept, as the real server returns it. Built-in kinds are
/// checked by Go code, not by `required` in their OpenAPI, so nothing is required here
/// (see [`crate::events::validate`]).
pub fn event() -> Node {
    envelope([
        ("action", string()),
        ("count", integer()),
        ("eventTime", string().nullable()),
        ("firstTimestamp", string().nullable()),
        ("involvedObject", object_reference()),
        ("lastTimestamp", string().nullable()),
        ("message", string()),
        ("reason", string()),
        ("related", object_reference()),
        ("reportingComponent", string()),
        ("reportingInstance", string()),
        (
            "series",
            object([
                ("count", integer()),
                ("lastObservedTime", string().nullable()),
            ]),
        ),
        (
            "source",
            object([("component", string()), ("host", string())]),
        ),
        ("type", string()),
    ])
}
