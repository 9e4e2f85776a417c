//! Keeps the user-facing cluster record in step with its current operation, so `GetCluster`
//! is one read and `WatchCluster` one KV watch. Idempotent and monotonic: a snapshot older than
//! the stored one (by saga journal sequence) is never written.

use async_nats::jetstream::kv;
use hypersaga_bus::subjects::cluster_key;
use hypersaga_model::ClusterRecord;
use hypersaga_model::record::StepState;
use hypersaga_saga::Saga;

use crate::{Error, Result};

pub async fn update_cluster(clusters: &kv::Store, saga: &Saga) -> Result<()> {
    let key = cluster_key(&saga.tenant, &saga.cluster);
    for _ in 0..16 {
        let entry = match clusters
            .entry(&key)
            .await
            .map_err(|e| Error::kv("read cluster", e))?
        {
            Some(e) if e.operation == kv::Operation::Put => e,
            _ => return Ok(()),
        };
        let mut record: ClusterRecord =
            serde_json::from_slice(&entry.value).map_err(|source| Error::Decode {
                key: key.clone(),
                source,
            })?;
        if record.operation.id != saga.id || record.saga_seq >= saga.seq {
            return Ok(());
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
        if clusters
            .update(&key, bytes.into(), entry.revision)
            .await
            .is_ok()
        {
            return Ok(());
        }
    }
    Err(Error::Contended { key, tries: 16 })
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
