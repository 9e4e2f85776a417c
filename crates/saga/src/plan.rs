//! The create DAG. Edges are true dependencies only, so the critical path is Azure's own
//! (docs/reference/azure-latencies.md §4.3): the private DNS zone needs only its resource group,
//! the VNet link needs the zone and the VNet, the public IP and load balancer need only the managed
//! RG.

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
    pub(crate) fn of(id: StepId, deps: &[StepId], undo: UndoPolicy) -> Self {
        Self {
            id: id.to_string(),
            deps: deps.iter().map(StepId::to_string).collect(),
            undo,
        }
    }
}

/// What a delete leaves in place besides what is never removed (the tenant's OIDC issuer,
/// shared by its clusters, and a network the user brought).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retain {
    /// The cluster's workload identities and their federated credentials (asked for on the
    /// delete, e.g. to re-create the cluster with the same identities).
    pub identities: bool,
}

/// The steps that create a cluster. `retain` says which steps' work a delete (or a
/// compensation) leaves in place.
pub fn create_plan(spec: &ClusterSpec, retain: Retain) -> Vec<StepDef> {
    use StepId::*;
    use UndoPolicy::{Keep, Undo};
    // A network the user brings is adopted, never deleted.
    let byo = if spec.network.is_user_brought() {
        Keep
    } else {
        Undo
    };
    let identities = if retain.identities { Keep } else { Undo };
    let mut steps = vec![
        // Looked up first: a missing zone stops the create before anything is written.
        StepDef::of(PublicZone, &[], Keep),
        StepDef::of(Oidc, &[PublicZone], Keep),
        StepDef::of(WorkloadIdentities, &[Oidc], identities),
        StepDef::of(ResourceGroups, &[PublicZone], Undo),
        // Removed with the cluster even when the identities stay: they grant on its groups.
        StepDef::of(RoleAssignments, &[WorkloadIdentities, ResourceGroups], Undo),
        StepDef::of(Nsg, &[ResourceGroups], byo),
        StepDef::of(Vnet, &[Nsg], byo),
        StepDef::of(PublicIp, &[ResourceGroups], Undo),
        StepDef::of(LoadBalancer, &[PublicIp], Undo),
        StepDef::of(PrivateZone, &[ResourceGroups], Undo),
        StepDef::of(VnetLink, &[PrivateZone, Vnet], Undo),
        StepDef::of(
            HostedCluster,
            &[RoleAssignments, Vnet, LoadBalancer, VnetLink],
            Undo,
        ),
        StepDef::of(DnsRecords, &[HostedCluster, PrivateZone], Undo),
    ];
    let mut rollout_deps = vec![HostedCluster];
    for pool in &spec.node_pools {
        steps.push(StepDef::of(
            StepId::node_pool(&pool.name),
            &[HostedCluster],
            Undo,
        ));
        rollout_deps.push(StepId::node_pool(&pool.name));
    }
    // Add-ons once the control plane is available (Package Operator bootstraps its connector
    // then) and the pools exist: objects of the hosted cluster run on its nodes. A delete
    // removes them before the pools and the control plane.
    let pools = rollout_deps.clone();
    for addon in &spec.addons {
        steps.push(StepDef::of(StepId::addon(&addon.name), &pools, Undo));
    }
    // Ready means the release rolled out on the nodes, not only a control plane that answers.
    // A wait that makes nothing: nothing to undo, so no undo is sent for it.
    steps.push(StepDef::of(Rollout, &rollout_deps, Keep));
    steps
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hypersaga_model::{NetworkSpec, NodePoolSpec};

    pub(crate) fn spec() -> ClusterSpec {
        ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "quay.io/x:1".into(),
            node_pools: vec![NodePoolSpec::new("workers", 2, "Standard_D4s_v5")],
            network: NetworkSpec::default(),
            addons: Vec::new(),
        }
    }

    #[test]
    fn every_dependency_names_an_earlier_step() {
        let plan = create_plan(&spec(), Retain::default());
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
        let mut with_addon = spec();
        with_addon.addons.push(hypersaga_model::AddonRef::new(
            "logging",
            "1",
            Default::default(),
        ));
        let plan_with = create_plan(&with_addon, Retain::default());
        let addon = plan_with
            .iter()
            .find(|s| s.id == StepId::addon("logging"))
            .unwrap();
        assert_eq!(
            addon.deps,
            ["controlplane.hostedcluster", "nodepool.workers"]
        );
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
        let plan = create_plan(&s, Retain::default());
        let nsg = plan.iter().find(|p| p.id == StepId::Nsg).unwrap();
        assert_eq!(nsg.undo, UndoPolicy::Keep);
    }

    #[test]
    fn identities_are_removed_unless_retained() {
        let undo_of = |retain| {
            create_plan(&spec(), retain)
                .into_iter()
                .find(|p| p.id == StepId::WorkloadIdentities)
                .map(|p| p.undo)
        };
        assert_eq!(undo_of(Retain::default()), Some(UndoPolicy::Undo));
        assert_eq!(undo_of(Retain { identities: true }), Some(UndoPolicy::Keep));
        let oidc = create_plan(&spec(), Retain::default())
            .into_iter()
            .find(|p| p.id == StepId::Oidc)
            .map(|p| p.undo);
        assert_eq!(oidc, Some(UndoPolicy::Keep), "the issuer is the tenant's");
    }
}
