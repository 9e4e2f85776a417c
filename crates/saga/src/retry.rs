//! Retry policy: exponential backoff with jitter, bounded attempts. The jitter is derived from
//! (saga, step, attempt), not drawn at random, so re-applying the same input after a crash or
//! a CAS conflict decides the same delay.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Longest `Retry-After` honoured; anything larger is treated as an hour.
pub const MAX_RETRY_AFTER_MS: u64 = 3_600_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts of one action of one step, the first included.
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base_delay_ms: 2_000,
            max_delay_ms: 120_000,
        }
    }
}

impl RetryPolicy {
    /// Delay before attempt `next_attempt` (2, 3, …): base × 2^(n-2), capped, ±20 % jitter,
    /// and never shorter than Azure's `Retry-After`.
    pub fn delay(&self, key: &str, next_attempt: u32, retry_after_ms: Option<u64>) -> Duration {
        let exp = next_attempt.saturating_sub(2).min(30);
        let raw = self
            .base_delay_ms
            .saturating_mul(1u64 << exp)
            .min(self.max_delay_ms);
        let digest = Sha256::digest(format!("{key}:{next_attempt}").as_bytes());
        let unit = f64::from(u16::from_be_bytes([digest[0], digest[1]])) / f64::from(u16::MAX);
        let jittered = (raw as f64 * (0.8 + 0.4 * unit)) as u64;
        // A `Retry-After` comes from the network: never trust it beyond an hour.
        let retry_after = retry_after_ms.unwrap_or(0).min(MAX_RETRY_AFTER_MS);
        Duration::from_millis(jittered.max(retry_after))
    }

    /// Delay after backpressure (a 429): Azure's `Retry-After` (else the base delay) plus up
    /// to 25 % jitter, so the steps throttled together do not all come back at one instant.
    pub fn throttle_delay(&self, key: &str, retry_after_ms: Option<u64>) -> Duration {
        let base = retry_after_ms
            .unwrap_or(self.base_delay_ms)
            .clamp(1, MAX_RETRY_AFTER_MS);
        let digest = Sha256::digest(key.as_bytes());
        let unit = f64::from(u16::from_be_bytes([digest[0], digest[1]])) / f64::from(u16::MAX);
        Duration::from_millis(base + (base as f64 * 0.25 * unit) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_exponentially_within_jitter_and_cap() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay_ms: 1000,
            max_delay_ms: 10_000,
        };
        for (attempt, nominal) in [
            (2u32, 1000u64),
            (3, 2000),
            (4, 4000),
            (5, 8000),
            (6, 10_000),
            (9, 10_000),
        ] {
            let d = p.delay("s:step", attempt, None).as_millis() as u64;
            assert!(
                d >= nominal * 8 / 10 && d <= nominal * 12 / 10,
                "attempt {attempt}: {d}"
            );
        }
    }

    #[test]
    fn throttle_delay_waits_out_retry_after_plus_jitter() {
        let p = RetryPolicy::default();
        let d = p.throttle_delay("a", Some(4_000)).as_millis() as u64;
        assert!((4_000..=5_000).contains(&d), "{d}");
        assert_eq!(
            p.throttle_delay("a", Some(4_000)),
            p.throttle_delay("a", Some(4_000))
        );
        let spread: std::collections::BTreeSet<u128> = (0..20)
            .map(|i| p.throttle_delay(&format!("k{i}"), Some(4_000)).as_millis())
            .collect();
        assert!(spread.len() > 10, "jitter spreads retries: {spread:?}");
    }

    #[test]
    fn is_deterministic_and_honours_retry_after() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay("a", 3, None), p.delay("a", 3, None));
        assert_eq!(p.delay("a", 2, Some(60_000)), Duration::from_secs(60));
        assert_eq!(
            p.delay("a", 2, Some(u64::MAX)),
            Duration::from_millis(MAX_RETRY_AFTER_MS)
        );
    }
}
