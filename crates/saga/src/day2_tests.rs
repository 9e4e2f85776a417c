//! Day-2 operations on the engine: what a failure does for each kind, and what the cluster is
//! left owning.

use std::collections::BTreeMap;

use super::*;
use crate::kinds::{PlanInput, plan as plan_of};

/// An operation of `kind` on pool `workers` (or the cluster), planned as the coordinator plans
/// it, started.
fn day2(kind: OperationKind) -> Saga {
    let mut spec = spec();
    spec.addons.push(hypersaga_model::AddonRef::new(
        "logging",
        "1.0.0",
        Default::default(),
    ));
    let existing = crate::kinds::Existing::default();
    let input = PlanInput {
        spec: &spec,
        node_pool: kind.is_node_pool().then_some("workers"),
        addon: kind.is_addon().then_some("logging"),
        retain: crate::Retain::default(),
        existing: &existing,
    };
    let mut s = saga_of(kind, plan_of(kind, input).unwrap());
    s.node_pool = input.node_pool.map(str::to_owned);
    s.addon = input.addon.map(str::to_owned);
    s.advance(t0());
    s
}

fn terminal(code: &str) -> Outcome {
    Outcome::Failed {
        error: StepError::terminal(code, "Azure said no"),
    }
}

#[test]
fn a_failed_scale_stops_where_it_is_and_leaves_the_cluster_ready() {
    let mut s = day2(OperationKind::UpdateNodePool);
    let (cmds, log) = split(&mut s);
    assert_eq!(ids(&cmds), ["nodepool.workers:do"]);
    assert_eq!(log[0].kind, "node_pool.updating");
    assert_eq!(s.cluster_phase(), ClusterPhase::Updating);
    report(&mut s, &cmds[0], terminal("OperationNotAllowed"));
    let (cmds, log) = split(&mut s);
    assert!(cmds.is_empty(), "nothing is undone: {cmds:?}");
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(s.cluster_phase(), ClusterPhase::Ready);
    assert_eq!(
        s.error.as_ref().map(|e| e.code.as_str()),
        Some("OperationNotAllowed")
    );
    assert_eq!(
        log.last().map(|a| a.kind.as_str()),
        Some("node_pool.update_failed")
    );
    // An operator cannot turn it around: there is nothing to undo.
    assert!(s.check_operator(OperatorAction::Compensate, None).is_err());
}

#[test]
fn a_failed_pool_create_removes_that_pool_only() {
    let mut s = day2(OperationKind::CreateNodePool);
    let cmds = drain(&mut s);
    report(&mut s, &cmds[0], terminal("OperationNotAllowed"));
    let (cmds, _) = split(&mut s);
    assert_eq!(ids(&cmds), ["nodepool.workers:undo"]);
    assert_eq!(s.cluster_phase(), ClusterPhase::Updating);
    report(&mut s, &cmds[0], ok(&[]));
    let (_, log) = split(&mut s);
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(
        s.cluster_phase(),
        ClusterPhase::Ready,
        "the cluster is as it was"
    );
    assert_eq!(
        log.last().map(|a| a.kind.as_str()),
        Some("node_pool.create_failed")
    );
}

#[test]
fn a_failed_addon_is_removed_again_and_a_failed_version_change_stops() {
    let mut s = day2(OperationKind::AddAddon);
    let (cmds, log) = split(&mut s);
    assert_eq!(ids(&cmds), ["controlplane.addon.logging:do"]);
    assert_eq!(log[0].kind, "addon.adding");
    report(&mut s, &cmds[0], terminal("AddonNotAvailable"));
    let (cmds, _) = split(&mut s);
    assert_eq!(ids(&cmds), ["controlplane.addon.logging:undo"]);
    report(&mut s, &cmds[0], ok(&[]));
    let (_, log) = split(&mut s);
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(s.cluster_phase(), ClusterPhase::Ready);
    assert_eq!(
        log.last().map(|a| a.kind.as_str()),
        Some("addon.add_failed")
    );

    let mut s = day2(OperationKind::UpdateAddon);
    let cmds = drain(&mut s);
    report(&mut s, &cmds[0], terminal("AddonNotAvailable"));
    assert!(drain(&mut s).is_empty(), "the running version stays");
    assert_eq!(s.state, OperationState::Failed);

    let mut s = day2(OperationKind::RemoveAddon);
    let (cmds, log) = split(&mut s);
    assert_eq!(ids(&cmds), ["controlplane.addon.logging:undo"]);
    assert_eq!(log[0].kind, "addon.removing");
}

#[test]
fn an_upgrade_that_fails_its_rollout_undoes_nothing() {
    let mut s = day2(OperationKind::UpdateCluster);
    let cmds = drain(&mut s);
    assert_eq!(ids(&cmds), ["controlplane.hostedcluster:do"]);
    report(&mut s, &cmds[0], ok(&[("hosted_cluster_id", "hc")]));
    let cmds = drain(&mut s);
    assert_eq!(ids(&cmds), ["controlplane.rollout:do"]);
    report(&mut s, &cmds[0], terminal("HostedClusterInvalid"));
    assert!(drain(&mut s).is_empty());
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(
        state_of(&s, "controlplane.hostedcluster"),
        StepState::Succeeded
    );
}

#[test]
fn an_upgrade_past_its_deadline_stops_and_takes_its_wait_back() {
    let mut s = day2(OperationKind::UpdateCluster);
    let cmds = drain(&mut s);
    report(&mut s, &cmds[0], ok(&[]));
    let cmds = drain(&mut s);
    let waiting = Outcome::Waiting {
        message: "history Partial".into(),
        recheck_after_ms: 5_000,
        memo: Value::Null,
    };
    report(&mut s, &cmds[0], waiting);
    s.outbox.clear();
    // The operation's deadline passes before the step's own.
    s.deadline = t0() + Duration::minutes(5);
    s.tick(s.deadline + Duration::seconds(1));
    let (cmds, log) = split(&mut s);
    assert!(cmds.is_empty());
    assert_eq!(s.state, OperationState::Failed);
    assert!(log.iter().any(|a| a.kind == "step.cancelled"), "{log:?}");
    assert_eq!(s.cluster_phase(), ClusterPhase::Ready);
}

#[test]
fn a_pool_delete_runs_the_undo_and_the_cluster_stops_owning_the_pool() {
    let mut s = day2(OperationKind::DeleteNodePool);
    let (cmds, log) = split(&mut s);
    assert_eq!(ids(&cmds), ["nodepool.workers:undo"]);
    assert_eq!(log[0].kind, "node_pool.deleting");
    report(&mut s, &cmds[0], ok(&[]));
    assert_eq!(s.state, OperationState::Succeeded);
    assert_eq!(s.cluster_phase(), ClusterPhase::Ready);
    let mut owned = BTreeMap::from([
        ("nodepool.workers".to_owned(), BTreeMap::new()),
        ("network.vnet".to_owned(), BTreeMap::new()),
    ]);
    s.owned_after(&mut owned);
    assert_eq!(owned.keys().collect::<Vec<_>>(), ["network.vnet"]);
}

#[test]
fn what_a_day2_step_makes_replaces_what_the_cluster_owned() {
    let mut s = day2(OperationKind::UpdateNodePool);
    let cmds = drain(&mut s);
    report(
        &mut s,
        &cmds[0],
        ok(&[("node_pool_id", "np"), ("version", "4.22.0")]),
    );
    let mut owned = BTreeMap::from([
        (
            "nodepool.workers".to_owned(),
            BTreeMap::from([("version".to_owned(), json!("4.21.0"))]),
        ),
        (
            "network.vnet".to_owned(),
            BTreeMap::from([("vnet_id".to_owned(), json!("v"))]),
        ),
    ]);
    s.owned_after(&mut owned);
    assert_eq!(owned["nodepool.workers"]["version"], "4.22.0");
    assert_eq!(owned["network.vnet"]["vnet_id"], "v");
    let resources =
        hypersaga_model::record::resources_of(owned.iter().map(|(k, v)| (k.as_str(), v)));
    assert_eq!(
        resources.get("node_pool/workers").map(String::as_str),
        Some("np")
    );
}

#[test]
fn what_an_operation_started_from_and_did_not_touch_stays_owned() {
    // A record written before it kept what the cluster owns: the saga started from the
    // create's outputs, and the record learns them from it.
    let mut s = day2(OperationKind::UpdateNodePool);
    s.context.outputs.insert(
        "network.vnet".into(),
        BTreeMap::from([("vnet_id".to_owned(), json!("v"))]),
    );
    let mut owned = BTreeMap::new();
    s.owned_after(&mut owned);
    assert_eq!(owned["network.vnet"]["vnet_id"], "v");
}
