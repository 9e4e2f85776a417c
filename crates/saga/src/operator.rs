//! What an operator may do with a saga that cannot go on by itself: resume it, retry one
//! step, compensate a paused create, or abandon it. Every call is audited with its actor.

use hypersaga_bus::{Action, OperatorAction, OperatorCall};
use hypersaga_model::ErrorInfo;
use hypersaga_model::record::{OperationKind, OperationState};
use serde_json::json;
use time::OffsetDateTime;

use crate::kinds;
use crate::saga::{Applied, Saga};

/// Why an operator call does not apply to the saga as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the operation has finished ({0:?}); nothing to do")]
    Finished(OperationState),
    #[error("the operation is not paused; only `abandon` applies to a running operation")]
    NotPaused,
    #[error("`retry_step` needs the id of a paused step; paused: {0:?}")]
    NotAPausedStep(Vec<String>),
    #[error(
        "only a create (of a cluster or a node pool) can be compensated; other operations can be resumed or abandoned"
    )]
    NotACreate,
    #[error("the operation is already compensating; `resume` continues the compensation")]
    AlreadyCompensating,
}

impl Refusal {
    /// A short code for APIs and the audit stream.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Finished(_) => "OperationFinished",
            Self::NotPaused => "OperationNotPaused",
            Self::NotAPausedStep(_) => "StepNotPaused",
            Self::NotACreate => "NotACreate",
            Self::AlreadyCompensating => "AlreadyCompensating",
        }
    }
}

/// Whether `action` (on `step`) applies to an operation in `state` (its direction and
/// outcome), paused on `paused` steps if at all: one rule for the coordinator, which applies
/// calls, and the gateway, which answers them first (see [`crate::StoredOperation`]).
pub(crate) fn judge(
    state: OperationState,
    paused: Option<&[String]>,
    kind: OperationKind,
    backward: bool,
    action: OperatorAction,
    step: Option<&str>,
) -> Result<(), Refusal> {
    if state.is_terminal() {
        return Err(Refusal::Finished(state));
    }
    if action == OperatorAction::Abandon {
        return Ok(());
    }
    let Some(paused) = paused else {
        return Err(Refusal::NotPaused);
    };
    match action {
        OperatorAction::RetryStep => match step {
            Some(s) if paused.iter().any(|p| p == s) => Ok(()),
            _ => Err(Refusal::NotAPausedStep(paused.to_vec())),
        },
        OperatorAction::Compensate if !kinds::behaviour(kind).compensable() => {
            Err(Refusal::NotACreate)
        }
        OperatorAction::Compensate if backward => Err(Refusal::AlreadyCompensating),
        _ => Ok(()),
    }
}

impl Saga {
    /// Whether `action` (on `step`) applies to the saga as it is now, without changing it.
    pub fn check_operator(
        &self,
        action: OperatorAction,
        step: Option<&str>,
    ) -> Result<(), Refusal> {
        let paused = self.pause.as_ref().map(|p| p.steps.as_slice());
        judge(self.state, paused, self.kind, self.backward(), action, step)
    }

    /// Applies an operator's call. Refused calls change nothing.
    pub fn operate(
        &mut self,
        call: &OperatorCall,
        now: OffsetDateTime,
    ) -> Result<Applied, Refusal> {
        self.check_operator(call.action, call.step.as_deref())?;
        let actor = call.actor.as_str();
        let detail = json!({ "call_id": call.call_id, "step": call.step, "paused": self.pause.as_ref().map(|p| &p.reason) });
        match call.action {
            OperatorAction::Abandon => {
                self.audit_by(actor, "operator.abandon", None, detail, now);
                let previous = self
                    .pause
                    .as_ref()
                    .map(|p| p.reason.clone())
                    .or_else(|| self.error.clone());
                self.error = Some(ErrorInfo {
                    code: "Abandoned".into(),
                    message: match previous {
                        Some(p) => format!("abandoned by {actor} (was: {}: {})", p.code, p.message),
                        None => format!("abandoned by {actor}"),
                    },
                    ..Default::default()
                });
                self.finish(OperationState::Failed, now);
            }
            OperatorAction::Resume => {
                self.audit_by(actor, "operator.resume", None, detail, now);
                let paused = self.pause.take().map(|p| p.steps).unwrap_or_default();
                for id in paused {
                    self.restart(&id, now);
                }
                self.advance(now);
            }
            OperatorAction::RetryStep => {
                let id = call.step.clone().unwrap_or_default();
                self.audit_by(
                    actor,
                    "operator.retry_step",
                    self.step_index(&id),
                    detail,
                    now,
                );
                if let Some(p) = &mut self.pause {
                    p.steps.retain(|s| s != &id);
                    if p.steps.is_empty() {
                        self.pause = None;
                    }
                }
                self.restart(&id, now);
                self.advance(now);
            }
            OperatorAction::Compensate => {
                self.audit_by(actor, "operator.compensate", None, detail, now);
                let reason = self.pause.take().map(|p| p.reason);
                if self.error.is_none() {
                    self.error = reason;
                }
                self.begin_compensation(now);
                self.advance(now);
            }
        }
        self.updated_at = now;
        Ok(Applied::Changed)
    }

    /// Runs a stopped step's current action again from a fresh budget.
    fn restart(&mut self, id: &str, now: OffsetDateTime) {
        if let Some(i) = self.step_index(id) {
            let action = self.steps[i].action;
            // A forward step paused while the saga goes backward is undone, not redone.
            let action = if action == Action::Do && self.backward() {
                return;
            } else {
                action
            };
            self.start(i, action, now);
        }
    }
}
