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

impl ClusterSpec {
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
            cmp(format!("spec.node_pools[{i}].name"), p.name == q.name);
            cmp(
                format!("spec.node_pools[{i}].replicas"),
                p.replicas == q.replicas,
            );
            cmp(
                format!("spec.node_pools[{i}].vm_size"),
                p.vm_size == q.vm_size,
            );
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
        node_pools: vec![NodePoolSpec {
            name: "workers".into(),
            replicas: 2,
            vm_size: DEFAULT_VM_SIZE.into(),
        }],
        network: NetworkSpec::default(),
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
