//! The fence, asked again right before every call that changes something outside.
//!
//! A handler's reads are harmless whoever runs them, and a report from a stale command is
//! ignored by the coordinator (its fence is older). What a stale command must never do is
//! change Azure, the management cluster or the OIDC storage: that could recreate what the
//! saga has just undone. So the worker installs a guard for the command it runs, and every
//! mutating call (an ARM PUT, PATCH, POST or DELETE, a server-side apply or a delete on the
//! management cluster, an OIDC blob write) asks [`before_mutation`] first, which reads the
//! saga record and judges the command against it. Checking there rather than only before
//! the handler starts also catches a saga that moved on while the handler was between two
//! calls, not only at the next heartbeat.
//!
//! Once a call is refused, the guard remembers why and refuses every later call without
//! reading again; the worker then drops the command (the saga moved on) or hands it back
//! for a moment (the record read lags the command) instead of reporting what the handler
//! returned.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::kv;
use hypersaga_bus::StepCommand;

use crate::fence::{self, Verdict};

tokio::task_local! {
    static GUARD: Arc<Guard>;
}

/// Why a mutating call may not be made for the command being run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fenced {
    /// The saga has moved on from this dispatch: the command is stale.
    #[error("the saga moved on from this command (fence {fence}); the call was not made")]
    MovedOn {
        /// The command's fence.
        fence: u64,
    },
    /// The saga record read is older than the command: ask again shortly.
    #[error("the saga record read lags this command (fence {fence}); the call was not made")]
    Behind {
        /// The command's fence.
        fence: u64,
    },
    /// The saga record could not be read, so the command cannot be vouched for.
    #[error("cannot read the saga record to check the command's fence: {0}")]
    Unreadable(String),
    /// The step is being planned (a dry run or a preflight): nothing may change.
    #[error("a plan changes nothing; the call was not made")]
    Planning,
}

/// How long a command is handed back for when the saga record read lags it.
pub(crate) const BEHIND_RETRY: Duration = Duration::from_millis(500);
/// How long a command is handed back for when the saga record cannot be read.
pub(crate) const UNREADABLE_RETRY: Duration = Duration::from_secs(1);

impl Fenced {
    /// How long the command is handed back for; `None`: it is dropped.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::MovedOn { .. } | Self::Planning => None,
            Self::Behind { .. } => Some(BEHIND_RETRY),
            Self::Unreadable(_) => Some(UNREADABLE_RETRY),
        }
    }
}

/// The fence of the command one task is running.
pub(crate) struct Guard {
    /// The saga records, and the command to judge by them; `None` while a plan or a sweep's
    /// listing runs (nothing may change, whatever the records say).
    judged: Option<(Arc<kv::Store>, Arc<StepCommand>)>,
    refused: Mutex<Option<Fenced>>,
}

impl Guard {
    pub(crate) fn new(sagas: Arc<kv::Store>, cmd: Arc<StepCommand>) -> Arc<Self> {
        Arc::new(Self {
            judged: Some((sagas, cmd)),
            refused: Mutex::new(None),
        })
    }

    /// The guard of a plan or a sweep's listing: every mutating call is refused
    /// ([`Fenced::Planning`]).
    pub(crate) fn planning() -> Arc<Self> {
        Arc::new(Self {
            judged: None,
            refused: Mutex::new(Some(Fenced::Planning)),
        })
    }

    /// Runs `work` (the handler) with this guard answering [`before_mutation`].
    pub(crate) async fn scope<F: Future>(self: &Arc<Self>, work: F) -> F::Output {
        GUARD.scope(self.clone(), work).await
    }

    /// Why a call was refused, if one was.
    pub(crate) fn refusal(&self) -> Option<Fenced> {
        self.lock().clone()
    }

    /// Reads the saga record and judges the command (or repeats an earlier refusal).
    pub(crate) async fn check(&self) -> Result<(), Fenced> {
        if let Some(refused) = self.refusal() {
            return Err(refused);
        }
        let Some((sagas, cmd)) = &self.judged else {
            return Err(Fenced::Planning);
        };
        let verdict = fence::check(sagas, cmd).await;
        // Calls made at once (a `join_all`) check at once: one refused meanwhile refuses all.
        let mut refused = self.lock();
        if let Some(earlier) = refused.as_ref() {
            return Err(earlier.clone());
        }
        let now = match verdict {
            Ok(Verdict::Current) => return Ok(()),
            Ok(Verdict::MovedOn) => Fenced::MovedOn { fence: cmd.fence },
            Ok(Verdict::Behind) => Fenced::Behind { fence: cmd.fence },
            Err(e) => Fenced::Unreadable(e),
        };
        *refused = Some(now.clone());
        Err(now)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Fenced>> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Asks whether the command this task runs may still change something: reads the saga record
/// and judges the command's fence against it (see the module's documentation). Every call
/// that mutates anything outside must ask first and not be made on an error.
///
/// Outside a worker (a handler called directly, as the services' own tests do) there is no
/// saga to ask, and every call is allowed.
pub async fn before_mutation() -> Result<(), Fenced> {
    match GUARD.try_with(Arc::clone) {
        Ok(guard) => guard.check().await,
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use hypersaga_bus::subjects::saga_key;
    use hypersaga_bus::{Action, Bus, StepId};
    use hypersaga_procs::NatsServer;
    use hypersaga_testkit::{command, spec};

    use super::*;

    struct Saga {
        _dir: tempfile::TempDir,
        _nats: NatsServer,
        sagas: Arc<kv::Store>,
        key: String,
        cmd: StepCommand,
    }

    /// A saga record (its contents are never read: the command names its revision) and a
    /// command dispatched by it.
    async fn dispatched() -> Saga {
        let dir = tempfile::tempdir().unwrap();
        let nats = NatsServer::start(dir.path()).await.unwrap();
        let bus = Bus::connect(nats.url(), "guard-test", "hcp").await.unwrap();
        let sagas = Arc::new(bus.sagas().await.unwrap());
        let mut cmd = command("demo", spec(), StepId::Vnet, Action::Do, []);
        let key = saga_key(&cmd.tenant, &cmd.saga_id);
        cmd.dispatched_in = Some(sagas.put(&key, "{}".into()).await.unwrap());
        Saga {
            _dir: dir,
            _nats: nats,
            sagas,
            key,
            cmd,
        }
    }

    #[tokio::test]
    async fn changes_are_allowed_while_the_saga_is_at_the_command_and_never_after_it_moved_on() {
        let s = dispatched().await;
        let guard = Guard::new(s.sagas.clone(), Arc::new(s.cmd.clone()));
        guard
            .scope(async {
                assert_eq!(before_mutation().await, Ok(()));
                assert_eq!(before_mutation().await, Ok(()), "asked again, same answer");
                // The saga is gone (it moved on as far as it can).
                s.sagas.purge(&s.key).await.unwrap();
                let moved_on = Err(Fenced::MovedOn { fence: s.cmd.fence });
                assert_eq!(before_mutation().await, moved_on);
                // Once refused, always refused, whatever the record says next.
                s.sagas.put(&s.key, "{}".into()).await.unwrap();
                assert_eq!(before_mutation().await, moved_on);
            })
            .await;
        let refused = guard.refusal().unwrap();
        assert_eq!(refused, Fenced::MovedOn { fence: s.cmd.fence });
        assert_eq!(refused.retry_after(), None, "dropped, not handed back");
        // Outside a worker's guard (a handler run directly) nothing is asked.
        assert_eq!(before_mutation().await, Ok(()));
    }

    #[tokio::test]
    async fn a_record_read_older_than_the_command_refuses_for_now() {
        let s = dispatched().await;
        let mut ahead = s.cmd.clone();
        ahead.dispatched_in = ahead.dispatched_in.map(|r| r + 1);
        let guard = Guard::new(s.sagas.clone(), Arc::new(ahead));
        let answer = guard.scope(before_mutation()).await;
        assert_eq!(answer, Err(Fenced::Behind { fence: s.cmd.fence }));
        assert_eq!(
            guard.refusal().and_then(|r| r.retry_after()),
            Some(BEHIND_RETRY)
        );
    }
}
