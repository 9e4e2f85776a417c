//! How far a step got: done, failed, or waiting on Azure.
//!
//! A step handler never waits in its worker for an ARM operation: [`ensure`](crate::ensure)
//! and [`remove`](crate::remove) start the operation and, while it runs, stop the handler with
//! [`Halt::Wait`] carrying what to poll. The saga re-checks later with that in the command's
//! memo ([`Ops`]), the handler runs again from the top — looking, adopting what is done — and
//! picks the operation up where it was. So the 30–60 s Azure takes for a private DNS zone or
//! a resource-group delete costs no worker slot.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use hypersaga_azure::Pending;
use hypersaga_bus::{Outputs, StepCommand, StepError};
use hypersaga_worker::StepResult;
use serde_json::json;

/// Memo key of the ARM operations a step is waiting for.
const MEMO_KEY: &str = "arm";

/// Why a handler stopped before finishing.
#[derive(Debug)]
pub enum Halt {
    /// The step failed (retryable or not, as the error says).
    Failed(StepError),
    /// Azure is still working on `id`; poll `pending` again later.
    Wait {
        /// What the step waits for, for users.
        message: String,
        /// The resource the operation is about.
        id: String,
        /// The operation.
        pending: Pending,
    },
}

impl From<StepError> for Halt {
    fn from(e: StepError) -> Self {
        Self::Failed(e)
    }
}

/// The ARM operations a step started on an earlier check, by resource id (read from the
/// command's memo).
#[derive(Debug, Default)]
pub struct Ops {
    pending: BTreeMap<String, Pending>,
}

impl Ops {
    /// The operations `cmd` carries; none for a first attempt (or an unreadable memo, which
    /// only costs a fresh look).
    pub fn of(cmd: &StepCommand) -> Self {
        let pending = cmd
            .memo
            .get(MEMO_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        Self { pending }
    }

    /// The operation running on `id`, if the step started one.
    pub fn pending(&self, id: &str) -> Option<&Pending> {
        self.pending.get(id)
    }
}

/// Floor on the spacing of re-checks, whatever `Retry-After` says (an ARM answer of 0).
const MIN_RECHECK: Duration = Duration::from_millis(50);

/// A handler's result as the worker reports it: outputs, a wait (with its memo), or the
/// failure.
pub fn conclude(result: Result<Outputs, Halt>) -> Result<StepResult, StepError> {
    match result {
        Ok(outputs) => Ok(StepResult::Done(outputs)),
        Err(Halt::Failed(e)) => Err(e),
        Err(Halt::Wait {
            message,
            id,
            pending,
        }) => {
            let recheck_after = pending.after().max(MIN_RECHECK);
            Ok(StepResult::Wait {
                message,
                recheck_after,
                memo: json!({ MEMO_KEY: { id: pending } }),
            })
        }
    }
}

/// An Azure-facing step service: one pass of a step ([`ArmStep::step`]) is all it writes;
/// the worker's one check per command and the in-place run to the end follow from it.
#[async_trait::async_trait]
pub trait ArmStep: Sync {
    /// One pass: as far as the step can go now (looking, adopting, starting or polling an
    /// ARM operation); [`Halt::Wait`] while Azure still works.
    async fn step(&self, cmd: &StepCommand, notes: &dyn crate::Notes) -> Result<Outputs, Halt>;

    /// One check of a step, as the worker reports it: outputs, a wait with its memo (the
    /// saga checks again later), or the failure.
    async fn check(
        &self,
        cmd: &StepCommand,
        notes: &dyn crate::Notes,
    ) -> Result<StepResult, StepError> {
        conclude(self.step(cmd, notes).await)
    }

    /// Runs a step to its end in place, checking again after each wait (tests and tools).
    async fn execute(
        &self,
        cmd: &StepCommand,
        notes: &dyn crate::Notes,
    ) -> Result<Outputs, StepError> {
        drive(cmd, |c| async move { self.check(&c, notes).await }).await
    }
}

/// Runs a step to its end in place: checks again after each wait, as the saga would, with
/// the memo the handler left. For callers that may block (tools, tests); the worker runs one
/// check per command instead.
pub async fn drive<F, Fut>(cmd: &StepCommand, mut check: F) -> Result<Outputs, StepError>
where
    F: FnMut(StepCommand) -> Fut,
    Fut: Future<Output = Result<StepResult, StepError>>,
{
    let mut cmd = cmd.clone();
    loop {
        match check(cmd.clone()).await? {
            StepResult::Done(outputs) => return Ok(outputs),
            StepResult::Wait {
                message,
                recheck_after,
                memo,
            } => {
                tracing::info!(step = %cmd.step, %message, "waiting");
                cmd.memo = memo;
                cmd.fence += 1;
                cmd.waiting_since
                    .get_or_insert_with(time::OffsetDateTime::now_utc);
                tokio::time::sleep(recheck_after).await;
            }
        }
    }
}
