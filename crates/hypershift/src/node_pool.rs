//! `NodePool`: a set of worker VMs joined to a HostedCluster.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Release;
use crate::condition::{self, Condition, conditions};

/// `NodePool.spec` — the fields hypersaga sets for Azure workers.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "hypershift.openshift.io",
    version = "v1beta1",
    kind = "NodePool",
    plural = "nodepools",
    namespaced,
    status = "NodePoolStatus",
    shortname = "np",
    shortname = "nps",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterName"}"#,
    printcolumn = r#"{"name":"Desired Nodes","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Current Nodes","type":"integer","jsonPath":".status.replicas"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolSpec {
    /// Name of the HostedCluster (same namespace) the nodes join; immutable.
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    pub release: Release,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub management: Option<NodePoolManagement>,
    pub platform: NodePoolPlatform,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling: Option<NodePoolAutoScaling>,
    /// Labels of the nodes; HyperShift applies them only to nodes made after a change.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    /// Taints of the nodes; likewise only on nodes made after a change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// How long a node is drained before it is removed anyway (a Go duration, `30m`); unset
    /// waits for ever. Applied in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_drain_timeout: Option<String>,
}

/// `spec.taints[]`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    pub effect: String,
}

/// `spec.management`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolManagement {
    /// `Replace` (the CLI default) or `InPlace`.
    pub upgrade_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_repair: Option<bool>,
}

/// `spec.autoScaling` (exclusive with `replicas`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolAutoScaling {
    pub min: i32,
    pub max: i32,
}

/// `spec.platform`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolPlatform {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureNodePoolPlatform>,
}

/// `spec.platform.azure` (`AzureNodePoolPlatform`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureNodePoolPlatform {
    /// e.g. `Standard_D4s_v5`.
    pub vm_size: String,
    pub image: AzureVmImage,
    pub os_disk: AzureNodePoolOsDisk,
    #[serde(rename = "subnetID")]
    pub subnet_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_at_host: Option<String>,
}

/// `image`: union of `ImageID` and `AzureMarketplace`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureVmImage {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(rename = "imageID", default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_marketplace: Option<AzureMarketplaceImage>,
}

/// A marketplace image: either only the generation, or all of publisher/offer/sku/version.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMarketplaceImage {
    /// `Gen1` or `Gen2` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_generation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `osDisk`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureNodePoolOsDisk {
    #[serde(rename = "sizeGiB")]
    pub size_gib: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_storage_account_type: Option<String>,
    #[serde(
        rename = "encryptionSetID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub encryption_set_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<String>,
}

/// `NodePool.status`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolStatus {
    /// Nodes that have joined and are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// OpenShift version the nodes run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl NodePool {
    /// The status condition of `type_`, if reported.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        condition::find(self.status.as_ref()?.conditions.as_slice(), type_)
    }

    /// Nodes reported ready (`status.replicas`), 0 before the first report.
    pub fn ready_replicas(&self) -> i32 {
        self.status.as_ref().and_then(|s| s.replicas).unwrap_or(0)
    }

    /// `spec.replicas`, 0 when unset (autoscaled pools report via status only).
    pub fn desired_replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(0)
    }

    /// `Ready=True` and every desired node has joined.
    pub fn is_ready(&self) -> bool {
        self.condition(conditions::READY)
            .is_some_and(Condition::is_true)
            && self.ready_replicas() >= self.desired_replicas()
    }
}
