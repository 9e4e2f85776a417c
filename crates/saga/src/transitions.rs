//! Moving a saga on: dispatching what is ready, applying what services report, failing
//! forward into compensation or into a pause, finishing.

use hypersaga_bus::{AUDIT_VERSION, Action, AuditEvent, Outcome, StepError, StepEvent};
use hypersaga_model::ErrorInfo;
use hypersaga_model::record::{OperationState, StepState};
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

use crate::kinds::{self, Direction, OnFailure};
use crate::plan::UndoPolicy;
use crate::saga::{Applied, Effect, Pause, Saga, StepRecord, StepWait};

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.whole_milliseconds()).unwrap_or(0)
}

impl Saga {
    /// Going backward: a delete, or a create being compensated.
    pub(crate) fn backward(&self) -> bool {
        kinds::behaviour(self.kind).direction == Direction::Backward
            || self.state == OperationState::Compensating
    }

    /// Dispatches whatever is ready and finishes the saga when nothing is left. Idempotent:
    /// advancing a saga with nothing ready changes nothing. A paused saga dispatches nothing.
    pub fn advance(&mut self, now: OffsetDateTime) -> Applied {
        if self.state.is_terminal() {
            return Applied::Ignored("saga is finished");
        }
        if self.pause.is_some() {
            return Applied::Ignored("saga is paused");
        }
        if self.links.after.is_some() {
            return Applied::Ignored("waiting for the superseded operation to stop");
        }
        let before = self.seq;
        if let Some(by) = self.links.superseded_by.clone() {
            // Dispatch nothing more; end once every running step has reported.
            if !self.steps.iter().any(StepRecord::in_flight) {
                if self.error.is_none() {
                    self.error = Some(ErrorInfo {
                        code: "Superseded".into(),
                        message: format!("superseded by delete {by}"),
                        ..Default::default()
                    });
                }
                self.finish(OperationState::Failed, now);
            }
        } else if self.backward() {
            self.advance_backward(now)
        } else {
            self.advance_forward(now)
        }
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
                        self.step_index(d)
                            .is_some_and(|j| self.steps[j].state == StepState::Succeeded)
                    })
            })
            .collect();
        for i in ready {
            self.start(i, Action::Do, now);
        }
        // Done when nothing runs and nothing is left to start: succeeded if every step did,
        // else stopped (see [`Saga::stop`]).
        let open = self
            .steps
            .iter()
            .any(|s| s.in_flight() || s.state == StepState::Pending);
        if !open {
            let all = self.steps.iter().all(|s| s.state == StepState::Succeeded);
            let outcome = if all {
                OperationState::Succeeded
            } else {
                OperationState::Failed
            };
            self.finish(outcome, now);
        }
    }

    fn advance_backward(&mut self, now: OffsetDateTime) {
        // A persistent step that finished after compensation began is kept, like the others.
        for s in &mut self.steps {
            if s.undo == UndoPolicy::Keep
                && matches!(s.state, StepState::Succeeded | StepState::Failed)
                && s.action == Action::Do
            {
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
            self.start(i, Action::Undo, now);
        }
        if !self.steps.iter().any(StepRecord::in_flight) {
            let all_clear = self.steps.iter().all(StepRecord::is_clear);
            // Compensation ends failed however clean; a delete succeeds when all is gone.
            let deleting = kinds::behaviour(self.kind).direction == Direction::Backward;
            let outcome = if deleting && all_clear {
                OperationState::Succeeded
            } else {
                OperationState::Failed
            };
            self.finish(outcome, now);
        }
    }

    /// Starts `action` of step `i` afresh: a full retry budget and a new step deadline.
    pub(crate) fn start(&mut self, i: usize, action: Action, now: OffsetDateTime) {
        let step_timeout =
            Duration::seconds(i64::try_from(self.timing.step_timeout_s).unwrap_or(i64::MAX));
        let s = &mut self.steps[i];
        s.action = action;
        s.attempts = 1;
        s.throttled = 0;
        s.lease_expiries = 0;
        s.paced_ms = 0;
        s.state = match action {
            Action::Do => StepState::Running,
            Action::Undo => StepState::Compensating,
        };
        s.started_at = Some(now);
        s.ended_at = None;
        s.last_error = None;
        s.message.clear();
        s.wait = None;
        s.deadline = Some(now + step_timeout);
        self.send(i, None, now);
        let kind = match action {
            Action::Do => "step.started",
            Action::Undo => "step.compensating",
        };
        self.audit(kind, Some(i), Value::Null, now);
    }

    /// Dispatches the current action of step `i` again under a new fence (a retry, a
    /// re-check, a re-dispatch after a lost lease), not before `not_before`.
    pub(crate) fn send(
        &mut self,
        i: usize,
        not_before: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) {
        let start_lease =
            Duration::milliseconds(i64::try_from(self.timing.start_lease_ms).unwrap_or(i64::MAX));
        let s = &mut self.steps[i];
        s.fence += 1;
        s.not_before = not_before;
        s.lease_until = Some(not_before.map_or(now, |t| t.max(now)) + start_lease);
        let dispatch = Effect::Dispatch {
            step: s.id.clone(),
            fence: s.fence,
        };
        self.outbox.push(dispatch);
    }

    /// Applies a service's report. Reports of an older dispatch (a lower fence), of another
    /// action, or on a step not in flight are ignored: duplicates or late redeliveries. A
    /// report of a *newer* dispatch than this record knows means the record is stale.
    pub fn apply(&mut self, ev: &StepEvent, now: OffsetDateTime) -> Applied {
        if self.state.is_terminal() {
            return Applied::Ignored("saga is finished");
        }
        let Some(i) = self.step_index(&ev.step) else {
            return Applied::Ignored("unknown step");
        };
        let s = &self.steps[i];
        if ev.fence > s.fence {
            return Applied::Ahead;
        }
        if !s.in_flight() || s.action != ev.action || s.fence != ev.fence {
            return Applied::Ignored("stale or duplicate report");
        }
        match &ev.outcome {
            Outcome::Progress { message, paced_ms } => {
                let lease =
                    Duration::milliseconds(i64::try_from(self.timing.lease_ms).unwrap_or(i64::MAX));
                let s = &mut self.steps[i];
                s.lease_until = Some(now + lease);
                s.add_paced(*paced_ms);
                if &s.message != message {
                    s.message = message.clone();
                    self.audit("step.progress", Some(i), json!({ "message": message }), now);
                }
                self.updated_at = now;
                return Applied::Changed;
            }
            // A superseded saga waits for nothing more: the wait ends here.
            Outcome::Waiting { .. } if self.links.superseded_by.is_some() => {
                let s = &mut self.steps[i];
                s.end_failed(now);
                let by = self.links.superseded_by.clone();
                self.audit("step.cancelled", Some(i), json!({ "by": by }), now);
            }
            Outcome::Waiting {
                message,
                recheck_after_ms,
                memo,
            } => {
                let s = &mut self.steps[i];
                let since = s.wait.as_ref().map_or(now, |w| w.since);
                s.wait = Some(StepWait {
                    since,
                    memo: memo.clone(),
                });
                if &s.message != message {
                    s.message = message.clone();
                    self.audit("step.waiting", Some(i), json!({ "message": message }), now);
                }
                let delay = (*recheck_after_ms).clamp(
                    self.timing.recheck_min_ms,
                    self.timing.recheck_max_ms.max(self.timing.recheck_min_ms),
                );
                self.send(
                    i,
                    Some(now + Duration::milliseconds(i64::try_from(delay).unwrap_or(i64::MAX))),
                    now,
                );
            }
            Outcome::Succeeded { outputs } => {
                let s = &mut self.steps[i];
                s.ended_at = Some(now);
                s.message.clear();
                s.wait = None;
                s.lease_until = None;
                s.not_before = None;
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

    /// The failure policy, by class:
    /// - throttled (429, an exhausted request budget): wait it out, no attempt spent;
    /// - retryable with budget left: retry with backoff;
    /// - terminal on a forward step: compensate, or stop where it is, as the kind says;
    /// - anything else (retries exhausted, an undo that cannot finish): pause with the reason.
    pub(crate) fn on_failure(&mut self, i: usize, error: &StepError, now: OffsetDateTime) {
        let backward = self.backward();
        let stopping = self.links.superseded_by.is_some();
        let s = &mut self.steps[i];
        s.last_error = Some(error.clone());
        s.wait = None;
        let attempt = s.attempts;
        let action = s.action;
        if stopping {
            // Superseded: nothing is retried; the delete that follows removes what is there.
            s.end_failed(now);
            self.audit(
                "step.failed",
                Some(i),
                json!({ "error": error.info, "will_retry": false }),
                now,
            );
            return;
        }
        if self.pause.is_some() {
            // Paused: nothing new is sent and nothing turned around until an operator looks;
            // the step joins the ones waiting for them.
            s.end_failed(now);
            let mut info = error.info.clone();
            info.step = Some(s.id.clone());
            self.audit(
                "step.failed",
                Some(i),
                json!({ "error": info, "will_retry": false, "paused": true }),
                now,
            );
            self.pause_step(i, info, now);
            return;
        }
        if error.throttled && error.is_retryable() {
            s.throttled += 1;
            let key = format!(
                "{}:{}:{}:throttled:{}",
                self.id,
                s.id,
                action.as_str(),
                s.fence
            );
            let delay = self.retry.throttle_delay(&key, error.retry_after_ms);
            s.add_paced(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
            self.audit(
                "step.throttled",
                Some(i),
                json!({ "error": error.info, "retry_in_ms": u64::try_from(delay.as_millis()).unwrap_or(u64::MAX) }),
                now,
            );
            self.send(i, Some(now + delay), now);
            return;
        }
        // Going backward, a forward step is not retried: its partial work is undone instead.
        let may_retry = error.is_retryable()
            && attempt < self.retry.max_attempts
            && !(action == Action::Do && backward);
        if may_retry {
            let key = format!("{}:{}:{}", self.id, s.id, action.as_str());
            let delay = self.retry.delay(&key, attempt + 1, error.retry_after_ms);
            s.attempts = attempt + 1;
            let not_before = now + delay;
            self.audit(
                "step.failed",
                Some(i),
                json!({ "error": error.info, "will_retry": true, "retry_in_ms": delay.as_millis() as u64 }),
                now,
            );
            self.send(i, Some(not_before), now);
            self.audit(
                "step.started",
                Some(i),
                json!({ "not_before": rfc3339(not_before) }),
                now,
            );
            return;
        }
        let s = &mut self.steps[i];
        s.end_failed(now);
        let exhausted = error.is_retryable();
        let mut info = error.info.clone();
        info.step = Some(s.id.clone());
        match (action, backward, error.is_retryable()) {
            // A forward step reporting after compensation began: its partial work is undone.
            (Action::Do, true, _) => {
                self.audit(
                    "step.failed",
                    Some(i),
                    json!({ "error": info, "will_retry": false }),
                    now,
                );
                if self.error.is_none() {
                    self.error = Some(info);
                }
            }
            (Action::Do, false, false) => {
                self.audit(
                    "step.failed",
                    Some(i),
                    json!({ "error": info, "will_retry": false, "retries_exhausted": false }),
                    now,
                );
                if self.error.is_none() {
                    self.error = Some(info);
                }
                match kinds::behaviour(self.kind).on_failure {
                    OnFailure::Compensate => self.begin_compensation(now),
                    OnFailure::Stop => self.stop(now),
                }
            }
            _ => {
                self.audit(
                    "step.failed",
                    Some(i),
                    json!({ "error": info, "will_retry": false, "retries_exhausted": exhausted }),
                    now,
                );
                self.pause_step(i, info, now);
            }
        }
    }

    /// Stops the saga until an operator acts; `i` is one of the steps they must look at.
    pub(crate) fn pause_step(&mut self, i: usize, reason: ErrorInfo, now: OffsetDateTime) {
        let id = self.steps[i].id.clone();
        match &mut self.pause {
            Some(p) => {
                if !p.steps.contains(&id) {
                    p.steps.push(id);
                }
            }
            None => {
                self.pause = Some(Pause {
                    since: now,
                    reason: reason.clone(),
                    steps: vec![id],
                });
                self.audit("saga.paused", Some(i), json!({ "reason": reason }), now);
            }
        }
    }

    /// Turns a failing create around: what never started is skipped, what is persistent by
    /// design is kept, everything else is undone in reverse dependency order.
    pub(crate) fn begin_compensation(&mut self, now: OffsetDateTime) {
        self.state = OperationState::Compensating;
        for s in &mut self.steps {
            match (s.state, s.undo) {
                (StepState::Pending, _) => s.state = StepState::Skipped,
                (StepState::Succeeded | StepState::Failed, UndoPolicy::Keep) => {
                    s.state = StepState::Kept
                }
                _ => {}
            }
        }
        let reason = self.error.clone();
        self.audit("saga.compensating", None, json!({ "reason": reason }), now);
    }

    /// Stops a forward operation where it is: nothing more starts (what never started is
    /// skipped), nothing is undone; steps running now report, then it ends failed.
    /// Steps waiting on Azure or HyperShift are taken back at once (their next re-check is
    /// dropped by its fence).
    pub(crate) fn stop(&mut self, now: OffsetDateTime) {
        let reason = self.error.clone();
        self.audit("saga.stopping", None, json!({ "reason": reason }), now);
        for i in 0..self.steps.len() {
            let s = &mut self.steps[i];
            if s.state == StepState::Pending {
                s.state = StepState::Skipped;
            } else if s.in_flight() && s.wait.is_some() {
                s.end_failed(now);
                self.audit("step.cancelled", Some(i), json!({ "stopped": true }), now);
            }
        }
    }

    /// Ends an operation that has no plan (its record names what its spec lacks) as failed,
    /// saying why: nothing ran, nothing is left.
    pub fn fail_unplannable(&mut self, why: &str, now: OffsetDateTime) {
        self.error = Some(ErrorInfo {
            code: "InvalidOperation".into(),
            message: why.to_owned(),
            ..Default::default()
        });
        self.finish(OperationState::Failed, now);
    }

    pub(crate) fn finish(&mut self, state: OperationState, now: OffsetDateTime) {
        self.state = state;
        self.ended_at = Some(now);
        self.pause = None;
        for s in &mut self.steps {
            s.lease_until = None;
            s.wait = None;
        }
        let b = kinds::behaviour(self.kind);
        let kind = match state {
            _ if self.links.superseded_by.is_some() => "operation.superseded",
            OperationState::Succeeded => b.succeeded_event,
            _ => b.failed_event,
        };
        let leftovers: Vec<&str> = self
            .steps
            .iter()
            .filter(|s| {
                s.needs_undo()
                    || s.in_flight()
                    || (s.state == StepState::Failed && s.action == Action::Undo)
            })
            .map(|s| s.id.as_str())
            .collect();
        let detail =
            json!({ "error": self.error, "not_undone": leftovers, "resources": self.resources() });
        self.audit(kind, None, detail, now);
        if let Some(by) = self.links.superseded_by.clone() {
            self.outbox.push(Effect::Wake { saga_id: by });
        }
    }

    /// A delete supersedes this operation (or its compensation): nothing more is dispatched,
    /// steps waiting on Azure or HyperShift are taken back at once (their next re-check is
    /// dropped by its fence), steps running now report first — the next safe point — and
    /// then the saga ends and wakes the delete, which removes everything.
    pub fn supersede(&mut self, by: &str, now: OffsetDateTime) -> Applied {
        if self.state.is_terminal() || self.links.superseded_by.is_some() {
            return Applied::Ignored("finished or already superseded");
        }
        self.links.superseded_by = Some(by.to_owned());
        self.pause = None;
        self.audit("operation.superseding", None, json!({ "by": by }), now);
        for i in 0..self.steps.len() {
            let s = &mut self.steps[i];
            if s.in_flight() && s.wait.is_some() {
                s.end_failed(now);
                self.audit("step.cancelled", Some(i), json!({ "by": by }), now);
            }
        }
        self.advance(now);
        self.updated_at = now;
        Applied::Changed
    }

    /// The operation this delete waited for has stopped: take over its outputs (what it
    /// made, for the record) and start.
    pub fn release(
        &mut self,
        outputs: &std::collections::BTreeMap<String, hypersaga_bus::Outputs>,
        now: OffsetDateTime,
    ) -> Applied {
        if self.state.is_terminal() {
            return Applied::Ignored("saga is finished");
        }
        let Some(create) = self.links.after.take() else {
            return Applied::Ignored("not waiting");
        };
        for (step, out) in outputs {
            self.context
                .outputs
                .entry(step.clone())
                .or_insert_with(|| out.clone());
        }
        self.audit("operation.released", None, json!({ "after": create }), now);
        self.advance(now);
        self.updated_at = now;
        Applied::Changed
    }

    pub(crate) fn audit(
        &mut self,
        kind: &str,
        step: Option<usize>,
        detail: Value,
        now: OffsetDateTime,
    ) {
        let actor = self.actor.clone();
        self.audit_by(&actor, kind, step, detail, now);
    }

    /// An audit event attributed to `actor` (an operator's call rather than the requester).
    pub(crate) fn audit_by(
        &mut self,
        actor: &str,
        kind: &str,
        step: Option<usize>,
        detail: Value,
        now: OffsetDateTime,
    ) {
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
            actor: actor.to_owned(),
            trace_id: self.trace_id.clone(),
            detail,
        };
        self.outbox.push(Effect::Audit(Box::new(event)));
    }
}
