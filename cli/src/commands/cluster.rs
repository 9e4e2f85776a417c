//! `hypersaga cluster …`

use std::process::ExitCode;

use clap::{Args, Subcommand};
use futures::StreamExt;
use hypersaga_api::v1 as pb;

use std::time::{Duration, Instant};

use super::fail;
use crate::cli::ClientArgs;
use crate::exit;
use crate::output::{self, Output};
use crate::{errln, out, outln};

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Create a hosted cluster. Answers at once with the operation; `--wait` follows it to the end.
    Create(Box<CreateArgs>),
    /// Show one cluster: its phase, every step of its current operation, what it created.
    Get {
        /// The cluster's name.
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the tenant's clusters, by name (every page).
    List {
        /// Clusters fetched per request [default: the server's, 100].
        #[arg(long, value_parser = clap::value_parser!(i32).range(1..=1000))]
        page_size: Option<i32>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Delete a cluster and everything it made. What you brought (VNet, subnet, NSG) and the
    /// tenant's OIDC issuer stay; workload identities go too, unless --keep-identities.
    Delete {
        /// The cluster's name.
        name: String,
        /// Follow the deletion until the cluster is gone.
        #[arg(long)]
        wait: bool,
        /// Leave the cluster's workload identities and their federated credentials in Azure.
        #[arg(long)]
        keep_identities: bool,
        /// Idempotency key: retrying with the same key returns the same operation
        /// [default: random].
        #[arg(long)]
        request_id: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Upgrade the control plane to a new OpenShift release; node pools keep theirs.
    ///
    /// The control plane moves to a later patch or the next minor at most, never down.
    /// No node pool may be left more than three minors behind the new release: upgrade such
    /// a pool first (`hypersaga nodepool update CLUSTER POOL --release-image …`). Pools are
    /// never upgraded by this command; each is upgraded on its own afterwards, never past the
    /// control plane. The cluster must be ready, with no other operation running.
    ///
    /// Answers at once with the operation; `--wait` follows it to the end. A failed upgrade
    /// stops where it is and the cluster stays ready on what it runs.
    ///
    /// Example: hypersaga cluster upgrade demo --release-image
    /// quay.io/openshift-release-dev/ocp-release:4.22.0-multi --wait
    Upgrade(UpgradeArgs),
    /// Stream a cluster's changes until its operation ends (ready, deleted or failed).
    Watch {
        /// The cluster's name.
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Put an add-on on a ready cluster, move it to another version, or take it off.
    ///
    /// Package Operator rolls an add-on out in its phases, each once the one before is
    /// available, partly on the management cluster (next to the cluster's control plane) and
    /// partly inside the hosted cluster. The cluster pins the version it runs: a new version
    /// reaches it only through `set`. Each change is one operation on the cluster (one at a
    /// time, the cluster ready), followed with --wait as every change is. `cluster get`
    /// shows the add-ons a cluster carries; `hypersaga addon list` the catalog.
    #[command(subcommand)]
    Addon(ClusterAddonCommand),
}

/// What `hypersaga cluster addon` can do.
#[derive(Subcommand, Debug)]
pub enum ClusterAddonCommand {
    /// Put an add-on on a cluster, or move the one it carries to another version.
    ///
    /// The add-on is [SCOPE:]NAME[@VERSION]: NAME takes the newest version in the catalog,
    /// NAME@VERSION that version; the tenant's own add-on of that name if it has one, else
    /// the platform's, unless a platform: or tenant: prefix says whose. An add-on the cluster
    /// does not carry is added (an add_addon operation: one that does not become available
    /// is removed again); one it carries is moved to the version (update_addon: a version
    /// that does not become available stops, and the running one stays). The version a
    /// cluster runs already is refused (FAILED_PRECONDITION, exit 1).
    ///
    /// Answers at once with the operation; --wait follows it to the end (exit 0 once it
    /// succeeded, 10 if it failed).
    ///
    /// Example: hypersaga cluster addon set demo logging@1.5.0 --wait
    Set(AddonSetArgs),
    /// Take an add-on off a cluster: Package Operator removes its objects from both the
    /// management cluster and the hosted cluster (a remove_addon operation).
    ///
    /// Answers at once with the operation; --wait follows it to the end. The version it ran
    /// stays in the catalog (`hypersaga addon delete` deletes it once no cluster runs it).
    ///
    /// Example: hypersaga cluster addon remove demo logging --wait
    Remove(AddonRemoveArgs),
}

#[derive(Args, Debug)]
pub struct AddonSetArgs {
    /// The cluster's name.
    pub cluster: String,
    /// The add-on: NAME (the newest version), NAME@VERSION, platform:NAME[@VERSION] or
    /// tenant:NAME[@VERSION].
    #[arg(value_name = "[SCOPE:]NAME[@VERSION]", value_parser = super::addon::parse_addon_ref)]
    pub addon: pb::ClusterAddon,
    /// Change only if the cluster is still as last read: its etag, from `cluster get -o
    /// json` (ABORTED, exit 1, if it has changed since) [default: no check].
    #[arg(long)]
    pub etag: Option<String>,
    /// Idempotency key: retrying with the same key returns the same operation
    /// [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the change, showing each step, until it has succeeded or failed.
    #[arg(long)]
    pub wait: bool,
    #[arg(long, conflicts_with = "wait", help = super::DRY_RUN_HELP)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct AddonRemoveArgs {
    /// The cluster's name.
    pub cluster: String,
    /// The add-on's name (a cluster carries one version of it).
    #[arg(value_parser = super::addon::parse_addon_name)]
    pub addon: String,
    /// Change only if the cluster is still as last read: its etag, from `cluster get -o
    /// json` (ABORTED, exit 1, if it has changed since) [default: no check].
    #[arg(long)]
    pub etag: Option<String>,
    /// Idempotency key: retrying with the same key returns the same operation
    /// [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the removal, showing each step, until it has succeeded or failed.
    #[arg(long)]
    pub wait: bool,
    #[arg(long, conflicts_with = "wait", help = super::DRY_RUN_HELP)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `cluster addon set`'s request.
pub fn addon_set_request(a: &AddonSetArgs, request_id: String) -> pb::SetClusterAddonRequest {
    pb::SetClusterAddonRequest {
        cluster: a.cluster.clone(),
        addon: Some(a.addon.clone()),
        request_id,
        etag: super::etag(a.etag.as_deref()),
        validate_only: a.dry_run,
    }
}

/// `cluster addon remove`'s request.
pub fn addon_remove_request(
    a: &AddonRemoveArgs,
    request_id: String,
) -> pb::RemoveClusterAddonRequest {
    pb::RemoveClusterAddonRequest {
        cluster: a.cluster.clone(),
        addon: a.addon.clone(),
        request_id,
        etag: super::etag(a.etag.as_deref()),
        validate_only: a.dry_run,
    }
}

/// What `cluster addon set` says it does, once the API said which (the operation's kind).
fn addon_set_said(a: &AddonSetArgs, op: &pb::Operation) -> String {
    let version = if a.addon.version.is_empty() {
        "its newest version".to_owned()
    } else {
        format!("version {}", a.addon.version)
    };
    let name = &a.addon.name;
    if op.kind == pb::OperationKind::UpdateAddon as i32 {
        format!(
            "Moving add-on {name} of cluster {} to {version} (operation {}).",
            a.cluster, op.id
        )
    } else {
        format!(
            "Adding add-on {name} at {version} to cluster {} (operation {}).",
            a.cluster, op.id
        )
    }
}

#[derive(Args, Debug)]
pub struct UpgradeArgs {
    /// The cluster's name.
    pub name: String,
    /// The OpenShift release image to move the control plane to; its tag states the version
    /// (`…/ocp-release:4.22.0-multi`, a digest may follow the tag).
    #[arg(long)]
    pub release_image: String,
    /// Upgrade only if the cluster is still as last read: its etag, from `cluster get -o
    /// json` (ABORTED, exit 1, if it has changed since) [default: no check].
    #[arg(long)]
    pub etag: Option<String>,
    /// Idempotency key: retrying with the same key returns the same operation
    /// [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the upgrade, showing each step, until it has succeeded or failed.
    #[arg(long)]
    pub wait: bool,
    #[arg(long, conflicts_with = "wait", help = super::DRY_RUN_HELP)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `cluster upgrade`'s request: the new release under `update_mask` `spec.release_image`.
pub fn upgrade_request(a: &UpgradeArgs, request_id: String) -> pb::UpdateClusterRequest {
    pb::UpdateClusterRequest {
        cluster: Some(pb::Cluster {
            name: a.name.clone(),
            etag: super::etag(a.etag.as_deref()),
            spec: Some(pb::ClusterSpec {
                release_image: a.release_image.trim().to_owned(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: vec!["spec.release_image".to_owned()],
        }),
        request_id,
        validate_only: a.dry_run,
    }
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// Cluster name: a DNS label of at most 40 characters.
    pub name: String,
    /// Azure region.
    #[arg(long, default_value = "eastus")]
    pub location: String,
    /// Parent DNS domain; the private zone is `<name>.<base-domain>`.
    #[arg(long, default_value = "example.com")]
    pub base_domain: String,
    /// OpenShift release image.
    #[arg(
        long,
        default_value = "quay.io/openshift-release-dev/ocp-release:4.21.0-multi"
    )]
    pub release_image: String,
    /// Name of the node pool.
    #[arg(long, default_value = "workers")]
    pub node_pool_name: String,
    /// Worker nodes in the node pool (0: the pool exists with no nodes).
    #[arg(long, default_value_t = 2)]
    pub node_pool_replicas: i32,
    /// Azure VM size of the workers.
    #[arg(long, default_value = "Standard_D4s_v5")]
    pub vm_size: String,
    /// VNet address space to create [default 10.0.0.0/16].
    #[arg(long)]
    pub vnet_cidr: Option<String>,
    /// Subnet to create inside the VNet [default 10.0.0.0/24].
    #[arg(long)]
    pub subnet_cidr: Option<String>,
    /// Bring your own VNet (ARM id); requires --subnet-id and --nsg-id. Never deleted.
    #[arg(long)]
    pub vnet_id: Option<String>,
    /// With --vnet-id: the subnet of that VNet the cluster uses (ARM id,
    /// `…/virtualNetworks/<vnet>/subnets/<subnet>`). Never deleted.
    #[arg(long)]
    pub subnet_id: Option<String>,
    /// With --vnet-id: the network security group attached to that subnet (ARM id,
    /// `…/networkSecurityGroups/<nsg>`); the cluster adds its rules. Never deleted.
    #[arg(long)]
    pub nsg_id: Option<String>,
    /// A label of the cluster, KEY=VALUE (KEY= for an empty value), as Kubernetes writes
    /// labels; repeat for several. Rollouts choose clusters by their labels (`hypersaga
    /// rollout create --selector KEY=VALUE`).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = super::nodepool::parse_label)]
    pub labels: Vec<(String, String)>,
    /// An add-on for the cluster to carry, from the catalog (`hypersaga addon list`); repeat
    /// for several. NAME takes the newest version, NAME@VERSION pins one; the tenant's own
    /// add-on of that name if it has one, else the platform's, unless a prefix says whose:
    /// platform:NAME[@VERSION] or tenant:NAME[@VERSION]. Package Operator rolls each out in
    /// its phases once the control plane is available, on the management cluster and in the
    /// hosted cluster; the cluster is ready once they are available.
    #[arg(
        long = "addon",
        value_name = "[SCOPE:]NAME[@VERSION]",
        value_parser = super::addon::parse_addon_ref
    )]
    pub addons: Vec<pb::ClusterAddon>,
    /// Idempotency key: retrying with the same key returns the same operation [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the creation, showing each step, until the cluster is ready or failed.
    #[arg(long, conflicts_with = "dry_run")]
    pub wait: bool,
    /// Make nothing: print what the create would do, step by step (every Azure resource and
    /// Kubernetes object, in the order the steps would run), and what the preflight finds in
    /// its way. Exit code 0 when nothing is in the way, 9 when a create would be refused.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn run(cmd: ClusterCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ClusterCommand::Create(a) => create(*a).await,
        ClusterCommand::Get { name, client } => {
            let mut c = client.client().await?;
            match c.get_cluster(pb::GetClusterRequest { name }).await {
                Ok(r) => {
                    super::print_objects(&[r.into_inner()], &client, true, &super::CLUSTERS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(&client, s),
            }
        }
        ClusterCommand::List { page_size, client } => {
            let c = client.client().await?;
            let pages = super::all_pages(|page_token| {
                let mut c = c.clone();
                async move {
                    let req = pb::ListClustersRequest {
                        page_size: page_size.unwrap_or(0),
                        page_token,
                    };
                    let page = c.list_clusters(req).await?.into_inner();
                    Ok((page.clusters, page.next_page_token))
                }
            });
            let list = match pages.await {
                Ok(list) => list,
                Err(s) => return fail(&client, s),
            };
            super::print_objects(&list, &client, false, &super::CLUSTERS)?;
            Ok(ExitCode::SUCCESS)
        }
        ClusterCommand::Delete {
            name,
            wait,
            keep_identities,
            request_id,
            client,
        } => {
            let mut c = client.client().await?;
            let request_id = request_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            let op = match c
                .delete_cluster(pb::DeleteClusterRequest {
                    name: name.clone(),
                    request_id,
                    keep_identities,
                })
                .await
            {
                Ok(r) => r.into_inner(),
                Err(s) => return fail(&client, s),
            };
            if matches!(client.output, Output::Text | Output::Wide) {
                outln!("Deleting cluster {name} (operation {}).", op.id)?;
            }
            let end = Follow::cluster(&name, &op).deleting();
            if wait {
                return follow(&client, c, &end).await;
            }
            accepted(&client, &end, &op)?;
            Ok(ExitCode::SUCCESS)
        }
        ClusterCommand::Upgrade(a) => upgrade(a).await,
        ClusterCommand::Watch { name, client } => {
            let c = client.client().await?;
            follow(&client, c, &Follow::watch(&name)).await
        }
        ClusterCommand::Addon(ClusterAddonCommand::Set(a)) => {
            let req = addon_set_request(&a, super::request_id_or_new(a.request_id.clone()));
            let mut c = a.client.client().await?;
            let op = match c.set_cluster_addon(req).await {
                Ok(r) => r.into_inner(),
                Err(s) => return fail(&a.client, s),
            };
            if a.dry_run {
                return dry_run(&a.client, &op);
            }
            if matches!(a.client.output, Output::Text | Output::Wide) {
                outln!("{}", addon_set_said(&a, &op))?;
            }
            let end = Follow::addon(&a.cluster, &a.addon.name, &op);
            if a.wait {
                return follow(&a.client, c, &end).await;
            }
            accepted(&a.client, &end, &op)?;
            Ok(ExitCode::SUCCESS)
        }
        ClusterCommand::Addon(ClusterAddonCommand::Remove(a)) => {
            let req = addon_remove_request(&a, super::request_id_or_new(a.request_id.clone()));
            let mut c = a.client.client().await?;
            let op = match c.remove_cluster_addon(req).await {
                Ok(r) => r.into_inner(),
                Err(s) => return fail(&a.client, s),
            };
            if a.dry_run {
                return dry_run(&a.client, &op);
            }
            if matches!(a.client.output, Output::Text | Output::Wide) {
                outln!(
                    "Removing add-on {} from cluster {} (operation {}).",
                    a.addon,
                    a.cluster,
                    op.id
                )?;
            }
            let end = Follow::addon(&a.cluster, &a.addon, &op);
            if a.wait {
                return follow(&a.client, c, &end).await;
            }
            accepted(&a.client, &end, &op)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn upgrade(a: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let mut c = a.client.client().await?;
    let req = upgrade_request(&a, super::request_id_or_new(a.request_id.clone()));
    let op = match c.update_cluster(req).await {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(&a.client, s),
    };
    if a.dry_run {
        return dry_run(&a.client, &op);
    }
    if matches!(a.client.output, Output::Text | Output::Wide) {
        outln!(
            "Upgrading the control plane of cluster {} to {} (operation {}).",
            a.name,
            a.release_image.trim(),
            op.id
        )?;
    }
    let end = Follow::cluster(&a.name, &op);
    if a.wait {
        return follow(&a.client, c, &end).await;
    }
    accepted(&a.client, &end, &op)?;
    Ok(ExitCode::SUCCESS)
}

/// What a mutating command without `--wait` prints once the API accepted it: the operation
/// for scripts, the name of what it changes for `-o name` (text was said before).
pub(crate) fn accepted(
    client: &ClientArgs,
    end: &Follow<'_>,
    op: &pb::Operation,
) -> anyhow::Result<()> {
    if let Some(doc) = client.output.document(&output::operation_json(op))? {
        out!("{doc}")?;
    } else if client.output == Output::Name {
        outln!("{}", end.name_line())?;
    }
    Ok(())
}

async fn create(a: CreateArgs) -> anyhow::Result<ExitCode> {
    let labels = super::label_map("--label", &a.labels)?;
    super::addon::unique_addons(&a.addons)?;
    let mut c = a.client.client().await?;
    let node_pools = vec![pb::NodePoolSpec {
        name: a.node_pool_name.clone(),
        replicas: Some(a.node_pool_replicas),
        vm_size: a.vm_size.clone(),
        ..Default::default()
    }];
    let req = pb::CreateClusterRequest {
        labels,
        name: a.name.clone(),
        request_id: a
            .request_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        spec: Some(pb::ClusterSpec {
            location: a.location.clone(),
            base_domain: a.base_domain.clone(),
            release_image: a.release_image.clone(),
            node_pools,
            network: Some(pb::NetworkSpec {
                vnet_cidr: a.vnet_cidr.clone().unwrap_or_default(),
                subnet_cidr: a.subnet_cidr.clone().unwrap_or_default(),
                vnet_id: a.vnet_id.clone().unwrap_or_default(),
                subnet_id: a.subnet_id.clone().unwrap_or_default(),
                nsg_id: a.nsg_id.clone().unwrap_or_default(),
            }),
            addons: a.addons.clone(),
        }),
        validate_only: a.dry_run,
    };
    let op = match c.create_cluster(req).await {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(&a.client, s),
    };
    if a.dry_run {
        return dry_run(&a.client, &op);
    }
    if matches!(a.client.output, Output::Text | Output::Wide) {
        outln!("Creating cluster {} (operation {}).", a.name, op.id)?;
    }
    let end = Follow::cluster(&a.name, &op);
    if a.wait {
        return follow(&a.client, c, &end).await;
    }
    accepted(&a.client, &end, &op)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a dry run's plan; its exit code says whether the operation would be refused.
pub(crate) fn dry_run(client: &ClientArgs, op: &pb::Operation) -> anyhow::Result<ExitCode> {
    let plan = op.plan.clone().unwrap_or_default();
    if let Some(doc) = client.output.document(&output::plan_json(&plan))? {
        out!("{doc}")?;
    } else {
        out!("{}", output::plan_text(&plan))?;
    }
    Ok(if plan.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::PRECONDITION)
    })
}

/// What `--wait` or `watch` follows, and what it ends with.
#[derive(Clone, Debug)]
pub(crate) struct Follow<'a> {
    /// The cluster whose stream is followed.
    pub cluster: &'a str,
    /// The operation the command started: its outcome is the command's (`None` for `cluster
    /// watch`: the cluster's current operation).
    pub operation: Option<String>,
    /// The node pool the operation acts on: the end shows it rather than the whole cluster,
    /// and `-o name` names it.
    pub pool: Option<&'a str>,
    /// The add-on the operation acts on: the end shows the cluster's add-ons rather than the
    /// whole cluster.
    pub addon: Option<&'a str>,
    /// A cluster's deletion: the cluster going away is the end.
    pub deleting: bool,
    /// What is shown as it goes.
    pub view: View,
}

/// What a follow shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// The cluster: its phase and each step's changes (`-o json`: each state of the cluster).
    Cluster,
    /// Only the operation followed (`operation watch`): its steps' changes, or with `tree`
    /// its DAG redrawn (`-o json`: each state of the operation).
    Operation { tree: bool },
}

impl<'a> Follow<'a> {
    /// `cluster watch`: whatever the cluster is doing.
    pub fn watch(cluster: &'a str) -> Self {
        Self {
            cluster,
            operation: None,
            pool: None,
            addon: None,
            deleting: false,
            view: View::Cluster,
        }
    }

    /// Operation `op`, which the command started on `cluster`.
    pub fn cluster(cluster: &'a str, op: &pb::Operation) -> Self {
        Self {
            operation: Some(op.id.clone()),
            ..Self::watch(cluster)
        }
    }

    /// Operation `op`, which the command started on node pool `pool` of `cluster`.
    pub fn pool(cluster: &'a str, pool: &'a str, op: &pb::Operation) -> Self {
        Self {
            pool: Some(pool),
            ..Self::cluster(cluster, op)
        }
    }

    /// Operation `op`, which the command started on add-on `addon` of `cluster`.
    pub fn addon(cluster: &'a str, addon: &'a str, op: &pb::Operation) -> Self {
        Self {
            addon: Some(addon),
            ..Self::cluster(cluster, op)
        }
    }

    pub(crate) fn deleting(self) -> Self {
        Self {
            deleting: true,
            ..self
        }
    }

    /// Shows only the operation followed, as `view` says.
    pub(crate) fn showing(self, view: View) -> Self {
        Self { view, ..self }
    }

    /// What `-o name` prints: `cluster/<name>` or `nodepool/<name>`.
    fn name_line(&self) -> String {
        match self.pool {
            Some(pool) => output::nodepool_name(pool),
            None => output::cluster_name(self.cluster),
        }
    }
}

/// Whether a watch that failed so may come back: the connection, not the API, failed (the
/// gateway restarting, a reset, a proxy timing out). The API's own refusals are final.
pub(crate) fn transient(status: &tonic::Status) -> bool {
    use tonic::Code;
    match status.code() {
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded => true,
        // hyper's words for a connection that broke mid-stream.
        Code::Internal => {
            let m = status.message();
            m.contains("h2 protocol error") || m.contains("connection") || m.contains("stream")
        }
        _ => false,
    }
}

/// Why a watch was lost, for the "reconnecting" line: what the connection did, in words,
/// rather than the transport's (`Internal: h2 protocol error`).
pub(crate) fn lost_because(args: &ClientArgs, status: &tonic::Status) -> String {
    let server = args.target().map(|t| t.server).unwrap_or_default();
    match crate::client::Unreachable::of_status(&server, None, status) {
        Some(_) => "the connection closed".to_owned(),
        None => output::status_text(status),
    }
}

/// Streams the cluster until its operation ends, printing progress; the exit code says how
/// it ended ([`crate::exit`]: 0 ready or deleted, 10 failed — the cluster, or the operation
/// followed: a failed change of a living cluster leaves it ready).
///
/// A stream that breaks, or ends before the operation did (the gateway restarting, a
/// connection reset), is opened again with exponential backoff for up to
/// `--reconnect-timeout`, saying so on stderr. The API answers a new watch with the
/// cluster's current state first, so the progress goes on from there: steps that changed
/// meanwhile are shown once, as they are now.
///
/// Ends as soon as stdout's reader goes away (`| head`), without waiting for a line to print.
pub(crate) async fn follow(
    args: &ClientArgs,
    client: crate::client::Client,
    end: &Follow<'_>,
) -> anyhow::Result<ExitCode> {
    tokio::select! {
        done = follow_to_the_end(args, client, end) => done,
        () = crate::console::stdout_closed() => Err(crate::console::OutputError::Closed.into()),
    }
}

async fn follow_to_the_end(
    args: &ClientArgs,
    mut client: crate::client::Client,
    end: &Follow<'_>,
) -> anyhow::Result<ExitCode> {
    use backon::BackoffBuilder;
    let name = end.cluster;
    let format = args.output;
    let bound = Duration::from_secs(args.reconnect_timeout);
    let mut progress = output::Progress::default();
    let mut tree = match (end.view, &end.operation) {
        (View::Operation { tree: true }, Some(id)) => Some(output::TreeView::new(
            id,
            std::io::IsTerminal::is_terminal(&std::io::stdout()),
        )),
        _ => None,
    };
    let mut last: Option<pb::Cluster> = None;
    // Since when the stream has been lost, the last reason, and the backoff being followed.
    let mut lost: Option<(Instant, String, backon::ExponentialBackoff)> = None;
    loop {
        if let Some((since, why, delays)) = &mut lost {
            let Some(delay) = delays.next().filter(|d| since.elapsed() + *d < bound) else {
                errln!(
                    "error: lost the watch on cluster {name} ({why}) and could not get it back within {} s; the operation goes on: follow it with `hypersaga cluster watch {name}`",
                    bound.as_secs()
                );
                return Ok(ExitCode::from(exit::UNREACHABLE));
            };
            tokio::time::sleep(delay).await;
            client = match args.client().await {
                Ok(c) => c,
                Err(e) => {
                    *why = format!("{e:#}");
                    continue;
                }
            };
        }
        let opened = client
            .watch_cluster(pb::WatchClusterRequest {
                name: name.to_owned(),
            })
            .await;
        let mut stream = match opened {
            Ok(r) => r.into_inner(),
            Err(s) if end.deleting && s.code() == tonic::Code::NotFound => {
                if lost.is_some() {
                    errln!("Reconnected: cluster {name} is gone.");
                }
                if matches!(format, Output::Text | Output::Wide) {
                    outln!("Cluster {name} is deleted.")?;
                } else if format == Output::Name {
                    outln!("{}", end.name_line())?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            Err(s) if lost.is_some() && transient(&s) => {
                if let Some((_, why, _)) = &mut lost {
                    *why = lost_because(args, &s);
                }
                continue;
            }
            Err(s) => return fail(args, s),
        };
        if let Some((since, _, _)) = lost.take() {
            errln!(
                "Reconnected after {} s; going on from the cluster's current state.",
                since.elapsed().as_secs()
            );
        }
        let mut broke = None;
        while let Some(item) = stream.next().await {
            let cluster = match item {
                Ok(c) => c,
                Err(s) if transient(&s) => {
                    broke = Some(lost_because(args, &s));
                    break;
                }
                Err(s) => return fail(args, s),
            };
            show_change(format, end, &mut progress, tree.as_mut(), &cluster)?;
            last = Some(cluster);
        }
        let phase = last
            .as_ref()
            .map(|c| output::phase(c.status.as_ref().map(|s| s.phase).unwrap_or_default()));
        match (phase.as_deref(), broke) {
            // The API ends a watch when the operation has ended.
            (Some(done @ ("ready" | "deleted" | "failed")), None) => {
                let Some(mut last) = last else {
                    return Ok(ExitCode::from(exit::ERROR));
                };
                the_operation_followed(&mut client, end, &mut last).await;
                show_end(format, end, &last)?;
                let op_failed = last
                    .status
                    .as_ref()
                    .and_then(|s| s.operation.as_ref())
                    .is_some_and(|op| op.state == pb::OperationState::Failed as i32);
                return Ok(ExitCode::from(if done == "failed" || op_failed {
                    exit::OPERATION_FAILED
                } else {
                    exit::OK
                }));
            }
            (_, broke) => {
                let why = broke.unwrap_or_else(|| "the stream ended early".to_owned());
                errln!(
                    "Lost the watch on cluster {name} ({why}); reconnecting for up to {} s.",
                    bound.as_secs()
                );
                let delays = backon::ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(250))
                    .with_max_delay(Duration::from_secs(5))
                    .with_jitter()
                    .without_max_times()
                    .build();
                lost = Some((Instant::now(), why, delays));
            }
        }
    }
}

/// The operation `end` follows, as `cluster` shows it (none while another runs).
fn followed<'c>(end: &Follow<'_>, cluster: &'c pb::Cluster) -> Option<&'c pb::Operation> {
    let id = end.operation.as_deref()?;
    cluster
        .status
        .as_ref()
        .and_then(|s| s.operation.as_ref())
        .filter(|op| op.id == id)
}

/// One state of the watched cluster, as `-o` asks: progress lines (or the operation's tree),
/// or a document per change (the cluster's, or only the operation's).
fn show_change(
    format: Output,
    end: &Follow<'_>,
    progress: &mut output::Progress,
    tree: Option<&mut output::TreeView>,
    cluster: &pb::Cluster,
) -> anyhow::Result<()> {
    let doc = match end.view {
        View::Cluster => Some(output::cluster_json(cluster)),
        View::Operation { .. } => followed(end, cluster).map(output::operation_json),
    };
    match format {
        Output::Text | Output::Wide => match tree {
            Some(tree) => out!("{}", tree.change(cluster))?,
            None => {
                for line in progress.changes(cluster) {
                    outln!("{line}")?;
                }
            }
        },
        Output::Json => {
            if let Some(doc) = doc {
                outln!("{}", serde_json::to_string(&doc)?)?;
            }
        }
        Output::Yaml => {
            if let Some(doc) = doc {
                out!("---\n{}", serde_norway::to_string(&doc)?)?;
            }
        }
        Output::Name => {}
    }
    Ok(())
}

/// Puts the operation `end` follows in `last`, if another has taken its place by the end (a
/// cluster's deletion superseding it): its outcome, not the other's, is the command's.
async fn the_operation_followed(
    client: &mut crate::client::Client,
    end: &Follow<'_>,
    last: &mut pb::Cluster,
) {
    let Some(id) = &end.operation else {
        return;
    };
    let Some(status) = last.status.as_mut() else {
        return;
    };
    if status.operation.as_ref().is_some_and(|op| op.id == *id) {
        return;
    }
    let asked = client
        .get_operation(pb::GetOperationRequest { id: id.clone() })
        .await;
    if let Ok(op) = asked {
        status.operation = Some(op.into_inner());
    }
}

/// What a follow ends with: for people, the cluster (or the node pool the operation acted
/// on, while it exists) as it ended, then one line with the outcome; for `-o name`, the name.
fn show_end(format: Output, end: &Follow<'_>, last: &pb::Cluster) -> anyhow::Result<()> {
    match format {
        Output::Text | Output::Wide if end.view != View::Cluster => {
            if let Some(op) = followed(end, last) {
                match end.view {
                    // On a terminal, the last tree drawn in place of the one before it.
                    View::Operation { tree: true }
                        if std::io::IsTerminal::is_terminal(&std::io::stdout()) =>
                    {
                        out!("\x1b[H\x1b[2J{}", output::operation_tree(op))?
                    }
                    View::Operation { tree: true } => out!("\n{}", output::operation_tree(op))?,
                    _ => out!("\n{}", output::operation_text(op))?,
                }
            }
            outln!("{}", output::outcome(last))?;
        }
        Output::Text | Output::Wide => {
            outln!()?;
            match (end.pool, end.addon) {
                (Some(pool), _) => {
                    let pools = last.status.as_ref().map(|s| s.node_pools.as_slice());
                    let found = pools
                        .unwrap_or_default()
                        .iter()
                        .find(|p| p.spec.as_ref().is_some_and(|s| s.name == pool));
                    if let Some(p) = found {
                        out!("{}", output::nodepool_text(p))?;
                    }
                }
                (None, Some(_)) => {
                    let addons = last.spec.as_ref().map(|s| s.addons.as_slice());
                    out!(
                        "Cluster {}\n{}",
                        last.name,
                        output::addon::cluster_addons_text(addons.unwrap_or_default())
                    )?;
                }
                (None, None) => out!("{}", output::cluster_text(last))?,
            }
            outln!("{}", output::outcome(last))?;
        }
        Output::Name => outln!("{}", end.name_line())?,
        Output::Json | Output::Yaml => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn upgrade_args(extra: &[&str]) -> UpgradeArgs {
        let mut argv = vec!["hypersaga", "cluster", "upgrade", "demo"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Cluster(ClusterCommand::Upgrade(a))) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_upgrade_names_the_release_image_in_its_mask_and_sends_an_etag_only_when_given() {
        let image = "quay.io/openshift-release-dev/ocp-release:4.22.0-multi";
        let req = upgrade_request(&upgrade_args(&["--release-image", image]), "r-1".into());
        let cluster = req.cluster.unwrap_or_default();
        assert_eq!(cluster.name, "demo");
        assert_eq!(cluster.etag, "", "no --etag, no check");
        assert_eq!(cluster.spec.unwrap_or_default().release_image, image);
        assert_eq!(
            req.update_mask.map(|m| m.paths),
            Some(vec!["spec.release_image".to_owned()])
        );
        assert_eq!(req.request_id, "r-1");

        let a = upgrade_args(&["--release-image", image, "--etag", "7", "--wait"]);
        assert!(a.wait);
        let req = upgrade_request(&a, "r-2".into());
        assert_eq!(req.cluster.unwrap_or_default().etag, "\"7\"");

        let missing = Cli::try_parse_from(["hypersaga", "cluster", "upgrade", "demo"]);
        assert_eq!(
            missing.map(|_| ()).map_err(|e| e.kind()),
            Err(clap::error::ErrorKind::MissingRequiredArgument),
            "the release is required"
        );
    }

    #[test]
    fn create_takes_repeated_labels_and_a_bad_one_is_a_usage_error_naming_the_flag() {
        let create = |extra: &[&str]| {
            let mut argv = vec!["hypersaga", "cluster", "create", "demo"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).map(|c| match c.command {
                Command::Cluster(ClusterCommand::Create(a)) => a,
                other => panic!("{other:?}"),
            })
        };
        let a = create(&["--label", "env=prod", "--label", "team="]).unwrap();
        assert_eq!(
            a.labels,
            [
                ("env".to_owned(), "prod".to_owned()),
                ("team".to_owned(), String::new())
            ]
        );
        assert!(create(&[]).unwrap().labels.is_empty());
        let e = create(&["--label", "prod"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
        assert_eq!(e.exit_code(), 2);
        let said = e.to_string();
        assert!(
            said.contains("--label <KEY=VALUE>") && said.contains("is not KEY=VALUE"),
            "{said}"
        );
        let twice = super::super::label_map(
            "--label",
            &create(&["--label", "env=prod", "--label", "env=dev"])
                .unwrap()
                .labels,
        )
        .unwrap_err();
        assert!(twice.0.starts_with("--label env is given twice"), "{twice}");
    }

    #[test]
    fn create_takes_repeated_add_ons_pinned_or_not_and_scoped_or_not() {
        let create = |extra: &[&str]| {
            let mut argv = vec!["hypersaga", "cluster", "create", "demo"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).map(|c| match c.command {
                Command::Cluster(ClusterCommand::Create(a)) => a,
                other => panic!("{other:?}"),
            })
        };
        let a = create(&[
            "--addon",
            "logging@1.4.0",
            "--addon",
            "platform:monitoring",
            "--addon",
            "tenant:policy@2",
        ])
        .unwrap();
        let addon = |name: &str, version: &str, scope: pb::AddonScope| pb::ClusterAddon {
            name: name.into(),
            version: version.into(),
            scope: scope as i32,
        };
        assert_eq!(
            a.addons,
            [
                addon("logging", "1.4.0", pb::AddonScope::Unspecified),
                addon("monitoring", "", pb::AddonScope::Platform),
                addon("policy", "2", pb::AddonScope::Tenant),
            ]
        );
        assert!(super::super::addon::unique_addons(&a.addons).is_ok());
        assert!(create(&[]).unwrap().addons.is_empty());
        let e = create(&["--addon", "acme:logging"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
        assert_eq!(e.exit_code(), 2);
        let said = e.to_string();
        assert!(
            said.contains("--addon <[SCOPE:]NAME[@VERSION]>") && said.contains("is not a scope"),
            "{said}"
        );
        let twice = create(&["--addon", "logging", "--addon", "logging@2"]).unwrap();
        assert!(super::super::addon::unique_addons(&twice.addons).is_err());
    }

    #[test]
    fn cluster_addon_set_and_remove_send_the_add_on_the_etag_and_the_request_id() {
        let parse = |args: &[&str]| {
            let mut argv = vec!["hypersaga", "cluster", "addon"];
            argv.extend_from_slice(args);
            Cli::try_parse_from(argv).map(|c| match c.command {
                Command::Cluster(ClusterCommand::Addon(a)) => a,
                other => panic!("{other:?}"),
            })
        };
        let Ok(ClusterAddonCommand::Set(a)) = parse(&[
            "set",
            "demo",
            "platform:logging@1.5.0",
            "--etag",
            "7",
            "--request-id",
            "r-1",
            "--wait",
        ]) else {
            panic!("not a set");
        };
        assert!(a.wait);
        let req = addon_set_request(&a, "r-1".into());
        assert_eq!(req.cluster, "demo");
        assert_eq!(req.etag, "\"7\"");
        assert_eq!(req.request_id, "r-1");
        assert_eq!(
            req.addon,
            Some(pb::ClusterAddon {
                name: "logging".into(),
                version: "1.5.0".into(),
                scope: pb::AddonScope::Platform as i32,
            })
        );
        let op = |kind: pb::OperationKind| pb::Operation {
            id: "op-1".into(),
            kind: kind as i32,
            ..Default::default()
        };
        assert_eq!(
            addon_set_said(&a, &op(pb::OperationKind::UpdateAddon)),
            "Moving add-on logging of cluster demo to version 1.5.0 (operation op-1)."
        );
        let Ok(ClusterAddonCommand::Set(a)) = parse(&["set", "demo", "logging"]) else {
            panic!("not a set");
        };
        assert_eq!(
            addon_set_request(&a, "r".into()).etag,
            "",
            "no --etag, no check"
        );
        assert_eq!(
            addon_set_said(&a, &op(pb::OperationKind::AddAddon)),
            "Adding add-on logging at its newest version to cluster demo (operation op-1)."
        );

        let Ok(ClusterAddonCommand::Remove(a)) = parse(&["remove", "demo", "logging"]) else {
            panic!("not a remove");
        };
        let req = addon_remove_request(&a, "r-2".into());
        assert_eq!(
            (req.cluster.as_str(), req.addon.as_str(), req.etag.as_str()),
            ("demo", "logging", "")
        );
        let e = parse(&["remove", "demo", "logging@1.4.0"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
        assert!(e.to_string().contains("name alone"), "{e}");
        let e = parse(&["set", "demo", "logging@"]).unwrap_err();
        assert!(e.to_string().contains("no version after '@'"), "{e}");
        assert_eq!(
            parse(&["set", "demo"]).map(|_| ()).map_err(|e| e.kind()),
            Err(clap::error::ErrorKind::MissingRequiredArgument)
        );
        let op = op(pb::OperationKind::RemoveAddon);
        let end = Follow::addon("demo", "logging", &op);
        assert_eq!(end.name_line(), "cluster/demo");
        assert_eq!(end.addon, Some("logging"));
        assert_eq!(end.operation.as_deref(), Some("op-1"));
    }

    #[test]
    fn name_output_names_what_the_command_changed() {
        let op = pb::Operation {
            id: "op-1".into(),
            ..Default::default()
        };
        assert_eq!(Follow::cluster("demo", &op).name_line(), "cluster/demo");
        assert_eq!(Follow::pool("demo", "gpu", &op).name_line(), "nodepool/gpu");
        assert_eq!(Follow::watch("demo").operation, None);
        assert_eq!(
            Follow::cluster("demo", &op).operation.as_deref(),
            Some("op-1")
        );
    }
}
