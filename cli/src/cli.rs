//! Command-line definitions and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::commands;
#[cfg(feature = "dev-tools")]
use crate::dev::{self, DevArgs};
use crate::output::Output;
use crate::serve::{self, ServeArgs};

/// hypersaga provisions hosted OpenShift control planes (HyperShift) on Azure for many tenants,
/// as sagas over NATS JetStream.
///
/// Start the whole system locally with `hypersaga dev`, then use the client commands
/// (`cluster`, `nodepool`, `addon`, `operation`, `rollout`, `audit`, `tenant`,
/// `dead-letter`, `emulator`), which read the endpoints file `dev` writes.
#[derive(Parser, Debug)]
#[command(
    name = "hypersaga",
    version,
    propagate_version = true,
    after_help = crate::exit::HELP
)]
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
    /// Create, inspect, watch, upgrade and delete clusters.
    #[command(subcommand)]
    Cluster(commands::cluster::ClusterCommand),
    /// Add, inspect, scale, change and delete a cluster's node pools.
    ///
    /// Each change is one operation on the cluster: the cluster must be ready, and one
    /// operation runs at a time (another is refused, naming the one running). `--wait`
    /// follows it, step by step, to its outcome; a failed change leaves the cluster ready.
    #[command(subcommand)]
    Nodepool(commands::nodepool::NodePoolCommand),
    /// Keep the catalog of add-ons: put a version, show it, list them, delete them.
    ///
    /// An add-on is what a platform team adds to clusters (operators, RBAC, configuration):
    /// Kubernetes objects in ordered phases, Package Operator's ObjectDeployment shape.
    /// Package Operator rolls a cluster's add-ons out phase by phase, each once the one before
    /// is available, partly on the management cluster (next to the cluster's control plane)
    /// and partly inside the hosted cluster (phases of class hosted-cluster).
    ///
    /// A version never changes once put: a cluster pins the version it runs, and moves to
    /// another only when asked (`hypersaga cluster addon set`). A tenant's add-ons are its
    /// own; the platform's (`--platform`, written with an administrator's token) are offered
    /// to every tenant. Clusters take add-ons at creation (`hypersaga cluster create --addon
    /// NAME[@VERSION]`) or later (`hypersaga cluster addon set|remove`).
    #[command(subcommand)]
    Addon(commands::addon::AddonCommand),
    /// Inspect and follow operations (the sagas behind creates, deletes, upgrades and node
    /// pool changes), and unstick paused ones.
    ///
    /// `watch ID --tree` draws an operation's DAG in the terminal as it runs; the gateway's
    /// live view (its URL is in `hypersaga dev`'s banner) shows the same in a browser, with
    /// buttons for the calls below.
    ///
    /// An operation pauses, rather than failing or tearing down what it made, when a step's
    /// retries run out, a step passes its deadline, or the service owning a step stops
    /// answering (its lease expires twice). It then waits for an operator: `resume` (every
    /// paused step again), `retry-step` (one), `compensate` (undo a paused create) or
    /// `abandon` (stop for good, keep the record). `list --state paused` finds them; each
    /// call is recorded on the audit stream with the caller as actor.
    #[command(subcommand)]
    Operation(commands::operation::OperationCommand),
    /// Upgrade the control planes of many clusters, chosen by their labels, in waves.
    ///
    /// A rollout takes the clusters that carry every label of its selector (`cluster create
    /// --label env=prod`, then `rollout create --selector env=prod`) and upgrades their
    /// control planes to one release, in waves: first the canary wave (--canary clusters,
    /// default 1), then at most --max-parallel clusters at a time (default 1). Each wave starts
    /// once every cluster of the one before has been upgraded.
    ///
    /// The first failure stops the rollout (FAILED): no further cluster is started, the
    /// failing cluster is named with its error, and the clusters not yet started are left
    /// untouched on their release. `resume` retries the failed clusters and goes on; `pause`
    /// holds it between clusters; `cancel` ends it for good (upgrades under way run to their
    /// end). A rollout is kept by the system, so it goes on while no one watches.
    ///
    /// `watch` (and `create --wait`) prints a line per change and exits 0 once the rollout
    /// has succeeded, 10 if it failed or was cancelled.
    #[command(subcommand)]
    Rollout(commands::rollout::RolloutCommand),
    /// Follow the public audit stream.
    #[command(subcommand)]
    Audit(commands::audit::AuditCommand),
    /// Onboard, inspect, change, suspend and remove tenants: the platform team's admin API.
    ///
    /// Every command calls the admin API (at the cluster API's address) with an admin's
    /// token: --admin-token, else $HYPERSAGA_ADMIN_TOKEN, else the endpoints file's
    /// (`hypersaga dev` writes one); a tenant's token is refused. A change is served by every
    /// replica within seconds, without a restart, and recorded on the tenant's audit stream
    /// with the admin as its actor. Tenants declared in the configuration file are listed and
    /// shown here, but changed only there.
    #[command(subcommand)]
    Tenant(commands::tenant::TenantCommand),
    /// Management clusters (the platform team's): list each with its clusters and free
    /// capacity, cordon one so it takes no new cluster, uncordon it.
    ///
    /// A create is placed in its region on the management cluster with the most room; when
    /// none has room it is refused (RESOURCE_EXHAUSTED) naming the region. Admin token as for
    /// `hypersaga tenant`.
    #[command(subcommand, name = "management-cluster")]
    ManagementCluster(commands::management::ManagementCommand),
    /// Dead letters (the platform team's): messages the services refused unread or gave up
    /// on, kept in the bus's HCP_DEAD stream; list them with why, show one, send one again
    /// where it came from (once), purge them.
    ///
    /// A message is dead-lettered when its body disagrees with the subject it came on
    /// (reason `disowned`: a forged or misrouted message, never acted on) or when it failed
    /// on every delivery (reason `poison`: fix the fault, then `redrive` it). Admin token as
    /// for `hypersaga tenant`; redrives and purges are recorded on the tenant's audit stream.
    #[command(subcommand, name = "dead-letter")]
    DeadLetter(commands::dead_letter::DeadLetterCommand),
    /// Leftovers (the platform team's): list, and remove, what hypersaga made that no live cluster
    /// owns.
    ///
    /// Every Azure resource hypersaga makes is tagged (hypersaga.io_tenant, hypersaga.io_cluster)
    /// and every management-cluster object labelled (hypersaga.io/tenant, hypersaga.io/cluster).
    /// A crash, a bug or an operator's `abandon` can leave some behind. The sweep lists each one
    /// with its cluster and why it is a leftover: cluster_deleted (its cluster was deleted),
    /// cluster_failed (its cluster's create or delete failed, or was abandoned) or no_record
    /// (this installation has no record of its cluster: it may be another installation's, so
    /// it is listed, never removed).
    ///
    /// A cluster with an operation running, or that is ready, owns what it made. Without
    /// --dry-run, each leftover's cluster gets a `sweep` operation that deletes them in dependency
    /// order (node pools, the control plane and its namespace, DNS, identities and their role
    /// assignments, the network and the resource groups), paced like any delete and recorded on
    /// the cluster's audit stream (cluster.sweeping, cluster.swept). Identities a delete kept on
    /// purpose (--keep-identities) are not leftovers. Admin token as for `hypersaga tenant`.
    ///
    /// Examples: hypersaga sweep --dry-run -o wide; hypersaga sweep --tenant acme
    Sweep(commands::sweep::SweepArgs),
    /// Bearer tokens for tenants' callers: the token, and the digest the configuration keeps.
    #[command(subcommand)]
    Token(commands::token::TokenCommand),
    /// Print the shell completion script for bash, zsh, fish, powershell or elvish.
    ///
    /// bash: `source <(hypersaga completion bash)` (or write it to
    /// /etc/bash_completion.d/hypersaga); zsh: `hypersaga completion zsh >
    /// "${fpath[1]}/_hypersaga"`; fish: `hypersaga completion fish >
    /// ~/.config/fish/completions/hypersaga.fish`; PowerShell: `hypersaga completion
    /// powershell | Out-String | Invoke-Expression`.
    Completion {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
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
    /// Output format: text, json, yaml, wide (tables with more columns) or name
    /// (`cluster/<name>`, `nodepool/<name>`, `addon/<name>`, `operation/<id>`, `rollout/<id>`,
    /// `tenant/<id>` or `dead-letter/<sequence>`, one per line).
    #[arg(short = 'o', long = "output", global = true, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Tables without their header line (text and wide output).
    #[arg(long, global = true)]
    pub no_headers: bool,
    /// With --wait or watch: how long to keep trying to get a lost stream back (the gateway
    /// restarting, a connection reset) before giving up, in seconds.
    #[arg(long, global = true, default_value_t = 300, value_name = "SECONDS")]
    pub reconnect_timeout: u64,
}

/// Where the API is and who calls it, from the flags and the endpoints file.
#[derive(Clone, Debug)]
pub struct Target {
    pub server: String,
    pub token: String,
    /// The CA bundle to check the server's certificate against (`None`: the system's roots).
    pub ca: Option<PathBuf>,
}

impl ClientArgs {
    pub fn endpoints(
        &self,
    ) -> Result<crate::endpoints::Endpoints, crate::endpoints::EndpointsError> {
        let path = self
            .endpoints
            .clone()
            .unwrap_or_else(crate::endpoints::Endpoints::default_path);
        crate::endpoints::Endpoints::load(&path)
    }

    /// The API and the caller: `--server` and `--token` as given, what they leave out from
    /// the endpoints file (a dev tenant's token, the dev CA).
    pub fn target(&self) -> anyhow::Result<Target> {
        if let (Some(server), Some(token)) = (&self.server, &self.token) {
            return Ok(Target {
                server: server.clone(),
                token: token.clone(),
                ca: self.ca.clone(),
            });
        }
        let e = match (self.endpoints(), &self.server) {
            (Ok(e), _) => e,
            // Asked for another server: the missing file is not the point, the token is.
            (Err(crate::endpoints::EndpointsError::Missing { .. }), Some(server)) => {
                return Err(crate::exit::Usage(format!(
                    "--server {server} needs a token too: pass --token TOKEN (or set \
                     $HYPERSAGA_TOKEN); `hypersaga token new` makes one and the digest a \
                     tenant's configuration lists"
                ))
                .into());
            }
            (Err(e), _) => return Err(e.into()),
        };
        let t = e.tenant(self.tenant.as_deref())?;
        Ok(Target {
            server: self.server.clone().unwrap_or(e.grpc.clone()),
            token: self.token.clone().unwrap_or(t.token.clone()),
            ca: self.ca.clone().or(Some(e.ca_bundle.clone())),
        })
    }

    /// Connects as the chosen tenant.
    pub async fn client(&self) -> anyhow::Result<crate::client::Client> {
        let t = self.target()?;
        crate::client::connect(&t.server, &t.token, t.ca.as_deref()).await
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        #[cfg(feature = "dev-tools")]
        Command::Dev(args) => dev::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Cluster(c) => commands::cluster::run(c).await,
        Command::Nodepool(c) => commands::nodepool::run(c).await,
        Command::Addon(c) => commands::addon::run(c).await,
        Command::Operation(c) => commands::operation::run(c).await,
        Command::Rollout(c) => commands::rollout::run(c).await,
        Command::Audit(c) => commands::audit::run(c).await,
        Command::Tenant(c) => commands::tenant::run(c).await,
        Command::ManagementCluster(c) => commands::management::run(c).await,
        Command::DeadLetter(c) => commands::dead_letter::run(c).await,
        Command::Sweep(c) => commands::sweep::run(c).await,
        Command::Bus(c) => commands::bus::run(c).await,
        Command::Token(c) => commands::token::run(c),
        Command::Completion { shell } => commands::completion::run(shell),
        #[cfg(feature = "dev-tools")]
        Command::Emulator(c) => commands::emulator::run(c).await,
        #[cfg(feature = "dev-tools")]
        Command::Bench(c) => crate::bench::run(c).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    /// Every `HYPERSAGA_` variable the command line reads, in every subcommand.
    fn variables(cmd: &clap::Command, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env() {
                out.push(env.to_string_lossy().into_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            variables(sub, out);
        }
    }

    #[test]
    fn every_variable_of_the_command_line_is_known_not_to_be_a_setting() {
        // Else exporting it for a client command would make `serve` refuse to start.
        let mut vars = Vec::new();
        variables(&Cli::command(), &mut vars);
        assert!(vars.iter().any(|v| v == "HYPERSAGA_ENDPOINTS"), "{vars:?}");
        for v in vars.iter().filter(|v| v.starts_with("HYPERSAGA_")) {
            assert!(
                hypersaga_config::env::is_client_variable(v),
                "{v} is read by the command line but not in hypersaga_config::env::CLIENT_VARIABLES"
            );
        }
    }

    /// Every argument and subcommand of `cmd` (under `path`) that `--help` would show bare.
    fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                let name = arg
                    .get_long()
                    .map(|l| format!("--{l}"))
                    .unwrap_or_else(|| format!("<{}>", arg.get_id()));
                out.push(format!("{path} {name}"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let path = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none() && sub.get_long_about().is_none() {
                out.push(format!("{path} (the command itself)"));
            }
            undocumented(sub, &path, out);
        }
    }

    #[test]
    fn every_argument_and_command_has_help() {
        let mut missing = Vec::new();
        undocumented(&Cli::command(), "hypersaga", &mut missing);
        assert!(
            missing.is_empty(),
            "no help text (a doc comment on the field or variant) for:\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn dead_letter_tenant_is_whose_dead_letters_and_a_purge_says_what() {
        let mut cmd = Cli::command();
        let dead = cmd.find_subcommand_mut("dead-letter").expect("dead-letter");
        for sub in ["list", "purge"] {
            let help = dead
                .find_subcommand_mut(sub)
                .expect(sub)
                .get_arguments()
                .find(|a| a.get_id() == "tenant")
                .and_then(|a| a.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(
                help.starts_with("Only this tenant's dead letters"),
                "{sub}: {help}"
            );
        }
        for refused in [
            &["dead-letter", "purge"][..],
            &["dead-letter", "purge", "12", "--all"],
            &["dead-letter", "show", "twelve"],
        ] {
            let mut argv = vec!["hypersaga"];
            argv.extend_from_slice(refused);
            assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn every_client_command_takes_every_output_format_and_no_headers() {
        Cli::command().debug_assert();
        for format in ["text", "json", "yaml", "wide", "name"] {
            for args in [
                &["cluster", "get", "demo"][..],
                &["cluster", "list"],
                &["cluster", "watch", "demo"],
                &["cluster", "create", "demo", "--wait"],
                &["cluster", "delete", "demo"],
                &[
                    "cluster",
                    "upgrade",
                    "demo",
                    "--release-image",
                    "r:4.22.0",
                    "--wait",
                ],
                &[
                    "nodepool",
                    "create",
                    "demo",
                    "gpu",
                    "--vm-size",
                    "S",
                    "--replicas",
                    "1",
                ],
                &["nodepool", "get", "demo", "gpu"],
                &["nodepool", "list", "demo"],
                &[
                    "nodepool", "scale", "demo", "gpu", "--min", "1", "--max", "2",
                ],
                &[
                    "nodepool",
                    "update",
                    "demo",
                    "gpu",
                    "--clear-labels",
                    "--wait",
                ],
                &["nodepool", "delete", "demo", "gpu", "--wait"],
                &["operation", "get", "op-1"],
                &["operation", "list", "--state", "paused"],
                &["operation", "resume", "op-1"],
                &[
                    "cluster",
                    "create",
                    "demo",
                    "--label",
                    "env=prod",
                    "--label",
                    "tier=gold",
                ],
                &[
                    "rollout",
                    "create",
                    "--selector",
                    "env=prod",
                    "--release-image",
                    "r:4.22.0",
                    "--canary",
                    "1",
                    "--max-parallel",
                    "2",
                    "--wait",
                ],
                &["rollout", "get", "ro-1"],
                &["rollout", "list"],
                &["rollout", "pause", "ro-1"],
                &["rollout", "resume", "ro-1"],
                &["rollout", "cancel", "ro-1"],
                &["rollout", "watch", "ro-1"],
                &["tenant", "list"],
                &["tenant", "get", "acme"],
                &[
                    "tenant",
                    "add",
                    "acme",
                    "--azure-tenant-id",
                    "t",
                    "--subscription-id",
                    "s",
                    "--client-id",
                    "c",
                ],
                &["tenant", "update", "acme", "--issue-api-token"],
                &["tenant", "suspend", "acme", "--reason", "unpaid"],
                &["tenant", "resume", "acme"],
                &["tenant", "remove", "acme"],
                &["addon", "put", "--file", "logging.yaml"],
                &["addon", "put", "-f", "-", "--platform"],
                &["addon", "get", "logging@1.4.0"],
                &[
                    "addon",
                    "get",
                    "logging",
                    "--version",
                    "1.4.0",
                    "--platform",
                ],
                &["addon", "list"],
                &["addon", "list", "logging", "--scope", "tenant"],
                &["addon", "delete", "logging", "--version", "1.3.0"],
                &["addon", "delete", "logging", "--platform"],
                &[
                    "cluster",
                    "create",
                    "demo",
                    "--addon",
                    "logging@1.4.0",
                    "--addon",
                    "platform:monitoring",
                ],
                &["cluster", "addon", "set", "demo", "logging@1.5.0", "--wait"],
                &[
                    "cluster", "addon", "remove", "demo", "logging", "--etag", "7",
                ],
                &["dead-letter", "list", "--tenant", "acme"],
                &["dead-letter", "show", "12"],
                &["dead-letter", "redrive", "12"],
                &["dead-letter", "purge", "12"],
                &["dead-letter", "purge", "--all", "--tenant", "acme"],
            ] {
                let mut argv = vec!["hypersaga"];
                argv.extend_from_slice(args);
                argv.extend(["-o", format, "--no-headers"]);
                if let Err(e) = Cli::try_parse_from(&argv) {
                    panic!("{argv:?}: {e}");
                }
            }
        }
    }
}
