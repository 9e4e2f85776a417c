//! Builds an operation's saga from the cluster record the gateway wrote when it accepted it.
//!
//! The gateway writes one record (the cluster, naming its new operation) and publishes a
//! wake-up; it never writes a saga. The coordinator, the saga's only writer, builds it here:
//! on the wake-up, or from the resync when the wake-up was lost. The saga is a function of the
//! record and this replica's settings, so two replicas racing to build it build the same one,
//! and the first create-only write wins.

use std::collections::{BTreeMap, BTreeSet};

use async_nats::jetstream::kv;
use futures::TryStreamExt;
use hypersaga_bus::subjects::{cluster_key, saga_key};
use hypersaga_bus::{ENVELOPE_VERSION, Outputs, SagaWake, StepContext};
use hypersaga_config::CoordinatorConfig;
use hypersaga_model::{ClusterRecord, Names};
use hypersaga_saga::kinds::{self, Existing, PlanInput};
use hypersaga_saga::{Applied, NewSaga, Retain, RetryPolicy, Saga, Timing};
use hypersaga_telemetry::TraceParent;
use time::OffsetDateTime;
use tracing::{Instrument, debug, info, info_span, warn};

use super::{Engine, Input};
use crate::cache::Known;
use crate::snapshot;
use crate::{Error, Result};

impl Engine {
    /// A start wake-up: the gateway accepted an operation by writing the cluster record only.
    /// Builds the saga from that record when it does not exist yet (with its first transition
    /// applied), or else advances it as any wake-up does. Safe to repeat, and to race with
    /// other replicas and the resync.
    ///
    /// `sender` is the wake-up's trace context (the gateway's call that accepted the
    /// operation; none when the resync found the operation): kept in the saga, while spans are
    /// exported, as the parent of the operation's own span.
    pub async fn start(&self, wake: &SagaWake, sender: Option<&TraceParent>) -> Result<()> {
        let key = saga_key(&wake.tenant, &wake.saga_id);
        if let Some(cluster) = &wake.cluster {
            let span = info_span!("saga", operation = %wake.saga_id, tenant = %wake.tenant, cluster = %cluster, input = "build");
            let started = self
                .build_if_missing(&key, wake, cluster, sender)
                .instrument(span)
                .await?;
            if started {
                return Ok(());
            }
        }
        self.process(&key, &Input::Wake).await
    }

    /// Writes the saga of the operation the cluster record names, unless it exists, the record
    /// names another operation, or that operation has finished. The saga is written with its
    /// first transition (the wake-up's) applied, which saves a write per operation; `true`
    /// when that transition's outbox is published too, so the wake-up has nothing left to do.
    async fn build_if_missing(
        &self,
        key: &str,
        wake: &SagaWake,
        cluster: &str,
        sender: Option<&TraceParent>,
    ) -> Result<bool> {
        let (slot, kept) = self.cache.slot(key);
        let mut slot = slot.lock().await;
        if slot.known.is_some() {
            return Ok(false);
        }
        let record_key = cluster_key(&wake.tenant, cluster);
        let Some(entry) = self
            .clusters
            .entry(&record_key)
            .await
            .map_err(|e| Error::kv("read cluster", e))?
            .filter(|e| e.operation == kv::Operation::Put)
        else {
            debug!("no cluster record for the wake-up; nothing to build");
            return Ok(false);
        };
        let rec: ClusterRecord =
            serde_json::from_slice(&entry.value).map_err(|source| Error::Decode {
                key: record_key.clone(),
                source,
            })?;
        if rec.tenant != wake.tenant || !wants_saga(&rec, &wake.saga_id) {
            debug!(current = %rec.operation.id, "the record no longer names this operation as unfinished");
            return Ok(false);
        }
        // What the cluster owns is on its record; a record written before it was (a delete of
        // a cluster made by an older version) takes what its previous operation made.
        let outputs = match previous_operation(&rec) {
            Some(prev) if rec.owned.is_empty() => {
                self.outputs_of(&saga_key(&rec.tenant, prev)).await?
            }
            _ => rec.owned.clone(),
        };
        let mut saga = build_saga(&rec, outputs, &self.settings);
        if hypersaga_telemetry::otel::exporting() {
            saga.trace_parent = sender.map(TraceParent::to_string);
        }
        // A delete that waits for a create to stop starts through the wake-up (with its timer
        // armed to look again, should the create's wake-up be lost); so does a saga no slot
        // keeps (nothing would clear its outbox later).
        let now = OffsetDateTime::now_utc();
        let advanced = kept && saga.links.after.is_none() && saga.advance(now) == Applied::Changed;
        if advanced || saga.links.after.is_some() {
            saga.reschedule(now);
        }
        let bytes = serde_json::to_vec(&saga).map_err(|source| Error::Decode {
            key: key.to_owned(),
            source,
        })?;
        // Indexed first, so that the resync finds it whatever happens next.
        if !self.index_new(key, &saga).await? {
            return Ok(false);
        }
        // Create-only: a saga that exists already (built by another replica, or the resync) is
        // the same one, and stays as it is.
        match self.sagas.create(key, bytes.into()).await {
            Ok(revision) => {
                info!(kind = ?saga.kind, "saga built from the cluster record");
                let mut known = Known {
                    published: saga.outbox.is_empty(),
                    saga,
                    revision,
                    cluster: Some((entry.revision, rec)),
                };
                if !advanced {
                    slot.keep(known);
                    return Ok(false);
                }
                if let Err(e) = self.publish_outbox(&known.saga, known.revision).await {
                    // The wake-up is retried, and publishes it from this copy.
                    slot.keep(known);
                    return Err(e);
                }
                let snapshot =
                    snapshot::update_cluster(&self.clusters, &known.saga, &mut known.cluster, true)
                        .await;
                known.published = true;
                slot.keep(known);
                slot.snapshot(snapshot?);
                Ok(true)
            }
            // Another replica (or the resync) built it first: the same saga.
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::kv("write saga", e)),
        }
    }

    /// Indexes the saga about to be built, create-only: a key that exists is another build of
    /// the same saga (left as it is), and a key taken off means the saga was built and has
    /// finished (nothing to build: `false`) unless no saga was ever written (a build that
    /// died before, whose key the resync took off), which is indexed again on that revision.
    async fn index_new(&self, key: &str, saga: &Saga) -> Result<bool> {
        let value = crate::active::value(saga);
        let expected = match self.active.update(key, value.clone(), 0).await {
            Ok(revision) => {
                self.ops.wrote(key, value, revision);
                return Ok(true);
            }
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                match self
                    .active
                    .entry(key)
                    .await
                    .map_err(|e| Error::kv("read the active index", e))?
                {
                    Some(e) if e.operation == kv::Operation::Put => return Ok(true),
                    marker => marker.map_or(0, |m| m.revision),
                }
            }
            Err(e) => return Err(Error::kv("index saga", e)),
        };
        // Read after the index: a saga built from here on is built by a replica that indexed
        // it first, which fails the write below.
        if self
            .sagas
            .entry(key)
            .await
            .map_err(|e| Error::kv("read saga", e))?
            .is_some()
        {
            debug!("the saga was built and has finished; nothing to build");
            return Ok(false);
        }
        let revision = self
            .active
            .update(key, value.clone(), expected)
            .await
            .map_err(|e| Error::kv("index saga", e))?;
        self.ops.wrote(key, value, revision);
        Ok(true)
    }

    /// The outputs a finished saga left (none if it is gone).
    async fn outputs_of(&self, key: &str) -> Result<BTreeMap<String, Outputs>> {
        Ok(self
            .read(key)
            .await?
            .map(|k| k.saga.context.outputs)
            .unwrap_or_default())
    }

    /// Starts every operation a cluster record names as unfinished whose saga was not among
    /// `sagas` (the saga keys the resync listed first): the gateway wrote the record but its
    /// wake-up never arrived. [`Engine::start`] looks again before it builds anything.
    pub(super) async fn resync_accepted(&self, sagas: &BTreeSet<String>) -> Result<()> {
        // A key written while the listing runs can be delivered twice: a set de-duplicates.
        let keys: BTreeSet<String> = self
            .clusters
            .keys()
            .await
            .map_err(|e| Error::kv("list clusters", e))?
            .try_collect()
            .await
            .map_err(|e| Error::kv("list clusters", e))?;
        for key in keys {
            let entry = match self.clusters.entry(&key).await {
                Ok(Some(e)) if e.operation == kv::Operation::Put => e,
                Ok(_) => continue,
                Err(e) => {
                    warn!(cluster = %key, error = %e, "resync could not read cluster");
                    continue;
                }
            };
            let Ok(rec) = serde_json::from_slice::<ClusterRecord>(&entry.value) else {
                continue;
            };
            if rec.operation.state.is_terminal()
                || sagas.contains(&saga_key(&rec.tenant, &rec.operation.id))
            {
                continue;
            }
            let wake = SagaWake {
                v: ENVELOPE_VERSION,
                tenant: rec.tenant.clone(),
                saga_id: rec.operation.id.clone(),
                cluster: Some(rec.name.clone()),
            };
            info!(cluster = %key, operation = %wake.saga_id, "resync: an accepted operation has no saga yet");
            if let Err(e) = self.start(&wake, None).await {
                warn!(cluster = %key, error = %e, "resync could not start operation");
            }
        }
        Ok(())
    }
}

/// How this coordinator retries and times steps (from `[coordinator]`).
#[derive(Clone, Copy, Debug)]
pub struct SagaSettings {
    pub retry: RetryPolicy,
    pub timing: Timing,
    /// How long a deleted cluster's sagas are kept (`None`: forever).
    pub deleted_history: Option<std::time::Duration>,
}

impl SagaSettings {
    pub fn from_config(c: &CoordinatorConfig) -> Self {
        Self {
            retry: RetryPolicy {
                max_attempts: c.max_attempts,
                base_delay_ms: c.base_delay_ms,
                max_delay_ms: c.max_delay_ms,
            },
            timing: Timing {
                lease_ms: c.lease_ms,
                start_lease_ms: c.start_lease_ms,
                step_timeout_s: c.step_timeout_s,
                recheck_min_ms: c.recheck_min_ms,
                recheck_max_ms: c.recheck_max_ms,
            },
            deleted_history: (c.deleted_history_s > 0)
                .then(|| std::time::Duration::from_secs(c.deleted_history_s)),
        }
    }
}

/// Whether `rec` names `op_id` as an operation that has not finished, i.e. one whose saga
/// should exist.
fn wants_saga(rec: &ClusterRecord, op_id: &str) -> bool {
    rec.operation.id == op_id && !rec.operation.state.is_terminal()
}

/// The operation the record names, as its saga, before its first transition: its plan is the
/// kind's (`hypersaga_saga::kinds`) for the cluster as the record has it, and its steps start
/// from `outputs`, what the cluster owns (an upgrade needs the identities the create made; a
/// delete, everything).
///
/// Kind, request id, start and deadline come from the record's operation, actor and trace id
/// from its intent, so what the gateway answered is what the saga says. A record naming a
/// node pool its spec does not have (which the gateway never writes) gives a saga that has
/// failed, saying so.
fn build_saga(
    rec: &ClusterRecord,
    outputs: BTreeMap<String, Outputs>,
    settings: &SagaSettings,
) -> Saga {
    let op = &rec.operation;
    let intent = rec.intent.as_ref().filter(|i| i.operation == op.id);
    let names = Names::new(&rec.tenant, &rec.name, &rec.infra_id, &rec.spec.base_domain);
    let existing = Existing::from_steps(outputs.keys().map(String::as_str));
    let planned = kinds::plan(
        op.kind,
        PlanInput {
            spec: &rec.spec,
            node_pool: op.node_pool.as_deref(),
            addon: op.addon.as_deref(),
            retain: Retain {
                identities: intent.is_some_and(|i| i.keep_identities),
            },
            existing: &existing,
        },
    );
    let (plan, unplannable) = match planned {
        Ok(plan) => (plan, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let mut saga = Saga::new(
        NewSaga {
            id: op.id.clone(),
            tenant: rec.tenant.clone(),
            cluster: rec.name.clone(),
            kind: op.kind,
            plan,
            context: StepContext {
                cluster_uid: rec.uid.clone(),
                names,
                spec: rec.spec.clone(),
                outputs,
                management_cluster: rec.management_cluster.clone(),
            },
            retry: settings.retry,
            timing: settings.timing,
            timeout: op.deadline - op.started_at,
            request_id: op.request_id.clone(),
            actor: intent.map_or_else(|| format!("tenant:{}", rec.tenant), |i| i.actor.clone()),
            trace_id: intent.map_or_else(
                || TraceParent::new_root().trace_id(),
                |i| i.trace_id.clone(),
            ),
            after: intent.and_then(|i| i.supersedes.clone()),
            node_pool: op.node_pool.clone(),
            addon: op.addon.clone(),
        },
        op.started_at,
    );
    saga.links.previous = previous_operation(rec).map(str::to_owned);
    if let Some(e) = unplannable {
        warn!(operation = %op.id, error = %e, "the record's operation cannot be planned");
        saga.fail_unplannable(&e.to_string(), op.started_at);
    }
    saga
}

/// The operation before the record's, if any: what it made is where a saga of a record
/// written before [`ClusterRecord::owned`] existed starts from.
fn previous_operation(rec: &ClusterRecord) -> Option<&str> {
    rec.intent
        .as_ref()
        .filter(|i| i.operation == rec.operation.id)
        .and_then(|i| i.previous_operation.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypersaga_model::record::{
        ClusterPhase, OperationIntent, OperationKind, OperationState, OperationView,
    };
    use hypersaga_model::{ClusterSpec, NetworkSpec, NodePoolSpec, TenantId};
    use time::{Duration, OffsetDateTime};

    fn record(kind: OperationKind) -> ClusterRecord {
        let now = OffsetDateTime::from_unix_timestamp(1_790_000_000).unwrap();
        ClusterRecord {
            v: 1,
            tenant: TenantId::new("acme").unwrap(),
            name: "demo".into(),
            uid: "u-1".into(),
            infra_id: "demo-abcde".into(),
            spec: ClusterSpec {
                location: "eastus".into(),
                base_domain: "example.com".into(),
                release_image: "quay.io/x:1".into(),
                node_pools: vec![NodePoolSpec::new("workers", 1, "Standard_D4s_v5")],
                network: NetworkSpec::default(),
                addons: Vec::new(),
            },
            created_at: now,
            create_request_id: None,
            delete_request_id: None,
            phase: ClusterPhase::Accepted,
            message: String::new(),
            error: None,
            operation: OperationView {
                id: "op-1".into(),
                cluster: "demo".into(),
                kind,
                state: OperationState::Running,
                started_at: now,
                ended_at: None,
                deadline: now + Duration::hours(1),
                error: None,
                steps: Vec::new(),
                request_id: Some("r-1".into()),
                pause: None,
                node_pool: None,
                addon: None,
            },
            resources: BTreeMap::new(),
            owned: BTreeMap::new(),
            saga_seq: 0,
            labels: Default::default(),
            management_cluster: "default".into(),
            intent: Some(OperationIntent {
                operation: "op-1".into(),
                actor: "tenant:acme".into(),
                trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
                previous_operation: Some("op-0".into()),
                supersedes: None,
                keep_identities: false,
            }),
        }
    }

    #[test]
    fn the_saga_says_what_the_gateway_answered() {
        let rec = record(OperationKind::Create);
        let settings = SagaSettings::from_config(&CoordinatorConfig::default());
        let saga = build_saga(&rec, BTreeMap::new(), &settings);
        assert_eq!(saga.id, "op-1");
        assert_eq!(saga.created_at, rec.operation.started_at);
        assert_eq!(saga.deadline, rec.operation.deadline);
        assert_eq!(saga.request_id.as_deref(), Some("r-1"));
        assert_eq!(saga.actor, "tenant:acme");
        assert_eq!(saga.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(
            saga.retry.max_attempts,
            CoordinatorConfig::default().max_attempts
        );
        assert!(saga.steps.iter().any(|s| s.id == "nodepool.workers"));
        // A record without what the cluster owns starts from the operation before it.
        assert_eq!(
            previous_operation(&record(OperationKind::Delete)),
            Some("op-0")
        );
    }

    #[test]
    fn a_delete_keeps_identities_only_when_asked() {
        let settings = SagaSettings::from_config(&CoordinatorConfig::default());
        let undo = |keep: bool| {
            let mut rec = record(OperationKind::Delete);
            if let Some(i) = rec.intent.as_mut() {
                i.keep_identities = keep;
            }
            let saga = build_saga(&rec, BTreeMap::new(), &settings);
            saga.steps
                .iter()
                .find(|s| s.id == "identity.workload")
                .map(|s| s.undo)
        };
        assert_eq!(undo(false), Some(hypersaga_saga::UndoPolicy::Undo));
        assert_eq!(undo(true), Some(hypersaga_saga::UndoPolicy::Keep));
    }

    #[test]
    fn a_day2_saga_starts_from_what_the_cluster_owns_and_acts_on_its_pool() {
        let settings = SagaSettings::from_config(&CoordinatorConfig::default());
        let mut rec = record(OperationKind::UpdateNodePool);
        rec.operation.node_pool = Some("workers".into());
        let owned = BTreeMap::from([(
            "network.vnet".to_owned(),
            Outputs::from([(
                "subnet_id".to_owned(),
                serde_json::json!("/s/subnets/default"),
            )]),
        )]);
        let saga = build_saga(&rec, owned, &settings);
        let ids: Vec<&str> = saga.steps.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["nodepool.workers"]);
        assert_eq!(saga.node_pool.as_deref(), Some("workers"));
        assert_eq!(
            saga.context.output("network.vnet", "subnet_id"),
            Some("/s/subnets/default")
        );
        // A record naming a pool its spec lacks is a failed operation, saying so.
        rec.operation.node_pool = Some("gpu".into());
        let saga = build_saga(&rec, BTreeMap::new(), &settings);
        assert!(saga.is_finished());
        assert_eq!(
            saga.error.as_ref().map(|e| e.code.as_str()),
            Some("InvalidOperation")
        );
    }

    #[test]
    fn only_the_records_unfinished_operation_wants_a_saga() {
        let mut rec = record(OperationKind::Create);
        assert!(wants_saga(&rec, "op-1"));
        assert!(!wants_saga(&rec, "op-2"));
        rec.operation.state = OperationState::Succeeded;
        assert!(!wants_saga(&rec, "op-1"));
    }

    /// The active index on a real bus, written through an engine of its own (whose view of the
    /// index is followed only where a test says so).
    mod index {
        use super::*;
        use crate::engine::Engine;
        use hypersaga_bus::Bus;
        use hypersaga_procs::NatsServer;
        use hypersaga_saga::Effect;

        const KEY: &str = "acme.op-1";

        async fn engine(dir: &std::path::Path) -> (NatsServer, Bus, Engine) {
            let nats = NatsServer::start(dir).await.expect("nats-server");
            let bus = Bus::connect(nats.url(), "test", "hcp").await.expect("bus");
            let engine = Engine::new(bus.clone(), &hypersaga_config::Config::default())
                .await
                .expect("engine");
            (nats, bus, engine)
        }

        /// A create accepted just now.
        fn saga() -> Saga {
            let settings = SagaSettings::from_config(&CoordinatorConfig::default());
            let mut rec = record(OperationKind::Create);
            rec.operation.started_at = OffsetDateTime::now_utc();
            rec.operation.deadline = rec.operation.started_at + Duration::hours(1);
            build_saga(&rec, BTreeMap::new(), &settings)
        }

        async fn index_says(bus: &Bus) -> Option<String> {
            let active = bus.active().await.unwrap();
            active
                .get(KEY)
                .await
                .unwrap()
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        }

        /// `saga` as a replica wrote it, and the index saying `value` of it.
        async fn written_and_indexed(bus: &Bus, saga: &Saga, value: &'static str) {
            bus.sagas()
                .await
                .unwrap()
                .create(KEY, serde_json::to_vec(saga).unwrap().into())
                .await
                .unwrap();
            bus.active()
                .await
                .unwrap()
                .put(KEY, value.into())
                .await
                .unwrap();
        }

        /// Follows the index until the engine's view of it shows `value`.
        async fn view_shows(engine: &Engine, value: &str) {
            for _ in 0..200 {
                if engine.ops.shows(KEY, value.as_bytes()) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            panic!("the view of the index never showed {value:?}");
        }

        #[tokio::test]
        async fn an_index_write_neither_brings_back_a_retired_key_nor_overwrites_a_newer_state() {
            let dir = tempfile::tempdir().unwrap();
            let (_nats, bus, engine) = engine(dir.path()).await;
            let active = bus.active().await.unwrap();
            let saga = saga();
            // Indexed as it is: the key had no revision.
            engine.index(KEY, &saga, None).await;
            assert_eq!(index_says(&bus).await.as_deref(), Some("create running"));
            let seen = engine.ops.revision(KEY);
            assert!(
                seen.is_some(),
                "the engine's own write is in its view at once"
            );
            // Another transition wrote a newer state meanwhile: that one stays.
            active.put(KEY, "create paused".into()).await.unwrap();
            engine.index(KEY, &saga, seen).await;
            assert_eq!(index_says(&bus).await.as_deref(), Some("create paused"));
            // The saga finished and was retired: a late write of an earlier state, seen before
            // or after, brings nothing back.
            let newer = active.entry(KEY).await.unwrap().map(|e| e.revision);
            active.delete(KEY).await.unwrap();
            engine.index(KEY, &saga, newer).await;
            engine.index(KEY, &saga, None).await;
            assert_eq!(index_says(&bus).await, None);
            // A saga built once its key was taken off (a build that died, its key removed by
            // the resync) is indexed again: nothing else wrote the key since it was read.
            let sagas = bus.sagas().await.unwrap();
            assert!(engine.index_new(KEY, &saga).await.unwrap());
            assert_eq!(index_says(&bus).await.as_deref(), Some("create running"));
            // A saga that exists and has been retired is not built again.
            active.delete(KEY).await.unwrap();
            sagas
                .create(KEY, serde_json::to_vec(&saga).unwrap().into())
                .await
                .unwrap();
            assert!(!engine.index_new(KEY, &saga).await.unwrap());
            assert_eq!(index_says(&bus).await, None);
        }

        #[tokio::test]
        async fn a_write_that_loses_the_race_is_a_conflict_and_any_other_failure_keeps_its_kind() {
            let dir = tempfile::tempdir().unwrap();
            let (_nats, bus, engine) = engine(dir.path()).await;
            let saga = saga();
            let sagas = bus.sagas().await.unwrap();
            let first = sagas
                .create(KEY, serde_json::to_vec(&saga).unwrap().into())
                .await
                .unwrap();
            let second = engine.write(KEY, &saga, first).await.unwrap();
            assert!(second.is_some_and(|r| r > first));
            // Another writer moved it on: a conflict, for the caller to re-read and retry.
            assert_eq!(engine.write(KEY, &saga, first).await.unwrap(), None);
            // A key the bucket cannot hold is no conflict: retrying would change nothing.
            let refused = engine.write("acme.bad key", &saga, 0).await;
            assert!(
                matches!(refused, Err(crate::Error::Kv { .. })),
                "{refused:?}"
            );
        }

        #[tokio::test]
        async fn an_input_that_changes_nothing_indexes_a_saga_the_index_shows_otherwise() {
            let dir = tempfile::tempdir().unwrap();
            let (_nats, bus, engine) = engine(dir.path()).await;
            let engine = std::sync::Arc::new(engine);
            let shutdown = tokio_util::sync::CancellationToken::new();
            let following = {
                let (engine, shutdown) = (engine.clone(), shutdown.clone());
                tokio::spawn(async move { engine.follow_active(shutdown).await })
            };
            // A transition paused the saga and wrote it, then failed before the index said
            // so; the saga has since been resumed by a transition whose index write was
            // skipped (its view lagged): the index says paused, the saga running.
            written_and_indexed(&bus, &saga(), "create paused").await;
            view_shows(&engine, "create paused").await;
            // Its next input, redelivered or not, whatever it does, indexes it as it is.
            engine.process(KEY, &Input::Tick).await.unwrap();
            assert_eq!(index_says(&bus).await.as_deref(), Some("create running"));
            shutdown.cancel();
            following.await.unwrap();
        }

        #[tokio::test]
        async fn a_finish_repaired_by_a_later_input_is_counted_and_recorded() {
            let recorder = metrics_util::debugging::DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            let _local = metrics::set_default_local_recorder(&recorder);
            let dir = tempfile::tempdir().unwrap();
            let (_nats, bus, engine) = engine(dir.path()).await;
            // The replica that finished the saga wrote it, but could not take it off the
            // index: its last outbox counts as unpublished, and the end as unrecorded.
            let mut saga = saga();
            saga.state = hypersaga_model::record::OperationState::Failed;
            saga.ended_at = Some(OffsetDateTime::now_utc());
            saga.outbox.push(Effect::Schedule {
                at: OffsetDateTime::now_utc() + Duration::hours(1),
            });
            written_and_indexed(&bus, &saga, "create running").await;
            engine.process(KEY, &Input::Tick).await.unwrap();
            assert_eq!(index_says(&bus).await, None, "retired by the repair");
            let metrics: Vec<String> = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, _)| key.key().name().to_owned())
                .collect();
            for name in [
                "hypersaga_operations_finished_total",
                "hypersaga_operation_duration_seconds",
            ] {
                assert!(
                    metrics.iter().any(|m| m == name),
                    "{name} not recorded: {metrics:?}"
                );
            }
        }
    }
}
