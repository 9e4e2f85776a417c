//! vCPU quota before creating VMs: what a subscription has left in a region, what a VM size
//! costs, and whether a change fits.
//!
//! Azure keeps two tiers of vCPU quota per subscription and region — the regional total
//! (`cores`) and one per VM family (`standardDSv5Family`) — and refuses a VM beyond either with
//! a synchronous `409 OperationNotAllowed` on its PUT. By then a node pool's CAPZ machines are
//! half made and HyperShift only reports the failure as a machine condition, so a step that is
//! about to add VMs asks first, as ARO-HCP's node-pool validation does
//! (`backend/pkg/utils/validationutils/azure_nodepool_vm_quota_validation.go`):
//!
//! * [`ArmClient::usages`] reads the Compute usage list of a region ([`Usages`]);
//! * [`ArmClient::vm_size`] reads a size's family and vCPUs from the Resource SKUs list
//!   ([`VmSize`]), refusing a size the subscription may not use there;
//! * [`check_vcpu_quota`] — pure, no I/O — sums what the change adds per family and in all
//!   ([`VmDemand`]: size × count per pool) and answers `Ok` or the shortfalls with the
//!   arithmetic in ARO-HCP's words ([`QuotaError::Insufficient`]).
//!
//! The answer is advice, not a reservation: another writer can take the vCPUs between the check
//! and the PUT, and Azure's own refusal stays the final word.
//!
//! [`ArmClient::usages`]: crate::ArmClient::usages
//! [`ArmClient::vm_size`]: crate::ArmClient::vm_size

mod error;
mod quota;
mod sizes;
mod usages;

pub use error::ComputeError;
pub use quota::{QuotaError, QuotaScope, Shortfall, VmDemand, check_vcpu_quota};
pub use sizes::{RESOURCE_SKUS_API_VERSION, SizeError, VmSize, find_vm_size};
pub use usages::{REGIONAL_VCPUS, USAGES_API_VERSION, Usage, UsageName, Usages};

use crate::error::{ArmError, Result};

/// A location as ARM names it: lower case, no spaces (`East US` → `eastus`).
pub fn normalize_location(location: &str) -> String {
    location
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// `value` when it can stand as one path segment; a subscription or location with a `/`, `?`,
/// `#` or `%` would address another URL, so it is refused before anything is sent.
fn segment<'a>(what: &str, value: &'a str) -> Result<&'a str> {
    if value.is_empty() || value.contains(['/', '?', '#', '%']) {
        return Err(ArmError::Config(format!(
            "{what} must be one non-empty path segment: {value:?}"
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_normalised_and_segments_checked() {
        assert_eq!(normalize_location("East US 2"), "eastus2");
        assert!(segment("location", "eastus").is_ok());
        for bad in ["", "east/us", "eastus?x=1", "a#b", "%2F"] {
            assert!(segment("location", bad).is_err(), "{bad:?}");
        }
    }
}
