//! Starting and driving one isolated system per test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use hypersaga::client::Client;
use hypersaga::endpoints::Endpoints;
use hypersaga_api::v1 as pb;
use serde_json::Value;
use tokio::process::{Child, Command};

pub const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the `hypersaga` command line against `system`, as a user would.
pub fn hypersaga(system: &System, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
        .args(args)
        .env(
            "HYPERSAGA_ENDPOINTS",
            system.state_dir().join("endpoints.json"),
        )
        .output()
        .expect("run hypersaga")
}

/// What a command printed, stdout then stderr.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What the user had in Azure before any cluster (`hypersaga dev` makes it): the public zone
/// of the base domain and its group, as `type name` (an inventory's spelling). A delete never
/// touches them.
pub const USERS_OWN: [&str; 2] = [
    "Microsoft.Network/dnsZones example.com",
    "Microsoft.Resources/resourceGroups dns",
];

/// Whether a `type name` is what the user had before (see [`USERS_OWN`]), or the tenant's
/// identity group, which stays for its other clusters.
pub fn outlives_clusters(resource: &str) -> bool {
    USERS_OWN.contains(&resource)
        || resource == "Microsoft.Resources/resourceGroups hcp-acme-identities"
}

/// The management-cluster namespace that holds a cluster's HostedCluster (named by digest,
/// so that HyperShift's `<namespace>-<name>` fits Kubernetes' 63 characters).
pub fn namespace(tenant: &str, infra_id: &str) -> String {
    let tenant = hypersaga_model::TenantId::new(tenant).expect("tenant id");
    hypersaga_model::Names::new(&tenant, "unused", infra_id, "unused.example.com").namespace
}

pub struct System {
    child: Option<Child>,
    pub dir: tempfile::TempDir,
    pub endpoints: Endpoints,
}

impl System {
    /// Starts `hypersaga dev` and waits until it has written its endpoints file.
    pub async fn start() -> System {
        Self::start_with(&[]).await
    }

    /// As [`System::start`], with extra `hypersaga dev` flags (e.g. `--replicas 2`).
    pub async fn start_with(extra: &[&str]) -> System {
        Self::start_with_env(extra, &[]).await
    }

    /// As [`System::start_with`], with environment variables for `hypersaga dev` and the
    /// services it starts (e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub async fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> System {
        hypersaga_devca::install_crypto_provider();
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        let log = std::fs::File::create(dir.path().join("dev.log")).expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_hypersaga"))
            .args([
                "dev",
                "--profile",
                "fast",
                "--grpc-listen",
                "127.0.0.1:0",
                "--log",
                "info,hypersaga=debug",
                "--state-dir",
            ])
            .arg(&state)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("start hypersaga dev");
        let path = state.join("endpoints.json");
        let deadline = Instant::now() + TIMEOUT;
        let endpoints = loop {
            if let Ok(e) = Endpoints::load(&path) {
                break e;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "hypersaga dev exited ({status}) before it started; the end of its log:\n{}",
                    tail(&dir.path().join("dev.log"), 60)
                );
            }
            if Instant::now() >= deadline {
                // The temporary directory goes with the test: say here what dev said.
                panic!(
                    "hypersaga dev did not start within {} s; the end of its log:\n{}",
                    TIMEOUT.as_secs(),
                    tail(&dir.path().join("dev.log"), 60)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        System {
            child: Some(child),
            dir,
            endpoints,
        }
    }

    /// Waits until every service answers plan requests (a dry run of a create plans every
    /// step): `start` returns once the gateway answers, and a service that is not listening
    /// yet leaves its steps unplanned, so a preflight would miss what they find.
    pub async fn ready_to_plan(&self, tenant: &str) {
        let mut client = self.client(tenant).await;
        let mut req = create_request("ready-to-plan", 0);
        req.validate_only = true;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let plan = client
                .create_cluster(req.clone())
                .await
                .expect("a dry run")
                .into_inner()
                .plan
                .expect("a plan");
            let unplanned: Vec<_> = plan
                .steps
                .iter()
                .filter(|s| s.not_planned.is_some())
                .collect();
            if unplanned.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "never planned: {unplanned:#?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn token(&self, tenant: &str) -> String {
        self.endpoints
            .tenant(Some(tenant))
            .expect("tenant")
            .token
            .clone()
    }

    pub fn subscription(&self, tenant: &str) -> String {
        self.endpoints
            .tenant(Some(tenant))
            .expect("tenant")
            .subscription_id
            .clone()
    }

    pub async fn client(&self, tenant: &str) -> Client {
        hypersaga::client::connect(
            &self.endpoints.grpc,
            &self.token(tenant),
            Some(&self.endpoints.ca_bundle),
        )
        .await
        .expect("connect")
    }

    /// ARM as the tenant's own service principal, as a user (or a test checking what was
    /// made) reaches it.
    pub fn arm(&self, tenant: &str) -> hypersaga_azure::ArmClient {
        use hypersaga_azure::{ArmClient, ArmConfig, CredentialConfig, Secret};
        let t = self.endpoints.tenant(Some(tenant)).expect("tenant");
        ArmClient::new(ArmConfig {
            resource_manager_url: self.endpoints.arm_url.parse().expect("url"),
            authority_host: self.endpoints.entra_url.parse().expect("url"),
            ca_bundle_pem: Some(std::fs::read_to_string(&self.endpoints.ca_bundle).expect("ca")),
            credential: CredentialConfig::ClientSecret {
                tenant_id: t.azure_tenant_id.clone(),
                client_id: t.client_id.clone(),
                client_secret: Secret::new(t.client_secret.clone()),
            },
            lro_poll_interval: Duration::from_millis(50),
            lro_timeout: Duration::from_secs(30),
        })
        .expect("arm client")
    }

    /// A TLS channel to the API that trusts the dev CA, with no token.
    pub async fn channel(&self) -> tonic::transport::Channel {
        hypersaga::client::channel(&self.endpoints.grpc, Some(&self.endpoints.ca_bundle))
            .await
            .expect("connect")
    }

    /// Holds every create in the middle: the load balancer's PUT fails retryably (503) until
    /// the faults are cleared (`arm_admin().clear_faults()`).
    pub async fn hold_at_the_load_balancer(&self) {
        self.hold_puts("Microsoft.Network/loadBalancers", None)
            .await;
    }

    /// Every PUT of `resource_type` (whose path contains `path_contains`, if given) fails
    /// retryably (503) until the faults are cleared (`arm_admin().clear_faults()`).
    pub async fn hold_puts(&self, resource_type: &str, path_contains: Option<&str>) {
        self.arm_admin()
            .add_fault(&hypersaga_emulator_arm::FaultSpec {
                method: "PUT".into(),
                resource_type: resource_type.into(),
                name_contains: None,
                path_contains: path_contains.map(str::to_owned),
                status: 503,
                code: "ServiceUnavailable".into(),
                message: None,
                retry_after_secs: None,
                count: None,
            })
            .await
            .expect("add the fault");
    }

    pub fn arm_admin(&self) -> hypersaga_emulator_arm::admin_client::AdminClient {
        hypersaga_emulator_arm::admin_client::AdminClient::new(
            self.endpoints.emulator_admin_url.parse().expect("url"),
        )
    }

    /// Sets the tenant's Dsv5-family vCPU quota in eastus (the family of the pools' default
    /// size) to `limit`, as the subscription's owner would ask Azure to.
    pub async fn set_dsv5_quota(&self, tenant: &str, limit: u64) {
        self.arm_admin()
            .set_quota_limit(&hypersaga_emulator_arm::QuotaLimit {
                subscription: self.subscription(tenant),
                location: "eastus".into(),
                name: "standardDSv5Family".into(),
                limit,
            })
            .await
            .expect("quota");
    }

    pub fn mgmt_admin(&self) -> hypersaga_emulator_mgmt::admin_client::AdminClient {
        hypersaga_emulator_mgmt::admin_client::AdminClient::new(
            self.endpoints.mgmt_admin_url.clone(),
        )
    }

    /// Current pids of the supervised services, e.g. `coordinator-0`.
    pub fn pids(&self) -> BTreeMap<String, u32> {
        let bytes = std::fs::read(self.state_dir().join("pids.json")).expect("pids.json");
        serde_json::from_slice(&bytes).expect("pids")
    }

    /// `kill -9` of one supervised service.
    pub fn kill9(&self, name: &str) -> u32 {
        let pid = self.pids()[name];
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill -9");
        pid
    }

    /// `kill -STOP` of one supervised service: alive to its supervisor, silent to everyone
    /// else, as a hung process is. The guard sends `SIGCONT` when it is dropped (or at
    /// [`Stopped::cont`]), so a failing test never leaves a stopped process behind.
    pub fn stop(&self, name: &str) -> Stopped {
        let pid = self.pids()[name];
        signal(pid, nix::sys::signal::Signal::SIGSTOP).expect("kill -STOP");
        Stopped { pid }
    }

    /// Every audit event of one of the tenant's clusters so far, in order.
    pub async fn audit_events(&self, tenant: &str, cluster: &str) -> Vec<Value> {
        let consumer = self.audit_feed(tenant, Some(cluster), true).await;
        let count = consumer.cached_info().num_pending as usize;
        let mut messages = consumer.messages().await.expect("messages");
        let mut events = Vec::new();
        while events.len() < count {
            let msg = tokio::time::timeout(Duration::from_secs(5), messages.next())
                .await
                .expect("audit message")
                .expect("some")
                .expect("ok");
            events.push(serde_json::from_slice(&msg.payload).expect("json"));
        }
        events
    }

    /// The tenant's audit events (of one cluster, or all), read with the tenant's audit
    /// credentials as any audit subscriber reads them.
    pub async fn audit_feed(
        &self,
        tenant: &str,
        cluster: Option<&str>,
        from_start: bool,
    ) -> async_nats::jetstream::consumer::Consumer<
        async_nats::jetstream::consumer::push::OrderedConfig,
    > {
        let access = hypersaga::audit_feed::AuditAccess::from_endpoints(&self.endpoints);
        let tenant = hypersaga_model::TenantId::new(tenant).expect("tenant id");
        hypersaga::audit_feed::open(&access, Some(&tenant), cluster, from_start)
            .await
            .expect("audit feed")
    }

    /// Top-level ARM resources of a subscription, as the inventory API lists them.
    pub async fn inventory(&self, tenant: &str) -> Vec<Value> {
        let all = self
            .arm_admin()
            .resources(Some(&self.subscription(tenant)))
            .await
            .expect("resources");
        all.into_iter().filter(|r| r.get("id").is_some()).collect()
    }

    /// `type name` of every stored ARM resource (children included), sorted.
    pub async fn resource_names(&self, tenant: &str) -> BTreeSet<String> {
        self.inventory(tenant)
            .await
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r["type"].as_str().unwrap_or("?"),
                    r["name"].as_str().unwrap_or("?")
                )
            })
            .collect()
    }

    /// Follows `WatchCluster` until the stream ends; returns the last state.
    pub async fn watch_to_end(&self, tenant: &str, name: &str) -> pb::Cluster {
        self.watch_to_end_with(&self.token(tenant), name).await
    }

    /// The public DNS zone of the base domain in `user`'s subscription, made as its
    /// administrator (what `hypersaga dev` does for its own tenants).
    pub async fn make_public_zone(&self, user: &hypersaga::endpoints::DevTenant) {
        let ca = std::fs::read_to_string(&self.endpoints.ca_bundle).expect("ca");
        hypersaga::dev::world::make_public_zone(&self.endpoints.arm_url, &ca, user)
            .await
            .expect("public zone");
    }

    /// As [`System::watch_to_end`], as the holder of `token`.
    pub async fn watch_to_end_with(&self, token: &str, name: &str) -> pb::Cluster {
        let mut c = hypersaga::client::connect(
            &self.endpoints.grpc,
            token,
            Some(&self.endpoints.ca_bundle),
        )
        .await
        .expect("connect");
        let mut stream = c
            .watch_cluster(pb::WatchClusterRequest { name: name.into() })
            .await
            .expect("watch")
            .into_inner();
        let mut last = None;
        let fut = async {
            while let Some(item) = stream.next().await {
                last = Some(item.expect("watch item"));
            }
        };
        tokio::time::timeout(TIMEOUT, fut)
            .await
            .unwrap_or_else(|_| panic!("{name} did not finish in time; last {last:?}"));
        last.expect("at least one state")
    }

    pub async fn create(&self, tenant: &str, name: &str, replicas: i32) -> pb::Operation {
        let mut c = self.client(tenant).await;
        c.create_cluster(create_request(name, replicas))
            .await
            .expect("create")
            .into_inner()
    }

    pub async fn delete(&self, tenant: &str, name: &str) -> pb::Operation {
        let mut c = self.client(tenant).await;
        c.delete_cluster(pb::DeleteClusterRequest {
            name: name.into(),
            request_id: String::new(),
            ..Default::default()
        })
        .await
        .expect("delete")
        .into_inner()
    }

    /// Waits until `pred` holds for the cluster (polling GetCluster).
    pub async fn wait_until(
        &self,
        tenant: &str,
        name: &str,
        what: &str,
        pred: impl Fn(&pb::Cluster) -> bool,
    ) -> pb::Cluster {
        self.wait_until_within(tenant, name, what, TIMEOUT, pred)
            .await
    }

    /// [`System::wait_until`] with its own budget, for a wait that is itself a deadline of
    /// the system (a step's, `TIMEOUT` long in the fast profile) plus the time to act on it.
    pub async fn wait_until_within(
        &self,
        tenant: &str,
        name: &str,
        what: &str,
        budget: Duration,
        pred: impl Fn(&pb::Cluster) -> bool,
    ) -> pb::Cluster {
        let mut c = self.client(tenant).await;
        let deadline = Instant::now() + budget;
        loop {
            if let Ok(r) = c
                .get_cluster(pb::GetClusterRequest { name: name.into() })
                .await
            {
                let cl = r.into_inner();
                if pred(&cl) {
                    return cl;
                }
                assert!(
                    Instant::now() < deadline,
                    "timed out waiting for {what}: {cl:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn dump_logs(&self) {
        // `hypersaga dev`'s own log: the emulators (and the simulated HyperShift) write there.
        let dev = self.dir.path().join("dev.log");
        eprintln!("==== {} (last 80 lines)", dev.display());
        eprintln!("{}", tail(&dev, 80));
        let logs = self.state_dir().join("logs");
        if let Ok(entries) = std::fs::read_dir(&logs) {
            for e in entries.flatten() {
                eprintln!("==== {} (last 40 lines)", e.path().display());
                eprintln!("{}", tail(&e.path(), 40));
            }
        }
    }
}

impl Drop for System {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.dump_logs();
        }
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                let deadline = Instant::now() + Duration::from_secs(20);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            let _ = child.start_kill();
        }
    }
}

fn signal(pid: u32, signal: nix::sys::signal::Signal) -> nix::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal)
}

/// A service stopped with `SIGSTOP`; continued when dropped.
#[must_use = "the service is continued when this is dropped"]
pub struct Stopped {
    pid: u32,
}

impl Stopped {
    /// `kill -CONT`: the service carries on from where it was stopped.
    pub fn cont(self) {
        drop(self);
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = signal(self.pid, nix::sys::signal::Signal::SIGCONT);
    }
}

pub fn create_request(name: &str, replicas: i32) -> pb::CreateClusterRequest {
    pb::CreateClusterRequest {
        validate_only: false,
        labels: Default::default(),
        name: name.into(),
        request_id: uuid::Uuid::new_v4().to_string(),
        spec: Some(pb::ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into(),
            node_pools: vec![pb::NodePoolSpec {
                name: "workers".into(),
                replicas: Some(replicas),
                vm_size: "Standard_D4s_v5".into(),
                ..Default::default()
            }],
            network: Some(pb::NetworkSpec::default()),
            addons: Vec::new(),
        }),
    }
}

pub fn phase(c: &pb::Cluster) -> String {
    hypersaga::output::phase(c.status.as_ref().map(|s| s.phase).unwrap_or_default())
}

pub fn steps(c: &pb::Cluster) -> BTreeMap<String, (String, u32)> {
    c.status
        .as_ref()
        .and_then(|s| s.operation.as_ref())
        .map(|o| {
            o.steps
                .iter()
                .map(|s| {
                    (
                        s.id.clone(),
                        (hypersaga::output::step_state(s.state), s.attempts),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The last `n` lines of the file at `path` (none if it cannot be read).
fn tail(path: &std::path::Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_owned()
}

/// Runs `tests/python/azure_sdk_reads.py` (Microsoft's own Python clients) as the tenant's
/// app registration; its JSON on success.
pub async fn azure_sdk_reads(system: &System, tenant: &str) -> Value {
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh",
        python.display()
    );
    let t = system.endpoints.tenant(Some(tenant)).expect("tenant");
    let ca = system.endpoints.ca_bundle.display().to_string();
    let run = tokio::process::Command::new(&python)
        .arg(repo().join("tests/python/azure_sdk_reads.py"))
        .args(["--arm-url", &system.endpoints.arm_url])
        .args(["--authority", &system.endpoints.entra_url])
        .args(["--ca-bundle", &ca])
        .args(["--tenant-id", &t.azure_tenant_id])
        .args(["--client-id", &t.client_id])
        .args(["--subscription-id", &t.subscription_id])
        // The secret stays off the command line; the CA too for anything reading the env.
        .env("AZURE_CLIENT_SECRET", &t.client_secret)
        .env("REQUESTS_CA_BUNDLE", &ca)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(TIMEOUT, run)
        .await
        .expect("the SDKs finish in time")
        .expect("run python");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Azure SDKs failed ({}):\n{stderr}",
        out.status
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The preflight's findings in a refused call: `FAILED_PRECONDITION` with a
/// `google.rpc.PreconditionFailure`, as a user's client reads them.
pub fn preflight_refusal<T: std::fmt::Debug>(
    answer: Result<T, tonic::Status>,
) -> Vec<tonic_types::PreconditionViolation> {
    use tonic_types::StatusExt;
    let refused = answer.expect_err("refused by the preflight");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    refused
        .get_details_precondition_failure()
        .expect("a PreconditionFailure")
        .violations
}

/// A network of the user's own in `tenant`'s subscription, made as its owner would before
/// asking hypersaga for anything: group `corp-network` and its NSG `corp-nsg` in eastus.
pub struct UserNetwork {
    arm: hypersaga_azure::ArmClient,
    /// The group's id.
    pub group: String,
    /// The NSG's id.
    pub nsg: String,
}

impl UserNetwork {
    pub async fn make(system: &System, tenant: &str) -> Self {
        let arm = system.arm(tenant);
        let group = format!(
            "/subscriptions/{}/resourceGroups/corp-network",
            system.subscription(tenant)
        );
        arm.put(
            &group,
            "2021-04-01",
            &serde_json::json!({"location": "eastus"}),
        )
        .await
        .expect("the user's group");
        let nsg = format!("{group}/providers/Microsoft.Network/networkSecurityGroups/corp-nsg");
        arm.put(
            &nsg,
            "2023-11-01",
            &serde_json::json!({"location": "eastus", "properties": {}}),
        )
        .await
        .expect("the user's NSG");
        Self { arm, group, nsg }
    }

    /// VNet `name` (`<prefix>.0.0/16`) with subnet `clusters` (`<prefix>.4.0/24`) carrying the
    /// NSG; its id.
    pub async fn vnet(&self, name: &str, prefix: &str) -> String {
        let id = format!(
            "{}/providers/Microsoft.Network/virtualNetworks/{name}",
            self.group
        );
        let body = serde_json::json!({"location": "eastus", "properties": {
            "addressSpace": {"addressPrefixes": [format!("{prefix}.0.0/16")]},
            "subnets": [{"name": "clusters", "properties": {
                "addressPrefix": format!("{prefix}.4.0/24"),
                "networkSecurityGroup": {"id": self.nsg}
            }}]
        }});
        self.arm
            .put(&id, "2023-11-01", &body)
            .await
            .expect("the user's VNet");
        id
    }
}
