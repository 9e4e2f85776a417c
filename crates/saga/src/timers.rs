//! Time: leases, step deadlines and the operation's deadline, and when the saga next needs
//! looking at. The coordinator schedules one wake-up per saga at [`Saga::next_due`], so no
//! process scans every saga to find the few that are due.

use hypersaga_bus::Action;
use hypersaga_model::ErrorInfo;
use hypersaga_model::record::OperationState;
use serde_json::json;
use time::OffsetDateTime;

use crate::kinds::{self, Direction, OnFailure};
use crate::saga::{Applied, Saga};
use crate::transitions::millis;

/// Leases that may expire before the step is paused: the first re-dispatch covers a lost
/// command; the second expiry means the service is not there.
const LEASE_EXPIRIES_BEFORE_PAUSE: u32 = 2;

/// How often a delete waiting for a superseded create looks again, should the create's
/// wake-up be lost.
const LOOK_AGAIN: time::Duration = time::Duration::seconds(30);

impl Saga {
    /// When this saga next has something due (a lease, a step deadline, the operation's
    /// deadline); `None` when only an input can move it (finished, or paused and idle).
    pub fn next_due(&self) -> Option<OffsetDateTime> {
        if self.state.is_terminal() {
            return None;
        }
        let steps = self
            .steps
            .iter()
            .filter(|s| s.in_flight())
            .flat_map(|s| [s.lease_until, s.deadline])
            .flatten();
        let operation_deadline_applies = !self.deadline_passed
            && match kinds::behaviour(self.kind).direction {
                Direction::Forward => self.pause.is_none() && self.state == OperationState::Running,
                // A delete's deadline runs once it has started: while it waits for the
                // operation it superseded, that one's step deadlines bound the wait.
                Direction::Backward => self.links.after.is_none(),
            };
        let operation = operation_deadline_applies.then_some(self.deadline);
        // A delete waiting for a superseded create looks again now and then, should the
        // create's wake-up be lost.
        let waiting = self
            .links
            .after
            .as_ref()
            .map(|_| self.updated_at + LOOK_AGAIN);
        steps.chain(operation).chain(waiting).min()
    }

    /// Time-based checks.
    /// - A step whose lease expired is dispatched again once; a second expiry pauses the
    ///   saga (the service is gone or cannot answer).
    /// - A step past its deadline pauses the saga.
    /// - A create past the operation's deadline is compensated (steps still running report
    ///   back later and are then undone); a delete past its deadline stops and fails, saying
    ///   what it could not remove. Compensation itself has no deadline: leaving half a
    ///   cluster behind is worse than finishing late. A paused create waits for its operator.
    /// - A delete waiting for a superseded create, whose look again was due (the coordinator
    ///   has just asked the create to stop again), looks again [`LOOK_AGAIN`] later.
    pub fn tick(&mut self, now: OffsetDateTime) -> Applied {
        self.tick_with(now, |_| false)
    }

    /// The services owning steps whose lease has run out at `now` (to ask whether they are
    /// busy before [`Saga::tick_with`]).
    pub fn lapsed_services(&self, now: OffsetDateTime) -> Vec<String> {
        let mut services: Vec<String> = self
            .steps
            .iter()
            .filter(|s| s.in_flight() && s.lease_until.is_some_and(|l| l <= now))
            .map(|s| s.service().to_owned())
            .collect();
        services.sort();
        services.dedup();
        services
    }

    /// As [`Saga::tick`], knowing which services are `busy`: alive and taking commands off
    /// their queues. A lapsed lease of a busy service's step is renewed rather than counted —
    /// the command is queued behind others, or its heartbeats are late, not lost — so a burst
    /// of work never pauses a saga; only a service that takes nothing off its queue does.
    pub fn tick_with(&mut self, now: OffsetDateTime, busy: impl Fn(&str) -> bool) -> Applied {
        if self.state.is_terminal() {
            return Applied::Ignored("saga is finished");
        }
        let before = self.seq;
        // `updated_at`, set below, is what the next look again counts from.
        let mut changed = self.links.after.is_some() && self.updated_at + LOOK_AGAIN <= now;
        for i in 0..self.steps.len() {
            let s = &self.steps[i];
            if !s.in_flight() {
                continue;
            }
            if s.deadline.is_some_and(|d| d <= now) {
                let info = ErrorInfo {
                    code: "StepDeadlineExceeded".into(),
                    message: format!(
                        "{} ({}) did not finish within {} s{}{}",
                        s.id,
                        s.action.as_str(),
                        self.timing.step_timeout_s,
                        if s.paced_ms == 0 {
                            String::new()
                        } else {
                            format!(
                                " (besides {} s waiting for the ARM request budget)",
                                s.paced_ms.div_ceil(1000)
                            )
                        },
                        if s.message.is_empty() {
                            String::new()
                        } else {
                            format!("; last: {}", s.message)
                        }
                    ),
                    step: Some(s.id.clone()),
                    retryable: true,
                    ..Default::default()
                };
                self.stop_step(i, &info, now);
                changed = true;
            } else if s.lease_until.is_some_and(|l| l <= now) && busy(s.service()) {
                let start_lease = time::Duration::milliseconds(
                    i64::try_from(self.timing.start_lease_ms).unwrap_or(i64::MAX),
                );
                self.steps[i].lease_until = Some(now + start_lease);
                changed = true;
            } else if s.lease_until.is_some_and(|l| l <= now) {
                let s = &mut self.steps[i];
                s.lease_expiries += 1;
                let service = s.service().to_owned();
                // A superseded saga sends nothing more: a silent step just stops.
                if s.lease_expiries >= LEASE_EXPIRIES_BEFORE_PAUSE
                    || self.links.superseded_by.is_some()
                {
                    let info = ErrorInfo {
                        code: "LeaseExpired".into(),
                        message: format!(
                            "no word from the {service} service on {} ({}) after {} dispatches; is it running?",
                            s.id,
                            s.action.as_str(),
                            s.lease_expiries
                        ),
                        step: Some(s.id.clone()),
                        retryable: true,
                        ..Default::default()
                    };
                    self.stop_step(i, &info, now);
                } else {
                    let silent_ms = s.lease_until.map_or(0, |l| millis(now - l));
                    self.audit(
                        "step.lease_expired",
                        Some(i),
                        json!({ "service": service, "late_ms": silent_ms }),
                        now,
                    );
                    self.send(i, None, now);
                }
                changed = true;
            }
        }
        let behaviour = kinds::behaviour(self.kind);
        if !self.deadline_passed
            && now >= self.deadline
            && (self.pause.is_none() || behaviour.direction == Direction::Backward)
            && self.links.after.is_none()
        {
            self.deadline_passed = true;
            let info = ErrorInfo {
                code: "OperationDeadlineExceeded".into(),
                message: format!(
                    "the operation did not finish by its deadline {}",
                    self.deadline
                ),
                ..Default::default()
            };
            self.audit(
                "saga.deadline_exceeded",
                None,
                json!({ "error": info }),
                now,
            );
            if self.error.is_none() {
                self.error = Some(info);
            }
            match (behaviour.direction, behaviour.on_failure, self.state) {
                (Direction::Forward, OnFailure::Compensate, OperationState::Running) => {
                    self.begin_compensation(now)
                }
                (Direction::Forward, OnFailure::Stop, OperationState::Running) => self.stop(now),
                (Direction::Forward, _, _) => {}
                (Direction::Backward, _, _) => self.finish(OperationState::Failed, now),
            }
            changed = true;
        }
        self.advance(now);
        if changed || self.seq != before {
            self.updated_at = now;
            Applied::Changed
        } else {
            Applied::Ignored("nothing due")
        }
    }

    /// Takes an in-flight step back (its worker, if any, loses its lease) and pauses on it.
    fn stop_step(&mut self, i: usize, info: &ErrorInfo, now: OffsetDateTime) {
        let s = &mut self.steps[i];
        s.end_failed(now);
        let action = s.action;
        s.last_error = Some(hypersaga_bus::StepError {
            info: info.clone(),
            retry_after_ms: None,
            throttled: false,
        });
        self.audit(
            "step.failed",
            Some(i),
            json!({ "error": info, "will_retry": false }),
            now,
        );
        // Forward work being compensated is undone rather than awaited; a superseded saga
        // just stops.
        if action == Action::Do && self.backward() || self.links.superseded_by.is_some() {
            return;
        }
        self.pause_step(i, info.clone(), now);
    }
}
