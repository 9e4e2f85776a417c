//! `hypersaga_operations_active`: the unfinished operations by kind and the state users see,
//! right at every scrape, on every replica.
//!
//! The active index (KV `hcp_active`) names every unfinished saga. Its value says the
//! operation's kind and visible state (`create running`): written when the saga is built and
//! whenever that state changes ([`value`]), and the key deleted when the saga ends. Every
//! replica follows the index ([`follow`]) and counts what it says, so each exports the whole
//! system's count within moments of any transition, whichever replica made it. Only the
//! changes of visible state cost a write (a step's progress does not), and a successful
//! operation none at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use hypersaga_model::record::{OperationKind, OperationState};
use hypersaga_saga::Saga;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// The kinds and states an unfinished operation can be in: every pair is exported, zeros
/// included, so a state that empties shows 0 rather than its last count.
const KINDS: [OperationKind; OperationKind::ALL.len()] = OperationKind::ALL;
const STATES: [OperationState; 3] = [
    OperationState::Running,
    OperationState::Compensating,
    OperationState::Paused,
];

/// What the active index says of `saga`: `<kind> <visible state>`.
pub(crate) fn value(saga: &Saga) -> bytes::Bytes {
    format!("{} {}", saga.kind.as_str(), label(saga.visible_state())).into()
}

/// A metric label: the snake_case name the API and the audit events use.
pub(crate) fn label(value: impl std::fmt::Debug) -> String {
    format!("{value:?}").to_lowercase()
}

/// What this replica knows of the active index, and its counts by (kind, state).
#[derive(Default)]
pub(crate) struct ActiveOps {
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// Each key's value and the revision it was written at.
    index: HashMap<String, (bytes::Bytes, u64)>,
    counts: HashMap<(String, String), u64>,
    /// Whether `index` holds the whole index as it was when the watch opened (and every change
    /// since): only then does a key missing from it, or another value, mean anything.
    caught_up: bool,
}

/// The (kind, state) an index value says; `None` for an entry written before values were
/// (empty), counted once the resync has rewritten it.
fn pair(value: &[u8]) -> Option<(String, String)> {
    let (kind, state) = std::str::from_utf8(value).ok()?.split_once(' ')?;
    Some((kind.to_owned(), state.to_owned()))
}

impl ActiveOps {
    /// Whether the index is known to say `value` of `key` already.
    #[cfg(test)]
    pub(crate) fn shows(&self, key: &str, value: &[u8]) -> bool {
        self.lock()
            .index
            .get(key)
            .is_some_and(|(v, _)| v.as_ref() == value)
    }

    /// Whether the index, followed to the present, says something else of `key` than `value`
    /// (or nothing). `false` while the watch is not caught up: a view that lags proves nothing.
    pub(crate) fn known_to_differ(&self, key: &str, value: &[u8]) -> bool {
        let known = self.lock();
        known.caught_up
            && known
                .index
                .get(key)
                .is_none_or(|(v, _)| v.as_ref() != value)
    }

    /// The revision of `key` as last seen (`None`: not seen, or taken off). An index write
    /// compares and sets against what was seen *before* the saga state it writes was read or
    /// written, so that any later write of the key (a newer state, or the retirement of a
    /// finished saga) makes it fail rather than be overwritten.
    pub(crate) fn revision(&self, key: &str) -> Option<u64> {
        self.lock().index.get(key).map(|(_, rev)| *rev)
    }

    /// Takes in this replica's own successful write of `value` at `revision`, without waiting
    /// for the watch to bring it back: its next compare-and-set of the key starts from there.
    pub(crate) fn wrote(&self, key: &str, value: bytes::Bytes, revision: u64) {
        let entry = kv::Entry {
            bucket: String::new(),
            key: key.to_owned(),
            value,
            revision,
            delta: 0,
            created: time::OffsetDateTime::now_utc(),
            operation: kv::Operation::Put,
            seen_current: true,
        };
        let export = self.lock().caught_up;
        self.apply(&entry, export);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes in one change of the index; `export` sets the gauges it moved.
    ///
    /// A change older than what is known of its key is left out: this replica's own writes
    /// are taken in before the watch brings them back (see [`ActiveOps::wrote`]).
    fn apply(&self, entry: &kv::Entry, export: bool) {
        let mut known = self.lock();
        if known
            .index
            .get(&entry.key)
            .is_some_and(|(_, rev)| *rev >= entry.revision)
        {
            return;
        }
        let old = match entry.operation {
            kv::Operation::Put => known
                .index
                .insert(entry.key.clone(), (entry.value.clone(), entry.revision)),
            kv::Operation::Delete | kv::Operation::Purge => known.index.remove(&entry.key),
        };
        let new = (entry.operation == kv::Operation::Put).then_some(&entry.value);
        let old = old.as_ref().and_then(|(v, _)| pair(v));
        let new = new.and_then(|v| pair(v));
        if old == new {
            return;
        }
        if let Some(old) = &old
            && let Some(n) = known.counts.get_mut(old)
        {
            *n = n.saturating_sub(1);
        }
        if let Some(new) = &new {
            *known.counts.entry(new.clone()).or_default() += 1;
        }
        if export {
            for (kind, state) in old.into_iter().chain(new) {
                let n = known.counts.get(&(kind.clone(), state.clone())).copied();
                gauge(kind, state, n.unwrap_or(0));
            }
        }
    }

    fn clear(&self) {
        let mut known = self.lock();
        known.index.clear();
        known.counts.clear();
        known.caught_up = false;
    }

    /// The watch broke: what is known may lag until it is open again and caught up.
    fn behind(&self) {
        self.lock().caught_up = false;
    }

    /// Sets the gauge of every (kind, state) pair; `whole`: the whole index is in.
    fn export(&self, whole: bool) {
        let mut known = self.lock();
        known.caught_up |= whole;
        for kind in KINDS.map(|k| k.as_str().to_owned()) {
            for state in STATES.map(label) {
                let n = known.counts.get(&(kind.clone(), state.clone())).copied();
                gauge(kind.clone(), state, n.unwrap_or(0));
            }
        }
    }
}

fn gauge(kind: String, state: String, n: u64) {
    metrics::gauge!("hypersaga_operations_active", "kind" => kind, "state" => state).set(n as f64);
}

/// Follows the active index until `shutdown`, keeping `ops` and the gauge up to date: from
/// what the index holds now, then each change as it is made. A watch that breaks is opened
/// again from the index as it then is.
pub(crate) async fn follow(store: kv::Store, ops: Arc<ActiveOps>, shutdown: CancellationToken) {
    ops.export(false);
    loop {
        // An index that holds nothing when the watch opens is all in at once: the watch has
        // nothing of it to bring.
        let mut stream = store.stream.clone();
        let empty = match stream.info().await {
            Ok(info) => info.state.messages == 0,
            Err(e) => {
                debug!(error = %e, "cannot read the active index's stream; trying again");
                if pause(&shutdown).await {
                    return;
                }
                continue;
            }
        };
        let mut watch = match store.watch_with_history(">").await {
            Ok(w) => w,
            Err(e) => {
                warn!(error = %e, "cannot follow the active index; trying again");
                if pause(&shutdown).await {
                    return;
                }
                continue;
            }
        };
        ops.clear();
        // Whether the index as it was when the watch opened is all in.
        let mut whole = empty;
        if whole {
            ops.export(true);
        }
        loop {
            let entry = tokio::select! {
                _ = shutdown.cancelled() => return,
                e = watch.next() => e,
            };
            match entry {
                Some(Ok(entry)) => {
                    // What the index held, exported once all of it is in; then each change.
                    ops.apply(&entry, whole);
                    if !whole && (entry.seen_current || entry.delta == 0) {
                        ops.export(true);
                        whole = true;
                    }
                }
                Some(Err(e)) => {
                    debug!(error = %e, "the watch of the active index broke; opening it again");
                    break;
                }
                None => break,
            }
        }
        ops.behind();
        if pause(&shutdown).await {
            return;
        }
    }
}

/// Waits a moment before trying again; `true` when shutting down instead.
async fn pause(shutdown: &CancellationToken) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => true,
        _ = tokio::time::sleep(Duration::from_secs(1)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: &str, operation: kv::Operation) -> kv::Entry {
        use std::sync::atomic::{AtomicU64, Ordering};
        static REVISION: AtomicU64 = AtomicU64::new(1);
        kv::Entry {
            bucket: "hcp_active".into(),
            key: key.into(),
            value: value.to_owned().into(),
            revision: REVISION.fetch_add(1, Ordering::Relaxed),
            delta: 0,
            created: time::OffsetDateTime::now_utc(),
            operation,
            seen_current: true,
        }
    }

    fn count(ops: &ActiveOps, kind: &str, state: &str) -> u64 {
        ops.lock()
            .counts
            .get(&(kind.to_owned(), state.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    #[test]
    fn counts_follow_puts_state_changes_and_deletes() {
        let ops = ActiveOps::default();
        ops.apply(
            &entry("acme.op-1", "create running", kv::Operation::Put),
            false,
        );
        ops.apply(
            &entry("acme.op-2", "create running", kv::Operation::Put),
            false,
        );
        ops.apply(
            &entry("acme.op-3", "delete running", kv::Operation::Put),
            false,
        );
        assert_eq!(count(&ops, "create", "running"), 2);
        // The same key in another state moves from one count to the other.
        ops.apply(
            &entry("acme.op-1", "create paused", kv::Operation::Put),
            false,
        );
        assert_eq!(count(&ops, "create", "running"), 1);
        assert_eq!(count(&ops, "create", "paused"), 1);
        assert!(ops.shows("acme.op-1", b"create paused"));
        // Written again unchanged: counted once.
        ops.apply(
            &entry("acme.op-1", "create paused", kv::Operation::Put),
            false,
        );
        assert_eq!(count(&ops, "create", "paused"), 1);
        ops.apply(&entry("acme.op-1", "", kv::Operation::Delete), false);
        ops.apply(&entry("acme.op-2", "", kv::Operation::Purge), false);
        assert_eq!(count(&ops, "create", "paused"), 0);
        assert_eq!(count(&ops, "create", "running"), 0);
        assert_eq!(count(&ops, "delete", "running"), 1);
        // An entry from before values (empty) is not counted until rewritten.
        ops.apply(&entry("acme.op-4", "", kv::Operation::Put), false);
        assert_eq!(ops.lock().counts.values().sum::<u64>(), 1);
        assert!(!ops.shows("acme.op-4", b"create running"));
    }

    #[test]
    fn a_write_of_its_own_is_known_at_once_and_an_older_change_then_left_out() {
        let ops = ActiveOps::default();
        let older = entry("acme.op-1", "create running", kv::Operation::Put);
        ops.wrote("acme.op-1", "create paused".into(), older.revision + 1);
        assert_eq!(ops.revision("acme.op-1"), Some(older.revision + 1));
        // The watch brings the earlier state only now: the view keeps the newer one.
        ops.apply(&older, true);
        assert!(ops.shows("acme.op-1", b"create paused"));
        assert_eq!(count(&ops, "create", "paused"), 1);
        assert_eq!(count(&ops, "create", "running"), 0);
        // A view not caught up knows of no difference; a caught-up one does.
        assert!(!ops.known_to_differ("acme.op-1", b"create running"));
        ops.export(true);
        assert!(ops.known_to_differ("acme.op-1", b"create running"));
        assert!(!ops.known_to_differ("acme.op-1", b"create paused"));
        assert!(ops.known_to_differ("acme.op-2", b"create running"));
        ops.behind();
        assert!(!ops.known_to_differ("acme.op-2", b"create running"));
    }
}
