//! OpenShift release versions and the rules between a control plane's and its node pools'.
//!
//! A version comes from the release image's tag (`…/ocp-release:4.21.3-multi` is 4.21.3). A
//! reference by digest alone says nothing of its version, so it must carry its tag too
//! (`…/ocp-release:4.21.3-multi@sha256:…`, a valid OCI reference).
//!
//! The rules, each from the system that enforces it (`docs/operations.md` lists them):
//! - the control plane moves to the next minor at most, and never down (ARO-HCP's
//!   `OpenshiftVersionAtMostOneMinorSkew` and `VersionMayNotDecrease`; HyperShift: "control
//!   plane downgrades are not supported"); across a major only along the paths ARO-HCP allows
//!   (4.22 → 5.0, 4.23 → 5.1);
//! - a node pool is never newer than its control plane, and at most [`MAX_POOL_MINORS_BEHIND`]
//!   minors behind it (HyperShift's `ValidateVersionSkew`); its minor never goes down
//!   (HyperShift's `IsValidReleaseVersion`: "y-stream downgrade");
//! - hence a control-plane upgrade that would leave a pool more than three minors behind is
//!   refused, naming the pool.

use std::cmp::Ordering;
use std::fmt;

/// How many minors a node pool may trail its control plane (HyperShift's `maxAllowedDiff`).
pub const MAX_POOL_MINORS_BEHIND: u64 = 3;

/// Major-version moves a control plane may make: from the last minors of one major to the
/// first of the next (ARO-HCP's `AllowMajorUpgradePaths`). OpenShift 5.0 follows 4.22.
const MAJOR_PATHS: [((u64, u64), (u64, u64)); 2] = [((4, 22), (5, 0)), ((4, 23), (5, 1))];

/// An OpenShift release version: `major.minor.patch`, with an optional pre-release
/// (`4.22.0-ec.2`), which sorts before its release as semantic versioning says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReleaseVersion {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Option<String>,
}

/// Why an image reference gives no version.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "a reference by digest alone does not say its version: write the tag before the digest, e.g. \"quay.io/openshift-release-dev/ocp-release:4.21.0-multi@sha256:…\""
    )]
    DigestWithoutTag,
    #[error("has no tag: the tag gives the release's version, e.g. \":4.21.0-multi\"")]
    NoTag,
    #[error("tag {0:?} does not start with a release version such as 4.21.0")]
    NotAVersion(String),
}

impl ReleaseVersion {
    /// The version a release image's tag states.
    pub fn of_image(image: &str) -> Result<Self, VersionError> {
        let (name, digest) = match image.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (image, None),
        };
        // The tag follows the last ':' after the last '/' (a registry's port comes before).
        let last = name.rsplit('/').next().unwrap_or(name);
        let Some((_, tag)) = last.rsplit_once(':') else {
            return Err(if digest.is_some() {
                VersionError::DigestWithoutTag
            } else {
                VersionError::NoTag
            });
        };
        tag.parse()
    }

    /// `major.minor`, what skew rules compare.
    pub fn minor_line(&self) -> (u64, u64) {
        (self.major, self.minor)
    }

    /// How many minors `self` is behind `other` (0 when not behind), counting a major as
    /// the minors between the paths ARO-HCP allows (5.0 is one minor after 4.22).
    pub fn minors_behind(&self, other: &Self) -> u64 {
        minor_index(other).saturating_sub(minor_index(self))
    }
}

/// A minor's position on one line across majors: 5.0 is 4.23's place, as OpenShift 5.0 is
/// treated as 4.23 by HyperShift's supported-version table.
fn minor_index(v: &ReleaseVersion) -> u64 {
    match v.major {
        0..=4 => v.major * 1000 + v.minor,
        _ => 4 * 1000 + 23 + (v.major - 5) * 1000 + v.minor,
    }
}

impl std::str::FromStr for ReleaseVersion {
    type Err = VersionError;

    /// Reads the version a tag starts with: `4.21.0`, `4.21.0-multi`, `4.22.0-ec.2-x86_64`.
    /// Architecture suffixes (`-multi`, `-x86_64`, `-aarch64`) are not a pre-release.
    fn from_str(tag: &str) -> Result<Self, Self::Err> {
        let bad = || VersionError::NotAVersion(tag.chars().take(64).collect());
        // Only '-' starts a pre-release; '_' and '+' start an architecture or build suffix.
        let (core, rest) = match tag.find(['-', '_', '+']) {
            Some(i) if tag.as_bytes()[i] == b'-' => (&tag[..i], &tag[i + 1..]),
            Some(i) => (&tag[..i], ""),
            None => (tag, ""),
        };
        let mut parts = core.split('.');
        let mut next = || -> Result<u64, VersionError> {
            let p = parts.next().ok_or_else(bad)?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                return Err(bad());
            }
            p.parse().map_err(|_| bad())
        };
        let (major, minor, patch) = (next()?, next()?, next()?);
        if parts.next().is_some() {
            return Err(bad());
        }
        const ARCHES: [&str; 6] = ["multi", "x86_64", "aarch64", "arm64", "ppc64le", "s390x"];
        let pre: Vec<&str> = rest
            .split('-')
            .filter(|p| !p.is_empty() && !ARCHES.contains(p))
            .collect();
        let pre = (!pre.is_empty()).then(|| pre.join("-"));
        Ok(Self {
            major,
            minor,
            patch,
            pre,
        })
    }
}

impl Ord for ReleaseVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(a), Some(b)) => a.cmp(b),
            })
    }
}

impl PartialOrd for ReleaseVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ReleaseVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

/// A move the version rules forbid, said with both versions (as they are written).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkewError {
    #[error(
        "the control plane cannot go down from {from} to {to}: HyperShift does not support control-plane downgrades"
    )]
    ControlPlaneDowngrade { from: String, to: String },
    #[error(
        "the control plane moves one minor at a time: from {from} the next is {}.{}, not {to}",
        next.0, next.1
    )]
    ControlPlaneSkipsMinor {
        from: String,
        to: String,
        next: (u64, u64),
    },
    #[error(
        "node pool {pool} on {pool_version} would be {behind} minors behind the control plane's {control_plane}; at most {MAX_POOL_MINORS_BEHIND} are supported: upgrade the pool first"
    )]
    PoolLeftBehind {
        pool: String,
        pool_version: String,
        control_plane: String,
        behind: u64,
    },
    #[error(
        "node pool version {pool_version} is newer than the control plane's {control_plane}: a pool is never newer than its control plane"
    )]
    PoolNewerThanControlPlane {
        pool_version: String,
        control_plane: String,
    },
    #[error(
        "node pool version {pool_version} is {behind} minors behind the control plane's {control_plane}; at most {MAX_POOL_MINORS_BEHIND} are supported"
    )]
    PoolTooOld {
        pool_version: String,
        control_plane: String,
        behind: u64,
    },
    #[error("a node pool's minor cannot go down: from {from} to {to}")]
    PoolMinorDowngrade { from: String, to: String },
}

/// Whether the control plane may move from `from` to `to` (an equal version is no move).
pub fn check_control_plane_move(
    from: &ReleaseVersion,
    to: &ReleaseVersion,
) -> Result<(), SkewError> {
    if to < from {
        return Err(SkewError::ControlPlaneDowngrade {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    let same_major_next = (from.major, from.minor + 1);
    let allowed = to.minor_line() == from.minor_line()
        || to.minor_line() == same_major_next
        || MAJOR_PATHS.contains(&(from.minor_line(), to.minor_line()));
    if allowed {
        Ok(())
    } else {
        Err(SkewError::ControlPlaneSkipsMinor {
            from: from.to_string(),
            to: to.to_string(),
            next: MAJOR_PATHS
                .iter()
                .find(|(f, _)| *f == from.minor_line())
                .map_or(same_major_next, |(_, t)| *t),
        })
    }
}

/// Whether a pool on `pool` may run under a control plane on `control_plane`.
pub fn check_pool_skew(
    control_plane: &ReleaseVersion,
    pool: &ReleaseVersion,
) -> Result<(), SkewError> {
    if pool > control_plane {
        return Err(SkewError::PoolNewerThanControlPlane {
            pool_version: pool.to_string(),
            control_plane: control_plane.to_string(),
        });
    }
    let behind = pool.minors_behind(control_plane);
    if behind > MAX_POOL_MINORS_BEHIND {
        return Err(SkewError::PoolTooOld {
            pool_version: pool.to_string(),
            control_plane: control_plane.to_string(),
            behind,
        });
    }
    Ok(())
}

/// Whether a pool may move from `from` to `to` under `control_plane`.
pub fn check_pool_move(
    control_plane: &ReleaseVersion,
    from: &ReleaseVersion,
    to: &ReleaseVersion,
) -> Result<(), SkewError> {
    if minor_index(to) < minor_index(from) {
        return Err(SkewError::PoolMinorDowngrade {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    check_pool_skew(control_plane, to)
}

/// Whether the control plane may move to `to` with pools on `pools` (name, version): each
/// pool left more than [`MAX_POOL_MINORS_BEHIND`] minors behind is named.
pub fn check_pools_after_upgrade<'a>(
    to: &ReleaseVersion,
    pools: impl IntoIterator<Item = (&'a str, &'a ReleaseVersion)>,
) -> Vec<SkewError> {
    pools
        .into_iter()
        .filter_map(|(name, v)| {
            let behind = v.minors_behind(to);
            (behind > MAX_POOL_MINORS_BEHIND).then(|| SkewError::PoolLeftBehind {
                pool: name.to_owned(),
                pool_version: v.to_string(),
                control_plane: to.to_string(),
                behind,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> ReleaseVersion {
        s.parse().unwrap()
    }

    #[test]
    fn the_version_is_the_tags() {
        let of = |i: &str| ReleaseVersion::of_image(i);
        assert_eq!(
            of("quay.io/openshift-release-dev/ocp-release:4.21.3-multi"),
            Ok(v("4.21.3"))
        );
        assert_eq!(
            of("registry:5000/ocp/release:4.19.0-x86_64"),
            Ok(v("4.19.0"))
        );
        assert_eq!(
            of("quay.io/ocp-release:4.22.0-ec.2-x86_64").map(|r| r.pre),
            Ok(Some("ec.2".into()))
        );
        assert_eq!(
            of("quay.io/ocp-release:4.21.0-multi@sha256:0123abcd"),
            Ok(v("4.21.0"))
        );
        assert_eq!(
            of("quay.io/ocp-release@sha256:0123abcd"),
            Err(VersionError::DigestWithoutTag)
        );
        assert_eq!(of("registry:5000/ocp-release"), Err(VersionError::NoTag));
        assert!(matches!(
            of("quay.io/x:latest"),
            Err(VersionError::NotAVersion(_))
        ));
        assert!(matches!(
            of("quay.io/x:4.21"),
            Err(VersionError::NotAVersion(_))
        ));
    }

    #[test]
    fn pre_releases_sort_before_their_release() {
        assert!(v("4.22.0-ec.2") < v("4.22.0"));
        assert!(v("4.21.9") < v("4.22.0-ec.2"));
        assert_eq!(v("4.21.0-multi"), v("4.21.0"));
        assert_eq!(v("4.22.0-ec.2").to_string(), "4.22.0-ec.2");
    }

    #[test]
    fn the_control_plane_moves_one_minor_up_at_most() {
        assert_eq!(check_control_plane_move(&v("4.21.0"), &v("4.21.5")), Ok(()));
        assert_eq!(check_control_plane_move(&v("4.21.0"), &v("4.22.1")), Ok(()));
        assert_eq!(check_control_plane_move(&v("4.22.3"), &v("5.0.0")), Ok(()));
        let skip = check_control_plane_move(&v("4.20.0"), &v("4.22.0")).unwrap_err();
        assert_eq!(
            skip.to_string(),
            "the control plane moves one minor at a time: from 4.20.0 the next is 4.21, not 4.22.0"
        );
        let down = check_control_plane_move(&v("4.21.2"), &v("4.21.1")).unwrap_err();
        assert!(matches!(down, SkewError::ControlPlaneDowngrade { .. }));
        assert!(down.to_string().contains("4.21.2") && down.to_string().contains("4.21.1"));
        assert!(check_control_plane_move(&v("4.21.0"), &v("5.0.0")).is_err());
    }

    #[test]
    fn a_pool_is_never_newer_and_at_most_three_minors_behind() {
        assert_eq!(check_pool_skew(&v("4.22.0"), &v("4.19.4")), Ok(()));
        assert!(matches!(
            check_pool_skew(&v("4.22.0"), &v("4.18.0")),
            Err(SkewError::PoolTooOld { behind: 4, .. })
        ));
        assert!(matches!(
            check_pool_skew(&v("4.21.0"), &v("4.22.0")),
            Err(SkewError::PoolNewerThanControlPlane { .. })
        ));
        assert!(matches!(
            check_pool_move(&v("4.22.0"), &v("4.21.0"), &v("4.20.9")),
            Err(SkewError::PoolMinorDowngrade { .. })
        ));
        assert_eq!(
            check_pool_move(&v("4.22.0"), &v("4.20.0"), &v("4.22.0")),
            Ok(())
        );
        // 5.0 counts as 4.23: a 4.20 pool is three minors behind it.
        assert_eq!(v("4.20.0").minors_behind(&v("5.0.0")), 3);
    }

    #[test]
    fn an_upgrade_leaving_a_pool_four_minors_behind_names_it() {
        let (old, ok) = (v("4.18.2"), v("4.20.0"));
        let refused = check_pools_after_upgrade(&v("4.22.0"), [("legacy", &old), ("workers", &ok)]);
        assert_eq!(refused.len(), 1);
        assert_eq!(
            refused[0].to_string(),
            "node pool legacy on 4.18.2 would be 4 minors behind the control plane's 4.22.0; at most 3 are supported: upgrade the pool first"
        );
    }
}
