//! What each operation kind means to the engine, in one place: its plan (a DAG of steps,
//! built from the cluster as it is and the request), which way it runs, what a terminal
//! failure does, the audit events that open and close it, and the phase it gives the cluster.
//!
//! The engine asks this module and never matches on a kind itself: adding a kind is a new
//! [`OperationKind`] variant, an arm in [`behaviour`] and one in [`plan`].
//!
//! Day-2 kinds reuse the create's steps: each step's `do` makes its object be as the spec
//! says (look, adopt, then create or update), so "create the HostedCluster" and "upgrade it"
//! are the same step against another spec, and so are creating, scaling and upgrading a pool.

use std::collections::BTreeSet;

use hypersaga_bus::StepId;
use hypersaga_model::record::{ClusterPhase, OperationKind};
use hypersaga_model::{AddonRef, ClusterSpec, NodePoolSpec};

use crate::plan::{Retain, StepDef, UndoPolicy, create_plan};

/// Which way an operation's steps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Each step's `do`, in dependency order.
    Forward,
    /// Each step's `undo`, in reverse dependency order (what a delete is).
    Backward,
}

/// What a forward step's terminal failure does to its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Undo what the operation made, in reverse order (a create: nothing half-made is left).
    Compensate,
    /// Stop where it is: nothing more starts, nothing is undone, the operation fails with the
    /// reason. A failed scale or upgrade must not tear down what was working before it.
    Stop,
}

/// How the engine treats one kind of operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub direction: Direction,
    pub on_failure: OnFailure,
    /// The audit event that opens the operation, and those that close it.
    pub accepted_event: &'static str,
    pub succeeded_event: &'static str,
    pub failed_event: &'static str,
    /// The cluster's phase while no step has started, while it runs (or pauses), while it
    /// compensates, and once it has succeeded or failed.
    pub accepted_phase: ClusterPhase,
    pub running_phase: ClusterPhase,
    pub compensating_phase: ClusterPhase,
    pub succeeded_phase: ClusterPhase,
    pub failed_phase: ClusterPhase,
    /// Once it has succeeded, the cluster owns nothing: what it owned is gone however it was
    /// found (a sweep deletes by tags and labels, not from the steps' outputs).
    pub forgets_owned: bool,
}

impl Behaviour {
    /// A day-2 operation on a living cluster: the cluster serves throughout, and is `ready`
    /// with what it has whatever the outcome.
    const fn day2(direction: Direction, on_failure: OnFailure, events: [&'static str; 3]) -> Self {
        Self {
            direction,
            on_failure,
            accepted_event: events[0],
            succeeded_event: events[1],
            failed_event: events[2],
            accepted_phase: ClusterPhase::Updating,
            running_phase: ClusterPhase::Updating,
            compensating_phase: ClusterPhase::Updating,
            succeeded_phase: ClusterPhase::Ready,
            failed_phase: ClusterPhase::Ready,
            forgets_owned: false,
        }
    }

    /// Whether an operator may turn the operation around (`CompensateOperation`).
    pub fn compensable(&self) -> bool {
        self.direction == Direction::Forward && self.on_failure == OnFailure::Compensate
    }
}

/// How the engine treats operations of `kind`.
pub fn behaviour(kind: OperationKind) -> Behaviour {
    use Direction::{Backward, Forward};
    use OnFailure::{Compensate, Stop};
    match kind {
        OperationKind::Create => Behaviour {
            direction: Forward,
            on_failure: Compensate,
            accepted_event: "cluster.accepted",
            succeeded_event: "cluster.ready",
            failed_event: "cluster.failed",
            accepted_phase: ClusterPhase::Accepted,
            running_phase: ClusterPhase::Provisioning,
            compensating_phase: ClusterPhase::Compensating,
            succeeded_phase: ClusterPhase::Ready,
            failed_phase: ClusterPhase::Failed,
            forgets_owned: false,
        },
        OperationKind::Delete => Behaviour {
            direction: Backward,
            // A delete's own steps are undos: one that cannot finish pauses.
            on_failure: Stop,
            accepted_event: "cluster.deleting",
            succeeded_event: "cluster.deleted",
            failed_event: "cluster.delete_failed",
            accepted_phase: ClusterPhase::Deleting,
            running_phase: ClusterPhase::Deleting,
            compensating_phase: ClusterPhase::Deleting,
            succeeded_phase: ClusterPhase::Deleted,
            failed_phase: ClusterPhase::Failed,
            forgets_owned: false,
        },
        OperationKind::UpdateCluster => Behaviour::day2(
            Forward,
            Stop,
            [
                "cluster.updating",
                "cluster.updated",
                "cluster.update_failed",
            ],
        ),
        // A pool that cannot be made is removed again: the cluster is as it was.
        OperationKind::CreateNodePool => Behaviour::day2(
            Forward,
            Compensate,
            [
                "node_pool.creating",
                "node_pool.created",
                "node_pool.create_failed",
            ],
        ),
        OperationKind::UpdateNodePool => Behaviour::day2(
            Forward,
            Stop,
            [
                "node_pool.updating",
                "node_pool.updated",
                "node_pool.update_failed",
            ],
        ),
        OperationKind::DeleteNodePool => Behaviour::day2(
            Backward,
            Stop,
            [
                "node_pool.deleting",
                "node_pool.deleted",
                "node_pool.delete_failed",
            ],
        ),
        // An add-on that cannot be rolled out is removed again: the cluster is as it was.
        OperationKind::AddAddon => Behaviour::day2(
            Forward,
            Compensate,
            ["addon.adding", "addon.added", "addon.add_failed"],
        ),
        // A version that does not become available stops where it is: Package Operator keeps
        // the last available revision's objects until the new one is available.
        OperationKind::UpdateAddon => Behaviour::day2(
            Forward,
            Stop,
            ["addon.updating", "addon.updated", "addon.update_failed"],
        ),
        OperationKind::RemoveAddon => Behaviour::day2(
            Backward,
            Stop,
            ["addon.removing", "addon.removed", "addon.remove_failed"],
        ),
        // Each step deletes what its service finds: a step that cannot finish stops the
        // sweep where it is (nothing to undo), and the sweep can be run again.
        OperationKind::Sweep => Behaviour {
            direction: Forward,
            on_failure: Stop,
            accepted_event: "cluster.sweeping",
            succeeded_event: "cluster.swept",
            failed_event: "cluster.sweep_failed",
            accepted_phase: ClusterPhase::Deleting,
            running_phase: ClusterPhase::Deleting,
            compensating_phase: ClusterPhase::Deleting,
            succeeded_phase: ClusterPhase::Deleted,
            failed_phase: ClusterPhase::Failed,
            forgets_owned: true,
        },
    }
}

/// What a cluster has made of its pools and add-ons (steps with outputs in its record),
/// whether or not its spec still names them: a delete removes them all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Existing {
    pub pools: BTreeSet<String>,
    pub addons: BTreeSet<String>,
}

impl Existing {
    /// From the ids of the steps a cluster owns outputs of.
    pub fn from_steps<'a>(ids: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = Self::default();
        for id in ids {
            match id.parse::<StepId>() {
                Ok(StepId::NodePool(p)) => {
                    out.pools.insert(p);
                }
                Ok(StepId::Addon(a)) => {
                    out.addons.insert(a);
                }
                _ => {}
            }
        }
        out
    }
}

/// What a plan is built from: the cluster as the operation is to leave it, and the request.
#[derive(Clone, Copy, Debug)]
pub struct PlanInput<'a> {
    /// The cluster's spec with the request applied (an upgrade's new release, a new pool's
    /// spec among the pools).
    pub spec: &'a ClusterSpec,
    /// The pool a node-pool operation acts on.
    pub node_pool: Option<&'a str>,
    /// The add-on an add-on operation acts on.
    pub addon: Option<&'a str>,
    /// What a delete leaves in place.
    pub retain: Retain,
    /// Pools and add-ons something exists of: a delete removes them all.
    pub existing: &'a Existing,
}

/// Why no plan can be built: a node-pool or add-on operation without its pool or add-on (a
/// record the gateway would not write).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a {kind} operation needs a {what}{}", .name.as_deref().map(|p| format!(" the spec names; {p:?} is not one")).unwrap_or_default())]
pub struct PlanError {
    pub kind: &'static str,
    /// `node pool` or `add-on`.
    pub what: &'static str,
    pub name: Option<String>,
}

/// The steps of an operation of `kind`.
pub fn plan(kind: OperationKind, input: PlanInput<'_>) -> Result<Vec<StepDef>, PlanError> {
    use UndoPolicy::{Keep, Undo};
    let pool_step = |undo| -> Result<Vec<StepDef>, PlanError> {
        let name = pool_named(kind, input)?;
        Ok(vec![StepDef::of(StepId::node_pool(name), &[], undo)])
    };
    let addon_step = |undo| -> Result<Vec<StepDef>, PlanError> {
        let name = addon_named(kind, input)?;
        Ok(vec![StepDef::of(StepId::addon(name), &[], undo)])
    };
    match kind {
        OperationKind::Create => Ok(create_plan(input.spec, input.retain)),
        OperationKind::Delete => {
            // Pools and add-ons the spec no longer names but that exist (a removal that
            // failed) go too.
            let mut spec = input.spec.clone();
            for name in &input.existing.pools {
                if spec.pool(name).is_none() {
                    spec.node_pools.push(NodePoolSpec::new(name.clone(), 0, ""));
                }
            }
            for name in &input.existing.addons {
                if spec.addon(name).is_none() {
                    spec.addons
                        .push(AddonRef::new(name.clone(), "", Default::default()));
                }
            }
            Ok(create_plan(&spec, input.retain))
        }
        // The HostedCluster made as the new spec says, then its rollout awaited: the same
        // steps as a create's. Neither is undone when the upgrade fails: it stops.
        OperationKind::UpdateCluster => Ok(vec![
            StepDef::of(StepId::HostedCluster, &[], Keep),
            StepDef::of(StepId::Rollout, &[StepId::HostedCluster], Keep),
        ]),
        OperationKind::CreateNodePool => pool_step(Undo),
        OperationKind::UpdateNodePool => pool_step(Keep),
        OperationKind::DeleteNodePool => pool_step(Undo),
        OperationKind::AddAddon => addon_step(Undo),
        OperationKind::UpdateAddon => addon_step(Keep),
        OperationKind::RemoveAddon => addon_step(Undo),
        OperationKind::Sweep => Ok(sweep_plan(input.retain)),
    }
}

/// A sweep's steps: each service deletes what it finds of the cluster, in the order a
/// delete removes them (the pools, the control plane and its namespace, then what they used in
/// Azure: DNS and identities, and the network and resource groups last). Nothing is undone.
/// Identities a delete kept on purpose (`retain`) are no leftovers: they are not swept.
fn sweep_plan(retain: Retain) -> Vec<StepDef> {
    use hypersaga_bus::Service::{ControlPlane, Dns, Identity, Network, NodePool};
    let nodepool = StepId::Sweep(NodePool);
    let controlplane = StepId::Sweep(ControlPlane);
    let (dns, identity) = (StepId::Sweep(Dns), StepId::Sweep(Identity));
    let mut steps = vec![
        StepDef::of(nodepool.clone(), &[], UndoPolicy::Keep),
        StepDef::of(controlplane.clone(), &[nodepool], UndoPolicy::Keep),
        StepDef::of(
            dns.clone(),
            std::slice::from_ref(&controlplane),
            UndoPolicy::Keep,
        ),
    ];
    let mut before_network = vec![dns];
    if !retain.identities {
        steps.push(StepDef::of(
            identity.clone(),
            &[controlplane],
            UndoPolicy::Keep,
        ));
        before_network.push(identity);
    }
    steps.push(StepDef::of(
        StepId::Sweep(Network),
        &before_network,
        UndoPolicy::Keep,
    ));
    steps
}

fn plan_error(kind: OperationKind, what: &'static str, name: Option<&str>) -> PlanError {
    PlanError {
        kind: kind.as_str(),
        what,
        name: name.map(str::to_owned),
    }
}

/// The pool a node-pool operation names, which must be in the spec.
fn pool_named<'a>(kind: OperationKind, input: PlanInput<'a>) -> Result<&'a str, PlanError> {
    let name = input
        .node_pool
        .ok_or_else(|| plan_error(kind, "node pool", None))?;
    input
        .spec
        .pool(name)
        .map(|p| p.name.as_str())
        .ok_or_else(|| plan_error(kind, "node pool", Some(name)))
}

/// The add-on an add-on operation names, which must be in the spec (a removal's too: the
/// spec leaves it only once its removal has succeeded).
fn addon_named<'a>(kind: OperationKind, input: PlanInput<'a>) -> Result<&'a str, PlanError> {
    let name = input
        .addon
        .ok_or_else(|| plan_error(kind, "add-on", None))?;
    input
        .spec
        .addon(name)
        .map(|a| a.name.as_str())
        .ok_or_else(|| plan_error(kind, "add-on", Some(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::spec;

    fn input<'a>(
        spec: &'a ClusterSpec,
        pool: Option<&'a str>,
        existing: &'a Existing,
    ) -> PlanInput<'a> {
        PlanInput {
            spec,
            node_pool: pool,
            addon: pool,
            retain: Retain::default(),
            existing,
        }
    }

    fn ids(plan: &[StepDef]) -> Vec<&str> {
        plan.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn every_kind_has_a_behaviour_and_a_plan() {
        let spec = spec();
        let none = Existing::default();
        let mut spec = spec;
        spec.addons
            .push(AddonRef::new("workers", "1", Default::default()));
        for kind in OperationKind::ALL {
            let b = behaviour(kind);
            assert!(b.accepted_event.contains('.') && b.succeeded_event != b.failed_event);
            let plan = plan(kind, input(&spec, Some("workers"), &none)).unwrap();
            assert!(!plan.is_empty(), "{kind:?}");
        }
    }

    #[test]
    fn day_two_plans_touch_only_what_they_change() {
        let spec = spec();
        let none = Existing::default();
        let upgrade = plan(OperationKind::UpdateCluster, input(&spec, None, &none)).unwrap();
        assert_eq!(
            ids(&upgrade),
            ["controlplane.hostedcluster", "controlplane.rollout"]
        );
        assert!(upgrade.iter().all(|s| s.undo == UndoPolicy::Keep));
        let scale = plan(
            OperationKind::UpdateNodePool,
            input(&spec, Some("workers"), &none),
        )
        .unwrap();
        assert_eq!(ids(&scale), ["nodepool.workers"]);
        assert_eq!(
            scale[0].undo,
            UndoPolicy::Keep,
            "a failed scale removes nothing"
        );
        let create = plan(
            OperationKind::CreateNodePool,
            input(&spec, Some("workers"), &none),
        )
        .unwrap();
        assert_eq!(
            create[0].undo,
            UndoPolicy::Undo,
            "a failed pool create removes the pool"
        );
        assert_eq!(
            plan(
                OperationKind::DeleteNodePool,
                input(&spec, Some("gpu"), &none)
            ),
            Err(PlanError {
                kind: "delete_node_pool",
                what: "node pool",
                name: Some("gpu".into())
            })
        );
        assert!(plan(OperationKind::UpdateNodePool, input(&spec, None, &none)).is_err());
        let sweep = plan(OperationKind::Sweep, input(&spec, None, &none)).unwrap();
        assert_eq!(
            ids(&sweep),
            [
                "nodepool._sweep",
                "controlplane._sweep",
                "dns._sweep",
                "identity._sweep",
                "network._sweep"
            ]
        );
        assert!(sweep.iter().all(|s| s.undo == UndoPolicy::Keep));
        let mut kept = input(&spec, None, &none);
        kept.retain = Retain { identities: true };
        let sweep = plan(OperationKind::Sweep, kept).unwrap();
        assert!(
            !ids(&sweep).contains(&"identity._sweep"),
            "kept identities stay"
        );
        assert_eq!(
            behaviour(OperationKind::Sweep).succeeded_phase,
            ClusterPhase::Deleted
        );
    }

    #[test]
    fn a_delete_removes_pools_the_spec_no_longer_names() {
        let mut spec = spec();
        spec.addons
            .push(AddonRef::new("logging", "1", Default::default()));
        let existing = Existing::from_steps([
            "nodepool.workers",
            "nodepool.gone",
            "controlplane.addon.logging",
            "controlplane.addon.old",
            "network.vnet",
        ]);
        let delete = plan(OperationKind::Delete, input(&spec, None, &existing)).unwrap();
        let pools: Vec<&str> = ids(&delete)
            .into_iter()
            .filter(|s| s.starts_with("nodepool.") || s.starts_with("controlplane.addon."))
            .collect();
        assert_eq!(
            pools,
            [
                "nodepool.workers",
                "nodepool.gone",
                "controlplane.addon.logging",
                "controlplane.addon.old"
            ]
        );
    }

    #[test]
    fn only_forward_compensating_kinds_can_be_compensated() {
        let compensable: Vec<OperationKind> = OperationKind::ALL
            .into_iter()
            .filter(|k| behaviour(*k).compensable())
            .collect();
        assert_eq!(
            compensable,
            [
                OperationKind::Create,
                OperationKind::CreateNodePool,
                OperationKind::AddAddon
            ]
        );
        assert_eq!(
            behaviour(OperationKind::UpdateNodePool).failed_phase,
            ClusterPhase::Ready
        );
    }
}
