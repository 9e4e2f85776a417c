use super::*;
use crate::plan::{self, create_plan};
use hypersaga_model::{ClusterSpec, Names, NetworkSpec, NodePoolSpec};

fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
}

fn spec() -> ClusterSpec {
    ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: "quay.io/x:1".into(),
        node_pools: vec![NodePoolSpec { name: "workers".into(), replicas: 2, vm_size: "Standard_D4s_v5".into() }],
        network: NetworkSpec::default(),
    }
}

fn saga(kind: OperationKind) -> Saga {
    let tenant = TenantId::new("acme").unwrap();
    let spec = spec();
    let names = Names::new(&tenant, "demo", "demo-abcde", &spec.base_domain);
    Saga::new(
        NewSaga {
            id: "op1".into(),
            tenant,
            cluster: "demo".into(),
            kind,
            plan: create_plan(&spec),
            context: StepContext { cluster_uid: "uid".into(), names, spec, outputs: Default::default() },
            retry: RetryPolicy { max_attempts: 3, base_delay_ms: 1000, max_delay_ms: 10_000 },
            timeout: Duration::minutes(60),
            request_id: None,
            actor: "tenant:acme".into(),
            trace_id: "t".into(),
        },
        t0(),
    )
}

/// Takes the commands out of the outbox, as the coordinator does after publishing.
fn drain(s: &mut Saga) -> Vec<StepCommand> {
    s.outbox
        .drain(..)
        .filter_map(|e| match e {
            Effect::Command(c) => Some(*c),
            Effect::Audit(_) => None,
        })
        .collect()
}

fn ids(cmds: &[StepCommand]) -> Vec<String> {
    let mut v: Vec<String> = cmds.iter().map(|c| format!("{}:{}", c.step, c.action.as_str())).collect();
    v.sort();
    v
}

fn report(s: &mut Saga, cmd: &StepCommand, outcome: Outcome) -> Applied {
    s.apply(&StepEvent::new(cmd, outcome), t0())
}

fn ok(outputs: &[(&str, &str)]) -> Outcome {
    Outcome::Succeeded { outputs: outputs.iter().map(|(k, v)| ((*k).into(), Value::from(*v))).collect() }
}

/// Runs every dispatched command to success until nothing is left; returns the order.
fn run_all_ok(s: &mut Saga) -> Vec<Vec<String>> {
    let mut waves = Vec::new();
    let mut pending = drain(s);
    while !pending.is_empty() {
        waves.push(ids(&pending));
        for c in &pending {
            report(s, c, ok(&[(&format!("{}_id", c.step.replace('.', "-")), "x")]));
        }
        pending = drain(s);
    }
    waves
}

fn state_of(s: &Saga, id: &str) -> StepState {
    s.steps.iter().find(|x| x.id == id).unwrap().state
}

#[test]
fn create_runs_independent_branches_in_parallel_and_finishes_ready() {
    let mut s = saga(OperationKind::Create);
    assert_eq!(s.advance(t0()), Applied::Changed);
    let waves = run_all_ok(&mut s);
    assert_eq!(waves[0], vec!["identity.oidc:do", "network.resource-groups:do"]);
    assert_eq!(
        waves[1],
        vec!["dns.private-zone:do", "identity.workload:do", "network.nsg:do", "network.public-ip:do"]
    );
    assert_eq!(waves[2], vec!["network.load-balancer:do", "network.vnet:do"]);
    assert_eq!(waves[3], vec!["dns.vnet-link:do"]);
    assert_eq!(waves[4], vec!["controlplane.hostedcluster:do"]);
    assert_eq!(waves[5], vec!["dns.records:do", "nodepool.workers:do"]);
    assert_eq!(s.state, OperationState::Succeeded);
    assert_eq!(s.cluster_phase(), ClusterPhase::Ready);
    assert!(s.resources().contains_key("network-vnet"));
}

#[test]
fn audit_sequence_is_gapless_and_ends_with_ready() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let mut audits = Vec::new();
    loop {
        let effects: Vec<Effect> = s.outbox.drain(..).collect();
        let cmds: Vec<StepCommand> = effects
            .into_iter()
            .filter_map(|e| match e {
                Effect::Command(c) => Some(*c),
                Effect::Audit(a) => {
                    audits.push(*a);
                    None
                }
            })
            .collect();
        if cmds.is_empty() {
            break;
        }
        for c in &cmds {
            report(&mut s, c, ok(&[]));
        }
    }
    let seqs: Vec<u64> = audits.iter().map(|a| a.seq).collect();
    assert_eq!(seqs, (1..=audits.len() as u64).collect::<Vec<_>>());
    assert_eq!(audits.first().unwrap().kind, "cluster.accepted");
    assert_eq!(audits.last().unwrap().kind, "cluster.ready");
}

#[test]
fn retryable_failure_is_retried_with_backoff_then_succeeds() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let rg = first.iter().find(|c| c.step == plan::RESOURCE_GROUPS).unwrap().clone();
    let mut err = StepError::retryable("TooManyRequests", "slow down");
    err.retry_after_ms = Some(5_000);
    report(&mut s, &rg, Outcome::Failed { error: err });
    let retry = drain(&mut s);
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].attempt, 2);
    assert!(retry[0].not_before.unwrap() >= t0() + Duration::seconds(5), "Retry-After honoured");
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Running);
    // A late report of attempt 1 changes nothing.
    assert_eq!(report(&mut s, &rg, ok(&[])), Applied::Ignored("stale or duplicate report"));
    report(&mut s, &retry[0], ok(&[]));
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Succeeded);
    assert_eq!(s.steps.iter().find(|x| x.id == plan::RESOURCE_GROUPS).unwrap().attempts, 2);
}

#[test]
fn duplicate_success_reports_are_ignored() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    assert_eq!(report(&mut s, &first[0], ok(&[])), Applied::Changed);
    assert_eq!(report(&mut s, &first[0], ok(&[])), Applied::Ignored("stale or duplicate report"));
}

#[test]
fn terminal_failure_compensates_in_reverse_order_and_keeps_identities() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    // Run until the private zone is dispatched, then fail it terminally.
    let mut pending = drain(&mut s);
    let zone = loop {
        let mut next = Vec::new();
        let mut zone = None;
        for c in pending {
            if c.step == plan::PRIVATE_ZONE {
                zone = Some(c);
            } else {
                next.push(c);
            }
        }
        if let Some(z) = zone {
            // Let the parallel branches finish first, as they would.
            for c in &next {
                report(&mut s, c, ok(&[]));
            }
            break z;
        }
        for c in &next {
            report(&mut s, c, ok(&[]));
        }
        pending = drain(&mut s);
    };
    let denied = StepError::terminal("AuthorizationFailed", "no").with_target("privateDnsZones");
    report(&mut s, &zone, Outcome::Failed { error: denied });
    assert_eq!(s.state, OperationState::Compensating);
    assert_eq!(s.cluster_phase(), ClusterPhase::Compensating);
    // Steps still running forward report back, then compensation proceeds.
    let mut undo_waves = Vec::new();
    let mut pending = drain(&mut s);
    while !pending.is_empty() {
        let (undos, dos): (Vec<_>, Vec<_>) = pending.into_iter().partition(|c| c.action == Action::Undo);
        if !undos.is_empty() {
            undo_waves.push(ids(&undos));
        }
        for c in dos.iter().chain(undos.iter()) {
            report(&mut s, c, ok(&[]));
        }
        pending = drain(&mut s);
    }
    let flat: Vec<String> = undo_waves.concat();
    let pos = |id: &str| flat.iter().position(|x| x == &format!("{id}:undo")).unwrap_or_else(|| panic!("{id} not undone: {flat:?}"));
    assert!(pos(plan::VNET) < pos(plan::NSG));
    assert!(pos(plan::NSG) < pos(plan::RESOURCE_GROUPS));
    assert!(pos(plan::LOAD_BALANCER) < pos(plan::PUBLIC_IP));
    assert!(pos(plan::PRIVATE_ZONE) < pos(plan::RESOURCE_GROUPS), "the failed step's partial work is undone too");
    assert!(!flat.iter().any(|x| x.starts_with("identity.")), "identities are never undone");
    assert_eq!(state_of(&s, plan::WORKLOAD_IDENTITIES), StepState::Kept);
    assert_eq!(state_of(&s, plan::HOSTED_CLUSTER), StepState::Skipped);
    assert_eq!(s.state, OperationState::Failed);
    let err = s.error.clone().unwrap();
    assert_eq!((err.code.as_str(), err.step.as_deref()), ("AuthorizationFailed", Some(plan::PRIVATE_ZONE)));
    assert_eq!(s.cluster_phase(), ClusterPhase::Failed);
}

#[test]
fn exhausted_retries_fail_the_step() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let mut cmd = drain(&mut s).into_iter().find(|c| c.step == plan::OIDC).unwrap();
    for _ in 0..3 {
        report(&mut s, &cmd, Outcome::Failed { error: StepError::retryable("InternalServerError", "boom") });
        if let Some(next) = drain(&mut s).into_iter().find(|c| c.step == plan::OIDC && c.action == Action::Do) {
            cmd = next;
        }
    }
    assert_eq!(state_of(&s, plan::OIDC), StepState::Kept);
    assert!(matches!(s.state, OperationState::Compensating | OperationState::Failed));
    assert_eq!(s.steps.iter().find(|x| x.id == plan::OIDC).unwrap().attempts, 3);
}

#[test]
fn delete_undoes_everything_in_reverse_and_keeps_identities() {
    let mut s = saga(OperationKind::Delete);
    assert_eq!(s.cluster_phase(), ClusterPhase::Deleting);
    s.advance(t0());
    let waves = run_all_ok(&mut s);
    assert_eq!(waves[0], vec!["dns.records:undo", "nodepool.workers:undo"]);
    assert_eq!(waves[1], vec!["controlplane.hostedcluster:undo"]);
    assert_eq!(waves[2], vec!["dns.vnet-link:undo", "network.load-balancer:undo"]);
    assert_eq!(waves.last().unwrap(), &vec!["network.resource-groups:undo".to_string()]);
    assert!(!waves.concat().iter().any(|x| x.starts_with("identity.")));
    assert_eq!(s.state, OperationState::Succeeded);
    assert_eq!(s.cluster_phase(), ClusterPhase::Deleted);
}

#[test]
fn failed_undo_leaves_the_delete_failed_and_names_what_is_left() {
    let mut s = saga(OperationKind::Delete);
    s.advance(t0());
    let first = drain(&mut s);
    for c in &first {
        let outcome = if c.step == plan::DNS_RECORDS {
            Outcome::Failed { error: StepError::terminal("AuthorizationFailed", "no") }
        } else {
            ok(&[])
        };
        report(&mut s, c, outcome);
    }
    // Everything not below the failed records step is still removed; the zone the records
    // live in stays until they are gone.
    let _ = run_all_ok(&mut s);
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(state_of(&s, plan::PRIVATE_ZONE), StepState::Pending);
    assert_eq!(s.error.as_ref().unwrap().step.as_deref(), Some(plan::DNS_RECORDS));
}

#[test]
fn deadline_compensates_a_create() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let _ = drain(&mut s);
    assert_eq!(s.tick(t0() + Duration::minutes(1)), Applied::Ignored("nothing ready"));
    assert_eq!(s.tick(t0() + Duration::minutes(61)), Applied::Changed);
    assert_eq!(s.state, OperationState::Compensating);
    assert_eq!(s.error.as_ref().unwrap().code, "OperationDeadlineExceeded");
    // Ticking again changes nothing more.
    assert_eq!(s.tick(t0() + Duration::minutes(62)), Applied::Ignored("nothing ready"));
}

#[test]
fn saga_round_trips_through_json() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let json = serde_json::to_vec(&s).unwrap();
    let back: Saga = serde_json::from_slice(&json).unwrap();
    assert_eq!(back.steps, s.steps);
    assert_eq!(back.outbox.len(), s.outbox.len());
}

#[test]
fn a_persistent_step_finishing_during_compensation_is_kept() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let oidc = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    let rgs = first.iter().find(|c| c.step == plan::RESOURCE_GROUPS).unwrap().clone();
    report(&mut s, &rgs, Outcome::Failed { error: StepError::terminal("AuthorizationFailed", "no") });
    assert_eq!(s.state, OperationState::Compensating);
    assert_eq!(state_of(&s, plan::WORKLOAD_IDENTITIES), StepState::Skipped);
    report(&mut s, &oidc, ok(&[("issuer_url", "https://issuer")]));
    assert_eq!(state_of(&s, plan::OIDC), StepState::Kept);
    let _ = run_all_ok(&mut s);
    assert_eq!(s.state, OperationState::Failed);
}
