//! The part of a saga record a step worker reads.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use hypersaga_model::record::OperationState;

use crate::saga::StepRecord;

/// A saga record's steps, as stored: what a worker checks a command's fence against before
/// and while it runs it. The record is written by the coordinator alone; a step read from it
/// is the same [`StepRecord`], not a copy of its fields, so the two cannot drift apart.
///
/// A worker reads the record once per command, so only the step it asks about is decoded:
/// the rest of the record (context, outbox, the other steps) is only scanned.
#[derive(Deserialize)]
pub struct StepsView<'a> {
    /// The operation's state: a finished saga wants nothing more of any step.
    state: OperationState,
    #[serde(borrow)]
    steps: Vec<&'a RawValue>,
}

/// Just the id of a stored step.
#[derive(Deserialize)]
struct StepId<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
}

impl<'a> StepsView<'a> {
    /// Reads the steps of a saga record as stored in KV.
    pub fn from_record(json: &'a [u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(json)
    }

    /// Whether the operation has ended (succeeded, failed, or abandoned by an operator):
    /// then no command of it may change anything, even of a step left in flight.
    pub fn is_finished(&self) -> bool {
        self.state.is_terminal()
    }

    /// The step with wire id `id`, decoded.
    pub fn step(&self, id: &str) -> serde_json::Result<Option<StepRecord>> {
        for raw in &self.steps {
            let this: StepId<'_> = serde_json::from_str(raw.get())?;
            if this.id == id {
                return serde_json::from_str(raw.get()).map(Some);
            }
        }
        Ok(None)
    }

    /// Every step, decoded.
    pub fn steps(&self) -> serde_json::Result<Vec<StepRecord>> {
        self.steps
            .iter()
            .map(|raw| serde_json::from_str(raw.get()))
            .collect()
    }
}
