//! A VM size's quota family and vCPUs, from the Resource SKUs list (`ResourceSkus_List`), with
//! the restrictions that keep a subscription from using it in a region.

use serde::{Deserialize, Deserializer};

use super::error::ComputeError;
use super::{normalize_location, segment};
use crate::classify::ErrorKind;
use crate::client::ArmClient;
use crate::ids;

/// The api-version [`ArmClient::vm_size`] sends: still the only current stable Resource SKUs
/// version (every Compute package tag lists `Skus/stable/2021-07-01/skus.json`).
pub const RESOURCE_SKUS_API_VERSION: &str = "2021-07-01";

/// What quota arithmetic needs of a VM size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmSize {
    /// ARM's name, e.g. `Standard_D8s_v5`.
    pub name: String,
    /// The SKU's `family`: the `name.value` of its usage row, e.g. `standardDSv5Family`.
    pub family: String,
    /// The SKU's `vCPUs` capability: what one VM takes from its family and from `cores`.
    pub vcpus: u32,
}

/// Why the Resource SKUs list does not give a usable size.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// No VM SKU of that exact name is offered in the location (ARO-HCP's words).
    #[error(
        "VM size {size:?} not found in Resource SKUs for subscription {subscription:?} in location {location:?}"
    )]
    NotFound {
        /// The size asked for.
        size: String,
        /// The subscription the list was read for.
        subscription: String,
        /// The location, normalised.
        location: String,
    },
    /// The size exists but a restriction keeps this subscription from it in the location: a
    /// `Location` restriction covering it, or `Zone` restrictions taking every zone it has.
    #[error(
        "VM size {size:?} is restricted for subscription {subscription:?} in location {location:?}{}",
        reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
    )]
    Restricted {
        /// The size asked for.
        size: String,
        /// The subscription the list was read for.
        subscription: String,
        /// The location, normalised.
        location: String,
        /// The restriction's `reasonCode` (`NotAvailableForSubscription`, `QuotaId`), if any.
        reason: Option<String>,
    },
    /// The SKU lacks what quota arithmetic needs (a `family`, a positive integer `vCPUs`).
    #[error("resource SKU for VM size {size:?} is unusable: {problem}")]
    InvalidSku {
        /// The size asked for.
        size: String,
        /// What is missing or wrong.
        problem: String,
    },
}

impl SizeError {
    /// A size that is not offered, or not to this subscription, stays so until someone changes
    /// the request or the subscription: terminal. A SKU Azure describes without a family or
    /// vCPUs is an answer this client cannot interpret, retryable like
    /// [`crate::ArmError::InvalidResponse`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound { .. } | Self::Restricted { .. } => ErrorKind::Terminal,
            Self::InvalidSku { .. } => ErrorKind::Retryable,
        }
    }
}

/// `null` read as the default: the list is generated from the live API, where an absent array
/// and `null` both occur.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The parts of a `ResourceSku` read here.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Sku {
    #[serde(deserialize_with = "nullable")]
    resource_type: String,
    #[serde(deserialize_with = "nullable")]
    name: String,
    #[serde(deserialize_with = "nullable")]
    family: String,
    #[serde(deserialize_with = "nullable")]
    locations: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    location_info: Vec<LocationInfo>,
    #[serde(deserialize_with = "nullable")]
    capabilities: Vec<Capability>,
    #[serde(deserialize_with = "nullable")]
    restrictions: Vec<Restriction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LocationInfo {
    #[serde(deserialize_with = "nullable")]
    location: String,
    #[serde(deserialize_with = "nullable")]
    zones: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Capability {
    #[serde(deserialize_with = "nullable")]
    name: String,
    #[serde(deserialize_with = "nullable")]
    value: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Restriction {
    #[serde(rename = "type", deserialize_with = "nullable")]
    kind: String,
    #[serde(deserialize_with = "nullable")]
    values: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    restriction_info: RestrictionInfo,
    reason_code: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RestrictionInfo {
    #[serde(deserialize_with = "nullable")]
    locations: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    zones: Vec<String>,
}

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

impl Sku {
    /// Offered in `location`: in `locationInfo` or, for SKUs that only fill it, `locations`.
    fn offered_in(&self, location: &str) -> bool {
        self.location_info.iter().any(|i| eq(&i.location, location))
            || self.locations.iter().any(|l| eq(l, location))
    }

    fn zones_in(&self, location: &str) -> Vec<&str> {
        let mut zones: Vec<&str> = self
            .location_info
            .iter()
            .filter(|i| eq(&i.location, location))
            .flat_map(|i| i.zones.iter().map(String::as_str))
            .collect();
        zones.sort_unstable();
        zones.dedup();
        zones
    }

    /// The restriction that keeps the size from the subscription in `location`, as ARO-HCP
    /// reads them (`test/util/framework/vm_sku_selection.go`): a `Location` restriction naming
    /// the location, or — how Azure often spells a whole-region ban — `Zone` restrictions that
    /// leave none of the zones the SKU has there. A SKU without zones is not restricted by
    /// `Zone` entries.
    fn restriction_in(&self, location: &str) -> Option<&Restriction> {
        let covering = |r: &&Restriction| {
            r.restriction_info.locations.iter().any(|l| eq(l, location))
                || r.values.iter().any(|v| eq(v, location))
        };
        if let Some(r) = self
            .restrictions
            .iter()
            .filter(|r| eq(&r.kind, "Location"))
            .find(covering)
        {
            return Some(r);
        }
        let zones = self.zones_in(location);
        if zones.is_empty() {
            return None;
        }
        let zonal: Vec<&Restriction> = self
            .restrictions
            .iter()
            .filter(|r| eq(&r.kind, "Zone"))
            .filter(covering)
            .collect();
        let all_taken = zones.iter().all(|z| {
            zonal
                .iter()
                .any(|r| r.restriction_info.zones.iter().any(|rz| rz == z))
        });
        if all_taken {
            zonal.first().copied()
        } else {
            None
        }
    }

    fn vcpus(&self) -> Option<&str> {
        self.capabilities
            .iter()
            .find(|c| eq(&c.name, "vCPUs"))
            .map(|c| c.value.trim())
    }
}

/// Finds `size` among `skus` (the `value` entries of a Resource SKUs list, filtered to
/// `location` or not) for `subscription`: the `virtualMachines` SKU of exactly that name (as
/// ARO-HCP and CAPZ match it) offered in `location`, not restricted there, with its family and
/// vCPUs. Pure: the list is read by [`ArmClient::vm_size`].
pub fn find_vm_size(
    skus: &[serde_json::Value],
    subscription: &str,
    location: &str,
    size: &str,
) -> Result<VmSize, SizeError> {
    let location = normalize_location(location);
    let sku = skus
        .iter()
        .filter_map(|v| Sku::deserialize(v).ok())
        .filter(|s| s.resource_type == "virtualMachines" && s.name == size)
        .find(|s| s.offered_in(&location))
        .ok_or_else(|| SizeError::NotFound {
            size: size.to_owned(),
            subscription: subscription.to_owned(),
            location: location.clone(),
        })?;
    if let Some(r) = sku.restriction_in(&location) {
        return Err(SizeError::Restricted {
            size: size.to_owned(),
            subscription: subscription.to_owned(),
            location,
            reason: r.reason_code.clone(),
        });
    }
    let invalid = |problem: String| SizeError::InvalidSku {
        size: size.to_owned(),
        problem,
    };
    if sku.family.is_empty() {
        return Err(invalid("no family".into()));
    }
    let vcpus = match sku.vcpus() {
        None => return Err(invalid("no vCPUs capability".into())),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => return Err(invalid(format!("vCPUs capability {v:?}"))),
        },
    };
    Ok(VmSize {
        name: sku.name,
        family: sku.family,
        vcpus,
    })
}

impl ArmClient {
    /// `size`'s family and vCPUs in `location` for `subscription`, from the Resource SKUs list
    /// filtered to the location (`GET /subscriptions/{s}/providers/Microsoft.Compute/skus
    /// ?$filter=location eq '{l}'`, every page); see [`find_vm_size`] for what is refused.
    ///
    /// One list per call: a caller sizing several pools reads it per size, or reads the list
    /// itself once and calls [`find_vm_size`] per size.
    pub async fn vm_size(
        &self,
        subscription: &str,
        location: &str,
        size: &str,
    ) -> Result<VmSize, ComputeError> {
        let sub = segment("subscription", subscription)?;
        let location = normalize_location(location);
        let loc = segment("location", &location)?;
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("$filter", &format!("location eq '{loc}'"))
            .finish();
        let path = format!(
            "{}/providers/Microsoft.Compute/skus?{query}",
            ids::subscription_id(sub)
        );
        let skus = self.list(&path, RESOURCE_SKUS_API_VERSION).await?;
        Ok(find_vm_size(&skus, sub, &location, size)?)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn sku(name: &str, restrictions: Value) -> Value {
        json!({
            "resourceType": "virtualMachines", "name": name, "tier": "Standard",
            "size": name.trim_start_matches("Standard_"), "family": "standardDSv5Family",
            "locations": ["eastus"],
            "locationInfo": [{"location": "eastus", "zones": ["1", "2", "3"], "zoneDetails": []}],
            "capabilities": [{"name": "vCPUs", "value": "8"}, {"name": "MemoryGB", "value": "32"}],
            "restrictions": restrictions,
        })
    }

    fn find(skus: &[Value], size: &str) -> Result<VmSize, SizeError> {
        find_vm_size(skus, "sub", "East US", size)
    }

    #[test]
    fn an_offered_size_gives_its_family_and_vcpus() {
        let skus = [
            json!({"resourceType": "disks", "name": "Standard_D8s_v5"}),
            sku("Standard_D4s_v5", json!([])),
            sku("Standard_D8s_v5", json!([])),
        ];
        assert_eq!(
            find(&skus, "Standard_D8s_v5"),
            Ok(VmSize {
                name: "Standard_D8s_v5".into(),
                family: "standardDSv5Family".into(),
                vcpus: 8,
            })
        );
    }

    #[test]
    fn a_size_is_matched_exactly_and_only_where_it_is_offered() {
        let skus = [sku("Standard_D8s_v5", json!([]))];
        let err = find(&skus, "standard_d8s_v5").expect_err("exact name");
        assert_eq!(
            err.to_string(),
            "VM size \"standard_d8s_v5\" not found in Resource SKUs for subscription \"sub\" in \
             location \"eastus\""
        );
        assert_eq!(err.kind(), ErrorKind::Terminal);
        let west = find_vm_size(&skus, "sub", "westus", "Standard_D8s_v5");
        assert!(matches!(west, Err(SizeError::NotFound { .. })), "{west:?}");
    }

    #[test]
    fn a_location_restriction_keeps_the_size_from_the_subscription() {
        let restricted = sku(
            "Standard_D8s_v5",
            json!([{"type": "Location", "values": ["eastus"],
                    "restrictionInfo": {"locations": ["eastus"], "zones": null},
                    "reasonCode": "NotAvailableForSubscription"}]),
        );
        let err = find(&[restricted], "Standard_D8s_v5").expect_err("restricted");
        assert_eq!(
            err.to_string(),
            "VM size \"Standard_D8s_v5\" is restricted for subscription \"sub\" in location \
             \"eastus\" (NotAvailableForSubscription)"
        );
        assert_eq!(err.kind(), ErrorKind::Terminal);
        // A restriction elsewhere does not count here.
        let elsewhere = sku(
            "Standard_D8s_v5",
            json!([{"type": "Location", "values": ["westus"],
                    "restrictionInfo": {"locations": ["westus"]}, "reasonCode": "QuotaId"}]),
        );
        assert!(find(&[elsewhere], "Standard_D8s_v5").is_ok());
    }

    #[test]
    fn zone_restrictions_restrict_only_when_they_take_every_zone() {
        let some = sku(
            "Standard_D8s_v5",
            json!([{"type": "Zone", "values": ["eastus"],
                    "restrictionInfo": {"locations": ["eastus"], "zones": ["3"]},
                    "reasonCode": "NotAvailableForSubscription"}]),
        );
        assert!(find(&[some], "Standard_D8s_v5").is_ok());
        let all = sku(
            "Standard_D8s_v5",
            json!([{"type": "Zone", "values": ["eastus"],
                    "restrictionInfo": {"locations": ["eastus"], "zones": ["1", "2", "3"]},
                    "reasonCode": "NotAvailableForSubscription"}]),
        );
        assert!(matches!(
            find(&[all], "Standard_D8s_v5"),
            Err(SizeError::Restricted { reason: Some(ref r), .. }) if r == "NotAvailableForSubscription"
        ));
        // Without zones, a zone restriction takes nothing.
        let mut zoneless = sku(
            "Standard_D8s_v5",
            json!([{"type": "Zone", "values": ["eastus"],
                    "restrictionInfo": {"locations": ["eastus"], "zones": ["1"]}}]),
        );
        zoneless["locationInfo"][0]["zones"] = json!([]);
        assert!(find(&[zoneless], "Standard_D8s_v5").is_ok());
    }

    #[test]
    fn a_sku_without_family_or_vcpus_is_unusable() {
        let mut no_family = sku("Standard_D8s_v5", json!([]));
        no_family["family"] = Value::Null;
        let err = find(&[no_family], "Standard_D8s_v5").expect_err("no family");
        assert!(matches!(err, SizeError::InvalidSku { .. }), "{err}");
        assert_eq!(err.kind(), ErrorKind::Retryable);
        for value in [
            json!([]),
            json!([{"name": "vCPUs", "value": "eight"}]),
            json!([{"name": "vcpus", "value": "0"}]),
        ] {
            let mut s = sku("Standard_D8s_v5", json!([]));
            s["capabilities"] = value.clone();
            assert!(
                matches!(
                    find(&[s], "Standard_D8s_v5"),
                    Err(SizeError::InvalidSku { .. })
                ),
                "{value}"
            );
        }
    }
}
