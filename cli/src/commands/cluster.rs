//! `hypersaga cluster …`

use std::process::ExitCode;

use clap::{Args, Subcommand};
use futures::StreamExt;
use hypersaga_api::v1 as pb;

use super::fail;
use crate::cli::ClientArgs;
use crate::output::{self, Format};

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Create a hosted cluster. Answers at once with the operation; `--wait` follows it to the end.
    Create(Box<CreateArgs>),
    /// Show one cluster: its phase, every step of its current operation, what it created.
    Get {
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
        name: String,
        /// Follow the deletion until the cluster is gone.
        #[arg(long)]
        wait: bool,
        /// Leave the cluster's workload identities and their federated credentials in Azure.
        #[arg(long)]
        keep_identities: bool,
        /// Idempotency key.
        #[arg(long)]
        request_id: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Stream a cluster's changes until it reaches a terminal phase.
    Watch {
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
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
    #[arg(long)]
    pub subnet_id: Option<String>,
    #[arg(long)]
    pub nsg_id: Option<String>,
    /// Idempotency key: retrying with the same key returns the same operation [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the creation, showing each step, until the cluster is ready or failed.
    #[arg(long)]
    pub wait: bool,
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
                    let cluster = r.into_inner();
                    match client.output {
                        Format::Json => println!(
                            "{}",
                            serde_json::to_string_pretty(&output::cluster_json(&cluster))?
                        ),
                        Format::Text => print!("{}", output::cluster_text(&cluster)),
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(s),
            }
        }
        ClusterCommand::List { page_size, client } => {
            let mut c = client.client().await?;
            let mut list = Vec::new();
            let mut page_token = String::new();
            loop {
                let req = pb::ListClustersRequest {
                    page_size: page_size.unwrap_or(0),
                    page_token,
                };
                let page = match c.list_clusters(req).await {
                    Ok(r) => r.into_inner(),
                    Err(s) => return fail(s),
                };
                list.extend(page.clusters);
                page_token = page.next_page_token;
                if page_token.is_empty() {
                    break;
                }
            }
            match client.output {
                Format::Json => {
                    let v: Vec<_> = list.iter().map(output::cluster_json).collect();
                    println!("{}", serde_json::to_string_pretty(&v)?);
                }
                Format::Text => print!("{}", output::clusters_table(&list)),
            }
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
                Err(s) => return fail(s),
            };
            if client.output == Format::Text {
                println!("Deleting cluster {name} (operation {}).", op.id);
            }
            if wait {
                return follow(&mut c, &name, client.output, true).await;
            }
            if client.output == Format::Json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&output::operation_json(&op))?
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ClusterCommand::Watch { name, client } => {
            let mut c = client.client().await?;
            follow(&mut c, &name, client.output, false).await
        }
    }
}

async fn create(a: CreateArgs) -> anyhow::Result<ExitCode> {
    let mut c = a.client.client().await?;
    let node_pools = vec![pb::NodePoolSpec {
        name: a.node_pool_name.clone(),
        replicas: a.node_pool_replicas,
        vm_size: a.vm_size.clone(),
    }];
    let req = pb::CreateClusterRequest {
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
        }),
    };
    let op = match c.create_cluster(req).await {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(s),
    };
    if a.client.output == Format::Text {
        println!("Creating cluster {} (operation {}).", a.name, op.id);
    }
    if a.wait {
        return follow(&mut c, &a.name, a.client.output, false).await;
    }
    if a.client.output == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&output::operation_json(&op))?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Streams the cluster until its operation ends, printing progress; the exit code says how it
/// ended (0 ready/deleted, 1 failed).
async fn follow(
    c: &mut crate::client::Client,
    name: &str,
    format: Format,
    deleting: bool,
) -> anyhow::Result<ExitCode> {
    let mut stream = match c
        .watch_cluster(pb::WatchClusterRequest {
            name: name.to_owned(),
        })
        .await
    {
        Ok(r) => r.into_inner(),
        Err(s) if deleting && s.code() == tonic::Code::NotFound => {
            if format == Format::Text {
                println!("Cluster {name} is deleted.");
            }
            return Ok(ExitCode::SUCCESS);
        }
        Err(s) => return fail(s),
    };
    let mut progress = output::Progress::default();
    let mut last = None;
    while let Some(item) = stream.next().await {
        let cluster = match item {
            Ok(c) => c,
            Err(s) => return fail(s),
        };
        match format {
            Format::Text => {
                for line in progress.changes(&cluster) {
                    println!("{line}");
                }
            }
            Format::Json => println!(
                "{}",
                serde_json::to_string(&output::cluster_json(&cluster))?
            ),
        }
        last = Some(cluster);
    }
    let Some(last) = last else {
        return Ok(ExitCode::FAILURE);
    };
    let phase = output::phase(last.status.as_ref().map(|s| s.phase).unwrap_or_default());
    if format == Format::Text {
        println!();
        print!("{}", output::cluster_text(&last));
    }
    Ok(match phase.as_str() {
        "ready" | "deleted" => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}
