//! Types HostedCluster and NodePool share.

use serde_json::json;

use super::Node;
use super::builder::*;
use super::rules::matches;

/// `corev1.LocalObjectReference`: `+structType=atomic`, `name` defaulted to `""`.
pub fn local_object_reference() -> Node {
    object([("name", string().default(json!("")))]).atomic()
}

/// `Release` (`hostedcluster_types.go`): `image` 1–253 chars, required, a word character
/// first and no white space (`^(\w+\S+)$`, RE2's ASCII classes spelt out).
pub fn release() -> Node {
    object([(
        "image",
        string().min_len(1).max_len(253).rule(matches(
            "^[0-9A-Za-z_]+[^\t\n\x0C\r ]+$",
            "Image must start with a word character (letters, digits, or underscores) and \
             contain no white spaces",
        )),
    )])
    .require(&["image"])
}

/// `metav1.Condition` (`k8s.io/apimachinery/pkg/apis/meta/v1/types.go`) as its CRD schema
/// renders it.
pub fn metav1_condition() -> Node {
    object([
        ("lastTransitionTime", string()),
        ("message", string().max_len(32768)),
        ("observedGeneration", integer().minimum(0)),
        (
            "reason",
            string()
                .min_len(1)
                .max_len(1024)
                .pattern("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        ),
        ("status", string().one_of(&["True", "False", "Unknown"])),
        (
            "type",
            string().max_len(316).pattern(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            ),
        ),
    ])
    .require(&["lastTransitionTime", "message", "reason", "status", "type"])
}

/// An Azure managed identity's client ID (`AzureClientID`): a 36-character UUID.
pub fn azure_client_id() -> Node {
    string()
        .min_len(36)
        .max_len(36)
        .pattern("^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
}
