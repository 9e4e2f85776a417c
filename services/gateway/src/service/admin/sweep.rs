//! `AdminService.Sweep`: what hypersaga made that no live cluster owns, and a `sweep`
//! operation per cluster to remove it.
//!
//! The services list what they made for each tenant by the tags and labels they put on
//! everything ([`hypersaga_bus::sweep`]); the cluster records say who owns it. Removing is the
//! coordinator's, as any operation: paced, traced, audited, paused on a failure, resumable.

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::jetstream::kv;
use hypersaga_api::v1 as pb;
use hypersaga_bus::Service;
use hypersaga_bus::subjects::cluster_key;
use hypersaga_bus::sweep::{Made, SweepReply, SweepRequest};
use hypersaga_config::AdminConfig;
use hypersaga_model::record::{ClusterRecord, OperationIntent, OperationKind};
use hypersaga_model::{ClusterPhase, Names, TenantId};
use time::OffsetDateTime;
use tonic::Status;
use tracing::info;

use super::{Admin, actor_of, tenant_id};
use crate::convert::operation_to_pb;
use crate::service::plan::target_name;
use crate::service::{internal, new_operation_id};

/// How long a service may take to list what it made for one tenant (a whole subscription's
/// tagged resources, and every management cluster's labelled objects).
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why no live cluster owns a leftover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Orphaned {
    /// Its cluster was deleted.
    Deleted,
    /// Its cluster's create or delete failed, or was abandoned.
    Failed,
    /// This installation has no record of its cluster: it may be another installation's.
    NoRecord,
    /// A cluster of that name has a record, but another infra id: an earlier cluster of the
    /// name made it, or another installation's.
    OtherCluster,
}

impl Orphaned {
    fn as_str(self) -> &'static str {
        match self {
            Self::Deleted => "CLUSTER_DELETED",
            Self::Failed => "CLUSTER_FAILED",
            Self::NoRecord => "NO_RECORD",
            Self::OtherCluster => "OTHER_CLUSTER",
        }
    }

    /// Whether a sweep of the record's cluster removes it: only what that cluster made.
    fn removable(self) -> bool {
        matches!(self, Self::Deleted | Self::Failed)
    }
}

/// Why `record`'s cluster owns nothing any more, or `None` while it is live: its record is
/// deleted or failed and no operation runs on it.
fn orphaned_by(record: Option<&ClusterRecord>) -> Option<Orphaned> {
    let Some(r) = record else {
        return Some(Orphaned::NoRecord);
    };
    if !r.operation.state.is_terminal() {
        return None;
    }
    match r.phase {
        ClusterPhase::Deleted => Some(Orphaned::Deleted),
        ClusterPhase::Failed => Some(Orphaned::Failed),
        _ => None,
    }
}

/// Whether `record`'s last operation (a delete, or a sweep after one) keeps its identities on
/// purpose: they are no leftovers, however it ended.
fn kept_identities(record: Option<&ClusterRecord>) -> bool {
    record.is_some_and(|r| {
        matches!(
            r.operation.kind,
            OperationKind::Delete | OperationKind::Sweep
        ) && r
            .intent
            .as_ref()
            .is_some_and(|i| i.operation == r.operation.id && i.keep_identities)
    })
}

/// Why `made` is a leftover, or `None` while its cluster owns it.
fn leftover_because(made: &Made, record: Option<&ClusterRecord>) -> Option<Orphaned> {
    if let Some(r) = record {
        let names = Names::new(&r.tenant, &r.name, &r.infra_id, &r.spec.base_domain);
        if !made.is_of(&names) {
            return Some(Orphaned::OtherCluster);
        }
    }
    orphaned_by(record)
}

impl Admin {
    /// Lists the leftovers of one tenant or all, and (unless a dry run) starts a sweep of
    /// each leftover's cluster that has a record.
    pub(super) async fn sweep_leftovers(
        &self,
        admin: &AdminConfig,
        req: pb::SweepRequest,
        trace_id: String,
    ) -> Result<pb::SweepResponse, Status> {
        let tenants: Vec<TenantId> = if req.tenant.is_empty() {
            self.directory.ids()
        } else {
            let id = tenant_id("tenant", &req.tenant)?;
            self.served(id.as_str())?;
            vec![id]
        };
        let mut answer = pb::SweepResponse::default();
        for tenant in tenants {
            let (found, unlisted) = self.made_for(&tenant).await;
            answer.unlisted.extend(unlisted);
            let records = self.records(&tenant).await?;
            let mut to_sweep = BTreeSet::new();
            for (service, made) in found {
                let record = records.get(&made.cluster);
                let Some(why) = leftover_because(&made, record) else {
                    continue;
                };
                if why.removable() && service == Service::Identity && kept_identities(record) {
                    continue;
                }
                if why.removable() {
                    to_sweep.insert(made.cluster.clone());
                }
                answer.leftovers.push(leftover(&tenant, made, why, record));
            }
            if req.dry_run {
                continue;
            }
            // One cluster's sweep that cannot start does not keep the others from starting.
            for cluster in to_sweep {
                match self.start_sweep(admin, &tenant, &cluster, &trace_id).await {
                    Ok(Some(op)) => answer.operations.push(op),
                    Ok(None) => {}
                    Err(e) => answer.unlisted.push(format!(
                        "{tenant}/{cluster}: the sweep could not start: {}",
                        e.message()
                    )),
                }
            }
        }
        Ok(answer)
    }

    /// What every service made for `tenant`, by service, and which services did not say.
    async fn made_for(&self, tenant: &TenantId) -> (Vec<(Service, Made)>, Vec<String>) {
        let asked = Service::ALL.map(|service| async move {
            let subject = self.gateway.bus.subjects().sweep(tenant, service.as_str());
            let req = SweepRequest::new(tenant.clone(), None);
            let reply: Result<SweepReply, _> = self
                .gateway
                .ask_service(service.as_str(), subject, &req, LIST_TIMEOUT)
                .await;
            (service, reply)
        });
        let mut found = Vec::new();
        let mut unlisted = Vec::new();
        for (service, reply) in futures::future::join_all(asked).await {
            match reply {
                Ok(SweepReply {
                    error: None,
                    found: made,
                    ..
                }) => {
                    found.extend(made.into_iter().map(|m| (service, m)));
                }
                Ok(SweepReply { error: Some(e), .. }) | Err(e) => {
                    unlisted.push(format!("{tenant}/{service}: {}: {}", e.code, e.message));
                }
            }
        }
        (found, unlisted)
    }

    /// Starts a `sweep` of `cluster` (compare-and-set on its record, as every operation
    /// starts), unless it has come back to life meanwhile. Idempotent over a sweep already
    /// running: that one is answered.
    async fn start_sweep(
        &self,
        admin: &AdminConfig,
        tenant: &TenantId,
        cluster: &str,
        trace_id: &str,
    ) -> Result<Option<pb::Operation>, Status> {
        let gateway = &self.gateway;
        for _ in 0..8 {
            let Some((mut rec, revision)) = gateway.load_cluster(tenant, cluster).await? else {
                return Ok(None);
            };
            if rec.operation.kind == OperationKind::Sweep && !rec.operation.state.is_terminal() {
                return Ok(Some(operation_to_pb(&rec.operation)));
            }
            if orphaned_by(Some(&rec)).is_none() {
                return Ok(None);
            }
            let op_id = new_operation_id();
            let keep_identities = kept_identities(Some(&rec));
            let previous = std::mem::take(&mut rec.operation.id);
            rec.intent = Some(OperationIntent {
                operation: op_id.clone(),
                actor: actor_of(admin),
                trace_id: trace_id.to_owned(),
                previous_operation: Some(previous),
                supersedes: None,
                keep_identities,
            });
            rec.operation = gateway.new_operation(
                &op_id,
                cluster,
                OperationKind::Sweep,
                None,
                OffsetDateTime::now_utc(),
            );
            rec.phase = ClusterPhase::Deleting;
            rec.message = "sweeping what was left".into();
            rec.error = None;
            rec.saga_seq = 0;
            let bytes = serde_json::to_vec(&rec).map_err(internal("encode cluster"))?;
            match gateway
                .clusters
                .update(cluster_key(tenant, cluster), bytes.into(), revision)
                .await
            {
                Ok(_) => {}
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
                Err(e) => return Err(internal("write cluster")(e)),
            }
            gateway.wake(&rec).await?;
            info!(%tenant, cluster, operation = %op_id, "sweep accepted");
            return Ok(Some(operation_to_pb(&rec.operation)));
        }
        Err(Status::aborted(format!(
            "cluster {cluster:?} of tenant {tenant} kept changing; sweep again"
        )))
    }
}

fn leftover(
    tenant: &TenantId,
    made: Made,
    why: Orphaned,
    record: Option<&ClusterRecord>,
) -> pb::Leftover {
    let detail = record
        .and_then(|r| r.error.as_ref().or(r.operation.error.as_ref()))
        .map(|e| format!("{}: {}", e.code, e.message))
        .unwrap_or_default();
    pb::Leftover {
        tenant: tenant.to_string(),
        cluster: made.cluster,
        reason: why.as_str().to_owned(),
        detail,
        target: made.target.map(target_name).unwrap_or_default().to_owned(),
        r#type: made.kind,
        name: made.name,
        id: made.id,
        location: made.location,
        made_by: made.operation,
        removable: why.removable(),
    }
}

#[cfg(test)]
mod tests {
    use hypersaga_model::record::OperationState;

    use super::*;

    fn record(phase: ClusterPhase, kind: OperationKind, state: OperationState) -> ClusterRecord {
        let mut r: ClusterRecord = serde_json::from_value(serde_json::json!({
            "v": 1, "tenant": "acme", "name": "demo", "uid": "u", "infra_id": "demo-x",
            "spec": {"location": "eastus", "release_image": "quay.io/openshift-release-dev/ocp-release:4.18.0-multi",
                     "base_domain": "example.com", "node_pools": []},
            "created_at": "2026-01-01T00:00:00Z", "phase": "ready",
            "operation": {"id": "op-1", "cluster": "demo", "kind": "create", "state": "succeeded",
                          "started_at": "2026-01-01T00:00:00Z", "deadline": "2026-01-01T01:00:00Z", "steps": []}
        }))
        .expect("a record");
        r.phase = phase;
        r.operation.kind = kind;
        r.operation.state = state;
        r
    }

    #[test]
    fn only_a_deleted_or_failed_cluster_with_nothing_running_owns_nothing() {
        use ClusterPhase::*;
        use OperationKind::{Create, Delete};
        use OperationState::{Failed as Ended, Running, Succeeded};
        assert_eq!(orphaned_by(None), Some(Orphaned::NoRecord));
        assert_eq!(
            orphaned_by(Some(&record(Deleted, Delete, Succeeded))),
            Some(Orphaned::Deleted)
        );
        assert_eq!(
            orphaned_by(Some(&record(Failed, Create, Ended))),
            Some(Orphaned::Failed)
        );
        assert_eq!(orphaned_by(Some(&record(Ready, Create, Succeeded))), None);
        assert_eq!(
            orphaned_by(Some(&record(Deleting, Delete, Running))),
            None,
            "a delete runs"
        );
        assert_eq!(orphaned_by(Some(&record(Failed, Create, Running))), None);
    }

    #[test]
    fn identities_a_delete_kept_are_no_leftovers() {
        let mut r = record(
            ClusterPhase::Deleted,
            OperationKind::Delete,
            OperationState::Succeeded,
        );
        assert!(!kept_identities(Some(&r)));
        r.intent = Some(OperationIntent {
            operation: "op-1".into(),
            actor: "tenant:acme".into(),
            trace_id: "t".into(),
            previous_operation: None,
            supersedes: None,
            keep_identities: true,
        });
        assert!(kept_identities(Some(&r)));
        r.operation.kind = OperationKind::Sweep;
        assert!(kept_identities(Some(&r)), "a sweep after it keeps them too");
        if let Some(i) = r.intent.as_mut() {
            i.operation = "op-older".into();
        }
        assert!(
            !kept_identities(Some(&r)),
            "only the last delete's choice counts"
        );
    }
}
