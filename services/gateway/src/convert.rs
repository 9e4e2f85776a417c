//! Wire types ↔ domain types, at the boundary only.

use hypersaga_api::v1 as pb;
use hypersaga_model::record::{OperationKind, OperationState, OperationView, StepState, StepView};
use hypersaga_model::{
    ClusterPhase, ClusterRecord, ClusterSpec, ErrorInfo, NetworkSpec, NodePoolSpec,
};
use time::OffsetDateTime;

fn opt(s: String) -> Option<String> {
    let s = s.trim().to_owned();
    if s.is_empty() { None } else { Some(s) }
}

pub fn spec_from_pb(s: pb::ClusterSpec) -> ClusterSpec {
    let n = s.network.unwrap_or_default();
    ClusterSpec {
        location: s.location.trim().to_owned(),
        base_domain: s.base_domain.trim().to_owned(),
        release_image: s.release_image.trim().to_owned(),
        node_pools: s
            .node_pools
            .into_iter()
            .map(|p| NodePoolSpec {
                name: p.name.trim().to_owned(),
                replicas: p.replicas,
                vm_size: p.vm_size.trim().to_owned(),
            })
            .collect(),
        network: NetworkSpec {
            vnet_cidr: opt(n.vnet_cidr),
            subnet_cidr: opt(n.subnet_cidr),
            vnet_id: opt(n.vnet_id),
            subnet_id: opt(n.subnet_id),
            nsg_id: opt(n.nsg_id),
        },
    }
}

pub fn spec_to_pb(s: &ClusterSpec) -> pb::ClusterSpec {
    pb::ClusterSpec {
        location: s.location.clone(),
        base_domain: s.base_domain.clone(),
        release_image: s.release_image.clone(),
        node_pools: s
            .node_pools
            .iter()
            .map(|p| pb::NodePoolSpec {
                name: p.name.clone(),
                replicas: p.replicas,
                vm_size: p.vm_size.clone(),
            })
            .collect(),
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
    }
}

fn ts(t: OffsetDateTime) -> prost_types::Timestamp {
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
        kind: match o.kind {
            OperationKind::Create => pb::OperationKind::Create,
            OperationKind::Delete => pb::OperationKind::Delete,
        } as i32,
        state: op_state_to_pb(o.state) as i32,
        start_time: Some(ts(o.started_at)),
        end_time: o.ended_at.map(ts),
        deadline: Some(ts(o.deadline)),
        error: o.error.as_ref().map(error_to_pb),
        steps: o.steps.iter().map(step_to_pb).collect(),
        request_id: o.request_id.clone().unwrap_or_default(),
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
    }
}

/// `etag` is the KV revision: it changes with every change of the record.
pub fn cluster_to_pb(r: &ClusterRecord, revision: u64) -> pb::Cluster {
    pb::Cluster {
        name: r.name.clone(),
        uid: r.uid.clone(),
        spec: Some(spec_to_pb(&r.spec)),
        status: Some(pb::ClusterStatus {
            phase: phase_to_pb(r.phase) as i32,
            message: r.message.clone(),
            operation: Some(operation_to_pb(&r.operation)),
            infra_id: r.infra_id.clone(),
            resources: r.resources.clone().into_iter().collect(),
            error: r.error.as_ref().map(error_to_pb),
            management_cluster: r.management_cluster.clone(),
        }),
        create_time: Some(ts(r.created_at)),
        etag: format!("\"{revision}\""),
    }
}
