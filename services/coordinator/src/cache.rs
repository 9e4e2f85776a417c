//! What this replica last wrote for each saga it works on, so that a transition usually needs
//! no read and its outbox no separate clearing write.
//!
//! The KV bucket stays the authority: a transition applies its input to the copy kept here and
//! writes with compare-and-set on the copy's revision, so a copy that another replica has
//! overtaken costs one failed write and a read, never a wrong result. An input the copy says
//! to ignore is looked at again against the bucket, since an older copy may not yet know what
//! makes it apply.
//!
//! A transition's outbox is published right after its write; clearing it in the bucket is
//! another write, needed only so that whoever next reads the record does not publish it again.
//! The next transition of the same saga here replaces the outbox anyway, so the clearing write
//! is put off ([`CLEAR_AFTER`]) and made only for sagas that did not move on meanwhile. Until
//! then a reader elsewhere republishes the outbox, which JetStream's de-duplication absorbs.
//!
//! Each saga's slot is an async mutex: transitions of one saga on this replica take turns
//! instead of racing each other's compare-and-set.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hypersaga_model::ClusterRecord;
use hypersaga_saga::Saga;

use crate::snapshot::Snapshot;

/// How long a published outbox may stay in the bucket before it is cleared there; also how
/// often, at most, progress alone is written to a cluster record (see `snapshot`).
pub const CLEAR_AFTER: Duration = Duration::from_millis(250);
/// A slot unused this long is dropped (once its outbox is cleared).
const IDLE: Duration = Duration::from_secs(60);

/// The saga as this replica last wrote or read it.
pub struct Known {
    pub saga: Saga,
    /// The bucket's revision of `saga`.
    pub revision: u64,
    /// Whether `saga.outbox` has been published (it is then only left to clear).
    pub published: bool,
    /// The saga's cluster record as last written or read here, with its revision.
    pub cluster: Option<(u64, ClusterRecord)>,
}

impl Known {
    /// A copy whose outbox (if any is left in it) has been published.
    pub fn published(saga: Saga, revision: u64, cluster: Option<(u64, ClusterRecord)>) -> Self {
        Self {
            saga,
            revision,
            published: true,
            cluster,
        }
    }
}

#[derive(Default)]
pub struct Slot {
    pub known: Option<Known>,
    touched: Option<Instant>,
    /// When the cluster record was last written for this saga.
    snapshot_at: Option<Instant>,
    /// Progress put off and not yet written to the cluster record. Kept on the slot, not on
    /// the copy, so that a transition that fails after taking the copy does not lose it.
    progress_owed: bool,
}

impl Slot {
    /// Takes the copy for a transition (leaving the slot empty until [`Slot::keep`]).
    pub fn take(&mut self) -> Option<Known> {
        self.touched = Some(Instant::now());
        self.known.take()
    }

    pub fn keep(&mut self, known: Known) {
        self.touched = Some(Instant::now());
        self.known = Some(known);
    }

    /// Whether the copy's outbox is published but still in the bucket, and has been for
    /// [`CLEAR_AFTER`].
    pub fn due_for_clearing(&self) -> bool {
        self.known
            .as_ref()
            .is_some_and(|k| k.published && !k.saga.outbox.is_empty())
            && self.touched.is_some_and(|t| t.elapsed() >= CLEAR_AFTER)
    }

    /// Whether the cluster record was written less than [`CLEAR_AFTER`] ago.
    pub fn snapshot_recent(&self) -> bool {
        self.snapshot_at.is_some_and(|t| t.elapsed() < CLEAR_AFTER)
    }

    /// Whether progress waits to be written and its turn has come.
    pub fn due_for_snapshot(&self) -> bool {
        self.progress_owed && !self.snapshot_recent()
    }

    pub fn progress_owed(&self) -> bool {
        self.progress_owed
    }

    /// Progress was put off: write it when its turn comes.
    pub fn owe_progress(&mut self) {
        self.progress_owed = true;
    }

    /// Records what [`crate::snapshot::update_cluster`] did.
    pub fn snapshot(&mut self, done: Snapshot) {
        match done {
            Snapshot::Current => self.snapshot_written(),
            Snapshot::ProgressOwed => self.owe_progress(),
        }
    }

    /// The cluster record shows the saga as it is now.
    pub fn snapshot_written(&mut self) {
        self.snapshot_at = Some(Instant::now());
        self.progress_owed = false;
    }

    fn idle(&self) -> bool {
        self.known.as_ref().is_none_or(|k| k.saga.outbox.is_empty())
            && !self.progress_owed
            && self.touched.is_none_or(|t| t.elapsed() >= IDLE)
    }
}

pub type SlotRef = Arc<tokio::sync::Mutex<Slot>>;

/// Slots by saga key, at most `capacity` of them (beyond that, transitions read and clear as
/// if there were no cache).
pub struct Cache {
    slots: Mutex<HashMap<String, SlotRef>>,
    capacity: usize,
}

impl Cache {
    pub fn new(capacity: usize) -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SlotRef>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The slot for `key`, and whether it is kept; when the cache is full, a fresh one that is
    /// not (its transition then clears its own outbox).
    pub fn slot(&self, key: &str) -> (SlotRef, bool) {
        let mut slots = self.lock();
        if let Some(slot) = slots.get(key) {
            return (slot.clone(), true);
        }
        let slot = SlotRef::default();
        let kept = slots.len() < self.capacity;
        if kept {
            slots.insert(key.to_owned(), slot.clone());
        }
        (slot, kept)
    }

    /// Forgets `key` (a finished saga).
    pub fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Every slot, to look for outboxes to clear; idle ones are dropped on the way.
    pub fn sweep(&self) -> Vec<(String, SlotRef)> {
        let mut slots = self.lock();
        slots.retain(|_, slot| slot.try_lock().map_or(true, |s| !s.idle()));
        slots.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}
