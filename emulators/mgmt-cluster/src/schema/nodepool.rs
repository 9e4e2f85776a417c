//! `NodePool` (`hypershift.openshift.io/v1beta1`), transcribed from HyperShift's
//! `api/hypershift/v1beta1/nodepool_types.go` and `azure.go` and their generated CRD
//! (`zz_generated.featuregated-crd-manifests/nodepools.hypershift.openshift.io/AAA_ungated.yaml`).
//!
//! Note `status.conditions` has no list-type marker (`[]NodePoolCondition`, `+optional`), so
//! unlike HostedCluster's it is atomic: whoever writes it owns the whole list.

use serde_json::{Value, json};

use super::Node;
use super::builder::*;
use super::meta::envelope;
use super::rules::{forbidden_unless, holds, immutable, not_both, required_iff};
use super::shared::release;

pub fn node_pool() -> Node {
    envelope([("spec", spec()), ("status", status())])
}

fn spec() -> Node {
    object([
        (
            "arch",
            string()
                .one_of(&["arm64", "amd64", "ppc64le", "s390x"])
                .default(json!("amd64"))
                .rule(immutable("Arch is immutable")),
        ),
        (
            "autoScaling",
            object([("max", integer().minimum(1)), ("min", integer().minimum(0))])
                .require(&["max", "min"])
                .rule(holds("max must be equal or greater than min", |v| {
                    match (
                        v.get("max").and_then(Value::as_i64),
                        v.get("min").and_then(Value::as_i64),
                    ) {
                        (Some(max), Some(min)) => max >= min,
                        _ => true,
                    }
                })),
        ),
        (
            "clusterName",
            string()
                .min_len(1)
                .max_len(253)
                .rule(immutable("ClusterName is immutable")),
        ),
        ("config", atomic_list(any()).max_items(10)),
        ("management", management()),
        ("nodeDrainTimeout", string()),
        ("nodeLabels", map_of(string())),
        ("nodeVolumeDetachTimeout", string()),
        ("pausedUntil", string().min_len(1).max_len(35)),
        ("platform", platform()),
        ("release", release()),
        ("replicas", integer()),
        ("taints", atomic_list(any()).max_items(50)),
        ("tuningConfig", atomic_list(any()).max_items(10)),
    ])
    .require(&["clusterName", "management", "platform", "release"])
    .rule(not_both(
        "replicas",
        "autoScaling",
        "Both replicas or autoScaling should not be set",
    ))
}

fn management() -> Node {
    object([
        ("autoRepair", boolean().default(json!(false))),
        ("inPlace", any()),
        (
            "replace",
            object([
                (
                    "rollingUpdate",
                    object([
                        ("maxSurge", int_or_string()),
                        ("maxUnavailable", int_or_string()),
                    ]),
                ),
                ("strategy", string().one_of(&["RollingUpdate", "OnDelete"])),
            ])
            .default(json!({
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
                "strategy": "RollingUpdate"
            })),
        ),
        (
            "upgradeType",
            string()
                .one_of(&["Replace", "InPlace"])
                .rule(immutable("UpgradeType is immutable")),
        ),
    ])
    .require(&["upgradeType"])
}

fn platform() -> Node {
    object([
        ("agent", any()),
        ("aws", any()),
        ("azure", azure()),
        ("ibmcloud", any()),
        ("kubevirt", any()),
        ("powervs", any()),
        (
            "type",
            string()
                .max_len(100)
                .one_of(&[
                    "AWS", "Azure", "IBMCloud", "KubeVirt", "Agent", "PowerVS", "None",
                ])
                .rule(immutable("Type is immutable")),
        ),
    ])
    .require(&["type"])
}

/// `AzureNodePoolPlatform` (`azure.go`, reference §5.2).
fn azure() -> Node {
    let image = object([
        (
            "azureMarketplace",
            object([
                (
                    "imageGeneration",
                    string().one_of(&["Gen1", "Gen2"]).default(json!("Gen2")),
                ),
                ("offer", string().min_len(1).max_len(255)),
                (
                    "publisher",
                    string()
                        .min_len(3)
                        .max_len(50)
                        .pattern("^[a-z0-9][a-z0-9-_]{2,49}$"),
                ),
                (
                    "sku",
                    string().min_len(1).max_len(255).pattern("^[a-z0-9-_]+$"),
                ),
                (
                    "version",
                    string()
                        .min_len(1)
                        .max_len(32)
                        .pattern(r"^[0-9]+\.[0-9]+\.[0-9]+$|^latest$"),
                ),
            ])
            .min_properties(1),
        ),
        ("imageID", string().max_len(255)),
        ("type", string().one_of(&["ImageID", "AzureMarketplace"])),
    ])
    .require(&["type"])
    .rule(required_iff(
        "type",
        "ImageID",
        "imageID",
        "imageID is required when type is ImageID, and forbidden otherwise",
    ))
    .rule(forbidden_unless(
        "type",
        "AzureMarketplace",
        "azureMarketplace",
        "azureMarketplace is forbidden when type is not AzureMarketplace",
    ));
    object([
        (
            "availabilityZone",
            string()
                .max_len(255)
                .rule(holds("failed rule: self in ['1', '2', '3']", |v| {
                    matches!(v.as_str(), Some("1" | "2" | "3"))
                })),
        ),
        (
            "diagnostics",
            object([
                (
                    "storageAccountType",
                    string()
                        .one_of(&["Managed", "UserManaged", "Disabled"])
                        .default(json!("Disabled")),
                ),
                (
                    "userManaged",
                    object([("storageAccountURI", string().max_len(1024))])
                        .require(&["storageAccountURI"]),
                ),
            ]),
        ),
        (
            "encryptionAtHost",
            string()
                .one_of(&["Enabled", "Disabled"])
                .default(json!("Enabled")),
        ),
        ("image", image),
        (
            "osDisk",
            object([
                (
                    "diskStorageAccountType",
                    string().one_of(&[
                        "Premium_LRS",
                        "PremiumV2_LRS",
                        "Standard_LRS",
                        "StandardSSD_LRS",
                    ]),
                ),
                ("encryptionSetID", string().min_len(1).max_len(285)),
                ("persistence", string().one_of(&["Persistent", "Ephemeral"])),
                ("sizeGiB", integer().minimum(16).maximum(32767)),
            ]),
        ),
        (
            "subnetID",
            string()
                .min_len(1)
                .max_len(355)
                .rule(immutable("SubnetID is immutable")),
        ),
        (
            "vmSize",
            string().max_len(255).pattern(
                "^(Standard_|Basic_)?[A-Z]+[0-9]+(-[0-9]+)?[abdilmptsCNP]*(_[A-Z]*[0-9]+[A-Z]*)?(_v[0-9]+)?$",
            ),
        ),
    ])
    .require(&["image", "osDisk", "subnetID", "vmSize"])
}

fn status() -> Node {
    let condition = object([
        ("lastTransitionTime", string()),
        ("message", string().max_len(32768)),
        ("observedGeneration", integer().minimum(0)),
        ("reason", string().max_len(1024)),
        ("severity", string().max_len(1024)),
        ("status", string()),
        ("type", string().max_len(316)),
    ])
    .require(&["lastTransitionTime", "status", "type"]);
    object([
        ("conditions", atomic_list(condition).max_items(100)),
        ("nodesInfo", any()),
        ("platform", any()),
        ("replicas", integer()),
        ("version", string().max_len(64)),
    ])
}
