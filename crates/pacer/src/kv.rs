//! The shared budgets: GCRA state in JetStream KV, changed only by compare-and-set.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::gcra::{self, Params, Slot};
use crate::{Clock, Error, Rate, Result, validate_key};

/// The bucket budgets live in unless the caller says otherwise.
pub const DEFAULT_BUCKET: &str = "hcp_budgets";

/// How many times one call re-reads and retries after losing a CAS race. Each loss means
/// another writer succeeded, so the fleet as a whole progresses; this only bounds one caller.
/// Measured against a local nats-server: 8 processes reserving back to back on one key, the
/// unluckiest call needed up to ~25 tries (4 processes: ~9), hence room to spare.
const MAX_TRIES: u32 = 64;

/// The schema of the stored value; anything else is treated as absent and overwritten.
const SCHEMA: u32 = 1;

/// The stored value: `{"v":1,"tat":<unix nanoseconds>}`.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    v: u32,
    tat: u64,
}

/// A handle on the shared budgets; cheap to clone (clones share the KV handle, the clock and
/// the local queues).
///
/// Every replica holding a `Pacer` on the same bucket and key shares one budget. Within one
/// handle (and its clones), writes to the same key queue behind one another, first come first
/// served, so CAS races happen only between processes: without that, tasks of one busy process
/// would mostly race each other, and a task could lose many rounds in a row.
#[derive(Clone)]
pub struct Pacer {
    kv: kv::Store,
    bucket: String,
    clock: Arc<dyn Clock>,
    /// One FIFO lock per key written through this handle (a few per subscription and region).
    local: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl std::fmt::Debug for Pacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pacer")
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// What one CAS round decided: the `tat` to write (`None`: nothing to write) and the answer.
type Decision<R> = (Option<i128>, R);

impl Pacer {
    /// Opens the budgets bucket, creating it if needed (history 1, file storage). Idempotent and
    /// safe against a concurrent creator, so any replica of any service may call it at start-up.
    pub async fn new(js: jetstream::Context, bucket: &str) -> Result<Self> {
        let kv = match js.get_key_value(bucket).await {
            Ok(kv) => kv,
            Err(_) => {
                let created = js
                    .create_key_value(kv::Config {
                        bucket: bucket.into(),
                        description: "hypersaga: shared ARM request budgets (GCRA state)".into(),
                        history: 1,
                        storage: stream::StorageType::File,
                        ..Default::default()
                    })
                    .await;
                match created {
                    Ok(kv) => kv,
                    // Another process may have created it between our look and our create.
                    Err(e) => js
                        .get_key_value(bucket)
                        .await
                        .map_err(|_| Error::js("create KV bucket", e))?,
                }
            }
        };
        Ok(Self {
            kv,
            bucket: bucket.to_owned(),
            clock: Arc::new(crate::system_now),
            local: Arc::default(),
        })
    }

    /// The same handle with another time source (tests drive time with it).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Reserves `n` tokens (1 to `rate.burst`) from the budget `key` and returns how long the
    /// caller must wait before sending (zero if it may send now). The slot is the caller's:
    /// sleep for the returned time, then send, without asking again.
    pub async fn reserve(&self, key: &str, rate: Rate, n: u32) -> Result<Duration> {
        Ok(self.reserve_slot(key, rate, n).await?.wait)
    }

    /// As [`Pacer::reserve`], also saying when the slot is in unix nanoseconds (for logs and
    /// for checking the pacing from outside).
    pub async fn reserve_slot(&self, key: &str, rate: Rate, n: u32) -> Result<Slot> {
        let p = Params::of(rate)?;
        p.check_tokens(n)?;
        self.cas(key, |tat, now| {
            let (new_tat, slot) = gcra::reserve(p, tat, now, n);
            (Some(new_tat), slot)
        })
        .await
    }

    /// Reserves one token only if its slot is at most `horizon` away; otherwise reserves
    /// nothing and answers the wait as the error. The check and the reservation are one
    /// compare-and-set, so callers racing for one budget cannot all pass a check and then push
    /// it far beyond the horizon, as a [`Pacer::peek`] before a [`Pacer::reserve`] lets them.
    /// That bounds what sleeps on the budget at any moment by `horizon` × rate, and with it
    /// what a caller that dies while sleeping (a replica killed) takes from the budget unused.
    pub async fn reserve_within(
        &self,
        key: &str,
        rate: Rate,
        horizon: Duration,
    ) -> Result<std::result::Result<Duration, Duration>> {
        let p = Params::of(rate)?;
        self.cas(key, |tat, now| {
            let (new_tat, slot) = gcra::reserve(p, tat, now, 1);
            if slot.wait > horizon {
                (None, Err(slot.wait))
            } else {
                (Some(new_tat), Ok(slot.wait))
            }
        })
        .await
    }

    /// Reserves `n` tokens and sleeps until their slot: [`Pacer::reserve`] then sleep.
    pub async fn acquire(&self, key: &str, rate: Rate, n: u32) -> Result<()> {
        let wait = self.reserve(key, rate, n).await?;
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// How long until one token of `key` would be available, without reserving it (one read,
    /// no write). For admission: a worker can defer a whole step when the subscription's budget
    /// is far in the future instead of holding a slot while it sleeps.
    pub async fn peek(&self, key: &str, rate: Rate) -> Result<Duration> {
        let p = Params::of(rate)?;
        validate_key(key)?;
        let (tat, _) = self.load(key).await?;
        Ok(gcra::peek(p, tat, self.clock.now_unix_nanos()))
    }

    /// Adapts the budget to ARM's `x-ms-ratelimit-remaining-subscription-<class>` header: if ARM
    /// has fewer tokens left than our state implies, moves the state to imply exactly
    /// `remaining`. Never moves it backward. Returns whether it moved.
    pub async fn observe_remaining(&self, key: &str, rate: Rate, remaining: u64) -> Result<bool> {
        let p = Params::of(rate)?;
        self.cas(key, |tat, now| {
            let moved = gcra::observe_remaining(p, tat, now, remaining);
            (moved, moved.is_some())
        })
        .await
    }

    /// After a 429 with `Retry-After`: admits nothing from this budget before
    /// `now + retry_after` (then one token per interval). Never moves the state backward.
    /// Returns whether it moved.
    pub async fn penalize(&self, key: &str, rate: Rate, retry_after: Duration) -> Result<bool> {
        let p = Params::of(rate)?;
        self.cas(key, |tat, now| {
            let moved = gcra::penalize(p, tat, now, retry_after);
            (moved, moved.is_some())
        })
        .await
    }

    /// Reads the state, decides with `decide(tat, now)`, and writes the new `tat` only if the
    /// entry is still at the revision read (create if absent). On a lost race: re-read, retry.
    ///
    /// `now` is read *after* the entry, so among successful writes (which are ordered by
    /// revision) `now` never goes backward on one host — the GCRA's precondition.
    async fn cas<R>(
        &self,
        key: &str,
        mut decide: impl FnMut(Option<i128>, i128) -> Decision<R>,
    ) -> Result<R> {
        validate_key(key)?;
        let queue = self
            .local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.to_owned())
            .or_default()
            .clone();
        let _turn = queue.lock().await;
        for attempt in 1..=MAX_TRIES {
            let (tat, revision) = self.load(key).await?;
            let now = self.clock.now_unix_nanos();
            let (new_tat, answer) = decide(tat, now);
            let Some(new_tat) = new_tat else {
                return Ok(answer);
            };
            let value = serde_json::to_vec(&Stored {
                v: SCHEMA,
                tat: u64::try_from(new_tat.max(0)).unwrap_or(u64::MAX),
            })?;
            let won = match revision {
                Some(revision) => match self.kv.update(key, value.into(), revision).await {
                    Ok(_) => true,
                    Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => false,
                    Err(e) => return Err(Error::js("update budget", e)),
                },
                None => match self.kv.create(key, value.into()).await {
                    Ok(_) => true,
                    Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => false,
                    Err(e) => return Err(Error::js("create budget", e)),
                },
            };
            if won {
                return Ok(answer);
            }
            tracing::trace!(key, attempt, "budget changed under us; retrying");
            // Full jitter, growing with each loss (100 µs, 200 µs, … capped at 12.8 ms), so the
            // losers of one race spread out instead of colliding again in lockstep.
            let micros = rand::rng().random_range(0..=100u64 << attempt.min(8).saturating_sub(1));
            tokio::time::sleep(Duration::from_micros(micros)).await;
        }
        tracing::warn!(key, bucket = %self.bucket, tries = MAX_TRIES, "gave up on a contended budget");
        Err(Error::Contended {
            key: key.to_owned(),
            tries: MAX_TRIES,
        })
    }

    /// The stored `tat` (`None` if absent, deleted or unreadable) and the revision to CAS
    /// against (`None` if there is no entry at all, so the write must be a create).
    async fn load(&self, key: &str) -> Result<(Option<i128>, Option<u64>)> {
        let Some(entry) = self
            .kv
            .entry(key)
            .await
            .map_err(|e| Error::js("read budget", e))?
        else {
            return Ok((None, None));
        };
        if entry.operation != kv::Operation::Put {
            return Ok((None, Some(entry.revision)));
        }
        let tat = match serde_json::from_slice::<Stored>(&entry.value) {
            Ok(Stored { v: SCHEMA, tat }) => Some(i128::from(tat)),
            Ok(Stored { v, .. }) => {
                tracing::warn!(key, bucket = %self.bucket, schema = v, "budget has an unknown schema; resetting it");
                None
            }
            Err(e) => {
                tracing::warn!(key, bucket = %self.bucket, error = %e, "budget value is unreadable; resetting it");
                None
            }
        };
        Ok((tat, Some(entry.revision)))
    }
}
