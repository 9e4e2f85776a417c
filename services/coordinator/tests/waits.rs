//! Waits hold no worker slot: hundreds of clusters waiting on control planes that never come
//! up do not stop another cluster from being built, with only a handful of worker slots.
//!
//! The real gateway, coordinator and worker runtime on a real nats-server; each service is a
//! scripted step handler (a test double) whose HostedCluster step, for the `slow-` clusters,
//! answers "wait" forever — as a HostedCluster stuck short of `Available` would.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_bus::{Bus, StepCommand, StepError};
use hypersaga_config::{Config, Secret, TenantAzure, TenantConfig};
use hypersaga_model::TenantId;
use hypersaga_procs::NatsServer;
use hypersaga_worker::{Progress, StepHandler, StepResult, WorkerOptions};
use tokio_util::sync::CancellationToken;

const SERVICES: [&str; 5] = ["identity", "network", "dns", "controlplane", "nodepool"];
const TOKEN: &str = "test-token-0123456789";
/// Far more waiting clusters than slots (the figure is 1,000: `hypersaga bench waits`
/// runs that, and times the other cluster's first step; the suite keeps to what a 2-core CI
/// machine builds in a minute, which already proves the point: were a wait to hold a slot,
/// 4 slots per service would all be gone).
const WAITING: usize = 300;
/// Steps each replica of a service runs at once: far fewer than the clusters waiting.
const SLOTS: usize = 4;

/// Every step succeeds at once, except the HostedCluster of a `slow-` cluster: never ready.
#[derive(Default)]
struct Scripted {
    waiting: Mutex<HashSet<String>>,
    started: Mutex<Vec<(String, String, Instant)>>,
}

#[async_trait::async_trait]
impl StepHandler for Scripted {
    async fn run(&self, cmd: &StepCommand, _p: &Progress) -> Result<StepResult, StepError> {
        self.started
            .lock()
            .unwrap()
            .push((cmd.cluster.clone(), cmd.step.clone(), Instant::now()));
        if cmd.step == "controlplane.hostedcluster" && cmd.cluster.starts_with("slow-") {
            self.waiting.lock().unwrap().insert(cmd.cluster.clone());
            return Ok(StepResult::wait(
                "Available=False (ControlPlaneComponentsNotAvailable)",
                Duration::from_secs(10),
            ));
        }
        Ok(StepResult::Done(Default::default()))
    }
}

fn request(name: &str) -> pb::CreateClusterRequest {
    pb::CreateClusterRequest {
        validate_only: false,
        labels: Default::default(),
        name: name.into(),
        request_id: String::new(),
        spec: Some(pb::ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "quay.io/x/release:4.21.0".into(),
            node_pools: vec![pb::NodePoolSpec {
                name: "workers".into(),
                replicas: Some(1),
                vm_size: "Standard_D4s_v5".into(),
                ..Default::default()
            }],
            network: None,
            addons: Vec::new(),
        }),
    }
}

/// Creates `name`, retrying with the same request id while the gateway answers UNAVAILABLE
/// (as a client of a loaded system would).
async fn create_with_retries(
    c: &mut pb::cluster_service_client::ClusterServiceClient<tonic::transport::Channel>,
    name: &str,
) {
    let mut req = request(name);
    req.request_id = format!("req-{name}");
    for _ in 0..20 {
        match c.create_cluster(authed(req.clone())).await {
            Ok(_) => return,
            Err(s) if s.code() == tonic::Code::Unavailable => {
                tokio::time::sleep(Duration::from_millis(500)).await
            }
            Err(s) => panic!("create {name} refused: {s}"),
        }
    }
    panic!("create {name} kept failing");
}

fn authed<T>(msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_waiting_clusters_hold_no_worker_slot() {
    let dir = tempfile::tempdir().unwrap();
    let nats = NatsServer::start(dir.path())
        .await
        .expect("nats-server (run scripts/setup.sh)");
    let mut config = Config::default();
    config.nats.url = nats.url().to_owned();
    config.tenants = vec![TenantConfig {
        id: TenantId::new("acme").unwrap(),
        tokens: vec![hypersaga_config::TokenDigest::of(TOKEN)],
        audit_credentials: Vec::new(),
        azure: TenantAzure {
            tenant_id: "t".into(),
            subscription_id: "s".into(),
            client_id: "c".into(),
            client_secret: Some(Secret::new("x")),
        },
    }];
    config.coordinator.concurrency = 64;
    config.coordinator.recheck_max_ms = 10_000;
    // This test is about slots, not admission: let the tenant have a thousand clusters.
    config.quotas.max_clusters = 2 * WAITING as u32;
    config.quotas.max_operations_in_flight = 2 * WAITING as u32;
    config.gateway.requests_per_sec_per_tenant = 0;
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let grpc = format!("http://{}", listener.local_addr().unwrap());
    let (c, s) = (config.clone(), shutdown.clone());
    tokio::spawn(async move { hypersaga_gateway::run(&c, listener, s).await.unwrap() });
    let (c, s) = (config.clone(), shutdown.clone());
    tokio::spawn(async move { hypersaga_coordinator::run(&c, s).await.unwrap() });
    let handler = Arc::new(Scripted::default());
    let bus = Bus::connect(&config.nats.url, "test-workers", "hcp")
        .await
        .unwrap();
    for service in SERVICES {
        let opts = WorkerOptions {
            service: service.into(),
            tenants: config.tenants.iter().map(|t| t.id.clone()).collect(),
            concurrency: SLOTS,
            ack_wait: Duration::from_secs(10),
            drain_grace: Duration::from_secs(1),
        };
        let (b, h, s) = (
            bus.clone(),
            handler.clone() as Arc<dyn StepHandler>,
            shutdown.clone(),
        );
        tokio::spawn(async move { hypersaga_worker::run(b, h, opts, s).await.unwrap() });
    }
    let client = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(c) =
                pb::cluster_service_client::ClusterServiceClient::connect(grpc.clone()).await
            {
                break c;
            }
            assert!(Instant::now() < deadline, "gateway did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };

    // A thousand clusters, all of which end up waiting on their control plane.
    let started = Instant::now();
    let mut creates = tokio::task::JoinSet::new();
    for batch in 0..WAITING / 50 {
        for i in 0..50 {
            let mut c = client.clone();
            let name = format!("slow-{:04}", batch * 50 + i);
            creates.spawn(async move { create_with_retries(&mut c, &name).await });
        }
        while let Some(r) = creates.join_next().await {
            r.unwrap();
        }
    }
    println!("{WAITING} creates accepted after {:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let n = handler.waiting.lock().unwrap().len();
        if n == WAITING {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {n} of {WAITING} clusters reached their control-plane wait"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{WAITING} clusters waiting on their control plane after {:?}",
        started.elapsed()
    );

    // Every slot would be taken if a wait held one; instead another cluster goes all the way.
    let asked = Instant::now();
    let mut c = client.clone();
    c.create_cluster(authed(request("fast")))
        .await
        .expect("create fast");
    let deadline = Instant::now() + Duration::from_secs(60);
    let fast = loop {
        let got = c
            .get_cluster(authed(pb::GetClusterRequest {
                name: "fast".into(),
            }))
            .await
            .expect("get")
            .into_inner();
        if got.status.as_ref().map(|s| s.phase) == Some(pb::ClusterPhase::Ready as i32) {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "the fast cluster did not become ready behind {WAITING} waiting ones: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let first_step = handler
        .started
        .lock()
        .unwrap()
        .iter()
        .filter(|(cluster, _, _)| cluster == "fast")
        .map(|(_, _, at)| *at)
        .min()
        .expect("the fast cluster's steps ran");
    println!(
        "first step of a new cluster started {:?} after it was accepted, with {WAITING} clusters waiting and {SLOTS} slots per service",
        first_step.saturating_duration_since(asked)
    );
    assert_eq!(
        fast.status.unwrap().operation.unwrap().state,
        pb::OperationState::Succeeded as i32
    );

    // The waiting ones are still waiting, not failed or paused.
    let mut c = client.clone();
    let page = c
        .list_operations(authed(pb::ListOperationsRequest {
            state: pb::OperationState::Paused as i32,
            page_size: 10,
            ..Default::default()
        }))
        .await
        .expect("list")
        .into_inner();
    assert!(
        page.operations.is_empty(),
        "nothing paused: {:?}",
        page.operations.first()
    );

    // Their steps raced by faster than their cluster records are written progress-only, yet
    // each record comes to show what its cluster now waits on: the progress put off is
    // written. Put off means a little later: under a thousand rechecks on two cores the
    // catch-up has been seen to lag by seconds, so allow some.
    for name in ["slow-0000", "slow-0150", "slow-0299"] {
        let deadline = Instant::now() + Duration::from_secs(15);
        let steps = loop {
            let got = c
                .get_cluster(authed(pb::GetClusterRequest { name: name.into() }))
                .await
                .expect("get")
                .into_inner();
            let steps = got.status.unwrap().operation.unwrap().steps;
            let hc = steps
                .iter()
                .find(|s| s.id == "controlplane.hostedcluster")
                .expect("the HostedCluster step");
            if hc.message.contains("ControlPlaneComponentsNotAvailable") {
                break steps;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: the record never showed the wait: {hc:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let done = steps
            .iter()
            .filter(|s| s.state == pb::StepState::Succeeded as i32)
            .count();
        assert!(
            done >= 8,
            "{name}: only {done} steps shown done: {steps:#?}"
        );
    }
}
