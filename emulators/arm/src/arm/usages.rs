//! `GET /subscriptions/{s}/providers/Microsoft.Compute/locations/{location}/usages`
//! (`Usage_List`): the vCPUs a subscription holds in a region against its limits
//! ([`crate::quota`]), in the spec's shape (`ListUsagesResult`: `value[]` of `{unit: "Count",
//! currentValue, limit, name: {value, localizedValue}}`, `nextLink` when paged; the `Usage_List`
//! examples of azure-rest-api-specs ComputeRP/stable/2025-04-01).
//!
//! Rows: `cores` first, then every family of the size table, held or not, as Azure lists every
//! family of the region. A location that is not a region is refused as ARM refuses a regional
//! type where it is not registered (`400 NoRegisteredProviderFound`, Azure/azure-sdk-for-python
//! #21283).

use axum::response::Response;
use serde_json::{Value, json};

use super::Ctx;
use super::api_version::registered_locations;
use super::respond::page;
use crate::errors::{ArmError, Result};
use crate::quota::{self, Meter};
use crate::store::Store;
use crate::types::{USAGE_VERSIONS, regions, vm_sizes};

fn row(meter: Meter, current: u64, limit: u64) -> Value {
    json!({
        "unit": "Count",
        "currentValue": current,
        "limit": limit,
        "name": { "value": meter.name(), "localizedValue": meter.localized() },
    })
}

/// The usage list of `location` (as the path spells it) in `sub`.
pub(super) fn list_usages(
    ctx: &Ctx<'_>,
    store: &Store,
    sub: &str,
    location: &str,
) -> Result<Response> {
    let region = regions::normalize(location);
    if !regions::is_region(&region) {
        return Err(ArmError::no_registered_provider(
            &region,
            &ctx.api_version,
            "locations/usages",
            USAGE_VERSIONS,
            &registered_locations(ctx.emu),
        ));
    }
    let held = quota::held(store, sub, &region);
    let meters =
        std::iter::once(Meter::Regional).chain(vm_sizes::families().into_iter().map(Meter::Family));
    let rows = meters
        .map(|m| row(m, held.of(m), store.quota().limit(sub, &region, m)))
        .collect();
    Ok(page(ctx, rows))
}
