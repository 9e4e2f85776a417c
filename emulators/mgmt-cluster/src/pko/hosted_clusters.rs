//! PKO's HyperShift integration on the management cluster: the `HostedClusterController`
//! (`internal/controllers/hostedclusters/hostedcluster_controller.go`) creates Package
//! `remote-phase` (component `remote-phase`) in the namespace of each HostedCluster whose
//! `Available` is True, owned through the owners annotation; and the Package controller's
//! status for it (`internal/controllers/packages`): unpacked at once, available
//! `deployment_available_after` later (its remote-phase-manager Deployment starting).
//! Other Packages name images the emulator cannot pull: `Unpacked=False`.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{Value, json};

use super::ownership::Ownership;
use super::{FIELD_OWNER, Pass, generation, is_true};
use crate::kinds::{HOSTED_CLUSTERS, PACKAGES};
use crate::meta::{is_deleting, meta_str};
use crate::operator::Deadline;
use crate::operator::conditions::{conditions_mut, put_condition};
use crate::operator::write_status_as;
use crate::registry;
use crate::store::Store;

/// The Package PKO deploys per hosted cluster.
pub(crate) const REMOTE_PHASE: &str = "remote-phase";
/// The image of PKO's own package, as the HostedCluster controller is configured with.
const PACKAGE_IMAGE: &str = "quay.io/package-operator/package-operator-package:v1.18.0";

/// Whether the `remote-phase` Package of `namespace` is available: its manager runs.
pub(crate) fn remote_phase_ready(store: &Store, namespace: &str) -> bool {
    store
        .get(PACKAGES, namespace, REMOTE_PHASE)
        .is_ok_and(|p| is_true(&p, "Available"))
}

/// `HostedClusterController.Reconcile` for every HostedCluster.
pub(super) fn bootstrap(pass: &Pass<'_>) {
    let store = &pass.shared.store;
    let (clusters, _) = store.list(HOSTED_CLUSTERS, None);
    for hc in clusters
        .iter()
        .filter(|hc| !is_deleting(hc) && is_true(hc, "Available"))
    {
        let ns = format!(
            "{}-{}",
            meta_str(hc, "namespace").unwrap_or_default(),
            meta_str(hc, "name").unwrap_or_default()
        )
        .replace('.', "-");
        if store.get(PACKAGES, &ns, REMOTE_PHASE).is_ok() {
            continue;
        }
        let mut pkg = json!({"apiVersion": "package-operator.run/v1alpha1", "kind": "Package",
            "metadata": {"name": REMOTE_PHASE, "namespace": ns},
            "spec": {"image": PACKAGE_IMAGE, "component": REMOTE_PHASE}});
        Ownership::Annotation.set_controller(hc, &mut pkg);
        let created = registry::prepare_create(PACKAGES, &ns, pkg, FIELD_OWNER)
            .and_then(|p| store.create(PACKAGES, &ns, p, false));
        if let Err(e) = created {
            tracing::debug!(namespace = %ns, error = %e, "remote-phase Package not created");
        }
    }
}

/// The Package controller's status.
pub(super) fn packages(
    pass: &Pass<'_>,
    seen: &mut HashMap<String, Instant>,
    deadline: &mut Deadline,
) {
    let store = &pass.shared.store;
    let (packages, _) = store.list(PACKAGES, None);
    let mut live = Vec::new();
    for pkg in packages.iter().filter(|p| !is_deleting(p)) {
        let uid = meta_str(pkg, "uid").unwrap_or_default().to_owned();
        let since = *seen.entry(uid.clone()).or_insert(pass.now);
        live.push(uid);
        let observed = generation(pkg);
        let mut status = pkg.get("status").cloned().unwrap_or_else(|| json!({}));
        let ours = meta_str(pkg, "name") == Some(REMOTE_PHASE)
            && pkg.pointer("/spec/component").and_then(Value::as_str) == Some(REMOTE_PHASE);
        let conds = conditions_mut(&mut status);
        if !ours {
            put_condition(
                conds,
                "Unpacked",
                "False",
                "ImagePullBackOff",
                "image pulls are not simulated by the emulator: only PKO's remote-phase Package unpacks",
                observed,
            );
            write_status_as(store, PACKAGES, pkg, status, FIELD_OWNER);
            continue;
        }
        put_condition(
            conds,
            "Unpacked",
            "True",
            "UnpackSuccess",
            "Unpack job succeeded",
            observed,
        );
        let ready_at = since + pass.shared.config.deployment_available_after;
        if pass.now >= ready_at {
            put_condition(
                conds,
                "Available",
                "True",
                "Available",
                "Latest Revision is Available.",
                observed,
            );
            put_condition(
                conds,
                "Progressing",
                "False",
                "Idle",
                "Update concluded.",
                observed,
            );
            status["revision"] = json!(1);
        } else {
            put_condition(
                conds,
                "Available",
                "False",
                "ObjectSetUnready",
                "No ObjectSet is available.",
                observed,
            );
            put_condition(
                conds,
                "Progressing",
                "True",
                "LatestRevisionPendingSuccess",
                "Latest Revision Status Unknown",
                observed,
            );
            deadline.at(ready_at);
        }
        write_status_as(store, PACKAGES, pkg, status, FIELD_OWNER);
    }
    seen.retain(|k, _| live.contains(k));
}
