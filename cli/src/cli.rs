//! Command-line definitions and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::commands;
#[cfg(feature = "dev-tools")]
use crate::dev::{self, DevArgs};
use crate::output::Format;
use crate::serve::{self, ServeArgs};

/// hypersaga provisions hosted OpenShift control planes (HyperShift) on Azure for many tenants,
/// as sagas over NATS JetStream.
///
/// Start the whole system locally with `hypersaga dev`, then use the client commands
/// (`cluster`, `operation`, `audit`, `emulator`), which read the endpoints file `dev` writes.
#[derive(Parser, Debug)]
#[command(name = "hypersaga", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the whole system locally: nats-server, Azurite, the ARM/Entra and management-cluster
    /// emulators, and every service as its own supervised process.
    #[cfg(feature = "dev-tools")]
    Dev(DevArgs),
    /// Run one service (for containers and Kubernetes).
    Serve(ServeArgs),
    /// Create, inspect, watch and delete clusters.
    #[command(subcommand)]
    Cluster(commands::cluster::ClusterCommand),
    /// Inspect operations (the sagas behind create and delete), and unstick paused ones.
    ///
    /// An operation pauses, rather than failing or tearing down what it made, when a step's
    /// retries run out, a step passes its deadline, or the service owning a step stops
    /// answering (its lease expires twice). It then waits for an operator: `resume` (every
    /// paused step again), `retry-step` (one), `compensate` (undo a paused create) or
    /// `abandon` (stop for good, keep the record). `list --state paused` finds them; each
    /// call is recorded on the audit stream with the caller as actor.
    #[command(subcommand)]
    Operation(commands::operation::OperationCommand),
    /// Follow the public audit stream.
    #[command(subcommand)]
    Audit(commands::audit::AuditCommand),
    /// Bearer tokens for tenants' callers: the token, and the digest the configuration keeps.
    #[command(subcommand)]
    Token(commands::token::TokenCommand),
    /// The bus's access control: credentials per role for a deployment.
    #[command(subcommand)]
    Bus(commands::bus::BusCommand),
    /// Drive the local emulators (inject faults, read request counts), or serve them on their
    /// own (compose.yaml).
    #[cfg(feature = "dev-tools")]
    #[command(subcommand)]
    Emulator(commands::emulator::EmulatorCommand),
    /// Measure: the engine beside raw JetStream, a fleet against ARM's budgets, fairness
    /// between tenants. Prints figures and ratios beside their targets (`-o json` for
    /// scripts); starts and stops everything it measures itself.
    #[cfg(feature = "dev-tools")]
    #[command(subcommand)]
    Bench(crate::bench::BenchCommand),
}

/// How client commands find and authenticate to the API.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Endpoints file written by `hypersaga dev` [default: $HYPERSAGA_ENDPOINTS or .hypersaga/endpoints.json].
    #[arg(long, global = true, env = "HYPERSAGA_ENDPOINTS")]
    pub endpoints: Option<PathBuf>,
    /// Which dev tenant of the endpoints file to act as [default: the first].
    #[arg(long, global = true)]
    pub tenant: Option<String>,
    /// gRPC server URL (overrides the endpoints file).
    #[arg(long, global = true, env = "HYPERSAGA_SERVER")]
    pub server: Option<String>,
    /// CA bundle to check the server's certificate against [default: the endpoints file's;
    /// with --server, the system's roots].
    #[arg(long, global = true, env = "HYPERSAGA_CA")]
    pub ca: Option<PathBuf>,
    /// Bearer token (overrides the endpoints file).
    #[arg(long, global = true, env = "HYPERSAGA_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", global = true, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

impl ClientArgs {
    pub fn endpoints(&self) -> anyhow::Result<crate::endpoints::Endpoints> {
        let path = self
            .endpoints
            .clone()
            .unwrap_or_else(crate::endpoints::Endpoints::default_path);
        crate::endpoints::Endpoints::load(&path)
    }

    /// Connects as the chosen tenant.
    pub async fn client(&self) -> anyhow::Result<crate::client::Client> {
        let (server, token, ca) = match (&self.server, &self.token) {
            (Some(s), Some(t)) => (s.clone(), t.clone(), self.ca.clone()),
            _ => {
                let e = self.endpoints()?;
                let t = e.tenant(self.tenant.as_deref())?;
                (
                    self.server.clone().unwrap_or(e.grpc.clone()),
                    self.token.clone().unwrap_or(t.token.clone()),
                    self.ca.clone().or(Some(e.ca_bundle.clone())),
                )
            }
        };
        crate::client::connect(&server, &token, ca.as_deref()).await
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        #[cfg(feature = "dev-tools")]
        Command::Dev(args) => dev::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Cluster(c) => commands::cluster::run(c).await,
        Command::Operation(c) => commands::operation::run(c).await,
        Command::Audit(c) => commands::audit::run(c).await,
        Command::Bus(c) => commands::bus::run(c).await,
        Command::Token(c) => commands::token::run(c),
        #[cfg(feature = "dev-tools")]
        Command::Emulator(c) => commands::emulator::run(c).await,
        #[cfg(feature = "dev-tools")]
        Command::Bench(c) => crate::bench::run(c).await,
    }
}
