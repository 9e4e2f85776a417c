//! Each hosted cluster's kube-apiserver, as the simulated HyperShift deploys it: an API of
//! its own (store, token, the kinds a guest cluster has) served under
//! `/hosted/<control-plane namespace>` once the control plane is deployed, and gone with the
//! control plane's namespace. HyperShift writes its admin kubeconfig twice: Secret
//! `service-network-admin-kubeconfig` in the control plane's namespace (what PKO's
//! remote-phase manager mounts; HyperShift's `KASServiceKubeconfigSecret`) and
//! `<name>-admin-kubeconfig` next to the HostedCluster — both pointing at that API. Without
//! the URL the emulator is served at ([`crate::Emulator::set_served_at`]) no kubeconfig is
//! written: one that points nowhere would be worse than none.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Value, json};

use super::MANAGER;
use crate::kinds::{NAMESPACES, SECRETS};
use crate::meta::is_deleting;
use crate::registry::{self, Scope};
use crate::store::Store;
use crate::{Config, Emulator, Shared, lock};

/// The Secret PKO's remote-phase manager reads the hosted cluster's kubeconfig from.
pub(crate) const SERVICE_NETWORK_KUBECONFIG: &str = "service-network-admin-kubeconfig";

/// The API of the hosted cluster whose control plane runs in `cp_namespace`, made on first
/// call.
pub(super) fn ensure(shared: &Shared, cp_namespace: &str) -> Emulator {
    let mut hosted = lock(&shared.hosted);
    hosted
        .entry(cp_namespace.to_owned())
        .or_insert_with(|| {
            let cfg = &shared.config;
            let config = Config {
                token: format!("hosted-{}", uuid::Uuid::new_v4().simple()),
                watch_history: cfg.watch_history,
                bookmark_interval: cfg.bookmark_interval,
                initial_namespaces: cfg.initial_namespaces.clone(),
                deployment_available_after: cfg.deployment_available_after,
                ..Config::default()
            };
            tracing::info!(namespace = %cp_namespace, "hosted cluster API up");
            Emulator::hosted(config, shared.store.changed.clone())
        })
        .clone()
}

/// Drops the APIs of hosted clusters whose control-plane namespace is gone or going.
pub(super) fn prune(shared: &Shared) {
    let mut hosted = lock(&shared.hosted);
    hosted.retain(|ns, _| {
        let keep = shared
            .store
            .get(NAMESPACES, "", ns)
            .is_ok_and(|n| !is_deleting(&n));
        if !keep {
            tracing::info!(namespace = %ns, "hosted cluster API gone");
        }
        keep
    });
}

/// The hosted APIs in force.
pub(super) fn all(shared: &Shared) -> BTreeMap<String, Emulator> {
    lock(&shared.hosted).clone()
}

/// Writes both kubeconfig Secrets for `api`; false when the served URL is unknown (nothing
/// written).
pub(super) fn write_kubeconfigs(
    shared: &Shared,
    api: &Emulator,
    cp_namespace: &str,
    hc_namespace: &str,
    admin_secret: &str,
) -> bool {
    let Some(served) = shared.served_at.get() else {
        tracing::debug!(
            namespace = %cp_namespace,
            "served URL unknown (Emulator::set_served_at not called): no kubeconfig written"
        );
        return false;
    };
    let kubeconfig = crate::kubeconfig::kubeconfig_yaml(
        &format!("{}/hosted/{cp_namespace}", served.url),
        &served.ca_pem,
        &api.config().token,
    );
    ensure_secret(
        &shared.store,
        cp_namespace,
        SERVICE_NETWORK_KUBECONFIG,
        &kubeconfig,
        json!({}),
    );
    ensure_secret(
        &shared.store,
        hc_namespace,
        admin_secret,
        &kubeconfig,
        json!({"hypershift.openshift.io/safe-to-delete-with-cluster": "true"}),
    );
    true
}

/// Creates Secret `ns/name` with key `kubeconfig`, or updates it when its content differs.
fn ensure_secret(store: &Store, ns: &str, name: &str, kubeconfig: &str, labels: Value) {
    let data = base64::engine::general_purpose::STANDARD.encode(kubeconfig);
    let written = match store.get(SECRETS, ns, name) {
        Ok(current) if current.pointer("/data/kubeconfig") == Some(&json!(data)) => return,
        Ok(_) => store
            .update(SECRETS, ns, name, false, |cur| {
                let mut next = cur.clone();
                next["data"]["kubeconfig"] = json!(data);
                registry::prepare_update(SECRETS, cur, next, Scope::Main, MANAGER)
            })
            .map(|_| ()),
        Err(_) => {
            let secret = json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "type": "Opaque",
                "data": {"kubeconfig": data},
            });
            registry::prepare_create(SECRETS, ns, secret, MANAGER)
                .and_then(|s| store.create(SECRETS, ns, s, false))
                .map(|_| ())
        }
    };
    if let Err(e) = written {
        tracing::debug!(namespace = %ns, secret = %name, error = %e, "kubeconfig secret not written");
    }
}
