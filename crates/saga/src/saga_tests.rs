use super::*;
use crate::plan::create_plan;
use hypersaga_bus::{
    Action, OperatorAction, OperatorCall, Outcome, StepCommand, StepContext, StepError, StepEvent,
};
use hypersaga_model::record::{OperationKind, OperationState, StepState};
use hypersaga_model::{ClusterPhase, ClusterSpec, Names, NetworkSpec, NodePoolSpec, TenantId};
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

/// The create plan's step ids as the saga record spells them (pinned: the record, the
/// commands and the events keep them byte for byte).
mod plan {
    pub const PUBLIC_ZONE: &str = "dns.public-zone";
    pub const OIDC: &str = "identity.oidc";
    pub const WORKLOAD_IDENTITIES: &str = "identity.workload";
    pub const RESOURCE_GROUPS: &str = "network.resource-groups";
    pub const NSG: &str = "network.nsg";
    pub const VNET: &str = "network.vnet";
    pub const PUBLIC_IP: &str = "network.public-ip";
    pub const LOAD_BALANCER: &str = "network.load-balancer";
    pub const PRIVATE_ZONE: &str = "dns.private-zone";
    pub const HOSTED_CLUSTER: &str = "controlplane.hostedcluster";
    pub const DNS_RECORDS: &str = "dns.records";
}

#[test]
fn pinned_ids_are_the_typed_ones() {
    use hypersaga_bus::StepId;
    for (pinned, id) in [
        (plan::OIDC, StepId::Oidc),
        (plan::WORKLOAD_IDENTITIES, StepId::WorkloadIdentities),
        (plan::RESOURCE_GROUPS, StepId::ResourceGroups),
        (plan::NSG, StepId::Nsg),
        (plan::VNET, StepId::Vnet),
        (plan::PUBLIC_IP, StepId::PublicIp),
        (plan::LOAD_BALANCER, StepId::LoadBalancer),
        (plan::PRIVATE_ZONE, StepId::PrivateZone),
        (plan::HOSTED_CLUSTER, StepId::HostedCluster),
        (plan::DNS_RECORDS, StepId::DnsRecords),
    ] {
        assert_eq!(pinned, id.to_string());
    }
}

fn t0() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
}

fn spec() -> ClusterSpec {
    ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: "quay.io/x:1".into(),
        node_pools: vec![NodePoolSpec::new("workers", 2, "Standard_D4s_v5")],
        network: NetworkSpec::default(),
        addons: Vec::new(),
    }
}

/// A saga of the create plan without its first step, the public zone's look-up (most tests
/// are about what comes after it; [`full_saga`] has it).
fn saga(kind: OperationKind) -> Saga {
    let mut plan = create_plan(&spec(), crate::Retain::default());
    plan.retain(|s| s.id != plan::PUBLIC_ZONE);
    for s in &mut plan {
        s.deps.retain(|d| d != plan::PUBLIC_ZONE);
    }
    saga_of(kind, plan)
}

/// A saga of the whole create plan.
fn full_saga(kind: OperationKind) -> Saga {
    saga_of(kind, create_plan(&spec(), crate::Retain::default()))
}

fn saga_of(kind: OperationKind, plan: Vec<crate::StepDef>) -> Saga {
    let tenant = TenantId::new("acme").unwrap();
    let spec = spec();
    let names = Names::new(&tenant, "demo", "demo-abcde", &spec.base_domain);
    Saga::new(
        NewSaga {
            id: "op1".into(),
            tenant,
            cluster: "demo".into(),
            kind,
            plan,
            context: StepContext {
                cluster_uid: "uid".into(),
                names,
                spec,
                outputs: Default::default(),
                management_cluster: "default".into(),
            },
            retry: RetryPolicy {
                max_attempts: 3,
                base_delay_ms: 1000,
                max_delay_ms: 10_000,
            },
            timing: Timing {
                lease_ms: 30_000,
                start_lease_ms: 60_000,
                step_timeout_s: 600,
                recheck_min_ms: 500,
                recheck_max_ms: 30_000,
            },
            timeout: Duration::minutes(60),
            request_id: None,
            actor: "tenant:acme".into(),
            trace_id: "t".into(),
            after: None,
            node_pool: None,
            addon: None,
        },
        t0(),
    )
}

/// Takes the commands out of the outbox, as the coordinator does after publishing.
fn drain(s: &mut Saga) -> Vec<StepCommand> {
    let cmds = s.outbox_commands();
    s.outbox.clear();
    cmds
}

fn ids(cmds: &[StepCommand]) -> Vec<String> {
    let mut v: Vec<String> = cmds
        .iter()
        .map(|c| format!("{}:{}", c.step, c.action.as_str()))
        .collect();
    v.sort();
    v
}

fn report(s: &mut Saga, cmd: &StepCommand, outcome: Outcome) -> Applied {
    s.apply(&StepEvent::new(cmd, outcome), t0())
}

fn ok(outputs: &[(&str, &str)]) -> Outcome {
    Outcome::Succeeded {
        outputs: outputs
            .iter()
            .map(|(k, v)| ((*k).into(), Value::from(*v)))
            .collect(),
    }
}

/// Runs every dispatched command to success until nothing is left; returns the order.
fn run_all_ok(s: &mut Saga) -> Vec<Vec<String>> {
    let mut waves = Vec::new();
    let mut pending = drain(s);
    while !pending.is_empty() {
        waves.push(ids(&pending));
        for c in &pending {
            report(
                s,
                c,
                ok(&[(&format!("{}_id", c.step.replace('.', "-")), "x")]),
            );
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
    let mut s = full_saga(OperationKind::Create);
    assert_eq!(s.advance(t0()), Applied::Changed);
    let mut waves = run_all_ok(&mut s);
    // The user's public zone is looked up before anything is written.
    assert_eq!(waves.remove(0), vec!["dns.public-zone:do"]);
    assert_eq!(
        waves[0],
        vec!["identity.oidc:do", "network.resource-groups:do"]
    );
    assert_eq!(
        waves[1],
        vec![
            "dns.private-zone:do",
            "identity.workload:do",
            "network.nsg:do",
            "network.public-ip:do"
        ]
    );
    assert_eq!(
        waves[2],
        vec![
            "identity.role-assignments:do",
            "network.load-balancer:do",
            "network.vnet:do"
        ]
    );
    assert_eq!(waves[3], vec!["dns.vnet-link:do"]);
    assert_eq!(waves[4], vec!["controlplane.hostedcluster:do"]);
    assert_eq!(waves[5], vec!["dns.records:do", "nodepool.workers:do"]);
    // Ready once the release has rolled out on the nodes.
    assert_eq!(waves[6], vec!["controlplane.rollout:do"]);
    assert_eq!(waves.len(), 7);
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
        let cmds = s.outbox_commands();
        for e in s.outbox.drain(..) {
            if let Effect::Audit(a) = e {
                audits.push(*a);
            }
        }
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
    let rg = first
        .iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap()
        .clone();
    let mut err = StepError::retryable("TooManyRequests", "slow down");
    err.retry_after_ms = Some(5_000);
    report(&mut s, &rg, Outcome::Failed { error: err });
    let retry = drain(&mut s);
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].attempt, 2);
    assert!(
        retry[0].not_before.unwrap() >= t0() + Duration::seconds(5),
        "Retry-After honoured"
    );
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Running);
    // A late report of attempt 1 changes nothing.
    assert_eq!(
        report(&mut s, &rg, ok(&[])),
        Applied::Ignored("stale or duplicate report")
    );
    report(&mut s, &retry[0], ok(&[]));
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Succeeded);
    assert_eq!(
        s.steps
            .iter()
            .find(|x| x.id == plan::RESOURCE_GROUPS)
            .unwrap()
            .attempts,
        2
    );
}

#[test]
fn duplicate_success_reports_are_ignored() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    assert_eq!(report(&mut s, &first[0], ok(&[])), Applied::Changed);
    assert_eq!(
        report(&mut s, &first[0], ok(&[])),
        Applied::Ignored("stale or duplicate report")
    );
}

#[test]
fn terminal_failure_compensates_in_reverse_order_but_the_issuer() {
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
        let (undos, dos): (Vec<_>, Vec<_>) =
            pending.into_iter().partition(|c| c.action == Action::Undo);
        if !undos.is_empty() {
            undo_waves.push(ids(&undos));
        }
        for c in dos.iter().chain(undos.iter()) {
            report(&mut s, c, ok(&[]));
        }
        pending = drain(&mut s);
    }
    let flat: Vec<String> = undo_waves.concat();
    let pos = |id: &str| {
        flat.iter()
            .position(|x| x == &format!("{id}:undo"))
            .unwrap_or_else(|| panic!("{id} not undone: {flat:?}"))
    };
    assert!(pos(plan::VNET) < pos(plan::NSG));
    assert!(pos(plan::NSG) < pos(plan::RESOURCE_GROUPS));
    assert!(pos(plan::LOAD_BALANCER) < pos(plan::PUBLIC_IP));
    assert!(
        pos(plan::PRIVATE_ZONE) < pos(plan::RESOURCE_GROUPS),
        "the failed step's partial work is undone too"
    );
    assert!(
        !flat.iter().any(|x| x.starts_with("identity.oidc")),
        "the tenant's issuer is never undone"
    );
    let _the_cluster_identities_are_removed = pos(plan::WORKLOAD_IDENTITIES);
    assert_eq!(
        state_of(&s, plan::WORKLOAD_IDENTITIES),
        StepState::Compensated
    );
    assert_eq!(state_of(&s, plan::HOSTED_CLUSTER), StepState::Skipped);
    assert_eq!(s.state, OperationState::Failed);
    let err = s.error.clone().unwrap();
    assert_eq!(
        (err.code.as_str(), err.step.as_deref()),
        ("AuthorizationFailed", Some(plan::PRIVATE_ZONE))
    );
    assert_eq!(s.cluster_phase(), ClusterPhase::Failed);
}

#[test]
fn exhausted_retries_pause_the_saga_with_the_reason() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::OIDC)
        .unwrap();
    exhaust_retries(&mut s, cmd);
    assert_eq!(state_of(&s, plan::OIDC), StepState::Failed);
    assert_eq!(
        s.state,
        OperationState::Running,
        "not compensated: a pause keeps everything as it is"
    );
    assert_eq!(s.visible_state(), OperationState::Paused);
    let pause = s.pause.clone().expect("paused");
    assert_eq!(pause.steps, vec![plan::OIDC.to_string()]);
    assert_eq!(
        (pause.reason.code.as_str(), pause.reason.step.as_deref()),
        ("InternalServerError", Some(plan::OIDC))
    );
    assert_eq!(
        s.steps
            .iter()
            .find(|x| x.id == plan::OIDC)
            .unwrap()
            .attempts,
        3
    );
    let view = s.view();
    assert_eq!(view.state, OperationState::Paused);
    assert_eq!(view.pause.unwrap().reason.code, "InternalServerError");
    // A paused saga dispatches nothing, even when other steps finish.
    assert_eq!(s.advance(t0()), Applied::Ignored("saga is paused"));
}

#[test]
fn delete_undoes_everything_in_reverse_but_the_issuer() {
    let mut s = saga(OperationKind::Delete);
    assert_eq!(s.cluster_phase(), ClusterPhase::Deleting);
    s.advance(t0());
    let waves = run_all_ok(&mut s);
    assert_eq!(waves[0], vec!["dns.records:undo", "nodepool.workers:undo"]);
    assert_eq!(waves[1], vec!["controlplane.hostedcluster:undo"]);
    // The grants go once nothing that uses them is left, then the identities.
    assert_eq!(
        waves[2],
        vec![
            "dns.vnet-link:undo",
            "identity.role-assignments:undo",
            "network.load-balancer:undo"
        ]
    );
    let wave_of = |id: &str| waves.iter().position(|w| w.iter().any(|x| x == id));
    assert!(wave_of("identity.workload:undo") > wave_of("identity.role-assignments:undo"));
    assert_eq!(
        waves.last().unwrap(),
        &vec!["network.resource-groups:undo".to_string()]
    );
    assert!(
        !waves
            .concat()
            .iter()
            .any(|x| x.starts_with("identity.oidc"))
    );
    assert_eq!(s.state, OperationState::Succeeded);
    assert_eq!(s.cluster_phase(), ClusterPhase::Deleted);
}

#[test]
fn a_failed_undo_pauses_the_delete_and_abandon_names_what_is_left() {
    let mut s = saga(OperationKind::Delete);
    s.advance(t0());
    let first = drain(&mut s);
    for c in &first {
        let outcome = if c.step == plan::DNS_RECORDS {
            Outcome::Failed {
                error: StepError::terminal("AuthorizationFailed", "no"),
            }
        } else {
            ok(&[])
        };
        report(&mut s, c, outcome);
    }
    // The delete stops where it failed: nothing more is dispatched until an operator acts.
    assert_eq!(s.visible_state(), OperationState::Paused);
    assert!(drain(&mut s).is_empty(), "a paused saga dispatches nothing");
    s.operate(&call(OperatorAction::Abandon, None), t0())
        .unwrap();
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(s.error.as_ref().unwrap().code, "Abandoned");
    assert!(
        s.error
            .as_ref()
            .unwrap()
            .message
            .contains("AuthorizationFailed"),
        "{:?}",
        s.error
    );
    assert_eq!(state_of(&s, plan::PRIVATE_ZONE), StepState::Pending);
    let last = audits(&mut s).pop().unwrap();
    assert_eq!(last.kind, "cluster.delete_failed");
    assert!(
        last.detail["not_undone"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == plan::PRIVATE_ZONE),
        "{}",
        last.detail
    );
}

#[test]
fn deadline_compensates_a_create() {
    let mut s = saga(OperationKind::Create);
    // Steps that keep their leases and deadlines: only the operation's own deadline is due.
    s.timing = Timing {
        lease_ms: 7_200_000,
        start_lease_ms: 7_200_000,
        step_timeout_s: 7_200,
        ..s.timing
    };
    s.advance(t0());
    let _ = drain(&mut s);
    assert_eq!(s.next_due(), Some(t0() + Duration::minutes(60)));
    assert_eq!(
        s.tick(t0() + Duration::minutes(1)),
        Applied::Ignored("nothing due")
    );
    assert_eq!(s.tick(t0() + Duration::minutes(61)), Applied::Changed);
    assert_eq!(s.state, OperationState::Compensating);
    assert_eq!(s.error.as_ref().unwrap().code, "OperationDeadlineExceeded");
    // Ticking again changes nothing more.
    assert_eq!(
        s.tick(t0() + Duration::minutes(62)),
        Applied::Ignored("nothing due")
    );
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
fn a_missing_public_zone_fails_the_create_before_anything_is_written() {
    let mut s = full_saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    assert_eq!(ids(&first), vec!["dns.public-zone:do"]);
    let missing = StepError::terminal("PublicZoneNotFound", "no zone example.com")
        .with_target("spec.base_domain");
    report(&mut s, &first[0], Outcome::Failed { error: missing });
    // Nothing ran, so nothing is undone: the create ends failed with the reason.
    let _ = run_all_ok(&mut s);
    assert_eq!(s.state, OperationState::Failed);
    assert!(
        s.steps
            .iter()
            .filter(|x| x.id != plan::PUBLIC_ZONE)
            .all(|x| x.state == StepState::Skipped),
        "{:?}",
        s.steps.iter().map(|x| (&x.id, x.state)).collect::<Vec<_>>()
    );
    assert_eq!(
        s.error.as_ref().map(|e| e.code.as_str()),
        Some("PublicZoneNotFound")
    );
}

#[test]
fn a_persistent_step_finishing_during_compensation_is_kept() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let oidc = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    let rgs = first
        .iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap()
        .clone();
    report(
        &mut s,
        &rgs,
        Outcome::Failed {
            error: StepError::terminal("AuthorizationFailed", "no"),
        },
    );
    assert_eq!(s.state, OperationState::Compensating);
    assert_eq!(state_of(&s, plan::WORKLOAD_IDENTITIES), StepState::Skipped);
    report(&mut s, &oidc, ok(&[("issuer_url", "https://issuer")]));
    assert_eq!(state_of(&s, plan::OIDC), StepState::Kept);
    let _ = run_all_ok(&mut s);
    assert_eq!(s.state, OperationState::Failed);
}

fn call(action: OperatorAction, step: Option<&str>) -> OperatorCall {
    OperatorCall {
        v: 1,
        tenant: TenantId::new("acme").unwrap(),
        saga_id: "op1".into(),
        action,
        step: step.map(str::to_owned),
        actor: "operator:jane".into(),
        call_id: "c1".into(),
    }
}

/// Commands and audit events of the outbox, drained.
fn split(s: &mut Saga) -> (Vec<StepCommand>, Vec<hypersaga_bus::AuditEvent>) {
    let cmds = s.outbox_commands();
    let log = audits(s);
    (cmds, log)
}

fn audits(s: &mut Saga) -> Vec<hypersaga_bus::AuditEvent> {
    s.outbox
        .drain(..)
        .filter_map(|e| match e {
            Effect::Audit(a) => Some(*a),
            Effect::Command(_)
            | Effect::Dispatch { .. }
            | Effect::Schedule { .. }
            | Effect::Wake { .. } => None,
        })
        .collect()
}

fn step(s: &Saga, id: &str) -> StepRecord {
    s.steps.iter().find(|x| x.id == id).unwrap().clone()
}

#[test]
fn throttling_is_waited_out_without_spending_an_attempt() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let mut cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap();
    let mut throttled_audits = 0;
    // Far more 429s than the retry budget allows: none of them counts.
    for _ in 0..10 {
        let error = StepError::throttled("SubscriptionRequestsThrottled", "slow down", 6_000);
        assert_eq!(
            report(&mut s, &cmd, Outcome::Failed { error }),
            Applied::Changed
        );
        let (next, log) = split(&mut s);
        throttled_audits += log.iter().filter(|a| a.kind == "step.throttled").count();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].attempt, 1, "no attempt spent");
        assert!(next[0].fence > cmd.fence, "a new fence for every dispatch");
        let wait = next[0].not_before.unwrap() - t0();
        assert!(
            wait >= Duration::seconds(6) && wait <= Duration::milliseconds(7_500),
            "{wait}"
        );
        cmd = next[0].clone();
    }
    assert_eq!(step(&s, plan::RESOURCE_GROUPS).throttled, 10);
    assert!(s.pause.is_none());
    assert_eq!(throttled_audits, 10, "each wait is on the audit stream");
    report(&mut s, &cmd, ok(&[]));
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Succeeded);
}

#[test]
fn time_spent_waiting_for_the_shared_arm_budget_does_not_count_against_a_steps_deadline() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap();
    let deadline = step(&s, plan::RESOURCE_GROUPS).deadline.unwrap();
    // The worker deferred the command 40 s for its subscription's budget, then slept 20 s
    // in its requests' slots: a minute that was not the step's own.
    for (at, paced_ms) in [(10, 40_000), (70, 20_000)] {
        let note = Outcome::Progress {
            message: "ensuring 2 resource groups".into(),
            paced_ms,
        };
        s.apply(&StepEvent::new(&cmd, note), t0() + Duration::seconds(at));
    }
    // ARM then throttled it; the coordinator waits its delay out before sending it again.
    let error = StepError::throttled("SubscriptionRequestsThrottled", "slow down", 6_000);
    report(&mut s, &cmd, Outcome::Failed { error });
    let again = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap();
    let throttle = again.not_before.unwrap() - t0();
    let rg = step(&s, plan::RESOURCE_GROUPS);
    let paced = Duration::seconds(60) + throttle;
    assert_eq!(rg.deadline, Some(deadline + paced));
    assert_eq!(
        i128::from(rg.paced_ms),
        paced.whole_milliseconds(),
        "the step records what it waited for"
    );

    // Past the old deadline the step runs on (every step keeps waiting meanwhile); past the
    // moved one it pauses, saying both.
    let rg_paused = |s: &Saga| {
        s.pause
            .as_ref()
            .is_some_and(|p| p.steps.iter().any(|id| id == plan::RESOURCE_GROUPS))
    };
    let mut out = vec![again];
    let mut now = t0() + Duration::seconds(70);
    let end = deadline + paced;
    while now + Duration::seconds(20) < end {
        now += Duration::seconds(20);
        for cmd in std::mem::take(&mut out) {
            let waiting = Outcome::Waiting {
                message: "still".into(),
                recheck_after_ms: 20_000,
                memo: Value::Null,
            };
            s.apply(&StepEvent::new(&cmd, waiting), now);
        }
        out = drain(&mut s);
        s.tick(now);
        assert!(!rg_paused(&s), "paused at {now}, before {end}");
    }
    assert!(now > deadline, "the test ran past the first deadline");
    s.tick(end);
    assert!(rg_paused(&s), "paused at {end}");
    let said = format!(
        "did not finish within 600 s (besides {} s waiting for the ARM request budget)",
        rg.paced_ms.div_ceil(1000)
    );
    let error = step(&s, plan::RESOURCE_GROUPS).last_error.expect("why");
    assert!(error.info.message.contains(&said), "{}", error.info.message);
}

#[test]
fn a_report_of_an_older_fence_is_ignored_and_a_newer_one_means_the_record_is_behind() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::OIDC)
        .unwrap();
    let mut ahead = StepEvent::new(&cmd, ok(&[]));
    ahead.fence += 1;
    assert_eq!(s.apply(&ahead, t0()), Applied::Ahead);
    let mut older = StepEvent::new(&cmd, ok(&[]));
    older.fence -= 1;
    assert_eq!(
        s.apply(&older, t0()),
        Applied::Ignored("stale or duplicate report")
    );
    assert_eq!(report(&mut s, &cmd, ok(&[])), Applied::Changed);
}

#[test]
fn a_wait_is_rechecked_later_with_its_memo_and_holds_the_step() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap();
    let waiting = Outcome::Waiting {
        message: "ARM operation InProgress".into(),
        recheck_after_ms: 2_000,
        memo: json!({"op": "https://x/op/1"}),
    };
    assert_eq!(report(&mut s, &cmd, waiting), Applied::Changed);
    let recheck = drain(&mut s);
    assert_eq!(recheck.len(), 1);
    let r = &recheck[0];
    assert_eq!(
        (r.attempt, r.memo.clone()),
        (1, json!({"op": "https://x/op/1"}))
    );
    assert_eq!(r.waiting_since, Some(t0()));
    assert_eq!(r.not_before, Some(t0() + Duration::seconds(2)));
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Running);
    assert_eq!(
        s.view()
            .steps
            .iter()
            .find(|v| v.id == plan::RESOURCE_GROUPS)
            .unwrap()
            .waiting_since,
        Some(t0())
    );
    // The first command's late result is stale now; the re-check's result counts.
    assert_eq!(
        report(&mut s, &cmd, ok(&[])),
        Applied::Ignored("stale or duplicate report")
    );
    // A second wait keeps the first `since`; a re-check asked too soon is spaced to the minimum.
    let again = Outcome::Waiting {
        message: "ARM operation InProgress".into(),
        recheck_after_ms: 1,
        memo: json!({"op": 2}),
    };
    s.apply(&StepEvent::new(r, again), t0() + Duration::seconds(3));
    let r2 = drain(&mut s).pop().unwrap();
    assert_eq!(r2.waiting_since, Some(t0()));
    assert_eq!(
        r2.not_before,
        Some(t0() + Duration::seconds(3) + Duration::milliseconds(500))
    );
    report(&mut s, &r2, ok(&[]));
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Succeeded);
    assert!(step(&s, plan::RESOURCE_GROUPS).wait.is_none());
}

#[test]
fn a_lost_command_is_dispatched_again_once_then_the_saga_pauses() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let oidc = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    // Everything else answers; identity never does.
    let mut pending: Vec<StepCommand> =
        first.into_iter().filter(|c| c.step != plan::OIDC).collect();
    while !pending.is_empty() {
        for c in &pending {
            report(&mut s, c, ok(&[]));
        }
        pending = drain(&mut s);
    }
    assert_eq!(
        s.steps.iter().filter(|x| x.in_flight()).count(),
        1,
        "only the OIDC step is out"
    );
    let due = s.next_due().unwrap();
    assert!(
        due <= t0() + Duration::seconds(60),
        "the start lease is due first: {due}"
    );
    assert_eq!(s.tick(t0() + Duration::seconds(61)), Applied::Changed);
    let again = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::OIDC)
        .expect("re-dispatched");
    assert!(again.fence > oidc.fence);
    assert_eq!(
        again.attempt, oidc.attempt,
        "a lost command is not the step's failure"
    );
    assert!(s.pause.is_none());
    assert_eq!(s.tick(t0() + Duration::seconds(122)), Applied::Changed);
    let pause = s.pause.clone().expect("paused after the second expiry");
    assert_eq!(pause.reason.code, "LeaseExpired");
    assert!(
        pause.reason.message.contains("identity service"),
        "{}",
        pause.reason.message
    );
    assert_eq!(s.visible_state(), OperationState::Paused);
    // The late answer of either dispatch changes nothing now.
    assert_eq!(
        report(&mut s, &again, ok(&[])),
        Applied::Ignored("stale or duplicate report")
    );
    // Resume: dispatched afresh, and the saga runs to the end.
    let _ = audits(&mut s);
    s.operate(
        &call(OperatorAction::Resume, None),
        t0() + Duration::seconds(130),
    )
    .unwrap();
    let (resumed, log) = split(&mut s);
    assert_eq!(log[0].kind, "operator.resume");
    assert_eq!(log[0].actor, "operator:jane");
    assert_eq!(ids(&resumed), vec!["identity.oidc:do"]);
    assert_eq!(resumed[0].attempt, 1);
    for c in &resumed {
        report(&mut s, c, ok(&[("issuer_url", "https://i")]));
    }
    let _ = run_all_ok(&mut s);
    assert_eq!(s.state, OperationState::Succeeded);
}

#[test]
fn a_step_past_its_deadline_pauses_and_retry_step_runs_it_again() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    assert!(first.iter().any(|c| c.step == plan::RESOURCE_GROUPS));
    // Every step keeps waiting (re-checks renew the lease, not the step's deadline).
    let mut out: Vec<StepCommand> = first;
    let mut now = t0();
    while now + Duration::seconds(20) < t0() + Duration::seconds(600) {
        now += Duration::seconds(20);
        for cmd in std::mem::take(&mut out) {
            let waiting = Outcome::Waiting {
                message: "still".into(),
                recheck_after_ms: 20_000,
                memo: Value::Null,
            };
            s.apply(&StepEvent::new(&cmd, waiting), now);
        }
        out = drain(&mut s);
        s.tick(now);
        assert!(s.pause.is_none(), "not yet at {now}");
    }
    assert_eq!(s.tick(t0() + Duration::seconds(601)), Applied::Changed);
    let pause = s.pause.clone().expect("paused");
    assert_eq!(pause.reason.code, "StepDeadlineExceeded");
    assert!(
        pause.reason.message.contains("last: still"),
        "{}",
        pause.reason.message
    );
    let mut paused = pause.steps.clone();
    paused.sort();
    assert_eq!(
        paused,
        vec![plan::OIDC.to_string(), plan::RESOURCE_GROUPS.to_string()]
    );
    assert_eq!(
        s.check_operator(OperatorAction::RetryStep, Some(plan::NSG)),
        Err(Refusal::NotAPausedStep(pause.steps.clone()))
    );
    s.operate(
        &call(OperatorAction::RetryStep, Some(plan::RESOURCE_GROUPS)),
        t0() + Duration::seconds(700),
    )
    .unwrap();
    assert_eq!(
        s.pause.as_ref().unwrap().steps,
        vec![plan::OIDC.to_string()],
        "the other paused step still waits"
    );
    let again = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap();
    assert_eq!(again.attempt, 1);
    assert!(again.waiting_since.is_none(), "a retried step starts over");
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Running);
}

#[test]
fn compensate_turns_a_paused_create_around_and_abandon_keeps_the_record() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let rg = first
        .iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap()
        .clone();
    report(&mut s, &rg, ok(&[]));
    let next = drain(&mut s);
    let nsg = next.iter().find(|c| c.step == plan::NSG).unwrap().clone();
    let others: Vec<StepCommand> = first
        .iter()
        .chain(next.iter())
        .filter(|c| c.step != plan::RESOURCE_GROUPS && c.step != plan::NSG)
        .cloned()
        .collect();
    let cmd = nsg;
    exhaust_retries(&mut s, cmd);
    assert!(s.pause.is_some());
    assert_eq!(s.check_operator(OperatorAction::Compensate, None), Ok(()));
    s.operate(&call(OperatorAction::Compensate, None), t0())
        .unwrap();
    assert_eq!(s.state, OperationState::Compensating);
    assert_eq!(s.error.as_ref().unwrap().code, "InternalServerError");
    // Steps still running forward (oidc, public ip, zone…) report back; then everything is undone.
    for c in &others {
        report(&mut s, c, ok(&[]));
    }
    let _ = run_all_ok(&mut s);
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(
        state_of(&s, plan::NSG),
        StepState::Compensated,
        "the paused step's partial work is undone"
    );
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Compensated);
    assert_eq!(
        s.check_operator(OperatorAction::Abandon, None),
        Err(Refusal::Finished(OperationState::Failed))
    );

    // Abandon applies to a running saga too, and leaves everything where it is.
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let _ = drain(&mut s);
    assert_eq!(
        s.check_operator(OperatorAction::Resume, None),
        Err(Refusal::NotPaused)
    );
    s.operate(&call(OperatorAction::Abandon, None), t0())
        .unwrap();
    assert_eq!(s.state, OperationState::Failed);
    assert_eq!(s.next_due(), None);
    let log = audits(&mut s);
    assert!(
        log.iter()
            .any(|a| a.kind == "operator.abandon" && a.actor == "operator:jane")
    );
    assert_eq!(log.last().unwrap().kind, "cluster.failed");
}

#[test]
fn an_abandoned_saga_wants_nothing_more_of_the_steps_it_left_in_flight() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let running = drain(&mut s);
    assert!(!running.is_empty());
    let record = serde_json::to_vec(&s).unwrap();
    assert!(
        !crate::StepsView::from_record(&record)
            .unwrap()
            .is_finished()
    );
    s.operate(&call(OperatorAction::Abandon, None), t0())
        .unwrap();
    let record = serde_json::to_vec(&s).unwrap();
    let view = crate::StepsView::from_record(&record).unwrap();
    // The steps are left as they were; the operation's end is what a worker's fence reads.
    let step = view.step(&running[0].step).unwrap().unwrap();
    assert!(step.in_flight(), "{step:?}");
    assert!(view.is_finished());
}

#[test]
fn progress_renews_the_lease() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::OIDC)
        .unwrap();
    let at = t0() + Duration::seconds(50);
    let beat = StepEvent::new(
        &cmd,
        Outcome::Progress {
            message: "publishing".into(),
            paced_ms: 0,
        },
    );
    assert_eq!(s.apply(&beat, at), Applied::Changed);
    assert_eq!(
        step(&s, plan::OIDC).lease_until,
        Some(at + Duration::seconds(30))
    );
    s.tick(t0() + Duration::seconds(70));
    let oidc = step(&s, plan::OIDC);
    assert_eq!(
        (oidc.fence, oidc.lease_expiries),
        (cmd.fence, 0),
        "a heartbeat keeps the step its worker's"
    );
}

#[test]
fn next_due_is_none_for_a_finished_or_idle_paused_saga() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let _ = run_all_ok(&mut s);
    assert_eq!(s.next_due(), None);
}

#[test]
fn a_timer_goes_out_only_when_none_armed_fires_soon_enough() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    assert!(s.reschedule(t0()));
    let timers = |s: &Saga| {
        s.outbox
            .iter()
            .filter_map(|e| {
                if let Effect::Schedule { at } = e {
                    Some(*at)
                } else {
                    None
                }
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        timers(&s),
        vec![t0() + Duration::seconds(60)],
        "the first start lease"
    );
    assert!(!s.reschedule(t0()), "unchanged: no second timer");
    let set_leases = |s: &mut Saga, at| {
        for step in s.steps.iter_mut().filter(|st| st.in_flight()) {
            step.lease_until = Some(at);
        }
    };
    // A lease pushed on (a heartbeat, the next step): the armed timer still fires first.
    let later = t0() + Duration::seconds(90);
    set_leases(&mut s, later);
    assert!(!s.reschedule(t0() + Duration::seconds(1)));
    // It fired, found nothing due: its tick arms the next.
    assert!(s.reschedule(t0() + Duration::seconds(60)));
    assert_eq!(timers(&s).last(), Some(&later));
    // Something due before the armed timer: armed at once.
    let sooner = t0() + Duration::seconds(70);
    set_leases(&mut s, sooner);
    assert!(s.reschedule(t0() + Duration::seconds(61)));
    assert_eq!(timers(&s).last(), Some(&sooner));
    let _ = run_all_ok(&mut s);
    let armed = timers(&s).len();
    assert!(!s.reschedule(t0() + Duration::seconds(62)));
    assert_eq!(timers(&s).len(), armed, "a finished saga needs no timer");
}

#[test]
fn once_a_timer_has_fired_the_next_tick_arms_one_whatever_was_recorded() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    assert!(s.reschedule(t0()));
    let armed = s.scheduled.unwrap();
    // An older timer, published again by a late repair, replaced this one on the server and
    // fired early: nothing is due, and without a new timer none would be left.
    let early = armed - Duration::seconds(20);
    assert_eq!(s.tick(early), Applied::Ignored("nothing due"));
    assert!(!s.reschedule(early), "the record alone says one is armed");
    s.timer_fired();
    assert!(s.reschedule(early));
    assert_eq!(s.scheduled, Some(armed));
}

#[test]
fn a_delete_waiting_for_its_create_looks_again_every_30_s() {
    let mut d = saga(OperationKind::Delete);
    d.links.after = Some("op-create".into());
    let look = t0() + Duration::seconds(30);
    assert_eq!(d.next_due(), Some(look));
    assert_eq!(
        d.tick(look - Duration::seconds(1)),
        Applied::Ignored("nothing due")
    );
    // Looked again (the coordinator asked the create once more): the next look is 30 s on,
    // never a time already past, or its timer would fire again at once.
    let late = look + Duration::seconds(7);
    assert_eq!(d.tick(late), Applied::Changed);
    assert_eq!(d.next_due(), Some(late + Duration::seconds(30)));
    assert!(
        drain(&mut d).is_empty(),
        "nothing is dispatched while it waits"
    );
    assert_eq!(d.state, OperationState::Running);
    // Its own deadline runs once it has started: the create's step deadlines bound the wait.
    let past = d.deadline + Duration::minutes(1);
    assert_eq!(d.tick(past), Applied::Changed, "only a look again");
    assert_eq!(d.state, OperationState::Running);
    assert_eq!(d.next_due(), Some(past + Duration::seconds(30)));
    assert_eq!(d.release(&Default::default(), past), Applied::Changed);
    assert_eq!(d.next_due(), Some(d.deadline));
}

#[test]
fn a_create_superseded_before_it_was_built_is_recorded_finished_and_never_runs() {
    let mut d = saga(OperationKind::Delete);
    d.id = "op-delete".into();
    let mut c = d.unbuilt_create("op-create", t0());
    assert_eq!(
        (c.id.as_str(), c.kind),
        ("op-create", OperationKind::Create)
    );
    assert_eq!(c.state, OperationState::Failed);
    assert_eq!(c.links.superseded_by.as_deref(), Some("op-delete"));
    assert_eq!(
        c.error.as_ref().map(|e| e.code.as_str()),
        Some("Superseded")
    );
    assert!(c.steps.iter().all(|s| s.state == StepState::Skipped));
    assert!(c.resources().is_empty() && c.outbox.is_empty());
    assert_eq!(c.next_due(), None);
    // Whatever reaches it, it sends nothing.
    assert_eq!(c.advance(t0()), Applied::Ignored("saga is finished"));
    assert_eq!(c.tick(t0()), Applied::Ignored("saga is finished"));
    assert!(c.outbox.is_empty());
}

#[test]
fn a_busy_service_keeps_its_queued_steps_and_only_a_silent_one_pauses_them() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let oidc = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    let mut now = t0();
    // Long after two start leases, the identity service is still working through a backlog.
    for _ in 0..5 {
        now += Duration::seconds(61);
        assert_eq!(
            s.lapsed_services(now),
            vec!["identity".to_string(), "network".to_string()]
        );
        s.tick_with(now, |svc| svc == "identity" || svc == "network");
    }
    let step_now = step(&s, plan::OIDC);
    assert_eq!(
        (step_now.fence, step_now.lease_expiries),
        (oidc.fence, 0),
        "not re-dispatched, not counted"
    );
    assert!(s.pause.is_none());
    // Then it stops taking anything off its queue.
    now += Duration::seconds(61);
    s.tick_with(now, |_| false);
    assert!(
        step(&s, plan::OIDC).fence > oidc.fence,
        "re-dispatched once"
    );
    now += Duration::seconds(61);
    s.tick_with(now, |_| false);
    assert_eq!(
        s.pause.as_ref().map(|p| p.reason.code.as_str()),
        Some("LeaseExpired")
    );
}

#[test]
fn a_superseded_create_cancels_its_waits_lets_running_steps_report_then_wakes_the_delete() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let oidc = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    let rg = first
        .iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap()
        .clone();
    // The resource groups wait on Azure; the OIDC issuer is being written right now.
    let waiting = Outcome::Waiting {
        message: "ARM operation InProgress".into(),
        recheck_after_ms: 5_000,
        memo: Value::Null,
    };
    report(&mut s, &rg, waiting);
    let recheck = drain(&mut s).pop().unwrap();
    assert_eq!(s.supersede("op-delete", t0()), Applied::Changed);
    assert_eq!(
        state_of(&s, plan::RESOURCE_GROUPS),
        StepState::Failed,
        "the wait is cancelled at once"
    );
    assert_eq!(
        report(&mut s, &recheck, ok(&[])),
        Applied::Ignored("stale or duplicate report")
    );
    assert!(!s.is_finished(), "the running OIDC step reports first");
    assert!(drain(&mut s).is_empty(), "nothing more is dispatched");
    report(&mut s, &oidc, ok(&[("issuer_url", "https://i")]));
    assert!(s.is_finished());
    assert_eq!(s.error.as_ref().unwrap().code, "Superseded");
    let wakes: Vec<String> = s
        .outbox
        .iter()
        .filter_map(|e| {
            if let Effect::Wake { saga_id } = e {
                Some(saga_id.clone())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(wakes, vec!["op-delete".to_string()]);
    let log = audits(&mut s);
    assert_eq!(log.last().unwrap().kind, "operation.superseded");
    assert_eq!(
        s.supersede("op-delete", t0()),
        Applied::Ignored("finished or already superseded")
    );

    // The delete waited; released, it takes over what the create made and starts.
    let mut d = saga(OperationKind::Delete);
    d.links.after = Some("op1".into());
    assert_eq!(
        d.advance(t0()),
        Applied::Ignored("waiting for the superseded operation to stop")
    );
    assert!(drain(&mut d).is_empty());
    assert_eq!(d.release(&s.context.outputs, t0()), Applied::Changed);
    assert_eq!(
        d.context.output(plan::OIDC, "issuer_url"),
        Some("https://i")
    );
    let waves = run_all_ok(&mut d);
    assert_eq!(waves[0], vec!["dns.records:undo", "nodepool.workers:undo"]);
    assert_eq!(d.state, OperationState::Succeeded);
}

#[test]
fn a_paused_create_superseded_ends_at_once() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmd = drain(&mut s)
        .into_iter()
        .find(|c| c.step == plan::OIDC)
        .unwrap();
    let others: Vec<StepCommand> = vec![];
    let _ = others;
    exhaust_retries(&mut s, cmd);
    assert!(s.pause.is_some());
    // The resource groups step is still running: it reports, then the create ends.
    let rg_running = s
        .steps
        .iter()
        .any(|x| x.id == plan::RESOURCE_GROUPS && x.in_flight());
    s.supersede("op-delete", t0());
    assert!(s.pause.is_none());
    assert_eq!(s.is_finished(), !rg_running);
}

#[test]
fn workers_read_the_steps_of_the_stored_record() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let stored = serde_json::to_vec(&s).unwrap();
    let view = crate::StepsView::from_record(&stored).unwrap();
    assert_eq!(view.steps().unwrap(), s.steps);
    let oidc = view.step(plan::OIDC).unwrap().expect("oidc");
    assert_eq!(oidc.state, StepState::Running);
    assert_eq!(oidc.fence, s.steps[0].fence);
    assert_eq!(
        view.step(plan::RESOURCE_GROUPS).unwrap().as_ref(),
        s.steps.iter().find(|x| x.id == plan::RESOURCE_GROUPS)
    );
    assert!(view.step("identity.nope").unwrap().is_none());
}

#[test]
fn a_superseded_create_retries_nothing_and_a_silent_step_just_stops() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let oidc = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    let rg = first
        .iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap()
        .clone();
    s.supersede("op-delete", t0());
    // A failure is not retried, a throttle not waited out.
    report(
        &mut s,
        &rg,
        Outcome::Failed {
            error: StepError::throttled("SubscriptionRequestsThrottled", "slow", 1_000),
        },
    );
    assert_eq!(state_of(&s, plan::RESOURCE_GROUPS), StepState::Failed);
    assert!(drain(&mut s).is_empty(), "nothing re-sent");
    // The OIDC step's service says nothing: once its lease lapses, the create just ends.
    s.tick_with(t0() + Duration::seconds(61), |_| false);
    assert!(s.is_finished());
    assert!(s.pause.is_none(), "a superseded saga never pauses");
    assert_eq!(
        report(&mut s, &oidc, ok(&[])),
        Applied::Ignored("saga is finished")
    );
}

#[test]
fn a_step_failing_while_the_saga_is_paused_joins_the_pause_instead_of_retrying() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let first = drain(&mut s);
    let rg = first
        .iter()
        .find(|c| c.step == plan::RESOURCE_GROUPS)
        .unwrap()
        .clone();
    let cmd = first.iter().find(|c| c.step == plan::OIDC).unwrap().clone();
    exhaust_retries(&mut s, cmd);
    assert!(s.pause.is_some());
    // Still running when the saga paused, the resource groups step now fails retryably.
    report(
        &mut s,
        &rg,
        Outcome::Failed {
            error: StepError::retryable("InternalServerError", "boom"),
        },
    );
    assert!(drain(&mut s).is_empty(), "no retry is sent while paused");
    let mut paused = s.pause.as_ref().unwrap().steps.clone();
    paused.sort();
    assert_eq!(
        paused,
        vec![plan::OIDC.to_string(), plan::RESOURCE_GROUPS.to_string()]
    );
    assert_eq!(s.state, OperationState::Running, "not turned around either");
}

/// Fails `cmd`'s step retryably, following each retry, until its attempts (3) run out.
fn exhaust_retries(s: &mut Saga, mut cmd: StepCommand) {
    for _ in 0..3 {
        let error = StepError::retryable("InternalServerError", "boom");
        report(s, &cmd, Outcome::Failed { error });
        if let Some(next) = drain(s)
            .into_iter()
            .find(|c| c.step == cmd.step && c.action == cmd.action)
        {
            cmd = next;
        }
    }
}

#[test]
fn the_outbox_keeps_dispatches_and_the_record_builds_their_commands() {
    let mut s = saga(OperationKind::Create);
    s.advance(t0());
    let cmds = s.outbox_commands();
    assert!(!cmds.is_empty(), "the first steps are dispatched");
    // Commands compared as the JSON they are sent as.
    let as_json = |c: &StepCommand| serde_json::to_value(c).unwrap();

    // Stored once: the outbox names dispatches, the context is the record's own.
    let stored = serde_json::to_value(&s).unwrap();
    let outbox = stored["outbox"].to_string();
    assert!(
        !outbox.contains(&s.context.cluster_uid),
        "the outbox carries no context: {outbox}"
    );
    let read: Saga = serde_json::from_value(stored.clone()).unwrap();
    let rebuilt = read.outbox_commands();
    assert_eq!(rebuilt.len(), cmds.len());
    for (a, b) in cmds.iter().zip(&rebuilt) {
        assert_eq!(as_json(a), as_json(b));
        assert_eq!(a.context.cluster_uid, s.context.cluster_uid);
    }

    // A record an earlier version wrote, whole commands in its outbox, still publishes them.
    let mut old = stored;
    old["outbox"] = serde_json::Value::Array(
        cmds.iter()
            .map(|c| {
                let mut v = serde_json::to_value(c).unwrap();
                v["effect"] = "command".into();
                v
            })
            .collect(),
    );
    let old: Saga = serde_json::from_value(old).unwrap();
    let published: Vec<serde_json::Value> = old.outbox_commands().iter().map(as_json).collect();
    assert_eq!(published, cmds.iter().map(as_json).collect::<Vec<_>>());

    // A dispatch the record has since superseded (a new fence) sends nothing.
    let first = &cmds[0];
    assert!(s.command(&first.step, first.fence).is_some());
    assert!(s.command(&first.step, first.fence + 1).is_none());
    assert!(s.command("identity.nope", 1).is_none());
}

#[path = "day2_tests.rs"]
mod day2;
