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
