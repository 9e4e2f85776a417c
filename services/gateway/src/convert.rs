//! Wire types ↔ domain types, at the boundary only.

use hypersaga_api::v1 as pb;
use hypersaga_model::record::{
    OperationKind, OperationState, OperationView, StepState, StepView, VersionEntry,
};
use hypersaga_model::validate::FieldViolation;
use hypersaga_model::{
    AddonRef, AddonScope, Autoscaling, ClusterPhase, ClusterRecord, ClusterSpec, ErrorInfo,
    NetworkSpec, NodePoolSpec, OsDisk, Taint, UpgradeType,
};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

fn opt(s: String) -> Option<String> {
    let s = s.trim().to_owned();
    if s.is_empty() { None } else { Some(s) }
}

/// The domain spec of a request; what the wire lets through but the domain cannot hold (a
/// pool's replicas together with autoscaling) is a violation. Add-ons are left out: the
/// gateway resolves them against the catalog (`service::addons`).
pub fn spec_from_pb(s: pb::ClusterSpec, v: &mut Vec<FieldViolation>) -> ClusterSpec {
    let n = s.network.unwrap_or_default();
    ClusterSpec {
        location: s.location.trim().to_owned(),
        base_domain: s.base_domain.trim().to_owned(),
        release_image: s.release_image.trim().to_owned(),
        node_pools: s
            .node_pools
            .into_iter()
            .enumerate()
            .map(|(i, p)| pool_from_pb(p, &format!("spec.node_pools[{i}]"), v))
            .collect(),
        network: NetworkSpec {
            vnet_cidr: opt(n.vnet_cidr),
            subnet_cidr: opt(n.subnet_cidr),
            vnet_id: opt(n.vnet_id),
            subnet_id: opt(n.subnet_id),
            nsg_id: opt(n.nsg_id),
        },
        addons: Vec::new(),
    }
}

/// A scope as the wire says it; `None` when unspecified.
pub fn scope_from_pb(scope: i32) -> Option<AddonScope> {
    match pb::AddonScope::try_from(scope).unwrap_or_default() {
        pb::AddonScope::Unspecified => None,
        pb::AddonScope::Tenant => Some(AddonScope::Tenant),
        pb::AddonScope::Platform => Some(AddonScope::Platform),
    }
}

pub fn scope_to_pb(scope: AddonScope) -> pb::AddonScope {
    match scope {
        AddonScope::Tenant => pb::AddonScope::Tenant,
        AddonScope::Platform => pb::AddonScope::Platform,
    }
}

pub fn addon_ref_to_pb(a: &AddonRef) -> pb::ClusterAddon {
    pb::ClusterAddon {
        name: a.name.clone(),
        version: a.version.clone(),
        scope: scope_to_pb(a.scope) as i32,
    }
}

/// A pool of a request, at field path `at`. Defaults are applied here (the OS disk's); the
/// release stays empty when not given (the caller gives it the control plane's).
pub fn pool_from_pb(p: pb::NodePoolSpec, at: &str, v: &mut Vec<FieldViolation>) -> NodePoolSpec {
    if p.replicas.is_some() && p.autoscaling.is_some() {
        v.push(FieldViolation::new(
            format!("{at}.replicas"),
            "cannot be set together with autoscaling: the autoscaler sets the count",
        ));
    }
    let disk = p.os_disk.unwrap_or_default();
    let defaults = OsDisk::default();
    NodePoolSpec {
        name: p.name.trim().to_owned(),
        replicas: if p.autoscaling.is_some() {
            0
        } else {
            p.replicas.unwrap_or_default()
        },
        vm_size: p.vm_size.trim().to_owned(),
        autoscaling: p.autoscaling.map(|a| Autoscaling {
            min: a.min,
            max: a.max,
        }),
        release_image: p.release_image.trim().to_owned(),
        os_disk: OsDisk {
            size_gib: if disk.size_gib == 0 {
                defaults.size_gib
            } else {
                disk.size_gib
            },
            storage_account_type: opt(disk.storage_account_type)
                .unwrap_or(defaults.storage_account_type),
        },
        availability_zone: opt(p.availability_zone),
        subnet_id: opt(p.subnet_id),
        labels: p.labels.into_iter().collect(),
        taints: p
            .taints
            .into_iter()
            .map(|t| Taint {
                key: t.key,
                value: t.value,
                effect: t.effect,
            })
            .collect(),
        upgrade_type: match pb::UpgradeType::try_from(p.upgrade_type) {
            Ok(pb::UpgradeType::InPlace) => UpgradeType::InPlace,
            _ => UpgradeType::Replace,
        },
        node_drain_timeout_minutes: p.node_drain_timeout_minutes,
    }
}

pub fn pool_to_pb(p: &NodePoolSpec) -> pb::NodePoolSpec {
    pb::NodePoolSpec {
        name: p.name.clone(),
        replicas: p.autoscaling.is_none().then_some(p.replicas),
        vm_size: p.vm_size.clone(),
        autoscaling: p.autoscaling.map(|a| pb::Autoscaling {
            min: a.min,
            max: a.max,
        }),
        release_image: p.release_image.clone(),
        os_disk: Some(pb::OsDisk {
            size_gib: p.os_disk.size_gib,
            storage_account_type: p.os_disk.storage_account_type.clone(),
        }),
        availability_zone: p.availability_zone.clone().unwrap_or_default(),
        subnet_id: p.subnet_id.clone().unwrap_or_default(),
        labels: p.labels.clone().into_iter().collect(),
        taints: p
            .taints
            .iter()
            .map(|t| pb::Taint {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
            })
            .collect(),
        upgrade_type: match p.upgrade_type {
            UpgradeType::Replace => pb::UpgradeType::Replace,
            UpgradeType::InPlace => pb::UpgradeType::InPlace,
        } as i32,
        node_drain_timeout_minutes: p.node_drain_timeout_minutes,
    }
}

pub fn spec_to_pb(s: &ClusterSpec) -> pb::ClusterSpec {
    pb::ClusterSpec {
        location: s.location.clone(),
        base_domain: s.base_domain.clone(),
        release_image: s.release_image.clone(),
        node_pools: s.node_pools.iter().map(pool_to_pb).collect(),
        network: Some(pb::NetworkSpec {
            vnet_cidr: s.network.vnet_cidr().to_owned(),
            subnet_cidr: s.network.subnet_cidr().to_owned(),
            vnet_id: s.network.vnet_id.clone().unwrap_or_default(),
            subnet_id: s.network.subnet_id.clone().unwrap_or_default(),
            nsg_id: s.network.nsg_id.clone().unwrap_or_default(),
        })
        .map(|mut n| {
            if s.network.is_user_brought() {
                n.vnet_cidr.clear();
                n.subnet_cidr.clear();
            }
            n
        }),
        addons: s.addons.iter().map(addon_ref_to_pb).collect(),
    }
}

pub(crate) fn ts(t: OffsetDateTime) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.unix_timestamp(),
        nanos: t.nanosecond() as i32,
    }
}

pub fn error_to_pb(e: &ErrorInfo) -> pb::ErrorDetail {
    pb::ErrorDetail {
        code: e.code.clone(),
        message: e.message.clone(),
        target: e.target.clone().unwrap_or_default(),
        step: e.step.clone().unwrap_or_default(),
        retryable: e.retryable,
    }
}

fn step_state(s: StepState) -> pb::StepState {
    match s {
        StepState::Pending => pb::StepState::Pending,
        StepState::Running => pb::StepState::Running,
        StepState::Succeeded => pb::StepState::Succeeded,
        StepState::Failed => pb::StepState::Failed,
        StepState::Compensating => pb::StepState::Compensating,
        StepState::Compensated => pb::StepState::Compensated,
        StepState::Skipped => pb::StepState::Skipped,
        StepState::Kept => pb::StepState::Kept,
    }
}

fn step_to_pb(s: &StepView) -> pb::Step {
    pb::Step {
        id: s.id.clone(),
        service: s.service.clone(),
        state: step_state(s.state) as i32,
        attempts: s.attempts,
        last_error: s.last_error.as_ref().map(error_to_pb),
        message: s.message.clone(),
        depends_on: s.depends_on.clone(),
        start_time: s.started_at.map(ts),
        end_time: s.ended_at.map(ts),
        waiting_since: s.waiting_since.map(ts),
    }
}

pub fn op_state_to_pb(s: OperationState) -> pb::OperationState {
    match s {
        OperationState::Running => pb::OperationState::Running,
        OperationState::Compensating => pb::OperationState::Compensating,
        OperationState::Succeeded => pb::OperationState::Succeeded,
        OperationState::Failed => pb::OperationState::Failed,
        OperationState::Paused => pb::OperationState::Paused,
    }
}

pub fn operation_to_pb(o: &OperationView) -> pb::Operation {
    pb::Operation {
        id: o.id.clone(),
        cluster: o.cluster.clone(),
        kind: kind_to_pb(o.kind) as i32,
        node_pool: o.node_pool.clone().unwrap_or_default(),
        addon: o.addon.clone().unwrap_or_default(),
        state: op_state_to_pb(o.state) as i32,
        start_time: Some(ts(o.started_at)),
        end_time: o.ended_at.map(ts),
        deadline: Some(ts(o.deadline)),
        error: o.error.as_ref().map(error_to_pb),
        steps: o.steps.iter().map(step_to_pb).collect(),
        request_id: o.request_id.clone().unwrap_or_default(),
        plan: None,
        pause: o.pause.as_ref().map(|p| pb::PauseDetail {
            since: Some(ts(p.since)),
            reason: Some(error_to_pb(&p.reason)),
            steps: p.steps.clone(),
        }),
    }
}

fn phase_to_pb(p: ClusterPhase) -> pb::ClusterPhase {
    match p {
        ClusterPhase::Accepted => pb::ClusterPhase::Accepted,
        ClusterPhase::Provisioning => pb::ClusterPhase::Provisioning,
        ClusterPhase::Ready => pb::ClusterPhase::Ready,
        ClusterPhase::Compensating => pb::ClusterPhase::Compensating,
        ClusterPhase::Failed => pb::ClusterPhase::Failed,
        ClusterPhase::Deleting => pb::ClusterPhase::Deleting,
        ClusterPhase::Deleted => pb::ClusterPhase::Deleted,
        ClusterPhase::Updating => pb::ClusterPhase::Updating,
    }
}

/// `etag` is the KV revision: it changes with every change of the record.
pub fn cluster_to_pb(r: &ClusterRecord, revision: u64) -> pb::Cluster {
    pb::Cluster {
        name: r.name.clone(),
        uid: r.uid.clone(),
        labels: r.labels.clone().into_iter().collect(),
        spec: Some(spec_to_pb(&r.spec)),
        status: Some(pb::ClusterStatus {
            phase: phase_to_pb(r.phase) as i32,
            message: r.message.clone(),
            operation: Some(operation_to_pb(&r.operation)),
            infra_id: r.infra_id.clone(),
            resources: r.resources.clone().into_iter().collect(),
            error: r.error.as_ref().map(error_to_pb),
            management_cluster: r.management_cluster.clone(),
            control_plane: Some(control_plane_to_pb(r)),
            node_pools: r
                .spec
                .node_pools
                .iter()
                .map(|p| node_pool_to_pb(r, p))
                .collect(),
        }),
        create_time: Some(ts(r.created_at)),
        etag: format!("\"{revision}\""),
    }
}

/// The control plane's rolled-out version and history, as the last rollout step saw them.
/// An operation kind as the API says it.
pub(crate) fn kind_to_pb(kind: OperationKind) -> pb::OperationKind {
    match kind {
        OperationKind::Create => pb::OperationKind::Create,
        OperationKind::Delete => pb::OperationKind::Delete,
        OperationKind::UpdateCluster => pb::OperationKind::UpdateCluster,
        OperationKind::CreateNodePool => pb::OperationKind::CreateNodePool,
        OperationKind::UpdateNodePool => pb::OperationKind::UpdateNodePool,
        OperationKind::DeleteNodePool => pb::OperationKind::DeleteNodePool,
        OperationKind::AddAddon => pb::OperationKind::AddAddon,
        OperationKind::UpdateAddon => pb::OperationKind::UpdateAddon,
        OperationKind::RemoveAddon => pb::OperationKind::RemoveAddon,
        OperationKind::Sweep => pb::OperationKind::Sweep,
    }
}

fn control_plane_to_pb(r: &ClusterRecord) -> pb::ControlPlaneStatus {
    let rollout = r.owned.get("controlplane.rollout");
    let history: Vec<VersionEntry> = rollout
        .and_then(|o| o.get("history"))
        .and_then(|h| serde_json::from_value(h.clone()).ok())
        .unwrap_or_default();
    pb::ControlPlaneStatus {
        version: rollout
            .and_then(|o| o.get("version"))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned(),
        history: history
            .into_iter()
            .map(|h| pb::VersionHistoryEntry {
                version: h.version,
                image: h.image,
                state: h.state,
                start_time: h.started.as_deref().and_then(parse_ts),
                completion_time: h.completed.as_deref().and_then(parse_ts),
            })
            .collect(),
    }
}

fn parse_ts(s: &str) -> Option<prost_types::Timestamp> {
    OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(ts)
}

/// A pool as users see it: its spec, what its last step observed (ready nodes, version), and
/// what the cluster's current operation is doing to it.
pub fn node_pool_to_pb(r: &ClusterRecord, p: &NodePoolSpec) -> pb::NodePool {
    let step = format!("nodepool.{}", p.name);
    let owned = r.owned.get(&step);
    let observed = |key: &str| owned.and_then(|o| o.get(key));
    let ready = observed("ready_replicas")
        .and_then(|v| v.as_i64())
        .and_then(|v| i32::try_from(v).ok())
        .unwrap_or_default();
    let version = observed("version")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    let op = &r.operation;
    let touched =
        op.steps.iter().any(|s| s.id == step) || op.node_pool.as_deref() == Some(p.name.as_str());
    let running = touched && !op.state.is_terminal();
    let removing = matches!(
        op.kind,
        OperationKind::Delete | OperationKind::DeleteNodePool
    );
    let state = if running {
        match (removing, owned.is_some()) {
            (true, _) => "Deleting",
            (false, true) => "Updating",
            (false, false) => "Creating",
        }
    } else if touched && removing && op.state == OperationState::Succeeded {
        "Deleted"
    } else if touched && op.state == OperationState::Failed {
        "Failed"
    } else if owned.is_some() {
        "Ready"
    } else {
        // Nothing made of it yet, and nothing running on it.
        "Pending"
    };
    let status = pb::NodePoolStatus {
        state: state.to_owned(),
        desired_replicas: p
            .autoscaling
            .map_or(p.replicas, |a| ready.clamp(a.min, a.max)),
        ready_replicas: ready,
        version,
        message: op
            .steps
            .iter()
            .find(|s| s.id == step)
            .map(|s| s.message.clone())
            .unwrap_or_default(),
        operation: if touched {
            op.id.clone()
        } else {
            String::new()
        },
        error: op
            .error
            .as_ref()
            .filter(|_| touched && op.state == OperationState::Failed)
            .map(error_to_pb),
    };
    let etag = pool_etag(p);
    pb::NodePool {
        cluster: r.name.clone(),
        spec: Some(pool_to_pb(p)),
        status: Some(status),
        etag,
    }
}

/// A pool's etag: a digest of its spec, so it changes whenever the spec does (a change
/// someone else made), and neither when another pool changes nor while a rollout moves the
/// pool's status on.
pub fn pool_etag(p: &NodePoolSpec) -> String {
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(p).unwrap_or_default());
    let digest = h.finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}
