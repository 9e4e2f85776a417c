//! The create DAG. Edges are true dependencies only, so the critical path is Azure's own
//! (azure-latencies.md §4.3): the private DNS zone needs only its resource group, the VNet
//! link needs the zone and the VNet, the public IP and load balancer need only the managed RG.

use hypersaga_bus::StepId;
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

/// One node of a saga DAG. Ids are wire ids: a [`StepId`]'s string for the create plan, any
/// `<service>.<name>` for other DAGs (a benchmark's no-op steps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepDef {
    pub id: String,
    pub deps: Vec<String>,
    pub undo: UndoPolicy,
}

impl StepDef {
    /// A step of the create plan: its wire id and those of its dependencies.
    fn of(id: StepId, deps: &[StepId], undo: UndoPolicy) -> Self {
        Self {
            id: id.to_string(),
            deps: deps.iter().map(StepId::to_string).collect(),
            undo,
        }
    }
}

/// The steps that create a cluster.
pub fn create_plan(spec: &ClusterSpec) -> Vec<StepDef> {
    use StepId::*;
    use UndoPolicy::{Keep, Undo};
    // A network the user brings is adopted, never deleted.
    let byo = if spec.network.is_user_brought() {
        Keep
    } else {
        Undo
    };
    let mut steps = vec![
        StepDef::of(Oidc, &[], Keep),
        StepDef::of(WorkloadIdentities, &[Oidc], Keep),
        StepDef::of(ResourceGroups, &[], Undo),
        StepDef::of(Nsg, &[ResourceGroups], byo),
        StepDef::of(Vnet, &[Nsg], byo),
        StepDef::of(PublicIp, &[ResourceGroups], Undo),
        StepDef::of(LoadBalancer, &[PublicIp], Undo),
        StepDef::of(PrivateZone, &[ResourceGroups], Undo),
        StepDef::of(VnetLink, &[PrivateZone, Vnet], Undo),
        StepDef::of(
            HostedCluster,
            &[WorkloadIdentities, Vnet, LoadBalancer, VnetLink],
            Undo,
        ),
        StepDef::of(DnsRecords, &[HostedCluster, PrivateZone], Undo),
    ];
    for pool in &spec.node_pools {
        steps.push(StepDef::of(
            StepId::node_pool(&pool.name),
            &[HostedCluster],
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
        assert!(plan.iter().any(|s| s.id == StepId::node_pool("workers")));
        // Every id is a step some service owns.
        for s in &plan {
            let id: StepId = s.id.parse().unwrap();
            assert_eq!(s.id.split('.').next(), Some(id.service().as_str()));
        }
    }

    #[test]
    fn user_brought_network_is_kept() {
        let mut s = spec();
        s.network.vnet_id = Some(
            "/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v"
                .into(),
        );
        let plan = create_plan(&s);
        let nsg = plan.iter().find(|p| p.id == StepId::Nsg).unwrap();
        assert_eq!(nsg.undo, UndoPolicy::Keep);
    }
}
