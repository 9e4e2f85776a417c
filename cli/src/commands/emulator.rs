//! `hypersaga emulator …`: drive the local ARM emulator (faults, request counts), and serve
//! the emulators on their own (`serve`).
#![cfg(feature = "dev-tools")]

mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use hypersaga_emulator_arm::FaultSpec;
use hypersaga_emulator_arm::admin_client::AdminClient;

use crate::endpoints::Endpoints;
use crate::output::Format;

#[derive(Subcommand, Debug)]
pub enum EmulatorCommand {
    /// Inject or clear ARM faults.
    #[command(subcommand)]
    Fault(FaultCommand),
    /// Make the management cluster fail: the simulated HyperShift operator's HostedClusters or
    /// NodePools, or its Kubernetes API.
    #[command(subcommand)]
    ClusterFault(ClusterFaultCommand),
    /// Request counts per method, resource type and status, and the latest requests.
    Requests {
        #[command(flatten)]
        target: Target,
    },
    #[command(flatten)]
    Serve(serve::ServeCommand),
}

#[derive(Args, Debug)]
pub struct Target {
    /// Endpoints file written by `hypersaga dev`.
    #[arg(long, env = "HYPERSAGA_ENDPOINTS")]
    endpoints: Option<PathBuf>,
    /// Admin URL of the ARM emulator (overrides the endpoints file).
    #[arg(long)]
    admin_url: Option<String>,
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    output: Format,
}

impl Target {
    fn client(&self) -> anyhow::Result<AdminClient> {
        let url = match &self.admin_url {
            Some(u) => u.clone(),
            None => {
                Endpoints::load(
                    &self
                        .endpoints
                        .clone()
                        .unwrap_or_else(Endpoints::default_path),
                )?
                .emulator_admin_url
            }
        };
        Ok(AdminClient::new(
            url.parse()
                .with_context(|| format!("{url:?} is not a URL"))?,
        ))
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ObjectKind {
    HostedCluster,
    NodePool,
}

#[derive(Subcommand, Debug)]
pub enum ClusterFaultCommand {
    /// Matching HostedClusters are refused as HyperShift refuses bad input (the --condition
    /// goes `False`, the control plane is never deployed); matching NodePools stay not `Ready`
    /// (`AllMachinesReady=False`). With this reason and message, until removed or cleared.
    ///
    /// Example: `hypersaga emulator cluster-fault add --kind hosted-cluster --reason
    /// InvalidConfiguration --message "the signing key is not a valid RSA key"`
    Add {
        #[arg(long, value_enum)]
        kind: ObjectKind,
        /// Only objects whose name contains this.
        #[arg(long)]
        name_contains: Option<String>,
        /// HostedCluster: the condition set `False` (ValidConfiguration, ValidReleaseImage,
        /// SupportedHostedCluster, PlatformCredentialsFound, …).
        #[arg(long, default_value = "ValidConfiguration")]
        condition: String,
        #[arg(long)]
        reason: String,
        #[arg(long, default_value = "injected by hypersaga emulator cluster-fault")]
        message: String,
        #[command(flatten)]
        target: MgmtTarget,
    },
    /// Answer matching Kubernetes API requests with an error, as kube-apiserver answers when
    /// it sheds load (429 with Retry-After), fails (500, 503, 504) or RBAC forbids (403).
    ///
    /// Example: `hypersaga emulator cluster-fault add-api --verb patch --resource
    /// hostedclusters --name-contains demo --status 500 --count 2`
    AddApi {
        /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `*`.
        #[arg(long)]
        verb: String,
        /// Resource plural, with its subresource if any (`hostedclusters`,
        /// `hostedclusters/status`), or `*`.
        #[arg(long)]
        resource: String,
        /// Only objects whose name contains this.
        #[arg(long)]
        name_contains: Option<String>,
        /// 403, 429, 500, 503 or 504.
        #[arg(long)]
        status: u16,
        #[arg(long)]
        message: Option<String>,
        /// Seconds to put in `Retry-After`.
        #[arg(long)]
        retry_after: Option<u64>,
        /// Fail this many matching requests, then serve normally [default: until cleared].
        #[arg(long)]
        count: Option<u32>,
        #[command(flatten)]
        target: MgmtTarget,
    },
    /// Remove the faults (add and add-api) given exactly this --name-contains: that cluster's
    /// objects recover (HyperShift finds what it missed) or its requests are served again,
    /// while the other faults stay.
    Remove {
        #[arg(long)]
        name_contains: String,
        #[command(flatten)]
        target: MgmtTarget,
    },
    /// Remove every management-cluster fault (of objects and of the API).
    Clear {
        #[command(flatten)]
        target: MgmtTarget,
    },
}

#[derive(Args, Debug)]
pub struct MgmtTarget {
    /// Endpoints file written by `hypersaga dev`.
    #[arg(long, env = "HYPERSAGA_ENDPOINTS")]
    endpoints: Option<PathBuf>,
    /// Admin URL of the management-cluster emulator (overrides the endpoints file).
    #[arg(long)]
    admin_url: Option<String>,
}

impl MgmtTarget {
    fn client(&self) -> anyhow::Result<hypersaga_emulator_mgmt::admin_client::AdminClient> {
        let url = match &self.admin_url {
            Some(u) => u.clone(),
            None => {
                Endpoints::load(
                    &self
                        .endpoints
                        .clone()
                        .unwrap_or_else(Endpoints::default_path),
                )?
                .mgmt_admin_url
            }
        };
        Ok(hypersaga_emulator_mgmt::admin_client::AdminClient::new(url))
    }
}

#[derive(Subcommand, Debug)]
pub enum FaultCommand {
    /// Answer matching ARM requests with an error instead of serving them.
    ///
    /// Example: `hypersaga emulator fault add --method PUT --type Microsoft.Network/privateDnsZones
    /// --status 403 --code AuthorizationFailed --count 1`
    Add {
        /// HTTP method to match (`*` for any).
        #[arg(long)]
        method: String,
        /// Full resource type, e.g. `Microsoft.Network/privateDnsZones` (`*` for any).
        #[arg(long = "type")]
        resource_type: String,
        /// Only resources whose name contains this.
        #[arg(long)]
        name_contains: Option<String>,
        /// Only requests whose URL path contains this: one cluster's resources (a cluster
        /// name is in its groups' names), role assignments at a scope, a zone's record sets.
        #[arg(long)]
        path_contains: Option<String>,
        /// HTTP status to answer.
        #[arg(long)]
        status: u16,
        /// ARM error code, e.g. `AuthorizationFailed`.
        #[arg(long)]
        code: String,
        #[arg(long)]
        message: Option<String>,
        /// Seconds to put in `Retry-After`.
        #[arg(long)]
        retry_after: Option<u64>,
        /// Fail this many matching requests, then serve normally [default: until cleared].
        #[arg(long)]
        count: Option<u32>,
        #[command(flatten)]
        target: Target,
    },
    /// Accept matching writes (201/202 with an operation to poll), then end the operation
    /// `Failed` with this code and message: how Azure reports what it finds only while it
    /// works (a VNet link to an overlapping zone, a quota reached mid-way).
    ///
    /// Example: `hypersaga emulator fault add-async --method PUT --type
    /// Microsoft.Network/privateDnsZones/virtualNetworkLinks --code BadRequest --message "A
    /// virtual network cannot be linked to multiple zones with overlapping namespaces."`
    AddAsync {
        /// `PUT`, `DELETE` or `*`.
        #[arg(long)]
        method: String,
        /// Full resource type (`*` for any).
        #[arg(long = "type")]
        resource_type: String,
        /// Only resources whose name contains this.
        #[arg(long)]
        name_contains: Option<String>,
        /// Only requests whose URL path contains this (e.g. one cluster's name).
        #[arg(long)]
        path_contains: Option<String>,
        /// `error.code` of the failed operation.
        #[arg(long)]
        code: String,
        /// `error.message` of the failed operation.
        #[arg(long)]
        message: String,
        /// Fail this many operations, then serve normally [default: until cleared].
        #[arg(long)]
        count: Option<u32>,
        #[command(flatten)]
        target: Target,
    },
    /// Remove every fault (both kinds).
    Clear {
        #[command(flatten)]
        target: Target,
    },
    /// List the faults in force.
    List {
        #[command(flatten)]
        target: Target,
    },
}

pub async fn run(cmd: EmulatorCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EmulatorCommand::Serve(c) => return serve::run(c).await,
        EmulatorCommand::Fault(FaultCommand::Add {
            method,
            resource_type,
            name_contains,
            path_contains,
            status,
            code,
            message,
            retry_after,
            count,
            target,
        }) => {
            let spec = FaultSpec {
                method,
                resource_type,
                name_contains,
                path_contains,
                status,
                code,
                message,
                retry_after_secs: retry_after,
                count,
            };
            let fault = target.client()?.add_fault(&spec).await?;
            match target.output {
                Format::Json => println!("{}", serde_json::to_string_pretty(&fault)?),
                Format::Text => println!(
                    "fault {} added: {} {} → {} {}{}",
                    fault.id,
                    fault.spec.method,
                    fault.spec.resource_type,
                    fault.spec.status,
                    fault.spec.code,
                    fault
                        .spec
                        .count
                        .map(|n| format!(" ({n} times)"))
                        .unwrap_or_default()
                ),
            }
        }
        EmulatorCommand::Fault(FaultCommand::AddAsync {
            method,
            resource_type,
            name_contains,
            path_contains,
            code,
            message,
            count,
            target,
        }) => {
            let spec = hypersaga_emulator_arm::AsyncFaultSpec {
                method,
                resource_type,
                name_contains,
                path_contains,
                code,
                message,
                count,
            };
            let fault = target.client()?.add_async_fault(&spec).await?;
            match target.output {
                Format::Json => println!("{}", serde_json::to_string_pretty(&fault)?),
                Format::Text => println!(
                    "fault {} added: {} {} accepted, then Failed {}{}",
                    fault.id,
                    fault.spec.method,
                    fault.spec.resource_type,
                    fault.spec.code,
                    fault
                        .spec
                        .count
                        .map(|n| format!(" ({n} times)"))
                        .unwrap_or_default()
                ),
            }
        }
        EmulatorCommand::Fault(FaultCommand::Clear { target }) => {
            target.client()?.clear_faults().await?;
            if target.output == Format::Text {
                println!("all faults cleared");
            }
        }
        EmulatorCommand::Fault(FaultCommand::List { target }) => {
            let faults = target.client()?.faults().await?;
            match target.output {
                Format::Json => println!("{}", serde_json::to_string_pretty(&faults)?),
                Format::Text => {
                    println!(
                        "{:<10} {:<7} {:<45} {:>6} {:<28} {:>9} {:>5}",
                        "ID", "METHOD", "TYPE", "STATUS", "CODE", "REMAINING", "HITS"
                    );
                    for f in faults {
                        let remaining = f
                            .remaining
                            .map(|n| n.to_string())
                            .unwrap_or_else(|| "∞".into());
                        println!(
                            "{:<10} {:<7} {:<45} {:>6} {:<28} {:>9} {:>5}",
                            f.id,
                            f.spec.method,
                            f.spec.resource_type,
                            f.spec.status,
                            f.spec.code,
                            remaining,
                            f.hits
                        );
                    }
                }
            }
        }
        EmulatorCommand::ClusterFault(ClusterFaultCommand::Add {
            kind,
            name_contains,
            condition,
            reason,
            message,
            target,
        }) => {
            let kind = match kind {
                ObjectKind::HostedCluster => hypersaga_emulator_mgmt::FaultKind::HostedCluster,
                ObjectKind::NodePool => hypersaga_emulator_mgmt::FaultKind::NodePool,
            };
            let fault = hypersaga_emulator_mgmt::Fault {
                kind,
                name_contains,
                condition: Some(condition),
                reason,
                message,
            };
            target.client()?.inject_fault(&fault).await?;
            println!(
                "management-cluster fault added: {:?} → {}",
                fault.kind, fault.reason
            );
        }
        EmulatorCommand::ClusterFault(ClusterFaultCommand::AddApi {
            verb,
            resource,
            name_contains,
            status,
            message,
            retry_after,
            count,
            target,
        }) => {
            let fault = hypersaga_emulator_mgmt::ApiFault {
                verb,
                resource,
                name_contains,
                status,
                message,
                retry_after_secs: retry_after,
                count,
            };
            let f = target.client()?.add_api_fault(&fault).await?;
            println!(
                "management-cluster API fault added: {} {} → {}{}",
                f.spec.verb,
                f.spec.resource,
                f.spec.status,
                f.spec
                    .count
                    .map(|n| format!(" ({n} times)"))
                    .unwrap_or_default()
            );
        }
        EmulatorCommand::ClusterFault(ClusterFaultCommand::Remove {
            name_contains,
            target,
        }) => {
            let n = target.client()?.remove_faults(&name_contains).await?;
            println!("{n} management-cluster fault(s) removed");
        }
        EmulatorCommand::ClusterFault(ClusterFaultCommand::Clear { target }) => {
            target.client()?.clear_faults().await?;
            println!("all management-cluster faults cleared");
        }
        EmulatorCommand::Requests { target } => {
            let stats = target.client()?.requests().await?;
            match target.output {
                Format::Json => println!("{}", serde_json::to_string_pretty(&stats)?),
                Format::Text => {
                    println!(
                        "{:<7} {:<60} {:>6} {:>7}",
                        "METHOD", "TYPE", "STATUS", "COUNT"
                    );
                    for c in &stats.counts {
                        println!(
                            "{:<7} {:<60} {:>6} {:>7}",
                            c.method, c.resource_type, c.status, c.count
                        );
                    }
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
