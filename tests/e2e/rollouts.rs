//! Rollouts: a tenant's labelled clusters upgraded in waves, a canary first, never more than
//! the wave's width at once; a failure stops the rollout naming the cluster, and a resume after
//! the fault clears finishes it.

use std::collections::BTreeMap;

use futures::StreamExt;
use hypersaga_api::v1 as pb;

use crate::support::*;

const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release:4.21.0-multi";

fn labelled(name: &str, env: &str) -> pb::CreateClusterRequest {
    pb::CreateClusterRequest {
        labels: [("env".to_owned(), env.to_owned())].into(),
        ..create_request(name, 0)
    }
}

fn cluster_state(r: &pb::Rollout) -> BTreeMap<String, i32> {
    r.clusters
        .iter()
        .map(|c| (c.name.clone(), c.state))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rollout_upgrades_in_waves_stops_at_a_failure_and_finishes_once_resumed() {
    let system = System::start().await;
    let mut acme = system.client("acme").await;
    let names: Vec<String> = (1..=12).map(|i| format!("r{i:02}")).collect();
    for n in &names {
        acme.create_cluster(labelled(n, "prod"))
            .await
            .expect("create");
    }
    acme.create_cluster(labelled("staging", "dev"))
        .await
        .expect("create");
    for n in names.iter().chain([&"staging".to_owned()]) {
        let c = system.watch_to_end("acme", n).await;
        assert_eq!(phase(&c), "ready", "{c:?}");
    }

    // The second wave's r03 cannot take the upgrade.
    system
        .mgmt_admin()
        .inject_fault(&hypersaga_emulator_mgmt::Fault {
            kind: hypersaga_emulator_mgmt::FaultKind::HostedCluster,
            name_contains: Some("r03".into()),
            reason: "InvalidConfiguration".into(),
            message: "injected: the release cannot be reconciled".into(),
            condition: None,
        })
        .await
        .expect("fault");
    let next = RELEASE.replace("4.21.0", "4.22.0");
    let rollout = acme
        .create_rollout(pb::CreateRolloutRequest {
            selector: [("env".to_owned(), "prod".to_owned())].into(),
            release_image: next.clone(),
            canary: 1,
            max_parallel: 4,
            request_id: "prod-4.22".into(),
            addon: None,
        })
        .await
        .expect("create rollout")
        .into_inner();
    assert_eq!(
        rollout.clusters.len(),
        12,
        "the dev cluster is not selected"
    );
    assert_eq!(rollout.waves, 4);
    let again = acme
        .create_rollout(pb::CreateRolloutRequest {
            selector: [("env".to_owned(), "prod".to_owned())].into(),
            release_image: next.clone(),
            canary: 1,
            max_parallel: 4,
            request_id: "prod-4.22".into(),
            addon: None,
        })
        .await
        .expect("retried create")
        .into_inner();
    assert_eq!(
        again.id, rollout.id,
        "a retried create answers the same rollout"
    );

    let watcher = acme.clone();
    let follow = |id: String| {
        let mut client = watcher.clone();
        async move {
            let mut stream = client
                .watch_rollout(pb::WatchRolloutRequest { id })
                .await
                .expect("watch")
                .into_inner();
            let (mut most, mut last) = (0usize, None);
            let fut = async {
                while let Some(r) = stream.next().await {
                    let r = r.expect("watch item");
                    let upgrading = r
                        .clusters
                        .iter()
                        .filter(|c| c.state == pb::rollout_cluster::State::Upgrading as i32)
                        .count();
                    most = most.max(upgrading);
                    last = Some(r);
                }
            };
            tokio::time::timeout(TIMEOUT, fut)
                .await
                .expect("the rollout ends");
            (most, last.expect("a state"))
        }
    };

    // It stops at r03, naming it; the waves after are untouched.
    let (most, stopped) = follow(rollout.id.clone()).await;
    assert!(most <= 4, "{most} upgrading at once");
    assert_eq!(
        stopped.state,
        pb::rollout::State::Failed as i32,
        "{stopped:?}"
    );
    assert!(stopped.message.contains("r03"), "{}", stopped.message);
    let error = stopped.error.clone().expect("error");
    assert!(error.message.contains("r03"), "{error:?}");
    let states = cluster_state(&stopped);
    assert_eq!(
        states["r01"],
        pb::rollout_cluster::State::Succeeded as i32,
        "the canary"
    );
    assert_eq!(states["r03"], pb::rollout_cluster::State::Failed as i32);
    for later in &names[5..] {
        assert_eq!(
            states[later],
            pb::rollout_cluster::State::Pending as i32,
            "{later} was touched: {stopped:?}"
        );
        let c = acme
            .get_cluster(pb::GetClusterRequest {
                name: later.clone(),
            })
            .await
            .expect("get")
            .into_inner();
        assert_eq!(c.spec.expect("spec").release_image, RELEASE, "{later}");
    }

    // The fault cleared and the rollout resumed, it finishes; the dev cluster never moved.
    system.mgmt_admin().clear_faults().await.expect("clear");
    let resumed = acme
        .resume_rollout(pb::ResumeRolloutRequest {
            id: rollout.id.clone(),
        })
        .await
        .expect("resume")
        .into_inner();
    assert_eq!(resumed.state, pb::rollout::State::Running as i32);
    let (most, done) = follow(rollout.id.clone()).await;
    assert!(most <= 4, "{most} upgrading at once");
    assert_eq!(done.state, pb::rollout::State::Succeeded as i32, "{done:?}");
    for n in &names {
        let c = acme
            .get_cluster(pb::GetClusterRequest { name: n.clone() })
            .await
            .expect("get")
            .into_inner();
        assert_eq!(c.spec.expect("spec").release_image, next, "{n}");
    }
    let dev = acme
        .get_cluster(pb::GetClusterRequest {
            name: "staging".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(dev.spec.expect("spec").release_image, RELEASE);
}
