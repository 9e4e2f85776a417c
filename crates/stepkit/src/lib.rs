//! Shared glue of the step services: the Azure-facing ones (`identity`, `network`, `dns`) and,
//! through [`kube`], the management-cluster ones (`controlplane`, `nodepool`).
//!
//! Each of those services is a [`hypersaga_worker::StepHandler`] that turns a step command
//! into a few ARM calls. What they have in common lives here once, so the three behave the
//! same way and no rule is written three times:
//!
//! * [`ArmClients`] — one [`hypersaga_azure::ArmClient`] per tenant (that tenant's service
//!   principal and subscription), built lazily and cached; an unknown tenant is a terminal
//!   `TenantNotConfigured`;
//! * [`step_error`] — an ARM failure as a saga [`StepError`], keeping Azure's code, message,
//!   target, retryability and `Retry-After`;
//! * [`tags`] — the `hypersaga.io/{tenant,cluster,saga}` tags every created resource carries;
//! * [`ensure`] / [`remove`] — "look, adopt, then create" and "delete, absent is fine", with
//!   one log line per resource adopted, created or deleted;
//! * [`fenced`] — the running command's fence, asked before every call that changes
//!   something (installed in every ARM client; called by the management-cluster writes here
//!   and by the OIDC blob writes);
//! * [`Notes`] — what a handler says while it waits, so handlers can run under the worker
//!   (notes go on the bus) or directly in tests (notes go to the log);
//! * [`sweep`] — what a service made, found again by its tags, and deleted in order;
//! * [`run_service`] — connect the bus and run the worker with the configured options;
//! * [`kube`] — server-side apply, one-shot checks, delete-and-check and `kube` errors as
//!   step errors, for the handlers that act on the management cluster.
//!
//! The services' integration tests start the ARM emulator and Azurite and build step commands
//! by hand with `hypersaga-testkit`, a crate of its own that no product crate depends on.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// `ArmError` is large by design (it keeps ARM's whole answer); see hypersaga-azure.
#![allow(clippy::result_large_err)]

mod clients;
mod ensure;
mod errors;
mod fencing;
mod flow;
pub mod kube;
mod notes;
mod pacing;
pub mod plan;
mod service;
pub mod sweep;
mod tags;

pub use clients::{ArmClients, TenantArm};
pub use ensure::{Ensured, any, ensure, provisioning_state, remove};
pub use errors::{missing_output, step_error, unknown_step};
pub use fencing::fenced;
pub use flow::{ArmStep, Halt, Ops, conclude, drive};
pub use notes::{LogNotes, Notes};
pub use pacing::Budgets;
pub use service::{budgets, connect, run_service, tenants};
pub use tags::{CLUSTER_TAG, SAGA_TAG, TENANT_TAG, tags};

pub use hypersaga_bus::{Action, Outputs, StepCommand, StepError, StepId, StepOutputs};

/// `Microsoft.Resources` api-version HyperShift uses for resource groups, and hypersaga for
/// every ARM-level call (resource groups, the tagged-resource listings).
pub const RESOURCES_API: &str = "2021-04-01";

/// Why a service could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bus could not be reached or set up.
    #[error(transparent)]
    Bus(#[from] hypersaga_bus::Error),
    /// The worker's consumer failed.
    #[error(transparent)]
    Worker(#[from] hypersaga_worker::Error),
    /// A configuration value is unusable (bad URL, …).
    #[error("configuration: {0}")]
    Config(String),
    /// The configured CA bundle could not be read.
    #[error("cannot read CA bundle {path}")]
    CaBundle {
        /// The configured path.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
