//! `hypersaga serve <role>`: one service, configured from file and environment, until
//! SIGINT/SIGTERM (a second signal exits at once).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use hypersaga_config::{Config, Problem, Problems};
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
        self.config_role().name()
    }

    /// The same role, as the configuration's checks know it.
    pub fn config_role(self) -> hypersaga_config::Role {
        use hypersaga_config::Role as R;
        match self {
            Role::Gateway => R::Gateway,
            Role::Coordinator => R::Coordinator,
            Role::Identity => R::Identity,
            Role::Network => R::Network,
            Role::Dns => R::Dns,
            Role::Controlplane => R::Controlplane,
            Role::Nodepool => R::Nodepool,
        }
    }
}

/// `serve --help`: how environment variables map onto settings.
const ENV_HELP: &str = "\
Environment: every setting can be set as HYPERSAGA_<SECTION>__<KEY>, `__` between the parts
of its path, e.g. HYPERSAGA_COORDINATOR__LEASE_MS=90000, HYPERSAGA_AZURE__BUDGET__HEADROOM=0.8.
A number indexes a list (HYPERSAGA_TENANTS__0__AZURE__CLIENT_SECRET; the next free index adds
an entry), a map takes its key (HYPERSAGA_QUOTAS__TENANTS__ACME__MAX_CLUSTERS=500), and a
list can be given whole (HYPERSAGA_TENANTS__0__TOKENS='[sha256:…, sha256:…]'). The client
commands' variables (HYPERSAGA_ENDPOINTS, HYPERSAGA_SERVER, HYPERSAGA_CA, HYPERSAGA_TOKEN,
HYPERSAGA_NATS_URL, HYPERSAGA_NATS_CREDENTIALS, HYPERSAGA_NATS_CA) and HYPERSAGA_CONFIG are
not settings; any other HYPERSAGA_ variable that names no setting is refused, by name.
See docs/operations.md (Roles and configuration) for every setting.

Exit codes: 0 stopped cleanly (or --check-config: valid), 1 failed while running,
2 invalid configuration (every problem is printed, each with its setting).";

#[derive(Args, Debug)]
#[command(after_help = ENV_HELP)]
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
    /// Serve the live view of operations (a web page and its JSON API) here (gateway only),
    /// overriding `gateway.web_listen`.
    #[arg(long, value_name = "ADDR")]
    pub web_listen: Option<SocketAddr>,
    /// Address of the health probes and metrics (`/healthz`, `/readyz`, `/metrics`),
    /// overriding `health.listen`.
    #[arg(long, value_name = "ADDR")]
    pub health_listen: Option<SocketAddr>,
    /// Print the effective configuration (secrets hidden) and exit.
    #[arg(long)]
    pub dump_config: bool,
    /// Load and check the configuration for this role (values, and the files, tenants and
    /// secrets the role needs here), print every problem with its setting, and exit: 0 if
    /// valid, 2 if not. Binds and connects to nothing.
    #[arg(long, conflicts_with = "dump_config")]
    pub check_config: bool,
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
        crate::errln!("second signal: exiting now");
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

/// The configuration as `args` make it for its role, or every problem with it: its values,
/// and (unless it is only to be printed) what the role needs on this host, even when some
/// values are already wrong, so that one look lists everything.
fn load(args: &ServeArgs) -> Result<Config, Problems> {
    let (config, mut problems) =
        Config::load_checked(args.config.as_deref(), Config::process_env());
    let Some(mut config) = config else {
        return Err(Problems(problems));
    };
    if let Some(listen) = args.listen {
        config.gateway.listen = listen;
        problems.retain(|p| p.setting != "gateway.listen");
        problems.extend(
            config
                .gateway
                .problems()
                .into_iter()
                .filter(|p| p.setting == "gateway.listen")
                .map(|p| Problem::new("--listen", p.message)),
        );
    }
    if let Some(listen) = args.web_listen {
        config.gateway.web_listen = Some(listen);
        problems.retain(|p| p.setting != "gateway.web_listen");
        problems.extend(
            config
                .gateway
                .problems()
                .into_iter()
                .filter(|p| p.setting == "gateway.web_listen")
                .map(|p| Problem::new("--web-listen", p.message)),
        );
    }
    if let Some(listen) = args.health_listen {
        config.health.listen = Some(listen);
        problems.retain(|p| p.setting != "health.listen");
        problems.extend(
            config
                .health
                .problems(&config.gateway)
                .into_iter()
                .filter(|p| p.setting == "health.listen")
                .map(|p| Problem::new("--health-listen", p.message)),
        );
    }
    if !args.dump_config {
        problems.extend(config.role_problems(args.role.config_role()));
        if args.role == Role::Controlplane
            && let Err(e) =
                hypersaga_controlplane::check_pull_secret(config.kube.pull_secret.as_ref())
        {
            let said = e.to_string();
            let message = said.strip_prefix("kube.pull_secret: ").unwrap_or(&said);
            problems.push(Problem::new("kube.pull_secret", message));
        }
    }
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(Problems(problems))
    }
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = match load(&args) {
        Ok(config) => config,
        Err(problems) => {
            crate::errln!(
                "error: the configuration for the {} role is invalid ({}):\n{problems}",
                args.role.name(),
                problems.summary()
            );
            return Ok(ExitCode::from(crate::exit::USAGE));
        }
    };
    if args.dump_config {
        crate::outln!("{}", config.redacted_json())?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.check_config {
        crate::outln!(
            "The configuration for the {} role is valid.",
            args.role.name()
        )?;
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
    // tasks go on meanwhile (a single-threaded runtime cannot; its flush times out instead).
    let flush = move || drop(exporting);
    match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(flush),
        _ => flush(),
    }
    Ok(ExitCode::SUCCESS)
}
