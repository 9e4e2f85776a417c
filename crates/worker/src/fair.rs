//! Fair share between tenants: one durable consumer per tenant for a service, served
//! round-robin, so one tenant's burst of commands never queues ahead of another tenant's.
//!
//! Each free slot takes the next command from the next tenant that has one. Which tenants
//! have work is learnt from a doorbell (a core subscription on the service's command subjects:
//! every command published rings it) and from a sweep every second (a retry held back with
//! NAK-delay comes due without a new publish). A fetch that finds nothing clears the tenant
//! until the next ring or sweep, so idle tenants cost nothing.

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

pub(crate) struct TenantQueues {
    queues: Vec<Consumer<pull::Config>>,
    index: HashMap<String, usize>,
    ready: Vec<bool>,
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
        let ready = vec![true; queues.len()];
        Ok(Self {
            queues,
            index,
            ready,
            next: 0,
            doorbell,
            swept: Instant::now(),
        })
    }

    /// The next command, taken from tenants in turn; waits until one has a command. `None`
    /// on shutdown.
    pub async fn next(&mut self, shutdown: &CancellationToken) -> Option<Message> {
        if self.queues.is_empty() {
            shutdown.cancelled().await;
            return None;
        }
        loop {
            if self.swept.elapsed() >= SWEEP {
                self.ready.iter_mut().for_each(|r| *r = true);
                self.swept = Instant::now();
            }
            let n = self.queues.len();
            for k in 0..n {
                let i = (self.next + k) % n;
                if !self.ready[i] {
                    continue;
                }
                match self.fetch_one(i).await {
                    Some(msg) => {
                        self.next = i + 1;
                        return Some(msg);
                    }
                    None => self.ready[i] = false,
                }
            }
            let wake = self.swept + SWEEP;
            tokio::select! {
                () = shutdown.cancelled() => return None,
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
        if let Some(i) = subject.split('.').nth(1).and_then(|t| self.index.get(t)) {
            self.ready[*i] = true;
        }
    }

    /// One command of tenant `i`, if it has one now (a no-wait fetch).
    async fn fetch_one(&self, i: usize) -> Option<Message> {
        let mut batch = match self.queues[i].fetch().max_messages(1).messages().await {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "pull failed");
                return None;
            }
        };
        match batch.next().await {
            Some(Ok(msg)) => Some(msg),
            Some(Err(e)) => {
                warn!(error = %e, "pull failed");
                None
            }
            None => None,
        }
    }
}
