//! `kill -9` of the coordinator and of a service in the middle of a saga, and of one of the
//! bus's nats-servers: the supervisor restarts the services, the cluster's other servers carry
//! the streams, the saga finishes, and nothing is created twice.

use std::collections::BTreeMap;

use crate::support::*;

#[tokio::test]
async fn sigkill_of_coordinator_and_a_service_mid_saga_loses_nothing() {
    let system = System::start().await;
    // Hold the saga in the middle: the load balancer fails (retryably) until the fault is
    // cleared, which happens right after the kills.
    system.hold_at_the_load_balancer().await;
    system.create("acme", "phoenix", 2).await;
    system
        .wait_until("acme", "phoenix", "the load balancer to be retried", |c| {
            steps(c)
                .get("network.load-balancer")
                .is_some_and(|(s, a)| s == "running" && *a >= 2)
        })
        .await;

    let before = system.pids();
    let coordinator = system.kill9("coordinator-0");
    let network = system.kill9("network-0");
    system.arm_admin().clear_faults().await.unwrap();

    let ready = system.watch_to_end("acme", "phoenix").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let after = system.pids();
    assert_ne!(
        after["coordinator-0"], coordinator,
        "the coordinator was restarted"
    );
    assert_ne!(
        after["network-0"], network,
        "the network service was restarted"
    );
    assert_eq!(before["dns-0"], after["dns-0"], "others untouched");

    nothing_twice(&system).await;
}

/// Nothing of one ready cluster exists twice: one of each network resource, eight
/// identities, one HostedCluster and one NodePool.
async fn nothing_twice(system: &System) {
    let mut per_type: BTreeMap<String, usize> = BTreeMap::new();
    for r in system.inventory("acme").await {
        let ty = r["type"].as_str().unwrap_or("?").to_owned();
        if !ty.contains('/') || ty.ends_with("resourceGroups") {
            continue;
        }
        *per_type.entry(ty).or_default() += 1;
    }
    for (ty, n) in [
        ("Microsoft.Network/networkSecurityGroups", 1),
        ("Microsoft.Network/virtualNetworks", 1),
        ("Microsoft.Network/publicIPAddresses", 1),
        ("Microsoft.Network/loadBalancers", 1),
        ("Microsoft.Network/privateDnsZones", 1),
        ("Microsoft.ManagedIdentity/userAssignedIdentities", 8),
    ] {
        assert_eq!(
            per_type.get(ty).copied().unwrap_or(0),
            n,
            "{ty}: {per_type:#?}"
        );
    }
    let objects = system.mgmt_admin().objects().await.unwrap();
    assert_eq!(
        objects
            .iter()
            .filter(|o| o["kind"] == "HostedCluster")
            .count(),
        1
    );
    assert_eq!(
        objects.iter().filter(|o| o["kind"] == "NodePool").count(),
        1
    );
}

#[tokio::test]
async fn replicas_share_the_work_and_cover_for_each_other() {
    let system = System::start_with(&["--replicas", "2"]).await;
    let pids = system.pids();
    for role in [
        "gateway",
        "coordinator",
        "identity",
        "network",
        "dns",
        "controlplane",
        "nodepool",
    ] {
        assert!(
            pids.contains_key(&format!("{role}-0")) && pids.contains_key(&format!("{role}-1")),
            "{pids:?}"
        );
    }
    system.create("acme", "twins", 1).await;
    // One replica of each worker dies at once; the other carries on while it restarts.
    for name in ["coordinator-0", "identity-0", "network-0", "dns-0"] {
        system.kill9(name);
    }
    let ready = system.watch_to_end("acme", "twins").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
}

/// On a three-server JetStream cluster (R3 streams and buckets, as production runs), one
/// server killed in the middle of a create: the clients fail over to the others, the
/// streams' other copies carry on, the create ends ready with nothing made twice, and its
/// journal is whole.
#[tokio::test]
async fn a_nats_server_killed_mid_create_on_a_three_server_cluster_loses_nothing() {
    let system = System::start_with(&["--nats-servers", "3"]).await;
    system.create("acme", "quorum", 1).await;
    system
        .wait_until("acme", "quorum", "the create to be under way", |c| {
            steps(c).values().any(|(state, _)| state == "succeeded")
        })
        .await;
    let servers = nats_servers(&system);
    assert_eq!(servers.len(), 3, "{servers:?}");
    let (_, n0, _) = servers.iter().find(|s| s.0 == "n0").expect("n0");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(*n0 as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9 nats-server n0");

    let ready = system
        .wait_until("acme", "quorum", "the create to finish", |c| {
            phase(c) != "provisioning" && phase(c) != "accepted"
        })
        .await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    nothing_twice(&system).await;

    // The public journal: every step started and succeeded, the cluster ready once.
    let events = system.audit_events("acme", "quorum").await;
    let count = |ty: &str| events.iter().filter(|e| e["type"] == ty).count();
    assert_eq!(count("cluster.ready"), 1, "{events:#?}");
    let steps = steps(&ready);
    let succeeded: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(|e| e["type"] == "step.succeeded")
        .filter_map(|e| e["step"].as_str())
        .collect();
    assert_eq!(
        succeeded,
        steps.keys().map(String::as_str).collect(),
        "{events:#?}"
    );
}

/// A gRPC client following `WatchCluster` sees nothing of the bus losing its quorum for a
/// while (two of three nats-servers frozen, as in a partition): the gateway's watch of the
/// record (an ordered consumer, which the NATS client recreates) carries on once JetStream is
/// back, after the last state it sent, with no error, no state twice and none out of order.
#[tokio::test]
async fn a_watch_outlives_a_bus_that_loses_its_quorum_for_a_while() {
    use futures::StreamExt;
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let system = System::start_with(&["--nats-servers", "3"]).await;
    system.create("acme", "relay", 1).await;
    let mut client = system.client("acme").await;
    let mut stream = client
        .watch_cluster(hypersaga_api::v1::WatchClusterRequest {
            name: "relay".into(),
        })
        .await
        .expect("watch")
        .into_inner();
    let first = stream
        .next()
        .await
        .expect("a first state")
        .expect("first state");
    assert_ne!(
        phase(&first),
        "ready",
        "the create finished too soon: {first:#?}"
    );

    // Every server but the gateway's: the gateway stays connected, JetStream has no quorum.
    let gateway = nats_server_of(&system, "hypersaga-gateway").await;
    let frozen: Vec<(String, u32)> = nats_servers(&system)
        .into_iter()
        .filter(|(name, _, _)| *name != gateway)
        .map(|(name, pid, _)| (name, pid))
        .collect();
    assert_eq!(frozen.len(), 2, "{frozen:?}");
    for (name, pid) in &frozen {
        kill(Pid::from_raw(*pid as i32), Signal::SIGSTOP)
            .unwrap_or_else(|e| panic!("SIGSTOP nats-server {name}: {e}"));
    }
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    for (name, pid) in &frozen {
        kill(Pid::from_raw(*pid as i32), Signal::SIGCONT)
            .unwrap_or_else(|e| panic!("SIGCONT nats-server {name}: {e}"));
    }

    // The etag is the record's revision, quoted.
    let revision = |c: &hypersaga_api::v1::Cluster| -> u64 {
        c.etag.trim_matches('"').parse().expect("a numeric etag")
    };
    let mut revisions = vec![revision(&first)];
    let mut last = first;
    let rest = async {
        while let Some(item) = stream.next().await {
            let state = item.unwrap_or_else(|e| panic!("the watch broke: {e}"));
            revisions.push(revision(&state));
            last = state;
        }
    };
    tokio::time::timeout(TIMEOUT, rest)
        .await
        .expect("the watch to end with the create");
    assert_eq!(phase(&last), "ready", "{last:#?}");
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "every state once, in order: {revisions:?}"
    );
}

/// The bus server (`n<i>`) that holds the client connection named `name`.
async fn nats_server_of(system: &System, name: &str) -> String {
    for (server, _, monitor) in nats_servers(system) {
        let connz: serde_json::Value = reqwest::get(format!("{monitor}/connz?limit=1024"))
            .await
            .expect("connz")
            .json()
            .await
            .expect("connz json");
        let conns = connz["connections"].as_array().cloned().unwrap_or_default();
        if conns.iter().any(|c| c["name"] == name) {
            return server;
        }
    }
    panic!("no nats-server holds a connection named {name:?}");
}

/// Each bus server's name (`n<i>`), pid and monitoring URL.
fn nats_servers(system: &System) -> Vec<(String, u32, String)> {
    let nats = system.state_dir().join("nats");
    let pids: BTreeMap<String, u32> =
        serde_json::from_slice(&std::fs::read(nats.join("pids.json")).expect("nats pids"))
            .expect("pids");
    pids.into_iter()
        .map(|(server, pid)| {
            let ports = std::fs::read_dir(nats.join(&server).join("ports"))
                .expect("ports dir")
                .filter_map(Result::ok)
                .find(|f| {
                    f.file_name()
                        .to_string_lossy()
                        .ends_with(&format!("_{pid}.ports"))
                })
                .expect("ports file");
            let ports: serde_json::Value =
                serde_json::from_slice(&std::fs::read(ports.path()).expect("ports")).expect("json");
            let monitor = ports["monitoring"][0].as_str().expect("monitoring url");
            (server, pid, monitor.to_owned())
        })
        .collect()
}
