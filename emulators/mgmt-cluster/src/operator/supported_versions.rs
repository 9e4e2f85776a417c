//! The `supported-versions` ConfigMap HyperShift's operator keeps in its own namespace, for
//! clients to learn which releases it can install before they ask
//! (`hypershift-operator/controllers/supportedversion/reconciler.go`,
//! `ensureSupportedVersionConfigMap`; the manifest in
//! `hypershift-operator/controllers/manifests/supportedversion/configmap.go`): label
//! `hypershift.openshift.io/supported-versions: "true"`, key `supported-versions` holding
//! `{"versions":["4.22","4.21",…]}` from the latest supported minor down to the minimum, and
//! key `server-version`. Put back as it should be on every pass, as the reconciler does.

use serde_json::{Value, json};

use super::release::{LATEST_SUPPORTED, MIN_SUPPORTED};
use crate::Shared;
use crate::kinds::{CONFIG_MAPS, NAMESPACES};
use crate::registry::{self, Scope};

/// The operator's namespace.
pub(crate) const NAMESPACE: &str = "hypershift";
/// The ConfigMap's name.
pub(crate) const NAME: &str = "supported-versions";
const LABEL: &str = "hypershift.openshift.io/supported-versions";
const MANAGER: &str = "hypershift-operator";
/// What the emulator's operator says it is (HyperShift writes its git revision).
const SERVER_VERSION: &str = "hypersaga-emulator";

/// The minors the operator supports, newest first (`supportedVersions`).
pub(crate) fn supported_minors() -> Vec<String> {
    (MIN_SUPPORTED.minor..=LATEST_SUPPORTED.minor)
        .rev()
        .map(|minor| format!("{}.{minor}", LATEST_SUPPORTED.major))
        .collect()
}

fn data() -> Value {
    json!({
        "supported-versions": json!({ "versions": supported_minors() }).to_string(),
        "server-version": SERVER_VERSION,
    })
}

/// Makes the namespace and the ConfigMap if missing, and puts the data back if changed.
pub(super) fn ensure(shared: &Shared) {
    let store = &shared.store;
    if store.get(NAMESPACES, "", NAMESPACE).is_err() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
        if let Err(e) = registry::prepare_create(NAMESPACES, "", ns, MANAGER)
            .and_then(|ns| store.create(NAMESPACES, "", ns, false))
        {
            tracing::debug!(error = %e, "the operator's namespace is not there yet");
            return;
        }
    }
    let want = data();
    let written = match store.get(CONFIG_MAPS, NAMESPACE, NAME) {
        Ok(current) if current["data"] == want => return,
        Ok(_) => store
            .update(CONFIG_MAPS, NAMESPACE, NAME, false, |cur| {
                let mut next = cur.clone();
                next["data"] = want.clone();
                registry::prepare_update(CONFIG_MAPS, cur, next, Scope::Main, MANAGER)
            })
            .map(|_| ()),
        Err(_) => {
            let cm = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {LABEL: "true"}},
                "data": want,
            });
            registry::prepare_create(CONFIG_MAPS, NAMESPACE, cm, MANAGER)
                .and_then(|cm| store.create(CONFIG_MAPS, NAMESPACE, cm, false))
                .map(|_| ())
        }
    };
    if let Err(e) = written {
        tracing::warn!(error = %e, "could not write the supported-versions ConfigMap");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minors_run_from_the_latest_down_to_the_minimum() {
        let minors = supported_minors();
        assert_eq!(minors.first().map(String::as_str), Some("4.22"));
        assert_eq!(minors.last().map(String::as_str), Some("4.14"));
        assert_eq!(minors.len(), 9);
    }
}
