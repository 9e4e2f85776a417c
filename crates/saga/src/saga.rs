//! The saga record: its steps, their fences, leases and waits, and what it has decided to send.

use std::collections::BTreeMap;

use hypersaga_bus::{Action, AuditEvent, StepCommand, StepContext, StepError};
use hypersaga_model::record::{
    OperationKind, OperationState, OperationView, PauseView, StepState, StepView,
};
use hypersaga_model::{ClusterPhase, ErrorInfo, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

use crate::kinds::{self, Direction};
use crate::plan::{StepDef, UndoPolicy};
use crate::retry::RetryPolicy;

/// Schema version of the saga record.
pub const SAGA_VERSION: u32 = 2;

/// Something a transition decided to send. Kept in the saga's outbox until published.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// A step's command, whole, as records written before [`Effect::Dispatch`] hold it: still
    /// read and published.
    Command(Box<StepCommand>),
    /// A step's command, by step and fence. It is built when published, from the record whose
    /// outbox holds it (see [`Saga::command`]), so the record does not carry the saga's context
    /// twice: that was a third of its size, written with every transition.
    Dispatch {
        step: String,
        fence: u64,
    },
    Audit(Box<AuditEvent>),
    /// A durable timer: wake this saga at `at` (replacing its earlier timer).
    Schedule {
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
    },
    /// Wake another saga of the same tenant (a delete waiting for this create to stop).
    Wake {
        saga_id: String,
    },
}

/// A step waiting on something outside, between re-checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepWait {
    #[serde(with = "time::serde::rfc3339")]
    pub since: OffsetDateTime,
    /// What the handler left for its next check.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub memo: Value,
}

/// One step of a saga.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: String,
    pub deps: Vec<String>,
    pub undo: UndoPolicy,
    pub state: StepState,
    /// The action now running or last run.
    pub action: Action,
    /// Attempts of `action` that count against the retry budget, the current one included.
    pub attempts: u32,
    /// Fencing token of the latest dispatch (see [`StepCommand::fence`]); only a report with
    /// this fence is applied.
    #[serde(default)]
    pub fence: u64,
    /// Dispatches of `action` that answered "throttled": waited out, not counted as attempts.
    #[serde(default)]
    pub throttled: u32,
    /// Leases of `action` that expired without a word from the service.
    #[serde(default)]
    pub lease_expiries: u32,
    /// Milliseconds `action` spent waiting for budgets it shares with every other step (its
    /// subscription's ARM requests): added to its deadline, which bounds the step's own time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paced_ms: u64,
    /// The service must report (or heartbeat) by then, or the coordinator takes the step back.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub lease_until: Option<OffsetDateTime>,
    /// The latest dispatch is held back until then (a retry's backoff, a re-check's spacing).
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub not_before: Option<OffsetDateTime>,
    /// The current action must be done by then, or the saga pauses.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub deadline: Option<OffsetDateTime>,
    /// Set while the step waits on something outside (no worker holds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<StepWait>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<StepError>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl StepRecord {
    fn new(def: &StepDef) -> Self {
        Self {
            id: def.id.clone(),
            deps: def.deps.clone(),
            undo: def.undo,
            state: StepState::Pending,
            action: Action::Do,
            attempts: 0,
            fence: 0,
            throttled: 0,
            lease_expiries: 0,
            paced_ms: 0,
            lease_until: None,
            not_before: None,
            deadline: None,
            wait: None,
            last_error: None,
            message: String::new(),
            started_at: None,
            ended_at: None,
        }
    }

    pub fn service(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }

    pub(crate) fn in_flight(&self) -> bool {
        matches!(self.state, StepState::Running | StepState::Compensating)
    }

    /// Counts `ms` spent waiting for a shared budget: the deadline, which bounds the step's
    /// own time, moves out by as much (the operation's deadline still bounds the whole).
    pub(crate) fn add_paced(&mut self, ms: u64) {
        if ms == 0 {
            return;
        }
        self.paced_ms = self.paced_ms.saturating_add(ms);
        let by = time::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX));
        self.deadline = self.deadline.map(|d| d.saturating_add(by));
    }

    /// Takes the step out of flight as failed: no lease, no wait (a late report or re-check
    /// of it is then stale).
    pub(crate) fn end_failed(&mut self, now: OffsetDateTime) {
        self.state = StepState::Failed;
        self.ended_at = Some(now);
        self.lease_until = None;
        self.wait = None;
    }

    /// Whether, going backward, this step still has work to undo.
    pub(crate) fn needs_undo(&self) -> bool {
        self.undo == UndoPolicy::Undo
            && (matches!(self.state, StepState::Pending | StepState::Succeeded)
                || (self.state == StepState::Failed && self.action == Action::Do))
    }

    /// Whether, going backward, this step no longer holds anything a dependency needs gone.
    pub(crate) fn is_clear(&self) -> bool {
        matches!(
            self.state,
            StepState::Skipped | StepState::Compensated | StepState::Kept
        )
    }
}

/// How long the engine lets a step take, and how it spaces re-checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timing {
    /// Silence allowed from a worker running a step (it heartbeats well within this).
    pub lease_ms: u64,
    /// How long a dispatched command may wait for a worker before it is presumed lost.
    pub start_lease_ms: u64,
    /// Wall time one action of one step may take, re-checks and retries included, before
    /// the saga pauses with a reason.
    pub step_timeout_s: u64,
    /// Bounds on the spacing of re-checks a handler asks for.
    pub recheck_min_ms: u64,
    pub recheck_max_ms: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            lease_ms: 60_000,
            start_lease_ms: 300_000,
            step_timeout_s: 2_700,
            recheck_min_ms: 500,
            recheck_max_ms: 30_000,
        }
    }
}

/// Why a saga stopped to wait for an operator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    #[serde(with = "time::serde::rfc3339")]
    pub since: OffsetDateTime,
    /// The failure that paused it.
    pub reason: ErrorInfo,
    /// Steps that stopped and wait for an operator (more may join while others report).
    pub steps: Vec<String>,
}

/// The result of applying an input.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The saga changed; write it back.
    Changed,
    /// Nothing to do: a duplicate, stale or unknown input.
    Ignored(&'static str),
    /// The input is newer than this record (its fence is ahead): the record was read from a
    /// replica that lags. Try again later instead of dropping it.
    Ahead,
}

/// A saga: one operation on one cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Saga {
    pub v: u32,
    pub id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub kind: OperationKind,
    /// Direction and outcome: `Running` (forward), `Compensating` (backward), or terminal.
    /// A pause does not change it; see [`Saga::pause`].
    pub state: OperationState,
    pub steps: Vec<StepRecord>,
    pub context: StepContext,
    pub retry: RetryPolicy,
    #[serde(default)]
    pub timing: Timing,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// Set while the saga waits for an operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Who asked for this operation (the authenticated tenant principal).
    pub actor: String,
    /// W3C trace id shared by every message of this operation.
    pub trace_id: String,
    /// Last audit sequence number issued.
    pub seq: u64,
    /// Effects decided but not yet confirmed published.
    #[serde(default)]
    pub outbox: Vec<Effect>,
    #[serde(default)]
    pub deadline_passed: bool,
    /// How this operation stands to the cluster's others (a delete superseding one).
    #[serde(flatten)]
    pub links: Links,
    /// The due time of the timer last put in the outbox.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub scheduled: Option<OffsetDateTime>,
    /// The W3C `traceparent` of the span that started the operation (the gateway's call), kept
    /// only while spans are exported: the parent of the operation's own span, exported when it
    /// ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<String>,
    /// The pool a node-pool operation acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
    /// The add-on an add-on operation acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon: Option<String>,
}

/// How an operation stands to the cluster's other operations: only a delete and the
/// operation it supersedes have any of these.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Links {
    /// The delete that superseded this operation: it stops at the next safe point, then
    /// wakes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// The operation this delete waits for before it starts (set while that one stops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The operation whose outputs it started from, for a record written before the cluster
    /// record held what the cluster owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

/// Inputs to create a saga.
pub struct NewSaga {
    pub id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub kind: OperationKind,
    pub plan: Vec<StepDef>,
    pub context: StepContext,
    pub retry: RetryPolicy,
    pub timing: Timing,
    pub timeout: Duration,
    pub request_id: Option<String>,
    pub actor: String,
    pub trace_id: String,
    /// For a delete that supersedes a running operation: that operation's id.
    pub after: Option<String>,
    /// The pool a node-pool operation acts on.
    pub node_pool: Option<String>,
    /// The add-on an add-on operation acts on.
    pub addon: Option<String>,
}

impl Saga {
    /// The command of step `step`'s dispatch `fence`, as the step and the saga stand in this
    /// record; `None` when the step has been dispatched again since, is no longer in flight
    /// (stopped or taken back in the same transition) or is unknown, which makes that
    /// dispatch stale.
    pub fn command(&self, step: &str, fence: u64) -> Option<StepCommand> {
        let s = self
            .steps
            .iter()
            .find(|s| s.id == step && s.fence == fence && s.in_flight())?;
        Some(StepCommand {
            v: hypersaga_bus::ENVELOPE_VERSION,
            saga_id: self.id.clone(),
            tenant: self.tenant.clone(),
            cluster: self.cluster.clone(),
            step: s.id.clone(),
            action: s.action,
            attempt: s.attempts,
            fence: s.fence,
            not_before: s.not_before,
            deadline: self.deadline,
            lease_ms: self.timing.lease_ms,
            memo: s.wait.as_ref().map_or(Value::Null, |w| w.memo.clone()),
            waiting_since: s.wait.as_ref().map(|w| w.since),
            dispatched_in: None,
            context: self.context.clone(),
        })
    }

    /// The command `effect` sends, if it sends one.
    pub fn command_of(&self, effect: &Effect) -> Option<StepCommand> {
        match effect {
            Effect::Command(c) => Some((**c).clone()),
            Effect::Dispatch { step, fence } => self.command(step, *fence),
            Effect::Audit(_) | Effect::Schedule { .. } | Effect::Wake { .. } => None,
        }
    }

    /// The commands the outbox sends, in order, built as they are published.
    pub fn outbox_commands(&self) -> Vec<StepCommand> {
        self.outbox
            .iter()
            .filter_map(|e| self.command_of(e))
            .collect()
    }

    /// A new saga with its first audit event (`cluster.accepted` / `cluster.deleting`) in the
    /// outbox. Nothing is dispatched until the coordinator first advances it.
    pub fn new(n: NewSaga, now: OffsetDateTime) -> Self {
        let mut steps: Vec<StepRecord> = n.plan.iter().map(StepRecord::new).collect();
        if kinds::behaviour(n.kind).direction == Direction::Backward {
            for s in &mut steps {
                if s.undo == UndoPolicy::Keep {
                    s.state = StepState::Kept;
                }
            }
        }
        let mut saga = Self {
            v: SAGA_VERSION,
            id: n.id,
            tenant: n.tenant,
            cluster: n.cluster,
            kind: n.kind,
            state: OperationState::Running,
            steps,
            context: n.context,
            retry: n.retry,
            timing: n.timing,
            created_at: now,
            updated_at: now,
            ended_at: None,
            deadline: now + n.timeout,
            error: None,
            pause: None,
            request_id: n.request_id,
            actor: n.actor,
            trace_id: n.trace_id,
            seq: 0,
            outbox: Vec::new(),
            deadline_passed: false,
            links: Links {
                after: n.after,
                ..Links::default()
            },
            scheduled: None,
            trace_parent: None,
            node_pool: n.node_pool,
            addon: n.addon,
        };
        let detail = saga.accepted_detail();
        saga.audit(
            kinds::behaviour(saga.kind).accepted_event,
            None,
            detail,
            now,
        );
        saga
    }

    /// What the opening audit event says of the request: a create's whole spec, an upgrade's
    /// release, a pool's spec, what a delete removes.
    fn accepted_detail(&self) -> Value {
        let infra_id = &self.context.names.infra_id;
        let spec = &self.context.spec;
        let pool = self.node_pool.as_deref().and_then(|p| spec.pool(p));
        match self.kind {
            OperationKind::Create => json!({ "spec": spec, "infra_id": infra_id }),
            OperationKind::Delete | OperationKind::Sweep => json!({ "infra_id": infra_id }),
            OperationKind::UpdateCluster => json!({ "release_image": spec.release_image }),
            OperationKind::CreateNodePool | OperationKind::UpdateNodePool => {
                json!({ "node_pool": self.node_pool, "spec": pool })
            }
            OperationKind::DeleteNodePool => json!({ "node_pool": self.node_pool }),
            OperationKind::AddAddon | OperationKind::UpdateAddon => {
                json!({ "addon": self.addon, "spec": self.addon.as_deref().and_then(|a| spec.addon(a)) })
            }
            OperationKind::RemoveAddon => json!({ "addon": self.addon }),
        }
    }

    pub(crate) fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }

    /// Puts a timer for [`Saga::next_due`] in the outbox, so the saga is woken when something
    /// falls due without anyone scanning for it — unless the timer already armed fires no
    /// later: its tick finds nothing due and arms the next (a lease pushed on by every step
    /// then costs one early tick, not a timer per step). Call after every change; the timer
    /// travels in the outbox, so a crash cannot lose it. Says whether it armed one.
    pub fn reschedule(&mut self, now: OffsetDateTime) -> bool {
        let Some(due) = self.next_due() else {
            return false;
        };
        if self
            .scheduled
            .is_some_and(|armed| armed > now && armed <= due)
        {
            return false;
        }
        self.outbox.push(Effect::Schedule { at: due });
        self.scheduled = Some(due);
        true
    }

    /// A timer of this saga fired. The server keeps one timer per saga, and an older timer
    /// published again (an outbox repaired late) replaces a newer one, so once any has fired
    /// none may be left: forget the one recorded, and the next [`Saga::reschedule`] arms what
    /// is due next.
    pub fn timer_fired(&mut self) {
        self.scheduled = None;
    }

    /// The create `create` that this delete supersedes, as a record of one no coordinator
    /// built: finished, superseded, every step skipped, attributed to the delete's actor (who
    /// ended it), and started, as far as anyone can tell, when the delete was accepted (the
    /// record that said more now names the delete). Written create-only in that create's
    /// place, it makes a build still under way (a replica that read the cluster record before
    /// the delete was accepted) find the key taken, so the create cannot run behind the
    /// delete's back.
    pub fn unbuilt_create(&self, create: &str, now: OffsetDateTime) -> Saga {
        let steps = self
            .steps
            .iter()
            .map(|s| StepRecord {
                state: StepState::Skipped,
                ..StepRecord::new(&StepDef {
                    id: s.id.clone(),
                    deps: s.deps.clone(),
                    undo: s.undo,
                })
            })
            .collect();
        Saga {
            v: SAGA_VERSION,
            id: create.to_owned(),
            tenant: self.tenant.clone(),
            cluster: self.cluster.clone(),
            kind: OperationKind::Create,
            state: OperationState::Failed,
            steps,
            context: StepContext {
                outputs: BTreeMap::new(),
                ..self.context.clone()
            },
            retry: self.retry,
            timing: self.timing,
            created_at: self.created_at,
            updated_at: now,
            ended_at: Some(now),
            deadline: self.created_at,
            error: Some(ErrorInfo {
                code: "Superseded".into(),
                message: format!("superseded by delete {} before it started", self.id),
                ..Default::default()
            }),
            pause: None,
            request_id: None,
            actor: self.actor.clone(),
            trace_id: self.trace_id.clone(),
            seq: 0,
            outbox: Vec::new(),
            deadline_passed: false,
            links: Links {
                superseded_by: Some(self.id.clone()),
                ..Links::default()
            },
            scheduled: None,
            trace_parent: None,
            node_pool: None,
            addon: None,
        }
    }

    /// Whether the saga has ended.
    pub fn is_finished(&self) -> bool {
        self.state.is_terminal()
    }

    /// The state users see: `Paused` while an operator is awaited.
    pub fn visible_state(&self) -> OperationState {
        if self.pause.is_some() && !self.state.is_terminal() {
            OperationState::Paused
        } else {
            self.state
        }
    }

    /// The phase the cluster is in while this saga is its current operation.
    pub fn cluster_phase(&self) -> ClusterPhase {
        let b = kinds::behaviour(self.kind);
        match self.state {
            OperationState::Running | OperationState::Paused => {
                if self.steps.iter().any(|s| s.state != StepState::Pending) {
                    b.running_phase
                } else {
                    b.accepted_phase
                }
            }
            OperationState::Compensating => b.compensating_phase,
            OperationState::Succeeded => b.succeeded_phase,
            OperationState::Failed => b.failed_phase,
        }
    }

    /// IDs of what this operation's steps made or kept, by role (see
    /// [`hypersaga_model::record::resources_of`]).
    pub fn resources(&self) -> BTreeMap<String, String> {
        hypersaga_model::record::resources_of(self.steps.iter().filter_map(|s| {
            let done = matches!(s.state, StepState::Succeeded | StepState::Kept);
            done.then(|| self.context.outputs.get(&s.id).map(|o| (s.id.as_str(), o)))
                .flatten()
        }))
    }

    /// What this operation leaves the cluster owning, from what it owned before (`owned`, by
    /// step id): a step done forward adds (or replaces) its outputs; a step undone takes them
    /// away. Steps that did not end either way leave what was there.
    ///
    /// What the operation started from and has no step of is carried over as well: a cluster
    /// whose record was written before it kept what the cluster owns gets it here, from the
    /// saga that started from its previous operation's outputs.
    pub fn owned_after(&self, owned: &mut BTreeMap<String, hypersaga_bus::Outputs>) {
        if self.state == OperationState::Succeeded && kinds::behaviour(self.kind).forgets_owned {
            owned.clear();
            return;
        }
        for (step, outputs) in &self.context.outputs {
            if self.step_index(step).is_none() {
                owned.entry(step.clone()).or_insert_with(|| outputs.clone());
            }
        }
        for s in &self.steps {
            match (s.state, s.action) {
                (StepState::Succeeded, Action::Do) | (StepState::Kept, Action::Do) => {
                    if let Some(o) = self.context.outputs.get(&s.id) {
                        owned.insert(s.id.clone(), o.clone());
                    }
                }
                (StepState::Compensated, _) => {
                    owned.remove(&s.id);
                }
                _ => {}
            }
        }
    }

    /// The operation as users see it.
    pub fn view(&self) -> OperationView {
        OperationView {
            id: self.id.clone(),
            cluster: self.cluster.clone(),
            kind: self.kind,
            state: self.visible_state(),
            started_at: self.created_at,
            ended_at: self.ended_at,
            deadline: self.deadline,
            error: self.error.clone(),
            request_id: self.request_id.clone(),
            pause: self.pause.as_ref().map(|p| PauseView {
                since: p.since,
                reason: p.reason.clone(),
                steps: p.steps.clone(),
            }),
            node_pool: self.node_pool.clone(),
            addon: self.addon.clone(),
            steps: self
                .steps
                .iter()
                .map(|s| StepView {
                    id: s.id.clone(),
                    service: s.service().to_owned(),
                    state: s.state,
                    attempts: s.attempts,
                    last_error: s.last_error.as_ref().map(|e| {
                        let mut i = e.info.clone();
                        i.step = Some(s.id.clone());
                        i
                    }),
                    message: s.message.clone(),
                    depends_on: s.deps.clone(),
                    started_at: s.started_at,
                    ended_at: s.ended_at,
                    waiting_since: s.wait.as_ref().map(|w| w.since),
                })
                .collect(),
        }
    }
}
