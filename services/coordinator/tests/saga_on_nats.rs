//! The saga engine on a real nats-server: gateway and coordinator in-process, each service
//! replaced by a scripted step handler (a test double), so sequencing, retries, compensation
//! and crash recovery are checked without Azure.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_bus::{Action, Bus, StepCommand, StepError};
use hypersaga_config::{Config, Secret, TenantAzure, TenantConfig};
use hypersaga_model::TenantId;
use hypersaga_procs::NatsServer;
use hypersaga_worker::{Progress, StepHandler, StepResult, WorkerOptions};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const SERVICES: [&str; 5] = ["identity", "network", "dns", "controlplane", "nodepool"];
const TOKEN: &str = "test-token-0123456789";

/// Records every call; fails chosen (step, action) pairs a number of times.
#[derive(Default)]
struct Scripted {
    calls: Mutex<Vec<(String, Action, u32)>>,
    failures: Mutex<HashMap<(String, Action), (u32, bool)>>,
}

#[async_trait::async_trait]
impl StepHandler for Scripted {
    async fn run(&self, cmd: &StepCommand, _p: &Progress) -> Result<StepResult, StepError> {
        self.calls
            .lock()
            .unwrap()
            .push((cmd.step.clone(), cmd.action, cmd.attempt));
        if let Some((left, retryable)) = self
            .failures
            .lock()
            .unwrap()
            .get_mut(&(cmd.step.clone(), cmd.action))
            && *left > 0
        {
            *left -= 1;
            return Err(if *retryable {
                StepError::retryable("InternalServerError", "scripted")
            } else {
                StepError::terminal("AuthorizationFailed", "scripted")
                    .with_target("privateDnsZones")
            });
        }
        let mut out = BTreeMap::new();
        out.insert(
            format!("{}_id", cmd.step.replace(['.', '-'], "_")),
            Value::from(format!("/ids/{}", cmd.step)),
        );
        Ok(StepResult::Done(out))
    }
}

struct Harness {
    _nats: NatsServer,
    _dir: tempfile::TempDir,
    config: Config,
    grpc: String,
    handler: Arc<Scripted>,
    coordinator: Option<(CancellationToken, tokio::task::JoinHandle<()>)>,
    shutdown: CancellationToken,
}

impl Harness {
    async fn start() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let nats = NatsServer::start(dir.path())
            .await
            .expect("nats-server (run scripts/setup.sh)");
        let mut config = Config::default();
        config.nats.url = nats.url().to_owned();
        config.tenants = vec![TenantConfig {
            id: TenantId::new("acme").unwrap(),
            token: Secret::new(TOKEN),
            azure: TenantAzure {
                tenant_id: "t".into(),
                subscription_id: "s".into(),
                client_id: "c".into(),
                client_secret: Secret::new("x"),
            },
        }];
        config.coordinator.base_delay_ms = 50;
        config.coordinator.max_delay_ms = 200;
        config.coordinator.max_attempts = 4;
        config.coordinator.resync_interval_ms = 300;
        config.coordinator.ack_wait_s = 2;
        let shutdown = CancellationToken::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let grpc = format!("http://{}", listener.local_addr().unwrap());
        let (c, s) = (config.clone(), shutdown.clone());
        tokio::spawn(async move { hypersaga_gateway::run(&c, listener, s).await.unwrap() });
        let handler = Arc::new(Scripted::default());
        let bus = Bus::connect(&config.nats.url, "test-workers", "hcp")
            .await
            .unwrap();
        for service in SERVICES {
            let opts = WorkerOptions {
                service: service.into(),
                concurrency: 8,
                ack_wait: Duration::from_secs(2),
                drain_grace: Duration::from_secs(1),
            };
            let (b, h, s) = (
                bus.clone(),
                handler.clone() as Arc<dyn StepHandler>,
                shutdown.clone(),
            );
            tokio::spawn(async move { hypersaga_worker::run(b, h, opts, s).await.unwrap() });
        }
        let mut h = Harness {
            _nats: nats,
            _dir: dir,
            config,
            grpc,
            handler,
            coordinator: None,
            shutdown,
        };
        h.start_coordinator();
        h
    }

    fn start_coordinator(&mut self) {
        let token = self.shutdown.child_token();
        let (c, t) = (self.config.clone(), token.clone());
        let task = tokio::spawn(async move { hypersaga_coordinator::run(&c, t).await.unwrap() });
        self.coordinator = Some((token, task));
    }

    /// Stops the coordinator abruptly: its task is aborted mid-whatever.
    fn crash_coordinator(&mut self) {
        if let Some((_, task)) = self.coordinator.take() {
            task.abort();
        }
    }

    async fn client(
        &self,
    ) -> pb::cluster_service_client::ClusterServiceClient<tonic::transport::Channel> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(c) =
                pb::cluster_service_client::ClusterServiceClient::connect(self.grpc.clone()).await
            {
                return c;
            }
            assert!(Instant::now() < deadline, "gateway did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn call<T>(&self, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        r.metadata_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        r
    }

    async fn wait_phase(&self, name: &str, phase: pb::ClusterPhase) -> pb::Cluster {
        let mut c = self.client().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = c
                .get_cluster(self.call(pb::GetClusterRequest { name: name.into() }).await)
                .await;
            if let Ok(r) = got {
                let cl = r.into_inner();
                if cl.status.as_ref().map(|s| s.phase) == Some(phase as i32) {
                    return cl;
                }
                assert!(
                    Instant::now() < deadline,
                    "timed out waiting for {phase:?}: {cl:#?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn calls(&self) -> Vec<(String, Action, u32)> {
        self.handler.calls.lock().unwrap().clone()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn request(name: &str) -> pb::CreateClusterRequest {
    pb::CreateClusterRequest {
        name: name.into(),
        request_id: String::new(),
        spec: Some(pb::ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "quay.io/x/release:4.21.0".into(),
            node_pools: vec![pb::NodePoolSpec {
                name: "workers".into(),
                replicas: 2,
                vm_size: "Standard_D4s_v5".into(),
            }],
            network: None,
        }),
    }
}

fn position(calls: &[(String, Action, u32)], step: &str, action: Action) -> usize {
    calls
        .iter()
        .position(|(s, a, _)| s == step && *a == action)
        .unwrap_or_else(|| panic!("{step} {action:?} never ran: {calls:?}"))
}

#[tokio::test]
async fn create_then_delete_runs_every_step_in_dependency_order() {
    let h = Harness::start().await;
    let mut c = h.client().await;
    c.create_cluster(h.call(request("demo")).await)
        .await
        .unwrap();
    h.wait_phase("demo", pb::ClusterPhase::Ready).await;
    let calls = h.calls();
    assert_eq!(calls.len(), 12, "each step once: {calls:?}");
    assert!(
        position(&calls, "network.nsg", Action::Do) < position(&calls, "network.vnet", Action::Do)
    );
    assert!(
        position(&calls, "dns.vnet-link", Action::Do)
            < position(&calls, "controlplane.hostedcluster", Action::Do)
    );
    assert!(
        position(&calls, "controlplane.hostedcluster", Action::Do)
            < position(&calls, "nodepool.workers", Action::Do)
    );

    c.delete_cluster(
        h.call(pb::DeleteClusterRequest {
            name: "demo".into(),
            request_id: String::new(),
        })
        .await,
    )
    .await
    .unwrap();
    let deleted_or_gone = async {
        loop {
            match c
                .get_cluster(
                    h.call(pb::GetClusterRequest {
                        name: "demo".into(),
                    })
                    .await,
                )
                .await
            {
                Err(e) if e.code() == tonic::Code::NotFound => break,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), deleted_or_gone)
        .await
        .expect("deleted");
    let calls = h.calls();
    let undos: Vec<&str> = calls
        .iter()
        .filter(|(_, a, _)| *a == Action::Undo)
        .map(|(s, _, _)| s.as_str())
        .collect();
    assert_eq!(
        undos.len(),
        10,
        "everything but the two identity steps is undone: {undos:?}"
    );
    assert!(
        position(&calls, "nodepool.workers", Action::Undo)
            < position(&calls, "controlplane.hostedcluster", Action::Undo)
    );
    assert!(
        position(&calls, "network.vnet", Action::Undo)
            < position(&calls, "network.nsg", Action::Undo)
    );
    assert!(
        position(&calls, "network.nsg", Action::Undo)
            < position(&calls, "network.resource-groups", Action::Undo)
    );
}

#[tokio::test]
async fn retryable_failures_retry_and_terminal_failures_compensate() {
    let h = Harness::start().await;
    h.handler
        .failures
        .lock()
        .unwrap()
        .insert(("network.vnet".into(), Action::Do), (2, true));
    let mut c = h.client().await;
    c.create_cluster(h.call(request("bumpy")).await)
        .await
        .unwrap();
    let ready = h.wait_phase("bumpy", pb::ClusterPhase::Ready).await;
    let vnet = ready
        .status
        .unwrap()
        .operation
        .unwrap()
        .steps
        .into_iter()
        .find(|s| s.id == "network.vnet")
        .unwrap();
    assert_eq!(vnet.attempts, 3);

    h.handler
        .failures
        .lock()
        .unwrap()
        .insert(("dns.private-zone".into(), Action::Do), (1, false));
    c.create_cluster(h.call(request("doomed")).await)
        .await
        .unwrap();
    let failed = h.wait_phase("doomed", pb::ClusterPhase::Failed).await;
    let err = failed.status.unwrap().error.unwrap();
    assert_eq!(
        (err.step.as_str(), err.code.as_str()),
        ("dns.private-zone", "AuthorizationFailed")
    );
    let calls = h.calls();
    let undone: Vec<&str> = calls
        .iter()
        .filter(|(_, a, _)| *a == Action::Undo)
        .map(|(s, _, _)| s.as_str())
        .collect();
    assert!(
        undone.contains(&"dns.private-zone") && undone.contains(&"network.resource-groups"),
        "{undone:?}"
    );
    assert!(
        !undone.iter().any(|s| s.starts_with("identity.")),
        "{undone:?}"
    );
}

#[tokio::test]
async fn a_crashed_coordinator_is_replaced_and_the_saga_finishes_once() {
    let mut h = Harness::start().await;
    // Slow the saga down in the middle so the crash lands mid-way.
    h.handler
        .failures
        .lock()
        .unwrap()
        .insert(("network.load-balancer".into(), Action::Do), (2, true));
    let mut c = h.client().await;
    c.create_cluster(h.call(request("phoenix")).await)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !h
        .calls()
        .iter()
        .any(|(s, _, _)| s == "network.load-balancer")
    {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    h.crash_coordinator();
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.start_coordinator();
    h.wait_phase("phoenix", pb::ClusterPhase::Ready).await;
    let calls = h.calls();
    let mut per_step: BTreeMap<(String, u32), usize> = BTreeMap::new();
    for (s, _, attempt) in &calls {
        *per_step.entry((s.clone(), *attempt)).or_default() += 1;
    }
    // Redelivery may repeat an attempt (that is why handlers are idempotent), but no step runs
    // more attempts than its failures require.
    let lb_attempts = calls
        .iter()
        .filter(|(s, _, _)| s == "network.load-balancer")
        .map(|(_, _, a)| *a)
        .max();
    assert_eq!(lb_attempts, Some(3), "{calls:?}");
    assert!(
        calls
            .iter()
            .filter(|(s, _, _)| s == "controlplane.hostedcluster")
            .all(|(_, _, a)| *a == 1)
    );
}

#[tokio::test]
async fn a_stale_command_is_fenced_off_by_the_saga_record() {
    let h = Harness::start().await;
    let mut c = h.client().await;
    c.create_cluster(h.call(request("fenced")).await)
        .await
        .unwrap();
    let ready = h.wait_phase("fenced", pb::ClusterPhase::Ready).await;
    let before = h.calls().len();

    // Replay the first command of a step that finished long ago, as a republish after the
    // de-duplication window would.
    let op = ready.status.unwrap().operation.unwrap().id;
    let bus = Bus::connect(&h.config.nats.url, "stale-publisher", "hcp")
        .await
        .unwrap();
    let sagas = bus.sagas().await.unwrap();
    let saga: hypersaga_saga::Saga = serde_json::from_slice(
        &sagas
            .entry(format!("acme.{op}"))
            .await
            .unwrap()
            .unwrap()
            .value,
    )
    .unwrap();
    let stale = StepCommand {
        v: 1,
        saga_id: op.clone(),
        tenant: TenantId::new("acme").unwrap(),
        cluster: "fenced".into(),
        step: "network.vnet".into(),
        action: Action::Do,
        attempt: 1,
        fence: 1,
        not_before: None,
        deadline: saga.deadline,
        lease_ms: 60_000,
        memo: Value::Null,
        waiting_since: None,
        context: saga.context.clone(),
    };
    let subject = bus.subjects().cmd(&stale.tenant, "network");
    bus.publish_json(
        &subject,
        "replayed-after-window",
        &hypersaga_telemetry::TraceParent::new_root(),
        &stale,
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        h.calls().len(),
        before,
        "the stale command must not run: {:?}",
        &h.calls()[before..]
    );
}

#[tokio::test]
async fn listing_while_records_change_shows_each_cluster_once() {
    let h = Harness::start().await;
    let mut c = h.client().await;
    for name in ["one", "two"] {
        c.create_cluster(h.call(request(name)).await).await.unwrap();
    }
    h.wait_phase("two", pb::ClusterPhase::Ready).await;
    // Rewrite the records continuously, as the coordinator does during sagas.
    let bus = Bus::connect(&h.config.nats.url, "churn", "hcp")
        .await
        .unwrap();
    let clusters = bus.clusters().await.unwrap();
    let churn = tokio::spawn(async move {
        for _ in 0..300 {
            for key in ["acme.one", "acme.two"] {
                if let Ok(Some(e)) = clusters.entry(key).await {
                    let _ = clusters.put(key, e.value).await;
                }
            }
        }
    });
    for _ in 0..40 {
        let names: Vec<String> = c
            .list_clusters(h.call(pb::ListClustersRequest {}).await)
            .await
            .unwrap()
            .into_inner()
            .clusters
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, vec!["one", "two"]);
    }
    churn.abort();
}
