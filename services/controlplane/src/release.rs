//! Whether the management cluster's HyperShift can install the cluster's release, asked before
//! anything is applied: its operator lists the minors it supports in the `supported-versions`
//! ConfigMap of its own namespace (HyperShift's `supportedversion` reconciler; its docs: "You
//! cannot install HCs higher than what the HO supports"). A HostedCluster of another release
//! would be refused by the operator (`ValidReleaseImage=False`) only once applied.

use hypersaga_bus::plan::Finding;
use hypersaga_bus::{StepCommand, StepError};
use hypersaga_model::ReleaseVersion;
use hypersaga_stepkit::kube::{self as kube_ops, target};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde::Deserialize;

/// HyperShift operator's namespace, where it keeps the ConfigMap.
const NAMESPACE: &str = "hypershift";
const NAME: &str = "supported-versions";
/// The key holding `{"versions":["4.22","4.21",…]}`.
const KEY: &str = "supported-versions";

#[derive(Deserialize)]
struct Supported {
    versions: Vec<String>,
}

/// The minors HyperShift on `client`'s cluster supports, newest first; `None` when it does not
/// say (an operator older than the ConfigMap, or one that has not written it yet).
pub(crate) async fn supported(client: kube::Client) -> Result<Option<Vec<String>>, StepError> {
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let what = target("ConfigMap", Some(NAMESPACE), NAME);
    let Some(cm) = kube_ops::look(&api, NAME, &what).await? else {
        return Ok(None);
    };
    let text = cm.data.as_ref().and_then(|d| d.get(KEY));
    Ok(text
        .and_then(|t| serde_json::from_str::<Supported>(t).ok())
        .map(|s| s.versions))
}

/// A finding on `spec.release_image` when its minor is not among `supported`.
pub(crate) fn check(cmd: &StepCommand, supported: &[String]) -> Option<Finding> {
    let image = &cmd.context.spec.release_image;
    let version = ReleaseVersion::of_image(image).ok()?;
    let (major, minor) = version.minor_line();
    let line = format!("{major}.{minor}");
    if supported.contains(&line) {
        return None;
    }
    Some(Finding {
        field: "spec.release_image".into(),
        kind: "RELEASE".into(),
        message: format!(
            "management cluster {} runs a HyperShift that supports {} and not {line} (its supported-versions ConfigMap)",
            cmd.context.management_cluster,
            range(supported)
        ),
        remedy: "choose a release the management cluster supports".into(),
    })
}

/// `4.14–4.22` from a newest-first list.
fn range(supported: &[String]) -> String {
    match (supported.last(), supported.first()) {
        (Some(low), Some(high)) if low != high => format!("{low}–{high}"),
        (Some(one), _) => one.clone(),
        _ => "no release".into(),
    }
}

#[cfg(test)]
mod tests {
    use hypersaga_bus::{Action, StepId};
    use hypersaga_testkit::{command, spec};

    use super::*;

    #[test]
    fn a_release_outside_the_supported_minors_is_a_finding_on_the_release_image() {
        let supported: Vec<String> = ["4.22", "4.21", "4.14"].map(String::from).to_vec();
        let mut s = spec();
        s.release_image = "quay.io/openshift-release-dev/ocp-release:4.21.3-multi".into();
        let ok = command("demo", s.clone(), StepId::HostedCluster, Action::Do, []);
        assert_eq!(check(&ok, &supported), None);
        s.release_image = "quay.io/openshift-release-dev/ocp-release:4.23.0-multi".into();
        let new = command("demo", s, StepId::HostedCluster, Action::Do, []);
        let f = check(&new, &supported).expect("a finding");
        assert_eq!(
            (f.field.as_str(), f.kind.as_str()),
            ("spec.release_image", "RELEASE")
        );
        assert!(
            f.message.contains("4.14–4.22 and not 4.23"),
            "{}",
            f.message
        );
    }
}
