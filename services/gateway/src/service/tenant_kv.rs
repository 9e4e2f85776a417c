//! Reading every record of one tenant from a KV bucket, and of no other tenant: the bucket's
//! stream is read by an ordered consumer filtered on the tenant's keys (`<tenant>.*`), so other
//! tenants' keys are never even listed. `ListClusters`, `ListOperations`, the quotas and
//! `GetOperation` (for an operation whose saga is not built yet) all read this way.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{DeliverPolicy, ReplayPolicy, push};
use async_nats::jetstream::kv;
use futures::StreamExt;
use hypersaga_bus::Bus;
use hypersaga_model::TenantId;
use serde::de::DeserializeOwned;
use tonic::Status;
use tracing::warn;

use super::internal;

/// Reading a tenant's records gives up (UNAVAILABLE, retryable) if no record arrives for this
/// long before all have, rather than leaving the call hanging on a failing server.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// One record, as of the end of the read.
pub(super) struct TenantRecord<T> {
    /// The KV revision (the stream sequence of the value).
    pub revision: u64,
    pub value: T,
}

/// The latest value of every key of `tenant` in `store`, by the key without the tenant
/// (`demo` for `acme.demo`). An ordered consumer says up
/// front how many records there are, which tells an empty tenant from a slow server without a
/// timeout guess; reading on until nothing is pending means a key written meanwhile is read at
/// its newest value, once. A record that does not decode is left out (and logged): one bad
/// record must not hide the others.
pub(super) async fn read<T: DeserializeOwned>(
    bus: &Bus,
    store: &kv::Store,
    tenant: &TenantId,
    what: &'static str,
) -> Result<BTreeMap<String, TenantRecord<T>>, Status> {
    read_under(bus, store, &format!("{tenant}."), "*", what).await
}

/// The latest value of every key of `store` that starts with `prefix` and continues with one
/// token (`tail` `*`) or any number (`>`), by the key without the prefix; as [`read`] does.
pub(super) async fn read_under<T: DeserializeOwned>(
    bus: &Bus,
    store: &kv::Store,
    prefix: &str,
    tail: &str,
    what: &'static str,
) -> Result<BTreeMap<String, TenantRecord<T>>, Status> {
    let key_prefix = format!("{}{prefix}", store.prefix);
    let consumer = store
        .stream
        .create_consumer(push::OrderedConfig {
            deliver_subject: bus.client().new_inbox(),
            description: Some(format!("gateway: {what}")),
            filter_subject: format!("{key_prefix}{tail}"),
            deliver_policy: DeliverPolicy::LastPerSubject,
            replay_policy: ReplayPolicy::Instant,
            ..Default::default()
        })
        .await
        .map_err(internal(what))?;
    let mut records = BTreeMap::new();
    if consumer.cached_info().num_pending == 0 {
        return Ok(records);
    }
    let mut messages = consumer.messages().await.map_err(internal(what))?;
    loop {
        let msg = match tokio::time::timeout(IDLE_TIMEOUT, messages.next()).await {
            Ok(Some(Ok(msg))) => msg,
            Ok(Some(Err(e))) => return Err(internal(what)(e)),
            Ok(None) => return Err(internal(what)("the listing ended early")),
            Err(_) => return Err(internal(what)("no record arrived in time")),
        };
        let info = msg.info().map_err(internal(what))?;
        // `pending` counts what is still to come: 0 once the newest record has arrived.
        let (pending, revision) = (info.pending, info.stream_sequence);
        if let Some(name) = msg.subject.as_str().strip_prefix(&key_prefix) {
            // Later messages are newer: a key written during the read is replaced, a key
            // deleted during it removed.
            if !is_put(msg.headers.as_ref()) {
                records.remove(name);
            } else {
                match serde_json::from_slice::<T>(&msg.payload) {
                    Ok(value) => {
                        records.insert(name.to_owned(), TenantRecord { revision, value });
                    }
                    Err(e) => {
                        records.remove(name);
                        warn!(subject = %msg.subject, error = %e, what, "unreadable record left out");
                    }
                }
            }
        }
        if pending == 0 {
            return Ok(records);
        }
    }
}

/// Whether a KV stream message holds a value rather than a delete or purge marker.
fn is_put(headers: Option<&HeaderMap>) -> bool {
    headers.is_none_or(|h| {
        h.get("KV-Operation").is_none_or(|op| op.as_str() == "PUT")
            && h.get(async_nats::header::NATS_MARKER_REASON).is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_and_purge_markers_are_not_values() {
        assert!(is_put(None));
        let mut h = HeaderMap::new();
        h.insert("KV-Operation", "DEL");
        assert!(!is_put(Some(&h)));
        let mut h = HeaderMap::new();
        h.insert("KV-Operation", "PUT");
        assert!(is_put(Some(&h)));
        let mut h = HeaderMap::new();
        h.insert(async_nats::header::NATS_MARKER_REASON, "MaxAge");
        assert!(!is_put(Some(&h)));
    }
}
