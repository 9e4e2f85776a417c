//! The saga record and its transitions.

use std::collections::BTreeMap;

use hypersaga_bus::{
    AUDIT_VERSION, Action, AuditEvent, ENVELOPE_VERSION, Outcome, StepCommand, StepContext, StepError,
    StepEvent,
};
use hypersaga_model::record::{OperationKind, OperationState, OperationView, StepState, StepView};
use hypersaga_model::{ClusterPhase, ErrorInfo, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

use crate::plan::{StepDef, UndoPolicy};
use crate::retry::RetryPolicy;

/// Schema version of the saga record.
pub const SAGA_VERSION: u32 = 1;

/// Something a transition decided to send. Kept in the saga's outbox until published.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    Command(Box<StepCommand>),
    Audit(Box<AuditEvent>),
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
    /// Attempts of `action`, the current one included.
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<StepError>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
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
            last_error: None,
            message: String::new(),
            started_at: None,
            ended_at: None,
        }
    }

    pub fn service(&self) -> &str {
        self.id.split('.').next().unwrap_or(&self.id)
    }

    fn in_flight(&self) -> bool {
        matches!(self.state, StepState::Running | StepState::Compensating)
    }

    /// Whether, going backward, this step still has work to undo.
    fn needs_undo(&self) -> bool {
        self.undo == UndoPolicy::Undo
            && (matches!(self.state, StepState::Pending | StepState::Succeeded)
                || (self.state == StepState::Failed && self.action == Action::Do))
    }

    /// Whether, going backward, this step no longer holds anything a dependency needs gone.
    fn is_clear(&self) -> bool {
        matches!(self.state, StepState::Skipped | StepState::Compensated | StepState::Kept)
    }
}

/// The result of applying an input.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The saga changed; write it back.
    Changed,
    /// Nothing to do: a duplicate, stale or unknown input.
    Ignored(&'static str),
}

/// A saga: one operation on one cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Saga {
    pub v: u32,
    pub id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub kind: OperationKind,
    pub state: OperationState,
    pub steps: Vec<StepRecord>,
    pub context: StepContext,
    pub retry: RetryPolicy,
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
    pub timeout: Duration,
    pub request_id: Option<String>,
    pub actor: String,
    pub trace_id: String,
}

impl Saga {
    /// A new saga with its first audit event (`cluster.accepted` / `cluster.deleting`) in the
    /// outbox. Nothing is dispatched until the coordinator first advances it.
    pub fn new(n: NewSaga, now: OffsetDateTime) -> Self {
        let mut steps: Vec<StepRecord> = n.plan.iter().map(StepRecord::new).collect();
        if n.kind == OperationKind::Delete {
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
            created_at: now,
            updated_at: now,
            ended_at: None,
            deadline: now + n.timeout,
            error: None,
            request_id: n.request_id,
            actor: n.actor,
            trace_id: n.trace_id,
            seq: 0,
            outbox: Vec::new(),
            deadline_passed: false,
        };
        let (kind, detail) = match saga.kind {
            OperationKind::Create => ("cluster.accepted", json!({ "spec": saga.context.spec, "infra_id": saga.context.names.infra_id })),
            OperationKind::Delete => ("cluster.deleting", json!({ "infra_id": saga.context.names.infra_id })),
        };
        saga.audit(kind, None, detail, now);
        saga
    }

    /// Going backward: a delete, or a create being compensated.
    fn backward(&self) -> bool {
        self.kind == OperationKind::Delete || self.state == OperationState::Compensating
    }

    fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }

    /// Dispatches whatever is ready and finishes the saga when nothing is left. Idempotent:
    /// advancing a saga with nothing ready changes nothing.
    pub fn advance(&mut self, now: OffsetDateTime) -> Applied {
        if self.state.is_terminal() {
            return Applied::Ignored("saga is finished");
        }
        let before = self.seq;
        if self.backward() { self.advance_backward(now) } else { self.advance_forward(now) }
        if self.seq != before {
            self.updated_at = now;
            Applied::Changed
        } else {
            Applied::Ignored("nothing ready")
        }
    }

    fn advance_forward(&mut self, now: OffsetDateTime) {
        let ready: Vec<usize> = (0..self.steps.len())
            .filter(|&i| {
                let s = &self.steps[i];
                s.state == StepState::Pending
                    && s.deps.iter().all(|d| {
                        self.step_index(d).is_some_and(|j| self.steps[j].state == StepState::Succeeded)
                    })
            })
            .collect();
        for i in ready {
            self.dispatch(i, Action::Do, 1, None, now);
        }
        if self.steps.iter().all(|s| s.state == StepState::Succeeded) {
            self.finish(OperationState::Succeeded, now);
        }
    }

    fn advance_backward(&mut self, now: OffsetDateTime) {
        // A persistent step that finished after compensation began is kept, like the others.
        for s in &mut self.steps {
            if s.undo == UndoPolicy::Keep && matches!(s.state, StepState::Succeeded | StepState::Failed) && s.action == Action::Do {
                s.state = StepState::Kept;
            }
        }
        let ready: Vec<usize> = (0..self.steps.len())
            .filter(|&i| {
                let s = &self.steps[i];
                !s.in_flight()
                    && s.needs_undo()
                    && self
                        .steps
                        .iter()
                        .filter(|d| d.deps.contains(&s.id))
                        .all(StepRecord::is_clear)
            })
            .collect();
        for i in ready {
            self.dispatch(i, Action::Undo, 1, None, now);
        }
        let busy = self.steps.iter().any(StepRecord::in_flight);
        if !busy {
            let all_clear = self.steps.iter().all(StepRecord::is_clear);
            let outcome = match (self.kind, all_clear) {
                (OperationKind::Delete, true) => OperationState::Succeeded,
                _ => OperationState::Failed,
            };
            self.finish(outcome, now);
        }
    }

    fn dispatch(&mut self, i: usize, action: Action, attempt: u32, not_before: Option<OffsetDateTime>, now: OffsetDateTime) {
        let s = &mut self.steps[i];
        s.action = action;
        s.attempts = attempt;
        s.state = match action {
            Action::Do => StepState::Running,
            Action::Undo => StepState::Compensating,
        };
        if attempt == 1 {
            s.started_at = Some(now);
            s.ended_at = None;
            s.last_error = None;
            s.message.clear();
        }
        let cmd = StepCommand {
            v: ENVELOPE_VERSION,
            saga_id: self.id.clone(),
            tenant: self.tenant.clone(),
            cluster: self.cluster.clone(),
            step: s.id.clone(),
            action,
            attempt,
            not_before,
            deadline: self.deadline,
            context: self.context.clone(),
        };
        self.outbox.push(Effect::Command(Box::new(cmd)));
        let detail = match not_before {
            Some(t) => json!({ "not_before": t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default() }),
            None => Value::Null,
        };
        let kind = match action {
            Action::Do => "step.started",
            Action::Undo => "step.compensating",
        };
        self.audit(kind, Some(i), detail, now);
    }

    /// Applies a service's report. Reports for another attempt, another action, or a step not
    /// in flight are ignored: they are duplicates or stale redeliveries.
    pub fn apply(&mut self, ev: &StepEvent, now: OffsetDateTime) -> Applied {
        if self.state.is_terminal() {
            return Applied::Ignored("saga is finished");
        }
        let Some(i) = self.step_index(&ev.step) else { return Applied::Ignored("unknown step") };
        let s = &self.steps[i];
        if !s.in_flight() || s.action != ev.action || s.attempts != ev.attempt {
            return Applied::Ignored("stale or duplicate report");
        }
        match &ev.outcome {
            Outcome::Progress { message } => {
                if &self.steps[i].message == message {
                    return Applied::Ignored("same progress");
                }
                self.steps[i].message = message.clone();
                self.audit("step.progress", Some(i), json!({ "message": message }), now);
            }
            Outcome::Succeeded { outputs } => {
                let s = &mut self.steps[i];
                s.ended_at = Some(now);
                s.message.clear();
                let kind = match s.action {
                    Action::Do => {
                        s.state = StepState::Succeeded;
                        self.context.outputs.insert(s.id.clone(), outputs.clone());
                        "step.succeeded"
                    }
                    Action::Undo => {
                        s.state = StepState::Compensated;
                        "step.compensated"
                    }
                };
                self.audit(kind, Some(i), json!({ "outputs": outputs }), now);
            }
            Outcome::Failed { error } => self.on_failure(i, error, now),
        }
        self.advance(now);
        self.updated_at = now;
        Applied::Changed
    }

    fn on_failure(&mut self, i: usize, error: &StepError, now: OffsetDateTime) {
        let backward = self.backward();
        let s = &mut self.steps[i];
        s.last_error = Some(error.clone());
        let attempt = s.attempts;
        // Going backward, a forward step is not retried: its partial work is undone instead.
        let may_retry = error.is_retryable()
            && attempt < self.retry.max_attempts
            && !(s.action == Action::Do && backward);
        if may_retry {
            let delay = self.retry.delay(&format!("{}:{}:{}", self.id, s.id, s.action.as_str()), attempt + 1, error.retry_after_ms);
            let action = s.action;
            self.audit(
                "step.failed",
                Some(i),
                json!({ "error": error.info, "will_retry": true, "retry_in_ms": delay.as_millis() as u64 }),
                now,
            );
            self.dispatch(i, action, attempt + 1, Some(now + delay), now);
            return;
        }
        let s = &mut self.steps[i];
        s.state = StepState::Failed;
        s.ended_at = Some(now);
        let exhausted = error.is_retryable();
        let mut info = error.info.clone();
        info.step = Some(s.id.clone());
        let action = s.action;
        self.audit("step.failed", Some(i), json!({ "error": info, "will_retry": false, "retries_exhausted": exhausted }), now);
        if self.error.is_none() {
            self.error = Some(info);
        }
        if action == Action::Do && !self.backward() {
            self.begin_compensation(now);
        }
    }

    /// Turns a failing create around: what never started is skipped, what is persistent by
    /// design is kept, everything else is undone in reverse dependency order.
    fn begin_compensation(&mut self, now: OffsetDateTime) {
        self.state = OperationState::Compensating;
        for s in &mut self.steps {
            match (s.state, s.undo) {
                (StepState::Pending, _) => s.state = StepState::Skipped,
                (StepState::Succeeded | StepState::Failed, UndoPolicy::Keep) => s.state = StepState::Kept,
                _ => {}
            }
        }
        let reason = self.error.clone();
        self.audit("saga.compensating", None, json!({ "reason": reason }), now);
    }

    /// Time-based checks: the operation's deadline. A create past its deadline is compensated
    /// (steps still running report back later and are then undone); a delete past its deadline
    /// stops and fails, saying what it could not remove. Compensation itself has no deadline:
    /// leaving half a cluster behind is worse than finishing late.
    pub fn tick(&mut self, now: OffsetDateTime) -> Applied {
        if self.state.is_terminal() || self.deadline_passed || now < self.deadline {
            return self.advance(now);
        }
        self.deadline_passed = true;
        let info = ErrorInfo {
            code: "OperationDeadlineExceeded".into(),
            message: format!("the operation did not finish by its deadline {}", self.deadline),
            ..Default::default()
        };
        self.audit("saga.deadline_exceeded", None, json!({ "error": info }), now);
        if self.error.is_none() {
            self.error = Some(info);
        }
        match (self.kind, self.state) {
            (OperationKind::Create, OperationState::Running) => self.begin_compensation(now),
            (OperationKind::Create, _) => {}
            (OperationKind::Delete, _) => self.finish(OperationState::Failed, now),
        }
        self.advance(now);
        self.updated_at = now;
        Applied::Changed
    }

    fn finish(&mut self, state: OperationState, now: OffsetDateTime) {
        self.state = state;
        self.ended_at = Some(now);
        let kind = match (self.kind, state) {
            (OperationKind::Create, OperationState::Succeeded) => "cluster.ready",
            (OperationKind::Create, _) => "cluster.failed",
            (OperationKind::Delete, OperationState::Succeeded) => "cluster.deleted",
            (OperationKind::Delete, _) => "cluster.delete_failed",
        };
        let leftovers: Vec<&str> = self
            .steps
            .iter()
            .filter(|s| s.needs_undo() || s.in_flight() || (s.state == StepState::Failed && s.action == Action::Undo))
            .map(|s| s.id.as_str())
            .collect();
        let detail = json!({ "error": self.error, "not_undone": leftovers, "resources": self.resources() });
        self.audit(kind, None, detail, now);
    }

    fn audit(&mut self, kind: &str, step: Option<usize>, detail: Value, now: OffsetDateTime) {
        self.seq += 1;
        let s = step.map(|i| &self.steps[i]);
        let event = AuditEvent {
            v: AUDIT_VERSION,
            seq: self.seq,
            kind: kind.to_owned(),
            tenant: self.tenant.clone(),
            cluster: self.cluster.clone(),
            operation: self.id.clone(),
            step: s.map(|s| s.id.clone()),
            action: s.map(|s| s.action),
            attempt: s.map(|s| s.attempts),
            time: now,
            actor: self.actor.clone(),
            trace_id: self.trace_id.clone(),
            detail,
        };
        self.outbox.push(Effect::Audit(Box::new(event)));
    }

    /// The phase the cluster is in while this saga is its current operation.
    pub fn cluster_phase(&self) -> ClusterPhase {
        match (self.kind, self.state) {
            (OperationKind::Create, OperationState::Running) => {
                if self.steps.iter().any(|s| s.state != StepState::Pending) {
                    ClusterPhase::Provisioning
                } else {
                    ClusterPhase::Accepted
                }
            }
            (OperationKind::Create, OperationState::Compensating) => ClusterPhase::Compensating,
            (OperationKind::Create, OperationState::Succeeded) => ClusterPhase::Ready,
            (_, OperationState::Failed) => ClusterPhase::Failed,
            (OperationKind::Delete, OperationState::Succeeded) => ClusterPhase::Deleted,
            (OperationKind::Delete, _) => ClusterPhase::Deleting,
        }
    }

    /// IDs of what exists, by role: every `*_id` output of a step that is done and not undone.
    pub fn resources(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for s in &self.steps {
            if matches!(s.state, StepState::Succeeded | StepState::Kept)
                && let Some(outputs) = self.context.outputs.get(&s.id) {
                    for (k, v) in outputs {
                        if let (Some(role), Some(v)) = (k.strip_suffix("_id"), v.as_str()) {
                            out.insert(role.to_owned(), v.to_owned());
                        }
                    }
                }
        }
        out
    }

    /// The operation as users see it.
    pub fn view(&self) -> OperationView {
        OperationView {
            id: self.id.clone(),
            cluster: self.cluster.clone(),
            kind: self.kind,
            state: self.state,
            started_at: self.created_at,
            ended_at: self.ended_at,
            deadline: self.deadline,
            error: self.error.clone(),
            request_id: self.request_id.clone(),
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
                })
                .collect(),
        }
    }
}

#[cfg(test)]
#[path = "saga_tests.rs"]
mod tests;
