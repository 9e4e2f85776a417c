//! `hypersaga dev`: the whole system on one machine.
//!
//! Real servers for what is real (nats-server, Azurite), the project's emulators for Azure
//! Resource Manager + Entra and for the management cluster (in this process), and every service
//! as its own supervised child process — the same binary, `hypersaga serve <role>`, that a
//! container would run. Writes `endpoints.json` for the client commands and stops everything
//! cleanly on Ctrl-C or SIGTERM.

mod bus;
mod federation;
mod profile;
mod supervisor;
pub mod world;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use hypersaga_config::{
    AzureConfig, BlobConfig, Config, GatewayConfig, GatewayTls, KubeConfig, LogConfig, NatsConfig,
    Secret, TenantAzure, TenantConfig, TokenDigest,
};
use hypersaga_devca::{DevCa, ServerCert};
use hypersaga_model::TenantId;
use hypersaga_procs::{AZURITE_ACCOUNT, AZURITE_KEY, AZURITE_KEY_STORE_ACCOUNT, Azurite};
use rand::Rng;
use tokio_util::sync::CancellationToken;

pub use profile::Profile;
use supervisor::{ChildSpec, Supervisor};

use crate::endpoints::{DevTenant, ENDPOINTS_VERSION, Endpoints, write_private};
use crate::serve::{Role, shutdown_on_signals};

#[derive(Args, Debug)]
pub struct DevArgs {
    /// Where to keep state: endpoints.json, config, CA, logs, NATS data. Wiped at start.
    #[arg(long, default_value = crate::endpoints::DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Replicas of each service (the gateway's replicas listen on their own ports).
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// nats-servers in the bus: 1, or a JetStream cluster of 3 (or more) with every stream
    /// and bucket replicated 3 times, as a production deployment runs it. Their pids are in
    /// `<state>/nats/pids.json`, to try losing one.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=7))]
    pub nats_servers: u16,
    /// gRPC listen address of the (first) gateway; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub grpc_listen: SocketAddr,
    /// Address of the (first) gateway's live view of operations (a web page; the banner
    /// prints its URL) [default: a free port].
    #[arg(long, value_name = "ADDR")]
    pub web_listen: Option<SocketAddr>,
    /// Management clusters (each its own emulator), all in the ARM region: `default` alone,
    /// or `mc-1` … `mc-N`, creates placed on the one with the most room.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub management_clusters: u16,
    /// Hosted control planes each management cluster may carry [default: no limit with one,
    /// 50 each with several].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub management_cluster_capacity: Option<u32>,
    /// Timing profile of the emulators and retries.
    #[arg(long, value_enum, default_value_t = Profile::Demo)]
    pub profile: Profile,
    /// Tenants onboarded at start, each with its own subscription, principal, public DNS zone
    /// and token: acme, globex, then initech, umbrella, hooli, soylent, wonka, tyrell,
    /// cyberdyne, oscorp.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=10))]
    pub tenants: u8,
    /// Seconds one action of one step may take before its operation pauses with
    /// `StepDeadlineExceeded` (`coordinator.step_timeout_s`) [default: the profile's: 120 in
    /// demo and fast, 2700 in real].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(10..))]
    pub step_timeout: Option<u64>,
    /// Multiplies ARM's throttling limits — the emulator's buckets and the services' shared
    /// budget alike — so load tests can scale budgets and latencies down together (1 = Azure's
    /// real limits).
    #[arg(long, default_value_t = 1.0, value_parser = positive_scale)]
    pub arm_budget_scale: f64,
    /// Per-tenant quota of clusters (production default: 100).
    #[arg(long, default_value_t = 1000)]
    pub max_clusters: u32,
    /// Per-tenant quota of operations not yet finished (production default: 64).
    #[arg(long, default_value_t = 1000)]
    pub max_operations_in_flight: u32,
    /// Log filter for the services (RUST_LOG syntax).
    #[arg(long, default_value = "info")]
    pub log: String,
}

/// The tenants onboarded at start, in order; `--tenants` takes the first N.
const TENANT_NAMES: [&str; 10] = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "soylent",
    "wonka",
    "tyrell",
    "cyberdyne",
    "oscorp",
];
/// Hosted control planes each of several management clusters carries, unless
/// `--management-cluster-capacity` says.
const DEFAULT_CAPACITY: u32 = 50;

/// The management clusters' names: `default` alone, else `mc-1` … `mc-N`.
fn management_names(n: u16) -> Vec<String> {
    match n {
        0 | 1 => vec![hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER.to_owned()],
        n => (1..=n).map(|i| format!("mc-{i}")).collect(),
    }
}

/// A running management-cluster emulator (served while this is kept).
struct Managed {
    name: String,
    admin_url: String,
    kubeconfig: PathBuf,
    _served: hypersaga_devca::Loopback,
}

/// Starts one management-cluster emulator (HyperShift, CAPI and CAPZ making workers in the
/// ARM emulator) and writes its kubeconfig under `state`.
#[allow(clippy::too_many_arguments)]
async fn start_management_cluster(
    name: &str,
    state: &Path,
    arm_url: &str,
    ca: &DevCa,
    cert: &ServerCert,
    timings: &profile::Timings,
    shutdown: &CancellationToken,
) -> anyhow::Result<Managed> {
    let token = random_hex(24);
    let mgmt = hypersaga_emulator_mgmt::Emulator::new(hypersaga_emulator_mgmt::Config {
        token: token.clone(),
        hosted_cluster_available_after: timings.hosted_cluster_available_after,
        node_pool_ready_after: timings.node_pool_ready_after,
        deletion_after: timings.deletion_after,
        control_plane_upgrade_after: timings.control_plane_upgrade_after,
        // CAPZ makes the workers in the ARM emulator, as the node-pool-management identity.
        azure: Some(hypersaga_emulator_mgmt::AzureEndpoints {
            arm_url: arm_url.to_owned(),
            entra_url: arm_url.to_owned(),
            ca_pem: Some(ca.cert_pem().to_owned()),
        }),
        ..Default::default()
    });
    let s = shutdown.clone();
    mgmt.spawn_operator(async move { s.cancelled().await });
    let served =
        hypersaga_devca::serve_loopback(mgmt.router(), mgmt.admin_router(), cert, shutdown).await?;
    // Hosted clusters' kubeconfigs point at this server's `/hosted/<namespace>` APIs.
    mgmt.set_served_at(served.url.clone(), ca.cert_pem());
    let kubeconfig = match name {
        hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER => state.join("kubeconfig"),
        other => state.join(format!("kubeconfig-{other}")),
    };
    write_private(
        &kubeconfig,
        hypersaga_emulator_mgmt::kubeconfig_yaml(&served.url, ca.cert_pem(), &token).as_bytes(),
    )?;
    Ok(Managed {
        name: name.to_owned(),
        admin_url: served.admin_url.clone(),
        kubeconfig,
        _served: served,
    })
}
const BUS_PREFIX: &str = "hcp";

pub async fn run(args: DevArgs) -> anyhow::Result<ExitCode> {
    hypersaga_telemetry::init("warn", hypersaga_telemetry::LogFormat::Text);
    let shutdown = shutdown_on_signals()?;
    let state = prepare_state_dir(&args.state_dir)?;
    let mut timings = args.profile.timings();
    if let Some(secs) = args.step_timeout {
        timings.coordinator.step_timeout_s = secs;
    }

    let ca = DevCa::generate()?;
    let ca_path = state.join("ca.pem");
    std::fs::write(&ca_path, ca.cert_pem())?;
    let cert = ca.issue_loopback_cert()?;

    let mut tenants: Vec<DevTenant> = TENANT_NAMES
        .iter()
        .take(usize::from(args.tenants))
        .map(|n| new_tenant(n))
        .collect();
    let tls = TlsFiles::write(&state.join("tls"), &cert)?;
    let closed = bus::prepare(&state, BUS_PREFIX, &tls)?;
    let audit_passwords = bus::write_audit_passwords(&closed.credentials_dir, &tenants)?;
    let nats = start_nats(
        &state.join("nats"),
        args.nats_servers,
        &closed.server_config,
    )
    .await?;
    let azurite = Azurite::start().await.context("starting Azurite")?;

    // The outside world: ARM + Entra, and the management cluster.
    let arm = hypersaga_emulator_arm::Emulator::new(hypersaga_emulator_arm::Config {
        principals: tenants
            .iter()
            .map(|t| hypersaga_emulator_arm::Principal {
                azure_tenant_id: t.azure_tenant_id.clone(),
                client_id: t.client_id.clone(),
                client_secret: t.client_secret.clone(),
                subscription_ids: vec![t.subscription_id.clone()],
            })
            .collect(),
        latency: timings.arm_latency,
        throttle: hypersaga_emulator_arm::ThrottleConfig::default().scaled(args.arm_budget_scale),
        ..Default::default()
    });
    let arm_served =
        hypersaga_devca::serve_loopback(arm.router(), arm.admin_router(), &cert, &shutdown).await?;
    let arm_url = arm_served.url.clone();
    // The issuers' blobs through the ARM emulator's data-plane faults, then Azurite.
    let azurite_base = azurite
        .blob_endpoint()
        .trim_end_matches(&format!("/{AZURITE_ACCOUNT}"))
        .to_owned();
    let blob_url = format!(
        "{}/{AZURITE_ACCOUNT}",
        hypersaga_devca::serve_http_loopback(arm.storage_proxy(&azurite_base), &shutdown).await?
    );

    let mut managed = Vec::new();
    for name in management_names(args.management_clusters) {
        managed.push(
            start_management_cluster(&name, &state, &arm_url, &ca, &cert, &timings, &shutdown)
                .await?,
        );
    }
    let kubeconfig = managed[0].kubeconfig.clone();
    let management_clusters: Vec<hypersaga_config::ManagementClusterConfig> =
        match (args.management_clusters, args.management_cluster_capacity) {
            // One, unlimited: the implicit `default`.
            (1, None) => Vec::new(),
            (_, capacity) => managed
                .iter()
                .map(|m| hypersaga_config::ManagementClusterConfig {
                    name: m.name.clone(),
                    region: hypersaga_config::AzureConfig::default().arm_region,
                    capacity: capacity.unwrap_or(DEFAULT_CAPACITY),
                    kubeconfig: Some(absolute(&m.kubeconfig)),
                })
                .collect(),
        };

    // One configuration for every service.
    let grpc = match args.grpc_listen.port() {
        0 => SocketAddr::from(([127, 0, 0, 1], hypersaga_procs::free_port()?)),
        _ => args.grpc_listen,
    };
    // Say so now, not after the gateway has failed to start a few times.
    TcpListener::bind(grpc).with_context(|| {
        format!("cannot listen on {grpc} for the gRPC API (another `hypersaga dev`?); pass --grpc-listen 127.0.0.1:0 for a free port")
    })?;
    let web = match args.web_listen {
        Some(addr) if addr.port() != 0 => addr,
        _ => SocketAddr::from(([127, 0, 0, 1], hypersaga_procs::free_port()?)),
    };
    TcpListener::bind(web).with_context(|| {
        format!("cannot listen on {web} for the live view; leave --web-listen out for a free port")
    })?;
    let admin_token = crate::commands::token::new_token("hsadmin");
    let issuer_blob = BlobConfig {
        endpoint: blob_url.clone(),
        account_name: AZURITE_ACCOUNT.into(),
        account_key: Secret::new(AZURITE_KEY),
    };
    let federation = federation::publish(&state, &issuer_blob).await?;
    // Each tenant, as its administrator would: its public DNS zone, and the application
    // hypersaga reaches its subscription through.
    let ca_pem = ca.cert_pem().to_owned();
    let registered = futures::future::try_join_all(
        tenants
            .iter()
            .map(|t| world::register_app(&arm_url, &ca_pem, &federation, t)),
    )
    .await?;
    for (t, app) in tenants.iter_mut().zip(registered) {
        t.hypersaga_client_id = app;
        world::make_public_zone(&arm_url, &ca_pem, t)
            .await
            .with_context(|| format!("making {}'s public DNS zone", t.name))?;
    }
    let config = Config {
        nats: NatsConfig {
            url: nats.url(),
            prefix: BUS_PREFIX.into(),
            credentials_dir: Some(absolute(&closed.credentials_dir)),
            ca_file: Some(absolute(&ca_path)),
            // Three copies on a cluster (so one server may be lost), one on a lone server.
            replicas: nats.servers().len().min(3),
        },
        tenants: tenants
            .iter()
            .map(|t| -> anyhow::Result<TenantConfig> {
                Ok(TenantConfig {
                    id: TenantId::new(t.name.clone())?,
                    tokens: vec![TokenDigest::of(&t.token)],
                    audit_credentials: audit_passwords
                        .get(&t.name)
                        .map(|p| vec![TokenDigest::of(p)])
                        .unwrap_or_default(),
                    // Ids only: hypersaga reaches the tenant through workload identity
                    // federation, and holds no secret of the tenant's.
                    azure: TenantAzure {
                        tenant_id: t.azure_tenant_id.clone(),
                        subscription_id: t.subscription_id.clone(),
                        client_id: t.hypersaga_client_id.clone(),
                        client_secret: None,
                    },
                })
            })
            .collect::<anyhow::Result<_>>()?,
        azure: AzureConfig {
            resource_manager_url: arm_url.clone(),
            authority_host: arm_url.clone(),
            ca_bundle: Some(ca_path.clone()),
            lro_poll_interval_ms: timings.lro_poll_interval_ms,
            lro_timeout_s: 600,
            budget: scaled_budget(args.arm_budget_scale),
            ..AzureConfig::default()
        },
        blob: issuer_blob,
        // The keys' own account, whose key Azurite was given at its start.
        signing_keys: BlobConfig {
            endpoint: azurite.key_store_endpoint(),
            account_name: AZURITE_KEY_STORE_ACCOUNT.into(),
            account_key: Secret::new(azurite.key_store_key()),
        },
        kube: KubeConfig {
            kubeconfig: Some(kubeconfig.clone()),
            pull_secret: Some(Secret::new(
                r#"{"auths":{"registry.example.com":{"auth":"ZGV2OmRldg=="}}}"#,
            )),
            available_timeout_s: Some(600),
            recheck_interval_ms: Some(timings.kube_recheck_interval_ms),
            management_clusters: management_clusters.clone(),
        },
        gateway: GatewayConfig {
            listen: grpc,
            tls: Some(GatewayTls {
                cert_file: absolute(&tls.cert_file),
                key_file: absolute(&tls.key_file),
                client_ca_file: None,
                require_client_cert: false,
            }),
            // A test bed for fleets: the benches burst hundreds of calls per tenant.
            requests_per_sec_per_tenant: 2_000,
            request_burst_per_tenant: 10_000,
            admins: vec![hypersaga_config::AdminConfig {
                name: "dev".into(),
                tokens: vec![TokenDigest::of(&admin_token)],
            }],
            web_listen: Some(web),
            ..GatewayConfig::default()
        },
        coordinator: timings.coordinator,
        worker: timings.worker,
        log: LogConfig {
            filter: args.log.clone(),
            format: "text".into(),
        },
        // The local system is a test bed for fleets (the benches burst hundreds of creates):
        // quotas there are the dev flags', not a production default.
        quotas: hypersaga_config::QuotasConfig {
            max_clusters: args.max_clusters,
            max_operations_in_flight: args.max_operations_in_flight,
            ..Default::default()
        },
        // One host, many roles: each child gets its own probe port (`--health-listen`).
        health: Default::default(),
        federation,
    };
    config.validate()?;
    let config_path = state.join("config.json");
    write_private(
        &config_path,
        serde_json::to_string_pretty(&config)?.as_bytes(),
    )?;
    // As every service will load it: with this shell's HYPERSAGA_ variables over it. One
    // refused here is said once, rather than by every child as it crash-loops.
    if let Err(e) = Config::load(Some(&config_path)) {
        anyhow::bail!("{e} (from this shell's HYPERSAGA_ variables)");
    }

    // Every service, supervised.
    let mut sup = Supervisor::new(&state);
    let config_arg = config_path.to_string_lossy().into_owned();
    let mut health = std::collections::BTreeMap::new();
    for role in Role::ALL {
        for i in 0..args.replicas.max(1) {
            let mut a = vec![
                "serve".to_owned(),
                role.name().to_owned(),
                "--config".to_owned(),
                config_arg.clone(),
            ];
            if role == Role::Gateway && i > 0 {
                a.push("--listen".into());
                a.push(format!("127.0.0.1:{}", hypersaga_procs::free_port()?));
                a.push("--web-listen".into());
                a.push(format!("127.0.0.1:{}", hypersaga_procs::free_port()?));
            }
            let name = format!("{}-{i}", role.name());
            let probes = format!("127.0.0.1:{}", hypersaga_procs::free_port()?);
            a.push("--health-listen".into());
            a.push(probes.clone());
            health.insert(name.clone(), format!("http://{probes}"));
            sup.spawn(ChildSpec { name, args: a })?;
        }
    }

    let endpoints = Endpoints {
        version: ENDPOINTS_VERSION,
        grpc: format!("https://{grpc}"),
        nats_url: nats.url(),
        nats_credentials_dir: Some(absolute(&closed.credentials_dir)),
        arm_url: arm_url.clone(),
        entra_url: arm_url.clone(),
        emulator_admin_url: arm_served.admin_url.clone(),
        mgmt_admin_url: managed[0].admin_url.clone(),
        management_clusters: managed
            .iter()
            .map(|m| crate::endpoints::DevManagementCluster {
                name: m.name.clone(),
                admin_url: m.admin_url.clone(),
                kubeconfig: absolute(&m.kubeconfig),
            })
            .collect(),
        kubeconfig: absolute(&kubeconfig),
        azurite_blob_url: blob_url.clone(),
        ca_bundle: absolute(&ca_path),
        tenants,
        state_dir: absolute(&state),
        health,
        admin_token: Some(admin_token.clone()),
        web: Some(format!("https://{web}/")),
    };
    let ready = wait_for_gateway(&endpoints, &shutdown).await;
    if ready {
        endpoints.save(&state.join("endpoints.json"))?;
        // Best effort: with its output gone (`| head`), the system still runs.
        let env = std::env::var_os("HYPERSAGA_ENDPOINTS");
        let _ = crate::out!("{}", banner(&endpoints, &args, env.as_deref()));
        shutdown.cancelled().await;
        crate::errln!("[dev] stopping…");
    } else if !shutdown.is_cancelled() {
        crate::errln!(
            "[dev] the gateway did not come up; see {}",
            state.join("logs/gateway-0.log").display()
        );
    }
    sup.stop_all().await;
    shutdown.cancel();
    let _ = std::fs::remove_file(state.join("endpoints.json"));
    nats.stop().await;
    azurite.stop().await;
    crate::errln!("[dev] stopped");
    Ok(if ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Starts the bus: one server, or a JetStream cluster whose pids go to `dir/pids.json` (for
/// tests that lose a server).
async fn start_nats(
    dir: &Path,
    servers: u16,
    config: &str,
) -> anyhow::Result<hypersaga_procs::NatsCluster> {
    let nats = hypersaga_procs::NatsCluster::start_with_config(dir, servers.into(), config)
        .await
        .context("starting nats-server")?;
    if servers > 1 {
        let pids: std::collections::BTreeMap<String, u32> = nats
            .servers()
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((format!("n{i}"), s.pid()?)))
            .collect();
        std::fs::write(dir.join("pids.json"), serde_json::to_vec_pretty(&pids)?)?;
    }
    Ok(nats)
}

fn positive_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// ARM's limits (what `ArmBudget::default` holds) multiplied by `scale`.
fn scaled_budget(scale: f64) -> hypersaga_config::ArmBudget {
    let d = hypersaga_config::ArmBudget::default();
    let burst = |b: u32| ((f64::from(b) * scale).round() as u32).max(1);
    hypersaga_config::ArmBudget {
        reads_per_sec: d.reads_per_sec * scale,
        reads_burst: burst(d.reads_burst),
        writes_per_sec: d.writes_per_sec * scale,
        writes_burst: burst(d.writes_burst),
        deletes_per_sec: d.deletes_per_sec * scale,
        deletes_burst: burst(d.deletes_burst),
        ..d
    }
}

/// Fresh state each run: the emulators keep theirs in memory, so old bus state would only
/// describe resources that no longer exist.
fn prepare_state_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for sub in ["nats", "logs"] {
        let p = dir.join(sub);
        if p.exists() {
            std::fs::remove_dir_all(&p)?;
        }
    }
    for f in ["endpoints.json", "pids.json"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    Ok(dir.to_owned())
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

/// The dev CA's loopback certificate as files, for the servers that read them (nats-server, the
/// gateway).
pub(crate) struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl TlsFiles {
    fn write(dir: &Path, cert: &ServerCert) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let files = Self {
            cert_file: dir.join("server.pem"),
            key_file: dir.join("server-key.pem"),
        };
        std::fs::write(&files.cert_file, &cert.cert_pem)?;
        write_private(&files.key_file, cert.key_pem.as_bytes())?;
        Ok(files)
    }
}

fn random_hex(bytes: usize) -> String {
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

fn new_tenant(name: &str) -> DevTenant {
    DevTenant {
        name: name.to_owned(),
        token: crate::commands::token::new_token(&format!("hs_{name}")),
        hypersaga_client_id: String::new(),
        azure_tenant_id: uuid::Uuid::new_v4().to_string(),
        subscription_id: uuid::Uuid::new_v4().to_string(),
        client_id: uuid::Uuid::new_v4().to_string(),
        client_secret: random_hex(20),
    }
}

async fn wait_for_gateway(e: &Endpoints, shutdown: &CancellationToken) -> bool {
    let deadline = Instant::now() + Duration::from_secs(90);
    let token = &e.tenants[0].token;
    while Instant::now() < deadline && !shutdown.is_cancelled() {
        if let Ok(mut c) = crate::client::connect(&e.grpc, token, Some(&e.ca_bundle)).await
            && c.list_clusters(hypersaga_api::v1::ListClustersRequest::default())
                .await
                .is_ok()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// What `hypersaga dev` prints once everything answers: where each part is, and a first
/// command to try that works as printed from another terminal: with the line to export first
/// whenever a client would not find this endpoints file by itself (another state directory,
/// or `$HYPERSAGA_ENDPOINTS` pointing elsewhere).
fn banner(e: &Endpoints, args: &DevArgs, endpoints_env: Option<&std::ffi::OsStr>) -> String {
    let d = args.state_dir.display();
    let mut b = format!(
        "hypersaga dev is running ({} replica(s) of each service, profile {:?}; state in {d})\n",
        args.replicas.max(1),
        args.profile
    );
    b.push_str(&format!("  gRPC API          {}\n", e.grpc));
    if let (Some(web), Some(tenant)) = (&e.web, e.tenants.first()) {
        // The token rides in the fragment, which the browser keeps to itself: the page
        // takes it once into the tab's storage and drops it from the address.
        b.push_str(&format!(
            "  live view         {web}#token={}   (as {}; trust the CA bundle below)\n",
            tenant.token, tenant.name
        ));
    }
    b.push_str(&format!("  NATS              {}\n", e.nats_url));
    b.push_str(&format!("  ARM / Entra       {}\n", e.arm_url));
    b.push_str(&format!(
        "  emulator admin    {} (ARM)   {} (management cluster)\n",
        e.emulator_admin_url, e.mgmt_admin_url
    ));
    b.push_str(&format!("  kubeconfig        {}\n", e.kubeconfig.display()));
    b.push_str(&format!("  Azurite blob      {}\n", e.azurite_blob_url));
    b.push_str(&format!("  CA bundle         {}\n", e.ca_bundle.display()));
    for t in &e.tenants {
        b.push_str(&format!(
            "  tenant {:<10} token {}  subscription {}\n",
            t.name, t.token, t.subscription_id
        ));
    }
    let file = e.state_dir.join("endpoints.json");
    b.push_str(&format!(
        "  endpoints file    {}   logs {d}/logs/\n",
        file.display()
    ));
    b.push_str("Try, in another terminal:\n");
    let found_by_default =
        args.state_dir == Path::new(crate::endpoints::DEFAULT_STATE_DIR) && endpoints_env.is_none();
    if found_by_default {
        b.push_str("  hypersaga cluster create demo --wait      (from this directory)\n");
    } else {
        b.push_str(&format!(
            "  export HYPERSAGA_ENDPOINTS={}\n",
            shell_quoted(&file.to_string_lossy())
        ));
        b.push_str("  hypersaga cluster create demo --wait\n");
    }
    b.push_str("Ctrl-C stops everything.\n");
    b
}

/// `s` as one shell word: as it is when it needs no quoting, else in single quotes.
fn shell_quoted(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn endpoints(state_dir: &Path) -> Endpoints {
        Endpoints {
            version: ENDPOINTS_VERSION,
            grpc: "https://127.0.0.1:50051".into(),
            nats_url: "tls://127.0.0.1:4222".into(),
            nats_credentials_dir: None,
            arm_url: "https://127.0.0.1:1".into(),
            entra_url: "https://127.0.0.1:1".into(),
            emulator_admin_url: "http://127.0.0.1:2".into(),
            mgmt_admin_url: "http://127.0.0.1:3".into(),
            kubeconfig: state_dir.join("kubeconfig"),
            azurite_blob_url: "http://127.0.0.1:4".into(),
            ca_bundle: state_dir.join("ca.pem"),
            tenants: vec![new_tenant("acme")],
            state_dir: state_dir.to_owned(),
            health: Default::default(),
            admin_token: None,
            management_clusters: Vec::new(),
            web: Some("https://127.0.0.1:50052/".into()),
        }
    }

    fn args(extra: &[&str]) -> DevArgs {
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            dev: DevArgs,
        }
        let mut argv = vec!["dev"];
        argv.extend_from_slice(extra);
        Wrapper::parse_from(argv).dev
    }

    #[test]
    fn the_banner_says_what_to_export_when_a_client_would_not_find_the_system() {
        let state = Path::new("/tmp/my state/d");
        let shown = banner(
            &endpoints(state),
            &args(&["--state-dir", "/tmp/my state/d"]),
            None,
        );
        assert!(
            shown.contains("  export HYPERSAGA_ENDPOINTS='/tmp/my state/d/endpoints.json'\n  hypersaga cluster create demo --wait\n"),
            "{shown}"
        );
        let default = Path::new("/home/u/.hypersaga");
        let e = endpoints(default);
        let shown = banner(&e, &args(&[]), None);
        assert!(!shown.contains("export"), "{shown}");
        let acme = &e.tenants[0].token;
        assert!(
            shown.contains(&format!(
                "  live view         https://127.0.0.1:50052/#token={acme}   (as acme;"
            )),
            "{shown}"
        );
        assert!(
            shown.contains("  hypersaga cluster create demo --wait"),
            "{shown}"
        );
        // A variable that points elsewhere would be followed instead: say what to export.
        let shown = banner(
            &endpoints(default),
            &args(&[]),
            Some(std::ffi::OsStr::new("/elsewhere/endpoints.json")),
        );
        assert!(
            shown.contains("export HYPERSAGA_ENDPOINTS=/home/u/.hypersaga/endpoints.json"),
            "{shown}"
        );
        assert_eq!(shell_quoted("it's"), r"'it'\''s'");
    }
}
