//! The create DAG. Edges are true dependencies only, so the critical path is Azure's own
//! (azure-latencies.md §4.3): the private DNS zone needs only its resource group, the VNet
//! link needs the zone and the VNet, the public IP and load balancer need only the managed RG.

use hypersaga_model::ClusterSpec;
use serde::{Deserialize, Serialize};

/// Whether a step's work is removed when the cluster is deleted or compensated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoPolicy {
    Undo,
    /// Persistent by design, or brought by the user: never removed.
    Keep,
}

/// One node of a saga DAG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepDef {
    pub id: String,
    pub deps: Vec<String>,
    pub undo: UndoPolicy,
}

impl StepDef {
    fn new(id: impl Into<String>, deps: &[&str], undo: UndoPolicy) -> Self {
        Self {
            id: id.into(),
            deps: deps.iter().map(|d| (*d).to_owned()).collect(),
            undo,
        }
    }
}

pub const OIDC: &str = "identity.oidc";
pub const WORKLOAD_IDENTITIES: &str = "identity.workload";
pub const RESOURCE_GROUPS: &str = "network.resource-groups";
pub const NSG: &str = "network.nsg";
pub const VNET: &str = "network.vnet";
pub const PUBLIC_IP: &str = "network.public-ip";
pub const LOAD_BALANCER: &str = "network.load-balancer";
pub const PRIVATE_ZONE: &str = "dns.private-zone";
pub const VNET_LINK: &str = "dns.vnet-link";
pub const HOSTED_CLUSTER: &str = "controlplane.hostedcluster";
pub const DNS_RECORDS: &str = "dns.records";
/// Prefix of node pool steps: `nodepool.<pool name>`.
pub const NODE_POOL_PREFIX: &str = "nodepool.";

/// The steps that create a cluster.
pub fn create_plan(spec: &ClusterSpec) -> Vec<StepDef> {
    use UndoPolicy::{Keep, Undo};
    // A network the user brings is adopted, never deleted.
    let byo = if spec.network.is_user_brought() {
        Keep
    } else {
        Undo
    };
    let mut steps = vec![
        StepDef::new(OIDC, &[], Keep),
        StepDef::new(WORKLOAD_IDENTITIES, &[OIDC], Keep),
        StepDef::new(RESOURCE_GROUPS, &[], Undo),
        StepDef::new(NSG, &[RESOURCE_GROUPS], byo),
        StepDef::new(VNET, &[NSG], byo),
        StepDef::new(PUBLIC_IP, &[RESOURCE_GROUPS], Undo),
        StepDef::new(LOAD_BALANCER, &[PUBLIC_IP], Undo),
        StepDef::new(PRIVATE_ZONE, &[RESOURCE_GROUPS], Undo),
        StepDef::new(VNET_LINK, &[PRIVATE_ZONE, VNET], Undo),
        StepDef::new(
            HOSTED_CLUSTER,
            &[WORKLOAD_IDENTITIES, VNET, LOAD_BALANCER, VNET_LINK],
            Undo,
        ),
        StepDef::new(DNS_RECORDS, &[HOSTED_CLUSTER, PRIVATE_ZONE], Undo),
    ];
    for pool in &spec.node_pools {
        steps.push(StepDef::new(
            format!("{NODE_POOL_PREFIX}{}", pool.name),
            &[HOSTED_CLUSTER],
            Undo,
        ));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypersaga_model::{NetworkSpec, NodePoolSpec};

    pub(crate) fn spec() -> ClusterSpec {
        ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "quay.io/x:1".into(),
            node_pools: vec![NodePoolSpec {
                name: "workers".into(),
                replicas: 2,
                vm_size: "Standard_D4s_v5".into(),
            }],
            network: NetworkSpec::default(),
        }
    }

    #[test]
    fn every_dependency_names_an_earlier_step() {
        let plan = create_plan(&spec());
        for (i, s) in plan.iter().enumerate() {
            for d in &s.deps {
                assert!(
                    plan[..i].iter().any(|p| &p.id == d),
                    "{} depends on unknown {d}",
                    s.id
                );
            }
        }
        assert!(plan.iter().any(|s| s.id == "nodepool.workers"));
    }

    #[test]
    fn user_brought_network_is_kept() {
        let mut s = spec();
        s.network.vnet_id = Some(
            "/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v"
                .into(),
        );
        let plan = create_plan(&s);
        let nsg = plan.iter().find(|p| p.id == NSG).unwrap();
        assert_eq!(nsg.undo, UndoPolicy::Keep);
    }
}
