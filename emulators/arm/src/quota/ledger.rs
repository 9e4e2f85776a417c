//! What a subscription holds in a region, and the refusal of a VM PUT that would take more
//! than its limits allow.

use std::collections::BTreeMap;

use serde_json::Value;

use super::limits::Meter;
use crate::errors::{ArmError, Result};
use crate::store::{Store, StoredResource};
use crate::types::regions;
use crate::types::vm_sizes::{self, VmSize};

/// vCPUs held in one subscription's region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub regional: u64,
    pub families: BTreeMap<&'static str, u64>,
}

impl Held {
    /// What `meter` has counted.
    pub fn of(&self, meter: Meter) -> u64 {
        match meter {
            Meter::Regional => self.regional,
            Meter::Family(f) => self.families.get(f).copied().unwrap_or(0),
        }
    }
}

fn is_vm(r: &StoredResource) -> bool {
    r.rtype.namespace.eq_ignore_ascii_case("Microsoft.Compute")
        && r.rtype.type_path.eq_ignore_ascii_case("virtualMachines")
}

/// A stored VM's region (normalised) and size. A VM without a size the table has holds
/// nothing: the PUT refuses such sizes, so none is stored.
fn claim(r: &StoredResource) -> Option<(String, &'static VmSize)> {
    if !is_vm(r) {
        return None;
    }
    let size = r
        .properties
        .get("hardwareProfile")
        .and_then(|h| h.get("vmSize"))
        .and_then(Value::as_str)
        .and_then(vm_sizes::find)?;
    Some((regions::normalize(r.location.as_deref()?), size))
}

/// The vCPUs the VMs of `subscription` hold in `region` (normalised), in any state.
pub fn held(store: &Store, subscription: &str, region: &str) -> Held {
    let mut held = Held::default();
    for r in store
        .all()
        .filter(|r| r.sub.eq_ignore_ascii_case(subscription))
    {
        let Some((at, size)) = claim(r) else { continue };
        if at != region {
            continue;
        }
        let vcpus = u64::from(size.vcpus);
        held.regional += vcpus;
        *held.families.entry(size.family).or_default() += vcpus;
    }
    held
}

/// Refuses a PUT of the VM stored (or to be stored) at `key` with `size` in `location` (as the
/// body gives it) when it would take its family, then the region, past the limit.
///
/// A VM already there in the same region holds its vCPUs already: a re-PUT of its size asks for
/// nothing, a resize for the difference, or for the whole new size in a family it moves to.
pub fn check_vm_put(
    store: &Store,
    subscription: &str,
    key: &str,
    location: &str,
    size: &VmSize,
) -> Result<()> {
    let region = regions::normalize(location);
    let previous = store
        .get(key)
        .and_then(claim)
        .filter(|(at, _)| *at == region)
        .map(|(_, s)| s);
    let family_extra = match previous {
        Some(p) if p.family == size.family => size.vcpus.saturating_sub(p.vcpus),
        _ => size.vcpus,
    };
    let regional_extra = size.vcpus.saturating_sub(previous.map_or(0, |p| p.vcpus));
    let held = held(store, subscription, &region);
    for (meter, extra) in [
        (Meter::Family(size.family), family_extra),
        (Meter::Regional, regional_extra),
    ] {
        let extra = u64::from(extra);
        if extra == 0 {
            continue;
        }
        let limit = store.quota().limit(subscription, &region, meter);
        let usage = held.of(meter);
        if usage.saturating_add(extra) > limit {
            let family = match meter {
                Meter::Family(f) => Some(f),
                Meter::Regional => None,
            };
            return Err(ArmError::vcpu_quota_exceeded(
                family,
                subscription,
                location,
                limit,
                usage,
                extra,
            ));
        }
    }
    Ok(())
}
