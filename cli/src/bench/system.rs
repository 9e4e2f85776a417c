//! The whole local system for the fleet and fairness benches: `hypersaga dev` run as a child
//! process (as the end-to-end tests run it) in a temporary state directory, and the client
//! calls the benches make on it. The child is stopped with SIGTERM (so it stops its own
//! children) when the bench ends, fails or is dropped; the directory is removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use hypersaga_api::v1 as pb;
use hypersaga_emulator_arm::admin_client::AdminClient;
use hypersaga_emulator_arm::requests::RequestStats;
use serde::Serialize;
use tokio::process::{Child, Command};

use super::report::progress;
use crate::client::Client;
use crate::dev::Profile;
use crate::endpoints::Endpoints;
use crate::output;

/// How the system under test is started.
#[derive(Args, Debug, Clone)]
pub struct SystemArgs {
    /// Timing profile of `hypersaga dev` (demo: Azure latencies at 5 %; fast: near zero; real:
    /// Azure's p50s).
    #[arg(long, value_enum, default_value_t = Profile::Demo)]
    pub profile: Profile,
    /// Replicas of each service (`hypersaga dev --replicas`).
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// Multiplies ARM's throttling limits (`hypersaga dev --arm-budget-scale`); 1 = Azure's
    /// real limits. The bounds printed scale with it.
    #[arg(long, default_value_t = 1.0)]
    pub arm_budget_scale: f64,
    /// Longest wait for any one phase to settle.
    #[arg(long, default_value_t = 1800)]
    pub timeout_secs: u64,
}

impl SystemArgs {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }
}

/// `hypersaga dev`, running.
pub struct DevSystem {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub endpoints: Endpoints,
}

impl DevSystem {
    pub async fn start(args: &SystemArgs) -> anyhow::Result<Self> {
        anyhow::ensure!(
            args.arm_budget_scale.is_finite() && args.arm_budget_scale > 0.0,
            "--arm-budget-scale must be a positive number"
        );
        let exe = std::env::current_exe().context("finding the hypersaga binary")?;
        let dir = tempfile::Builder::new()
            .prefix("hypersaga-bench-")
            .tempdir()
            .context("creating a temporary directory")?;
        let state = dir.path().join("state");
        let log_path = dir.path().join("dev.log");
        let log = std::fs::File::create(&log_path)?;
        let profile = args
            .profile
            .to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_else(|| "demo".to_owned());
        let mut cmd = Command::new(exe);
        cmd.args(["dev", "--grpc-listen", "127.0.0.1:0", "--log", "warn"])
            .args(["--profile", &profile])
            .args(["--replicas", &args.replicas.max(1).to_string()])
            .arg("--state-dir")
            .arg(&state);
        // Only when asked: older builds of `dev` do not know the flag.
        if args.arm_budget_scale != 1.0 {
            cmd.args(["--arm-budget-scale", &args.arm_budget_scale.to_string()]);
        }
        progress(format!(
            "starting hypersaga dev (profile {profile}, {} replica(s))",
            args.replicas.max(1)
        ));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting hypersaga dev")?;
        let mut sys = Self {
            child: Some(child),
            dir,
            endpoints: placeholder_endpoints(),
        };
        let path = state.join("endpoints.json");
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Ok(e) = Endpoints::load(&path) {
                sys.endpoints = e;
                return Ok(sys);
            }
            let exited = match sys.child.as_mut() {
                Some(c) => c.try_wait()?.map(|s| s.to_string()),
                None => Some("gone".to_owned()),
            };
            if let Some(status) = exited {
                anyhow::bail!(
                    "hypersaga dev exited ({status}) before it was ready:\n{}",
                    tail(&log_path, 20)
                );
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "hypersaga dev was not ready within 180 s:\n{}",
                    tail(&log_path, 20)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn tenant(&self, name: &str) -> anyhow::Result<&crate::endpoints::DevTenant> {
        self.endpoints.tenant(Some(name))
    }

    pub async fn client(&self, tenant: &str) -> anyhow::Result<Client> {
        crate::client::connect(
            &self.endpoints.grpc,
            &self.tenant(tenant)?.token,
            Some(&self.endpoints.ca_bundle),
        )
        .await
    }

    pub fn admin(&self) -> anyhow::Result<AdminClient> {
        let url = &self.endpoints.emulator_admin_url;
        Ok(AdminClient::new(
            url.parse()
                .with_context(|| format!("{url:?} is not a URL"))?,
        ))
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("dev.log")
    }

    /// The `hypersaga dev` process itself (it also serves the emulators).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// The system's processes now, by name: each supervised service (`gateway-0`, …, as
    /// `pids.json` names them) and each nats-server (`nats-server`, or `nats-server <n>` in a
    /// cluster), with the nats-servers' monitoring URLs.
    pub fn processes(&self) -> Processes {
        Processes::of(&self.endpoints.state_dir)
    }

    /// Stops `hypersaga dev` (SIGTERM, then SIGKILL after 30 s) and removes its directory.
    pub async fn stop(mut self) {
        progress("stopping hypersaga dev");
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            if tokio::time::timeout(Duration::from_secs(30), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

impl Drop for DevSystem {
    /// A bench that failed or was interrupted still stops what it started: SIGTERM lets
    /// `hypersaga dev` stop nats-server, Azurite and the services before it exits.
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
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

/// The processes of a running `hypersaga dev`, read from its state directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Processes {
    /// Name → pid: the services, then the nats-servers.
    pub pids: BTreeMap<String, u32>,
    /// Each nats-server's monitoring endpoint, `http://127.0.0.1:<port>`.
    pub nats_monitors: Vec<String>,
}

impl Processes {
    pub fn of(state_dir: &Path) -> Self {
        let mut out = Self {
            pids: std::fs::read(state_dir.join("pids.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default(),
            ..Self::default()
        };
        // nats-server writes `<exe>_<pid>.ports` in `nats/ports` (one server) or
        // `nats/n<i>/ports` (a cluster); a file of a process gone is skipped.
        let nats = state_dir.join("nats");
        let mut dirs = vec![(String::new(), nats.join("ports"))];
        for e in std::fs::read_dir(&nats).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().join("ports").is_dir() {
                dirs.push((format!(" {name}"), e.path().join("ports")));
            }
        }
        for (suffix, dir) in dirs {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = ports_file_pid(&file) else {
                    continue;
                };
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    continue;
                }
                out.pids.insert(format!("nats-server{suffix}"), pid);
                let ports: BTreeMap<String, Vec<String>> = std::fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default();
                if let Some(m) = ports.get("monitoring").and_then(|m| m.first()) {
                    out.nats_monitors.push(m.clone());
                }
            }
        }
        out
    }
}

/// The pid of a nats-server ports file's name, `nats-server_<pid>.ports`.
fn ports_file_pid(file: &str) -> Option<u32> {
    file.strip_suffix(".ports")?
        .rsplit_once('_')?
        .1
        .parse()
        .ok()
}

/// A JSON document from an HTTP monitoring endpoint (`http://host:port` + `path`), over a
/// plain HTTP/1.0 request: nats-server's `/jsz`, `/varz`.
pub async fn http_json(base: &str, path: &str) -> anyhow::Result<serde_json::Value> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base
        .strip_prefix("http://")
        .with_context(|| format!("{base:?} is not an http:// URL"))?
        .trim_end_matches('/');
    let mut stream =
        tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
            .await
            .with_context(|| format!("connecting to {addr}"))??;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .with_context(|| format!("reading {base}{path}"))??;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .with_context(|| format!("{base}{path}: no HTTP answer"))?;
    anyhow::ensure!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{base}{path} answered {}",
        head.lines().next().unwrap_or_default()
    );
    serde_json::from_str(body).with_context(|| format!("{base}{path}: not JSON"))
}

fn placeholder_endpoints() -> Endpoints {
    Endpoints {
        version: 0,
        grpc: String::new(),
        nats_url: String::new(),
        nats_credentials_dir: None,
        arm_url: String::new(),
        entra_url: String::new(),
        emulator_admin_url: String::new(),
        mgmt_admin_url: String::new(),
        kubeconfig: PathBuf::new(),
        azurite_blob_url: String::new(),
        ca_bundle: PathBuf::new(),
        tenants: Vec::new(),
        state_dir: PathBuf::new(),
        health: Default::default(),
        admin_token: None,
        management_clusters: Vec::new(),
        web: None,
    }
}

/// The last `lines` lines of a file, for an error message.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A create request like the CLI's defaults: one pool of two workers, a network of ours.
pub fn create_request(name: &str) -> pb::CreateClusterRequest {
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
                replicas: Some(2),
                vm_size: "Standard_D4s_v5".into(),
                ..Default::default()
            }],
            network: Some(pb::NetworkSpec::default()),
            addons: Vec::new(),
        }),
    }
}

/// Sends every create at once; answers which were accepted and why the others were not.
pub async fn create_all(client: &Client, names: &[String]) -> Vec<(String, Result<(), String>)> {
    let calls = names.iter().map(|name| {
        let mut c = client.clone();
        let name = name.clone();
        async move {
            let r = c
                .create_cluster(create_request(&name))
                .await
                .map(|_| ())
                .map_err(|s| output::status_text(&s));
            (name, r)
        }
    });
    futures::future::join_all(calls).await
}

/// Sends every delete at once.
pub async fn delete_all(client: &Client, names: &[String]) -> Vec<(String, Result<(), String>)> {
    let calls = names.iter().map(|name| {
        let mut c = client.clone();
        let name = name.clone();
        async move {
            let r = c
                .delete_cluster(pb::DeleteClusterRequest {
                    name: name.clone(),
                    request_id: uuid::Uuid::new_v4().to_string(),
                    ..Default::default()
                })
                .await
                .map(|_| ())
                .map_err(|s| output::status_text(&s));
            (name, r)
        }
    });
    futures::future::join_all(calls).await
}

/// Where a cluster's operation ended up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum Settled {
    /// Create: ready. Delete: gone.
    Succeeded,
    Failed(String),
    /// Waiting for an operator.
    Paused(String),
    TimedOut,
}

/// One cluster's outcome and when it was seen, in seconds from the phase's start.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub name: String,
    pub settled: Settled,
    pub secs: f64,
}

/// How far one cluster is, as the API shows it; `None` while still going.
pub fn classify(c: &pb::Cluster, deleting: bool) -> Option<Settled> {
    let status = c.status.clone().unwrap_or_default();
    let phase = output::phase(status.phase);
    let error = status
        .error
        .as_ref()
        .map(|e| format!("{} at {}: {}", e.code, e.step, e.message))
        .unwrap_or_default();
    if let Some(op) = &status.operation
        && (op.pause.is_some() || output::op_state(op.state) == "paused")
    {
        let reason = op
            .pause
            .as_ref()
            .and_then(|p| p.reason.as_ref())
            .map(|r| format!("{} at {}: {}", r.code, r.step, r.message))
            .unwrap_or_default();
        return Some(Settled::Paused(reason));
    }
    match (phase.as_str(), deleting) {
        ("ready", false) | ("deleted", true) => Some(Settled::Succeeded),
        ("failed", _) => Some(Settled::Failed(error)),
        _ => None,
    }
}

/// Follows `names` until each has settled (or `timeout` from `t0`): one `ListClusters` per
/// 250 ms for many clusters, `GetCluster` for a few. A deleted cluster is one that is gone.
pub async fn follow(
    client: &Client,
    names: &[String],
    deleting: bool,
    t0: Instant,
    timeout: Duration,
) -> Vec<Outcome> {
    let mut pending: BTreeMap<String, ()> = names.iter().map(|n| (n.clone(), ())).collect();
    let mut out = Vec::new();
    let mut c = client.clone();
    while !pending.is_empty() {
        let seen: Option<BTreeMap<String, Option<pb::Cluster>>> = if pending.len() <= 4 {
            let mut m = BTreeMap::new();
            let mut ok = true;
            for name in pending.keys() {
                match c
                    .get_cluster(pb::GetClusterRequest { name: name.clone() })
                    .await
                {
                    Ok(r) => {
                        m.insert(name.clone(), Some(r.into_inner()));
                    }
                    Err(s) if s.code() == tonic::Code::NotFound => {
                        m.insert(name.clone(), None);
                    }
                    Err(_) => ok = false,
                }
            }
            ok.then_some(m)
        } else {
            match list_all(&mut c).await {
                Ok(clusters) => {
                    let mut listed: BTreeMap<String, Option<pb::Cluster>> =
                        pending.keys().map(|n| (n.clone(), None)).collect();
                    for cl in clusters {
                        if let Some(slot) = listed.get_mut(&cl.name) {
                            *slot = Some(cl);
                        }
                    }
                    Some(listed)
                }
                Err(_) => None,
            }
        };
        let secs = t0.elapsed().as_secs_f64();
        for (name, cluster) in seen.unwrap_or_default() {
            let settled = match cluster {
                Some(cl) => classify(&cl, deleting),
                // Absent: deleted when deleting; when creating, not yet visible (or removed
                // by someone else): keep waiting.
                None if deleting => Some(Settled::Succeeded),
                None => None,
            };
            if let Some(settled) = settled {
                pending.remove(&name);
                out.push(Outcome {
                    name,
                    settled,
                    secs,
                });
            }
        }
        if t0.elapsed() >= timeout {
            for name in std::mem::take(&mut pending).into_keys() {
                out.push(Outcome {
                    name,
                    settled: Settled::TimedOut,
                    secs: t0.elapsed().as_secs_f64(),
                });
            }
            break;
        }
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    out
}

/// Every cluster of the caller's tenant, page after page.
pub async fn list_all(c: &mut Client) -> Result<Vec<pb::Cluster>, tonic::Status> {
    let mut out = Vec::new();
    let mut page_token = String::new();
    // Bounded, in case a server kept answering the same token.
    for _ in 0..1000 {
        let page = c
            .list_clusters(pb::ListClustersRequest {
                page_size: 1000,
                page_token: page_token.clone(),
            })
            .await?
            .into_inner();
        out.extend(page.clusters);
        if page.next_page_token.is_empty() || page.next_page_token == page_token {
            break;
        }
        page_token = page.next_page_token;
    }
    Ok(out)
}

/// Creates `name` and follows it to the end; answers the outcome.
pub async fn create_one(client: &Client, name: &str, timeout: Duration) -> Outcome {
    one(client, name, timeout, false).await
}

/// Deletes `name` and follows it until it is gone; answers the outcome.
pub async fn delete_one(client: &Client, name: &str, timeout: Duration) -> Outcome {
    one(client, name, timeout, true).await
}

/// Creates (or deletes) one cluster and follows it to the end.
async fn one(client: &Client, name: &str, timeout: Duration, deleting: bool) -> Outcome {
    let t0 = Instant::now();
    let names = [name.to_owned()];
    let (asked, verb) = if deleting {
        (delete_all(client, &names).await, "delete")
    } else {
        (create_all(client, &names).await, "create")
    };
    let outcome = |settled| Outcome {
        name: name.to_owned(),
        settled,
        secs: t0.elapsed().as_secs_f64(),
    };
    if let Some((_, Err(e))) = asked.into_iter().next() {
        return outcome(Settled::Failed(format!("{verb} refused: {e}")));
    }
    follow(client, &names, deleting, t0, timeout)
        .await
        .into_iter()
        .next()
        .unwrap_or_else(|| outcome(Settled::TimedOut))
}

/// What ARM saw between two readings of the emulator's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ArmDelta {
    /// ARM requests naming the subscription, whatever the answer.
    pub requests: u64,
    /// Of which answered 429.
    pub throttled: u64,
    /// PUT, PATCH and POST that ARM admitted (not 429), every subscription.
    pub writes: u64,
    /// DELETE that ARM admitted.
    pub deletes: u64,
    /// GET and HEAD that ARM admitted.
    pub reads: u64,
    /// Admitted requests by `<METHOD> <resource type>`: where the budget went.
    pub by_type: std::collections::BTreeMap<String, u64>,
}

impl ArmDelta {
    pub fn between(before: &RequestStats, after: &RequestStats, subscription: &str) -> Self {
        let (b, a) = (
            before.subscription(subscription),
            after.subscription(subscription),
        );
        let mut d = Self {
            requests: a.requests.saturating_sub(b.requests),
            throttled: a.throttled.saturating_sub(b.throttled),
            ..Self::default()
        };
        let count = |s: &RequestStats, method: &str, rtype: &str, status: u16| {
            s.counts
                .iter()
                .filter(|c| c.method == method && c.resource_type == rtype && c.status == status)
                .map(|c| c.count)
                .sum::<u64>()
        };
        for row in &after.counts {
            // Entra's token requests are not ARM's; 429s took no token from the budget.
            if row.resource_type == "Entra" || row.status == 429 {
                continue;
            }
            let n = row.count.saturating_sub(count(
                before,
                &row.method,
                &row.resource_type,
                row.status,
            ));
            if n > 0 {
                *d.by_type
                    .entry(format!(
                        "{} {}",
                        row.method.to_ascii_uppercase(),
                        row.resource_type
                    ))
                    .or_default() += n;
            }
            match row.method.to_ascii_uppercase().as_str() {
                "PUT" | "PATCH" | "POST" => d.writes += n,
                "DELETE" => d.deletes += n,
                "GET" | "HEAD" => d.reads += n,
                _ => {}
            }
        }
        d
    }

    pub fn throttled_share(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.throttled as f64 / self.requests as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypersaga_emulator_arm::requests::{RequestCount, SubscriptionRequests};

    fn stats(rows: &[(&str, &str, u16, u64)], sub: (u64, u64)) -> RequestStats {
        RequestStats {
            counts: rows
                .iter()
                .map(|(m, t, s, c)| RequestCount {
                    method: (*m).into(),
                    resource_type: (*t).into(),
                    status: *s,
                    count: *c,
                })
                .collect(),
            recent: Vec::new(),
            subscriptions: vec![SubscriptionRequests {
                subscription: "sub-a".into(),
                requests: sub.0,
                throttled: sub.1,
            }],
        }
    }

    #[test]
    fn nats_ports_files_name_their_pid() {
        assert_eq!(ports_file_pid("nats-server_4242.ports"), Some(4242));
        assert_eq!(ports_file_pid("nats_server_7.ports"), Some(7));
        assert_eq!(ports_file_pid("nats-server_x.ports"), None);
        assert_eq!(ports_file_pid("nats.conf"), None);
    }

    #[test]
    fn arm_deltas_count_admitted_writes_deletes_and_reads_of_the_phase() {
        let vnet = "Microsoft.Network/virtualNetworks";
        let before = stats(&[("PUT", vnet, 201, 10), ("GET", vnet, 200, 5)], (15, 0));
        let after = stats(
            &[
                ("PUT", vnet, 201, 30),
                ("PUT", vnet, 429, 4),
                ("POST", "Entra", 200, 9),
                ("POST", "Microsoft.Foo/bars", 200, 1),
                ("DELETE", vnet, 202, 3),
                ("GET", vnet, 200, 25),
            ],
            (70, 4),
        );
        let d = ArmDelta::between(&before, &after, "SUB-A");
        assert_eq!(
            d,
            ArmDelta {
                requests: 55,
                throttled: 4,
                writes: 21,
                deletes: 3,
                reads: 20,
                by_type: [
                    (format!("DELETE {vnet}"), 3),
                    (format!("GET {vnet}"), 20),
                    ("POST Microsoft.Foo/bars".to_owned(), 1),
                    (format!("PUT {vnet}"), 20),
                ]
                .into(),
            }
        );
        assert_eq!(d.throttled_share(), Some(4.0 / 55.0));
        assert_eq!(ArmDelta::default().throttled_share(), None);
    }

    fn cluster(phase: pb::ClusterPhase, paused: bool) -> pb::Cluster {
        pb::Cluster {
            name: "c".into(),
            status: Some(pb::ClusterStatus {
                phase: phase as i32,
                operation: Some(pb::Operation {
                    state: if paused {
                        pb::OperationState::Paused as i32
                    } else {
                        pb::OperationState::Running as i32
                    },
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn clusters_settle_ready_failed_or_paused() {
        assert_eq!(
            classify(&cluster(pb::ClusterPhase::Ready, false), false),
            Some(Settled::Succeeded)
        );
        assert_eq!(
            classify(&cluster(pb::ClusterPhase::Provisioning, false), false),
            None
        );
        assert!(matches!(
            classify(&cluster(pb::ClusterPhase::Provisioning, true), false),
            Some(Settled::Paused(_))
        ));
        assert!(matches!(
            classify(&cluster(pb::ClusterPhase::Failed, false), true),
            Some(Settled::Failed(_))
        ));
        assert_eq!(
            classify(&cluster(pb::ClusterPhase::Deleting, false), true),
            None
        );
    }
}
