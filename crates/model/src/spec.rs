//! What a user asks for: the cluster spec, in domain form (the gateway converts the wire
//! types into these).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::addon::AddonRef;

/// Default VNet address space when the user brings no network (as `hypershift create infra`).
pub const DEFAULT_VNET_CIDR: &str = "10.0.0.0/16";
/// Default subnet, inside [`DEFAULT_VNET_CIDR`].
pub const DEFAULT_SUBNET_CIDR: &str = "10.0.0.0/24";
/// HyperShift's CLI default worker size.
pub const DEFAULT_VM_SIZE: &str = "Standard_D4s_v5";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSpec {
    pub location: String,
    pub base_domain: String,
    pub release_image: String,
    #[serde(default)]
    pub node_pools: Vec<NodePoolSpec>,
    #[serde(default)]
    pub network: NetworkSpec,
    /// The add-ons the cluster carries, each at the version it runs (applied through Package
    /// Operator once the control plane is available).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addons: Vec<AddonRef>,
}

/// One node pool: HyperShift's `NodePool` on Azure, with what ARO-HCP lets users set.
///
/// Fields added after the first release default, so records written before them read as the
/// pools they were: a fixed count, the cluster's release, HyperShift's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePoolSpec {
    pub name: String,
    /// The fixed number of nodes; ignored (and 0) when [`NodePoolSpec::autoscaling`] is set.
    #[serde(default)]
    pub replicas: i32,
    pub vm_size: String,
    /// Bounds the autoscaler keeps the pool within, instead of a fixed count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<Autoscaling>,
    /// The pool's own release: pools upgrade apart from the control plane. Empty only in
    /// records written before pools had one, where the cluster's release applies (see
    /// [`ClusterSpec::pin_pool_releases`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub release_image: String,
    /// Immutable once the pool exists.
    #[serde(default)]
    pub os_disk: OsDisk,
    /// `"1"`, `"2"` or `"3"`; immutable. None: Azure places each VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// A subnet of the cluster's VNet for this pool's VMs; immutable. None: the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
    /// Kubernetes labels of the pool's nodes; a change applies to nodes made after it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Taints of the pool's nodes; a change applies to nodes made after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// How machines move to a new release; immutable.
    #[serde(default)]
    pub upgrade_type: UpgradeType,
    /// How long a node is drained before it is removed anyway; 0 waits for ever (HyperShift's
    /// default). At most a week, as ARO-HCP allows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub node_drain_timeout_minutes: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The autoscaler's bounds for a pool (HyperShift's `NodePoolAutoScaling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Autoscaling {
    pub min: i32,
    pub max: i32,
}

/// A node pool's OS disk (ARO-HCP's `osDisk`; HyperShift's `AzureNodePoolOSDisk`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsDisk {
    #[serde(default = "default_disk_size")]
    pub size_gib: u32,
    /// `Premium_LRS`, `PremiumV2_LRS`, `Standard_LRS` or `StandardSSD_LRS`.
    #[serde(default = "default_disk_type")]
    pub storage_account_type: String,
}

/// `hypershift create nodepool azure`'s default OS disk size (`--root-disk-size`), within
/// ARO-HCP's 64–4095.
pub const DEFAULT_OS_DISK_GIB: u32 = 120;
/// HyperShift's CLI default disk type.
pub const DEFAULT_OS_DISK_TYPE: &str = "Premium_LRS";

fn default_disk_size() -> u32 {
    DEFAULT_OS_DISK_GIB
}

fn default_disk_type() -> String {
    DEFAULT_OS_DISK_TYPE.to_owned()
}

impl Default for OsDisk {
    fn default() -> Self {
        Self {
            size_gib: DEFAULT_OS_DISK_GIB,
            storage_account_type: DEFAULT_OS_DISK_TYPE.to_owned(),
        }
    }
}

/// A Kubernetes node taint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// HyperShift's `management.upgradeType`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpgradeType {
    /// New machines replace old ones, one at a time (`maxSurge: 1, maxUnavailable: 0`).
    #[default]
    Replace,
    /// Machines are upgraded where they are.
    InPlace,
}

impl UpgradeType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replace => "Replace",
            Self::InPlace => "InPlace",
        }
    }
}

impl NodePoolSpec {
    /// A pool of `replicas` × `vm_size` with every other field at its default.
    pub fn new(name: impl Into<String>, replicas: i32, vm_size: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            replicas,
            vm_size: vm_size.into(),
            ..Self::default()
        }
    }

    /// The fields (as the public API names them, relative to the pool) at which `other`
    /// differs from this pool.
    pub fn differences(&self, other: &NodePoolSpec) -> Vec<&'static str> {
        let same = [
            ("name", self.name == other.name),
            ("replicas", self.replicas == other.replicas),
            ("vm_size", self.vm_size == other.vm_size),
            ("autoscaling", self.autoscaling == other.autoscaling),
            ("release_image", self.release_image == other.release_image),
            ("os_disk", self.os_disk == other.os_disk),
            (
                "availability_zone",
                self.availability_zone == other.availability_zone,
            ),
            ("subnet_id", self.subnet_id == other.subnet_id),
            ("labels", self.labels == other.labels),
            ("taints", self.taints == other.taints),
            ("upgrade_type", self.upgrade_type == other.upgrade_type),
            (
                "node_drain_timeout_minutes",
                self.node_drain_timeout_minutes == other.node_drain_timeout_minutes,
            ),
        ];
        same.into_iter()
            .filter(|(_, same)| !same)
            .map(|(f, _)| f)
            .collect()
    }

    /// The fields that cannot change once the pool exists (ARO-HCP's `platform`, HyperShift's
    /// immutable `upgradeType` and `subnetID`).
    pub const IMMUTABLE: [&'static str; 5] = [
        "vm_size",
        "os_disk",
        "availability_zone",
        "subnet_id",
        "upgrade_type",
    ];

    /// The most nodes this pool may have: its count, or its autoscaler's maximum.
    pub fn max_nodes(&self) -> i32 {
        self.autoscaling.map_or(self.replicas, |a| a.max)
    }

    /// The fewest nodes this pool keeps: its count, or its autoscaler's minimum.
    pub fn min_nodes(&self) -> i32 {
        self.autoscaling.map_or(self.replicas, |a| a.min)
    }
}

/// Either CIDRs for a network hypersaga creates, or the IDs of a network the user brings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnet_cidr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_cidr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnet_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsg_id: Option<String>,
}

impl NetworkSpec {
    /// True when the user brings their own VNet, subnet and NSG (hypersaga never deletes them).
    pub fn is_user_brought(&self) -> bool {
        self.vnet_id.is_some() || self.subnet_id.is_some() || self.nsg_id.is_some()
    }

    /// The VNet CIDR to create, defaults applied.
    pub fn vnet_cidr(&self) -> &str {
        self.vnet_cidr.as_deref().unwrap_or(DEFAULT_VNET_CIDR)
    }

    /// The subnet CIDR to create, defaults applied.
    pub fn subnet_cidr(&self) -> &str {
        self.subnet_cidr.as_deref().unwrap_or(DEFAULT_SUBNET_CIDR)
    }
}

impl ClusterSpec {
    /// The pool named `name`.
    pub fn pool(&self, name: &str) -> Option<&NodePoolSpec> {
        self.node_pools.iter().find(|p| p.name == name)
    }

    /// The add-on named `name` the cluster carries.
    pub fn addon(&self, name: &str) -> Option<&AddonRef> {
        self.addons.iter().find(|a| a.name == name)
    }

    /// Gives every pool without a release of its own the cluster's: pools written before they
    /// had one run the cluster's release, and must keep it when the control plane moves on.
    pub fn pin_pool_releases(&mut self) {
        for p in &mut self.node_pools {
            if p.release_image.is_empty() {
                p.release_image.clone_from(&self.release_image);
            }
        }
    }

    /// The field paths of the public API (`spec.node_pools[0].replicas`) at which `other`
    /// differs from this spec: what a request reusing another's `request_id` changed.
    pub fn differences(&self, other: &ClusterSpec) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |field: String, same: bool| {
            if !same {
                out.push(field);
            }
        };
        cmp("spec.location".into(), self.location == other.location);
        cmp(
            "spec.base_domain".into(),
            self.base_domain == other.base_domain,
        );
        cmp(
            "spec.release_image".into(),
            self.release_image == other.release_image,
        );
        let (a, b) = (&self.node_pools, &other.node_pools);
        for (i, (p, q)) in a.iter().zip(b).enumerate() {
            for field in p.differences(q) {
                cmp(format!("spec.node_pools[{i}].{field}"), false);
            }
        }
        cmp("spec.node_pools".into(), a.len() == b.len());
        let (n, m) = (&self.network, &other.network);
        cmp(
            "spec.network.vnet_cidr".into(),
            n.vnet_cidr() == m.vnet_cidr(),
        );
        cmp(
            "spec.network.subnet_cidr".into(),
            n.subnet_cidr() == m.subnet_cidr(),
        );
        cmp("spec.network.vnet_id".into(), n.vnet_id == m.vnet_id);
        cmp("spec.network.subnet_id".into(), n.subnet_id == m.subnet_id);
        cmp("spec.network.nsg_id".into(), n.nsg_id == m.nsg_id);
        cmp("spec.addons".into(), self.addons == other.addons);
        out
    }
}

/// A valid spec, for the crate's tests.
#[cfg(test)]
pub(crate) fn example() -> ClusterSpec {
    ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into(),
        node_pools: vec![NodePoolSpec::new("workers", 2, DEFAULT_VM_SIZE)],
        network: NetworkSpec::default(),
        addons: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_spec_has_no_differences_and_defaults_equal_their_values() {
        let mut other = example();
        assert!(example().differences(&other).is_empty());
        other.network.vnet_cidr = Some(DEFAULT_VNET_CIDR.into());
        assert!(example().differences(&other).is_empty());
    }

    #[test]
    fn every_changed_field_is_named_by_its_path() {
        let mut other = example();
        other.location = "westeurope".into();
        other.node_pools[0].replicas = 3;
        other.node_pools.push(other.node_pools[0].clone());
        assert_eq!(
            example().differences(&other),
            [
                "spec.location",
                "spec.node_pools[0].replicas",
                "spec.node_pools"
            ]
        );
    }
}
