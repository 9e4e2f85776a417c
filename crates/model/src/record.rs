//! The records users read: a cluster (spec + status) and a view of its current operation.
//! The gateway writes a cluster record when it accepts an operation (its only write); the
//! coordinator builds the operation's saga from it and keeps it up to date after every saga
//! transition, so `GetCluster` is one read and `WatchCluster` is one KV watch.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::spec::ClusterSpec;
use crate::tenant::TenantId;

/// Schema version of [`ClusterRecord`].
pub const CLUSTER_RECORD_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterPhase {
    Accepted,
    Provisioning,
    Ready,
    Compensating,
    Failed,
    Deleting,
    Deleted,
    /// A day-2 operation (an upgrade, a node pool's create, update or delete) is running;
    /// the cluster serves meanwhile.
    Updating,
}

impl ClusterPhase {
    /// Phases in which nothing more happens until a user acts.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Ready | Self::Failed | Self::Deleted)
    }
}

/// An error as users see it: Azure's code, message and target where Azure answered, and the
/// saga step it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default)]
    pub retryable: bool,
}

/// What an operation does. What each kind means to the engine (its plan, which way it runs,
/// what a failure undoes) is in `hypersaga_saga::kinds`, one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    Create,
    Delete,
    /// A change of the cluster's own spec: today its release (a control-plane upgrade).
    UpdateCluster,
    CreateNodePool,
    /// A scale, an autoscaling change, an upgrade or a label, taint or drain change.
    UpdateNodePool,
    DeleteNodePool,
    /// An add-on the cluster did not carry, rolled out.
    AddAddon,
    /// An add-on the cluster carries, moved to another version.
    UpdateAddon,
    /// An add-on removed from the cluster, its objects with it.
    RemoveAddon,
    /// What a cluster no live record owns left behind (tagged in Azure, labelled on a
    /// management cluster), deleted: the sweeper's.
    Sweep,
}

impl OperationKind {
    pub const ALL: [Self; 10] = [
        Self::Create,
        Self::Delete,
        Self::UpdateCluster,
        Self::CreateNodePool,
        Self::UpdateNodePool,
        Self::DeleteNodePool,
        Self::AddAddon,
        Self::UpdateAddon,
        Self::RemoveAddon,
        Self::Sweep,
    ];

    /// The kind's wire name (`update_node_pool`), as records and metrics say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Delete => "delete",
            Self::UpdateCluster => "update_cluster",
            Self::CreateNodePool => "create_node_pool",
            Self::UpdateNodePool => "update_node_pool",
            Self::DeleteNodePool => "delete_node_pool",
            Self::AddAddon => "add_addon",
            Self::UpdateAddon => "update_addon",
            Self::RemoveAddon => "remove_addon",
            Self::Sweep => "sweep",
        }
    }

    /// Whether the operation acts on one node pool (named in [`OperationView::node_pool`]).
    pub fn is_node_pool(self) -> bool {
        matches!(
            self,
            Self::CreateNodePool | Self::UpdateNodePool | Self::DeleteNodePool
        )
    }

    /// Whether the operation acts on one add-on (named in [`OperationView::addon`]).
    pub fn is_addon(self) -> bool {
        matches!(self, Self::AddAddon | Self::UpdateAddon | Self::RemoveAddon)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationState {
    Running,
    Compensating,
    Succeeded,
    Failed,
    /// Stopped with a reason, waiting for an operator (resume, retry a step, compensate,
    /// abandon). Only ever a view: the saga keeps whether it was going forward or backward.
    Paused,
}

impl OperationState {
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    Pending,
    Running,
    Succeeded,
    Failed,
    Compensating,
    Compensated,
    Skipped,
    Kept,
}

/// One step of an operation, as shown to users.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepView {
    pub id: String,
    pub service: String,
    pub state: StepState,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<ErrorInfo>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    /// Since when the step has been waiting on something outside (an ARM operation, the
    /// HostedCluster): `message` says on what. No worker is busy with it meanwhile.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub waiting_since: Option<OffsetDateTime>,
}

/// An operation (one saga), as shown to users.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationView {
    pub id: String,
    pub cluster: String,
    pub kind: OperationKind,
    pub state: OperationState,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    pub steps: Vec<StepView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Why the operation is paused, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<PauseView>,
    /// The node pool a node-pool operation acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
    /// The add-on an add-on operation acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon: Option<String>,
}

/// Why an operation stopped and waits for an operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseView {
    #[serde(with = "time::serde::rfc3339")]
    pub since: OffsetDateTime,
    /// The failure that paused it, with the step it came from.
    pub reason: ErrorInfo,
    /// The steps waiting for an operator.
    pub steps: Vec<String>,
}

/// A cluster as stored in KV `hcp_clusters` under `<tenant>.<name>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterRecord {
    pub v: u32,
    pub tenant: TenantId,
    pub name: String,
    pub uid: String,
    pub infra_id: String,
    pub spec: ClusterSpec,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_request_id: Option<String>,
    pub phase: ClusterPhase,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// The operation running now, or the last one.
    pub operation: OperationView,
    /// What was created: ARM ids and Kubernetes references, by role (e.g. `vnet`, and
    /// `node_pool/<pool>` for each pool).
    #[serde(default)]
    pub resources: BTreeMap<String, String>,
    /// What the cluster's operations made and that still exists: each step's outputs, by
    /// step id. The coordinator writes it as steps succeed or are undone; every later
    /// operation starts from it (an upgrade needs the identities and the subnet the create
    /// made; a delete, everything).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub owned: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// The saga journal sequence this snapshot reflects; older snapshots never overwrite newer.
    #[serde(default)]
    pub saga_seq: u64,
    /// The management cluster this cluster's control plane lives on, chosen at create
    /// (`hypersaga-placement`) and followed by every later operation.
    #[serde(default = "default_management_cluster")]
    pub management_cluster: String,
    /// What the coordinator needs, beyond the rest of this record, to build the saga of the
    /// operation the gateway accepted (`operation`). Kept after the saga is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<OperationIntent>,
    /// The owner's labels, for rollouts to select clusters by.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// One rollout of a release on the control plane, as HyperShift's `status.version.history`
/// records it (newest first).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionEntry {
    pub version: String,
    pub image: String,
    /// `Completed` or `Partial`.
    pub state: String,
    /// RFC 3339, as HyperShift writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<String>,
}

/// IDs of what exists, by role, from steps' outputs (step id, outputs): every `<role>_id`
/// output. A node pool's roles carry its name (`node_pool/workers`), so pools do not hide
/// each other.
pub fn resources_of<'a>(
    outputs: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, serde_json::Value>)>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (step, outputs) in outputs {
        // Steps of one of several (a pool, an add-on) name theirs after it.
        let one_of = step
            .strip_prefix("nodepool.")
            .or_else(|| step.strip_prefix("controlplane.addon."));
        for (k, v) in outputs {
            if let (Some(role), Some(v)) = (k.strip_suffix("_id"), v.as_str()) {
                let role = match one_of {
                    Some(name) => format!("{role}/{name}"),
                    None => role.to_owned(),
                };
                out.insert(role, v.to_owned());
            }
        }
    }
    out
}

/// Who asked for an operation, and how to trace it. The gateway writes it into the cluster
/// record together with the operation (one compare-and-set, and nothing else); the coordinator
/// builds the saga from the record (kind, request id, start and deadline are in
/// [`ClusterRecord::operation`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationIntent {
    /// The operation this is for: the record's `operation.id` when it was accepted.
    pub operation: String,
    /// The authenticated principal, e.g. `tenant:acme`.
    pub actor: String,
    /// W3C trace id shared by every message of the operation.
    pub trace_id: String,
    /// The cluster's operation before this one. A delete of a cluster whose record has no
    /// [`ClusterRecord::owned`] (written before it existed) carries over its outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_operation: Option<String>,
    /// An operation still running that this delete supersedes: it stops at its next safe
    /// point, and the delete starts once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// A delete that leaves the cluster's workload identities (and their federated
    /// credentials) in place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_identities: bool,
}

/// The name of the only management cluster until placement exists.
pub const DEFAULT_MANAGEMENT_CLUSTER: &str = "default";

fn default_management_cluster() -> String {
    DEFAULT_MANAGEMENT_CLUSTER.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_of_pools_and_add_ons_are_named_after_them() {
        let outputs = |k: &str, v: &str| BTreeMap::from([(k.to_owned(), json!(v))]);
        let owned = BTreeMap::from([
            ("network.vnet".to_owned(), outputs("vnet_id", "/v")),
            ("nodepool.gpu".to_owned(), outputs("node_pool_id", "np/gpu")),
            (
                "controlplane.addon.logging".to_owned(),
                outputs("object_deployment_id", "od/logging"),
            ),
            (
                "controlplane.addon.metrics".to_owned(),
                outputs("object_deployment_id", "od/metrics"),
            ),
        ]);
        let r = resources_of(owned.iter().map(|(k, v)| (k.as_str(), v)));
        assert_eq!(r["vnet"], "/v");
        assert_eq!(r["node_pool/gpu"], "np/gpu");
        assert_eq!(r["object_deployment/logging"], "od/logging");
        assert_eq!(r["object_deployment/metrics"], "od/metrics");
    }
}
