//! Which releases the simulated operator accepts, as HyperShift's `support/supportedversion`
//! decides: `IsValidReleaseVersion` (a HostedCluster's release, and a NodePool's against its
//! HostedCluster) and `ValidateVersionSkew` (a NodePool's version against the control
//! plane's), with their error texts, which become condition messages.
//!
//! HyperShift compares 5.x releases as 4.(23+x) (OCP 5.0 is 4.23). Its latest supported
//! release is 5.1; the emulator's is [`LATEST_SUPPORTED`], lower, so a release the product
//! has not been tested with is refused (stricter, never kinder).

use std::fmt;

use hypersaga_hypershift::release_version;

/// The lowest release HyperShift supports on Azure (`MinSupportedVersion`).
pub(super) const MIN_SUPPORTED: Version = Version::new(4, 14, 0);
/// The latest release the emulator's operator supports (HyperShift's own is 5.1.0).
pub(super) const LATEST_SUPPORTED: Version = Version::new(4, 22, 0);

/// `releases before 4.8 are not supported` (`minReleaseVersion`).
const MIN_RELEASE: Version = Version::new(4, 8, 0);
/// The last release with OpenShiftSDN (`sdnMaxVersion`).
const SDN_MAX_MINOR: u64 = 10;
/// `v5MinorOffset`: 5.0 is 4.23.
const V5_MINOR_OFFSET: u64 = 23;
/// `ValidateVersionSkew`'s `maxAllowedDiff`: NodePools may be up to 3 minors behind.
const MAX_SKEW: u64 = 3;

/// A release's `major.minor.patch` (blang/semver's core; the emulator reads versions from
/// image tags, which carry no pre-release part).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl Version {
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// blang/semver's `Parse`, for the versions HyperShift reads from release metadata.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split('.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".into());
        }
        let number = |p: &str, what: &str| {
            p.parse::<u64>()
                .map_err(|_| format!("Invalid character(s) found in {what} number {p:?}"))
        };
        Ok(Self::new(
            number(parts[0], "major")?,
            number(parts[1], "minor")?,
            number(parts[2], "patch")?,
        ))
    }

    /// `normalizeToV4`: 5.x as 4.(23+x).
    fn normalized(self) -> Result<Self, String> {
        match self.major {
            4 => Ok(self),
            5 => Ok(Self::new(4, self.minor + V5_MINOR_OFFSET, self.patch)),
            other => Err(format!(
                "unsupported major version {other}; only 4.x and 5.x are supported"
            )),
        }
    }

    /// `trimVersion`: `4.22.0` shown as `4.22`.
    fn trimmed(self) -> String {
        let full = self.to_string();
        full.strip_suffix(".0").map(str::to_owned).unwrap_or(full)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// `denormalizeFromV4`: a normalized minor back to how a release is named.
fn denormalized(minor: u64) -> (u64, u64) {
    if minor >= V5_MINOR_OFFSET {
        (5, minor - V5_MINOR_OFFSET)
    } else {
        (4, minor)
    }
}

/// The version of a release image, or HyperShift's words for an image it cannot look up.
/// The emulator has no registry: it reads the version from the tag, and an image without
/// one is what a lookup of a missing manifest answers.
pub(super) fn image_version(image: &str) -> Result<Version, String> {
    let text = release_version(image).ok_or_else(|| {
        format!(
            "failed to extract release metadata: failed to obtain root manifest for {image}: \
             manifest unknown"
        )
    })?;
    Version::parse(&text)
}

/// What `IsValidReleaseVersion` needs besides the versions.
pub(super) struct Cluster<'a> {
    /// `spec.networking.networkType` (the CRD defaults it to `OVNKubernetes`).
    pub network_type: &'a str,
    /// `spec.platform.type`, as the minimum's message names it.
    pub platform: &'a str,
}

/// `IsValidReleaseVersion(version, current, max, MinSupportedVersion, …)`: `Err` with
/// HyperShift's message when `version` may not be used. `current` is what runs now (a
/// HostedCluster's desired release, a NodePool's `status.version`); `max` is the highest
/// allowed (the operator's latest, or the HostedCluster's version for a NodePool).
pub(super) fn check(
    version: Version,
    current: Option<Version>,
    max: Version,
    cluster: &Cluster<'_>,
) -> Result<(), String> {
    let normalized = version.normalized()?;
    let mut normalized_max = max.normalized()?;
    let normalized_min = MIN_SUPPORTED.normalized()?;
    let normalized_latest = LATEST_SUPPORTED.normalized()?;
    let mut display_max = max;
    if normalized_max > normalized_latest {
        normalized_max = normalized_latest;
        display_max = LATEST_SUPPORTED;
    }
    if normalized < MIN_RELEASE {
        return Err(format!(
            "releases before 4.8 are not supported. Attempting to use: \"{version}\""
        ));
    }
    if let Some(current) = current {
        let normalized_current = current.normalized()?;
        if normalized_current.minor > normalized.minor {
            return Err(format!(
                "y-stream downgrade from \"{current}\" to \"{version}\" is not supported"
            ));
        }
        if cluster.network_type == "OpenShiftSDN" && normalized_current.minor < normalized.minor {
            return Err(format!(
                "y-stream upgrade from \"{current}\" to \"{version}\" is not for OpenShiftSDN"
            ));
        }
    }
    if cluster.network_type == "OpenShiftSDN"
        && current.is_none()
        && normalized.minor > SDN_MAX_MINOR
        && cluster.platform != "PowerVS"
    {
        return Err(format!(
            "cannot use OpenShiftSDN with OCP version \"{version}\" > 4.10"
        ));
    }
    if cluster.network_type == "OVNKubernetes"
        && current.is_none()
        && normalized.minor <= SDN_MAX_MINOR
    {
        return Err(format!(
            "cannot use OVNKubernetes with OCP version \"{version}\" < 4.11"
        ));
    }
    if normalized.minor > normalized_max.minor {
        return Err(format!(
            "the latest version supported is: \"{}\". Attempting to use: \"{version}\"",
            display_max.trimmed()
        ));
    }
    if normalized.minor < normalized_min.minor {
        return Err(format!(
            "the minimum version supported for platform {} is: \"{}\". Attempting to use: \
             \"{version}\"",
            cluster.platform,
            MIN_SUPPORTED.trimmed()
        ));
    }
    Ok(())
}

/// `ValidateVersionSkew(hostedCluster, nodePool)`: a NodePool may not be newer than the
/// control plane, nor more than three minors behind it.
pub(super) fn check_skew(control_plane: Version, node_pool: Version) -> Result<(), String> {
    let hc = control_plane.normalized()?;
    let np = node_pool.normalized()?;
    if np > hc {
        return Err(format!(
            "NodePool version {node_pool} cannot be higher than the HostedCluster version \
             {control_plane}"
        ));
    }
    if hc.minor.saturating_sub(np.minor) > MAX_SKEW {
        let (min_major, min_minor) = denormalized(hc.minor.saturating_sub(MAX_SKEW));
        return Err(format!(
            "NodePool minor version {}.{} is less than {min_major}.{min_minor}, which is the \
             minimum NodePool version compatible with the {}.{} HostedCluster",
            node_pool.major, node_pool.minor, control_plane.major, control_plane.minor
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AZURE_OVN: Cluster<'static> = Cluster {
        network_type: "OVNKubernetes",
        platform: "Azure",
    };

    fn v(text: &str) -> Version {
        Version::parse(text).expect("version")
    }

    #[test]
    fn releases_are_refused_in_hypershifts_words() {
        assert_eq!(
            check(v("4.19.0"), None, LATEST_SUPPORTED, &AZURE_OVN),
            Ok(())
        );
        assert_eq!(
            check(v("4.23.0"), None, LATEST_SUPPORTED, &AZURE_OVN),
            Err("the latest version supported is: \"4.22\". Attempting to use: \"4.23.0\"".into())
        );
        assert_eq!(
            check(v("4.13.2"), None, LATEST_SUPPORTED, &AZURE_OVN),
            Err(
                "the minimum version supported for platform Azure is: \"4.14\". Attempting to \
                 use: \"4.13.2\""
                    .into()
            )
        );
        assert_eq!(
            check(v("4.10.0"), None, LATEST_SUPPORTED, &AZURE_OVN),
            Err("cannot use OVNKubernetes with OCP version \"4.10.0\" < 4.11".into())
        );
        assert_eq!(
            check(v("4.7.0"), None, LATEST_SUPPORTED, &AZURE_OVN),
            Err("releases before 4.8 are not supported. Attempting to use: \"4.7.0\"".into())
        );
        // A lower minor than what runs is a y-stream downgrade; a lower patch is not.
        assert_eq!(
            check(v("4.19.3"), Some(v("4.20.1")), LATEST_SUPPORTED, &AZURE_OVN),
            Err("y-stream downgrade from \"4.20.1\" to \"4.19.3\" is not supported".into())
        );
        assert_eq!(
            check(v("4.20.0"), Some(v("4.20.1")), LATEST_SUPPORTED, &AZURE_OVN),
            Ok(())
        );
        // A NodePool's maximum is its HostedCluster's version, shown trimmed when it is `.0`.
        assert_eq!(
            check(v("4.20.0"), None, v("4.19.0"), &AZURE_OVN),
            Err("the latest version supported is: \"4.19\". Attempting to use: \"4.20.0\"".into())
        );
        assert_eq!(
            check(v("4.20.0"), None, v("4.19.4"), &AZURE_OVN),
            Err(
                "the latest version supported is: \"4.19.4\". Attempting to use: \"4.20.0\"".into()
            )
        );
        assert_eq!(check(v("4.19.9"), None, v("4.19.4"), &AZURE_OVN), Ok(()));
    }

    #[test]
    fn skew_is_n_minus_3_and_never_ahead() {
        assert_eq!(check_skew(v("4.19.0"), v("4.16.5")), Ok(()));
        assert_eq!(
            check_skew(v("4.19.0"), v("4.15.5")),
            Err(
                "NodePool minor version 4.15 is less than 4.16, which is the minimum NodePool \
                 version compatible with the 4.19 HostedCluster"
                    .into()
            )
        );
        assert_eq!(
            check_skew(v("4.19.0"), v("4.19.1")),
            Err(
                "NodePool version 4.19.1 cannot be higher than the HostedCluster version 4.19.0"
                    .into()
            )
        );
        // 5.0 is 4.23: a 4.20 pool is within three minors of it.
        assert_eq!(check_skew(v("5.0.0"), v("4.20.0")), Ok(()));
        assert_eq!(
            check_skew(v("5.1.0"), v("4.20.0")),
            Err(
                "NodePool minor version 4.20 is less than 4.21, which is the minimum NodePool \
                 version compatible with the 5.1 HostedCluster"
                    .into()
            )
        );
    }

    #[test]
    fn versions_parse_as_semver_does() {
        assert_eq!(v("4.19.0"), Version::new(4, 19, 0));
        assert!(Version::parse("4.19").is_err());
        assert_eq!(
            image_version("quay.io/openshift-release-dev/ocp-release:4.20.3-x86_64"),
            Ok(Version::new(4, 20, 3))
        );
        assert!(image_version("quay.io/x@sha256:abc").is_err());
    }
}
