//! The saga engine's state machine, as pure functions over a [`Saga`] record.
//!
//! A saga is data: a DAG of named steps (each owned by one service, each with a `do` and an
//! `undo`), their states, attempts, fences, leases and outputs, plus an outbox of messages to
//! send. The coordinator loads a saga from KV, applies one input ([`Saga::apply`],
//! [`Saga::tick`], [`Saga::operate`]), and writes it back with compare-and-set; whatever the
//! transition decided to send is in the outbox, written atomically with the state, and
//! published after (see the coordinator).
//!
//! Forward, a step is dispatched once all its dependencies have succeeded, so independent
//! branches run in parallel. Backward (a delete, or compensation after a terminal failure), a
//! step is undone once every step depending on it is undone, skipped or kept: the exact reverse
//! of the dependency order. Steps whose results are persistent by design (workload identities,
//! the tenant's OIDC issuer) and resources the user brought are *kept*, never undone.
//!
//! Nothing waits in a worker: a step that must wait on Azure or HyperShift answers
//! [`hypersaga_bus::Outcome::Waiting`] and the saga sends a re-check later; throttling is
//! waited out without spending an attempt; a step whose retries run out, whose deadline
//! passes or whose service stops answering *pauses* the saga with its reason until an
//! operator resumes, retries, compensates or abandons it.
#![forbid(unsafe_code)]

pub mod kinds;
mod operator;
pub mod plan;
mod retry;
mod saga;
mod steps_view;
mod stored;
mod timers;
mod transitions;

pub use operator::Refusal;
pub use plan::{Retain, StepDef, UndoPolicy, create_plan};
pub use retry::RetryPolicy;
pub use saga::{
    Applied, Effect, Links, NewSaga, Pause, SAGA_VERSION, Saga, StepRecord, StepWait, Timing,
};
pub use steps_view::StepsView;
pub use stored::StoredOperation;

#[cfg(test)]
#[path = "saga_tests.rs"]
mod tests;
