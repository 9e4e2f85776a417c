//! `WatchCluster`'s stream: one cluster record followed through the bus, surviving a bus that
//! goes away for a while.
//!
//! A KV watch is an ordered consumer. When JetStream has no quorum for longer than its idle
//! heartbeat (a partition, two of three servers restarting), it reports a missed heartbeat;
//! it can also end, or fail to recreate its consumer. Passed on, that ends the gRPC stream,
//! and the caller would have to know to watch again. Instead the stream starts a new watch
//! after the last revision it sent, so the caller sees every change once and no error, and is
//! only told to watch again (`UNAVAILABLE`) when the bus stays out of reach for
//! [`RESUME_FOR`].

use std::time::Duration;

use async_nats::jetstream::kv;
use backon::Retryable as _;
use futures::StreamExt;
use hypersaga_api::v1 as pb;
use hypersaga_model::ClusterRecord;
use tokio::sync::mpsc;
use tonic::Status;
use tracing::{info, warn};

use crate::convert::cluster_to_pb;

/// How long a broken watch is retried before the caller is told to watch again: longer than
/// a NATS cluster takes to elect new stream and consumer leaders.
const RESUME_FOR: Duration = Duration::from_secs(60);

/// Sends every state of the record at `key` from `watch` on, until a terminal phase, the
/// record's removal, or the caller going away.
pub(super) async fn follow(
    clusters: kv::Store,
    key: String,
    mut watch: kv::Watch,
    tx: mpsc::Sender<Result<pb::Cluster, Status>>,
) {
    // The last revision sent: a resumed watch starts after it.
    let mut sent: Option<u64> = None;
    loop {
        let entry = tokio::select! {
            _ = tx.closed() => return,
            e = watch.next() => e,
        };
        let entry = match entry {
            Some(Ok(e)) => e,
            broken => {
                let why = match broken {
                    Some(Err(e)) => e.to_string(),
                    _ => "the watch ended".to_owned(),
                };
                warn!(key = %key, error = %why, "cluster watch broken; resuming");
                let resumed = tokio::select! {
                    _ = tx.closed() => return,
                    w = resume(&clusters, &key, sent) => w,
                };
                match resumed {
                    Ok(w) => {
                        info!(key = %key, after = ?sent, "cluster watch resumed");
                        watch = w;
                        continue;
                    }
                    Err(e) => {
                        let _ = tx
                            .send(Err(Status::unavailable(format!(
                                "watch interrupted ({why}) and not resumed within {} s: {e}; watch again",
                                RESUME_FOR.as_secs()
                            ))))
                            .await;
                        return;
                    }
                }
            }
        };
        if sent.is_some_and(|r| entry.revision <= r) {
            continue; // sent before the watch was resumed
        }
        if entry.operation != kv::Operation::Put {
            return;
        }
        let Ok(rec) = serde_json::from_slice::<ClusterRecord>(&entry.value) else {
            continue;
        };
        sent = Some(entry.revision);
        let terminal = rec.phase.is_terminal() && rec.operation.state.is_terminal();
        if tx
            .send(Ok(cluster_to_pb(&rec, entry.revision)))
            .await
            .is_err()
            || terminal
        {
            return;
        }
    }
}

/// A new watch of `key` that starts after revision `sent` (or at the current value, when
/// nothing was sent yet), retried with backoff for up to [`RESUME_FOR`].
async fn resume(
    clusters: &kv::Store,
    key: &str,
    sent: Option<u64>,
) -> Result<kv::Watch, kv::WatchError> {
    let attempt = || async move {
        match sent {
            Some(revision) => clusters.watch_from_revision(key, revision + 1).await,
            None => clusters.watch_with_history(key).await,
        }
    };
    attempt
        .retry(hypersaga_bus::settling(RESUME_FOR))
        .notify(|e, after| warn!(key, error = %e, ?after, "cluster watch not resumed yet"))
        .await
}
