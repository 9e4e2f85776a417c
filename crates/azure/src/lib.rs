//! The Azure Resource Manager client every hypersaga service uses.
//!
//! One crate so that the pieces that must behave the same everywhere live once:
//!
//! * **the HTTP stack** — an `azure_core` [`Pipeline`](azure_core::http::Pipeline) over a
//!   `reqwest`/rustls transport that trusts the dev CA, with an `azure_identity` credential
//!   sharing that transport ([`ArmClient::new`]);
//! * **long-running operations** — `Azure-AsyncOperation`, `Location` and
//!   `provisioningState` polling with `Retry-After` honoured ([`ArmClient::put`],
//!   [`ArmClient::delete`]);
//! * **the error classifier** — [`ArmError::kind`] says retry / give up / absent, by type,
//!   and every error keeps ARM's status, code, message, target, `Retry-After` and request id.
//!
//! The pipeline never retries on its own: the saga engine retries whole steps with visible,
//! bounded backoff, using [`ArmError::retry_after`]. The one exception is a transient failure
//! of a single LRO poll, retried a few times inside the poll loop.
//!
//! [`ids`] builds and parses resource ids. [`compute`] reads a region's vCPU quota
//! ([`ArmClient::usages`]) and a VM size's family and vCPUs ([`ArmClient::vm_size`]), and checks
//! whether VMs a change would add fit ([`compute::check_vcpu_quota`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// `ArmError` keeps ARM's whole answer by value so handlers can match on it; an error costs
// nothing next to an ARM round trip, so its size is not worth a Box.
#![allow(clippy::result_large_err)]

mod classify;
mod client;
pub mod compute;
mod config;
mod error;
mod gate;
pub mod ids;
pub mod lro;
mod request;
mod retry_after;
mod transport;

pub use azure_core::credentials::{Secret, TokenCredential};
pub use classify::{ErrorKind, classify, means_absent};
pub use client::ArmClient;
pub use compute::{ComputeError, QuotaError, Usage, Usages, VmDemand, VmSize, check_vcpu_quota};
pub use config::{ArmConfig, AssertionSource, CredentialConfig};
pub use error::{ArmError, ArmErrorBody, Result};
pub use gate::{Feedback, Gate, Hooks, MutationGuard, RequestClass};
pub use ids::{IdError, ResourceId};
pub use lro::{Pending, PollKind, Progress};
