//! A fleet, not one cluster: many clusters at once within Azure's request limits, nothing
//! failed or paused by throttling, fair between tenants.
//!
//! The suite scales ARM's budgets up and the emulator's latencies down together
//! (`--arm-budget-scale`, fast profile) so the runs fit CI; `hypersaga bench fleet` runs the
//! same at Azure's real budgets and reports the timings.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;

use crate::support::*;

/// Creates every name at once (retrying UNAVAILABLE with the same request id, as a client of a
/// loaded system would).
async fn create_all(sys: &System, tenant: &str, names: &[String]) {
    let mut set = tokio::task::JoinSet::new();
    for name in names {
        let mut c = sys.client(tenant).await;
        let mut req = create_request(name, 1);
        req.request_id = format!("req-{name}");
        set.spawn(async move {
            for _ in 0..20 {
                match c.create_cluster(req.clone()).await {
                    Ok(_) => return,
                    Err(s) if s.code() == tonic::Code::Unavailable => {
                        tokio::time::sleep(Duration::from_millis(500)).await
                    }
                    Err(s) => panic!("create {} refused: {s}", req.name),
                }
            }
            panic!("create {} kept failing", req.name);
        });
    }
    while let Some(r) = set.join_next().await {
        r.expect("create task");
    }
}

/// Phase and operation state of each of the tenant's clusters (all pages).
async fn states(sys: &System, tenant: &str) -> BTreeMap<String, (String, i32)> {
    let mut c = sys.client(tenant).await;
    let mut out = BTreeMap::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_clusters(pb::ListClustersRequest {
                page_size: 1000,
                page_token: token.clone(),
            })
            .await
            .expect("list")
            .into_inner();
        for cl in page.clusters {
            let op = cl
                .status
                .as_ref()
                .and_then(|s| s.operation.as_ref())
                .map_or(0, |o| o.state);
            out.insert(cl.name.clone(), (phase(&cl), op));
        }
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

/// Fails, saying why as `hypersaga cluster get` would (the pause, the error, the steps that
/// failed), if one of the tenant's clusters in `now` failed or paused.
async fn none_failed_or_paused(sys: &System, tenant: &str, now: &BTreeMap<String, (String, i32)>) {
    let bad: Vec<_> = now
        .iter()
        .filter(|(_, (p, op))| p == "failed" || *op == pb::OperationState::Paused as i32)
        .collect();
    let Some((name, _)) = bad.first() else {
        return;
    };
    let op = sys
        .client(tenant)
        .await
        .get_cluster(pb::GetClusterRequest {
            name: (*name).clone(),
        })
        .await
        .ok()
        .and_then(|r| r.into_inner().status)
        .and_then(|s| s.operation);
    let why = op.map(|o| {
        let failing: Vec<_> = o
            .steps
            .into_iter()
            .filter(|s| s.last_error.is_some())
            .map(|s| (s.id, s.attempts, s.last_error))
            .collect();
        (o.pause, o.error, failing)
    });
    panic!("failed or paused under load: {bad:?}; the first of them: {why:#?}");
}

/// Waits until every named cluster is in `done` (or the clock runs out), failing at once if
/// one fails or pauses.
async fn wait_all(sys: &System, tenant: &str, names: &[String], done: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let now = states(sys, tenant).await;
        none_failed_or_paused(sys, tenant, &now).await;
        let finished = names
            .iter()
            .filter(|n| now.get(*n).is_none_or(|(p, _)| p == done))
            .count();
        if finished == names.len() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{finished} of {} {done} in time: {now:?}",
            names.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn thirty_two_clusters_at_once_stay_within_the_budget_and_all_get_ready_then_deleted() {
    // Budgets ×3 and near-zero latencies: the write budget still binds (some 950 writes
    // against a burst of 600), so pacing is what is tested. `hypersaga bench fleet` runs
    // more at Azure's real budgets.
    let sys = System::start_with(&["--arm-budget-scale", "3"]).await;
    let names: Vec<String> = (0..32).map(|i| format!("fleet-{i:02}")).collect();
    let started = Instant::now();
    create_all(&sys, "acme", &names).await;
    wait_all(&sys, "acme", &names, "ready", Duration::from_secs(240)).await;
    let created_in = started.elapsed();
    let stats = sys.arm_admin().requests().await.expect("request stats");
    let sub = stats.subscription(&sys.subscription("acme"));
    println!(
        "{} creates: all ready after {created_in:?}; ARM requests {}, throttled {} ({:.2} %)",
        names.len(),
        sub.requests,
        sub.throttled,
        100.0 * sub.throttled_share()
    );
    assert!(
        sub.requests > names.len() as u64 * 20,
        "the creates went through ARM: {sub:?}"
    );
    assert!(
        sub.throttled_share() <= 0.02,
        "429s are at most 2 % of ARM requests: {sub:?}"
    );

    let mut c = sys.client("acme").await;
    for name in &names {
        c.delete_cluster(pb::DeleteClusterRequest {
            name: name.clone(),
            request_id: format!("del-{name}"),
            ..Default::default()
        })
        .await
        .expect("delete accepted");
    }
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let left = states(&sys, "acme").await;
        let bad: Vec<_> = left
            .iter()
            .filter(|(_, (p, op))| p == "failed" || *op == pb::OperationState::Paused as i32)
            .collect();
        assert!(
            bad.is_empty(),
            "deletes failed or paused under load: {bad:?}"
        );
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} clusters still there",
            left.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let stats = sys.arm_admin().requests().await.expect("request stats");
    let sub = stats.subscription(&sys.subscription("acme"));
    assert!(
        sub.throttled_share() <= 0.02,
        "429s over creates and deletes: {sub:?}"
    );

    // Nothing leaked: what remains is what the user had before and the tenant's identity
    // group, kept for its other clusters.
    let left: Vec<String> = sys
        .resource_names("acme")
        .await
        .into_iter()
        .filter(|r| !outlives_clusters(r))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn one_tenants_burst_does_not_queue_ahead_of_another_tenants_cluster() {
    let sys = System::start_with(&["--arm-budget-scale", "4"]).await;
    let burst: Vec<String> = (0..24).map(|i| format!("burst-{i:02}")).collect();
    create_all(&sys, "acme", &burst).await;
    // The other tenant asks once the burst is queued everywhere.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut g = sys.client("globex").await;
    g.create_cluster(create_request("solo", 1))
        .await
        .expect("create solo");
    let solo = sys.watch_to_end("globex", "solo").await;
    assert_eq!(phase(&solo), "ready");
    // Served in turn, the lone cluster does not wait for the burst: when it is ready, most
    // of the burst is not, and none of it failed or paused for it. (That a burst gets ready
    // within the budget is the sixty-four clusters' test.)
    let burst_now = states(&sys, "acme").await;
    none_failed_or_paused(&sys, "acme", &burst_now).await;
    let burst_ready = burst_now.values().filter(|(p, _)| p == "ready").count();
    println!(
        "globex's cluster ready while {burst_ready} of acme's {} were",
        burst.len()
    );
    assert!(
        burst_ready < burst.len() / 2,
        "the lone cluster queued behind the burst: {burst_ready} of {} ready first",
        burst.len()
    );
}

#[tokio::test]
async fn killing_replicas_during_a_fleet_run_loses_nothing_and_makes_nothing_twice() {
    let sys = System::start_with(&["--replicas", "3", "--arm-budget-scale", "4"]).await;
    // One cluster alone first: what one cluster is made of in Azure.
    create_all(&sys, "acme", &["alone".to_string()]).await;
    wait_all(
        &sys,
        "acme",
        &["alone".to_string()],
        "ready",
        Duration::from_secs(120),
    )
    .await;
    let per_cluster = sys.inventory("acme").await.len();
    // What clusters share: the user's public zone and its group, the tenant's identity group.
    let shared = sys
        .resource_names("acme")
        .await
        .iter()
        .filter(|r| outlives_clusters(r))
        .count();

    let names: Vec<String> = (0..16).map(|i| format!("chaos-{i:02}")).collect();
    // Every replica of every role may die at any moment — except the gateway this test's
    // client talks to (its callers would see their own connection drop, not the system's).
    let victims: Vec<String> = sys
        .pids()
        .keys()
        .filter(|n| *n != "gateway-0")
        .cloned()
        .collect();
    let stop = tokio_util::sync::CancellationToken::new();
    let killer = {
        let (stop, dir) = (stop.clone(), sys.state_dir());
        tokio::spawn(async move {
            let mut killed = Vec::new();
            let mut i = 0usize;
            while !stop.is_cancelled() {
                tokio::time::sleep(Duration::from_millis(700)).await;
                // A cheap, reproducible spread over the victims.
                let name = &victims[(i * 7 + 3) % victims.len()];
                i += 1;
                let pids: BTreeMap<String, u32> = serde_json::from_slice(
                    &std::fs::read(dir.join("pids.json")).unwrap_or_default(),
                )
                .unwrap_or_default();
                if let Some(pid) = pids.get(name) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(*pid as i32),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                    killed.push(name.clone());
                }
            }
            killed
        })
    };
    create_all(&sys, "acme", &names).await;
    wait_all(&sys, "acme", &names, "ready", Duration::from_secs(300)).await;
    stop.cancel();
    let killed = killer.await.expect("killer");
    println!(
        "killed {} replicas during the run: {killed:?}",
        killed.len()
    );
    assert!(killed.len() >= 5, "the run was disturbed: {killed:?}");

    // Nothing lost, nothing twice: each cluster got ready exactly once, its journal is gapless,
    // and Azure holds exactly one cluster's worth of resources per cluster.
    for name in &names {
        let events = sys.audit_events("acme", name).await;
        let ready = events
            .iter()
            .filter(|e| e["type"] == "cluster.ready")
            .count();
        assert_eq!(ready, 1, "{name}: {ready} cluster.ready events");
        let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as u64).collect::<Vec<_>>(),
            "{name}: journal has gaps or repeats"
        );
    }
    let total = sys.inventory("acme").await.len();
    assert_eq!(
        total,
        per_cluster + names.len() * (per_cluster - shared),
        "resources in Azure"
    );
}
