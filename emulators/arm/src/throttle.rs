//! ARM gateway throttling: token buckets per subscription and operation class.
//!
//! ARM (since 2024) refills buckets continuously: reads 250 / 25 s⁻¹, writes and deletes
//! 200 / 10 s⁻¹. Every answer reports what is left in `x-ms-ratelimit-remaining-subscription-*`.

use std::collections::HashMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Size and refill rate of one bucket.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct BucketConfig {
    pub capacity: f64,
    pub refill_per_sec: f64,
}

/// The three buckets ARM keeps per subscription.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThrottleConfig {
    pub enabled: bool,
    pub reads: BucketConfig,
    pub writes: BucketConfig,
    pub deletes: BucketConfig,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            reads: BucketConfig {
                capacity: 250.0,
                refill_per_sec: 25.0,
            },
            writes: BucketConfig {
                capacity: 200.0,
                refill_per_sec: 10.0,
            },
            deletes: BucketConfig {
                capacity: 200.0,
                refill_per_sec: 10.0,
            },
        }
    }
}

/// Which bucket a request draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    Read,
    Write,
    Delete,
}

impl OpClass {
    pub fn from_method(m: &axum::http::Method) -> Self {
        match *m {
            axum::http::Method::GET | axum::http::Method::HEAD => OpClass::Read,
            axum::http::Method::DELETE => OpClass::Delete,
            _ => OpClass::Write,
        }
    }

    /// Suffix of `x-ms-ratelimit-remaining-subscription-*`.
    pub fn header(&self) -> &'static str {
        match self {
            OpClass::Read => "x-ms-ratelimit-remaining-subscription-reads",
            OpClass::Write => "x-ms-ratelimit-remaining-subscription-writes",
            OpClass::Delete => "x-ms-ratelimit-remaining-subscription-deletes",
        }
    }

    /// How ARM names the class in the 429 message.
    pub fn noun(&self) -> &'static str {
        match self {
            OpClass::Read => "read",
            OpClass::Write => "write",
            OpClass::Delete => "delete",
        }
    }
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Per-subscription buckets.
pub struct Throttle {
    config: ThrottleConfig,
    buckets: HashMap<(String, OpClass), Bucket>,
}

/// Outcome of drawing a token.
pub enum Draw {
    /// Allowed; tokens left (rounded down).
    Allowed(u64),
    /// Throttled; seconds until a token is available (at least 1).
    Throttled(u64),
}

impl Throttle {
    pub fn new(config: ThrottleConfig) -> Self {
        Self {
            config,
            buckets: HashMap::new(),
        }
    }

    pub fn reset(&mut self) {
        self.buckets.clear();
    }

    fn config_for(&self, class: OpClass) -> BucketConfig {
        match class {
            OpClass::Read => self.config.reads,
            OpClass::Write => self.config.writes,
            OpClass::Delete => self.config.deletes,
        }
    }

    /// Draws one token for `sub` from the `class` bucket.
    pub fn draw(&mut self, sub: &str, class: OpClass, now: Instant) -> Draw {
        let cfg = self.config_for(class);
        if !self.config.enabled {
            return Draw::Allowed(cfg.capacity.max(0.0) as u64);
        }
        let bucket = self
            .buckets
            .entry((sub.to_ascii_lowercase(), class))
            .or_insert(Bucket {
                tokens: cfg.capacity,
                last: now,
            });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * cfg.refill_per_sec).min(cfg.capacity);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Draw::Allowed(bucket.tokens.floor() as u64)
        } else if cfg.refill_per_sec > 0.0 {
            let wait = ((1.0 - bucket.tokens) / cfg.refill_per_sec).ceil().max(1.0);
            Draw::Throttled(wait as u64)
        } else {
            Draw::Throttled(3600)
        }
    }
}
