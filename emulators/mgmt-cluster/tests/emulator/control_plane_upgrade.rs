//! Control-plane upgrades as HyperShift and the hosted cluster's CVO report them: a new
//! `spec.release.image` becomes `status.version.desired` with a `Partial` history entry and
//! `ClusterVersionProgressing=True` ("Working towards …"), then `Completed` after the
//! configured time; a downgrade or a release above the operator's range is refused with
//! `ValidReleaseImage=False` and nothing moves; NodePools are not touched.

use std::time::{Duration, Instant};

use crate::common::*;
use hypersaga_emulator_mgmt::Config;
use hypersaga_hypershift::{HostedCluster, NodePool};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

const UPGRADE: Duration = Duration::from_millis(800);

fn release(version: &str) -> String {
    format!("quay.io/openshift-release-dev/ocp-release:{version}-x86_64")
}

/// An emulator whose upgrades take [`UPGRADE`], everything else 150 ms.
async fn harness() -> Harness {
    Harness::start(Config {
        control_plane_upgrade_after: UPGRADE,
        ..Config::fast(TOKEN, Duration::from_millis(150))
    })
    .await
}

/// A HostedCluster at `version` whose install completed, with one node.
async fn installed(h: &Harness, ns: &str, version: &str) -> (Api<HostedCluster>, Api<NodePool>) {
    namespace(&h.client, ns).await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), ns);
    pull_secret(&h.client, ns, "demo").await;
    let mut hc = hosted_cluster("demo", ns);
    hc.spec.release.image = release(version);
    hcs.create(&PostParams::default(), &hc).await.expect("hc");
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), ns);
    let mut np = node_pool("workers", ns, "demo", 1);
    np.spec.release.image = release(version);
    nps.create(&PostParams::default(), &np).await.expect("np");
    within(
        "the install to complete",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::rollout_completed)
        }),
    )
    .await
    .expect("watch");
    (hcs, nps)
}

fn raw(hc: &HostedCluster) -> Value {
    serde_json::to_value(hc).expect("json")
}

fn condition(hc: &Value, type_: &str) -> (String, String, String) {
    let c = hc["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null);
    let f = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
    (f("status"), f("reason"), f("message"))
}

async fn set_release(hcs: &Api<HostedCluster>, version: &str) {
    hcs.patch(
        "demo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"release": {"image": release(version)}}})),
    )
    .await
    .expect("patch");
}

#[tokio::test]
async fn an_upgrade_is_partial_while_it_rolls_then_completed_and_leaves_node_pools_alone() {
    let h = harness().await;
    let (hcs, nps) = installed(&h, "up", "4.19.0").await;
    let hc = raw(&hcs.get("demo").await.expect("hc"));
    assert_eq!(
        condition(&hc, "ClusterVersionProgressing"),
        (
            "False".into(),
            "FromClusterVersion".into(),
            "Cluster version is 4.19.0".into()
        )
    );
    let np_before = nps.get("workers").await.expect("np");

    let started = Instant::now();
    set_release(&hcs, "4.20.1").await;
    let rolling = within(
        "the upgrade to be accepted",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.and_then(|hc| hc.status.as_ref()?.version.as_ref()?.desired.clone())
                .is_some_and(|d| d.version.as_deref() == Some("4.20.1"))
        }),
    )
    .await
    .expect("watch")
    .expect("hc");
    let v = raw(&rolling);
    let history = v["status"]["version"]["history"]
        .as_array()
        .expect("history");
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0]["state"], "Partial");
    assert_eq!(history[0]["version"], "4.20.1");
    assert_eq!(history[0]["image"], release("4.20.1"));
    assert!(history[0]["completionTime"].is_null());
    assert!(history[0]["startedTime"].is_string());
    assert_eq!(history[1]["state"], "Completed");
    assert_eq!(history[1]["version"], "4.19.0");
    assert_eq!(
        condition(&v, "ClusterVersionProgressing"),
        (
            "True".into(),
            "FromClusterVersion".into(),
            "Working towards 4.20.1".into()
        )
    );
    assert_eq!(condition(&v, "ValidReleaseImage").0, "True");
    assert_eq!(
        condition(&v, "Progressing"),
        (
            "False".into(),
            "AsExpected".into(),
            "HostedCluster is at expected version".into()
        )
    );
    assert!(rolling.is_available(), "the control plane stays available");
    assert!(!rolling.rollout_completed());

    let done = within(
        "the upgrade to complete",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::rollout_completed)
        }),
    )
    .await
    .expect("watch")
    .expect("hc");
    assert!(
        started.elapsed() >= UPGRADE,
        "completed after {:?}",
        started.elapsed()
    );
    let v = raw(&done);
    let history = v["status"]["version"]["history"]
        .as_array()
        .expect("history");
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["state"], "Completed");
    assert!(history[0]["completionTime"].is_string());
    assert_eq!(
        condition(&v, "ClusterVersionProgressing"),
        (
            "False".into(),
            "FromClusterVersion".into(),
            "Cluster version is 4.20.1".into()
        )
    );
    assert_eq!(
        condition(&v, "ClusterVersionAvailable"),
        (
            "True".into(),
            "FromClusterVersion".into(),
            "Done applying 4.20.1".into()
        )
    );

    // The NodePool's spec and version are its own: still 4.19.
    let np = nps.get("workers").await.expect("np");
    assert_eq!(np.spec, np_before.spec);
    assert_eq!(np.metadata.generation, np_before.metadata.generation);
    assert_eq!(
        np.status.as_ref().and_then(|s| s.version.as_deref()),
        Some("4.19.0")
    );
}

#[tokio::test]
async fn a_downgrade_or_an_unsupported_release_is_refused_and_nothing_moves() {
    let h = harness().await;
    let (hcs, _nps) = installed(&h, "down", "4.20.2").await;
    let before = raw(&hcs.get("demo").await.expect("hc"))["status"]["version"].clone();

    for (version, message) in [
        (
            "4.19.5",
            "y-stream downgrade from \"4.20.2\" to \"4.19.5\" is not supported",
        ),
        (
            "4.20.0",
            "z-stream downgrade from \"4.20.2\" to \"4.20.0\" is not supported",
        ),
        (
            "4.23.0",
            "the latest version supported is: \"4.22\". Attempting to use: \"4.23.0\"",
        ),
    ] {
        set_release(&hcs, version).await;
        let refused = within(
            "the refusal",
            await_condition(hcs.clone(), "demo", move |o: Option<&HostedCluster>| {
                o.and_then(|hc| hc.condition("ValidReleaseImage"))
                    .is_some_and(|c| c.status == "False" && c.message.contains(version))
            }),
        )
        .await
        .expect("watch")
        .expect("hc");
        let v = raw(&refused);
        assert_eq!(
            condition(&v, "ValidReleaseImage"),
            ("False".into(), "InvalidImage".into(), message.into())
        );
        assert_eq!(
            condition(&v, "Progressing"),
            (
                "False".into(),
                "Blocked".into(),
                format!("ValidReleaseImage condition is false: {message}")
            )
        );
        // The control plane keeps running what it ran: nothing was accepted.
        assert_eq!(v["status"]["version"], before, "{version}");
        assert!(refused.is_available());
        assert_eq!(
            condition(&v, "ClusterVersionProgressing").2,
            "Cluster version is 4.20.2"
        );
    }

    // Back to what runs: valid again, and still nothing to roll.
    set_release(&hcs, "4.20.2").await;
    let valid = within(
        "valid again",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.and_then(|hc| hc.condition("ValidReleaseImage"))
                .is_some_and(|c| c.status == "True")
        }),
    )
    .await
    .expect("watch")
    .expect("hc");
    let v = raw(&valid);
    assert_eq!(condition(&v, "Progressing").1, "AsExpected");
    assert_eq!(v["status"]["version"]["history"], before["history"]);
}
