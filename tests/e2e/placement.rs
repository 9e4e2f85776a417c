//! Several management clusters: creates are placed in their region on the one with the most
//! room, never beyond its capacity; a cordoned one gets nothing new; everything a cluster
//! does later happens on the one it was placed on.

use std::collections::BTreeMap;

use hypersaga_api::v1 as pb;
use serde_json::Value;

use crate::support::*;

/// The admin API as `hypersaga dev`'s admin.
async fn admin(system: &System) -> hypersaga::client::AdminClient {
    hypersaga::client::connect_admin(
        &system.endpoints.grpc,
        system
            .endpoints
            .admin_token
            .as_deref()
            .expect("admin token"),
        Some(&system.endpoints.ca_bundle),
    )
    .await
    .expect("admin client")
}

/// The objects of management cluster `name`'s emulator.
async fn objects_on(system: &System, name: &str) -> Vec<Value> {
    mgmt_admin_of(system, name)
        .objects()
        .await
        .expect("objects")
}

async fn management_cluster_of(system: &System, name: &str) -> String {
    let mut c = system.client("acme").await;
    c.get_cluster(pb::GetClusterRequest { name: name.into() })
        .await
        .expect("get")
        .into_inner()
        .status
        .expect("status")
        .management_cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_fill_management_clusters_by_room_and_a_full_or_cordoned_region_refuses() {
    let system = System::start_with(&[
        "--management-clusters",
        "2",
        "--management-cluster-capacity",
        "3",
    ])
    .await;
    let mut admin = admin(&system).await;

    // Six at once: three and three.
    let names: Vec<String> = (1..=6).map(|i| format!("p{i}")).collect();
    futures::future::join_all(names.iter().map(|n| system.create("acme", n, 0))).await;
    let mut placed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in &names {
        placed
            .entry(management_cluster_of(&system, n).await)
            .or_default()
            .push(n.clone());
    }
    assert_eq!(
        placed.values().map(Vec::len).collect::<Vec<_>>(),
        vec![3, 3],
        "{placed:?}"
    );
    assert_eq!(placed.keys().cloned().collect::<Vec<_>>(), ["mc-1", "mc-2"]);

    // The seventh: refused, naming the region and each one's fill.
    let mut acme = system.client("acme").await;
    let refused = acme
        .create_cluster(create_request("p7", 0))
        .await
        .expect_err("no room");
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("region eastus"),
        "{}",
        refused.message()
    );
    assert!(
        refused.message().contains("mc-1 full (3/3)"),
        "{}",
        refused.message()
    );
    let listed = admin
        .list_management_clusters(pb::ListManagementClustersRequest {})
        .await
        .expect("list")
        .into_inner()
        .management_clusters;
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .all(|m| m.free == Some(0) && m.clusters.len() == 3),
        "{listed:?}"
    );

    // Everything a cluster does happens on its own management cluster: a node pool too.
    let first = &placed["mc-1"][0];
    let ready = system.watch_to_end("acme", first).await;
    assert_eq!(phase(&ready), "ready", "{ready:?}");
    acme.create_node_pool(pb::CreateNodePoolRequest {
        validate_only: false,
        cluster: first.clone(),
        node_pool: Some(pb::NodePoolSpec {
            name: "extra".into(),
            replicas: Some(1),
            vm_size: "Standard_D4s_v5".into(),
            ..Default::default()
        }),
        request_id: String::new(),
    })
    .await
    .expect("add a node pool");
    let pool = format!("{first}-extra");
    let is_pool = |o: &Value| o["kind"] == "NodePool" && o["metadata"]["name"] == pool.as_str();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !objects_on(&system, "mc-1").await.iter().any(is_pool) {
        assert!(
            std::time::Instant::now() < deadline,
            "the pool never reached mc-1"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        !objects_on(&system, "mc-2").await.iter().any(is_pool),
        "the pool went to mc-2"
    );

    // Cordoned (from the command line), mc-1 gets nothing new even once a slot frees;
    // uncordoned, it does.
    let cordoned = hypersaga(
        &system,
        &[
            "management-cluster",
            "cordon",
            "mc-1",
            "--reason",
            "kernel upgrade",
            "-o",
            "json",
        ],
    );
    assert!(cordoned.status.success(), "{}", text(&cordoned));
    let shown: Value = serde_json::from_slice(&cordoned.stdout).expect("json");
    assert_eq!(shown["cordoned"], true, "{shown}");
    assert_eq!(shown["cordoned_by"], "admin:dev", "{shown}");
    let second = placed["mc-1"][1].clone();
    system.watch_to_end("acme", &second).await;
    system.delete("acme", &second).await;
    let gone = system.watch_to_end("acme", &second).await;
    assert_eq!(phase(&gone), "deleted", "{gone:?}");
    let refused = acme
        .create_cluster(create_request("p8", 0))
        .await
        .expect_err("cordoned and full");
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("mc-1 cordoned (kernel upgrade)"),
        "{}",
        refused.message()
    );
    admin
        .uncordon_management_cluster(pb::UncordonManagementClusterRequest {
            name: "mc-1".into(),
        })
        .await
        .expect("uncordon");
    acme.create_cluster(create_request("p8", 0))
        .await
        .expect("room again on mc-1");
    assert_eq!(management_cluster_of(&system, "p8").await, "mc-1");
    let list = hypersaga(&system, &["management-cluster", "list", "-o", "wide"]);
    let said = text(&list);
    assert!(list.status.success(), "{said}");
    assert!(said.contains("mc-1") && said.contains("acme/p8"), "{said}");
}

/// The admin API of management cluster `name`'s emulator.
fn mgmt_admin_of(
    system: &System,
    name: &str,
) -> hypersaga_emulator_mgmt::admin_client::AdminClient {
    let m = system
        .endpoints
        .management_clusters
        .iter()
        .find(|m| m.name == name)
        .expect("management cluster");
    hypersaga_emulator_mgmt::admin_client::AdminClient::new(m.admin_url.clone())
}

/// A step's deadline in this test's system (`--step-timeout`): shorter than the fast
/// profile's 120 s, long enough for any step of a healthy create under the suite's load.
const STEP_DEADLINE: std::time::Duration = std::time::Duration::from_secs(45);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_management_cluster_that_fails_holds_up_only_its_own_clusters() {
    let system = System::start_with(&[
        "--management-clusters",
        "2",
        "--management-cluster-capacity",
        "3",
        "--step-timeout",
        &STEP_DEADLINE.as_secs().to_string(),
    ])
    .await;
    // mc-1's API server answers every request 503 until told otherwise.
    mgmt_admin_of(&system, "mc-1")
        .add_api_fault(&hypersaga_emulator_mgmt::ApiFault {
            verb: "*".into(),
            resource: "*".into(),
            name_contains: None,
            status: 503,
            message: Some("injected: the API server is gone".into()),
            retry_after_secs: None,
            count: None,
        })
        .await
        .expect("fault");
    // Equal room: the first goes to mc-1, the second to mc-2.
    system.create("acme", "on-one", 0).await;
    system.create("acme", "on-two", 0).await;
    assert_eq!(management_cluster_of(&system, "on-one").await, "mc-1");
    assert_eq!(management_cluster_of(&system, "on-two").await, "mc-2");
    let two = system.watch_to_end("acme", "on-two").await;
    assert_eq!(phase(&two), "ready", "{two:?}");
    // mc-1's cluster is held at its first management-cluster step (its attempt keeps meeting
    // 503s until the step's deadline), then pauses; mc-2's was
    // built meanwhile. The wait is that deadline and the time to act on it, under load.
    let one = system
        .wait_until_within(
            "acme",
            "on-one",
            "its operation to pause",
            STEP_DEADLINE + TIMEOUT,
            |c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.operation.as_ref())
                    .is_some_and(|o| o.state == pb::OperationState::Paused as i32)
            },
        )
        .await;
    let op = one
        .status
        .as_ref()
        .and_then(|s| s.operation.clone())
        .expect("operation");
    let reason = op.pause.and_then(|p| p.reason).expect("why it paused");
    assert_eq!(reason.step, "controlplane.hostedcluster", "{reason:?}");
}
