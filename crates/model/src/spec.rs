//! What a user asks for: the cluster spec, in domain form (the gateway converts the wire
//! types into these).

use serde::{Deserialize, Serialize};

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
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePoolSpec {
    pub name: String,
    pub replicas: i32,
    pub vm_size: String,
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
