//! The Compute usage list of a region (`Usage_List`): per usage name, what is held and the
//! limit.

use serde::{Deserialize, Serialize};

use super::{normalize_location, segment};
use crate::client::ArmClient;
use crate::error::Result;
use crate::ids;

/// The api-version [`ArmClient::usages`] sends: ComputeRP's version in the Compute package
/// SDKs are generated from by default (azure-rest-api-specs
/// `specification/compute/resource-manager/Microsoft.Compute/Compute/readme.md`).
pub const USAGES_API_VERSION: &str = "2025-04-01";

/// `name.value` of the regional total vCPUs row ("Total Regional vCPUs"), as ARO-HCP
/// hard-codes it.
pub const REGIONAL_VCPUS: &str = "cores";

/// A usage's name: `value` is the key (`cores`, `standardDSv5Family`), `localizedValue` the
/// words for people ("Standard DSv5 Family vCPUs").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageName {
    /// The key clients match on (case-insensitively: Azure's casing is not uniform).
    pub value: String,
    /// The display name; may be empty.
    #[serde(default)]
    pub localized_value: String,
}

/// One row of the list (the spec's `Usage`: `currentValue` is int32, `limit` int64).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Always `Count` today.
    #[serde(default)]
    pub unit: String,
    /// What is held (deallocated VMs included).
    pub current_value: i64,
    /// The limit; 0 forbids the meter whatever is held.
    pub limit: i64,
    /// What the row meters.
    pub name: UsageName,
}

impl Usage {
    /// `limit - currentValue`: what can still be taken; negative when a limit was lowered
    /// below what is held.
    pub fn remaining(&self) -> i64 {
        self.limit.saturating_sub(self.current_value)
    }

    /// The localized name, or the key when Azure sent none (ARO-HCP's choice for messages).
    pub fn display_name(&self) -> &str {
        if self.name.localized_value.is_empty() {
            &self.name.value
        } else {
            &self.name.localized_value
        }
    }
}

/// The usage list of one region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usages {
    /// The region, normalised (`eastus`).
    pub location: String,
    /// Every usable row, in ARM's order.
    pub rows: Vec<Usage>,
}

impl Usages {
    /// A list of `rows` in `location` (normalised here).
    pub fn new(location: &str, rows: Vec<Usage>) -> Self {
        Self {
            location: normalize_location(location),
            rows,
        }
    }

    /// The row whose `name.value` is `name`, compared ignoring case.
    pub fn get(&self, name: &str) -> Option<&Usage> {
        self.rows
            .iter()
            .find(|u| u.name.value.eq_ignore_ascii_case(name))
    }

    /// The regional total vCPUs row (`cores`).
    pub fn regional(&self) -> Option<&Usage> {
        self.get(REGIONAL_VCPUS)
    }

    /// The rows of a list page's `value`. An entry without a name, a current value or a limit
    /// is skipped (and logged), as ARO-HCP skips it: one odd row must not hide the others.
    pub fn from_values(location: &str, values: &[serde_json::Value]) -> Self {
        let rows = values
            .iter()
            .filter_map(|v| match serde_json::from_value::<Usage>(v.clone()) {
                Ok(u) if !u.name.value.is_empty() => Some(u),
                Ok(_) => {
                    tracing::debug!(usage = %v, "compute usage without a name skipped");
                    None
                }
                Err(e) => {
                    tracing::debug!(usage = %v, error = %e, "unexpected compute usage skipped");
                    None
                }
            })
            .collect();
        Self::new(location, rows)
    }
}

impl ArmClient {
    /// The Compute usage list of `location` in `subscription` (`GET
    /// /subscriptions/{s}/providers/Microsoft.Compute/locations/{l}/usages`, every page).
    /// `location` may be a display name; it is sent normalised.
    ///
    /// The caller needs `Microsoft.Compute/locations/usages/read` over the subscription
    /// (Reader there grants it; a grant on a resource group does not).
    pub async fn usages(&self, subscription: &str, location: &str) -> Result<Usages> {
        let sub = segment("subscription", subscription)?;
        let location = normalize_location(location);
        let loc = segment("location", &location)?;
        let path = format!(
            "{}/providers/Microsoft.Compute/locations/{loc}/usages",
            ids::subscription_id(sub)
        );
        let values = self.list(&path, USAGES_API_VERSION).await?;
        Ok(Usages::from_values(&location, &values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_are_read_in_the_specs_shape_and_odd_ones_skipped() {
        let usages = Usages::from_values(
            "East US",
            &[
                json!({"unit": "Count", "currentValue": 4, "limit": 260,
                       "name": {"value": "cores", "localizedValue": "Total Regional vCPUs"}}),
                json!({"unit": "Count", "currentValue": 8, "limit": 100,
                       "name": {"value": "StandardDSv5Family", "localizedValue": ""}}),
                json!({"unit": "Count", "limit": 10, "name": {"value": "noCurrent"}}),
                json!({"unit": "Count", "currentValue": 1, "limit": 10, "name": {}}),
                json!("not a row"),
            ],
        );
        assert_eq!(usages.location, "eastus");
        assert_eq!(usages.rows.len(), 2);
        let cores = usages.regional().expect("cores");
        assert_eq!(
            (cores.current_value, cores.limit, cores.remaining()),
            (4, 260, 256)
        );
        assert_eq!(cores.display_name(), "Total Regional vCPUs");
        let dsv5 = usages.get("standardDSv5Family").expect("any case");
        assert_eq!(dsv5.display_name(), "StandardDSv5Family");
        assert!(usages.get("noCurrent").is_none());
    }

    #[test]
    fn a_lowered_limit_leaves_a_negative_remainder() {
        let u = Usage {
            unit: "Count".into(),
            current_value: 12,
            limit: 8,
            name: UsageName::default(),
        };
        assert_eq!(u.remaining(), -4);
    }
}
