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
use crate::outln;
use crate::output::{Format, Table};

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
    /// Endpoints file written by `hypersaga dev` [default: $HYPERSAGA_ENDPOINTS or
    /// .hypersaga/endpoints.json].
    #[arg(long, env = "HYPERSAGA_ENDPOINTS")]
    endpoints: Option<PathBuf>,
    /// Admin URL of the ARM emulator (overrides the endpoints file).
    #[arg(long)]
    admin_url: Option<String>,
    /// Output format: text (a line or a table for people) or json.
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
    /// HyperShift's HostedClusters (a control plane).
    HostedCluster,
    /// HyperShift's NodePools (workers).
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
        /// Which objects fail.
        #[arg(long, value_enum)]
        kind: ObjectKind,
        /// Only objects whose name contains this.
        #[arg(long)]
        name_contains: Option<String>,
        /// HostedCluster: the condition set `False` (ValidConfiguration, ValidReleaseImage,
        /// SupportedHostedCluster, PlatformCredentialsFound, …).
        #[arg(long, default_value = "ValidConfiguration")]
        condition: String,
        /// The condition's reason, as HyperShift sets it (e.g. `InvalidConfiguration`,
        /// `AzureError`, `QuotaExceeded`); the step reports it as its error code.
        #[arg(long)]
        reason: String,
        /// The condition's message, which the step reports with the reason.
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
        /// The message of the Kubernetes `Status` answered [default: one for the status].
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
        /// The --name-contains the faults to remove were added with.
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
    /// List the management-cluster faults in force: of objects (add) and of the API
    /// (add-api).
    List {
        #[command(flatten)]
        target: MgmtTarget,
        /// Output format: text (a table per kind) or json.
        #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

#[derive(Args, Debug)]
pub struct MgmtTarget {
    /// Endpoints file written by `hypersaga dev` [default: $HYPERSAGA_ENDPOINTS or
    /// .hypersaga/endpoints.json].
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
        /// ARM error message [default: one naming the fault].
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
    /// List the faults in force, both kinds (add and add-async), with what each has done.
    List {
        #[command(flatten)]
        target: Target,
    },
}

pub async fn run(cmd: EmulatorCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EmulatorCommand::Serve(c) => return serve::run(c).await,
        EmulatorCommand::Fault(c) => fault(c).await?,
        EmulatorCommand::ClusterFault(c) => cluster_fault(c).await?,
        EmulatorCommand::Requests { target } => {
            let stats = target.client()?.requests().await?;
            match target.output {
                Format::Json => outln!("{}", serde_json::to_string_pretty(&stats)?)?,
                Format::Text => {
                    let mut table = Table::new(vec!["METHOD", "TYPE", "STATUS", "COUNT"]);
                    for c in &stats.counts {
                        table.row(vec![
                            c.method.clone(),
                            c.resource_type.clone(),
                            c.status.to_string(),
                            c.count.to_string(),
                        ]);
                    }
                    crate::out!("{}", table.render(true))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Faults as JSON objects with a `fault` field naming their kind (`refuse`, `async`,
/// `object`, `api`), so one list holds both kinds a command lists (a list, as `fault list -o
/// json` always printed, with one field more).
fn kinded<T: serde::Serialize>(kind: &str, faults: &[T]) -> anyhow::Result<Vec<serde_json::Value>> {
    faults
        .iter()
        .map(|f| {
            let mut v = serde_json::to_value(f)?;
            if let Some(o) = v.as_object_mut() {
                o.insert("fault".into(), kind.into());
            }
            Ok(v)
        })
        .collect()
}

/// ` (3 times)` for a fault limited to a count.
fn times(count: Option<u32>) -> String {
    count.map(|n| format!(" ({n} times)")).unwrap_or_default()
}

/// `∞` for a fault that lasts until cleared.
fn remaining(n: Option<u32>) -> String {
    n.map(|n| n.to_string()).unwrap_or_else(|| "∞".into())
}

/// A scope (`--name-contains`, `--path-contains`) for a table cell.
fn scope(name: &Option<String>, path: &Option<String>) -> String {
    let mut parts = Vec::new();
    if let Some(n) = name {
        parts.push(format!("name~{n}"));
    }
    if let Some(p) = path {
        parts.push(format!("path~{p}"));
    }
    if parts.is_empty() {
        "*".to_owned()
    } else {
        parts.join(",")
    }
}

async fn fault(cmd: FaultCommand) -> anyhow::Result<()> {
    match cmd {
        FaultCommand::Add {
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
        } => {
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
                Format::Json => outln!("{}", serde_json::to_string_pretty(&fault)?)?,
                Format::Text => outln!(
                    "fault {} added: {} {} → {} {}{}",
                    fault.id,
                    fault.spec.method,
                    fault.spec.resource_type,
                    fault.spec.status,
                    fault.spec.code,
                    times(fault.spec.count)
                )?,
            }
        }
        FaultCommand::AddAsync {
            method,
            resource_type,
            name_contains,
            path_contains,
            code,
            message,
            count,
            target,
        } => {
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
                Format::Json => outln!("{}", serde_json::to_string_pretty(&fault)?)?,
                Format::Text => outln!(
                    "fault {} added: {} {} accepted, then Failed {}{}",
                    fault.id,
                    fault.spec.method,
                    fault.spec.resource_type,
                    fault.spec.code,
                    times(fault.spec.count)
                )?,
            }
        }
        FaultCommand::Clear { target } => {
            target.client()?.clear_faults().await?;
            if target.output == Format::Text {
                outln!("all faults cleared")?;
            }
        }
        FaultCommand::List { target } => {
            let client = target.client()?;
            let refused = client.faults().await?;
            let failed_later = client.async_faults().await?;
            match target.output {
                Format::Json => {
                    let mut list = kinded("refuse", &refused)?;
                    list.extend(kinded("async", &failed_later)?);
                    outln!("{}", serde_json::to_string_pretty(&list)?)?;
                }
                Format::Text => crate::out!("{}", arm_faults_table(&refused, &failed_later))?,
            }
        }
    }
    Ok(())
}

/// Both kinds of ARM fault in one table: KIND `refuse` answers the request with the error,
/// `async` accepts it and fails the operation later (STATUS `-`: the operation's status is
/// `Failed`, not an HTTP one).
fn arm_faults_table(
    refused: &[hypersaga_emulator_arm::Fault],
    failed_later: &[hypersaga_emulator_arm::AsyncFault],
) -> String {
    if refused.is_empty() && failed_later.is_empty() {
        return "no ARM faults\n".to_owned();
    }
    let mut table = Table::new(vec![
        "ID",
        "KIND",
        "METHOD",
        "TYPE",
        "SCOPE",
        "STATUS",
        "CODE",
        "REMAINING",
        "HITS",
    ]);
    for f in refused {
        table.row(vec![
            f.id.clone(),
            "refuse".into(),
            f.spec.method.clone(),
            f.spec.resource_type.clone(),
            scope(&f.spec.name_contains, &f.spec.path_contains),
            f.spec.status.to_string(),
            f.spec.code.clone(),
            remaining(f.remaining),
            f.hits.to_string(),
        ]);
    }
    for f in failed_later {
        table.row(vec![
            f.id.clone(),
            "async".into(),
            f.spec.method.clone(),
            f.spec.resource_type.clone(),
            scope(&f.spec.name_contains, &f.spec.path_contains),
            "-".into(),
            f.spec.code.clone(),
            remaining(f.remaining),
            f.hits.to_string(),
        ]);
    }
    table.render(true)
}

async fn cluster_fault(cmd: ClusterFaultCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterFaultCommand::Add {
            kind,
            name_contains,
            condition,
            reason,
            message,
            target,
        } => {
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
            outln!(
                "management-cluster fault added: {:?} → {}",
                fault.kind,
                fault.reason
            )?;
        }
        ClusterFaultCommand::AddApi {
            verb,
            resource,
            name_contains,
            status,
            message,
            retry_after,
            count,
            target,
        } => {
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
            outln!(
                "management-cluster API fault added: {} {} → {}{}",
                f.spec.verb,
                f.spec.resource,
                f.spec.status,
                times(f.spec.count)
            )?;
        }
        ClusterFaultCommand::Remove {
            name_contains,
            target,
        } => {
            let n = target.client()?.remove_faults(&name_contains).await?;
            outln!("{n} management-cluster fault(s) removed")?;
        }
        ClusterFaultCommand::Clear { target } => {
            target.client()?.clear_faults().await?;
            outln!("all management-cluster faults cleared")?;
        }
        ClusterFaultCommand::List { target, output } => {
            let client = target.client()?;
            let objects = client.faults().await?;
            let api = client.api_faults().await?;
            match output {
                Format::Json => {
                    let mut list = kinded("object", &objects)?;
                    list.extend(kinded("api", &api)?);
                    outln!("{}", serde_json::to_string_pretty(&list)?)?;
                }
                Format::Text => crate::out!("{}", mgmt_faults_text(&objects, &api))?,
            }
        }
    }
    Ok(())
}

/// The management cluster's faults: objects that fail (add), then API requests answered with
/// an error (add-api).
fn mgmt_faults_text(
    objects: &[hypersaga_emulator_mgmt::Fault],
    api: &[hypersaga_emulator_mgmt::admin_client::InstalledApiFault],
) -> String {
    if objects.is_empty() && api.is_empty() {
        return "no management-cluster faults\n".to_owned();
    }
    let mut out = String::new();
    if !objects.is_empty() {
        let mut table = Table::new(vec![
            "KIND",
            "NAME CONTAINS",
            "CONDITION",
            "REASON",
            "MESSAGE",
        ]);
        for f in objects {
            let kind = match f.kind {
                hypersaga_emulator_mgmt::FaultKind::HostedCluster => "hosted-cluster",
                hypersaga_emulator_mgmt::FaultKind::NodePool => "node-pool",
            };
            let condition = match f.kind {
                hypersaga_emulator_mgmt::FaultKind::HostedCluster => f.condition().to_owned(),
                hypersaga_emulator_mgmt::FaultKind::NodePool => "Ready".to_owned(),
            };
            table.row(vec![
                kind.into(),
                f.name_contains.clone().unwrap_or_else(|| "*".into()),
                condition,
                f.reason.clone(),
                f.message.clone(),
            ]);
        }
        out.push_str(&table.render(true));
    }
    if !api.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        let mut table = Table::new(vec![
            "VERB",
            "RESOURCE",
            "NAME CONTAINS",
            "STATUS",
            "REMAINING",
            "HITS",
        ]);
        for f in api {
            table.row(vec![
                f.spec.verb.clone(),
                f.spec.resource.clone(),
                f.spec.name_contains.clone().unwrap_or_else(|| "*".into()),
                f.spec.status.to_string(),
                remaining(f.remaining),
                f.hits.to_string(),
            ]);
        }
        out.push_str(&table.render(true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_list_shows_both_kinds_of_arm_fault() {
        let refused = hypersaga_emulator_arm::Fault {
            id: "f-1".into(),
            spec: FaultSpec {
                method: "PUT".into(),
                resource_type: "Microsoft.Network/privateDnsZones".into(),
                name_contains: None,
                path_contains: Some("demo".into()),
                status: 403,
                code: "AuthorizationFailed".into(),
                message: None,
                retry_after_secs: None,
                count: Some(1),
            },
            remaining: Some(1),
            hits: 0,
        };
        let failed_later = hypersaga_emulator_arm::AsyncFault {
            id: "f-2".into(),
            spec: hypersaga_emulator_arm::AsyncFaultSpec {
                method: "PUT".into(),
                resource_type: "Microsoft.Network/privateDnsZones/virtualNetworkLinks".into(),
                name_contains: None,
                path_contains: None,
                code: "BadRequest".into(),
                message: "overlapping namespaces".into(),
                count: None,
            },
            remaining: None,
            hits: 2,
        };
        let shown = arm_faults_table(&[refused], &[failed_later]);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        assert!(
            lines[1].contains("refuse") && lines[1].contains("path~demo"),
            "{shown}"
        );
        assert!(
            lines[2].contains("async") && lines[2].contains("virtualNetworkLinks"),
            "{shown}"
        );
        assert!(
            lines[2].contains("BadRequest") && lines[2].contains('∞'),
            "{shown}"
        );
        assert_eq!(arm_faults_table(&[], &[]), "no ARM faults\n");
    }

    #[test]
    fn cluster_fault_list_shows_objects_and_api_faults() {
        let object = hypersaga_emulator_mgmt::Fault {
            kind: hypersaga_emulator_mgmt::FaultKind::HostedCluster,
            name_contains: Some("demo".into()),
            reason: "InvalidConfiguration".into(),
            message: "bad key".into(),
            condition: None,
        };
        let api = hypersaga_emulator_mgmt::admin_client::InstalledApiFault {
            spec: hypersaga_emulator_mgmt::ApiFault {
                verb: "patch".into(),
                resource: "hostedclusters".into(),
                name_contains: None,
                status: 500,
                message: None,
                retry_after_secs: None,
                count: Some(2),
            },
            remaining: Some(1),
            hits: 1,
        };
        let shown = mgmt_faults_text(&[object], &[api]);
        for expected in [
            "hosted-cluster",
            "ValidConfiguration",
            "InvalidConfiguration",
            "patch",
            "hostedclusters",
            "500",
        ] {
            assert!(
                shown.contains(expected),
                "missing {expected:?} in:\n{shown}"
            );
        }
        assert_eq!(mgmt_faults_text(&[], &[]), "no management-cluster faults\n");
    }
}
