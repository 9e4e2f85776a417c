//! `hypersaga management-cluster …`: where hosted control planes live. Each management
//! cluster is configured with its region and capacity (`kube.management_clusters`); a create
//! goes, in its region, to the one with the most room. An admin lists them with their clusters
//! and free capacity, and cordons one so it takes nothing new.

use std::process::ExitCode;

use clap::Subcommand;
use hypersaga_api::v1 as pb;

use super::tenant::{AdminArgs, call};

#[derive(Subcommand, Debug)]
pub enum ManagementCommand {
    /// List the management clusters: region, clusters placed, capacity, free room, cordon.
    ///
    /// `-o wide` lists each one's clusters (`<tenant>/<name>`).
    ///
    /// Example: hypersaga management-cluster list
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Cordon a management cluster: it gets no new cluster until uncordoned. The clusters it
    /// hosts carry on, and their node pools and upgrades still go there.
    ///
    /// Example: hypersaga management-cluster cordon mc-1 --reason "kernel upgrade"
    Cordon {
        /// The management cluster's name (`management-cluster list`).
        name: String,
        /// Why (shown to whoever lists it, and in a refused create's message).
        #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
        reason: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Uncordon a management cluster: new clusters may be placed on it again.
    ///
    /// Example: hypersaga management-cluster uncordon mc-1
    Uncordon {
        /// The management cluster's name.
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

pub async fn run(cmd: ManagementCommand) -> anyhow::Result<ExitCode> {
    let (admin, one) = match cmd {
        ManagementCommand::List { admin } => {
            let req = pb::ListManagementClustersRequest {};
            return match call(&admin, |mut c| async move {
                c.list_management_clusters(req).await
            })
            .await?
            {
                Ok(r) => {
                    super::print_objects(
                        &r.management_clusters,
                        &admin.client,
                        false,
                        &super::MANAGEMENT_CLUSTERS,
                    )?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            };
        }
        ManagementCommand::Cordon {
            name,
            reason,
            admin,
        } => {
            let req = pb::CordonManagementClusterRequest { name, reason };
            let r = call(&admin, |mut c| async move {
                c.cordon_management_cluster(req).await
            })
            .await?;
            (admin, r)
        }
        ManagementCommand::Uncordon { name, admin } => {
            let req = pb::UncordonManagementClusterRequest { name };
            let r = call(&admin, |mut c| async move {
                c.uncordon_management_cluster(req).await
            })
            .await?;
            (admin, r)
        }
    };
    match one {
        Ok(m) => {
            super::print_objects(&[m], &admin.client, true, &super::MANAGEMENT_CLUSTERS)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(code) => Ok(code),
    }
}
