//! Which vCPU limit applies to a subscription's region and meter: the one the admin API set,
//! else the configured default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::QuotaConfig;
use crate::types::{regions, vm_sizes};

/// `name.value` of the regional total (ARO-HCP hard-codes it: Azure/ARO-HCP
/// `backend/pkg/utils/validationutils/resource_sku_capabilities.go`).
pub const REGIONAL: &str = "cores";

/// What one quota row meters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Meter {
    /// Every VM's vCPUs in the region (`cores`).
    Regional,
    /// The vCPUs of one family's VMs, named as the Resource SKUs list names the family.
    Family(&'static str),
}

impl Meter {
    /// The meter a usage name stands for, in any case (Azure's own casing is not uniform, and
    /// clients such as ARO-HCP compare ignoring it); `None` for what nothing here meters.
    pub fn parse(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case(REGIONAL) {
            return Some(Meter::Regional);
        }
        vm_sizes::families()
            .into_iter()
            .find(|f| f.eq_ignore_ascii_case(name))
            .map(Meter::Family)
    }

    /// `name.value` in the usage list.
    pub fn name(&self) -> &'static str {
        match self {
            Meter::Regional => REGIONAL,
            Meter::Family(f) => f,
        }
    }

    /// `name.localizedValue`: "Total Regional vCPUs", "Standard DSv5 Family vCPUs" (the
    /// portal's and `az vm list-usage`'s words; a family's is its name spelt out).
    pub fn localized(&self) -> String {
        match self {
            Meter::Regional => "Total Regional vCPUs".to_owned(),
            Meter::Family(f) => {
                let series = f
                    .strip_prefix("standard")
                    .and_then(|s| s.strip_suffix("Family"))
                    .unwrap_or(f);
                format!("Standard {series} Family vCPUs")
            }
        }
    }
}

/// One limit, as the admin API takes and lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaLimit {
    pub subscription: String,
    /// A region by name or display name; listed normalised (`eastus`).
    pub location: String,
    /// The usage's `name.value`: [`REGIONAL`] or a VM family, in any case; listed as the
    /// usage list spells it.
    pub name: String,
    pub limit: u64,
}

/// Why a limit was not set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("no subscription given")]
    NoSubscription,
    #[error("'{0}' is not an Azure region")]
    UnknownLocation(String),
    #[error("'{name}' is neither '{REGIONAL}' nor a VM family of the size table ({families})")]
    UnknownName { name: String, families: String },
}

/// The default limits and those set per subscription, region and meter.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    defaults: QuotaConfig,
    /// (lower-cased subscription, normalised region, meter) → the limit as listed.
    set: BTreeMap<(String, String, Meter), QuotaLimit>,
}

impl Limits {
    pub fn new(defaults: QuotaConfig) -> Self {
        Self {
            defaults,
            set: BTreeMap::new(),
        }
    }

    /// Sets one limit (replacing any earlier one for the same row); answers it as listed.
    pub fn set(&mut self, limit: QuotaLimit) -> Result<QuotaLimit, LimitError> {
        if limit.subscription.trim().is_empty() {
            return Err(LimitError::NoSubscription);
        }
        if !regions::is_region(&limit.location) {
            return Err(LimitError::UnknownLocation(limit.location));
        }
        let meter = Meter::parse(&limit.name).ok_or_else(|| LimitError::UnknownName {
            name: limit.name.clone(),
            families: vm_sizes::families().join(", "),
        })?;
        let stored = QuotaLimit {
            location: regions::normalize(&limit.location),
            name: meter.name().to_owned(),
            ..limit
        };
        let key = (
            stored.subscription.to_ascii_lowercase(),
            stored.location.clone(),
            meter,
        );
        self.set.insert(key, stored.clone());
        Ok(stored)
    }

    /// The limit of `meter` in `location` (normalised) of `subscription`.
    pub fn limit(&self, subscription: &str, location: &str, meter: Meter) -> u64 {
        let key = (
            subscription.to_ascii_lowercase(),
            location.to_owned(),
            meter,
        );
        match self.set.get(&key) {
            Some(l) => l.limit,
            None => match meter {
                Meter::Regional => self.defaults.regional_vcpus,
                Meter::Family(_) => self.defaults.family_vcpus,
            },
        }
    }

    /// Every limit set, optionally of one subscription, by subscription, region and meter.
    pub fn list(&self, subscription: Option<&str>) -> Vec<QuotaLimit> {
        self.set
            .values()
            .filter(|l| subscription.is_none_or(|s| l.subscription.eq_ignore_ascii_case(s)))
            .cloned()
            .collect()
    }

    /// Forgets every limit set; the defaults stay.
    pub fn clear(&mut self) {
        self.set.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(location: &str, name: &str, limit: u64) -> QuotaLimit {
        QuotaLimit {
            subscription: "SUB".into(),
            location: location.into(),
            name: name.into(),
            limit,
        }
    }

    #[test]
    fn a_set_limit_overrides_the_default_of_its_row_only() {
        let mut limits = Limits::new(QuotaConfig {
            regional_vcpus: 100,
            family_vcpus: 50,
        });
        let dsv5 = Meter::Family("standardDSv5Family");
        let stored = limits
            .set(limit("East US", "STANDARDDSV5FAMILY", 10))
            .expect("set");
        assert_eq!(stored.location, "eastus");
        assert_eq!(stored.name, "standardDSv5Family");
        assert_eq!(limits.limit("sub", "eastus", dsv5), 10);
        assert_eq!(limits.limit("sub", "westus", dsv5), 50);
        assert_eq!(limits.limit("other", "eastus", dsv5), 50);
        assert_eq!(limits.limit("sub", "eastus", Meter::Regional), 100);
        limits.set(limit("eastus", "cores", 0)).expect("set");
        assert_eq!(limits.limit("sub", "eastus", Meter::Regional), 0);
        assert_eq!(limits.list(Some("sub")).len(), 2);
        assert!(limits.list(Some("other")).is_empty());
        limits.clear();
        assert_eq!(limits.limit("sub", "eastus", dsv5), 50);
    }

    #[test]
    fn only_regions_and_metered_names_are_taken() {
        let mut limits = Limits::default();
        assert_eq!(
            limits.set(limit("marsnorth", "cores", 1)),
            Err(LimitError::UnknownLocation("marsnorth".into()))
        );
        assert!(matches!(
            limits.set(limit("eastus", "lowPriorityCores", 1)),
            Err(LimitError::UnknownName { .. })
        ));
        let mut no_sub = limit("eastus", "cores", 1);
        no_sub.subscription = " ".into();
        assert_eq!(limits.set(no_sub), Err(LimitError::NoSubscription));
    }

    #[test]
    fn localized_names_are_spelt_out() {
        assert_eq!(Meter::Regional.localized(), "Total Regional vCPUs");
        assert_eq!(
            Meter::Family("standardDSv5Family").localized(),
            "Standard DSv5 Family vCPUs"
        );
        assert_eq!(
            Meter::Family("standardFSv2Family").localized(),
            "Standard FSv2 Family vCPUs"
        );
    }
}
