//! Fencing: before running a command, check that the saga still wants exactly this attempt.
//!
//! A command can arrive late — redelivered after its replica died, republished from an outbox
//! after JetStream's de-duplication window, or delivered again after its result was already
//! applied. Running it then could recreate what the saga has since undone. The coordinator
//! writes the saga *before* it publishes a command, so the saga record is the authority.

use async_nats::jetstream::kv;
use hypersaga_bus::subjects::saga_key;
use hypersaga_bus::{Action, StepCommand};
use hypersaga_model::TenantId;
use hypersaga_model::record::StepState;
use serde::Deserialize;

/// The part of a saga record the fence reads (unknown fields are ignored).
#[derive(Deserialize)]
struct SagaSteps {
    steps: Vec<StepFence>,
}

#[derive(Deserialize)]
struct StepFence {
    id: String,
    state: StepState,
    action: Action,
    attempts: u32,
}

/// Where a command belongs, readable even when the rest of it is not.
#[derive(Deserialize)]
pub(crate) struct CommandAddress {
    pub saga_id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub step: String,
    pub action: Action,
    pub attempt: u32,
}

/// Whether `cmd` is the attempt its saga is waiting for.
pub(crate) async fn still_wanted(sagas: &kv::Store, cmd: &StepCommand) -> Result<bool, String> {
    let entry = sagas.entry(saga_key(&cmd.tenant, &cmd.saga_id)).await.map_err(|e| e.to_string())?;
    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
        return Ok(false);
    };
    let saga: SagaSteps = serde_json::from_slice(&entry.value).map_err(|e| e.to_string())?;
    Ok(saga.steps.iter().any(|s| {
        s.id == cmd.step
            && s.action == cmd.action
            && s.attempts == cmd.attempt
            && matches!(s.state, StepState::Running | StepState::Compensating)
    }))
}
