//! One saga transition: load, repair, apply, compare-and-set with outbox, publish, clear.

use async_nats::jetstream::kv;
use futures::{StreamExt, TryStreamExt};
use hypersaga_bus::{AuditEvent, Bus, ENVELOPE_VERSION, OperatorCall, SagaWake, StepEvent};
use hypersaga_model::record::OperationState;
use hypersaga_saga::{Applied, Effect, Saga};
use hypersaga_telemetry::TraceParent;
use time::OffsetDateTime;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::active::{self, ActiveOps};
use crate::backlog::Backlogs;
use crate::cache::{Cache, Known, Slot};
use crate::snapshot;
use crate::{Error, Result};

mod intake;

use self::intake::SagaSettings;

/// How many slots one catch-up sweep writes at once.
const CATCH_UP_CONCURRENCY: usize = 16;

/// What woke a saga up.
#[derive(Debug)]
pub enum Input {
    /// A new operation was accepted: start dispatching.
    Wake,
    /// A service reported on a step.
    Event(Box<StepEvent>),
    /// The periodic safety net: look whether something is due (a lease, a deadline).
    Tick,
    /// The saga's timer fired, at `fired_at` by the server's clock (when it stored the tick).
    Timer { fired_at: OffsetDateTime },
    /// An operator's call (resume, retry a step, compensate, abandon).
    Operate(Box<OperatorCall>),
    /// A delete supersedes this create: stop at the next safe point, then wake it.
    Supersede { by: String },
}

/// Compare-and-set attempts before giving up (the event is then redelivered).
const MAX_CAS_TRIES: u32 = 16;

/// How long a key may be in the active index without its saga before the resync takes it
/// off (a build indexes a saga just before writing it).
const BUILD_GRACE: time::Duration = time::Duration::seconds(60);

/// How old the audit events of an outbox found in the bucket may be and still be left to
/// JetStream's de-duplication when published again: half its window, the other half for
/// clocks that disagree.
const DEDUP_TRUSTED_FOR: std::time::Duration =
    std::time::Duration::from_secs(hypersaga_bus::DEDUP_WINDOW.as_secs() / 2);

pub struct Engine {
    bus: Bus,
    sagas: kv::Store,
    clusters: kv::Store,
    /// Keys of unfinished sagas: written before a saga is built, removed once it has finished.
    active: kv::Store,
    backlogs: Backlogs,
    /// Retries and timing of the sagas this replica builds (see [`Engine::start`]).
    settings: SagaSettings,
    /// The sagas this replica works on, as it last wrote them.
    cache: Cache,
    /// What the active index says, followed by [`active::follow`].
    ops: std::sync::Arc<ActiveOps>,
}

impl Engine {
    pub async fn new(bus: Bus, config: &hypersaga_config::Config) -> Result<Self> {
        let sagas = bus.sagas().await?;
        let clusters = bus.clusters().await?;
        let active = bus.active().await?;
        let backlogs = Backlogs::new(bus.jetstream().clone());
        Ok(Self {
            bus,
            sagas,
            clusters,
            active,
            backlogs,
            settings: SagaSettings::from_config(&config.coordinator),
            cache: Cache::new(config.coordinator.cache_sagas),
            ops: Default::default(),
        })
    }

    /// Follows the active index until `shutdown`: the `hypersaga_operations_active` gauge.
    pub async fn follow_active(&self, shutdown: tokio_util::sync::CancellationToken) {
        active::follow(self.active.clone(), self.ops.clone(), shutdown).await
    }

    /// Writes what the active index says of the unfinished `saga` (its kind and visible
    /// state), compare-and-set on `seen`: the key's revision as seen before `saga` was read or
    /// written (`None`: the key had none, and must still have none). Whatever wrote the key
    /// since (a newer state, or the retirement of the saga once finished) wins, and this write
    /// is skipped: a retired key is never brought back, nor a newer state overwritten. Best
    /// effort: an index left behind is written again by the saga's next input, or the resync.
    async fn index(&self, key: &str, saga: &Saga, seen: Option<u64>) {
        let value = active::value(saga);
        match self
            .active
            .update(key, value.clone(), seen.unwrap_or(0))
            .await
        {
            Ok(revision) => self.ops.wrote(key, value, revision),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                debug!("the active index changed since it was read; left as it is");
            }
            Err(e) => {
                warn!(error = %e, "could not update the active index; the next input or the resync will")
            }
        }
    }

    /// Indexes the unfinished saga at `key` as it is now, whatever the index held (a key taken
    /// off while its saga was being built): the index is read first, then the saga, so a saga
    /// that finishes meanwhile is retired after and the write fails.
    async fn reindex(&self, key: &str) {
        let (tenant, operation) = split_key(key);
        let seen = match self.active.entry(key).await {
            Ok(entry) => entry.map(|e| e.revision),
            Err(e) => {
                return debug!(tenant, operation, error = %e, "resync could not read the active index");
            }
        };
        let saga = match self.sagas.entry(key).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => {
                serde_json::from_slice::<Saga>(&e.value).ok()
            }
            Ok(_) => None,
            Err(e) => {
                return debug!(tenant, operation, error = %e, "resync could not read saga");
            }
        };
        if let Some(saga) = saga.filter(|s| !s.state.is_terminal()) {
            self.index(key, &saga, seen).await;
        }
    }

    /// The pull of events just failed: until the bus has answered for a lease's length,
    /// silence from a service expires no lease (see [`Backlogs`]).
    pub fn intake_broken(&self) {
        self.backlogs.disrupted();
    }

    /// Applies `input` to the saga at `key`. Safe to call any number of times with the same
    /// input: duplicates are recognised by the saga itself (attempt numbers, step states).
    pub async fn process(&self, key: &str, input: &Input) -> Result<()> {
        let (tenant, operation) = split_key(key);
        let span = info_span!(
            "saga",
            operation,
            tenant,
            input = input_name(input),
            cluster = tracing::field::Empty,
            step = tracing::field::Empty,
            attempt = tracing::field::Empty,
        );
        match input {
            Input::Event(ev) => {
                span.record("cluster", ev.cluster.as_str());
                span.record("step", ev.step.as_str());
                span.record("attempt", ev.attempt);
            }
            Input::Operate(call) => {
                span.record("step", call.step.as_deref().unwrap_or(call.action.as_str()));
            }
            Input::Wake | Input::Tick | Input::Timer { .. } | Input::Supersede { .. } => {}
        }
        self.process_inner(key, input).instrument(span).await
    }

    async fn process_inner(&self, key: &str, input: &Input) -> Result<()> {
        let (slot, kept) = self.cache.slot(key);
        let mut slot = slot.lock().await;
        let mut trust_copy = true;
        // The revision whose outbox this call has published (a re-read of it need not again).
        let mut published_here: Option<u64> = None;
        for _ in 0..MAX_CAS_TRIES {
            // The active index's revision, as seen before the saga is read or written (see
            // [`Engine::index`]).
            let seen = self.ops.revision(key);
            let copy = slot.take().filter(|_| trust_copy);
            let from_copy = copy.is_some();
            let Some(Known {
                mut saga,
                revision,
                published,
                mut cluster,
            }) = (match copy {
                Some(known) => Some(known),
                None => self.read(key).await?,
            })
            else {
                debug!("no such saga; ignoring");
                return Ok(());
            };
            // Whatever goes wrong from here on, look at the bucket next time.
            trust_copy = false;

            // Repair: an earlier transition's outbox that was written but maybe not published
            // (or a saga just built). Once published it is only left to clear, and this
            // transition's write replaces it. The cluster record is brought up to date once,
            // by whichever comes next: this transition's snapshot, or the repaired saga's when
            // the input changes nothing.
            if !saga.outbox.is_empty() && !published && published_here != Some(revision) {
                self.republish_outbox(&saga, revision).await?;
                published_here = Some(revision);
            }
            let repaired = published_here == Some(revision);
            let earlier_outbox = std::mem::take(&mut saga.outbox);
            let shown = saga.visible_state();

            let now = input_time(input);
            match self.apply_input(&mut saga, input, now, from_copy).await? {
                Verdict::Changed => {}
                // The copy may be older than what makes the input apply: ask the bucket.
                Verdict::Unchanged(_) | Verdict::Ahead if from_copy => continue,
                Verdict::Unchanged(why) => {
                    debug!(why, "nothing to do");
                    saga.outbox = earlier_outbox;
                    let known = Known::published(saga, revision, cluster);
                    return self.settle(key, slot, kept, repaired, known, seen).await;
                }
                // The record we read lags the event (a replica behind its leader): retry later.
                Verdict::Ahead => {
                    return Err(Error::Behind {
                        key: key.to_owned(),
                    });
                }
            }
            saga.reschedule(now);
            let finished = saga.state.is_terminal();
            // A deleted cluster's operations are history: this last write lets them expire.
            let history = self
                .settings
                .deleted_history
                .filter(|_| cluster_gone(&saga));
            let written = match history {
                Some(ttl) => self.write_expiring(key, &saga, revision, ttl).await?,
                None => self.write(key, &saga, revision).await?,
            };
            let Some(revision) = written else {
                continue;
            };
            // Indexed before anything is published: a failure from here on redelivers the
            // input, which then changes nothing and would never index it.
            if !finished
                && (saga.visible_state() != shown
                    || self.ops.known_to_differ(key, &active::value(&saga)))
            {
                self.index(key, &saga, seen).await;
            }
            // The cluster record does not wait for the outbox: neither needs the other first.
            // Progress alone waits for the catch-up, which needs the slot kept.
            let (published, snapshot) = tokio::join!(
                self.publish_outbox(&saga, revision),
                snapshot::update_cluster(&self.clusters, &saga, &mut cluster, kept && !finished)
            );
            published?;
            slot.snapshot(snapshot?);
            if finished {
                info!(state = ?saga.state, "operation finished");
                self.finish(key, &saga, history).await?;
                self.forget(key, slot);
                return Ok(());
            }
            let known = Known::published(saga, revision, cluster);
            self.keep_or_clear(key, slot, kept, known).await;
            return Ok(());
        }
        Err(Error::Contended {
            key: key.to_owned(),
            tries: MAX_CAS_TRIES,
        })
    }

    /// Applies `input` to `saga` (one transition, pure but for a superseded operation's read
    /// and a tick's look at the workers): whether it changed anything. An operator call the
    /// saga refuses is a race with another transition (the gateway checked first): nothing to
    /// do, unless the copy it was judged on is older than the bucket.
    async fn apply_input(
        &self,
        saga: &mut Saga,
        input: &Input,
        now: OffsetDateTime,
        from_copy: bool,
    ) -> Result<Verdict> {
        let applied = match input {
            Input::Wake if saga.links.after.is_some() => self.after_create(saga, now).await?,
            Input::Supersede { by } => saga.supersede(by, now),
            Input::Wake => saga.advance(now),
            Input::Event(ev) => saga.apply(ev, now),
            Input::Tick | Input::Timer { .. } => {
                if matches!(input, Input::Timer { .. }) {
                    saga.timer_fired();
                }
                match self.after_create(saga, now).await? {
                    Applied::Changed => Applied::Changed,
                    _ => self.tick(saga, now, from_copy).await,
                }
            }
            Input::Operate(call) => match saga.operate(call, now) {
                Ok(applied) => applied,
                Err(refusal) => {
                    if !from_copy {
                        info!(action = call.action.as_str(), actor = %call.actor, %refusal, "operator call refused");
                    }
                    Applied::Ignored("operator call refused")
                }
            },
        };
        Ok(match applied {
            Applied::Changed => Verdict::Changed,
            Applied::Ignored(why) => Verdict::Unchanged(why),
            Applied::Ahead => Verdict::Ahead,
        })
    }

    /// The end of a transition whose input changed nothing. An unfinished saga the active
    /// index does not show as it is (a transition whose index write failed, or never came)
    /// is indexed. A repaired outbox was published by it; the cluster record is brought up to
    /// date with what that outbox's transition changed. A finished saga then leaves the active
    /// index (which says its outbox is out), and its end is recorded, which the replica that
    /// finished it did not get to; an unfinished one's outbox is cleared later, as any
    /// transition's is, or now when no slot keeps it.
    ///
    /// `seen`: the index's revision as seen before `known` was read.
    async fn settle(
        &self,
        key: &str,
        mut slot: tokio::sync::MutexGuard<'_, Slot>,
        kept: bool,
        repaired: bool,
        mut known: Known,
        seen: Option<u64>,
    ) -> Result<()> {
        if !known.saga.state.is_terminal()
            && self.ops.known_to_differ(key, &active::value(&known.saga))
        {
            self.index(key, &known.saga, seen).await;
        }
        if !repaired {
            if known.saga.state.is_terminal() {
                // A late input to a finished saga: nothing of it is left to do here.
                self.forget(key, slot);
            } else {
                slot.keep(known);
            }
            return Ok(());
        }
        let finished = known.saga.state.is_terminal();
        let snapshot = snapshot::update_cluster(
            &self.clusters,
            &known.saga,
            &mut known.cluster,
            kept && !finished,
        )
        .await?;
        slot.snapshot(snapshot);
        if finished {
            self.retire(key).await?;
            ended(&known.saga);
            self.forget(key, slot);
        } else {
            self.keep_or_clear(key, slot, kept, known).await;
        }
        Ok(())
    }

    /// The end of an unfinished saga's transition once its outbox is out: the copy is kept,
    /// and the next transition's write replaces the outbox; with no slot to keep it, the
    /// outbox is cleared now. Losing that race is fine: whoever won has published or will
    /// publish its own outbox.
    async fn keep_or_clear(
        &self,
        key: &str,
        mut slot: tokio::sync::MutexGuard<'_, Slot>,
        kept: bool,
        mut known: Known,
    ) {
        if kept {
            slot.keep(known);
        } else {
            known.saga.outbox.clear();
            // A failure leaves the outbox in the record: published again, and de-duplicated.
            if let Err(e) = self.write(key, &known.saga, known.revision).await {
                debug!(error = %e, "could not clear the outbox");
            }
        }
    }

    /// A finished saga's slot is dropped and the cache forgets it: nothing of it is left to do.
    fn forget(&self, key: &str, slot: tokio::sync::MutexGuard<'_, Slot>) {
        drop(slot);
        self.cache.remove(key);
    }

    /// What follows a saga's last transition once its outbox is out: it leaves the active
    /// index (which is what tells a later reader that the outbox left in its record was
    /// published: no write clears it), and a deleted cluster's earlier operations expire.
    async fn finish(
        &self,
        key: &str,
        saga: &Saga,
        history: Option<std::time::Duration>,
    ) -> Result<()> {
        self.retire(key).await?;
        ended(saga);
        if let Some(ttl) = history {
            // The create (superseded or not) is history too.
            for op in saga.links.previous.iter().chain(&saga.links.after) {
                self.expire(&hypersaga_bus::subjects::saga_key(&saga.tenant, op), ttl)
                    .await;
            }
        }
        Ok(())
    }

    /// The time-based checks of [`Saga::tick_with`]; a tick that finds nothing due arms the
    /// timer for what is due next (unless one armed already fires no later).
    async fn tick(&self, saga: &mut Saga, now: OffsetDateTime, from_copy: bool) -> Applied {
        // A lapsed lease in a service busy with a backlog is queueing, not loss.
        let horizon = std::time::Duration::from_millis(saga.timing.start_lease_ms);
        let lapsed = saga.lapsed_services(now);
        let busy = self
            .backlogs
            .busy_services(&lapsed, &saga.tenant, horizon)
            .await;
        match saga.tick_with(now, |s| busy.contains(s)) {
            Applied::Ignored(_) if !from_copy && saga.reschedule(now) => Applied::Changed,
            applied => applied,
        }
    }

    /// A delete that supersedes a create starts once that create has stopped: until then it
    /// tells the create (again — idempotent) to stop at its next safe point; the create wakes
    /// it when it has.
    async fn after_create(&self, saga: &mut Saga, now: OffsetDateTime) -> Result<Applied> {
        let Some(create) = saga.links.after.clone() else {
            return Ok(Applied::Ignored("not waiting"));
        };
        let create_key = hypersaga_bus::subjects::saga_key(&saga.tenant, &create);
        for asked in [false, true] {
            if let Some(outputs) = self.stopped_outputs(saga, &create, now).await? {
                return Ok(saga.release(&outputs, now));
            }
            if !asked {
                let stop = Input::Supersede {
                    by: saga.id.clone(),
                };
                Box::pin(self.process(&create_key, &stop)).await?;
            }
        }
        Ok(Applied::Ignored(
            "waiting for the superseded create to stop",
        ))
    }

    /// The outputs of the create `create`, superseded by `delete`, once it has finished;
    /// `None` while it runs. A create no coordinator has built yet never will be: its key is
    /// taken first, create-only, by a finished record saying so ([`Saga::unbuilt_create`]),
    /// since a replica that read the cluster record before the delete may still be building
    /// it. Should that build win the race, the create is read again, and stopped as any other.
    async fn stopped_outputs(
        &self,
        delete: &Saga,
        create: &str,
        now: OffsetDateTime,
    ) -> Result<Option<std::collections::BTreeMap<String, hypersaga_bus::Outputs>>> {
        let key = hypersaga_bus::subjects::saga_key(&delete.tenant, create);
        for _ in 0..2 {
            if let Some(other) = self.read(&key).await? {
                return Ok(other
                    .saga
                    .is_finished()
                    .then_some(other.saga.context.outputs));
            }
            let unbuilt = delete.unbuilt_create(create, now);
            let bytes = serde_json::to_vec(&unbuilt).map_err(|source| Error::Decode {
                key: key.clone(),
                source,
            })?;
            match self.sagas.create(&key, bytes.into()).await {
                Ok(_) => {
                    info!(
                        create,
                        "the superseded create was never built; it never will be"
                    );
                    return Ok(Some(Default::default()));
                }
                // Built meanwhile (or the read above lags): read it again.
                Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::kv("write the unbuilt create", e)),
            }
        }
        Ok(None)
    }

    /// The saga as the bucket has it (`None`: there is none).
    async fn read(&self, key: &str) -> Result<Option<Known>> {
        let Some(entry) = self
            .sagas
            .entry(key)
            .await
            .map_err(|e| Error::kv("read saga", e))?
            .filter(|e| e.operation == kv::Operation::Put)
        else {
            return Ok(None);
        };
        let saga: Saga = serde_json::from_slice(&entry.value).map_err(|source| Error::Decode {
            key: key.to_owned(),
            source,
        })?;
        let published =
            saga.state.is_terminal() && !saga.outbox.is_empty() && !self.indexed(key).await?;
        Ok(Some(Known {
            saga,
            revision: entry.revision,
            published,
            cluster: None,
        }))
    }

    /// Whether the active index names `key`. A finished saga leaves it only once its last
    /// outbox is published, so a finished saga not named there has nothing left to send.
    async fn indexed(&self, key: &str) -> Result<bool> {
        Ok(self
            .active
            .entry(key)
            .await
            .map_err(|e| Error::kv("read the active index", e))?
            .is_some_and(|e| e.operation == kv::Operation::Put))
    }

    /// Does what transitions put off (see `cache`): clears in the bucket the outboxes this
    /// replica published at least [`crate::cache::CLEAR_AFTER`] ago whose saga has not moved
    /// on since, and writes progress not yet in cluster records. `all`: everything, now (at
    /// shutdown).
    ///
    /// Slots are caught up [`CATCH_UP_CONCURRENCY`] at a time: one after another, a sweep under
    /// hundreds of owed slots took seconds of KV round trips, and progress shown that late
    /// reads as a stuck cluster.
    pub async fn catch_up(&self, all: bool) {
        futures::stream::iter(self.cache.sweep())
            .for_each_concurrent(CATCH_UP_CONCURRENCY, |(key, slot)| async move {
                let Ok(mut slot) = slot.try_lock_owned() else {
                    return; // a transition is on it, and will do both
                };
                if slot.due_for_snapshot() || (all && slot.progress_owed()) {
                    self.write_progress(&key, &mut slot).await;
                }
                if all || slot.due_for_clearing() {
                    self.clear_outbox(&key, &mut slot).await;
                }
            })
            .await;
    }

    /// Writes the progress owed to the saga's cluster record, from the copy, or from the
    /// bucket when a failed transition left none.
    async fn write_progress(&self, key: &str, slot: &mut Slot) {
        if slot.known.is_none() {
            match self.read(key).await {
                Ok(Some(known)) => slot.known = Some(known),
                Ok(None) => return slot.snapshot_written(),
                Err(e) => return warn!(error = %e, "could not read the saga to write its progress"),
            }
        }
        let Some(known) = slot.known.as_mut() else {
            return;
        };
        match snapshot::update_cluster(&self.clusters, &known.saga, &mut known.cluster, false).await
        {
            Ok(_) => slot.snapshot_written(),
            Err(e) => warn!(error = %e, "could not write progress to the cluster record"),
        }
    }

    async fn clear_outbox(&self, key: &str, slot: &mut Slot) {
        let Some(known) = slot.known.as_mut().filter(|k| k.published) else {
            return;
        };
        if known.saga.outbox.is_empty() {
            return;
        }
        known.saga.outbox.clear();
        match self.write(key, &known.saga, known.revision).await {
            Ok(Some(revision)) => known.revision = revision,
            // Someone else moved the saga on (and replaced the outbox), or the write failed:
            // our copy may be stale.
            Ok(None) => slot.known = None,
            Err(e) => {
                debug!(error = %e, "could not clear the outbox");
                slot.known = None;
            }
        }
    }

    /// Compare-and-set that also lets the record expire `ttl` from now (`Nats-TTL`), and rolls
    /// up its earlier revisions, which would otherwise show again once it has expired. As
    /// [`Engine::write`]: `None` when another writer moved the saga on.
    async fn write_expiring(
        &self,
        key: &str,
        saga: &Saga,
        revision: u64,
        ttl: std::time::Duration,
    ) -> Result<Option<u64>> {
        use async_nats::header::{NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, NATS_MESSAGE_TTL};
        use async_nats::jetstream::context::PublishErrorKind;
        let bytes = encode(key, saga)?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(
            NATS_EXPECTED_LAST_SUBJECT_SEQUENCE,
            revision.to_string().as_str(),
        );
        headers.insert(NATS_MESSAGE_TTL, ttl.as_secs().max(1).to_string().as_str());
        headers.insert(async_nats::header::NATS_ROLLUP, "sub");
        let subject = format!("$KV.{}.{key}", hypersaga_bus::SAGAS_BUCKET);
        let ack = self
            .bus
            .jetstream()
            .publish_with_headers(subject, headers, bytes.into())
            .await
            .map_err(|e| Error::kv("write saga", e))?
            .await;
        match ack {
            Ok(ack) => Ok(Some(ack.sequence)),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => Ok(None),
            Err(e) => Err(Error::kv("write saga", e)),
        }
    }

    /// Lets the finished saga at `key` expire `ttl` from now (a running one is left alone).
    async fn expire(&self, key: &str, ttl: std::time::Duration) {
        for _ in 0..4 {
            let Ok(Some(known)) = self.read(key).await else {
                return;
            };
            if !known.saga.is_finished() {
                return;
            }
            match self
                .write_expiring(key, &known.saga, known.revision, ttl)
                .await
            {
                Ok(Some(_)) => return,
                Ok(None) => continue,
                Err(e) => {
                    warn!(error = %e, "could not let the saga expire");
                    return;
                }
            }
        }
    }

    /// Writes `saga` if the record is still at `revision`: its new revision, or `None` when
    /// another writer moved it on (a conflict, which a re-read resolves). Anything else (a
    /// record that does not encode, a bus that does not answer) is an error of its own kind,
    /// not a conflict to retry.
    async fn write(&self, key: &str, saga: &Saga, revision: u64) -> Result<Option<u64>> {
        let bytes = encode(key, saga)?;
        match self.sagas.update(key, bytes.into(), revision).await {
            Ok(revision) => Ok(Some(revision)),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
            Err(e) => Err(Error::kv("write saga", e)),
        }
    }

    /// Publishes the outbox of the record at `revision` in order, each with its de-duplication
    /// id, awaiting every ack so audit events land in causal order. Commands name that
    /// revision, which spares workers the decoding of the record to check their fence.
    async fn publish_outbox(&self, saga: &Saga, revision: u64) -> Result<()> {
        let subjects = self.bus.subjects();
        let trace = TraceParent::with_trace_id(&saga.trace_id);
        // All sent first (they reach the server in this order), then every ack awaited: one
        // round trip per transition instead of one per message.
        let mut sent = Vec::with_capacity(saga.outbox.len());
        for effect in &saga.outbox {
            let one = match effect {
                Effect::Command(_) | Effect::Dispatch { .. } => {
                    // A dispatch this record has since superseded sends nothing.
                    let Some(mut cmd) = saga.command_of(effect) else {
                        continue;
                    };
                    cmd.dispatched_in = Some(revision);
                    let subject = subjects.cmd(&cmd.tenant, cmd.service());
                    self.bus
                        .send_json(&subject, &cmd.msg_id(), &trace, &cmd)
                        .await?
                }
                Effect::Audit(ev) => {
                    let subject = subjects.audit(&ev.tenant, &ev.cluster);
                    self.bus
                        .send_json(&subject, &ev.msg_id(), &trace, ev)
                        .await?
                }
                Effect::Schedule { at } => {
                    let wake = SagaWake {
                        v: ENVELOPE_VERSION,
                        tenant: saga.tenant.clone(),
                        saga_id: saga.id.clone(),
                        cluster: None,
                    };
                    // Unique per record written: a repaired outbox is de-duplicated, a new
                    // timer is not, even for a time armed before (a timer re-armed after
                    // another replaced it; a reused id would leave none armed).
                    let msg_id = format!(
                        "{}:timer:{revision}:{}",
                        saga.id,
                        at.unix_timestamp_nanos() / 1_000_000
                    );
                    self.bus
                        .schedule(&saga.tenant, &saga.id, *at, &msg_id, &trace, &wake)
                        .await?
                }
                Effect::Wake { saga_id } => {
                    let wake = SagaWake {
                        v: ENVELOPE_VERSION,
                        tenant: saga.tenant.clone(),
                        saga_id: saga_id.clone(),
                        cluster: Some(saga.cluster.clone()),
                    };
                    let subject = subjects.saga_start(&saga.tenant);
                    let msg_id = format!("{saga_id}:woken-by:{}", saga.id);
                    self.bus.send_json(&subject, &msg_id, &trace, &wake).await?
                }
            };
            sent.push(one);
        }
        for one in sent {
            one.confirmed().await?;
        }
        Ok(())
    }

    /// Publishes an outbox found in the bucket, which its transition may or may not have
    /// published (its replica may have died before, or before clearing it). Within JetStream's
    /// de-duplication window publishing again is absorbed; past it, audit events already stored
    /// would show twice, so when the audit stream holds the last of them, none is published
    /// again. Commands and timers go out again: a command still current runs again (handlers
    /// are idempotent), a stale one is dropped by its fence.
    ///
    /// What the stream holds is judged by the last event on the cluster's audit subject. When
    /// that is another operation's (two operations of one cluster interleaving, and this one's
    /// outbox left uncleared for minutes), or an earlier one of this saga (a publish cut
    /// short), all are published again: shown twice rather than lost.
    async fn republish_outbox(&self, saga: &Saga, revision: u64) -> Result<()> {
        let audits = saga.outbox.iter().filter_map(|e| match e {
            Effect::Audit(ev) => Some((ev.time, ev.seq)),
            _ => None,
        });
        let (Some(oldest), Some(last)) = (
            audits.clone().map(|(t, _)| t).min(),
            audits.map(|(_, seq)| seq).max(),
        ) else {
            return self.publish_outbox(saga, revision).await;
        };
        if OffsetDateTime::now_utc() - oldest <= DEDUP_TRUSTED_FOR
            || self.last_audit_seq(saga).await? < Some(last)
        {
            return self.publish_outbox(saga, revision).await;
        }
        debug!("republishing an old outbox without its audit events, stored already");
        let mut rest = saga.clone();
        rest.outbox.retain(|e| !matches!(e, Effect::Audit(_)));
        self.publish_outbox(&rest, revision).await
    }

    /// The journal position of the last audit event stored for the saga's cluster, if that
    /// event is the saga's.
    async fn last_audit_seq(&self, saga: &Saga) -> Result<Option<u64>> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        let subject = self.bus.subjects().audit(&saga.tenant, &saga.cluster);
        let stream = self
            .bus
            .jetstream()
            .get_stream_no_info(hypersaga_bus::AUDIT_STREAM)
            .await
            .map_err(|e| Error::kv("open the audit stream", e))?;
        match stream.get_last_raw_message_by_subject(&subject).await {
            Ok(msg) => Ok(serde_json::from_slice::<AuditEvent>(&msg.payload)
                .ok()
                .filter(|ev| ev.operation == saga.id)
                .map(|ev| ev.seq)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(Error::kv("read the last audit event", e)),
        }
    }

    /// Takes a finished saga whose outbox is published off the index of active ones. Until
    /// it is off, a reader takes the outbox left in its record for unpublished and publishes
    /// it again, so a failure is returned: the input is then redelivered within JetStream's
    /// de-duplication window, and its transition republishes (absorbed) and retires again.
    async fn retire(&self, key: &str) -> Result<()> {
        self.active
            .delete(key)
            .await
            .map_err(|e| Error::kv("take the saga off the active index", e))
    }

    /// [`Engine::retire`] for the resync, which goes on with the other sagas (and comes back).
    async fn retire_or_log(&self, key: &str) {
        if let Err(e) = self.retire(key).await {
            let (tenant, operation) = split_key(key);
            debug!(tenant, operation, error = %e, "resync could not retire the saga; the next one will");
        }
    }

    /// Takes off the active index a key whose saga does not exist (left by a build that died
    /// before writing it), unless it is young: a build indexes its saga just before writing
    /// it, and the saga may be on its way.
    async fn retire_orphan(&self, key: &str) {
        match self.active.entry(key).await {
            Ok(Some(e)) if OffsetDateTime::now_utc() - e.created < BUILD_GRACE => {}
            Ok(_) => self.retire_or_log(key).await,
            Err(e) => {
                let (tenant, operation) = split_key(key);
                debug!(tenant, operation, error = %e, "resync could not read the active index")
            }
        }
    }

    /// Ticks every saga that is unfinished or still has an outbox.
    ///
    /// Usually only the sagas the active index names are looked at, so the cost follows the
    /// work in flight. A `full` resync (at start-up, then now and then) lists every saga
    /// instead, indexing any the index lacks (sagas written before it existed), and starts every
    /// accepted operation that has no saga yet (its wake-up was lost and the client did not
    /// retry).
    pub async fn resync(&self, full: bool) -> Result<()> {
        // A key written while a listing runs can be delivered twice: a set de-duplicates.
        async fn list(store: &kv::Store) -> Result<std::collections::BTreeSet<String>> {
            store
                .keys()
                .await
                .map_err(|e| Error::kv("list sagas", e))?
                .try_collect()
                .await
                .map_err(|e| Error::kv("list sagas", e))
        }
        // Listed before the sagas: a saga built meanwhile is indexed before it is written.
        let indexed = list(&self.active).await?;
        let keys = if full {
            std::borrow::Cow::Owned(list(&self.sagas).await?)
        } else {
            std::borrow::Cow::Borrowed(&indexed)
        };
        for key in keys.iter() {
            // One saga that cannot be processed must not stop the others' deadlines.
            let saga = match self.sagas.entry(key).await {
                Ok(Some(e)) if e.operation == kv::Operation::Put => {
                    serde_json::from_slice::<Saga>(&e.value).ok()
                }
                Ok(_) => None,
                Err(e) => {
                    let (tenant, operation) = split_key(key);
                    warn!(tenant, operation, error = %e, "resync could not read saga");
                    continue;
                }
            };
            let Some(saga) = saga else {
                if !full {
                    self.retire_orphan(key).await;
                }
                continue;
            };
            if saga.state.is_terminal() {
                // Its outbox may be unpublished only while it is still indexed.
                if !indexed.contains(key) {
                    continue;
                }
                if saga.outbox.is_empty() {
                    self.retire_or_log(key).await;
                    continue;
                }
            } else if !indexed.contains(key) {
                // Indexed if it was not. One indexed as another kind or state than it is in
                // is indexed again by its tick below, once this replica's view of the index
                // is caught up and shows it so.
                self.reindex(key).await;
            }
            if let Err(e) = self.process(key, &Input::Tick).await {
                let (tenant, operation) = split_key(key);
                warn!(tenant, operation, error = %e, "resync could not advance saga");
            }
        }
        if full {
            self.resync_accepted(&keys).await?;
        }
        Ok(())
    }
}

use active::label;

/// A saga's key (`<tenant>.<operation id>`) as its tenant and the operation id, which is what
/// spans and logs call `operation` everywhere.
pub(crate) fn split_key(key: &str) -> (&str, &str) {
    key.split_once('.').unwrap_or(("", key))
}

/// An operation's end, once its saga is off the active index: counted
/// (`hypersaga_operations_finished_total`) and recorded ([`record_end`]). Whichever replica
/// retires the saga records it: the one that finished it, or the one that repairs a finish
/// whose retirement failed.
fn ended(saga: &Saga) {
    metrics::counter!(
        "hypersaga_operations_finished_total",
        "kind" => saga.kind.as_str(),
        "state" => label(saga.state),
    )
    .increment(1);
    record_end(saga);
}

/// What an operation's end tells the metrics and the trace: its duration
/// (`hypersaga_operation_duration_seconds`, by kind and end state) and its span, from its
/// acceptance to now, an error when it did not succeed.
fn record_end(saga: &Saga) {
    let end = saga.ended_at.unwrap_or_else(OffsetDateTime::now_utc);
    let (kind, state) = (saga.kind.as_str().to_owned(), label(saga.state));
    metrics::histogram!(
        "hypersaga_operation_duration_seconds",
        "kind" => kind.clone(),
        "state" => state.clone(),
    )
    .record((end - saga.created_at).as_seconds_f64().max(0.0));
    let error = (saga.state != OperationState::Succeeded).then(|| {
        saga.error
            .as_ref()
            .map_or(("_OTHER", ""), |e| (e.code.as_str(), e.message.as_str()))
    });
    hypersaga_telemetry::otel::record_operation(hypersaga_telemetry::otel::OperationSpan {
        name: format!("{kind} cluster"),
        parent: saga
            .trace_parent
            .as_deref()
            .and_then(|p| TraceParent::parse(p).ok()),
        trace_id: &saga.trace_id,
        start: saga.created_at.into(),
        end: end.max(saga.created_at).into(),
        attributes: vec![
            ("tenant", saga.tenant.to_string()),
            ("cluster", saga.cluster.clone()),
            ("operation", saga.id.clone()),
            ("kind", kind),
            ("state", state),
        ],
        error,
    });
}

/// Whether `saga` has removed its cluster (a delete, a sweep): nothing of it will be read
/// again but as history.
fn cluster_gone(saga: &Saga) -> bool {
    saga.state == OperationState::Succeeded
        && hypersaga_saga::kinds::behaviour(saga.kind).succeeded_phase
            == hypersaga_model::ClusterPhase::Deleted
}

/// What one input did to a saga.
enum Verdict {
    Changed,
    /// Nothing to do (a duplicate, a stale report, an early timer, a refused call).
    Unchanged(&'static str),
    /// The input is newer than the record read: a replica that lags.
    Ahead,
}

/// When an input is applied. The server fired a timer when it was due by its clock: when this
/// one is behind, what the timer was armed for is judged due all the same (else nothing would
/// be due, and the timer armed again for a time already past).
fn input_time(input: &Input) -> OffsetDateTime {
    match input {
        Input::Timer { fired_at } => OffsetDateTime::now_utc().max(*fired_at),
        _ => OffsetDateTime::now_utc(),
    }
}

/// The saga as stored; one that does not encode is a bug to report, not a conflict to retry.
fn encode(key: &str, saga: &Saga) -> Result<Vec<u8>> {
    serde_json::to_vec(saga).map_err(|source| Error::Encode {
        key: key.to_owned(),
        source,
    })
}

fn input_name(input: &Input) -> &'static str {
    match input {
        Input::Wake => "wake",
        Input::Event(_) => "event",
        Input::Tick => "tick",
        Input::Timer { .. } => "timer",
        Input::Operate(_) => "operate",
        Input::Supersede { .. } => "supersede",
    }
}
