//! The GCRA math, once: pure functions of (rate, `tat`, now), used by the in-memory [`Gcra`]
//! and by the KV-backed [`crate::Pacer`] alike.
//!
//! Time is integer unix nanoseconds (`i128`, saturating), so every replica computes bit-for-bit
//! the same state from the same inputs. A missing `tat` (fresh or unreadable budget) means
//! "full bucket", the same as any `tat` at or before now.
//!
//! With emission interval T and burst B (tolerance τ = (B − 1)·T), the bucket's level at time
//! `t` is `B·T − (tat − t)` nanoseconds of credit, capped at `B·T`; one token costs T.

use std::time::Duration;

use crate::{Error, Rate, Result, duration_to_nanos, nanos_to_duration};

/// A reserved send time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// When the caller may send, unix nanoseconds (never before the `now` it was computed at).
    pub at_unix_nanos: i128,
    /// How long to sleep from the reservation's `now` until `at_unix_nanos`; zero if allowed now.
    pub wait: Duration,
}

/// A validated [`Rate`] in integer nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    /// Emission interval T.
    t: i128,
    burst: u32,
}

impl Params {
    pub(crate) fn of(rate: Rate) -> Result<Self> {
        Ok(Self {
            t: rate.emission_nanos()?,
            burst: rate.burst,
        })
    }

    /// B·T = τ + T: how far `tat` may run ahead of a slot.
    fn capacity(&self) -> i128 {
        self.t.saturating_mul(i128::from(self.burst))
    }

    /// Checks a request for `n` tokens: at least one, at most the bucket's capacity (a token
    /// bucket can never hold more than `burst`, so more would wait forever in a real bucket).
    pub(crate) fn check_tokens(&self, n: u32) -> Result<()> {
        if n == 0 || n > self.burst {
            Err(Error::Tokens {
                n,
                burst: self.burst,
            })
        } else {
            Ok(())
        }
    }
}

/// Reserves `n` tokens (already checked) at `now`: returns the new `tat` to store and the slot.
///
/// `new_tat = max(tat, now) + n·T`; the batch conforms once its last token does, i.e. at
/// `new_tat − B·T` (= `max(tat, now) − τ + (n − 1)·T`); the slot is that or now, whichever is
/// later. A fresh bucket thus admits B single-token reservations at once, then one every T.
pub(crate) fn reserve(p: Params, tat: Option<i128>, now: i128, n: u32) -> (i128, Slot) {
    let base = tat.map_or(now, |tat| tat.max(now));
    let new_tat = base.saturating_add(p.t.saturating_mul(i128::from(n)));
    let at = new_tat.saturating_sub(p.capacity()).max(now);
    (
        new_tat,
        Slot {
            at_unix_nanos: at,
            wait: nanos_to_duration(at - now),
        },
    )
}

/// How long until one token is available at `now`, without reserving it.
pub(crate) fn peek(p: Params, tat: Option<i128>, now: i128) -> Duration {
    reserve(p, tat, now, 1).1.wait
}

/// Whole tokens available at `now`: `floor((B·T − (tat − now)) / T)`, clamped to `0..=B`.
pub(crate) fn available(p: Params, tat: Option<i128>, now: i128) -> u32 {
    let ahead = tat.map_or(0, |tat| (tat - now).max(0));
    let credit = p.capacity().saturating_sub(ahead);
    u32::try_from((credit / p.t).max(0))
        .unwrap_or(p.burst)
        .min(p.burst)
}

/// ARM says `remaining` tokens are left at `now`. If that is fewer than our state implies,
/// returns the `tat` implying exactly `remaining` (`now + (B − remaining)·T`); otherwise
/// `None` — never moves the state backward.
pub(crate) fn observe_remaining(
    p: Params,
    tat: Option<i128>,
    now: i128,
    remaining: u64,
) -> Option<i128> {
    let remaining = u32::try_from(remaining).unwrap_or(u32::MAX).min(p.burst);
    let target = now.saturating_add(p.t.saturating_mul(i128::from(p.burst - remaining)));
    move_forward(tat, now, target)
}

/// After a 429 with `Retry-After`: returns the `tat` that admits nothing before
/// `now + retry_after` (then one token, then one every T — the bucket is treated as drained),
/// i.e. `now + retry_after + τ`; `None` if the state already waits at least that long.
pub(crate) fn penalize(
    p: Params,
    tat: Option<i128>,
    now: i128,
    retry_after: Duration,
) -> Option<i128> {
    let tau = p.capacity() - p.t;
    let target = now
        .saturating_add(duration_to_nanos(retry_after))
        .saturating_add(tau);
    move_forward(tat, now, target)
}

/// `Some(target)` if it is later than the effective `tat` (`max(tat, now)`).
fn move_forward(tat: Option<i128>, now: i128, target: i128) -> Option<i128> {
    let effective = tat.map_or(now, |tat| tat.max(now));
    (target > effective).then_some(target)
}

/// GCRA over an in-memory state: the same math as the shared [`crate::Pacer`], for one process
/// (a local fallback when the bus is unavailable, or pacing that needs no sharing). `now` is
/// passed in, so it is deterministic; use [`crate::system_now`] for the wall clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Gcra {
    rate: Rate,
    params: Params,
    tat: Option<i128>,
}

impl Gcra {
    /// A fresh (full) budget.
    pub fn new(rate: Rate) -> Result<Self> {
        Self::with_tat(rate, None)
    }

    /// A budget in a known state: `tat` in unix nanoseconds, `None` for full.
    pub fn with_tat(rate: Rate, tat: Option<i128>) -> Result<Self> {
        Ok(Self {
            rate,
            params: Params::of(rate)?,
            tat,
        })
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The theoretical arrival time, unix nanoseconds; `None` until first used.
    pub fn tat(&self) -> Option<i128> {
        self.tat
    }

    /// Reserves `n` tokens (1 to `burst`) and returns the slot to send at.
    pub fn reserve(&mut self, now: i128, n: u32) -> Result<Slot> {
        self.params.check_tokens(n)?;
        let (tat, slot) = reserve(self.params, self.tat, now, n);
        self.tat = Some(tat);
        Ok(slot)
    }

    /// How long until one token is available, without reserving it.
    pub fn peek(&self, now: i128) -> Duration {
        peek(self.params, self.tat, now)
    }

    /// Whole tokens available at `now`.
    pub fn available(&self, now: i128) -> u32 {
        available(self.params, self.tat, now)
    }

    /// Lowers the budget to ARM's `remaining` if that is lower; returns whether it moved.
    pub fn observe_remaining(&mut self, now: i128, remaining: u64) -> bool {
        self.apply(observe_remaining(self.params, self.tat, now, remaining))
    }

    /// Admits nothing before `now + retry_after`; returns whether the state moved.
    pub fn penalize(&mut self, now: i128, retry_after: Duration) -> bool {
        self.apply(penalize(self.params, self.tat, now, retry_after))
    }

    fn apply(&mut self, tat: Option<i128>) -> bool {
        if let Some(tat) = tat {
            self.tat = Some(tat);
        }
        tat.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;
    /// An arbitrary, realistic "now".
    const T0: i128 = 1_750_000_000_000_000_000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// 10/s (T = 100 ms), burst 3.
    fn ten_per_sec_burst_3() -> Gcra {
        Gcra::new(Rate::new(10.0, 3)).unwrap()
    }

    #[test]
    fn fresh_budget_admits_burst_then_one_per_interval() {
        let mut g = ten_per_sec_burst_3();
        // Token bucket of 3, full: three go now; then the k-th extra waits k refills of 100 ms.
        let waits: Vec<_> = (0..6).map(|_| g.reserve(T0, 1).unwrap().wait).collect();
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(100), ms(200), ms(300)]);
        let slot = g.reserve(T0, 1).unwrap();
        assert_eq!(slot.at_unix_nanos, T0 + 400 * MS);
    }

    #[test]
    fn partially_refilled_budget() {
        let mut g = ten_per_sec_burst_3();
        for _ in 0..3 {
            assert_eq!(g.reserve(T0, 1).unwrap().wait, ms(0));
        }
        // 250 ms later 2.5 tokens have refilled: two go now, the third needs 0.5 token = 50 ms.
        let now = T0 + 250 * MS;
        assert_eq!(g.available(now), 2);
        assert_eq!(g.reserve(now, 1).unwrap().wait, ms(0));
        assert_eq!(g.reserve(now, 1).unwrap().wait, ms(0));
        assert_eq!(g.reserve(now, 1).unwrap().wait, ms(50));
    }

    #[test]
    fn idle_refills_to_burst_and_no_further() {
        let mut g = ten_per_sec_burst_3();
        g.reserve(T0, 3).unwrap();
        // Ten idle seconds refill 100 tokens' worth, but the bucket holds 3.
        let now = T0 + 10_000 * MS;
        assert_eq!(g.available(now), 3);
        let waits: Vec<_> = (0..4).map(|_| g.reserve(now, 1).unwrap().wait).collect();
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(100)]);
    }

    #[test]
    fn steady_arrivals_at_the_rate_never_wait() {
        let mut g = ten_per_sec_burst_3();
        for k in 0..50 {
            assert_eq!(
                g.reserve(T0 + k * 100 * MS, 1).unwrap().wait,
                ms(0),
                "request {k}"
            );
        }
        // …and the bucket is still full: arriving at exactly the rate spends what refills.
        assert_eq!(g.available(T0 + 50 * 100 * MS), 3);
    }

    #[test]
    fn batches_wait_until_their_last_token_is_there() {
        // 10/s, burst 5.
        let mut g = Gcra::new(Rate::new(10.0, 5)).unwrap();
        // 5 tokens: take 3 now (2 left).
        assert_eq!(g.reserve(T0, 3).unwrap().wait, ms(0));
        // 3 more: 2 are there, the third refills in 100 ms.
        assert_eq!(g.reserve(T0, 3).unwrap().wait, ms(100));
        // The bucket is empty at +100 ms; 2 more take 200 ms after that.
        assert_eq!(g.reserve(T0, 2).unwrap().wait, ms(300));
        // A whole burst at once is fine on a full bucket, then one more waits one interval.
        let mut g = Gcra::new(Rate::new(10.0, 5)).unwrap();
        assert_eq!(g.reserve(T0, 5).unwrap().wait, ms(0));
        assert_eq!(g.reserve(T0, 1).unwrap().wait, ms(100));
    }

    #[test]
    fn token_counts_outside_one_to_burst_are_refused() {
        let mut g = ten_per_sec_burst_3();
        assert!(matches!(
            g.reserve(T0, 0),
            Err(Error::Tokens { n: 0, burst: 3 })
        ));
        assert!(matches!(
            g.reserve(T0, 4),
            Err(Error::Tokens { n: 4, burst: 3 })
        ));
        assert_eq!(g.tat(), None, "a refused request must not touch the state");
    }

    #[test]
    fn peek_does_not_consume() {
        let mut g = ten_per_sec_burst_3();
        for _ in 0..10 {
            assert_eq!(g.peek(T0), ms(0));
        }
        assert_eq!(g.tat(), None);
        g.reserve(T0, 3).unwrap();
        assert_eq!(g.peek(T0), ms(100));
        assert_eq!(g.peek(T0), ms(100));
        assert_eq!(g.peek(T0 + 40 * MS), ms(60));
        assert_eq!(g.reserve(T0, 1).unwrap().wait, ms(100));
        assert_eq!(g.peek(T0), ms(200));
    }

    #[test]
    fn observe_remaining_lowers_the_budget_to_arm_s_count() {
        // 10/s, burst 10, fresh: we believe 10 tokens.
        let mut g = Gcra::new(Rate::new(10.0, 10)).unwrap();
        assert!(g.observe_remaining(T0, 4));
        assert_eq!(g.available(T0), 4);
        let waits: Vec<_> = (0..5).map(|_| g.reserve(T0, 1).unwrap().wait).collect();
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(0), ms(100)]);
    }

    #[test]
    fn observe_remaining_never_moves_backward() {
        let mut g = Gcra::new(Rate::new(10.0, 10)).unwrap();
        g.reserve(T0, 8).unwrap(); // we believe 2 remain
        let before = g.clone();
        assert!(
            !g.observe_remaining(T0, 5),
            "ARM has more than we think: keep ours"
        );
        assert!(!g.observe_remaining(T0, 2), "equal: nothing to do");
        assert!(
            !g.observe_remaining(T0, 1_000),
            "above the burst: nothing to do"
        );
        assert_eq!(g, before);
        assert!(g.observe_remaining(T0, 0));
        assert_eq!(g.available(T0), 0);
        assert_eq!(g.peek(T0), ms(100));
        // A fresh budget told it has more than the burst stays fresh.
        let mut g = Gcra::new(Rate::new(10.0, 10)).unwrap();
        assert!(!g.observe_remaining(T0, 3_749));
        assert_eq!(g.tat(), None);
    }

    #[test]
    fn penalize_blocks_until_retry_after_then_drips() {
        let mut g = Gcra::new(Rate::new(10.0, 5)).unwrap();
        assert!(g.penalize(T0, Duration::from_secs(2)));
        assert_eq!(g.peek(T0), ms(2_000));
        assert_eq!(g.peek(T0 + 1_999 * MS), ms(1));
        assert_eq!(g.reserve(T0, 1).unwrap().wait, ms(2_000));
        // Treated as drained: after the penalty, one token per interval.
        assert_eq!(g.reserve(T0, 1).unwrap().wait, ms(2_100));
    }

    #[test]
    fn penalize_never_moves_backward() {
        let mut g = Gcra::new(Rate::new(10.0, 5)).unwrap();
        g.reserve(T0, 5).unwrap();
        for _ in 0..5 {
            g.reserve(T0, 1).unwrap();
        }
        assert_eq!(g.peek(T0), ms(600));
        let before = g.clone();
        assert!(
            !g.penalize(T0, ms(300)),
            "already waiting longer than Retry-After"
        );
        assert_eq!(g, before);
        assert!(g.penalize(T0, ms(900)));
        assert_eq!(g.peek(T0), ms(900));
    }

    #[test]
    fn uneven_rates_round_the_interval_up() {
        // 3/s: T = 333 333 333.3 ns, rounded up so three never fit in less than a second.
        let mut g = Gcra::new(Rate::new(3.0, 1)).unwrap();
        assert_eq!(g.reserve(T0, 1).unwrap().wait, Duration::ZERO);
        assert_eq!(
            g.reserve(T0, 1).unwrap().wait,
            Duration::from_nanos(333_333_334)
        );
        assert_eq!(
            g.reserve(T0, 1).unwrap().wait,
            Duration::from_nanos(666_666_668)
        );
    }

    /// A token bucket written independently of the GCRA: `level` nanoseconds of credit
    /// (capacity B·T, one token costs T), refilled continuously, requests served in order.
    struct ReferenceBucket {
        t: i128,
        capacity: i128,
        level: i128,
        last: i128,
    }

    impl ReferenceBucket {
        fn grant(&mut self, arrival: i128, n: u32) -> i128 {
            let now = arrival.max(self.last);
            self.level = (self.level + (now - self.last)).min(self.capacity);
            let cost = self.t * i128::from(n);
            let at = if self.level >= cost {
                now
            } else {
                now + (cost - self.level)
            };
            self.level = (self.level + (at - now)) - cost;
            self.last = at;
            at
        }
    }

    #[test]
    fn matches_an_independent_token_bucket_and_never_exceeds_the_rate() {
        let rate = Rate::new(50.0, 20);
        let t = 20 * MS;
        let mut g = Gcra::new(rate).unwrap();
        let mut reference = ReferenceBucket {
            t,
            capacity: 20 * t,
            level: 20 * t,
            last: T0,
        };
        // A deterministic pseudo-random mix of bursts and pauses, 1–3 tokens per request.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed >> 33
        };
        let mut now = T0;
        let mut grants = Vec::new();
        for i in 0..2_000 {
            now += i128::from(next() % 3 == 0) * i128::from(next() % 60) * MS;
            let n = 1 + u32::try_from(next() % 3).unwrap();
            let slot = g.reserve(now, n).unwrap();
            assert_eq!(slot.at_unix_nanos, reference.grant(now, n), "request {i}");
            assert_eq!(slot.wait, nanos_to_duration(slot.at_unix_nanos - now));
            grants.extend(std::iter::repeat_n(slot.at_unix_nanos, n as usize));
        }
        // In any window [a, b]: tokens ≤ B + (b − a)/T.
        for i in 0..grants.len() {
            for j in i..grants.len() {
                let count = i128::try_from(j - i + 1).unwrap();
                assert!(
                    count <= 20 + (grants[j] - grants[i]) / t,
                    "{count} tokens in {} ns",
                    grants[j] - grants[i]
                );
            }
        }
    }
}
