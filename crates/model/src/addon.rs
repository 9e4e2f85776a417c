//! What a cluster's spec says of its add-ons: which ones it carries, at which version, and
//! whose definition (the tenant's own, or the platform's for every tenant). The definitions
//! themselves (phases of Kubernetes objects) live in the add-on catalog (`hypersaga-addons`);
//! a cluster pins the version it runs, so a retried step applies what was asked for, and a new
//! version reaches a cluster only through an operation that says so.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::validate::{FieldViolation, clip};

/// Longest add-on name: its `ObjectDeployment` and the `ObjectSet`s Package Operator names
/// after it (`<name>-<hash>`) stay within a Kubernetes object name's 63 characters with room.
pub const MAX_ADDON_NAME: usize = 40;
/// Longest add-on version.
pub const MAX_ADDON_VERSION: usize = 63;
/// Most add-ons one cluster carries (each is a step of its create and delete).
pub const MAX_CLUSTER_ADDONS: usize = 20;

/// Whose definition an add-on reference names.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum AddonScope {
    /// The tenant's own add-on.
    #[default]
    Tenant,
    /// The platform's, offered to every tenant (put by an administrator).
    Platform,
}

impl AddonScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tenant => "tenant",
            Self::Platform => "platform",
        }
    }
}

/// One add-on a cluster carries, at the version it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddonRef {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub scope: AddonScope,
}

impl AddonRef {
    pub fn new(name: impl Into<String>, version: impl Into<String>, scope: AddonScope) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            scope,
        }
    }
}

static ADDON_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z]([a-z0-9-]*[a-z0-9])?$").expect("static regex"));
static ADDON_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$").expect("static regex")
});

/// Checks an add-on name at `field`: a DNS label of at most [`MAX_ADDON_NAME`] characters.
pub fn check_addon_name(v: &mut Vec<FieldViolation>, field: &str, name: &str) {
    if name.is_empty() {
        v.push(FieldViolation::new(field, "is required"));
    } else if name.chars().count() > MAX_ADDON_NAME {
        v.push(FieldViolation::new(
            field,
            format!(
                "must be at most {MAX_ADDON_NAME} characters, got {}",
                name.chars().count()
            ),
        ));
    } else if !ADDON_NAME.is_match(name) {
        v.push(FieldViolation::new(
            field,
            format!("{} must be a DNS label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit", clip(name)),
        ));
    }
}

/// Checks an add-on version at `field`: letters, digits, `.`, `_` and `-` (`1.4.0`,
/// `2026-11-29.1`), so it can be a key of the catalog and a Kubernetes label value.
pub fn check_addon_version(v: &mut Vec<FieldViolation>, field: &str, version: &str) {
    if version.is_empty() {
        v.push(FieldViolation::new(field, "is required"));
    } else if version.chars().count() > MAX_ADDON_VERSION {
        v.push(FieldViolation::new(
            field,
            format!(
                "must be at most {MAX_ADDON_VERSION} characters, got {}",
                version.chars().count()
            ),
        ));
    } else if !ADDON_VERSION.is_match(version) {
        v.push(FieldViolation::new(
            field,
            format!("{} must be letters, digits, '.', '_' and '-', starting and ending with a letter or digit (e.g. \"1.4.0\")", clip(version)),
        ));
    }
}

/// Checks the add-ons a cluster is to carry, at `field` (`spec.addons`): valid names and
/// versions, none twice, at most [`MAX_CLUSTER_ADDONS`].
pub fn check_cluster_addons(v: &mut Vec<FieldViolation>, field: &str, addons: &[AddonRef]) {
    if addons.len() > MAX_CLUSTER_ADDONS {
        v.push(FieldViolation::new(
            field,
            format!(
                "a cluster carries at most {MAX_CLUSTER_ADDONS} add-ons, got {}",
                addons.len()
            ),
        ));
    }
    for (i, a) in addons.iter().enumerate() {
        check_addon_name(v, &format!("{field}[{i}].name"), &a.name);
        if !a.version.is_empty() {
            check_addon_version(v, &format!("{field}[{i}].version"), &a.version);
        }
        if addons[..i].iter().any(|b| b.name == a.name) {
            v.push(FieldViolation::new(
                format!("{field}[{i}].name"),
                format!(
                    "{} is named twice; a cluster carries one version of an add-on",
                    clip(&a.name)
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn violations(addons: &[AddonRef]) -> Vec<String> {
        let mut v = Vec::new();
        check_cluster_addons(&mut v, "spec.addons", addons);
        v.into_iter()
            .map(|f| format!("{}: {}", f.field, f.description))
            .collect()
    }

    #[test]
    fn names_versions_and_repeats_are_refused_at_their_paths() {
        let ok = AddonRef::new("logging", "1.4.0", AddonScope::Tenant);
        assert!(violations(std::slice::from_ref(&ok)).is_empty());
        let bad = [
            ok.clone(),
            AddonRef::new("Logging_", "1.0", AddonScope::Tenant),
            AddonRef::new("logging", "1.5.0", AddonScope::Platform),
            AddonRef::new("metrics", "1.0+build", AddonScope::Tenant),
        ];
        let v = violations(&bad);
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(v[0].starts_with("spec.addons[1].name: \"Logging_\" must be a DNS label"));
        assert!(v[1].starts_with("spec.addons[2].name: \"logging\" is named twice"));
        assert!(v[2].starts_with("spec.addons[3].version: \"1.0+build\""));
    }

    #[test]
    fn a_reference_without_a_version_means_the_latest_and_is_valid() {
        assert!(violations(&[AddonRef::new("logging", "", AddonScope::Tenant)]).is_empty());
    }
}
