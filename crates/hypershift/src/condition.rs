//! `metav1.Condition`, the shape of every HyperShift status condition.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One status condition (`metav1.Condition`). `lastTransitionTime` is kept as the RFC 3339
/// string the API server sends, so the type needs no time crate and round-trips exactly.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The three values of `Condition::status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl Condition {
    /// The parsed status; anything unexpected counts as `Unknown`.
    pub fn status(&self) -> ConditionStatus {
        match self.status.as_str() {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        }
    }

    /// Whether the condition is `True`.
    pub fn is_true(&self) -> bool {
        self.status() == ConditionStatus::True
    }
}

/// Well-known condition types.
pub mod conditions {
    pub const AVAILABLE: &str = "Available";
    pub const PROGRESSING: &str = "Progressing";
    pub const DEGRADED: &str = "Degraded";
    pub const READY: &str = "Ready";
    pub const ALL_MACHINES_READY: &str = "AllMachinesReady";
    pub const ALL_NODES_HEALTHY: &str = "AllNodesHealthy";
    /// A NodePool's release is one HyperShift takes (`False`: it does not roll the pool).
    pub const VALID_RELEASE_IMAGE: &str = "ValidReleaseImage";
    /// A NodePool's version rollout; `False` with reason [`INPLACE_UPGRADE_FAILED`] when an
    /// in-place upgrade cannot go on.
    pub const UPDATING_VERSION: &str = "UpdatingVersion";
    pub const INPLACE_UPGRADE_FAILED: &str = "InplaceUpgradeFailed";
}

/// Finds the condition of `type_` in a list.
pub(crate) fn find<'a>(list: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    list.iter().find(|c| c.type_ == type_)
}
