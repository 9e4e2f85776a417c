//! What another service may read of a stored saga: the operation as users see it, and what
//! an operator call is judged against. The saga record itself is the coordinator's own; the
//! gateway reads stored sagas only as [`StoredOperation`], so the record can change without
//! the gateway knowing.

use hypersaga_bus::OperatorAction;
use hypersaga_model::record::{OperationKind, OperationState, OperationView};
use serde::Deserialize;

use crate::operator::{Refusal, judge};
use crate::saga::Saga;

/// A stored operation, as the gateway reads it (decoded from the saga record).
#[derive(Clone, Debug, Deserialize)]
#[serde(from = "Saga")]
pub struct StoredOperation {
    /// As users see it.
    pub view: OperationView,
    /// W3C trace id of the operation: an operator call joins its trace.
    pub trace_id: String,
    /// Direction and outcome, which the view's `Paused` hides: whether a compensation is
    /// already running decides whether `compensate` applies.
    state: OperationState,
    kind: OperationKind,
    backward: bool,
}

impl From<Saga> for StoredOperation {
    fn from(saga: Saga) -> Self {
        Self::of(&saga)
    }
}

impl StoredOperation {
    pub fn of(saga: &Saga) -> Self {
        Self {
            view: saga.view(),
            trace_id: saga.trace_id.clone(),
            state: saga.state,
            kind: saga.kind,
            backward: saga.backward(),
        }
    }

    /// Whether `action` (on `step`) applies to the operation as it is; the coordinator judges
    /// the call the same way when it applies it.
    pub fn check_operator(
        &self,
        action: OperatorAction,
        step: Option<&str>,
    ) -> Result<(), Refusal> {
        let paused = self.view.pause.as_ref().map(|p| p.steps.as_slice());
        judge(self.state, paused, self.kind, self.backward, action, step)
    }
}
