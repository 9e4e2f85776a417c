//! `hypersaga emulator certs | serve-arm | serve-mgmt`: the stand-ins for Azure and the
//! management cluster as servers of their own, one per container (compose.yaml), where
//! `hypersaga dev` runs the same emulators inside its own process.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use hypersaga_config::Config;
use hypersaga_devca::{DevCa, ServerCert};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::dev::Profile;
use crate::endpoints::write_private;
use crate::serve::shutdown_on_signals;

#[derive(Subcommand, Debug)]
pub enum ServeCommand {
    /// Make a throw-away CA and one server certificate for the emulators, NATS and the
    /// gateway of a local stack: `ca.pem`, `server.pem` and `server-key.pem` in --out. Files
    /// already there are kept (--force replaces them), so a stack restarted on the same
    /// volume keeps the CA its clients trust.
    Certs(CertsArgs),
    /// Serve the ARM + Entra ID emulator over TLS, and its admin API over plain HTTP. Its
    /// service principals are the tenants of --config (each tenant's Azure principal, on its
    /// subscription), and it makes each tenant's public DNS zone `example.com` through its
    /// own ARM API, as `hypersaga dev` does, so clusters can be created at once.
    ServeArm(ServeArmArgs),
    /// Serve the management-cluster emulator (a Kubernetes API with HyperShift's
    /// HostedClusters and NodePools, and a simulated operator) over TLS, and its admin API
    /// over plain HTTP; writes the kubeconfig its clients use.
    ServeMgmt(ServeMgmtArgs),
}

#[derive(Args, Debug)]
pub struct CertsArgs {
    /// Directory for `ca.pem`, `server.pem` and `server-key.pem` (owner-only).
    #[arg(long)]
    pub out: PathBuf,
    /// A DNS name or IP address the certificate is for (repeat, or comma-separated).
    #[arg(long = "name", value_delimiter = ',', default_values_t = ["localhost".to_owned(), "127.0.0.1".to_owned()])]
    pub names: Vec<String>,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
}

/// Where an emulator listens and what it presents.
#[derive(Args, Debug)]
pub struct TlsServer {
    /// PEM certificate chain to serve the API with.
    #[arg(long)]
    pub tls_cert: PathBuf,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    pub tls_key: PathBuf,
    /// Timing profile: `demo` scales Azure's and HyperShift's latencies down to seconds,
    /// `fast` to nearly nothing.
    #[arg(long, value_enum, default_value_t = Profile::Demo)]
    pub profile: Profile,
}

#[derive(Args, Debug)]
pub struct ServeArmArgs {
    /// The hypersaga configuration whose tenants the emulator knows (their `azure`
    /// principals and subscriptions), and whose `azure.ca_bundle` trusts --tls-cert.
    #[arg(long)]
    pub config: PathBuf,
    /// ARM and Entra ID (HTTPS). Point `azure.resource_manager_url` and
    /// `azure.authority_host` here.
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// The admin API (HTTP): `hypersaga emulator fault … --admin-url`.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub admin_listen: SocketAddr,
    #[command(flatten)]
    pub tls: TlsServer,
    /// Multiplies ARM's throttling limits (1 = Azure's real limits); give the services'
    /// `azure.budget` the same scale.
    #[arg(long, default_value_t = 1.0, value_parser = positive)]
    pub arm_budget_scale: f64,
}

#[derive(Args, Debug)]
pub struct ServeMgmtArgs {
    /// The Kubernetes API (HTTPS).
    #[arg(long, default_value = "0.0.0.0:6443")]
    pub listen: SocketAddr,
    /// The admin API (HTTP): `hypersaga emulator cluster-fault … --admin-url`.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub admin_listen: SocketAddr,
    #[command(flatten)]
    pub tls: TlsServer,
    /// CA bundle of --tls-cert, written into the kubeconfig.
    #[arg(long)]
    pub ca_file: PathBuf,
    /// The API's URL as clients reach it, written into the kubeconfig (e.g. https://mgmt:6443).
    #[arg(long)]
    pub server_url: String,
    /// Where to write the kubeconfig (owner-only), with a bearer token made at start.
    #[arg(long)]
    pub kubeconfig_out: PathBuf,
}

pub async fn run(cmd: ServeCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ServeCommand::Certs(a) => certs(a),
        ServeCommand::ServeArm(a) => serve_arm(a).await,
        ServeCommand::ServeMgmt(a) => serve_mgmt(a).await,
    }
}

fn certs(a: CertsArgs) -> anyhow::Result<ExitCode> {
    let ca_file = a.out.join("ca.pem");
    let cert_file = a.out.join("server.pem");
    let key_file = a.out.join("server-key.pem");
    let files = [&ca_file, &cert_file, &key_file];
    if !a.force && files.iter().all(|f| f.exists()) {
        crate::outln!("kept {}", a.out.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let ca = DevCa::generate()?;
    let names: Vec<&str> = a.names.iter().map(String::as_str).collect();
    let cert = ca.issue_server_cert(&names)?;
    // Certificates are public; the key is the owner's alone.
    std::fs::write(&ca_file, ca.cert_pem())?;
    std::fs::write(&cert_file, &cert.cert_pem)?;
    write_private(&key_file, cert.key_pem.as_bytes())?;
    for f in files {
        crate::outln!("{}", f.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve_arm(a: ServeArmArgs) -> anyhow::Result<ExitCode> {
    hypersaga_telemetry::init("info", hypersaga_telemetry::LogFormat::Text);
    let shutdown = shutdown_on_signals()?;
    let config = Config::load(Some(&a.config))?;
    let cert = server_cert(&a.tls)?;
    let emulator = hypersaga_emulator_arm::Emulator::new(hypersaga_emulator_arm::Config {
        principals: config
            .tenants
            .iter()
            .filter_map(|t| {
                Some(hypersaga_emulator_arm::Principal {
                    azure_tenant_id: t.azure.tenant_id.clone(),
                    client_id: t.azure.client_id.clone(),
                    client_secret: t.azure.client_secret.as_ref()?.expose().to_owned(),
                    subscription_ids: vec![t.azure.subscription_id.clone()],
                })
            })
            .collect(),
        latency: a.tls.profile.timings().arm_latency,
        throttle: hypersaga_emulator_arm::ThrottleConfig::default().scaled(a.arm_budget_scale),
        region: config.azure.arm_region.clone(),
        ..Default::default()
    });
    let api = bind(a.listen)?;
    let port = api.local_addr()?.port();
    let admin = bind(a.admin_listen)?;
    let servers = [
        spawn_tls(api, emulator.router(), &cert, &shutdown),
        spawn_http(admin, emulator.admin_router(), &shutdown)?,
    ];

    // What a user has before a first cluster, made through the API just served (on loopback:
    // --tls-cert must name `localhost`).
    let local = format!("https://localhost:{port}");
    let ca_pem = match &config.azure.ca_bundle {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read azure.ca_bundle {}", path.display()))?,
        None => String::new(),
    };
    for t in &config.tenants {
        let Some(secret) = &t.azure.client_secret else {
            continue;
        };
        let user = crate::endpoints::DevTenant {
            name: t.id.to_string(),
            token: String::new(),
            hypersaga_client_id: t.azure.client_id.clone(),
            azure_tenant_id: t.azure.tenant_id.clone(),
            subscription_id: t.azure.subscription_id.clone(),
            client_id: t.azure.client_id.clone(),
            client_secret: secret.expose().to_owned(),
        };
        crate::dev::world::make_public_zone(&local, &ca_pem, &user)
            .await
            .with_context(|| format!("making {}'s public DNS zone", t.id))?;
    }
    info!(
        listen = %a.listen,
        admin = %a.admin_listen,
        tenants = config.tenants.len(),
        "ARM + Entra ID emulator ready"
    );
    wait(shutdown, servers).await
}

async fn serve_mgmt(a: ServeMgmtArgs) -> anyhow::Result<ExitCode> {
    hypersaga_telemetry::init("info", hypersaga_telemetry::LogFormat::Text);
    let shutdown = shutdown_on_signals()?;
    let cert = server_cert(&a.tls)?;
    let ca_pem = std::fs::read_to_string(&a.ca_file)
        .with_context(|| format!("cannot read {}", a.ca_file.display()))?;
    let timings = a.tls.profile.timings();
    let token = crate::commands::token::new_token("mgmt");
    let emulator = hypersaga_emulator_mgmt::Emulator::new(hypersaga_emulator_mgmt::Config {
        token: token.clone(),
        hosted_cluster_available_after: timings.hosted_cluster_available_after,
        node_pool_ready_after: timings.node_pool_ready_after,
        deletion_after: timings.deletion_after,
        ..Default::default()
    });
    let s = shutdown.clone();
    emulator.spawn_operator(async move { s.cancelled().await });
    let api = bind(a.listen)?;
    let admin = bind(a.admin_listen)?;
    if let Some(dir) = a.kubeconfig_out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write_private(
        &a.kubeconfig_out,
        hypersaga_emulator_mgmt::kubeconfig_yaml(&a.server_url, &ca_pem, &token).as_bytes(),
    )?;
    // Hosted clusters' kubeconfigs point at this server's `/hosted/<namespace>` APIs.
    emulator.set_served_at(a.server_url.clone(), ca_pem.clone());
    let servers = [
        spawn_tls(api, emulator.router(), &cert, &shutdown),
        spawn_http(admin, emulator.admin_router(), &shutdown)?,
    ];
    info!(
        listen = %a.listen,
        admin = %a.admin_listen,
        kubeconfig = %a.kubeconfig_out.display(),
        "management-cluster emulator ready"
    );
    wait(shutdown, servers).await
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

fn server_cert(tls: &TlsServer) -> anyhow::Result<ServerCert> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))
    };
    Ok(ServerCert {
        cert_pem: read(&tls.tls_cert)?,
        key_pem: read(&tls.tls_key)?,
    })
}

fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))
}

type Server = tokio::task::JoinHandle<anyhow::Result<()>>;

fn spawn_tls(
    listener: TcpListener,
    router: axum::Router,
    cert: &ServerCert,
    shutdown: &CancellationToken,
) -> Server {
    let cert = cert.clone();
    let s = shutdown.clone();
    tokio::spawn(async move {
        hypersaga_devca::serve_tls(listener, router, &cert, async move { s.cancelled().await })
            .await
            .context("TLS server")
    })
}

fn spawn_http(
    listener: TcpListener,
    router: axum::Router,
    shutdown: &CancellationToken,
) -> anyhow::Result<Server> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let s = shutdown.clone();
    Ok(tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { s.cancelled().await })
            .await
            .context("admin server")
    }))
}

/// Until a signal, or until a server fails (which stops the other and fails the command).
async fn wait(shutdown: CancellationToken, servers: [Server; 2]) -> anyhow::Result<ExitCode> {
    let [a, b] = servers;
    let failed = tokio::select! {
        _ = shutdown.cancelled() => None,
        r = a => Some(r),
        r = b => Some(r),
    };
    shutdown.cancel();
    match failed {
        None => Ok(ExitCode::SUCCESS),
        Some(Ok(Ok(()))) => anyhow::bail!("a server stopped"),
        Some(Ok(Err(e))) => Err(e),
        Some(Err(e)) => Err(e.into()),
    }
}
