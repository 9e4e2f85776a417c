//! `GET /subscriptions/{s}/providers/Microsoft.Compute/skus` (`ResourceSkus_List`): the VM
//! sizes of [`crate::types::vm_sizes`], one entry per size and region, as the compute resource
//! provider lists them (the `ListAvailableResourceSkusForARegion` example of
//! azure-rest-api-specs `Skus/stable/2021-07-01`).
//!
//! Only `$filter=location eq '<region>'` is understood, as in Azure; a region Azure does not
//! have lists nothing. Capabilities are the ones the size table can vouch for (vCPUs, memory,
//! premium storage, accelerated networking, both Hyper-V generations, x64); zones are not
//! modelled, so no size offers any (a client that needs a zone finds none, the strict side),
//! and nothing is restricted.

use axum::response::Response;
use serde_json::{Value, json};

use super::Ctx;
use super::respond::page;
use crate::errors::{ArmError, Result};
use crate::types::regions::{self, REGIONS};
use crate::types::vm_sizes::{VM_SIZES, VmSize};

/// `location eq 'eastus'` → `eastus`: the only filter ARM takes for this list.
fn location_filter(filter: &str) -> Option<String> {
    let (lhs, rhs) = filter.split_once(" eq ")?;
    if !lhs.trim().eq_ignore_ascii_case("location") {
        return None;
    }
    let value = rhs.trim().strip_prefix('\'')?.strip_suffix('\'')?;
    Some(regions::normalize(value))
}

fn capability(name: &str, value: impl ToString) -> Value {
    json!({ "name": name, "value": value.to_string() })
}

fn flag(on: bool) -> &'static str {
    if on { "True" } else { "False" }
}

/// One `ResourceSku` of `size` in `location`.
fn resource_sku(size: &VmSize, location: &str) -> Value {
    json!({
        "resourceType": "virtualMachines",
        "name": size.name,
        "tier": "Standard",
        "size": size.size(),
        "family": size.family,
        "locations": [location],
        "locationInfo": [{ "location": location, "zones": [], "zoneDetails": [] }],
        "capabilities": [
            capability("vCPUs", size.vcpus),
            capability("MemoryGB", size.memory_gib),
            capability("vCPUsAvailable", size.vcpus),
            capability("HyperVGenerations", "V1,V2"),
            capability("PremiumIO", flag(size.premium_io)),
            capability("AcceleratedNetworkingEnabled", flag(true)),
            capability("CpuArchitectureType", "x64"),
        ],
        "restrictions": [],
    })
}

/// The list, paged like every list of the emulator.
pub(super) fn list_skus(ctx: &Ctx<'_>) -> Result<Response> {
    let wanted = match ctx.query.get("$filter") {
        None => None,
        Some(f) => Some(location_filter(f).ok_or_else(|| {
            ArmError::bad_request(
                "InvalidFilterInQueryString",
                format!("Invalid $filter '{f}' specified in the query string."),
            )
        })?),
    };
    let items = REGIONS
        .iter()
        .filter(|r| wanted.as_deref().is_none_or(|w| w == **r))
        .flat_map(|r| VM_SIZES.iter().map(move |s| resource_sku(s, r)))
        .collect();
    Ok(page(ctx, items))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_location_filter_is_read() {
        assert_eq!(
            location_filter("location eq 'East US'").as_deref(),
            Some("eastus")
        );
        assert_eq!(location_filter("name eq 'x'"), None);
        assert_eq!(location_filter("location eq eastus"), None);
    }

    #[test]
    fn a_sku_carries_the_tables_numbers_as_strings() {
        let d4 = crate::types::vm_sizes::find("Standard_D4s_v5").expect("size");
        let sku = resource_sku(d4, "eastus");
        assert_eq!(sku["family"], "standardDSv5Family");
        assert_eq!(sku["size"], "D4s_v5");
        assert_eq!(
            sku["capabilities"][0],
            json!({"name": "vCPUs", "value": "4"})
        );
        assert_eq!(
            sku["capabilities"][1],
            json!({"name": "MemoryGB", "value": "16"})
        );
    }
}
