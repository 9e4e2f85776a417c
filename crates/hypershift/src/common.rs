//! Small types shared by HostedCluster and NodePool.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.release`: the OpenShift release payload to run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    /// Pull spec of the release image, e.g. `quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64`.
    pub image: String,
}

/// A reference to an object in the same namespace (`corev1.LocalObjectReference`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalObjectReference {
    pub name: String,
}

/// The OpenShift version a release image names, read from its tag
/// (`…/ocp-release:4.19.0-x86_64` → `4.19.0`). HyperShift reports this in
/// `status.version`; the emulator and our services use the same derivation so they agree.
pub fn release_version(image: &str) -> Option<String> {
    let (_, tag) = image.rsplit_once(':')?;
    if tag.contains('/') {
        return None; // a registry port, not a tag
    }
    let version = tag.split(['-', '_']).next()?;
    let ok = !version.is_empty()
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    ok.then(|| version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::release_version;

    #[test]
    fn version_from_tag() {
        assert_eq!(
            release_version("quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64").as_deref(),
            Some("4.19.0")
        );
        assert_eq!(release_version("registry:5000/ocp-release"), None);
        assert_eq!(release_version("quay.io/x@sha256"), None);
    }
}
