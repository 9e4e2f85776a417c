//! Fair share between tenants: one durable consumer per tenant for a service, served
//! round-robin, so one tenant's burst of commands never queues ahead of another tenant's.
//!
//! Free slots are filled from the tenants that have work, in turn, each giving at most its
//! share of them in one fetch. Which tenants have work is learnt from a doorbell (a core
//! subscription on the service's command subjects: every command published rings it) and from
//! a sweep every second (a retry held back with NAK-delay comes due without a new publish). A
//! fetch that finds nothing clears the tenant until the next ring or sweep, so idle tenants
//! cost nothing. A command this replica held back tells its tenant's queue when it comes due
//! ([`Due`]), so a re-check asked for in 50 ms is not left to the sweep (up to a second later,
//! on every wait of an operation).
//!
//! Tenants are live data, and most of them are idle most of the time, so what a replica holds
//! follows the work, not the number of tenants: it opens at start the queues of the tenants
//! with commands stored (and any it is told of), then that of any tenant whose command rings
//! its doorbell; a queue without work for [`RETIRE_AFTER`] is let go (no more sweeping it), and
//! nats-server deletes a consumer nobody has pulled from for [`CONSUMER_INACTIVE`]. A tenant's
//! next command opens its queue again.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::time::Duration;

use async_nats::jetstream::Message;
use async_nats::jetstream::consumer::{AckPolicy, Consumer, pull};
use futures::{FutureExt as _, StreamExt};
use hypersaga_bus::{Bus, CMD_STREAM};
use hypersaga_model::TenantId;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::{Error, Result};

/// Keeps the items of `v` whose flag in `keep` is set (the vectors of a queue's state stay
/// aligned).
fn keep_where<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut flags = keep.iter();
    v.retain(|_| *flags.next().unwrap_or(&true));
}

fn consumer_error(consumer: &str, e: &dyn std::fmt::Display) -> Error {
    Error::Consumer {
        consumer: consumer.to_owned(),
        message: e.to_string(),
    }
}

/// How often every tenant is looked at again, for commands that came due without a publish.
const SWEEP: Duration = Duration::from_secs(1);
/// A queue that had no work for this long is let go by this replica.
const RETIRE_AFTER: Duration = Duration::from_secs(600);
/// nats-server deletes a tenant's consumer after this long without a pull from any replica
/// (its stored commands stay, for the next consumer).
const CONSUMER_INACTIVE: Duration = Duration::from_secs(3600);
/// A no-wait fetch is answered at once; one that is not was lost with its server (a
/// disconnect, a consumer leader failing over) and would otherwise be waited on for ever.
/// Commands it may still bring later go unacknowledged and are redelivered.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// A command handed back with a NAK delay is redelivered that long after the server took the
/// NAK, a moment after it was sent: it is looked for this much later.
const REDELIVERY_MARGIN: Duration = Duration::from_millis(5);
/// The doorbell rings as a command is published, which can be a moment before its stream has
/// stored it: a fetch that finds nothing right after a ring looks again after these pauses.
const AFTER_RING: [Duration; 3] = [
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(40),
];

/// Tells the tenants' queues when a command handed back with a NAK delay is due again.
#[derive(Clone)]
pub(crate) struct Due(mpsc::UnboundedSender<(TenantId, Instant)>);

impl Due {
    /// `tenant` has a command coming back after `wait` (a NAK with that delay, just sent).
    pub(crate) fn after(&self, tenant: &TenantId, wait: Duration) {
        // The queues outlive every task that holds this; once they are gone nobody fetches.
        let _ = self.0.send((tenant.clone(), Instant::now() + wait));
    }
}

/// When the held-back commands of each tenant come due, earliest first.
#[derive(Default)]
struct Coming(BinaryHeap<Reverse<(Instant, TenantId)>>);

impl Coming {
    /// A command of `tenant` handed back to come again at `at` (by this replica's clock).
    fn push(&mut self, tenant: TenantId, at: Instant) {
        self.0.push(Reverse((at + REDELIVERY_MARGIN, tenant)));
    }

    /// When the next one is due.
    fn next(&self) -> Option<Instant> {
        self.0.peek().map(|Reverse((at, _))| *at)
    }

    /// The tenants with a command due by `now`, each once, forgotten here.
    fn due_by(&mut self, now: Instant) -> HashSet<TenantId> {
        let mut due = HashSet::new();
        while self.next().is_some_and(|at| at <= now) {
            if let Some(Reverse((_, tenant))) = self.0.pop() {
                due.insert(tenant);
            }
        }
        due
    }
}

pub(crate) struct TenantQueues {
    stream: async_nats::jetstream::stream::Stream,
    bus: Bus,
    service: String,
    ack_wait: Duration,
    queues: Vec<Consumer<pull::Config>>,
    index: HashMap<String, usize>,
    /// Tenants whose commands rang the doorbell before this replica had a queue for them
    /// (onboarded since it started): their queues are opened before the next fetch.
    unopened: HashSet<String>,
    ready: Vec<bool>,
    /// Per tenant: when to look again after a ring found nothing, and how many such looks
    /// were taken since its last ring.
    again_at: Vec<Option<Instant>>,
    misses: Vec<usize>,
    /// Per tenant: when it last had work (a ring or a command fetched).
    worked: Vec<Instant>,
    next: usize,
    doorbell: async_nats::Subscriber,
    swept: Instant,
    /// When commands held back by this replica's tasks come due (see [`Due`]): told through
    /// `due` and `told`, kept in `coming` until then.
    due: Due,
    told: mpsc::UnboundedReceiver<(TenantId, Instant)>,
    coming: Coming,
}

impl TenantQueues {
    /// Opens the queues of `tenants` and of every tenant with commands of `service` stored now;
    /// any other gets its own when its first command rings.
    pub async fn open(
        bus: &Bus,
        service: &str,
        tenants: &[TenantId],
        ack_wait: Duration,
    ) -> Result<Self> {
        let stream = bus
            .jetstream()
            .get_stream(CMD_STREAM)
            .await
            .map_err(|e| consumer_error(service, &e))?;
        let doorbell = bus
            .client()
            .subscribe(bus.subjects().cmd_filter(service))
            .await
            .map_err(|e| consumer_error(service, &e))?;
        let (due, told) = mpsc::unbounded_channel();
        let mut queues = Self {
            stream,
            bus: bus.clone(),
            service: service.to_owned(),
            ack_wait,
            queues: Vec::with_capacity(tenants.len()),
            index: HashMap::new(),
            unopened: HashSet::new(),
            ready: Vec::new(),
            again_at: Vec::new(),
            misses: Vec::new(),
            worked: Vec::new(),
            next: 0,
            doorbell,
            swept: Instant::now(),
            due: Due(due),
            told,
            coming: Coming::default(),
        };
        let stored = queues.with_stored_commands().await;
        for tenant in tenants.iter().chain(&stored) {
            queues.add(tenant).await?;
        }
        // Known at start: looked at by the sweep, not chased as if they had just rung.
        queues.misses.fill(AFTER_RING.len());
        Ok(queues)
    }

    /// Opens `tenant`'s queue (its durable consumer of this service's commands), ready to be
    /// looked at.
    async fn add(&mut self, tenant: &TenantId) -> Result<()> {
        if self.index.contains_key(tenant.as_str()) {
            return Ok(());
        }
        let name = hypersaga_bus::subjects::worker_consumer(&self.service, tenant);
        let consumer = self
            .stream
            .get_or_create_consumer(
                &name,
                pull::Config {
                    durable_name: Some(name.clone()),
                    filter_subject: self.bus.subjects().cmd(tenant, &self.service),
                    ack_policy: AckPolicy::Explicit,
                    ack_wait: self.ack_wait,
                    // Attempts are counted and bounded by the coordinator, not by redelivery.
                    max_deliver: -1,
                    // Work is bounded by the replicas' slots; the server-side cap is shared by
                    // all replicas and holds NAK-delayed retries too, so keep it out of the way.
                    max_ack_pending: 10_000,
                    inactive_threshold: CONSUMER_INACTIVE,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| consumer_error(&name, &e))?;
        self.index.insert(tenant.to_string(), self.queues.len());
        self.queues.push(consumer);
        self.ready.push(true);
        self.again_at.push(None);
        self.misses.push(0);
        self.worked.push(Instant::now());
        Ok(())
    }

    /// The tenants with commands of this service stored in the stream now (delivered and
    /// unacknowledged ones included): a replica starting must serve them even if no ring
    /// comes. A stream that cannot be read says none; their next publish rings.
    async fn with_stored_commands(&self) -> Vec<TenantId> {
        let filter = self.bus.subjects().cmd_filter(&self.service);
        let mut subjects = match self.stream.info_with_subjects(&filter).await {
            Ok(s) => s,
            Err(e) => {
                warn!(error = %e, "cannot list the tenants with commands stored");
                return Vec::new();
            }
        };
        let mut tenants = Vec::new();
        while let Some(Ok((subject, _count))) = subjects.next().await {
            if let Some(t) = subject
                .split('.')
                .nth(1)
                .and_then(|t| TenantId::new(t).ok())
            {
                tenants.push(t);
            }
        }
        tenants
    }

    /// What the tasks that hold commands back tell the queues through.
    pub(crate) fn due(&self) -> Due {
        self.due.clone()
    }

    /// Marks the tenants whose held-back commands are due by `now` as having work. The server
    /// redelivers a moment after the NAK reached it, so a look taken just before finds nothing:
    /// one more look follows ([`AFTER_RING`]'s last), not the sweep's second. A tenant whose
    /// queue was let go meanwhile is opened again.
    fn due_by(&mut self, now: Instant) {
        for tenant in self.coming.due_by(now) {
            match self.index.get(tenant.as_str()) {
                Some(&i) => {
                    self.ready[i] = true;
                    self.misses[i] = self.misses[i].max(AFTER_RING.len() - 1);
                }
                None => {
                    self.unopened.insert(tenant.to_string());
                }
            }
        }
    }

    /// Lets go of the queues that had no work for [`RETIRE_AFTER`]: they are swept no more.
    fn retire_idle(&mut self) {
        let now = Instant::now();
        let keep: Vec<bool> = self
            .worked
            .iter()
            .map(|w| now.duration_since(*w) < RETIRE_AFTER)
            .collect();
        if keep.iter().all(|k| *k) {
            return;
        }
        let retired = keep.iter().filter(|k| !**k).count();
        keep_where(&mut self.queues, &keep);
        keep_where(&mut self.ready, &keep);
        keep_where(&mut self.again_at, &keep);
        keep_where(&mut self.misses, &keep);
        keep_where(&mut self.worked, &keep);
        let mut names: Vec<(String, usize)> = self.index.drain().collect();
        names.sort_by_key(|(_, i)| *i);
        let mut position = 0;
        for ((name, _), kept) in names.into_iter().zip(&keep) {
            if *kept {
                self.index.insert(name, position);
                position += 1;
            }
        }
        self.next = 0;
        tracing::debug!(service = %self.service, retired, open = self.queues.len(), "idle tenants' queues let go");
    }

    /// Opens the queues of tenants that rang without one. One that cannot be opened now is
    /// tried again at its next ring (its commands wait in the stream meanwhile).
    async fn open_rung(&mut self) {
        for tenant in std::mem::take(&mut self.unopened) {
            let Ok(id) = TenantId::new(tenant.clone()) else {
                continue;
            };
            match self.add(&id).await {
                Ok(()) => {
                    tracing::info!(service = %self.service, tenant = %id, "serving a new tenant")
                }
                Err(e) => warn!(tenant = %id, error = %e, "cannot open a new tenant's queue yet"),
            }
        }
    }

    /// Up to `slots` commands (at least one), taken from tenants in turn; waits until one has
    /// a command. Empty on shutdown.
    pub async fn next(&mut self, slots: usize, shutdown: &CancellationToken) -> Vec<Message> {
        let slots = slots.max(1);
        loop {
            // Rings that came while every slot was busy: a tenant's first command must get
            // its queue opened now, not once the others' work has drained.
            while let Some(Some(msg)) = self.doorbell.next().now_or_never() {
                self.ring(&msg.subject);
            }
            while let Ok((tenant, at)) = self.told.try_recv() {
                self.coming.push(tenant, at);
            }
            self.due_by(Instant::now());
            if !self.unopened.is_empty() {
                self.open_rung().await;
            }
            if self.swept.elapsed() >= SWEEP {
                self.retire_idle();
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
                    self.worked[i] = Instant::now();
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
                .chain(self.coming.next())
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
                Some((tenant, at)) = self.told.recv() => {
                    self.coming.push(tenant, at);
                }
            }
        }
    }

    /// Marks the tenant of `<p>.<tenant>.cmd.<service>` as having work (to be opened first,
    /// if it has no queue here yet).
    fn ring(&mut self, subject: &str) {
        let Some(tenant) = subject.split('.').nth(1) else {
            return;
        };
        match self.index.get(tenant) {
            Some(&i) => {
                self.ready[i] = true;
                self.again_at[i] = None;
                self.misses[i] = 0;
                self.worked[i] = Instant::now();
            }
            None => {
                self.unopened.insert(tenant.to_owned());
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str) -> TenantId {
        TenantId::new(name).expect("tenant id")
    }

    #[test]
    fn held_back_commands_come_due_in_time_order_each_tenant_once() {
        let start = Instant::now();
        let ms = |n: u64| start + Duration::from_millis(n);
        let mut coming = Coming::default();
        assert_eq!(coming.next(), None);
        coming.push(tenant("acme"), ms(300));
        coming.push(tenant("acme"), ms(50));
        coming.push(tenant("globex"), ms(60));
        coming.push(tenant("initech"), ms(2_000));
        // Looked for a moment after the delay, when the server has redelivered.
        assert_eq!(coming.next(), Some(ms(50) + REDELIVERY_MARGIN));
        assert!(coming.due_by(ms(50)).is_empty());
        assert_eq!(
            coming.due_by(ms(100)),
            HashSet::from([tenant("acme"), tenant("globex")])
        );
        // acme's second command is still to come, and initech's after it.
        assert_eq!(coming.next(), Some(ms(300) + REDELIVERY_MARGIN));
        assert_eq!(coming.due_by(ms(400)), HashSet::from([tenant("acme")]));
        assert_eq!(coming.due_by(ms(3_000)), HashSet::from([tenant("initech")]));
        assert_eq!(coming.next(), None);
    }
}
