//! `hypersaga serve <role>`: one service, configured from file and environment, until
//! SIGINT/SIGTERM (a second signal exits at once).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use hypersaga_config::Config;
use hypersaga_telemetry::LogFormat;
use tokio_util::sync::CancellationToken;
use tracing::info;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// gRPC API: authentication, validation, intent.
    Gateway,
    /// Saga engine: sequencing, retries, compensation.
    Coordinator,
    /// Workload identities, federated credentials, the tenant's OIDC issuer.
    Identity,
    /// Resource groups, NSG, VNet/subnet, public IP, load balancer.
    Network,
    /// Private DNS zone, VNet link, records.
    Dns,
    /// Namespace, secrets and HostedCluster on the management cluster.
    Controlplane,
    /// NodePools.
    Nodepool,
}

impl Role {
    pub const ALL: [Role; 7] = [
        Role::Gateway,
        Role::Coordinator,
        Role::Identity,
        Role::Network,
        Role::Dns,
        Role::Controlplane,
        Role::Nodepool,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::Coordinator => "coordinator",
            Role::Identity => "identity",
            Role::Network => "network",
            Role::Dns => "dns",
            Role::Controlplane => "controlplane",
            Role::Nodepool => "nodepool",
        }
    }
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The service to run.
    #[arg(value_enum)]
    pub role: Role,
    /// Configuration file (TOML, or JSON by extension); `HYPERSAGA_<SECTION>__<KEY>` overrides it.
    #[arg(long, env = "HYPERSAGA_CONFIG")]
    pub config: Option<PathBuf>,
    /// gRPC listen address (gateway only), overriding `gateway.listen`.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Address of the health probes and metrics (`/healthz`, `/readyz`, `/metrics`),
    /// overriding `health.listen`.
    #[arg(long, value_name = "ADDR")]
    pub health_listen: Option<SocketAddr>,
    /// Print the effective configuration (secrets hidden) and exit.
    #[arg(long)]
    pub dump_config: bool,
    /// Exit when this process (the supervisor) is no longer our parent.
    #[arg(long, hide = true)]
    pub supervisor_pid: Option<i32>,
}

/// A token cancelled by the first SIGINT/SIGTERM; a second one exits the process at once.
pub fn shutdown_on_signals() -> anyhow::Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let token = CancellationToken::new();
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let t = token.clone();
    tokio::spawn(async move {
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
        t.cancel();
        tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
        eprintln!("second signal: exiting now");
        std::process::exit(130);
    });
    Ok(token)
}

/// Stops the service when its supervisor (`--supervisor-pid`) is gone, so a `kill -9` of
/// `hypersaga dev` leaves no orphans behind.
fn exit_with_parent(parent: Option<i32>, shutdown: &CancellationToken) {
    let Some(parent) = parent else { return };
    let token = shutdown.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            if nix::unistd::getppid().as_raw() != parent {
                tracing::warn!(parent, "supervisor is gone; shutting down");
                token.cancel();
                return;
            }
        }
    });
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = Config::load(args.config.as_deref())?;
    if let Some(listen) = args.listen {
        config.gateway.listen = listen;
    }
    if let Some(listen) = args.health_listen {
        config.health.listen = Some(listen);
    }
    if args.dump_config {
        println!("{}", config.redacted_json());
        return Ok(ExitCode::SUCCESS);
    }
    let format = if config.log.format == "json" {
        LogFormat::Json
    } else {
        LogFormat::Text
    };
    let exporting = hypersaga_telemetry::init_service(
        &format!("hypersaga-{}", args.role.name()),
        &config.log.filter,
        format,
    )?;
    let shutdown = shutdown_on_signals()?;
    exit_with_parent(args.supervisor_pid, &shutdown);
    info!(role = args.role.name(), "starting");
    hypersaga_telemetry::probes::metrics();
    if let Some(listen) = config.health.listen {
        let probes = shutdown.child_token();
        tokio::spawn(async move {
            if let Err(e) = hypersaga_telemetry::probes::serve(listen, probes).await {
                tracing::error!(error = %e, %listen, "cannot serve health probes and metrics");
            }
        });
        // Not ready once draining: traffic and new work leave before the process stops.
        let draining = shutdown.clone();
        tokio::spawn(async move {
            draining.cancelled().await;
            hypersaga_telemetry::probes::set_ready(false);
        });
    }
    let role = args.role.name();
    match args.role {
        Role::Gateway => {
            let listener = std::net::TcpListener::bind(config.gateway.listen)
                .with_context(|| format!("cannot listen on {}", config.gateway.listen))?;
            hypersaga_gateway::run(&config, listener, shutdown).await?
        }
        Role::Coordinator => hypersaga_coordinator::run(&config, shutdown).await?,
        Role::Identity => hypersaga_identity::run(&config, shutdown).await?,
        Role::Network => hypersaga_network::run(&config, shutdown).await?,
        Role::Dns => hypersaga_dns::run(&config, shutdown).await?,
        Role::Controlplane => hypersaga_controlplane::run(&config, shutdown).await?,
        Role::Nodepool => hypersaga_nodepool::run(&config, shutdown).await?,
    }
    info!(role, "stopped");
    // Flushing waits on the exporter, whose connection runs on this runtime: let the other
    // tasks go on meanwhile.
    tokio::task::block_in_place(|| drop(exporting));
    Ok(ExitCode::SUCCESS)
}
