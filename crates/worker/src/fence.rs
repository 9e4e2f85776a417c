//! Fencing: the check that the saga still wants exactly this dispatch of the step, made
//! before every mutating call (`guard`), before a redelivered command runs, and at every
//! heartbeat.
//!
//! A command can arrive late — redelivered after its replica died, republished from an outbox
//! after JetStream's de-duplication window, delivered again after its result was applied, or
//! superseded by a re-dispatch after its lease ran out. Running it then could recreate what
//! the saga has since undone. The coordinator writes the saga *before* it publishes a command,
//! so the saga record is the authority — unless the record we read is older than the command
//! (a replica that lags its leader): then the answer is "ask again later", not "drop".

use async_nats::jetstream::kv;
use hypersaga_bus::subjects::saga_key;
use hypersaga_bus::{Action, StepCommand};
use hypersaga_model::TenantId;
use hypersaga_model::record::StepState;
use hypersaga_saga::{StepRecord, StepsView};
use serde::Deserialize;

/// Where a command belongs, readable even when the rest of it is not.
#[derive(Deserialize)]
pub(crate) struct CommandAddress {
    pub saga_id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub step: String,
    pub action: Action,
    pub attempt: u32,
    #[serde(default)]
    pub fence: u64,
}

/// What the saga record says of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The saga waits for exactly this dispatch: run it.
    Current,
    /// The saga has moved on (a newer dispatch, the step done or undone, the saga gone): drop it.
    MovedOn,
    /// The record read is older than the command: look again later.
    Behind,
}

/// Reads the saga record and judges `cmd` against it.
pub(crate) async fn check(sagas: &kv::Store, cmd: &StepCommand) -> Result<Verdict, String> {
    let entry = sagas
        .entry(saga_key(&cmd.tenant, &cmd.saga_id))
        .await
        .map_err(|e| e.to_string())?;
    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
        return Ok(Verdict::MovedOn);
    };
    if let Some(verdict) = by_revision(entry.revision, cmd.dispatched_in) {
        return Ok(verdict);
    }
    let saga = StepsView::from_record(&entry.value).map_err(|e| e.to_string())?;
    // An operation that has ended (an operator's abandon may leave steps in flight) wants
    // nothing more.
    if saga.is_finished() {
        return Ok(Verdict::MovedOn);
    }
    let Some(step) = saga.step(&cmd.step).map_err(|e| e.to_string())? else {
        return Ok(Verdict::MovedOn);
    };
    Ok(judge(&step, cmd.action, cmd.fence))
}

/// The verdict the revision read says alone, against the revision that dispatched the
/// command: that very record wants exactly this dispatch (it put the command in its outbox),
/// and an older one has not seen it yet. A newer record must be read to be judged.
fn by_revision(read: u64, dispatched_in: Option<u64>) -> Option<Verdict> {
    let dispatched_in = dispatched_in?;
    match read.cmp(&dispatched_in) {
        std::cmp::Ordering::Equal => Some(Verdict::Current),
        std::cmp::Ordering::Less => Some(Verdict::Behind),
        std::cmp::Ordering::Greater => None,
    }
}

fn judge(step: &StepRecord, action: Action, fence: u64) -> Verdict {
    if step.fence < fence {
        Verdict::Behind
    } else if step.fence == fence
        && step.action == action
        && matches!(step.state, StepState::Running | StepState::Compensating)
    {
        Verdict::Current
    } else {
        Verdict::MovedOn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step as the coordinator stores it in the saga record.
    fn step(state: StepState, action: Action, fence: u64) -> StepRecord {
        serde_json::from_value(serde_json::json!({
            "id": "network.vnet",
            "deps": ["network.nsg"],
            "undo": "undo",
            "state": state,
            "action": action,
            "attempts": 1,
            "fence": fence,
        }))
        .expect("a stored step")
    }

    #[test]
    fn the_dispatching_revision_is_judged_without_decoding() {
        assert_eq!(by_revision(7, Some(7)), Some(Verdict::Current));
        assert_eq!(by_revision(6, Some(7)), Some(Verdict::Behind), "read lags");
        assert_eq!(by_revision(8, Some(7)), None, "newer: decode and judge");
        assert_eq!(by_revision(7, None), None, "publisher did not say");
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            judge(&step(StepState::Running, Action::Do, 3), Action::Do, 3),
            Verdict::Current
        );
        assert_eq!(
            judge(&step(StepState::Running, Action::Do, 4), Action::Do, 3),
            Verdict::MovedOn,
            "re-dispatched"
        );
        assert_eq!(
            judge(&step(StepState::Running, Action::Do, 2), Action::Do, 3),
            Verdict::Behind,
            "record lags"
        );
        assert_eq!(
            judge(&step(StepState::Succeeded, Action::Do, 3), Action::Do, 3),
            Verdict::MovedOn,
            "already applied"
        );
        assert_eq!(
            judge(
                &step(StepState::Compensating, Action::Undo, 3),
                Action::Do,
                3
            ),
            Verdict::MovedOn
        );
        assert_eq!(
            judge(&step(StepState::Failed, Action::Do, 3), Action::Do, 3),
            Verdict::MovedOn,
            "paused or taken back"
        );
    }
}
