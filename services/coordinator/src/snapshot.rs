//! Keeps the user-facing cluster record in step with its current operation, so `GetCluster`
//! is one read and `WatchCluster` one KV watch. Idempotent and monotonic: a snapshot older than
//! the stored one (by saga journal sequence) is never written.
//!
//! What users act on — the phase, the operation's state, its error — is written with the
//! transition that changed it. Progress alone (steps done, the phase going from `accepted` to
//! `provisioning` as the first step starts) can wait for the coordinator's catch-up, which
//! writes it at most every [`crate::cache::CLEAR_AFTER`] per cluster (the latest of it, later
//! if need be): steps that take milliseconds would otherwise cost a write each that nobody
//! could watch, and an operation that ends within that time shows its end at once.

use async_nats::jetstream::kv;
use hypersaga_bus::StepId;
use hypersaga_bus::subjects::cluster_key;
use hypersaga_model::record::{StepState, resources_of};
use hypersaga_model::{ClusterPhase, ClusterRecord};
use hypersaga_saga::Saga;

use crate::{Error, Result};

/// Whether [`update_cluster`] wrote the record or left progress for later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot {
    /// The record shows the saga as it is now (or shows a newer operation or journal entry).
    Current,
    /// The record shows all users act on; the saga's progress is not written yet.
    ProgressOwed,
}

/// Writes `saga`'s state into its cluster record. `known` is the record as this replica last
/// wrote or read it (with its revision), used instead of a read and updated to what was
/// written; a stale one costs a failed compare-and-set and a read. With `progress_may_wait`,
/// a record that already shows what users act on is left as it is.
pub async fn update_cluster(
    clusters: &kv::Store,
    saga: &Saga,
    known: &mut Option<(u64, ClusterRecord)>,
    progress_may_wait: bool,
) -> Result<Snapshot> {
    let key = cluster_key(&saga.tenant, &saga.cluster);
    for _ in 0..16 {
        let (revision, mut record, cached) = match known.take() {
            Some((revision, record)) => (revision, record, true),
            None => match read(clusters, &key).await? {
                Some((revision, record)) => (revision, record, false),
                None => return Ok(Snapshot::Current),
            },
        };
        if record.operation.id != saga.id || record.saga_seq >= saga.seq {
            if cached {
                // Judge by the bucket, not by a copy that may be behind it.
                continue;
            }
            *known = Some((revision, record));
            return Ok(Snapshot::Current);
        }
        if progress_may_wait && shows_what_users_act_on(&record, saga) {
            *known = Some((revision, record));
            return Ok(Snapshot::ProgressOwed);
        }
        record.phase = saga.cluster_phase();
        record.operation = saga.view();
        record.error = saga.error.clone();
        own(&mut record, saga);
        record.message = summary(saga);
        record.saga_seq = saga.seq;
        let bytes = serde_json::to_vec(&record).map_err(|source| Error::Decode {
            key: key.clone(),
            source,
        })?;
        if let Ok(revision) = clusters.update(&key, bytes.into(), revision).await {
            *known = Some((revision, record));
            return Ok(Snapshot::Current);
        }
    }
    Err(Error::Contended { key, tries: 16 })
}

/// What the cluster owns after `saga` (idempotent: the same saga gives the same record): its
/// steps' outputs replace or remove what the record had, the resources are listed from them,
/// and a pool this operation acts on whose undo has finished is gone from the spec too.
fn own(record: &mut ClusterRecord, saga: &Saga) {
    saga.owned_after(&mut record.owned);
    record.resources = resources_of(record.owned.iter().map(|(k, v)| (k.as_str(), v)));
    let gone = |step: StepId| {
        saga.steps
            .iter()
            .any(|s| s.id == step && s.state == StepState::Compensated)
    };
    if let Some(pool) = &saga.node_pool
        && gone(StepId::node_pool(pool.as_str()))
    {
        record.spec.node_pools.retain(|p| &p.name != pool);
    }
    if let Some(addon) = &saga.addon
        && gone(StepId::addon(addon.as_str()))
    {
        record.spec.addons.retain(|a| &a.name != addon);
    }
}

async fn read(clusters: &kv::Store, key: &str) -> Result<Option<(u64, ClusterRecord)>> {
    let Some(entry) = clusters
        .entry(key)
        .await
        .map_err(|e| Error::kv("read cluster", e))?
        .filter(|e| e.operation == kv::Operation::Put)
    else {
        return Ok(None);
    };
    let record = serde_json::from_slice(&entry.value).map_err(|source| Error::Decode {
        key: key.to_owned(),
        source,
    })?;
    Ok(Some((entry.revision, record)))
}

/// Whether `record` already shows what users act on of `saga`, so only progress would change.
fn shows_what_users_act_on(record: &ClusterRecord, saga: &Saga) -> bool {
    let phase = saga.cluster_phase();
    record.operation.id == saga.id
        && (record.phase == phase
            || (record.phase == ClusterPhase::Accepted && phase == ClusterPhase::Provisioning))
        && record.operation.state == saga.visible_state()
        && record.error == saga.error
}

/// One line for humans: where the operation is.
fn summary(saga: &Saga) -> String {
    let total = saga.steps.len();
    let done = saga
        .steps
        .iter()
        .filter(|s| {
            matches!(
                s.state,
                StepState::Succeeded
                    | StepState::Compensated
                    | StepState::Kept
                    | StepState::Skipped
            )
        })
        .count();
    let running: Vec<&str> = saga
        .steps
        .iter()
        .filter(|s| matches!(s.state, StepState::Running | StepState::Compensating))
        .map(|s| s.id.as_str())
        .collect();
    if let (Some(e), true) = (&saga.error, saga.state.is_terminal()) {
        return format!(
            "{} failed: {}: {}",
            e.step.as_deref().unwrap_or("operation"),
            e.code,
            e.message
        );
    }
    if running.is_empty() {
        format!("{done}/{total} steps done")
    } else {
        format!("{done}/{total} steps done; running {}", running.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypersaga_bus::{Outcome, StepContext, StepEvent};
    use hypersaga_model::record::OperationKind;
    use hypersaga_model::{ClusterSpec, Names, NodePoolSpec, TenantId};
    use hypersaga_saga::kinds::{self, PlanInput};
    use hypersaga_saga::{NewSaga, Retain, RetryPolicy, Timing};
    use time::{Duration, OffsetDateTime};

    fn record() -> ClusterRecord {
        let json = serde_json::json!({
            "v": 1, "tenant": "acme", "name": "demo", "uid": "u", "infra_id": "demo-x",
            "spec": {"location": "eastus", "base_domain": "example.com", "release_image": "quay.io/r:4.21.0"},
            "created_at": "2026-11-01T00:00:00Z", "phase": "ready",
            "operation": {"id": "op-1", "cluster": "demo", "kind": "create", "state": "succeeded",
                "started_at": "2026-11-01T00:00:00Z", "deadline": "2026-11-01T01:00:00Z", "steps": []},
            "owned": {"network.vnet": {"vnet_id": "/v"}},
        });
        serde_json::from_value(json).unwrap()
    }

    /// A pool create of `gpu`, added to the spec as the gateway does, run until `outcome`.
    fn pool_create(spec: &ClusterSpec, outcome: Outcome) -> Saga {
        let tenant = TenantId::new("acme").unwrap();
        let existing = Default::default();
        let input = PlanInput {
            spec,
            node_pool: Some("gpu"),
            addon: None,
            retain: Retain::default(),
            existing: &existing,
        };
        let now = OffsetDateTime::now_utc();
        let mut saga = Saga::new(
            NewSaga {
                id: "op-2".into(),
                tenant: tenant.clone(),
                cluster: "demo".into(),
                kind: OperationKind::CreateNodePool,
                plan: kinds::plan(OperationKind::CreateNodePool, input).unwrap(),
                context: StepContext {
                    cluster_uid: "u".into(),
                    names: Names::new(&tenant, "demo", "demo-x", "example.com"),
                    spec: spec.clone(),
                    outputs: Default::default(),
                    management_cluster: hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER
                        .to_owned(),
                },
                retry: RetryPolicy::default(),
                timing: Timing::default(),
                timeout: Duration::hours(1),
                request_id: None,
                actor: "tenant:acme".into(),
                trace_id: "t".into(),
                after: None,
                node_pool: Some("gpu".into()),
                addon: None,
            },
            now,
        );
        saga.advance(now);
        let cmd = saga.outbox_commands().remove(0);
        saga.apply(&StepEvent::new(&cmd, outcome), now);
        if let Some(undo) = saga
            .outbox_commands()
            .into_iter()
            .find(|c| c.fence > cmd.fence || c.action != cmd.action)
        {
            saga.apply(
                &StepEvent::new(
                    &undo,
                    Outcome::Succeeded {
                        outputs: Default::default(),
                    },
                ),
                now,
            );
        }
        saga
    }

    #[test]
    fn a_new_pool_is_owned_and_listed_by_name_and_a_failed_one_leaves_the_spec() {
        let mut rec = record();
        rec.spec
            .node_pools
            .push(NodePoolSpec::new("gpu", 3, "Standard_D8s_v5"));
        let made = Outcome::Succeeded {
            outputs: [("node_pool_id".to_owned(), serde_json::json!("np/gpu"))].into(),
        };
        let saga = pool_create(&rec.spec, made);
        let mut after = rec.clone();
        own(&mut after, &saga);
        assert_eq!(
            after.resources.get("node_pool/gpu").map(String::as_str),
            Some("np/gpu")
        );
        assert_eq!(after.resources.get("vnet").map(String::as_str), Some("/v"));
        assert!(after.spec.pool("gpu").is_some());
        let refused = Outcome::Failed {
            error: hypersaga_bus::StepError::terminal("OperationNotAllowed", "quota"),
        };
        let saga = pool_create(&rec.spec, refused);
        let mut after = rec.clone();
        own(&mut after, &saga);
        assert!(
            after.spec.pool("gpu").is_none(),
            "the pool that could not be made is gone"
        );
        assert!(!after.owned.contains_key("nodepool.gpu"));
        assert!(after.owned.contains_key("network.vnet"));
    }
}
