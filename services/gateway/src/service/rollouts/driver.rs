//! Drives live rollouts: every gateway replica looks at each one regularly, follows the
//! upgrades it started, starts the current wave's next clusters, and writes the rollout back
//! by compare-and-set, so replicas racing on one rollout never both act on a stale view.
//!
//! Starting a cluster's upgrade is the same change `UpdateCluster` (or, for an add-on
//! rollout, `SetClusterAddon`) makes (`accept_change`), with a request id of the rollout, the cluster and the attempt: a replica that lost the
//! race gets the same operation back, never a second one.

use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use hypersaga_model::ClusterRecord;
use hypersaga_model::record::ErrorInfo;
use hypersaga_telemetry::TraceParent;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::record::{MemberState, RolloutRecord, RolloutState, Target, outcome};
use crate::service::Gateway;
use crate::service::day2::{self, Change};

/// How often each live rollout is looked at.
const TICK: Duration = Duration::from_millis(500);

/// Drives every live rollout until `shutdown`.
pub async fn run(gateway: Gateway, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(TICK) => {}
        }
        if let Err(e) = pass(&gateway).await {
            warn!(error = %e, "driving rollouts failed; again shortly");
        }
    }
}

/// One look at every live rollout.
async fn pass(gateway: &Gateway) -> Result<(), String> {
    let keys: Vec<String> = gateway
        .rollouts
        .keys()
        .await
        .map_err(|e| e.to_string())?
        .filter_map(|k| async { k.ok() })
        .collect()
        .await;
    for key in keys {
        let Some((record, revision)) = super::load_key(&gateway.rollouts, &key).await? else {
            continue;
        };
        // A rollout that ended still follows the upgrades it had started, until they end.
        if !record.state.is_live() && record.upgrading() == 0 {
            continue;
        }
        let mut next = record.clone();
        advance(gateway, &mut next).await;
        if next != record {
            match gateway
                .rollouts
                .update(&key, super::encode(&next)?.into(), revision)
                .await
            {
                Ok(_) => {
                    if next.state != record.state {
                        info!(rollout = %next.id, tenant = %next.tenant, state = ?next.state, message = %next.message, "rollout changed");
                    }
                }
                // Another replica moved it first: it is looked at again next pass.
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(())
}

/// Follows the members' upgrades, then (running) starts the current wave's pending ones.
async fn advance(gateway: &Gateway, r: &mut RolloutRecord) {
    let now = OffsetDateTime::now_utc();
    for m in r
        .members
        .iter_mut()
        .filter(|m| m.state == MemberState::Upgrading)
    {
        let Some(op) = m.operation.clone() else {
            continue;
        };
        match gateway.cluster_of(&r.tenant, &m.name).await {
            Ok(Some(rec)) if rec.operation.id == op => {
                if let Some(state) = outcome(rec.operation.state) {
                    m.state = state;
                    if state == MemberState::Failed {
                        m.error = Some(rec.error.clone().unwrap_or_else(|| ErrorInfo {
                            code: "UpgradeFailed".into(),
                            message: format!("operation {op} ended {:?}", rec.operation.state),
                            ..Default::default()
                        }));
                    }
                }
            }
            Ok(Some(rec)) => {
                m.state = MemberState::Failed;
                m.error = Some(ErrorInfo {
                    code: "Superseded".into(),
                    message: format!(
                        "the upgrade {op} gave way to {} operation {}",
                        rec.operation.kind.as_str(),
                        rec.operation.id
                    ),
                    ..Default::default()
                });
            }
            Ok(None) => {
                m.state = MemberState::Failed;
                m.error = Some(ErrorInfo {
                    code: "ClusterNotFound".into(),
                    message: "the cluster is gone".into(),
                    ..Default::default()
                });
            }
            Err(e) => {
                warn!(rollout = %r.id, cluster = %m.name, error = %e, "cannot read a rollout's cluster")
            }
        }
    }
    if r.state == RolloutState::Running
        && !r.members.iter().any(|m| m.state == MemberState::Failed)
        && let Some(wave) = r.current_wave()
    {
        let Some(tenant) = gateway.tenants.get(&r.tenant) else {
            r.state = RolloutState::Cancelled;
            r.ended_at = Some(now);
            r.message = format!("cancelled: tenant {} was removed", r.tenant);
            return;
        };
        if tenant.suspended.is_some() {
            // A suspended tenant's rollout starts nothing new; it goes on once resumed.
            r.settle(now);
            return;
        }
        let id = r.id.clone();
        let target_record = r.clone();
        let target = target_record.target();
        for m in r
            .members
            .iter_mut()
            .filter(|m| m.wave == wave && m.state == MemberState::Pending)
        {
            if let Ok(Some(rec)) = gateway.cluster_of(&r.tenant, &m.name).await
                && target.reached(&rec)
                && rec.operation.state == hypersaga_model::record::OperationState::Succeeded
            {
                // Already there (its last operation brought it there): nothing to do.
                m.state = MemberState::Succeeded;
                continue;
            }
            let request_id = format!("{id}-{}-{}", m.name, m.attempts + 1);
            let apply = |rec: &ClusterRecord| match target {
                Target::Release(image) => day2::upgraded_spec(rec, image),
                Target::Addon(addon) => {
                    crate::service::addons::with_addon_set(rec, target.kind(), addon)
                }
            };
            let change = Change {
                cluster: &m.name,
                kind: target.kind(),
                node_pool: None,
                addon: match target {
                    Target::Addon(a) => Some(a.name.clone()),
                    Target::Release(_) => None,
                },
                request_id: Some(request_id),
                etag: None,
                trace_id: TraceParent::new_root().trace_id(),
                validate_only: false,
                apply: &apply,
            };
            match gateway.accept_change(&tenant.config, change).await {
                Ok(op) => {
                    m.state = MemberState::Upgrading;
                    m.operation = Some(op.id);
                    m.attempts += 1;
                }
                // Another operation runs on it: started once it ends.
                Err(s) if reason(&s).as_deref() == Some("OperationRunning") => {}
                // The bus, a lost race or the tenant's quota of operations: again next pass.
                Err(s)
                    if matches!(
                        s.code(),
                        tonic::Code::Unavailable
                            | tonic::Code::Aborted
                            | tonic::Code::ResourceExhausted
                    ) => {}
                Err(s) => {
                    m.state = MemberState::Failed;
                    m.error = Some(ErrorInfo {
                        code: format!("{:?}", s.code()),
                        message: s.message().to_owned(),
                        ..Default::default()
                    });
                }
            }
        }
    }
    r.settle(now);
    if !r.state.is_live() {
        r.message = r.describe();
    }
}

/// The `ErrorInfo` reason of a refusal, if it carries one.
fn reason(s: &tonic::Status) -> Option<String> {
    use tonic_types::StatusExt;
    s.get_details_error_info().map(|i| i.reason)
}
