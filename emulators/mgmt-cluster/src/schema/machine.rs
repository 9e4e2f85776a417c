//! `Machine` (`cluster.x-k8s.io/v1beta1`), the fields Cluster API's
//! `api/core/v1beta1/machine_types.go` declares and the simulated CAPZ writes; the rest of
//! its status is present as [`any`] subtrees.
//!
//! `status.conditions` is a v1beta1 `Conditions` slice with no list-type marker, hence
//! atomic; each condition requires `type`, `status` and `lastTransitionTime`, and carries a
//! `severity` when it is `False`.

use super::Node;
use super::builder::*;
use super::meta::envelope;

pub fn machine() -> Node {
    envelope([("spec", spec()), ("status", status())])
}

fn object_reference() -> Node {
    object([
        ("apiVersion", string()),
        ("fieldPath", string()),
        ("kind", string()),
        ("name", string()),
        ("namespace", string()),
        ("resourceVersion", string()),
        ("uid", string()),
    ])
    .atomic()
}

fn spec() -> Node {
    object([
        (
            "bootstrap",
            object([
                ("configRef", object_reference()),
                ("dataSecretName", string()),
            ]),
        ),
        ("clusterName", string().min_len(1).max_len(63)),
        ("failureDomain", string()),
        ("infrastructureRef", object_reference()),
        ("nodeDeletionTimeout", string()),
        ("nodeDrainTimeout", string()),
        ("nodeVolumeDetachTimeout", string()),
        ("providerID", string()),
        ("readinessGates", atomic_list(any())),
        ("version", string()),
    ])
    .require(&["bootstrap", "clusterName", "infrastructureRef"])
}

fn condition() -> Node {
    object([
        ("lastTransitionTime", string()),
        ("message", string()),
        ("reason", string()),
        ("severity", string()),
        ("status", string()),
        ("type", string()),
    ])
    .require(&["lastTransitionTime", "status", "type"])
}

fn status() -> Node {
    object([
        ("addresses", atomic_list(any())),
        ("bootstrapReady", boolean()),
        ("certificatesExpiryDate", string()),
        ("conditions", atomic_list(condition())),
        ("deletion", any()),
        ("failureMessage", string()),
        ("failureReason", string()),
        ("infrastructureReady", boolean()),
        ("lastUpdated", string()),
        ("nodeInfo", any()),
        ("nodeRef", object_reference()),
        ("observedGeneration", integer()),
        ("phase", string()),
        ("v1beta2", any()),
    ])
}
