//! How far a step got: done, failed, or waiting on Azure.
//!
//! A step handler never waits in its worker for an ARM operation: [`ensure`](crate::ensure)
//! and [`remove`](crate::remove) start the operation and, while it runs, stop the handler with
//! [`Halt::Wait`] carrying what to poll. The saga re-checks later with that in the command's
//! memo ([`Ops`]), the handler runs again from the top — looking, adopting what is done — and
//! picks the operation up where it was. So the 30–60 s Azure takes for a private DNS zone or
//! a resource-group delete costs no worker slot.
//!
//! The memo also remembers what the step has already finished (resources made, adopted or
//! deleted), so a re-check does not look at them again: a step of nineteen identities and
//! credentials that waits on the subscription's write budget half-way would otherwise spend
//! nineteen reads of the read budget each time it comes back.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use hypersaga_azure::Pending;
use hypersaga_bus::{Outputs, StepCommand, StepError};
use hypersaga_worker::StepResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// What one check of a step knows of its ARM work: the operations started on earlier checks
/// and the resources finished with (read from the command's memo), and what this check adds.
/// Shared by everything the check does, concurrent parts included.
#[derive(Debug, Default)]
pub struct Ops {
    memo: Mutex<Memo>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Memo {
    /// Operations running, by resource id.
    #[serde(default, rename = "arm")]
    pending: BTreeMap<String, Pending>,
    /// Resources finished with, by id: what ARM last showed of them (scalar properties only),
    /// or null once deleted.
    #[serde(default, rename = "done", skip_serializing_if = "BTreeMap::is_empty")]
    done: BTreeMap<String, Value>,
}

impl Ops {
    /// What `cmd` carries; nothing for a first attempt (or an unreadable memo, which only costs
    /// a fresh look).
    pub fn of(cmd: &StepCommand) -> Self {
        Self::from_memo(&cmd.memo)
    }

    fn from_memo(memo: &Value) -> Self {
        Self {
            memo: Mutex::new(Memo::deserialize(memo).unwrap_or_default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The operation running on `id`, if the step started one.
    pub fn pending(&self, id: &str) -> Option<Pending> {
        self.lock().pending.get(id).cloned()
    }

    /// What ARM showed of `id` when this step finished with it, if it has.
    pub fn done(&self, id: &str) -> Option<Value> {
        self.lock().done.get(id).cloned()
    }

    /// `id` is finished with (`resource`: as ARM showed it; null once deleted).
    pub fn finished(&self, id: &str, resource: &Value) {
        let mut memo = self.lock();
        memo.pending.remove(id);
        memo.done.insert(id.to_owned(), remembered(resource));
    }

    /// An operation runs on `id`: poll it on the next check.
    pub fn started(&self, id: &str, pending: Pending) {
        self.lock().pending.insert(id.to_owned(), pending);
    }

    /// Whether this check finished with anything (worth carrying to the next).
    fn finished_any(&self) -> bool {
        !self.lock().done.is_empty()
    }

    fn to_memo(&self) -> Value {
        serde_json::to_value(&*self.lock()).unwrap_or(Value::Null)
    }
}

/// The part of a resource worth carrying in a memo: its id and scalar properties (identities'
/// client and principal ids, an address), not its rules, subnets or tags.
fn remembered(resource: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(id) = resource.get("id") {
        out.insert("id".into(), id.clone());
    }
    if let Some(props) = resource.get("properties").and_then(Value::as_object) {
        let scalars: serde_json::Map<String, Value> = props
            .iter()
            .filter(|(_, v)| !(v.is_object() || v.is_array()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert("properties".into(), Value::Object(scalars));
    }
    if out.is_empty() {
        Value::Null
    } else {
        Value::Object(out)
    }
}

/// Floor on the spacing of re-checks, whatever `Retry-After` says (an ARM answer of 0).
const MIN_RECHECK: Duration = Duration::from_millis(50);

/// A handler's result as the worker reports it: outputs, a wait (with its memo), or the
/// failure. A step stopped by the ARM budget after finishing with some resources waits for it
/// instead of failing, so it keeps what it learnt; with nothing learnt, it is throttled (the
/// same wait, without a memo).
pub fn conclude(result: Result<Outputs, Halt>, ops: &Ops) -> Result<StepResult, StepError> {
    match result {
        Ok(outputs) => Ok(StepResult::Done(outputs)),
        Err(Halt::Failed(e)) if e.throttled && ops.finished_any() => Ok(StepResult::Wait {
            message: format!(
                "waiting for the subscription's ARM budget ({})",
                e.info.code
            ),
            recheck_after: Duration::from_millis(e.retry_after_ms.unwrap_or(1_000))
                .max(MIN_RECHECK),
            memo: ops.to_memo(),
        }),
        Err(Halt::Failed(e)) => Err(e),
        Err(Halt::Wait {
            message,
            id,
            pending,
        }) => {
            let recheck_after = pending.after().max(MIN_RECHECK);
            ops.started(&id, pending);
            Ok(StepResult::Wait {
                message,
                recheck_after,
                memo: ops.to_memo(),
            })
        }
    }
}

/// An Azure-facing step service: one pass of a step ([`ArmStep::step`]) is all it writes;
/// the worker's one check per command and the in-place run to the end follow from it.
#[async_trait::async_trait]
pub trait ArmStep: Sync {
    /// One pass: as far as the step can go now (looking, adopting, starting or polling an
    /// ARM operation, with `ops` knowing what earlier passes did); [`Halt::Wait`] while Azure
    /// still works.
    async fn step(
        &self,
        cmd: &StepCommand,
        ops: &Ops,
        notes: &dyn crate::Notes,
    ) -> Result<Outputs, Halt>;

    /// One check of a step, as the worker reports it: outputs, a wait with its memo (the
    /// saga checks again later), or the failure.
    async fn check(
        &self,
        cmd: &StepCommand,
        notes: &dyn crate::Notes,
    ) -> Result<StepResult, StepError> {
        let ops = Ops::of(cmd);
        conclude(self.step(cmd, &ops, notes).await, &ops)
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

#[cfg(test)]
mod tests {
    use hypersaga_azure::PollKind;
    use serde_json::json;

    use super::*;

    fn pending(after_ms: u64) -> Pending {
        Pending {
            method: "PUT".into(),
            resource: "https://arm/x".into(),
            kind: PollKind::Operation,
            poll: "https://arm/op".into(),
            after_ms,
        }
    }

    fn paced() -> StepError {
        StepError::throttled("ArmBudgetExhausted", "write budget spent", 4_000)
    }

    #[test]
    fn what_a_check_finished_is_carried_to_the_next_without_rules_or_tags() {
        let ops = Ops::default();
        let nsg = json!({
            "id": "/x/nsg",
            "tags": {"a": "b"},
            "properties": {"provisioningState": "Succeeded", "securityRules": [{"name": "r"}],
                           "resourceGuid": "g"}
        });
        ops.finished("/x/nsg", &nsg);
        ops.finished("/x/gone", &Value::Null);
        // Stopped by the budget after that: a wait that keeps what was learnt, not a failure.
        let Ok(StepResult::Wait {
            recheck_after,
            memo,
            ..
        }) = conclude(Err(Halt::Failed(paced())), &ops)
        else {
            panic!("expected a wait");
        };
        assert_eq!(recheck_after, Duration::from_secs(4));
        let again = Ops::from_memo(&memo);
        assert_eq!(
            again.done("/x/nsg"),
            Some(json!({"id": "/x/nsg",
                        "properties": {"provisioningState": "Succeeded", "resourceGuid": "g"}}))
        );
        assert_eq!(again.done("/x/gone"), Some(Value::Null));
        assert_eq!(again.done("/x/other"), None);
    }

    #[test]
    fn a_budget_stop_with_nothing_learnt_stays_throttled() {
        let ops = Ops::default();
        let e = conclude(Err(Halt::Failed(paced())), &ops).unwrap_err();
        assert!(e.throttled);
    }

    #[test]
    fn every_operation_waited_on_is_polled_next_time_and_an_old_memo_still_reads() {
        let ops = Ops::default();
        ops.started("/a", pending(1_000));
        let Ok(StepResult::Wait { memo, .. }) = conclude(
            Err(Halt::Wait {
                message: "m".into(),
                id: "/b".into(),
                pending: pending(2_000),
            }),
            &ops,
        ) else {
            panic!("expected a wait");
        };
        let again = Ops::from_memo(&memo);
        assert_eq!(again.pending("/a"), Some(pending(1_000)));
        assert_eq!(again.pending("/b"), Some(pending(2_000)));
        // A memo written before `done` existed.
        let old = json!({ "arm": { "/c": pending(5) } });
        assert_eq!(Ops::from_memo(&old).pending("/c"), Some(pending(5)));
    }
}
