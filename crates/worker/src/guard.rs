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
}

/// The fence of the command one task is running.
pub(crate) struct Guard {
    sagas: Arc<kv::Store>,
    cmd: Arc<StepCommand>,
    refused: Mutex<Option<Fenced>>,
}

impl Guard {
    pub(crate) fn new(sagas: Arc<kv::Store>, cmd: Arc<StepCommand>) -> Arc<Self> {
        Arc::new(Self {
            sagas,
            cmd,
            refused: Mutex::new(None),
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

    async fn check(&self) -> Result<(), Fenced> {
        if let Some(refused) = self.refusal() {
            return Err(refused);
        }
        let verdict = fence::check(&self.sagas, &self.cmd).await;
        // Calls made at once (a `join_all`) check at once: one refused meanwhile refuses all.
        let mut refused = self.lock();
        if let Some(earlier) = refused.as_ref() {
            return Err(earlier.clone());
        }
        let now = match verdict {
            Ok(Verdict::Current) => return Ok(()),
            Ok(Verdict::MovedOn) => Fenced::MovedOn {
                fence: self.cmd.fence,
            },
            Ok(Verdict::Behind) => Fenced::Behind {
                fence: self.cmd.fence,
            },
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
