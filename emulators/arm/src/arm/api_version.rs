//! The api-version check, refused the way ARM refuses it.
//!
//! Which answer a client gets depends on who owns the type: ARM's own endpoints (resource
//! groups, the inventory) say `400 InvalidApiVersionParameter`; a resource provider's regional
//! or global type says `400 NoRegisteredProviderFound` naming the location the request went to;
//! a type registered without locations (Microsoft.Authorization), or no type at all, says
//! `404 InvalidResourceType`.

use serde_json::Value;

use crate::Emulator;
use crate::errors::{ArmError, Result};
use crate::path::{Target, VersionRule};
use crate::types::{REGIONS, Registration, regions};

/// Checks `given` against what the target accepts.
pub(super) fn check(emu: &Emulator, target: &Target, given: &str, body: &[u8]) -> Result<()> {
    let accepts = |versions: &[&str]| versions.iter().any(|v| v.eq_ignore_ascii_case(given));
    match target.version_rule() {
        VersionRule::Any => Ok(()),
        VersionRule::Arm(versions) if accepts(versions) => Ok(()),
        VersionRule::Arm(versions) => {
            let newest_first: Vec<&str> = versions.iter().rev().copied().collect();
            Err(ArmError::invalid_api_version(given, &newest_first))
        }
        VersionRule::Provider { versions, .. } if accepts(versions) => Ok(()),
        VersionRule::Provider {
            versions,
            namespace,
            type_path,
            registration,
        } => Err(match registration {
            Registration::Locationless => {
                ArmError::invalid_resource_type(type_path, namespace, given, versions)
            }
            Registration::Global => {
                ArmError::no_registered_provider("global", given, type_path, versions, &["global"])
            }
            Registration::Regions => {
                let location = location(emu, target, body);
                ArmError::no_registered_provider(
                    &location,
                    given,
                    type_path,
                    versions,
                    &registered_locations(emu),
                )
            }
        }),
        VersionRule::Unknown {
            namespace,
            type_path,
        } => Err(ArmError::invalid_resource_type(
            type_path,
            namespace,
            given,
            &[],
        )),
    }
}

/// Where a regional type is registered, in the order ARM lists them: every public region, and
/// the one this ARM instance plays if it is not one of them.
pub(super) fn registered_locations(emu: &Emulator) -> Vec<&str> {
    let mut locations: Vec<&str> = REGIONS.to_vec();
    let home = emu.config().region.as_str();
    if !locations.iter().any(|l| l.eq_ignore_ascii_case(home)) {
        locations.push(home);
    }
    locations
}

/// The location ARM routes a regional request to: the one its path names (`locations/{l}/…`),
/// else the one a PUT body names, else the resource's (or its group's) as stored, else the
/// region this ARM instance plays.
fn location(emu: &Emulator, target: &Target, body: &[u8]) -> String {
    if let Target::ComputeUsages { location, .. } = target {
        return regions::normalize(location);
    }
    let from_body = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("location").and_then(Value::as_str).map(str::to_owned));
    let stored = || {
        let Target::Resource(r) = target else {
            return None;
        };
        let st = emu.lock();
        [r.key(), r.rg_key()]
            .iter()
            .find_map(|k| st.store.get(k).and_then(|res| res.location.clone()))
    };
    from_body
        .or_else(stored)
        .unwrap_or_else(|| emu.config().region.clone())
        .to_ascii_lowercase()
        .replace(' ', "")
}
