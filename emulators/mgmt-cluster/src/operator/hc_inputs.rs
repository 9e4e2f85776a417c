//! A HostedCluster's input checks, as HyperShift's HostedCluster controller runs them before
//! it deploys anything: the pull secret, the release (`validateReleaseImage`), and the
//! control plane's namespace. A `False` check blocks the reconcile until the input changes.

use serde_json::{Value, json};

use super::MANAGER;
use super::cluster_version::desired_image;
use super::release::{self, Cluster, LATEST_SUPPORTED, image_version};
use crate::kinds::SECRETS;
use crate::registry;
use crate::store::Store;

/// `validateReleaseImage`: the spec's release must be readable and supported, and no
/// y-stream downgrade of what the control plane was last asked to run (`status.version
/// .desired`, when the spec names another release); HyperShift's words, reason
/// `InvalidImage`.
///
/// Stricter than HyperShift: a lower z-stream of the same minor is refused too (HyperShift
/// lets the CVO apply it, though "control plane downgrades are not supported"), in words
/// patterned on HyperShift's y-stream refusal.
pub(super) fn check_release(hc: &Value, status: &Value) -> Result<(), String> {
    let text = |p: &str| hc.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let image = text("/spec/release/image");
    let lookup = |image: &str| {
        image_version(image).map_err(|e| format!("failed to lookup release image: {e}"))
    };
    let version = lookup(image)?;
    let current = match desired_image(status) {
        Some(desired) if desired != image => Some(lookup(desired)?),
        _ => None,
    };
    let cluster = Cluster {
        network_type: match text("/spec/networking/networkType") {
            "" => "OVNKubernetes",
            t => t,
        },
        platform: text("/spec/platform/type"),
    };
    release::check(version, current, LATEST_SUPPORTED, &cluster)?;
    if let Some(current) = current
        && current.minor == version.minor
        && current > version
    {
        return Err(format!(
            "z-stream downgrade from \"{current}\" to \"{version}\" is not supported"
        ));
    }
    Ok(())
}

/// HyperShift reads the pull secret before it looks the release up (`validateReleaseImage`):
/// a missing secret is reason `SecretNotFound`, one without `.dockerconfigjson` `InvalidImage`,
/// each in HyperShift's words. Checked on every pass, so a secret put in place later clears it.
pub(super) fn check_pull_secret(
    store: &Store,
    ns: &str,
    hc: &Value,
) -> Result<(), (&'static str, String)> {
    let name = hc
        .pointer("/spec/pullSecret/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Ok(secret) = store.get(SECRETS, ns, name) else {
        return Err((
            "SecretNotFound",
            format!("failed to get pull secret: secrets \"{name}\" not found"),
        ));
    };
    let has_key = ["data", "stringData"]
        .iter()
        .any(|field| secret[*field].get(".dockerconfigjson").is_some());
    if has_key {
        Ok(())
    } else {
        Err((
            "InvalidImage",
            "expected .dockerconfigjson key in pull secret".to_owned(),
        ))
    }
}

/// The first input condition that is False, as HyperShift's Progressing words it then.
pub(super) fn blocking_condition(conds: &[Value]) -> Option<String> {
    [
        "SupportedHostedCluster",
        "ValidConfiguration",
        "ValidReleaseImage",
        "PlatformCredentialsFound",
    ]
    .iter()
    .find_map(|t| {
        let c = conds
            .iter()
            .find(|c| c["type"] == *t && c["status"] == "False")?;
        Some(format!(
            "{t} condition is false: {}",
            c["message"].as_str().unwrap_or_default()
        ))
    })
}

/// Creates the control plane's namespace unless it exists; refused as kube-apiserver refuses
/// a name over 63 characters.
pub(super) fn ensure_namespace(store: &Store, name: &str) -> Result<(), String> {
    if store.get(crate::kinds::NAMESPACES, "", name).is_ok() {
        return Ok(());
    }
    if name.len() > 63 {
        return Err(format!(
            "failed to ensure control plane namespace: Namespace \"{name}\" is invalid: \
             metadata.name: Invalid value: \"{name}\": must be no more than 63 characters"
        ));
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    registry::prepare_create(crate::kinds::NAMESPACES, "", ns, MANAGER)
        .and_then(|ns| store.create(crate::kinds::NAMESPACES, "", ns, false))
        .map(|_| ())
        .map_err(|e| format!("failed to ensure control plane namespace: {e}"))
}
