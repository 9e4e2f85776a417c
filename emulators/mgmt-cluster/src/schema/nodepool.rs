//! `NodePool` (`hypershift.openshift.io/v1beta1`), transcribed from HyperShift's
//! `api/hypershift/v1beta1/nodepool_types.go` and `azure.go` and their generated CRD
//! (`zz_generated.featuregated-crd-manifests/nodepools.hypershift.openshift.io/AAA_ungated.yaml`).
//!
//! Note `status.conditions` has no list-type marker (`[]NodePoolCondition`, `+optional`), so
//! unlike HostedCluster's it is atomic: whoever writes it owns the whole list.

use serde_json::{Value, json};

use super::Node;
use super::azure_ids;
use super::builder::*;
use super::meta::envelope;
use super::rules::{
    Outcome, evaluates, field, forbidden_unless, holds, immutable, kept_once_set, matches,
    not_both, only_with, required_iff,
};
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
                .rule(immutable("ClusterName is immutable"))
                .rule(matches(
                    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                    "clusterName must consist of lowercase alphanumeric characters or '-', \
                     start and end with an alphanumeric character, and be between 1 and 253 \
                     characters",
                )),
        ),
        ("config", atomic_list(any()).max_items(10)),
        ("management", management()),
        ("nodeDrainTimeout", string()),
        ("nodeLabels", map_of(string())),
        ("nodeVolumeDetachTimeout", string()),
        (
            "pausedUntil",
            string().min_len(1).max_len(35).rule(holds(
                "PausedUntil must be a date in RFC3339 format or 'True', 'true', 'False' or \
                 'false'",
                paused_until,
            )),
        ),
        ("platform", platform()),
        ("release", release()),
        ("replicas", integer()),
        ("taints", atomic_list(taint()).max_items(50)),
        ("tuningConfig", atomic_list(any()).max_items(10)),
    ])
    .require(&["clusterName", "management", "platform", "release"])
    // The spec's rules in the CRD's order (the AWS-only Windows rule is not modelled).
    .rule(kept_once_set("arch", "Arch is required once set"))
    .rule(evaluates(
        "Setting Arch to arm64 is only supported for AWS, Azure, Agent, GCP and None",
        arm64_platform,
    ))
    .rule(not_both(
        "replicas",
        "autoScaling",
        "Both replicas or autoScaling should not be set",
    ))
    .rule(evaluates(
        "s390x is only supported on KubeVirt platform",
        s390x_platform,
    ))
    .rule(evaluates(
        "Scale-from-zero (autoScaling.min=0) is currently only supported for AWS and Azure \
         platforms",
        scale_from_zero,
    ))
}

/// `self.arch != 'arm64' || has(self.platform.aws) || has(self.platform.azure) ||
/// has(self.platform.agent) || self.platform.type == 'GCP' || self.platform.type == 'None'`.
fn arm64_platform(spec: &Value) -> Outcome {
    if field(spec, "arch")?.as_str() != Some("arm64") {
        return Ok(true);
    }
    let platform = field(spec, "platform")?;
    if ["aws", "azure", "agent"]
        .iter()
        .any(|p| platform.get(*p).is_some())
    {
        return Ok(true);
    }
    Ok(matches!(
        field(platform, "type")?.as_str(),
        Some("GCP" | "None")
    ))
}

/// `self.arch != 's390x' || has(self.platform.kubevirt)`.
fn s390x_platform(spec: &Value) -> Outcome {
    Ok(field(spec, "arch")?.as_str() != Some("s390x")
        || field(spec, "platform")?.get("kubevirt").is_some())
}

/// `!has(self.autoScaling) || self.autoScaling.min > 0 || self.platform.type == 'AWS' ||
/// self.platform.type == 'Azure'`.
fn scale_from_zero(spec: &Value) -> Outcome {
    let Some(auto) = spec.get("autoScaling") else {
        return Ok(true);
    };
    if field(auto, "min")?.as_i64().is_some_and(|m| m > 0) {
        return Ok(true);
    }
    let platform = field(field(spec, "platform")?, "type")?;
    Ok(matches!(platform.as_str(), Some("AWS" | "Azure")))
}

/// `self.matches('^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}.*$') || self in ['true', 'false',
/// 'True', 'False']`.
fn paused_until(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let date = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && b.get(10) == Some(&b'T')
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19);
    date || matches!(s, "true" | "false" | "True" | "False")
}

/// `Taint`: a node taint without `timeAdded`, validated as upstream validates taints.
fn taint() -> Node {
    object([
        (
            "effect",
            string().one_of(&["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        ),
        (
            "key",
            string().min_len(1).max_len(253).rule(matches(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
                "key must be a qualified name with an optional subdomain prefix e.g. \
                 example.com/MyName",
            )),
        ),
        (
            "value",
            string().max_len(253).rule(matches(
                "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                "Value must start and end with alphanumeric characters and can only contain \
                 '-', '_', '.' in the middle",
            )),
        ),
    ])
    .require(&["effect", "key"])
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
            .rule(only_with(
                "rollingUpdate",
                "strategy",
                "RollingUpdate",
                "The 'rollingUpdate' field can only be set when 'strategy' is 'RollingUpdate'",
            ))
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
    .rule(only_with(
        "inPlace",
        "upgradeType",
        "InPlace",
        "The 'inPlace' field can only be set when 'upgradeType' is 'InPlace'",
    ))
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

/// The fields of a marketplace image HyperShift wants all or none of.
const MARKETPLACE_IMAGE: [&str; 4] = ["publisher", "offer", "sku", "version"];

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
            .min_properties(1)
            .rule(holds(
                "must specify imageGeneration or must specify publisher, offer, sku and version",
                |m| {
                    m.get("imageGeneration").is_some()
                        || MARKETPLACE_IMAGE.iter().all(|k| m.get(*k).is_some())
                },
            ))
            .rule(holds(
                "publisher, offer, sku and version must either be all set, or all omitted",
                |m| {
                    let set = MARKETPLACE_IMAGE
                        .iter()
                        .filter(|k| m.get(**k).is_some())
                        .count();
                    set == 0 || set == MARKETPLACE_IMAGE.len()
                },
            )),
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
                    object([(
                        "storageAccountURI",
                        string().max_len(1024).rule(holds(
                            "storageAccountURI must be a valid HTTPS URL",
                            |v| {
                                url::Url::parse(v.as_str().unwrap_or_default())
                                    .is_ok_and(|u| u.scheme() == "https")
                            },
                        )),
                    )])
                    .require(&["storageAccountURI"]),
                ),
            ])
            .rule(evaluates(
                "userManaged is required when storageAccountType is UserManaged, and forbidden \
                 otherwise",
                |d| {
                    let user_managed = field(d, "storageAccountType")?.as_str() == Some("UserManaged");
                    Ok(user_managed == d.get("userManaged").is_some())
                },
            )),
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
                (
                    "encryptionSetID",
                    string()
                        .min_len(1)
                        .max_len(285)
                        .rules(azure_ids::encryption_set_id()),
                ),
                ("persistence", string().one_of(&["Persistent", "Ephemeral"])),
                ("sizeGiB", integer().minimum(16).maximum(32767)),
            ]),
        ),
        (
            "subnetID",
            string()
                .min_len(1)
                .max_len(355)
                .rules(azure_ids::subnet_id())
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
