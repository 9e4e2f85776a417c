//! Fair share between tenants: one durable consumer per tenant for a service, served
//! round-robin, so one tenant's burst of commands never queues ahead of another tenant's.
//!
//! Free slots are filled from the tenants that have work, in turn, each giving at most its
//! share of them in one fetch. Which tenants have work is learnt from a doorbell (a core
//! subscription on the service's command subjects: every command published rings it) and from
//! a sweep every second (a retry held back with NAK-delay comes due without a new publish). A
//! fetch that finds nothing clears the tenant until the next ring or sweep, so idle tenants
//! cost nothing.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::Message;
use async_nats::jetstream::consumer::{AckPolicy, Consumer, pull};
use futures::{FutureExt as _, StreamExt};
use hypersaga_bus::{Bus, CMD_STREAM};
use hypersaga_model::TenantId;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::{Error, Result};

/// How often every tenant is looked at again, for commands that came due without a publish.
const SWEEP: Duration = Duration::from_secs(1);
/// A no-wait fetch is answered at once; one that is not was lost with its server (a
/// disconnect, a consumer leader failing over) and would otherwise be waited on for ever.
/// Commands it may still bring later go unacknowledged and are redelivered.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// The doorbell rings as a command is published, which can be a moment before its stream has
/// stored it: a fetch that finds nothing right after a ring looks again after these pauses.
const AFTER_RING: [Duration; 3] = [
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(40),
];

pub(crate) struct TenantQueues {
    queues: Vec<Consumer<pull::Config>>,
    index: HashMap<String, usize>,
    ready: Vec<bool>,
    /// Per tenant: when to look again after a ring found nothing, and how many such looks
    /// were taken since its last ring.
    again_at: Vec<Option<Instant>>,
    misses: Vec<usize>,
    next: usize,
    doorbell: async_nats::Subscriber,
    swept: Instant,
}

impl TenantQueues {
    /// Creates (or finds) each tenant's durable consumer for `service`.
    pub async fn open(
        bus: &Bus,
        service: &str,
        tenants: &[TenantId],
        ack_wait: Duration,
    ) -> Result<Self> {
        let err = |consumer: &str, e: &dyn std::fmt::Display| Error::Consumer {
            consumer: consumer.to_owned(),
            message: e.to_string(),
        };
        let stream = bus
            .jetstream()
            .get_stream(CMD_STREAM)
            .await
            .map_err(|e| err(service, &e))?;
        let mut queues = Vec::with_capacity(tenants.len());
        let mut index = HashMap::new();
        for tenant in tenants {
            let name = hypersaga_bus::subjects::worker_consumer(service, tenant);
            let consumer = stream
                .get_or_create_consumer(
                    &name,
                    pull::Config {
                        durable_name: Some(name.clone()),
                        filter_subject: bus.subjects().cmd(tenant, service),
                        ack_policy: AckPolicy::Explicit,
                        ack_wait,
                        // Attempts are counted and bounded by the coordinator, not by redelivery.
                        max_deliver: -1,
                        // Work is bounded by the replicas' slots; the server-side cap is shared by
                        // all replicas and holds NAK-delayed retries too, so keep it out of the way.
                        max_ack_pending: 10_000,
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| err(&name, &e))?;
            index.insert(tenant.to_string(), queues.len());
            queues.push(consumer);
        }
        let doorbell = bus
            .client()
            .subscribe(bus.subjects().cmd_filter(service))
            .await
            .map_err(|e| err(service, &e))?;
        let n = queues.len();
        Ok(Self {
            queues,
            index,
            ready: vec![true; n],
            again_at: vec![None; n],
            misses: vec![AFTER_RING.len(); n],
            next: 0,
            doorbell,
            swept: Instant::now(),
        })
    }

    /// Up to `slots` commands (at least one), taken from tenants in turn; waits until one has
    /// a command. Empty on shutdown.
    pub async fn next(&mut self, slots: usize, shutdown: &CancellationToken) -> Vec<Message> {
        if self.queues.is_empty() {
            shutdown.cancelled().await;
            return Vec::new();
        }
        let slots = slots.max(1);
        loop {
            if self.swept.elapsed() >= SWEEP {
                self.ready.iter_mut().for_each(|r| *r = true);
                self.swept = Instant::now();
            }
            let now = Instant::now();
            for (ready, again) in self.ready.iter_mut().zip(&mut self.again_at) {
                if again.is_some_and(|t| t <= now) {
                    *ready = true;
                    *again = None;
                }
            }
            let n = self.queues.len();
            let mut taken = Vec::new();
            for k in 0..n {
                let ready = self.ready.iter().filter(|r| **r).count();
                let left = slots - taken.len();
                if left == 0 || ready == 0 {
                    break;
                }
                let i = (self.next + k) % n;
                if !self.ready[i] {
                    continue;
                }
                // The tenant's share of the slots left, among the tenants with work.
                let share = left.div_ceil(ready);
                let got = self.fetch(i, share).await;
                if got.len() < share {
                    // It has no more for now; the doorbell or the sweep says when it does.
                    self.ready[i] = false;
                    if got.is_empty() && self.misses[i] < AFTER_RING.len() {
                        self.again_at[i] = Some(Instant::now() + AFTER_RING[self.misses[i]]);
                        self.misses[i] += 1;
                    }
                }
                if !got.is_empty() {
                    self.next = i + 1;
                }
                taken.extend(got);
            }
            if !taken.is_empty() {
                return taken;
            }
            let wake = self
                .again_at
                .iter()
                .flatten()
                .copied()
                .fold(self.swept + SWEEP, Instant::min);
            tokio::select! {
                () = shutdown.cancelled() => return Vec::new(),
                ring = self.doorbell.next() => match ring {
                    Some(msg) => {
                        self.ring(&msg.subject);
                        // Everything else that rang meanwhile, without waiting.
                        while let Some(Some(msg)) = self.doorbell.next().now_or_never() {
                            self.ring(&msg.subject);
                        }
                    }
                    None => tokio::time::sleep_until(wake).await,
                },
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Marks the tenant of `<p>.<tenant>.cmd.<service>` as having work.
    fn ring(&mut self, subject: &str) {
        if let Some(&i) = subject.split('.').nth(1).and_then(|t| self.index.get(t)) {
            self.ready[i] = true;
            self.again_at[i] = None;
            self.misses[i] = 0;
        }
    }

    /// Up to `max` commands of tenant `i` that are there now (a no-wait fetch).
    async fn fetch(&self, i: usize, max: usize) -> Vec<Message> {
        let mut batch = match self.queues[i].fetch().max_messages(max).messages().await {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "pull failed");
                return Vec::new();
            }
        };
        let mut got = Vec::with_capacity(max);
        let collect = async {
            while let Some(msg) = batch.next().await {
                match msg {
                    Ok(msg) => got.push(msg),
                    Err(e) => {
                        warn!(error = %e, "pull failed");
                        break;
                    }
                }
            }
        };
        if tokio::time::timeout(FETCH_TIMEOUT, collect).await.is_err() {
            warn!(
                timeout_ms = FETCH_TIMEOUT.as_millis() as u64,
                "a pull went unanswered (its server lost?); asking again"
            );
        }
        got
    }
}
