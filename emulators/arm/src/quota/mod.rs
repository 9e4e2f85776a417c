//! vCPU quota, as the compute resource provider keeps it: per subscription and region, a
//! regional total (`cores`, "Total Regional vCPUs") and one limit per VM family
//! (`standardDSv5Family`, "Standard DSv5 Family vCPUs"); a VM must fit both.
//!
//! - **What counts.** Every VM in the store, by its size's vCPUs, in its subscription and
//!   (normalised) region, whatever its state: creating, failed, being deleted — Azure counts
//!   deallocated VMs too (MicrosoftDocs/azure-compute-docs `virtual-machines/quotas.md`). A VM
//!   stops counting once its delete has completed; a resource-group delete frees its VMs' vCPUs
//!   the same way.
//! - **The refusal.** A VM PUT that would take a family or the region past its limit is refused
//!   synchronously, nothing stored, with `409 OperationNotAllowed` in the compute resource
//!   provider's words ([`crate::ArmError::vcpu_quota_exceeded`]). The family is checked first
//!   (which one Azure reports when both are exceeded was not found: (~)). A re-PUT of the same
//!   size asks for nothing; a resize asks for the difference (the whole new size for a family
//!   it moves to). The check and the write happen under the emulator's one lock, so concurrent
//!   creates cannot both take the last vCPUs.
//! - **The limits.** [`crate::config::QuotaConfig`] for everyone (generous: only a test that
//!   sets a limit meets the refusal), overridden per (subscription, region, `cores` or family)
//!   through the admin API (`PUT /quotas`, [`crate::admin_client::AdminClient::set_quota_limit`]).
//!   A limit below what is held already refuses every further vCPU and leaves what is there.
//! - **The list.** `GET /subscriptions/{s}/providers/Microsoft.Compute/locations/{l}/usages`
//!   (`Usage_List`) shows `cores` and every family of the size table with what is held and the
//!   limit. Azure lists more rows (availability sets, VM and scale-set counts, low-priority
//!   vCPUs); they are left out, as nothing here counts them.

mod ledger;
mod limits;

pub use ledger::{Held, check_vm_put, held};
pub use limits::{LimitError, Limits, Meter, QuotaLimit, REGIONAL};
