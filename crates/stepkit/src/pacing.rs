//! The ARM request budget every replica of every service shares, per subscription.
//!
//! ARM throttles per subscription × principal × region (reads 250 / 25 s⁻¹, writes and deletes
//! 200 / 10 s⁻¹). One budget per (subscription, principal, region, class) lives in JetStream
//! KV ([`hypersaga_pacer`]); each request reserves its slot there and sleeps until it, ARM's
//! `x-ms-ratelimit-remaining-*` lowers it when others use the subscription too, and a 429
//! holds everyone back for its `Retry-After`. A step whose budget is spent far ahead is not
//! started at all: the worker defers it without holding a slot ([`ArmClients::defer`]).
//!
//! [`ArmClients::defer`]: crate::ArmClients::defer

use std::sync::Arc;
use std::time::Duration;

use hypersaga_azure::{Feedback, Gate, RequestClass};
use hypersaga_config::ArmBudget;
use hypersaga_pacer::{Pacer, Rate};
use tracing::warn;

/// The shared budgets, configured.
#[derive(Clone, Debug)]
pub struct Budgets {
    pacer: Pacer,
    region: String,
    reads: Rate,
    writes: Rate,
    deletes: Rate,
    headroom: f64,
    defer_after: Duration,
}

impl Budgets {
    /// Budgets over `pacer`, at `headroom` of ARM's limits as `budget` gives them; `None` when
    /// pacing is off.
    pub fn new(pacer: Pacer, region: &str, budget: &ArmBudget) -> Option<Self> {
        if !budget.enabled {
            return None;
        }
        let headroom = budget.headroom.clamp(0.05, 1.0);
        let rate = |per_sec: f64, burst: u32| {
            Rate::new(
                per_sec * headroom,
                ((f64::from(burst) * headroom) as u32).max(1),
            )
        };
        Some(Self {
            pacer,
            region: region.to_ascii_lowercase().replace(' ', ""),
            reads: rate(budget.reads_per_sec, budget.reads_burst),
            writes: rate(budget.writes_per_sec, budget.writes_burst),
            deletes: rate(budget.deletes_per_sec, budget.deletes_burst),
            headroom,
            defer_after: Duration::from_millis(budget.defer_after_ms),
        })
    }

    fn rate(&self, class: RequestClass) -> Rate {
        match class {
            RequestClass::Read => self.reads,
            RequestClass::Write => self.writes,
            RequestClass::Delete => self.deletes,
        }
    }

    /// `<subscription>.<principal>.<region>.<class>`: ARM's throttling scope.
    fn key(&self, subscription: &str, principal: &str, class: RequestClass) -> String {
        format!(
            "{}.{}.{}.{}",
            subscription.to_ascii_lowercase(),
            principal.to_ascii_lowercase(),
            self.region,
            class.as_str()
        )
    }

    /// The gate for one principal's requests to one subscription.
    pub fn gate(&self, subscription: &str, principal: &str) -> Arc<dyn Gate> {
        Arc::new(PacerGate {
            budgets: self.clone(),
            subscription: subscription.to_owned(),
            principal: principal.to_owned(),
        })
    }

    /// How long before a request of `class` would get its slot, when that is further ahead
    /// than the deferral threshold.
    pub async fn defer(
        &self,
        subscription: &str,
        principal: &str,
        class: RequestClass,
    ) -> Option<Duration> {
        let key = self.key(subscription, principal, class);
        match self.pacer.peek(&key, self.rate(class)).await {
            Ok(wait) if wait > self.defer_after => {
                deferred(subscription, class);
                Some(wait)
            }
            Ok(_) => None,
            Err(e) => {
                warn!(error = %e, %key, "cannot read the ARM budget; not deferring");
                None
            }
        }
    }
}

/// Counts work given back because its slot of `subscription`'s budget was further away than
/// the deferral threshold: a step deferred before it ran, or a request refused in one.
fn deferred(subscription: &str, class: RequestClass) {
    metrics::counter!(
        "hypersaga_arm_budget_deferrals_total",
        "subscription" => subscription.to_ascii_lowercase(),
        "class" => class.as_str(),
    )
    .increment(1);
}

/// Paces one principal's requests to one subscription through the shared budgets. Never fails
/// a request: a budget that cannot be reached lets it through (ARM's own limits remain).
#[derive(Debug)]
struct PacerGate {
    budgets: Budgets,
    subscription: String,
    principal: String,
}

#[async_trait::async_trait]
impl Gate for PacerGate {
    async fn admit(&self, class: RequestClass) -> Result<(), Duration> {
        let b = &self.budgets;
        let key = b.key(&self.subscription, &self.principal, class);
        let rate = b.rate(class);
        // A slot further away than the deferral threshold is not waited for in a worker slot:
        // the step gives its slot back and comes again then (nothing is reserved for it). So at
        // most that threshold's worth of the budget sleeps at any moment, fleet-wide, and a
        // replica killed while its requests sleep wastes no more than its share of it.
        match b.pacer.reserve_within(&key, rate, b.defer_after).await {
            Ok(Ok(wait)) => {
                metrics::histogram!(
                    "hypersaga_arm_budget_wait_seconds",
                    "subscription" => self.subscription.to_ascii_lowercase(),
                    "class" => class.as_str(),
                )
                .record(wait.as_secs_f64());
                // Not the step's own time: its deadline does not count it.
                hypersaga_worker::count_paced(wait);
                tokio::time::sleep(wait).await
            }
            Ok(Err(wait)) => {
                deferred(&self.subscription, class);
                return Err(wait);
            }
            Err(e) => {
                warn!(error = %e, %key, "cannot reserve from the ARM budget; sending unpaced")
            }
        }
        Ok(())
    }

    async fn observe(&self, feedback: Feedback) {
        let b = &self.budgets;
        let key = b.key(&self.subscription, &self.principal, feedback.class);
        let rate = b.rate(feedback.class);
        let result = if feedback.status == 429 {
            let wait = feedback.retry_after.unwrap_or(Duration::from_secs(1));
            b.pacer.penalize(&key, rate, wait).await
        } else if let Some(remaining) = feedback.remaining {
            // ARM counts its whole bucket; ours is `headroom` of it.
            b.pacer
                .observe_remaining(&key, rate, (remaining as f64 * b.headroom) as u64)
                .await
        } else {
            return;
        };
        if let Err(e) = result {
            warn!(error = %e, %key, "cannot update the ARM budget");
        }
    }
}
