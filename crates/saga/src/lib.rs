//! The saga engine's state machine, as pure functions over a [`Saga`] record.
//!
//! A saga is data: a DAG of named steps (each owned by one service, each with a `do` and an
//! `undo`), their states, attempts and outputs, plus an outbox of messages to send. The
//! coordinator loads a saga from KV, applies one input ([`Saga::apply`], [`Saga::tick`]), and
//! writes it back with compare-and-set; whatever the transition decided to send is in the
//! outbox, written atomically with the state, and published after (see the coordinator).
//!
//! Forward, a step is dispatched once all its dependencies have succeeded, so independent
//! branches run in parallel. Backward (a delete, or compensation after a terminal failure), a
//! step is undone once every step depending on it is undone, skipped or kept: the exact reverse
//! of the dependency order. Steps whose results are persistent by design (workload identities,
//! the tenant's OIDC issuer) and resources the user brought are *kept*, never undone.
#![forbid(unsafe_code)]

pub mod plan;
mod retry;
mod saga;

pub use plan::{StepDef, UndoPolicy, create_plan};
pub use retry::RetryPolicy;
pub use saga::{Applied, Effect, NewSaga, SAGA_VERSION, Saga, StepRecord};
