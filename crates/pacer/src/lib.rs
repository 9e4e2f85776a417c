//! Fleet-wide pacing of Azure Resource Manager requests: one request budget per
//! (subscription, region, operation class), shared through JetStream KV by every replica of
//! every service, so that together they stay under ARM's throttling limits instead of each
//! replica discovering them through 429s.
//!
//! # Why
//!
//! ARM throttles per subscription × service principal × region with token buckets (reads:
//! 250 tokens refilling 25/s; writes and deletes: 200 refilling 10/s). All our replicas use the
//! same principal, so they draw from the same ARM bucket; only a budget they share can keep the
//! fleet under it. A budget is a KV entry keyed by the caller, e.g.
//! `<subscription>.<region>.<class>` ([`OpClass::key`]); the services key theirs by principal
//! too (`<subscription>.<principal>.<region>.<class>`), as ARM's buckets are.
//!
//! # Why GCRA
//!
//! The generic cell rate algorithm is a token bucket (capacity `burst`, refill `per_sec`)
//! expressed as a single timestamp, the *theoretical arrival time* `tat`. That makes the shared
//! state one small KV value, and a request one read plus one compare-and-set (CAS) write: no
//! locks, no leader, no background refill task. It also lets a request *reserve a future slot*:
//! [`Pacer::reserve`] moves `tat` forward and tells the caller how long to sleep before sending.
//! Callers then sleep exactly until their own slot — no busy retry, and no thundering herd when
//! the bucket refills, because every slot was handed out once, in CAS order.
//!
//! The math lives once, in pure functions over an in-memory state ([`Gcra`], which is also
//! usable as a per-process fallback); [`Pacer`] runs the same functions inside a CAS loop on
//! JetStream KV.
//!
//! ```no_run
//! # async fn example(js: async_nats::jetstream::Context) -> hypersaga_pacer::Result<()> {
//! use hypersaga_pacer::{DEFAULT_BUCKET, OpClass, Pacer};
//!
//! let pacer = Pacer::new(js, DEFAULT_BUCKET).await?;
//! let key = OpClass::Writes.key("00000000-0000-0000-0000-000000000001", "eastus")?;
//! let rate = OpClass::Writes.arm_rate();
//! tokio::time::sleep(pacer.reserve(&key, rate, 1).await?).await;
//! // … send the PUT, then feed ARM's view back:
//! pacer.observe_remaining(&key, rate, 187).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Adapting to ARM
//!
//! Our view can be wrong (other principals, other tools, ARM's own accounting), so ARM's answers
//! correct it, only ever towards caution: [`Pacer::observe_remaining`] takes the
//! `x-ms-ratelimit-remaining-subscription-*` header and [`Pacer::penalize`] a 429's
//! `Retry-After`. Neither moves the budget backward.
//!
//! # Known limits
//!
//! - **Clock skew.** `tat` is absolute unix time and each host compares it with its own clock.
//!   A host whose clock is off by δ can make the fleet exceed the budget by about
//!   δ × `per_sec` tokens (it sends δ early, or records a `tat` δ too early). With NTP (skew in
//!   milliseconds) that is a fraction of a token against ARM buckets of 200+, but configure
//!   `burst` with some headroom below ARM's capacity.
//! - **Reservations are not revoked.** A [`Pacer::penalize`] or [`Pacer::observe_remaining`]
//!   delays reservations made *after* it; callers already sleeping until an earlier slot still
//!   send at that slot.
//! - **A timed-out write may have landed.** Then the caller gets an error and, if it retries,
//!   reserves a second slot; the budget errs on the side of caution.
//! - **The bus is a dependency.** Without JetStream every call fails; a caller that must go on
//!   can pace locally with [`Gcra`] at its share of the rate.
#![forbid(unsafe_code)]

mod gcra;
mod kv;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use gcra::{Gcra, Slot};
pub use kv::{DEFAULT_BUCKET, Pacer};

/// Errors of the pacer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// KV keys become NATS subjects: only `[-/_=.a-zA-Z0-9]`, no empty `.`-separated token.
    #[error(
        "invalid budget key {key:?}: use [-/_=.a-zA-Z0-9], not starting or ending with '.', no '..'"
    )]
    InvalidKey { key: String },
    #[error("invalid rate ({per_sec}/s, burst {burst}): {reason}")]
    InvalidRate {
        per_sec: f64,
        burst: u32,
        reason: &'static str,
    },
    /// A token bucket of capacity `burst` can never hold more than `burst` tokens at once.
    #[error("can take 1 to {burst} tokens at once from this budget, not {n}")]
    Tokens { n: u32, burst: u32 },
    #[error("JetStream {what} failed")]
    JetStream {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Too many writers raced on the same budget; the caller may retry later.
    #[error("budget {key:?}: gave up after {tries} conflicting writes")]
    Contended { key: String, tries: u32 },
    #[error("cannot encode budget state")]
    Encode(#[from] serde_json::Error),
}

impl Error {
    pub(crate) fn js(
        what: &'static str,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::JetStream {
            what,
            source: Box::new(e),
        }
    }

    /// A short label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidKey { .. } => "invalid_key",
            Self::InvalidRate { .. } => "invalid_rate",
            Self::Tokens { .. } => "tokens",
            Self::JetStream { .. } => "jetstream",
            Self::Contended { .. } => "contended",
            Self::Encode(_) => "encode",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A token bucket: `burst` tokens of capacity, refilled at `per_sec` tokens per second.
///
/// In GCRA terms the emission interval is T = 1/`per_sec` and the tolerance is
/// τ = (`burst` − 1) × T: a fresh budget admits `burst` requests at once, then one every T.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_sec: f64,
    pub burst: u32,
}

impl Rate {
    /// ARM's per-principal read bucket (§3 of the latency notes): 250, refilling 25/s.
    pub const ARM_READS: Rate = Rate {
        per_sec: 25.0,
        burst: 250,
    };
    /// ARM's per-principal write bucket: 200, refilling 10/s.
    pub const ARM_WRITES: Rate = Rate {
        per_sec: 10.0,
        burst: 200,
    };
    /// ARM's per-principal delete bucket: 200, refilling 10/s.
    pub const ARM_DELETES: Rate = Rate {
        per_sec: 10.0,
        burst: 200,
    };

    pub const fn new(per_sec: f64, burst: u32) -> Self {
        Self { per_sec, burst }
    }

    /// The emission interval T in nanoseconds, rounded *up* so that integer time never lets
    /// more than `per_sec` through.
    pub(crate) fn emission_nanos(&self) -> Result<i128> {
        let bad = |reason| Error::InvalidRate {
            per_sec: self.per_sec,
            burst: self.burst,
            reason,
        };
        if self.burst == 0 {
            return Err(bad("burst must be at least 1"));
        }
        // Below one token per ~11.6 days the nanosecond arithmetic is pointless anyway.
        if !self.per_sec.is_finite() || self.per_sec < 1e-6 {
            return Err(bad("per_sec must be finite and at least 1e-6"));
        }
        Ok(((1e9 / self.per_sec).ceil() as i128).max(1))
    }
}

/// ARM's operation classes, each with its own bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpClass {
    Reads,
    Writes,
    Deletes,
}

impl OpClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reads => "reads",
            Self::Writes => "writes",
            Self::Deletes => "deletes",
        }
    }

    /// ARM's documented per-principal bucket for this class.
    pub fn arm_rate(self) -> Rate {
        match self {
            Self::Reads => Rate::ARM_READS,
            Self::Writes => Rate::ARM_WRITES,
            Self::Deletes => Rate::ARM_DELETES,
        }
    }

    /// The conventional budget key `<subscription>.<region>.<class>`, validated.
    pub fn key(self, subscription: &str, region: &str) -> Result<String> {
        let key = format!("{subscription}.{region}.{}", self.as_str());
        validate_key(&key)?;
        Ok(key)
    }
}

/// Rejects keys JetStream KV would reject, here with a clear error rather than a NATS one.
pub fn validate_key(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && !key.starts_with('.')
        && !key.ends_with('.')
        && !key.contains("..")
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'/' | b'_' | b'=' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidKey {
            key: key.to_owned(),
        })
    }
}

/// Where the pacer gets "now", as unix nanoseconds. Injectable so tests can drive time;
/// a closure `Fn() -> i128` is a clock.
pub trait Clock: Send + Sync + 'static {
    fn now_unix_nanos(&self) -> i128;
}

impl<F> Clock for F
where
    F: Fn() -> i128 + Send + Sync + 'static,
{
    fn now_unix_nanos(&self) -> i128 {
        self()
    }
}

/// The host's wall clock (the default). Wall time, not a monotonic clock, because the state is
/// compared across hosts.
pub fn system_now() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// Nanoseconds (never negative in practice) as a `Duration`, saturating.
pub(crate) fn nanos_to_duration(nanos: i128) -> Duration {
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

pub(crate) fn duration_to_nanos(d: Duration) -> i128 {
    i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_kv_rules() {
        assert!(validate_key("00000000-0000-0000-0000-000000000001.eastus.writes").is_ok());
        assert!(validate_key("a/b_c=d-e.f").is_ok());
        for bad in ["", ".a", "a.", "a..b", "a b", "a*b", "a>b", "é"] {
            assert!(
                matches!(validate_key(bad), Err(Error::InvalidKey { .. })),
                "{bad:?} accepted"
            );
        }
        assert_eq!(
            OpClass::Writes.key("sub-1", "eastus").unwrap(),
            "sub-1.eastus.writes"
        );
        assert!(OpClass::Reads.key("sub 1", "eastus").is_err());
    }

    #[test]
    fn rates_are_validated() {
        assert_eq!(Rate::new(50.0, 20).emission_nanos().unwrap(), 20_000_000);
        // 3/s does not divide a second evenly: round the interval up, never down.
        assert_eq!(Rate::new(3.0, 1).emission_nanos().unwrap(), 333_333_334);
        for bad in [
            Rate::new(0.0, 1),
            Rate::new(-1.0, 1),
            Rate::new(f64::NAN, 1),
            Rate::new(f64::INFINITY, 1),
            Rate::new(1.0, 0),
        ] {
            assert!(
                matches!(bad.emission_nanos(), Err(Error::InvalidRate { .. })),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn a_closure_is_a_clock() {
        let clock = || 42_i128;
        assert_eq!(Clock::now_unix_nanos(&clock), 42);
        assert!(system_now() > 1_600_000_000_000_000_000);
    }
}
