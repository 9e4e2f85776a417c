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
use hypersaga_bus::subjects::cluster_key;
use hypersaga_model::record::StepState;
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
        record.resources = saga.resources();
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
