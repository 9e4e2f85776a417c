//! The saga engine on a real nats-server: gateway and coordinator in-process, each service
//! replaced by a scripted step handler (a test double), so sequencing, retries, compensation
//! and crash recovery are checked without Azure.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_bus::{Action, Bus, SagaWake, StepCommand, StepError};
use hypersaga_config::{Config, QuotaOverrides, Secret, TenantAzure, TenantConfig};
use hypersaga_model::names::infra_id;
use hypersaga_model::record::{
    CLUSTER_RECORD_VERSION, OperationIntent, OperationKind, OperationState, OperationView,
    StepState,
};
use hypersaga_model::{
    ClusterPhase, ClusterRecord, ClusterSpec, NetworkSpec, NodePoolSpec, TenantId,
};
use hypersaga_procs::NatsServer;
use hypersaga_telemetry::TraceParent;
use hypersaga_worker::{Progress, StepHandler, StepResult, WorkerOptions};
use serde_json::Value;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;
use tonic_types::StatusExt;

const SERVICES: [&str; 5] = ["identity", "network", "dns", "controlplane", "nodepool"];
const TOKEN: &str = "test-token-0123456789";
/// The second tenant's token.
const GLOBEX: &str = "globex-token-0123456789";

/// Records every call; fails chosen (step, action) pairs a number of times, and never answers
/// for the steps in `hang` (its worker heartbeats meanwhile). Every call counts as a change
/// outside (as a real step's PUT would), so it asks the worker's fence first and records
/// nothing when refused.
#[derive(Default)]
struct Scripted {
    calls: Mutex<Vec<(String, Action, u32)>>,
    failures: Mutex<HashMap<(String, Action), (u32, bool)>>,
    hang: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl StepHandler for Scripted {
    async fn run(&self, cmd: &StepCommand, _p: &Progress) -> Result<StepResult, StepError> {
        hypersaga_worker::before_mutation()
            .await
            .map_err(|e| StepError::retryable("Fenced", e.to_string()))?;
        self.calls
            .lock()
            .unwrap()
            .push((cmd.step.clone(), cmd.action, cmd.attempt));
        if self.hang.lock().unwrap().contains(&cmd.step) {
            std::future::pending::<()>().await;
        }
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
        Self::start_with(|_| {}).await
    }

    /// Tenants `acme` ([`TOKEN`]) and `globex` ([`GLOBEX`]); `tweak` adjusts the config.
    async fn start_with(tweak: impl FnOnce(&mut Config)) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let nats = NatsServer::start(dir.path())
            .await
            .expect("nats-server (run scripts/setup.sh)");
        let mut config = Config::default();
        config.nats.url = nats.url().to_owned();
        let tenant = |id: &str, token: &str| TenantConfig {
            id: TenantId::new(id).unwrap(),
            tokens: vec![hypersaga_config::TokenDigest::of(token)],
            audit_credentials: Vec::new(),
            azure: TenantAzure {
                tenant_id: "t".into(),
                subscription_id: "s".into(),
                client_id: "c".into(),
                client_secret: Some(Secret::new("x")),
            },
        };
        config.tenants = vec![tenant("acme", TOKEN), tenant("globex", GLOBEX)];
        config.coordinator.base_delay_ms = 50;
        config.coordinator.max_delay_ms = 200;
        config.coordinator.max_attempts = 4;
        config.coordinator.resync_interval_ms = 300;
        config.coordinator.ack_wait_s = 2;
        tweak(&mut config);
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
                tenants: config.tenants.iter().map(|t| t.id.clone()).collect(),
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
        self.call_as(TOKEN, msg)
    }

    fn call_as<T>(&self, token: &str, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        r.metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        r
    }

    async fn wait_phase(&self, name: &str, phase: pb::ClusterPhase) -> pb::Cluster {
        let mut c = self.client().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = c
                .get_cluster(self.call(pb::GetClusterRequest { name: name.into() }).await)
                .await;
            match got {
                Ok(r) => {
                    let cl = r.into_inner();
                    if cl.status.as_ref().map(|s| s.phase) == Some(phase as i32) {
                        return cl;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "timed out waiting for {phase:?}: {cl:#?}"
                    );
                }
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "timed out waiting for {phase:?}: {e}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Creates cluster `name` as tenant `acme`; the operation's id.
    async fn create(&self, name: &str) -> String {
        let mut c = self.client().await;
        c.create_cluster(self.call(request(name)).await)
            .await
            .unwrap()
            .into_inner()
            .id
    }

    /// Deletes cluster `name` as tenant `acme`; the operation's id.
    async fn delete(&self, name: &str) -> String {
        let mut c = self.client().await;
        let req = pb::DeleteClusterRequest {
            name: name.into(),
            ..Default::default()
        };
        c.delete_cluster(self.call(req).await)
            .await
            .unwrap()
            .into_inner()
            .id
    }

    /// A connection to the bus, to look at what the system wrote.
    async fn bus(&self) -> Bus {
        Bus::connect(&self.config.nats.url, "test-reader", "hcp")
            .await
            .unwrap()
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
                replicas: Some(2),
                vm_size: "Standard_D4s_v5".into(),
                ..Default::default()
            }],
            network: None,
            addons: Vec::new(),
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
    assert_eq!(calls.len(), 15, "each step once: {calls:?}");
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
            ..Default::default()
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
        12,
        "everything but the tenant's issuer is undone: {undos:?}"
    );
    assert!(!undos.contains(&"identity.oidc"), "{undos:?}");
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
    assert!(!undone.contains(&"identity.oidc"), "{undone:?}");
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
        dispatched_in: None,
        context: saga.context.clone(),
    };
    // Whatever the network service reports from now on.
    let mut reports = bus
        .client()
        .subscribe(bus.subjects().evt(&stale.tenant, "network"))
        .await
        .unwrap();
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
        "the stale command must change nothing: {:?}",
        &h.calls()[before..]
    );
    let reported = tokio::time::timeout(
        Duration::from_millis(100),
        futures::StreamExt::next(&mut reports),
    )
    .await;
    assert!(
        reported.is_err(),
        "a stale command reports nothing: {reported:?}"
    );
    // Dropped (acknowledged), not handed back to come again.
    let mut queue = bus
        .jetstream()
        .get_stream(hypersaga_bus::CMD_STREAM)
        .await
        .unwrap()
        .get_consumer::<async_nats::jetstream::consumer::pull::Config>(
            &hypersaga_bus::subjects::worker_consumer("network", &stale.tenant),
        )
        .await
        .unwrap();
    let info = queue.info().await.unwrap();
    assert_eq!((info.num_pending, info.num_ack_pending), (0, 0), "{info:?}");
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
            .list_clusters(h.call(pb::ListClustersRequest::default()).await)
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

/// A cluster record as the gateway writes it to accept a create: the record, naming its new
/// operation, and nothing else.
fn accepted_record(name: &str, op_id: &str, trace_id: &str) -> ClusterRecord {
    let now = OffsetDateTime::now_utc();
    let uid = format!("uid-{name}");
    ClusterRecord {
        v: CLUSTER_RECORD_VERSION,
        tenant: TenantId::new("acme").unwrap(),
        name: name.into(),
        infra_id: infra_id(name, &uid),
        uid,
        spec: ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "quay.io/x/release:4.21.0".into(),
            node_pools: vec![NodePoolSpec::new("workers", 2, "Standard_D4s_v5")],
            network: NetworkSpec::default(),
            addons: Vec::new(),
        },
        created_at: now,
        create_request_id: None,
        delete_request_id: None,
        phase: ClusterPhase::Accepted,
        message: "accepted".into(),
        error: None,
        operation: OperationView {
            id: op_id.into(),
            cluster: name.into(),
            kind: OperationKind::Create,
            state: OperationState::Running,
            started_at: now,
            ended_at: None,
            deadline: now + time::Duration::hours(1),
            error: None,
            steps: Vec::new(),
            request_id: None,
            pause: None,
            node_pool: None,
            addon: None,
        },
        resources: BTreeMap::new(),
        owned: BTreeMap::new(),
        saga_seq: 0,
        management_cluster: "default".into(),
        labels: Default::default(),
        intent: Some(OperationIntent {
            operation: op_id.into(),
            actor: "tenant:acme".into(),
            trace_id: trace_id.into(),
            previous_operation: None,
            supersedes: None,
            keep_identities: false,
        }),
    }
}

/// Makes the audit stream's de-duplication remember message ids for 100 ms only, so that an
/// event published again is stored again. Returns the stream.
async fn forget_message_ids(bus: &Bus) -> async_nats::jetstream::stream::Stream {
    let js = bus.jetstream();
    let mut audit = js.get_stream(hypersaga_bus::AUDIT_STREAM).await.unwrap();
    let mut config = audit.info().await.unwrap().config.clone();
    config.duplicate_window = Duration::from_millis(100);
    js.update_stream(config).await.unwrap();
    audit
}

/// Publishes a tick of the saga `op` of tenant `acme`, as its timer does when it fires.
async fn fire_timer(bus: &Bus, op: &str, id: &str) {
    let tenant = TenantId::new("acme").unwrap();
    let tick = SagaWake {
        v: hypersaga_bus::ENVELOPE_VERSION,
        tenant: tenant.clone(),
        saga_id: op.to_owned(),
        cluster: None,
    };
    bus.publish_json(
        &bus.subjects().saga_tick(&tenant),
        &format!("{op}:{id}"),
        &TraceParent::new_root(),
        &tick,
    )
    .await
    .unwrap();
}

async fn saga_of(bus: &Bus, op: &str) -> Option<hypersaga_saga::Saga> {
    let sagas = bus.sagas().await.unwrap();
    let entry = sagas.entry(format!("acme.{op}")).await.unwrap()?;
    Some(serde_json::from_slice(&entry.value).unwrap())
}

#[tokio::test]
async fn an_accept_written_as_the_gateway_does_is_built_and_runs_to_ready() {
    // No resync after the one at start-up: the wake-up alone must build the saga.
    let h = Harness::start_with(|c| c.coordinator.resync_interval_ms = 3_600_000).await;
    let bus = Bus::connect(&h.config.nats.url, "test-gateway", "hcp")
        .await
        .unwrap();
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let rec = accepted_record("solo", "op-solo", trace_id);
    let clusters = bus.clusters().await.unwrap();
    clusters
        .create("acme.solo", serde_json::to_vec(&rec).unwrap().into())
        .await
        .unwrap();
    let wake = SagaWake {
        v: 1,
        tenant: rec.tenant.clone(),
        saga_id: "op-solo".into(),
        cluster: Some("solo".into()),
    };
    bus.publish_json(
        &bus.subjects().saga_start(&rec.tenant),
        "op-solo:wake",
        &TraceParent::with_trace_id(trace_id),
        &wake,
    )
    .await
    .unwrap();
    let ready = h.wait_phase("solo", pb::ClusterPhase::Ready).await;
    assert_eq!(ready.status.unwrap().operation.unwrap().id, "op-solo");
    assert_eq!(h.calls().len(), 15, "each step once: {:?}", h.calls());
    // The saga is the record's: who asked, the trace, when it started, its deadline.
    let saga = saga_of(&bus, "op-solo").await.expect("saga built");
    assert_eq!(saga.actor, "tenant:acme");
    assert_eq!(saga.trace_id, trace_id);
    assert_eq!(saga.created_at, rec.operation.started_at);
    assert_eq!(saga.deadline, rec.operation.deadline);
}

#[tokio::test]
async fn an_accept_whose_wake_up_was_lost_is_started_by_the_resync() {
    let mut h = Harness::start().await;
    h.crash_coordinator();
    let bus = Bus::connect(&h.config.nats.url, "test-gateway", "hcp")
        .await
        .unwrap();
    let rec = accepted_record("orphan", "op-orphan", "0af7651916cd43dd8448eb211c80319c");
    bus.clusters()
        .await
        .unwrap()
        .create("acme.orphan", serde_json::to_vec(&rec).unwrap().into())
        .await
        .unwrap();
    // No wake-up, no saga: GetOperation answers from the record meanwhile.
    let mut c = h.client().await;
    let op = c
        .get_operation(
            h.call(pb::GetOperationRequest {
                id: "op-orphan".into(),
            })
            .await,
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (op.state, op.kind, op.cluster.as_str(), op.steps.len()),
        (
            pb::OperationState::Running as i32,
            pb::OperationKind::Create as i32,
            "orphan",
            0
        )
    );
    // Another tenant does not see it; an unknown operation is still not found.
    for (token, id) in [(GLOBEX, "op-orphan"), (TOKEN, "op-nothing")] {
        let e = c
            .get_operation(h.call_as(token, pb::GetOperationRequest { id: id.into() }))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound, "{id}");
    }
    assert!(saga_of(&bus, "op-orphan").await.is_none());
    h.start_coordinator();
    h.wait_phase("orphan", pb::ClusterPhase::Ready).await;
    let saga = saga_of(&bus, "op-orphan")
        .await
        .expect("built by the resync");
    assert_eq!(saga.trace_id, "0af7651916cd43dd8448eb211c80319c");
}

#[tokio::test]
async fn quotas_refuse_clusters_and_operations_beyond_them_naming_the_quota() {
    let h = Harness::start_with(|c| {
        c.quotas.tenants.insert(
            "acme".into(),
            QuotaOverrides {
                max_clusters: Some(2),
                ..Default::default()
            },
        );
        c.quotas.tenants.insert(
            "globex".into(),
            QuotaOverrides {
                max_operations_in_flight: Some(1),
                ..Default::default()
            },
        );
    })
    .await;
    let mut c = h.client().await;
    let mut b = request("b");
    b.request_id = "create-b".into();
    c.create_cluster(h.call(request("a")).await).await.unwrap();
    let first = c
        .create_cluster(h.call(b.clone()).await)
        .await
        .unwrap()
        .into_inner();
    let e = c
        .create_cluster(h.call(request("c")).await)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message().contains("max_clusters") && e.message().contains("at most 2"),
        "{}",
        e.message()
    );
    let failure = e.get_details_quota_failure().expect("QuotaFailure");
    assert_eq!(failure.violations.len(), 1);
    assert_eq!(failure.violations[0].subject, "tenant:acme");
    assert!(
        failure.violations[0].description.contains("max_clusters"),
        "{failure:?}"
    );
    // A retried request is answered, quota or not: it asks for nothing new.
    let again = c
        .create_cluster(h.call(b).await)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.id, first.id);
    // A deleted cluster no longer counts.
    h.wait_phase("a", pb::ClusterPhase::Ready).await;
    c.delete_cluster(
        h.call(pb::DeleteClusterRequest {
            name: "a".into(),
            request_id: String::new(),
            ..Default::default()
        })
        .await,
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match c.create_cluster(h.call(request("c")).await).await {
            Ok(_) => break,
            Err(e) if e.code() == tonic::Code::ResourceExhausted => {
                assert!(Instant::now() < deadline, "a never went away: {e:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }

    // globex may have one operation unfinished: hold its first create in a retry loop.
    h.handler
        .failures
        .lock()
        .unwrap()
        .insert(("network.vnet".into(), Action::Do), (1000, true));
    c.create_cluster(h.call_as(GLOBEX, request("x")))
        .await
        .unwrap();
    let e = c
        .create_cluster(h.call_as(GLOBEX, request("y")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message().contains("max_operations_in_flight"),
        "{}",
        e.message()
    );
    let failure = e.get_details_quota_failure().expect("QuotaFailure");
    assert_eq!(failure.violations[0].subject, "tenant:globex");
    assert!(
        failure.violations[0]
            .description
            .contains("max_operations_in_flight"),
        "{failure:?}"
    );
}

#[tokio::test]
async fn clusters_are_listed_a_page_at_a_time_by_name_and_only_the_callers() {
    let h = Harness::start().await;
    let mut c = h.client().await;
    for name in ["c3", "c1", "c5", "c2", "c4"] {
        c.create_cluster(h.call(request(name)).await).await.unwrap();
    }
    // Another tenant's names sort between and around the caller's.
    for name in ["c0", "c25", "c9"] {
        c.create_cluster(h.call_as(GLOBEX, request(name)))
            .await
            .unwrap();
    }
    let mut pages = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = c
            .list_clusters(
                h.call(pb::ListClustersRequest {
                    page_size: 2,
                    page_token,
                })
                .await,
            )
            .await
            .unwrap()
            .into_inner();
        pages.push(
            page.clusters
                .into_iter()
                .map(|c| c.name)
                .collect::<Vec<_>>(),
        );
        page_token = page.next_page_token;
        if page_token.is_empty() {
            break;
        }
        assert!(pages.len() < 10, "paging does not end: {pages:?}");
    }
    assert_eq!(
        pages,
        vec![vec!["c1", "c2"], vec!["c3", "c4"], vec!["c5"]],
        "{pages:?}"
    );
    let globex: Vec<String> = c
        .list_clusters(h.call_as(GLOBEX, pb::ListClustersRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .clusters
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(globex, vec!["c0", "c25", "c9"]);

    for bad in [
        pb::ListClustersRequest {
            page_size: 0,
            page_token: "not-a-token".into(),
        },
        pb::ListClustersRequest {
            page_size: -1,
            page_token: String::new(),
        },
    ] {
        let field = if bad.page_size < 0 {
            "page_size"
        } else {
            "page_token"
        };
        let e = c.list_clusters(h.call(bad).await).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        let fields: Vec<String> = e
            .get_details_bad_request()
            .expect("BadRequest")
            .field_violations
            .into_iter()
            .map(|v| v.field)
            .collect();
        assert_eq!(fields, vec![field]);
    }
}

async fn active_keys(bus: &Bus) -> Vec<String> {
    use futures::TryStreamExt;
    let active = bus.active().await.unwrap();
    active.keys().await.unwrap().try_collect().await.unwrap()
}

/// Waits (up to 5 s) for `key` to leave the active index; `why` says what it means if not.
async fn wait_unindexed(bus: &Bus, key: &str, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while active_keys(bus).await.iter().any(|k| k == key) {
        assert!(Instant::now() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn what_transitions_put_off_is_caught_up_and_finished_sagas_leave_the_active_index() {
    let h = Harness::start().await;
    h.handler
        .failures
        .lock()
        .unwrap()
        .insert(("network.vnet".into(), Action::Do), (1, true));
    let op = h.create("tidy").await;
    let bus = h.bus().await;
    // Indexed from the moment it is built, while it runs.
    let deadline = Instant::now() + Duration::from_secs(10);
    while saga_of(&bus, &op).await.is_none() {
        assert!(Instant::now() < deadline, "saga never built");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let key = format!("acme.{op}");
    let saga = saga_of(&bus, &op).await.unwrap();
    if !saga.is_finished() {
        assert!(active_keys(&bus).await.contains(&key));
    }
    h.wait_phase("tidy", pb::ClusterPhase::Ready).await;

    // The last transition takes the saga off the index once its outbox is out (the record
    // keeps that outbox: the index, not a clearing write, says it was published); the
    // cluster record shows every step as the saga has it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let saga = saga_of(&bus, &op).await.unwrap();
        let keys = active_keys(&bus).await;
        if !keys.contains(&key) {
            assert!(saga.is_finished(), "{:?} off the index", saga.state);
            let rec: ClusterRecord = serde_json::from_slice(
                &bus.clusters()
                    .await
                    .unwrap()
                    .get("acme.tidy")
                    .await
                    .unwrap()
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(rec.saga_seq, saga.seq);
            assert_eq!(rec.operation, saga.view());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "outbox {:?}, index {keys:?}",
            saga.outbox
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A stale index entry (a coordinator that died between finishing and un-indexing) is
    // dropped by the next resync.
    let active = bus.active().await.unwrap();
    active.put(&key, Vec::new().into()).await.unwrap();
    wait_unindexed(&bus, &key, "stale index entry kept").await;
}

/// A finished saga keeps its last outbox (published): the active index, which it has left,
/// is what says so. A timer that fires after the end (every finished saga has one armed for
/// its last lease) must not publish that outbox again, even once JetStream's de-duplication
/// has forgotten it.
#[tokio::test]
async fn a_finished_saga_sends_nothing_again_when_a_late_timer_fires() {
    let h = Harness::start().await;
    let mut c = h.client().await;
    let op = c
        .create_cluster(h.call(request("late")).await)
        .await
        .unwrap()
        .into_inner()
        .id;
    h.wait_phase("late", pb::ClusterPhase::Ready).await;
    let bus = h.bus().await;
    let key = format!("acme.{op}");
    wait_unindexed(&bus, &key, "the finished saga stayed indexed").await;
    assert!(
        !saga_of(&bus, &op).await.unwrap().outbox.is_empty(),
        "the finished saga's last outbox is kept, not cleared by a write"
    );

    // A republished outbox would be stored.
    let mut audit = forget_message_ids(&bus).await;
    let stored = audit.info().await.unwrap().state.messages;
    tokio::time::sleep(Duration::from_millis(300)).await;

    fire_timer(&bus, &op, "late-tick").await;
    // The tick is consumed and acknowledged...
    let js = bus.jetstream();
    let mut events = js
        .get_stream(hypersaga_bus::EVT_STREAM)
        .await
        .unwrap()
        .get_consumer::<async_nats::jetstream::consumer::pull::Config>("coordinator")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = events.info().await.unwrap();
        if info.num_pending == 0 && info.num_ack_pending == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the late tick was not consumed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ...and sends nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(audit.info().await.unwrap().state.messages, stored);
}

#[tokio::test]
async fn a_deleted_clusters_operations_expire_and_a_live_ones_stay() {
    let h = Harness::start_with(|c| c.coordinator.deleted_history_s = 1).await;
    let mut c = h.client().await;
    let mut ids = Vec::new();
    for name in ["gone", "kept"] {
        ids.push(
            c.create_cluster(h.call(request(name)).await)
                .await
                .unwrap()
                .into_inner()
                .id,
        );
        h.wait_phase(name, pb::ClusterPhase::Ready).await;
    }
    let delete = h.delete("gone").await;
    let bus = h.bus().await;
    let sagas = bus.sagas().await.unwrap();
    let present = |op: String| {
        let sagas = sagas.clone();
        async move {
            sagas
                .entry(format!("acme.{op}"))
                .await
                .unwrap()
                .is_some_and(|e| e.operation == async_nats::jetstream::kv::Operation::Put)
        }
    };
    // The delete's saga and the create it undid go once the history time is up (nats-server
    // expires a TTL within a second or so of it).
    let deadline = Instant::now() + Duration::from_secs(20);
    while present(delete.clone()).await || present(ids[0].clone()).await {
        assert!(
            Instant::now() < deadline,
            "a deleted cluster's sagas never expired"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The live cluster's create is still there: a later delete starts from its outputs.
    assert!(present(ids[1].clone()).await);
    let op = c
        .get_operation(h.call(pb::GetOperationRequest { id: ids[1].clone() }).await)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(op.state, pb::OperationState::Succeeded as i32);
}

/// An input the coordinator can never process (here: about a saga whose record this version
/// cannot read) is tried `poison_after` times, then moved to `HCP_DEAD` with why, instead of
/// being retried for ever; the coordinator goes on working.
#[tokio::test]
async fn an_input_that_always_fails_is_dead_lettered_after_its_deliveries() {
    let h = Harness::start_with(|c| c.coordinator.poison_after = 3).await;
    let bus = Bus::connect(&h.config.nats.url, "poisoner", "hcp")
        .await
        .unwrap();
    let sagas = bus.sagas().await.unwrap();
    sagas
        .put("acme.op-unreadable", "{not a saga".into())
        .await
        .unwrap();
    let call = hypersaga_bus::OperatorCall {
        v: 1,
        tenant: TenantId::new("acme").unwrap(),
        saga_id: "op-unreadable".into(),
        action: hypersaga_bus::OperatorAction::Resume,
        step: None,
        actor: "tenant:acme".into(),
        call_id: "poison".into(),
    };
    let subject = bus.subjects().saga_operate(&call.tenant);
    bus.publish_json(&subject, "poison", &TraceParent::new_root(), &call)
        .await
        .unwrap();

    // Three deliveries, 0.5 s and 1 s apart, then the dead letter.
    let dead = bus
        .jetstream()
        .get_stream(hypersaga_bus::DEAD_STREAM)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let message = loop {
        match dead
            .get_last_raw_message_by_subject("hcp.acme.dead.coordinator")
            .await
        {
            Ok(m) => break m,
            Err(_) => {
                assert!(Instant::now() < deadline, "nothing was dead-lettered");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let header = |name: &str| {
        message
            .headers
            .get(name)
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(header(hypersaga_bus::DEAD_SUBJECT_HEADER), subject);
    let reason = header(hypersaga_bus::DEAD_REASON_HEADER);
    assert!(
        reason.starts_with(
            "not processed after 3 deliveries: saga record acme.op-unreadable is unreadable"
        ),
        "{reason}"
    );
    let kept: hypersaga_bus::OperatorCall = serde_json::from_slice(&message.payload).unwrap();
    assert_eq!((kept.saga_id, kept.call_id), (call.saga_id, call.call_id));

    // The coordinator still does its work.
    let mut c = h.client().await;
    c.create_cluster(h.call(request("after")).await)
        .await
        .unwrap();
    h.wait_phase("after", pb::ClusterPhase::Ready).await;
}

/// Token rotation: a tenant lists several token digests, and every one of them is that
/// tenant; a token taken off the list (revoked) is refused like any unknown one.
#[tokio::test]
async fn every_token_of_a_tenant_works_and_a_revoked_one_does_not() {
    const ROTATED: &str = "acme-rotated-token-98765";
    const REVOKED: &str = "acme-revoked-token-55555";
    let h = Harness::start_with(|c| {
        c.tenants[0]
            .tokens
            .push(hypersaga_config::TokenDigest::of(ROTATED));
    })
    .await;
    let mut c = h.client().await;
    c.create_cluster(h.call_as(TOKEN, request("rotated")))
        .await
        .expect("the first token");
    // The other token is the same tenant: it sees the cluster the first one created.
    let seen = c
        .get_cluster(h.call_as(
            ROTATED,
            pb::GetClusterRequest {
                name: "rotated".into(),
            },
        ))
        .await
        .expect("the second token")
        .into_inner();
    assert_eq!(seen.name, "rotated");
    let refused = c
        .list_clusters(h.call_as(REVOKED, pb::ListClustersRequest::default()))
        .await
        .expect_err("a token no longer listed");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    // Another tenant's token never reaches acme's clusters.
    let other = c
        .get_cluster(h.call_as(
            GLOBEX,
            pb::GetClusterRequest {
                name: "rotated".into(),
            },
        ))
        .await
        .expect_err("globex");
    assert_eq!(other.code(), tonic::Code::NotFound, "{other:?}");
}

/// A delete accepted while no coordinator had yet built the create it supersedes: the create
/// never runs, and its key is taken, so a replica still building it from the record it read
/// before the delete (its create-only write comes last) cannot start it behind the delete.
#[tokio::test]
async fn a_create_superseded_before_any_coordinator_built_it_never_runs() {
    let mut h = Harness::start().await;
    h.crash_coordinator();
    let mut c = h.client().await;
    let create = c
        .create_cluster(h.call(request("brief")).await)
        .await
        .unwrap()
        .into_inner()
        .id;
    let delete = h.delete("brief").await;
    h.start_coordinator();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let op = c
            .get_operation(h.call(pb::GetOperationRequest { id: delete.clone() }).await)
            .await
            .unwrap()
            .into_inner();
        if op.state == pb::OperationState::Succeeded as i32 {
            break;
        }
        assert!(Instant::now() < deadline, "the delete never ended: {op:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let dos: Vec<_> = h
        .calls()
        .into_iter()
        .filter(|(_, a, _)| *a == Action::Do)
        .collect();
    assert!(dos.is_empty(), "nothing was made: {dos:?}");

    let op = c
        .get_operation(h.call(pb::GetOperationRequest { id: create.clone() }).await)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(op.state, pb::OperationState::Failed as i32);
    assert_eq!(op.error.unwrap().code, "Superseded");
    // A late build's create-only write of the saga finds its key taken.
    let bus = h.bus().await;
    let saga = saga_of(&bus, &create)
        .await
        .expect("the create's key is taken");
    assert!(saga.is_finished() && saga.links.superseded_by.is_some());
    let late = bus
        .sagas()
        .await
        .unwrap()
        .create(
            format!("acme.{create}"),
            serde_json::to_vec(&saga).unwrap().into(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        late.kind(),
        async_nats::jetstream::kv::CreateErrorKind::AlreadyExists
    );
}

/// The server keeps one timer per saga, and the one the saga's record says is armed can be
/// gone (an older timer republished late replaced it, then fired early). Any tick of a timer
/// leaves one armed for what is due next.
#[tokio::test]
async fn a_timer_that_fires_always_leaves_one_armed_for_what_is_due_next() {
    let h = Harness::start().await;
    h.handler.hang.lock().unwrap().push("identity.oidc".into());
    let op = h.create("timely").await;
    let bus = h.bus().await;
    // The OIDC step runs (and heartbeats) without end: the saga's timer is armed for the lease
    // of its first heartbeat (60 s); later heartbeats push the lease on, and arm nothing.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let saga = saga_of(&bus, &op).await;
        let running = saga.as_ref().is_some_and(|s| {
            s.steps
                .iter()
                .any(|st| st.id == "identity.oidc" && st.state == StepState::Running)
        });
        let now = OffsetDateTime::now_utc();
        let lease = (now + time::Duration::seconds(20))..(now + time::Duration::seconds(90));
        if running
            && saga
                .and_then(|s| s.scheduled)
                .is_some_and(|at| lease.contains(&at))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no timer armed for the lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tenant = TenantId::new("acme").unwrap();
    let timer = bus.subjects().saga_timer(&tenant, &op);
    let js = bus.jetstream();
    let events = js.get_stream(hypersaga_bus::EVT_STREAM).await.unwrap();
    let armed = || async { events.get_last_raw_message_by_subject(&timer).await.is_ok() };
    assert!(armed().await, "the timer is on the server");
    events.purge().filter(&timer).await.unwrap();
    assert!(!armed().await);

    // A timer of this saga fires (as an older one would), before anything is due.
    fire_timer(&bus, &op, "early-tick").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !armed().await {
        assert!(
            Instant::now() < deadline,
            "the tick left no timer armed for the lease"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A transition publishes its outbox, and its replica dies before clearing it; nobody touches
/// the saga (paused) for longer than JetStream remembers message ids. The next reader takes
/// the outbox for unpublished: its audit events must not show twice.
#[tokio::test]
async fn an_outbox_left_uncleared_past_de_duplication_shows_no_event_twice() {
    let h = Harness::start().await;
    h.handler.failures.lock().unwrap().insert(
        ("network.resource-groups".into(), Action::Do),
        (1_000, true),
    );
    let op = h.create("idle").await;
    let bus = h.bus().await;
    let sagas = bus.sagas().await.unwrap();
    let key = format!("acme.{op}");
    // Paused on the resource groups, nothing in flight, its outbox cleared.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (saga, revision) = loop {
        if let Some(e) = sagas.entry(&key).await.unwrap() {
            let saga: hypersaga_saga::Saga = serde_json::from_slice(&e.value).unwrap();
            let in_flight = saga.steps.iter().any(|s| s.state == StepState::Running);
            if saga.pause.is_some() && !in_flight && saga.outbox.is_empty() {
                break (saga, e.revision);
            }
        }
        assert!(Instant::now() < deadline, "never paused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let audit = forget_message_ids(&bus).await;
    let subject = bus.subjects().audit(&saga.tenant, "idle");
    let stored = || {
        let (audit, subject) = (audit.clone(), subject.clone());
        async move {
            use futures::TryStreamExt;
            let info = audit.info_with_subjects(&subject).await.unwrap();
            let counts: HashMap<String, usize> = info.try_collect().await.unwrap();
            counts.get(&subject).copied().unwrap_or(0)
        }
    };
    let before = stored().await;
    let last = {
        let msg = audit
            .get_last_raw_message_by_subject(&subject)
            .await
            .unwrap();
        serde_json::from_slice::<hypersaga_bus::AuditEvent>(&msg.payload).unwrap()
    };
    assert_eq!(last.operation, op);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The record as that transition wrote it, minutes ago: its outbox, published, still in it.
    let mut left = saga.clone();
    let mut event = last.clone();
    event.time -= time::Duration::minutes(5);
    left.outbox = vec![hypersaga_saga::Effect::Audit(Box::new(event))];
    sagas
        .update(&key, serde_json::to_vec(&left).unwrap().into(), revision)
        .await
        .unwrap();
    // The resync reads it, publishes what is left of the outbox and clears it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !saga_of(&bus, &op).await.unwrap().outbox.is_empty() {
        assert!(Instant::now() < deadline, "the outbox was never repaired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stored().await, before, "an audit event was stored twice");
}

/// A build indexes its saga, then writes it: the resync must not take a young key off the
/// index for want of its saga, or the saga, written a moment later, would run unindexed.
#[tokio::test]
async fn the_resync_leaves_a_young_index_key_whose_saga_is_not_written_yet() {
    let h = Harness::start().await;
    let bus = h.bus().await;
    let key = "acme.op-on-its-way";
    bus.active()
        .await
        .unwrap()
        .put(key, Vec::new().into())
        .await
        .unwrap();
    // Several resyncs (one every 300 ms).
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(active_keys(&bus).await.iter().any(|k| k == key));
}

/// One event of a Server-Sent Events stream: its name and its data as JSON.
fn sse_event(block: &str) -> (String, Value) {
    let mut name = "message".to_owned();
    let mut data = String::new();
    for line in block.lines() {
        if let Some(n) = line.strip_prefix("event:") {
            name = n.trim().to_owned();
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push_str(d.trim_start());
        }
    }
    (name, serde_json::from_str(&data).unwrap_or(Value::Null))
}

/// The live view's HTTP API is the gRPC API's code over HTTP: the same tenant by the same
/// token, the same refusals (as JSON, with Google's HTTP statuses), the operator calls that
/// apply now, and an event stream that follows an operation from its pause to its end.
#[tokio::test]
async fn the_live_views_api_answers_as_grpc_does_and_streams_an_operation_to_its_end() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let h = Harness::start_with(|c| c.gateway.web_listen = Some(addr)).await;
    // The resource groups fail retryably as many times as a step may try: the create pauses.
    let attempts = h.config.coordinator.max_attempts;
    h.handler.failures.lock().unwrap().insert(
        ("network.resource-groups".into(), Action::Do),
        (attempts, true),
    );
    let op = h.create("viewed").await;
    let base = format!("http://{addr}");
    let http = reqwest::Client::new();
    let get = |path: &str, token: Option<&str>| {
        let r = http.get(format!("{base}{path}"));
        match token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    };

    // The page itself needs no token, and lets only its own script run.
    let page = get("/", None).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("script-src 'sha256-"), "{policy}");
    assert!(page.text().await.unwrap().contains("live view"));

    // No token, or an unknown one: 401, as the gRPC API's UNAUTHENTICATED.
    for token in [None, Some("not-a-token-0123456789")] {
        let r = get("/api/v1/operations", token).send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "UNAUTHENTICATED", "{body}");
    }

    // Paused, with its reason, and every operator call open to it.
    let path = format!("/api/v1/operations/{op}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let paused = loop {
        let body: Value = get(&path, Some(TOKEN))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if body["state"] == "paused" {
            break body;
        }
        assert!(Instant::now() < deadline, "never paused: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        paused["calls"],
        serde_json::json!(["resume", "retry_step", "compensate", "abandon"]),
        "{paused}"
    );
    assert_eq!(paused["pause"]["reason"]["step"], "network.resource-groups");
    assert_eq!(paused["pause"]["reason"]["code"], "InternalServerError");
    let rg = paused["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "network.resource-groups")
        .unwrap()
        .clone();
    assert_eq!(rg["attempts"], attempts, "{rg}");
    assert!(rg["depends_on"].is_array(), "{rg}");

    // Listed among the paused; a state that does not exist is an invalid argument, named.
    let listed: Value = get("/api/v1/operations?state=paused", Some(TOKEN))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["operations"][0]["id"], op.as_str(), "{listed}");
    let bad = get("/api/v1/operations?state=stuck", Some(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["field_violations"][0]["field"], "state", "{body}");

    // Another tenant sees nothing of it, and cannot act on it.
    let theirs = get(&path, Some(GLOBEX)).send().await.unwrap();
    assert_eq!(theirs.status(), 404);
    let post = |call: &str, token: &str, body: &str| {
        http.post(format!("{base}{path}/{call}"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    assert_eq!(post("resume", GLOBEX, "").await.unwrap().status(), 404);
    // A step it does not have, a body that is not the call's, a call that does not exist.
    let r = post("retry-step", TOKEN, r#"{"step": "network.nope"}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["field_violations"][0]["field"], "step", "{body}");
    let r = post("resume", TOKEN, r#"{"force": true}"#).await.unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["field_violations"][0]["field"], "body", "{body}");
    assert_eq!(post("restart", TOKEN, "").await.unwrap().status(), 404);

    // The stream starts with the operation as it is; a resume from the API sends it on, to
    // the end of the stream.
    let mut events = get(&format!("{path}/events"), Some(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    let mut buffer = String::new();
    let mut seen: Vec<(String, Value)> = Vec::new();
    let read = async {
        while let Some(chunk) = events.chunk().await.unwrap() {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(cut) = buffer.find("\n\n") {
                let block: String = buffer.drain(..cut + 2).collect();
                let event = sse_event(&block);
                if event.0 == "operation" && seen.is_empty() {
                    assert_eq!(event.1["state"], "paused", "{}", event.1);
                    let accepted = post("resume", TOKEN, r#"{"request_id": "resume-1"}"#)
                        .await
                        .unwrap();
                    assert_eq!(accepted.status(), 202);
                    let op_then: Value = accepted.json().await.unwrap();
                    assert_eq!(op_then["id"], op.as_str());
                }
                let end = event.0 == "end";
                seen.push(event);
                if end {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the stream ends once the operation has");
    let last = seen
        .iter()
        .rev()
        .find(|(name, _)| name == "operation")
        .map(|(_, op)| op.clone())
        .unwrap();
    assert_eq!(last["state"], "succeeded", "{last}");
    assert_eq!(last["calls"], serde_json::json!([]), "{last}");
    assert!(seen.len() >= 3, "the pause, a change, the end: {seen:?}");

    // Refused as over gRPC once it has finished, with the reason programs branch on.
    let r = post("abandon", TOKEN, "").await.unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["reason"], "OperationFinished", "{body}");
}
