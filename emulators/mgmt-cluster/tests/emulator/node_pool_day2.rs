//! Day 2 of a NodePool without a cloud (the emulated infrastructure): scaling, autoscaling
//! on a simulated demand, Replace rollouts of a new release, the release and skew checks
//! HyperShift makes against the control plane, InPlace pools, and what changes in place.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use crate::common::*;
use hypersaga_emulator_mgmt::Config;
use hypersaga_hypershift::{HostedCluster, NodePool};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

fn release(version: &str) -> String {
    format!("quay.io/openshift-release-dev/ocp-release:{version}-x86_64")
}

/// An emulator whose nodes join `node_ready` after their Machine is made.
async fn harness(node_ready: Duration) -> Harness {
    Harness::start(Config {
        node_pool_ready_after: node_ready,
        ..Config::fast(TOKEN, Duration::from_millis(100))
    })
    .await
}

/// The HostedCluster `demo` at `version` in `ns`, available.
async fn cluster(h: &Harness, ns: &str, version: &str) -> Api<HostedCluster> {
    namespace(&h.client, ns).await;
    pull_secret(&h.client, ns, "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), ns);
    let mut hc = hosted_cluster("demo", ns);
    hc.spec.release.image = release(version);
    hcs.create(&PostParams::default(), &hc).await.expect("hc");
    within(
        "the HostedCluster to be available",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::is_available)
        }),
    )
    .await
    .expect("watch");
    hcs
}

/// NodePool `name` of `demo` in `ns` at `version`, with `spec` merged over the fixture's.
async fn pool(h: &Harness, ns: &str, name: &str, version: &str, spec: Value) -> Api<NodePool> {
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), ns);
    let mut np = serde_json::to_value(node_pool(name, ns, "demo", 1)).expect("json");
    np["spec"]["release"]["image"] = json!(release(version));
    merge(&mut np["spec"], &spec);
    let np: NodePool = serde_json::from_value(np).expect("np");
    nps.create(&PostParams::default(), &np).await.expect("np");
    nps
}

fn merge(into: &mut Value, patch: &Value) {
    match (into, patch) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                if v.is_null() {
                    a.remove(k);
                } else {
                    merge(a.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

async fn patch(nps: &Api<NodePool>, name: &str, body: Value) {
    nps.patch(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .expect("patch");
}

/// Waits until `pred` holds of NodePool `name` as JSON; answers it.
async fn until(
    nps: &Api<NodePool>,
    name: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let np = within(
        what,
        await_condition(nps.clone(), name, move |o: Option<&NodePool>| {
            o.is_some_and(|np| pred(&serde_json::to_value(np).expect("json")))
        }),
    )
    .await
    .expect("watch")
    .expect("np");
    serde_json::to_value(np).expect("json")
}

fn cond(np: &Value, type_: &str) -> (String, String, String) {
    let c = np["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or(Value::Null);
    let f = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
    (f("status"), f("reason"), f("message"))
}

fn replicas(np: &Value) -> i64 {
    np["status"]["replicas"].as_i64().unwrap_or(-1)
}

fn ready(np: &Value) -> bool {
    cond(np, "Ready").0 == "True"
}

/// NodePool `ns/name`'s Machines (in `ns-demo`), not being deleted, by name.
fn machines(h: &Harness, ns: &str, name: &str) -> Vec<Value> {
    let key = format!("{ns}/{name}");
    let mut list: Vec<Value> = h
        .emulator
        .objects()
        .into_iter()
        .filter(|o| {
            o["kind"] == "Machine"
                && o["metadata"]["annotations"]["hypershift.openshift.io/nodePool"] == key
                && o["metadata"]["deletionTimestamp"].is_null()
        })
        .collect();
    list.sort_by_key(|m| {
        m["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    list
}

fn names(machines: &[Value]) -> Vec<String> {
    machines
        .iter()
        .map(|m| {
            m["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn node_ready(m: &Value) -> bool {
    m["status"]["conditions"].as_array().is_some_and(|l| {
        l.iter()
            .any(|c| c["type"] == "NodeHealthy" && c["status"] == "True")
    })
}

/// Samples NodePool `ns/name`'s ready Machines every few milliseconds until stopped; answers
/// the fewest and the most Machines seen.
fn sample(h: &Harness, ns: &str, name: &str) -> (Arc<AtomicBool>, Arc<AtomicI64>, Arc<AtomicI64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (fewest_ready, most) = (
        Arc::new(AtomicI64::new(i64::MAX)),
        Arc::new(AtomicI64::new(0)),
    );
    let emulator = h.emulator.clone();
    let key = format!("{ns}/{name}");
    let (s, f, m) = (stop.clone(), fewest_ready.clone(), most.clone());
    tokio::spawn(async move {
        while !s.load(Ordering::SeqCst) {
            let all: Vec<Value> = emulator
                .objects()
                .into_iter()
                .filter(|o| {
                    o["kind"] == "Machine"
                        && o["metadata"]["annotations"]["hypershift.openshift.io/nodePool"] == key
                })
                .collect();
            let ready = all
                .iter()
                .filter(|m| m["metadata"]["deletionTimestamp"].is_null() && node_ready(m))
                .count();
            f.fetch_min(i64::try_from(ready).unwrap_or(0), Ordering::SeqCst);
            m.fetch_max(i64::try_from(all.len()).unwrap_or(0), Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    (stop, fewest_ready, most)
}

#[tokio::test]
async fn scaling_makes_and_deletes_machines_as_a_machine_set_does() {
    let h = harness(Duration::from_millis(400)).await;
    cluster(&h, "scale", "4.19.0").await;
    let nps = pool(&h, "scale", "w", "4.19.0", json!({})).await;
    // HyperShift's `UpdatingVersion` looks at `status.version` before this pass sets it,
    // so it turns False one pass after the version is set.
    let np = until(&nps, "w", "one node", |np| {
        replicas(np) == 1 && ready(np) && cond(np, "UpdatingVersion").0 == "False"
    })
    .await;
    assert_eq!(np["status"]["version"], "4.19.0");
    assert_eq!(
        cond(&np, "ValidReleaseImage"),
        (
            "True".into(),
            "AsExpected".into(),
            format!("Using release image: {}", release("4.19.0"))
        )
    );
    assert_eq!(
        cond(&np, "SupportedVersionSkew"),
        (
            "True".into(),
            "AsExpected".into(),
            "Release image version is valid".into()
        )
    );
    assert_eq!(
        cond(&np, "AutoscalingEnabled"),
        ("False".into(), "AsExpected".into(), "".into())
    );
    assert_eq!(
        cond(&np, "UpdatingVersion"),
        ("False".into(), "AsExpected".into(), "".into())
    );
    let first = names(&machines(&h, "scale", "w"));
    assert_eq!(first.len(), 1);

    // Up: the MachineSet makes every missing Machine at once; the nodes join later.
    patch(&nps, "w", json!({"spec": {"replicas": 3}})).await;
    let np = until(&nps, "w", "the scale-up to be seen", |np| {
        cond(np, "Ready").0 == "False"
    })
    .await;
    assert_eq!(
        cond(&np, "Ready"),
        (
            "False".into(),
            "WaitingForAvailableMachines".into(),
            "Minimum availability requires 3 replicas, current 1 available".into()
        )
    );
    assert_eq!(machines(&h, "scale", "w").len(), 3, "all made at once");
    let np = until(&nps, "w", "three nodes", |np| {
        replicas(np) == 3 && ready(np)
    })
    .await;
    assert_eq!(cond(&np, "AllMachinesReady").0, "True");
    let three = names(&machines(&h, "scale", "w"));
    assert!(three.contains(&first[0]));

    // Down: healthy Machines go in name order (CAPI's default deletion order).
    patch(&nps, "w", json!({"spec": {"replicas": 1}})).await;
    until(&nps, "w", "one node again", |np| {
        replicas(np) == 1 && ready(np)
    })
    .await;
    let left = names(&machines(&h, "scale", "w"));
    assert_eq!(left, three[2..], "{three:?}");

    // To zero: no Machines, as HyperShift words it.
    patch(&nps, "w", json!({"spec": {"replicas": 0}})).await;
    let np = until(&nps, "w", "no nodes", |np| {
        replicas(np) == 0 && cond(np, "AllMachinesReady").2 == "NodePool set to no replicas"
    })
    .await;
    assert!(ready(&np));
    assert!(machines(&h, "scale", "w").is_empty());
}

#[tokio::test]
async fn the_autoscaler_keeps_the_pool_within_bounds_and_follows_demand() {
    let h = harness(Duration::from_millis(100)).await;
    cluster(&h, "auto", "4.19.0").await;
    let nps = pool(
        &h,
        "auto",
        "w",
        "4.19.0",
        json!({"replicas": null, "autoScaling": {"min": 1, "max": 3}}),
    )
    .await;
    let np = until(&nps, "w", "the minimum", |np| {
        replicas(np) == 1 && ready(np)
    })
    .await;
    assert_eq!(
        cond(&np, "AutoscalingEnabled"),
        (
            "True".into(),
            "AsExpected".into(),
            "Maximum nodes: 3, Minimum nodes: 1".into()
        )
    );

    // Pending work for five nodes: up to the maximum, never beyond.
    let (stop, _, most) = sample(&h, "auto", "w");
    h.admin
        .set_node_pool_demand("auto", "w", 5)
        .await
        .expect("demand");
    assert_eq!(
        h.admin
            .node_pool_demands()
            .await
            .expect("demands")
            .get("auto/w"),
        Some(&5)
    );
    until(&nps, "w", "the maximum", |np| {
        replicas(np) == 3 && ready(np)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    assert_eq!(most.load(Ordering::SeqCst), 3, "never more than max");
    assert_eq!(machines(&h, "auto", "w").len(), 3);

    // The work gone: back down to the minimum.
    h.admin
        .set_node_pool_demand("auto", "w", 0)
        .await
        .expect("demand");
    until(&nps, "w", "the minimum again", |np| {
        replicas(np) == 1 && ready(np)
    })
    .await;
    assert_eq!(machines(&h, "auto", "w").len(), 1);
    assert!(
        h.admin
            .clear_node_pool_demand("auto", "w")
            .await
            .expect("clear")
    );
    assert!(
        !h.admin
            .clear_node_pool_demand("auto", "w")
            .await
            .expect("clear")
    );

    // Below a raised minimum: up to it; above a lowered maximum: down to it.
    patch(
        &nps,
        "w",
        json!({"spec": {"autoScaling": {"min": 2, "max": 3}}}),
    )
    .await;
    until(&nps, "w", "the raised minimum", |np| {
        replicas(np) == 2 && ready(np)
    })
    .await;
    patch(
        &nps,
        "w",
        json!({"spec": {"autoScaling": {"min": 0, "max": 1}}}),
    )
    .await;
    let np = until(&nps, "w", "the lowered maximum", |np| replicas(np) == 1).await;
    assert_eq!(
        cond(&np, "AutoscalingEnabled").2,
        "Maximum nodes: 1, Minimum nodes: 0"
    );
    assert_eq!(machines(&h, "auto", "w").len(), 1);

    // Fixed replicas again.
    patch(
        &nps,
        "w",
        json!({"spec": {"autoScaling": null, "replicas": 2}}),
    )
    .await;
    let np = until(&nps, "w", "fixed replicas", |np| {
        replicas(np) == 2 && ready(np)
    })
    .await;
    assert_eq!(cond(&np, "AutoscalingEnabled").0, "False");
}

#[tokio::test]
async fn a_replace_rollout_surges_one_at_a_time_and_sets_the_version_at_the_end() {
    let h = harness(Duration::from_millis(200)).await;
    cluster(&h, "roll", "4.19.0").await;
    let nps = pool(&h, "roll", "w", "4.19.0", json!({"replicas": 2})).await;
    until(&nps, "w", "two nodes", |np| replicas(np) == 2 && ready(np)).await;
    let old = names(&machines(&h, "roll", "w"));

    let (stop, fewest_ready, most) = sample(&h, "roll", "w");
    patch(
        &nps,
        "w",
        json!({"spec": {"release": {"image": release("4.19.3")}}}),
    )
    .await;
    let rolling = until(&nps, "w", "the rollout to start", |np| {
        cond(np, "UpdatingVersion").0 == "True"
    })
    .await;
    assert_eq!(
        cond(&rolling, "UpdatingVersion"),
        (
            "True".into(),
            "AsExpected".into(),
            "Updating version in progress. Target version: 4.19.3".into()
        )
    );
    assert_eq!(
        rolling["status"]["version"], "4.19.0",
        "not before the rollout completes"
    );
    let done = until(&nps, "w", "the new version", |np| {
        np["status"]["version"] == "4.19.3"
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    assert!(ready(&done) && replicas(&done) == 2, "{done}");
    // Every old Machine replaced by a new one (new names, new release), one surge at a
    // time, and never fewer ready nodes than wanted.
    let new = machines(&h, "roll", "w");
    assert_eq!(new.len(), 2);
    for m in &new {
        let name = m["metadata"]["name"].as_str().unwrap_or_default();
        assert!(!old.iter().any(|o| o == name), "{name} in {old:?}");
        assert_eq!(m["spec"]["version"], "4.19.3");
        assert_eq!(
            m["metadata"]["annotations"]["hypershift.openshift.io/release-version"],
            "4.19.3"
        );
        assert!(
            m["spec"]["providerID"]
                .as_str()
                .is_some_and(|p| p.ends_with(&format!("/virtualMachines/{name}"))),
            "{m}"
        );
    }
    assert!(
        fewest_ready.load(Ordering::SeqCst) >= 2,
        "ready fell below desired"
    );
    assert_eq!(most.load(Ordering::SeqCst), 3, "maxSurge 1");
    let done = until(&nps, "w", "the update to be over", |np| {
        cond(np, "UpdatingVersion").0 == "False"
    })
    .await;
    assert_eq!(cond(&done, "UpdatingVersion").1, "AsExpected");

    // Labels, taints and the drain timeout change the Machines in place: nothing rolls.
    let before = names(&machines(&h, "roll", "w"));
    patch(
        &nps,
        "w",
        json!({"spec": {"nodeLabels": {"team": "a"}, "nodeDrainTimeout": "10m",
            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let ms = machines(&h, "roll", "w");
        let propagated = ms.iter().all(|m| {
            m["metadata"]["labels"]["managed.hypershift.openshift.io.team"] == "a"
                && m["spec"]["nodeDrainTimeout"] == "10m"
                && m["metadata"]["annotations"]["hypershift.openshift.io/nodePoolTaints"]
                    == r#"[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]"#
        });
        if propagated {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{ms:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(names(&machines(&h, "roll", "w")), before, "no rollout");
    let np = serde_json::to_value(nps.get("w").await.expect("np")).expect("json");
    assert_eq!(cond(&np, "UpdatingVersion").0, "False");
}

#[tokio::test]
async fn a_release_the_control_plane_does_not_allow_is_refused_until_it_does() {
    let h = harness(Duration::from_millis(100)).await;
    let hcs = cluster(&h, "skew", "4.19.0").await;
    let nps = pool(&h, "skew", "w", "4.19.0", json!({})).await;
    until(&nps, "w", "one node", |np| replicas(np) == 1 && ready(np)).await;
    within(
        "the install to complete",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::rollout_completed)
        }),
    )
    .await
    .expect("watch");
    let before = names(&machines(&h, "skew", "w"));

    // A minor above the control plane's, then a y-stream downgrade: refused, nothing rolls.
    for (version, message) in [
        (
            "4.20.0",
            "Failed to get release image: the latest version supported is: \"4.19\". \
             Attempting to use: \"4.20.0\"",
        ),
        (
            "4.18.2",
            "Failed to get release image: y-stream downgrade from \"4.19.0\" to \"4.18.2\" is \
             not supported",
        ),
    ] {
        patch(
            &nps,
            "w",
            json!({"spec": {"release": {"image": release(version)}}}),
        )
        .await;
        let np = until(&nps, "w", "the refusal", |np| {
            cond(np, "ValidReleaseImage").2.contains(version)
        })
        .await;
        assert_eq!(
            cond(&np, "ValidReleaseImage"),
            ("False".into(), "ValidationFailed".into(), message.into())
        );
        assert_eq!(np["status"]["version"], "4.19.0");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(names(&machines(&h, "skew", "w")), before, "no rollout");
    }
    // A refused release holds scaling back too: HyperShift does not touch the
    // MachineDeployment.
    patch(&nps, "w", json!({"spec": {"replicas": 2}})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(machines(&h, "skew", "w").len(), 1);

    // The control plane upgraded to 4.20: the pool's 4.20 becomes valid and rolls.
    patch(
        &nps,
        "w",
        json!({"spec": {"release": {"image": release("4.20.0")}}}),
    )
    .await;
    hcs.patch(
        "demo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"release": {"image": release("4.20.0")}}})),
    )
    .await
    .expect("upgrade");
    let np = until(&nps, "w", "the pool at 4.20", |np| {
        np["status"]["version"] == "4.20.0" && replicas(np) == 2
    })
    .await;
    assert_eq!(cond(&np, "ValidReleaseImage").0, "True");
    assert_eq!(cond(&np, "SupportedVersionSkew").0, "True");
    assert!(
        names(&machines(&h, "skew", "w"))
            .iter()
            .all(|n| !before.contains(n))
    );
}

#[tokio::test]
async fn skew_is_reported_but_the_pool_keeps_operating() {
    let h = harness(Duration::from_millis(100)).await;
    let hcs = cluster(&h, "old", "4.19.0").await;
    within(
        "the install to complete",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.and_then(|hc| hc.status.as_ref()?.version.clone())
                .is_some()
        }),
    )
    .await
    .expect("watch");
    // Four minors behind: supported by the operator, not by the skew policy (N-3).
    let nps = pool(&h, "old", "old", "4.15.3", json!({"replicas": 2})).await;
    let np = until(&nps, "old", "two old nodes", |np| {
        replicas(np) == 2 && ready(np)
    })
    .await;
    assert_eq!(
        cond(&np, "SupportedVersionSkew"),
        (
            "False".into(),
            "UnsupportedSkew".into(),
            "NodePool minor version 4.15 is less than 4.16, which is the minimum NodePool \
             version compatible with the 4.19 HostedCluster"
                .into()
        )
    );
    assert_eq!(np["status"]["version"], "4.15.3");
    // A newer patch than the control plane's: rolled out, and reported.
    let nps = pool(&h, "old", "ahead", "4.19.5", json!({})).await;
    let np = until(&nps, "ahead", "the node", |np| {
        replicas(np) == 1 && ready(np)
    })
    .await;
    assert_eq!(
        cond(&np, "SupportedVersionSkew"),
        (
            "False".into(),
            "UnsupportedSkew".into(),
            "NodePool version 4.19.5 cannot be higher than the HostedCluster version 4.19.0".into()
        )
    );
    assert_eq!(np["status"]["version"], "4.19.5");
}

#[tokio::test]
async fn an_in_place_pool_scales_but_its_upgrades_are_refused() {
    let h = harness(Duration::from_millis(100)).await;
    cluster(&h, "inplace", "4.19.0").await;
    let nps = pool(
        &h,
        "inplace",
        "w",
        "4.19.0",
        json!({"management": {"upgradeType": "InPlace"}}),
    )
    .await;
    until(&nps, "w", "one node", |np| replicas(np) == 1 && ready(np)).await;
    let before = names(&machines(&h, "inplace", "w"));
    patch(
        &nps,
        "w",
        json!({"spec": {"release": {"image": release("4.19.3")}}}),
    )
    .await;
    let np = until(&nps, "w", "the refusal", |np| {
        cond(np, "UpdatingVersion").1 == "InplaceUpgradeFailed"
    })
    .await;
    assert_eq!(cond(&np, "UpdatingVersion").0, "False");
    assert!(
        cond(&np, "UpdatingVersion")
            .2
            .starts_with("in-place upgrades are not simulated")
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(names(&machines(&h, "inplace", "w")), before);
    patch(&nps, "w", json!({"spec": {"replicas": 2}})).await;
    let np = until(&nps, "w", "two nodes", |np| replicas(np) == 2 && ready(np)).await;
    assert_eq!(np["status"]["version"], "4.19.0");
}
