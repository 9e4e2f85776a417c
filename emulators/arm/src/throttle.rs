//! ARM gateway throttling: token buckets per subscription × principal × region and operation
//! class, plus one global bucket per subscription × region shared by every principal.
//!
//! ARM (since 2024) refills buckets continuously: reads 250 / 25 s⁻¹, writes and deletes
//! 200 / 10 s⁻¹ for each principal, and a global limit of 15× those numbers across all
//! principals calling one subscription through one regional ARM instance
//! (`docs/reference/azure-latencies.md` §3). A request needs a token from both buckets; a throttled
//! request takes none. Every answer reports what is left in
//! `x-ms-ratelimit-remaining-subscription-*` (the caller's bucket) and
//! `x-ms-ratelimit-remaining-subscription-global-*` (the shared one), so clients that pace
//! themselves on those headers see the numbers ARM would send.

use std::collections::HashMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Size and refill rate of one bucket.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct BucketConfig {
    pub capacity: f64,
    pub refill_per_sec: f64,
}

impl BucketConfig {
    fn scaled(self, factor: f64) -> Self {
        Self {
            capacity: self.capacity * factor,
            refill_per_sec: self.refill_per_sec * factor,
        }
    }
}

/// ARM's token buckets. `reads`/`writes`/`deletes` size the per-principal buckets; the global
/// per-subscription buckets are `global_multiplier` times those, so scaling a budget for a
/// load test (see [`ThrottleConfig::scaled`]) keeps ARM's proportions.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThrottleConfig {
    pub enabled: bool,
    pub reads: BucketConfig,
    pub writes: BucketConfig,
    pub deletes: BucketConfig,
    /// Global per-subscription-per-region bucket = this × the per-principal bucket (ARM: 15).
    /// Defaulted so configurations written before the global bucket existed still load.
    /// A value that is not finite and positive means "no global bucket" (headers omitted).
    #[serde(default = "default_global_multiplier")]
    pub global_multiplier: f64,
}

/// ARM's global limit is 15× the per-principal one.
pub const DEFAULT_GLOBAL_MULTIPLIER: f64 = 15.0;

fn default_global_multiplier() -> f64 {
    DEFAULT_GLOBAL_MULTIPLIER
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
            global_multiplier: DEFAULT_GLOBAL_MULTIPLIER,
        }
    }
}

impl ThrottleConfig {
    /// Every bucket's capacity and refill multiplied by `factor` (e.g. 10 for a load test that
    /// stands for ten fleets, 0.01 for a test that wants to hit 429 quickly). The global
    /// multiplier is a ratio and stays as it is.
    pub fn scaled(self, factor: f64) -> Self {
        Self {
            reads: self.reads.scaled(factor),
            writes: self.writes.scaled(factor),
            deletes: self.deletes.scaled(factor),
            ..self
        }
    }

    fn principal_bucket(&self, class: OpClass) -> BucketConfig {
        match class {
            OpClass::Read => self.reads,
            OpClass::Write => self.writes,
            OpClass::Delete => self.deletes,
        }
    }

    /// `None` when the multiplier switches the global bucket off.
    fn global_bucket(&self, class: OpClass) -> Option<BucketConfig> {
        let m = self.global_multiplier;
        (m.is_finite() && m > 0.0).then(|| self.principal_bucket(class).scaled(m))
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

    /// `x-ms-ratelimit-remaining-subscription-*`: the caller's (per-principal) bucket.
    pub fn header(&self) -> &'static str {
        match self {
            OpClass::Read => "x-ms-ratelimit-remaining-subscription-reads",
            OpClass::Write => "x-ms-ratelimit-remaining-subscription-writes",
            OpClass::Delete => "x-ms-ratelimit-remaining-subscription-deletes",
        }
    }

    /// `x-ms-ratelimit-remaining-subscription-global-*`: the bucket shared by all principals.
    pub fn global_header(&self) -> &'static str {
        match self {
            OpClass::Read => "x-ms-ratelimit-remaining-subscription-global-reads",
            OpClass::Write => "x-ms-ratelimit-remaining-subscription-global-writes",
            OpClass::Delete => "x-ms-ratelimit-remaining-subscription-global-deletes",
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

/// Who a request is accounted to: ARM keys its buckets on the subscription, the calling
/// principal (the token's object id) and the regional ARM instance answering.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    pub subscription: &'a str,
    pub principal: &'a str,
    pub region: &'a str,
}

/// Tokens left (rounded down), as the headers report them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remaining {
    /// The caller's bucket.
    pub principal: u64,
    /// The subscription's shared bucket; `None` when the global bucket is switched off.
    pub global: Option<u64>,
}

/// Outcome of drawing a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// Allowed; tokens left after this request.
    Allowed(Remaining),
    /// Throttled: nothing was taken. `retry_after` is the whole seconds (at least 1) until
    /// every empty bucket holds a token again.
    Throttled {
        retry_after: u64,
        remaining: Remaining,
    },
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn full(cfg: BucketConfig, now: Instant) -> Self {
        Self {
            tokens: cfg.capacity,
            last: now,
        }
    }

    /// Tokens at `now`, continuous refill capped at capacity.
    fn level(&self, cfg: BucketConfig, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        (self.tokens + elapsed * cfg.refill_per_sec.max(0.0)).min(cfg.capacity)
    }

    fn refill(&mut self, cfg: BucketConfig, now: Instant) {
        self.tokens = self.level(cfg, now);
        self.last = now;
    }

    /// Seconds until one whole token is available, `None` when there already is one.
    fn wait(&self, cfg: BucketConfig) -> Option<f64> {
        if self.tokens >= 1.0 {
            None
        } else if cfg.refill_per_sec > 0.0 {
            Some((1.0 - self.tokens) / cfg.refill_per_sec)
        } else {
            // Never refills: tell the caller to come back much later rather than hammer.
            Some(3600.0)
        }
    }
}

fn floor(tokens: f64) -> u64 {
    // `as` saturates: negative → 0, huge → u64::MAX.
    tokens.max(0.0).floor() as u64
}

/// ARM regions are written several ways ("East US", "eastus"); one key per instance.
pub(crate) fn region_key(region: &str) -> String {
    region
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

type PrincipalKey = (String, String, String, OpClass);
type GlobalKey = (String, String, OpClass);

/// All buckets of one emulator.
pub struct Throttle {
    config: ThrottleConfig,
    principals: HashMap<PrincipalKey, Bucket>,
    global: HashMap<GlobalKey, Bucket>,
}

impl Throttle {
    pub fn new(config: ThrottleConfig) -> Self {
        Self {
            config,
            principals: HashMap::new(),
            global: HashMap::new(),
        }
    }

    pub fn config(&self) -> &ThrottleConfig {
        &self.config
    }

    pub fn reset(&mut self) {
        self.principals.clear();
        self.global.clear();
    }

    fn keys(scope: Scope<'_>, class: OpClass) -> (PrincipalKey, GlobalKey) {
        let sub = scope.subscription.to_ascii_lowercase();
        let region = region_key(scope.region);
        (
            (
                sub.clone(),
                scope.principal.to_ascii_lowercase(),
                region.clone(),
                class,
            ),
            (sub, region, class),
        )
    }

    /// Takes one token from the caller's bucket and one from the subscription's global bucket,
    /// or none at all when either is empty.
    pub fn draw(&mut self, scope: Scope<'_>, class: OpClass, now: Instant) -> Draw {
        let pcfg = self.config.principal_bucket(class);
        let gcfg = self.config.global_bucket(class);
        if !self.config.enabled {
            return Draw::Allowed(Remaining {
                principal: floor(pcfg.capacity),
                global: gcfg.map(|g| floor(g.capacity)),
            });
        }
        let (pkey, gkey) = Self::keys(scope, class);
        let principal = self
            .principals
            .entry(pkey)
            .or_insert_with(|| Bucket::full(pcfg, now));
        principal.refill(pcfg, now);
        let global = match gcfg {
            Some(g) => {
                let b = self
                    .global
                    .entry(gkey)
                    .or_insert_with(|| Bucket::full(g, now));
                b.refill(g, now);
                Some((b, g))
            }
            None => None,
        };
        let waits = [
            principal.wait(pcfg),
            global.as_ref().and_then(|(b, g)| b.wait(*g)),
        ];
        if let Some(wait) = waits.into_iter().flatten().reduce(f64::max) {
            return Draw::Throttled {
                retry_after: (wait.ceil() as u64).max(1),
                remaining: Remaining {
                    principal: floor(principal.tokens),
                    global: global.map(|(b, _)| floor(b.tokens)),
                },
            };
        }
        principal.tokens -= 1.0;
        Draw::Allowed(Remaining {
            principal: floor(principal.tokens),
            global: global.map(|(b, _)| {
                b.tokens -= 1.0;
                floor(b.tokens)
            }),
        })
    }

    /// What is left without taking anything: for answers refused before a token is drawn
    /// (RBAC denials), which ARM still decorates with the headers.
    pub fn peek(&self, scope: Scope<'_>, class: OpClass, now: Instant) -> Remaining {
        let pcfg = self.config.principal_bucket(class);
        let (pkey, gkey) = Self::keys(scope, class);
        let level = |b: Option<&Bucket>, cfg: BucketConfig| {
            floor(match b {
                Some(b) if self.config.enabled => b.level(cfg, now),
                _ => cfg.capacity,
            })
        };
        Remaining {
            principal: level(self.principals.get(&pkey), pcfg),
            global: self
                .config
                .global_bucket(class)
                .map(|g| level(self.global.get(&gkey), g)),
        }
    }

    /// The global bucket only, for answers with no verified principal (401).
    pub fn peek_global(
        &self,
        subscription: &str,
        region: &str,
        class: OpClass,
        now: Instant,
    ) -> Option<u64> {
        let scope = Scope {
            subscription,
            principal: "",
            region,
        };
        self.peek(scope, class, now).global
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const SUB: &str = "11111111-2222-3333-4444-555555555555";

    fn scope<'a>(principal: &'a str) -> Scope<'a> {
        Scope {
            subscription: SUB,
            principal,
            region: "eastus",
        }
    }

    /// Reads: 3 per principal, 6 global (multiplier 2); slow refill so nothing comes back
    /// unless the test moves the clock.
    fn small() -> ThrottleConfig {
        ThrottleConfig {
            reads: BucketConfig {
                capacity: 3.0,
                refill_per_sec: 0.5,
            },
            global_multiplier: 2.0,
            ..ThrottleConfig::default()
        }
    }

    fn allowed(d: Draw) -> Remaining {
        match d {
            Draw::Allowed(r) => r,
            Draw::Throttled { .. } => panic!("throttled: {d:?}"),
        }
    }

    #[test]
    fn defaults_are_arms_2024_limits() {
        let c = ThrottleConfig::default();
        assert_eq!(c.reads.capacity, 250.0);
        assert_eq!(c.reads.refill_per_sec, 25.0);
        assert_eq!(c.writes.capacity, 200.0);
        assert_eq!(c.writes.refill_per_sec, 10.0);
        assert_eq!(c.deletes.capacity, 200.0);
        assert_eq!(c.deletes.refill_per_sec, 10.0);
        assert_eq!(c.global_multiplier, 15.0);
        // C1 shows `x-ms-ratelimit-remaining-subscription-global-reads: 3749` after one read.
        let mut t = Throttle::new(c);
        let r = allowed(t.draw(scope("p"), OpClass::Read, Instant::now()));
        assert_eq!(
            r,
            Remaining {
                principal: 249,
                global: Some(3749)
            }
        );
    }

    #[test]
    fn principals_have_separate_buckets_but_share_the_global_one() {
        let mut t = Throttle::new(small());
        let now = Instant::now();
        let seen: Vec<Remaining> = (0..3)
            .map(|_| allowed(t.draw(scope("a"), OpClass::Read, now)))
            .collect();
        assert_eq!(
            seen.iter().map(|r| r.principal).collect::<Vec<_>>(),
            [2, 1, 0]
        );
        assert_eq!(
            seen.iter().map(|r| r.global).collect::<Vec<_>>(),
            [Some(5), Some(4), Some(3)]
        );
        // `a` is out; `b` starts full but draws from the same global bucket.
        assert!(matches!(
            t.draw(scope("a"), OpClass::Read, now),
            Draw::Throttled { .. }
        ));
        let b = allowed(t.draw(scope("B"), OpClass::Read, now));
        assert_eq!(
            b,
            Remaining {
                principal: 2,
                global: Some(2)
            }
        );
        // Principal ids are case-insensitive, classes and subscriptions separate.
        assert_eq!(t.peek(scope("b"), OpClass::Read, now).principal, 2);
        assert_eq!(
            allowed(t.draw(scope("a"), OpClass::Write, now)).principal,
            199
        );
        let other = Scope {
            subscription: "other",
            ..scope("a")
        };
        assert_eq!(
            allowed(t.draw(other, OpClass::Read, now)),
            Remaining {
                principal: 2,
                global: Some(5)
            }
        );
    }

    #[test]
    fn global_bucket_throttles_principals_that_together_exceed_it() {
        let mut t = Throttle::new(small());
        let now = Instant::now();
        for p in ["a", "b"] {
            for _ in 0..3 {
                allowed(t.draw(scope(p), OpClass::Read, now));
            }
        }
        // `c` has a full bucket of its own, but the subscription's is empty: 1 token at
        // 0.5 × 2 = 1 token/s ⇒ 1 s.
        match t.draw(scope("c"), OpClass::Read, now) {
            Draw::Throttled {
                retry_after,
                remaining,
            } => {
                assert_eq!(retry_after, 1);
                assert_eq!(
                    remaining,
                    Remaining {
                        principal: 3,
                        global: Some(0)
                    }
                );
            }
            d => panic!("not throttled: {d:?}"),
        }
        // The refusal took nothing from `c`; after a second the global bucket has one token.
        let later = now + Duration::from_secs(1);
        assert_eq!(
            allowed(t.draw(scope("c"), OpClass::Read, later)),
            Remaining {
                principal: 2,
                global: Some(0)
            }
        );
        // Another region is another ARM instance with its own buckets.
        let west = Scope {
            region: "West Europe",
            ..scope("a")
        };
        assert_eq!(allowed(t.draw(west, OpClass::Read, now)).global, Some(5));
    }

    #[test]
    fn throttled_draws_take_nothing_and_retry_after_follows_the_refill() {
        let mut t = Throttle::new(small());
        let now = Instant::now();
        for _ in 0..3 {
            allowed(t.draw(scope("a"), OpClass::Read, now));
        }
        // Empty principal bucket refilling 0.5/s: 2 s to the next token.
        for _ in 0..5 {
            assert_eq!(
                t.draw(scope("a"), OpClass::Read, now),
                Draw::Throttled {
                    retry_after: 2,
                    remaining: Remaining {
                        principal: 0,
                        global: Some(3)
                    }
                }
            );
        }
        // Half-way there: 1.5 s to go rounds up to 2; the global bucket was not drained by
        // the refusals above.
        let t1 = now + Duration::from_millis(500);
        assert!(matches!(
            t.draw(scope("a"), OpClass::Read, t1),
            Draw::Throttled { retry_after: 2, .. }
        ));
        let t2 = now + Duration::from_secs(2);
        assert_eq!(
            allowed(t.draw(scope("a"), OpClass::Read, t2)),
            Remaining {
                principal: 0,
                global: Some(4)
            }
        );
        // Long idle refills to capacity, not beyond.
        let t3 = now + Duration::from_secs(3600);
        assert_eq!(t.peek(scope("a"), OpClass::Read, t3).principal, 3);
        assert_eq!(t.peek(scope("a"), OpClass::Read, t3).global, Some(6));
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let mut cfg = small();
        cfg.reads = BucketConfig {
            capacity: 1.0,
            refill_per_sec: 100.0,
        };
        let mut t = Throttle::new(cfg);
        let now = Instant::now();
        allowed(t.draw(scope("a"), OpClass::Read, now));
        assert!(matches!(
            t.draw(scope("a"), OpClass::Read, now),
            Draw::Throttled { retry_after: 1, .. }
        ));
    }

    #[test]
    fn disabled_never_throttles_and_reports_capacity() {
        let mut t = Throttle::new(ThrottleConfig {
            enabled: false,
            ..small()
        });
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(
                t.draw(scope("a"), OpClass::Read, now),
                Draw::Allowed(Remaining {
                    principal: 3,
                    global: Some(6)
                })
            );
        }
    }

    #[test]
    fn a_multiplier_that_is_not_positive_switches_the_global_bucket_off() {
        for m in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let mut t = Throttle::new(ThrottleConfig {
                global_multiplier: m,
                ..small()
            });
            let now = Instant::now();
            for p in ["a", "b", "c"] {
                for _ in 0..3 {
                    assert_eq!(
                        allowed(t.draw(scope(p), OpClass::Read, now)).global,
                        None,
                        "{m}"
                    );
                }
            }
        }
    }

    #[test]
    fn scaling_multiplies_budgets_and_keeps_the_ratio() {
        let c = ThrottleConfig::default().scaled(10.0);
        assert_eq!(c.reads.capacity, 2500.0);
        assert_eq!(c.reads.refill_per_sec, 250.0);
        assert_eq!(c.writes.capacity, 2000.0);
        assert_eq!(c.deletes.refill_per_sec, 100.0);
        assert_eq!(c.global_multiplier, 15.0);
        assert!(c.enabled);
        let mut t = Throttle::new(c);
        let r = allowed(t.draw(scope("a"), OpClass::Write, Instant::now()));
        assert_eq!(
            r,
            Remaining {
                principal: 1999,
                global: Some(29_999)
            }
        );
    }

    #[test]
    fn configs_written_before_the_global_bucket_still_load() {
        let old = serde_json::json!({
            "enabled": true,
            "reads": {"capacity": 250.0, "refill_per_sec": 25.0},
            "writes": {"capacity": 200.0, "refill_per_sec": 10.0},
            "deletes": {"capacity": 200.0, "refill_per_sec": 10.0},
        });
        let c: ThrottleConfig = serde_json::from_value(old).expect("old config");
        assert_eq!(c, ThrottleConfig::default());
        let round: ThrottleConfig = serde_json::from_value(
            serde_json::to_value(ThrottleConfig::default().scaled(2.0)).expect("ser"),
        )
        .expect("de");
        assert_eq!(round, ThrottleConfig::default().scaled(2.0));
    }

    #[test]
    fn region_keys_ignore_case_and_spaces() {
        assert_eq!(region_key("East US 2"), "eastus2");
        assert_eq!(region_key("eastus2"), "eastus2");
    }
}
