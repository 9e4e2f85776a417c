//! `hypersaga nodepool …`: a living cluster's node pools — add, inspect, scale, change,
//! delete. Each change is one operation on the cluster, followed with `--wait` as `cluster
//! create --wait` follows its own.

use std::collections::HashMap;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hypersaga_api::v1 as pb;

use super::cluster::{Follow, accepted, follow};
use super::{fail, request_id_or_new};
use crate::cli::ClientArgs;
use crate::exit::Usage;
use crate::outln;
use crate::output::Output;

/// What `hypersaga nodepool` can do.
#[derive(Subcommand, Debug)]
pub enum NodePoolCommand {
    /// Add a node pool to a ready cluster. Answers at once with the operation; `--wait`
    /// follows it to the end.
    ///
    /// Size: a fixed count (--replicas N) or autoscaling bounds (--min N --max N), not both;
    /// at most 200 nodes in a pool without a zone, 500 across the cluster's pools, 10 pools a
    /// cluster.
    ///
    /// Fixed once the pool exists: VM size, OS disk, zone, subnet and upgrade type. Size,
    /// release, labels, taints and drain timeout change later (`nodepool scale`, `nodepool
    /// update`).
    ///
    /// Release: the control plane's unless --release-image says otherwise; a pool is never
    /// newer than its control plane, and at most three minors behind it.
    ///
    /// The cluster must be ready, with no other operation running. A failed creation removes
    /// the pool again.
    ///
    /// Example: hypersaga nodepool create demo gpu --vm-size Standard_NC24ads_A100_v4 --min 1
    /// --max 4 --zone 1 --label tier=gpu --taint nvidia.com/gpu=true:NoSchedule --wait
    Create(Box<CreateArgs>),
    /// Show one node pool: its state, desired and ready nodes, version, and its whole spec.
    ///
    /// The etag shown is what --etag of `scale`, `update` and `delete` takes.
    ///
    /// Example: hypersaga nodepool get demo workers -o yaml
    Get {
        /// The cluster's name.
        cluster: String,
        /// The node pool's name.
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List a cluster's node pools, by name (every page): state, desired and ready nodes,
    /// size (a count, or the autoscaler's min..max), VM size and version.
    ///
    /// Example: hypersaga nodepool list demo -o wide
    List {
        /// The cluster's name.
        cluster: String,
        /// Node pools fetched per request [default: the server's, 100].
        #[arg(long, value_parser = clap::value_parser!(i32).range(1..=100))]
        page_size: Option<i32>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Resize a node pool: a fixed count (--replicas N) or autoscaling bounds (--min N --max
    /// N).
    ///
    /// --replicas changes `spec.replicas` and turns the autoscaler off; --min and --max change
    /// `spec.autoscaling` (the autoscaler then sets the count). At most 200 nodes in a pool
    /// without a zone (an autoscaler's minimum at least 1), 500 across the cluster's pools.
    ///
    /// The cluster must be ready, with no other operation running. A failed scale stops where
    /// it is, and the cluster stays ready.
    ///
    /// Example: hypersaga nodepool scale demo workers --min 2 --max 6 --wait
    Scale(ScaleArgs),
    /// Change a node pool's release, labels, taints or drain timeout; only what the flags
    /// name changes.
    ///
    /// --release-image moves the pool's nodes to that release (an upgrade, one pool at a
    /// time): never newer than the control plane, and never a minor down.
    ///
    /// --label replaces the pool's labels with those given (repeat it for several);
    /// --clear-labels removes them all. --taint and --clear-taints do the same for taints.
    /// Labels and taints apply to nodes made afterwards.
    ///
    /// VM size, OS disk, zone, subnet and upgrade type cannot change: create another pool.
    /// To resize, use `nodepool scale`.
    ///
    /// The cluster must be ready, with no other operation running. A failed update stops
    /// where it is, and the cluster stays ready.
    ///
    /// Example: hypersaga nodepool update demo workers --release-image
    /// quay.io/openshift-release-dev/ocp-release:4.22.0-multi --wait
    Update(UpdateArgs),
    /// Delete a node pool: its NodePool, machines, VMs, NICs and disks. The cluster and its
    /// other pools stay.
    ///
    /// The cluster must be ready, with no other operation running.
    ///
    /// Example: hypersaga nodepool delete demo gpu --wait
    Delete(DeleteArgs),
}

/// How many nodes: a count, or the autoscaler's bounds.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = true)]
pub struct Size {
    /// A fixed number of nodes (not with --min/--max).
    #[arg(long, value_name = "N", conflicts_with_all = ["min", "max"],
          value_parser = clap::value_parser!(i32).range(0..))]
    pub replicas: Option<i32>,
    /// The autoscaler's least number of nodes (with --max).
    #[arg(long, value_name = "N", requires = "max",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub min: Option<i32>,
    /// The autoscaler's most number of nodes (with --min).
    #[arg(long, value_name = "N", requires = "min",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub max: Option<i32>,
}

impl Size {
    /// The count and the bounds as `NodePoolSpec` carries them: one or the other.
    fn to_pb(&self) -> (Option<i32>, Option<pb::Autoscaling>) {
        match (self.min, self.max) {
            (Some(min), Some(max)) => (None, Some(pb::Autoscaling { min, max })),
            _ => (self.replicas, None),
        }
    }

    fn describe(&self) -> String {
        match self.to_pb() {
            (_, Some(a)) => format!("autoscaling {}..{}", a.min, a.max),
            (n, None) => format!("{} replicas", n.unwrap_or_default()),
        }
    }
}

/// `--upgrade-type`: how nodes move to a new release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum UpgradeType {
    /// New machines replace old ones, one at a time.
    #[value(name = "Replace")]
    Replace,
    /// Nodes are upgraded where they are.
    #[value(name = "InPlace")]
    InPlace,
}

impl UpgradeType {
    fn to_pb(self) -> pb::UpgradeType {
        match self {
            Self::Replace => pb::UpgradeType::Replace,
            Self::InPlace => pb::UpgradeType::InPlace,
        }
    }
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// The cluster's name.
    pub cluster: String,
    /// The pool's name: a lower-case letter, then up to 14 lower-case letters, digits and
    /// '-', not ending with '-'.
    pub name: String,
    /// Azure VM size of the pool's nodes, e.g. Standard_D4s_v5. Fixed once the pool exists.
    #[arg(long)]
    pub vm_size: String,
    #[command(flatten)]
    pub size: Size,
    /// The pool's own OpenShift release image [default: the control plane's]; never newer
    /// than the control plane, at most three minors behind it.
    #[arg(long)]
    pub release_image: Option<String>,
    /// OS disk size in GiB, 64 to 4095 [default: 120]. Fixed once the pool exists.
    #[arg(long, value_name = "GIB")]
    pub os_disk_gib: Option<u32>,
    /// OS disk type: Premium_LRS, PremiumV2_LRS, Standard_LRS or StandardSSD_LRS
    /// [default: Premium_LRS]. Fixed once the pool exists.
    #[arg(long, value_name = "TYPE")]
    pub os_disk_type: Option<String>,
    /// Availability zone of every node [default: Azure places each VM]. Fixed once the pool
    /// exists.
    #[arg(long, value_parser = ["1", "2", "3"])]
    pub zone: Option<String>,
    /// A subnet of the cluster's VNet for the nodes, by ARM id [default: the cluster's
    /// subnet]. Fixed once the pool exists.
    #[arg(long)]
    pub subnet_id: Option<String>,
    /// A label of the pool's nodes, KEY=VALUE (KEY= for an empty value); repeat for several.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// A taint of the pool's nodes, KEY=VALUE:EFFECT or KEY:EFFECT, EFFECT one of
    /// NoSchedule, PreferNoSchedule, NoExecute; repeat for several.
    #[arg(long = "taint", value_name = "KEY=VALUE:EFFECT", value_parser = parse_taint)]
    pub taints: Vec<pb::Taint>,
    /// How nodes move to a new release: Replace (new machines replace old ones, one at a
    /// time) or InPlace [default: Replace]. Fixed once the pool exists.
    #[arg(long, value_enum)]
    pub upgrade_type: Option<UpgradeType>,
    /// How long a node is drained before it is removed anyway, at most 10080 (a week)
    /// [default: 0, drain until done].
    #[arg(long, value_name = "N")]
    pub drain_timeout_minutes: Option<u32>,
    /// Idempotency key: retrying with the same key returns the same operation
    /// [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the creation, showing each step, until the pool is ready or failed.
    #[arg(long)]
    pub wait: bool,
    #[arg(long, conflicts_with = "wait", help = super::DRY_RUN_HELP)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct ScaleArgs {
    /// The cluster's name.
    pub cluster: String,
    /// The node pool's name.
    pub name: String,
    #[command(flatten)]
    pub size: Size,
    /// Change only if the pool is still as last read: its etag, from `nodepool get`
    /// (ABORTED, exit 1, if it has changed since) [default: no check].
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
pub struct UpdateArgs {
    /// The cluster's name.
    pub cluster: String,
    /// The node pool's name.
    pub name: String,
    /// Move the pool's nodes to this OpenShift release image: never newer than the control
    /// plane, never a minor down.
    #[arg(long)]
    pub release_image: Option<String>,
    /// The pool's labels become those given, KEY=VALUE (KEY= for an empty value); repeat for
    /// several. Applies to nodes made afterwards.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Remove every label of the pool.
    #[arg(long, conflicts_with = "labels")]
    pub clear_labels: bool,
    /// The pool's taints become those given, KEY=VALUE:EFFECT or KEY:EFFECT, EFFECT one of
    /// NoSchedule, PreferNoSchedule, NoExecute; repeat for several. Applies to nodes made
    /// afterwards.
    #[arg(long = "taint", value_name = "KEY=VALUE:EFFECT", value_parser = parse_taint)]
    pub taints: Vec<pb::Taint>,
    /// Remove every taint of the pool.
    #[arg(long, conflicts_with = "taints")]
    pub clear_taints: bool,
    /// How long a node is drained before it is removed anyway, at most 10080 (a week); 0:
    /// drain until done.
    #[arg(long, value_name = "N")]
    pub drain_timeout_minutes: Option<u32>,
    /// Change only if the pool is still as last read: its etag, from `nodepool get`
    /// (ABORTED, exit 1, if it has changed since) [default: no check].
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
pub struct DeleteArgs {
    /// The cluster's name.
    pub cluster: String,
    /// The node pool's name.
    pub name: String,
    /// Delete only if the pool is still as last read: its etag, from `nodepool get`
    /// (ABORTED, exit 1, if it has changed since) [default: no check].
    #[arg(long)]
    pub etag: Option<String>,
    /// Idempotency key: retrying with the same key returns the same operation
    /// [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the deletion until the pool is gone.
    #[arg(long)]
    pub wait: bool,
    #[arg(long, conflicts_with = "wait", help = super::DRY_RUN_HELP)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The taint effects Kubernetes knows.
const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `--label KEY=VALUE`: the key is required, the value may be empty (`KEY=`). The server
/// checks both against Kubernetes' rules.
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!(
            "{s:?} is not KEY=VALUE: give e.g. tier=gpu (tier= for an empty value)"
        )),
    }
}

/// `--taint KEY=VALUE:EFFECT` or `KEY:EFFECT`, as kubectl writes taints. The effect is
/// matched ignoring case and sent as Kubernetes spells it.
pub fn parse_taint(s: &str) -> Result<pb::Taint, String> {
    let shape = || {
        format!(
            "{s:?} is not KEY=VALUE:EFFECT or KEY:EFFECT: give e.g. nvidia.com/gpu=true:NoSchedule"
        )
    };
    let (kv, effect) = s.rsplit_once(':').ok_or_else(shape)?;
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    if key.trim().is_empty() {
        return Err(shape());
    }
    let effect = EFFECTS
        .iter()
        .find(|e| e.eq_ignore_ascii_case(effect.trim()))
        .ok_or_else(|| {
            format!(
                "{s:?}: the effect {effect:?} is not one of {}",
                EFFECTS.join(", ")
            )
        })?;
    Ok(pb::Taint {
        key: key.trim().to_owned(),
        value: value.trim().to_owned(),
        effect: (*effect).to_owned(),
    })
}

/// `--label`s as the API's map; a key given twice is a usage error (which one was meant?).
fn labels_map(labels: &[(String, String)]) -> Result<HashMap<String, String>, Usage> {
    let mut map = HashMap::new();
    for (k, v) in labels {
        if let Some(before) = map.insert(k.clone(), v.clone())
            && before != *v
        {
            return Err(Usage(format!(
                "--label {k} is given twice ({k}={before} and {k}={v}): give each key once"
            )));
        }
    }
    Ok(map)
}

/// `nodepool create`'s request.
pub fn create_request(
    a: &CreateArgs,
    request_id: String,
) -> Result<pb::CreateNodePoolRequest, Usage> {
    let (replicas, autoscaling) = a.size.to_pb();
    let os_disk = (a.os_disk_gib.is_some() || a.os_disk_type.is_some()).then(|| pb::OsDisk {
        size_gib: a.os_disk_gib.unwrap_or(0),
        storage_account_type: a.os_disk_type.clone().unwrap_or_default(),
    });
    Ok(pb::CreateNodePoolRequest {
        cluster: a.cluster.clone(),
        node_pool: Some(pb::NodePoolSpec {
            name: a.name.clone(),
            replicas,
            vm_size: a.vm_size.clone(),
            autoscaling,
            release_image: a.release_image.clone().unwrap_or_default(),
            os_disk,
            availability_zone: a.zone.clone().unwrap_or_default(),
            subnet_id: a.subnet_id.clone().unwrap_or_default(),
            labels: labels_map(&a.labels)?,
            taints: a.taints.clone(),
            upgrade_type: a.upgrade_type.map_or(0, |t| t.to_pb() as i32),
            node_drain_timeout_minutes: a.drain_timeout_minutes.unwrap_or(0),
        }),
        request_id,
        validate_only: a.dry_run,
    })
}

/// An `UpdateNodePool` request for pool `name` of `cluster`: `spec` (its name set here)
/// under `paths`; only planned when `validate_only`.
fn update_pool(
    cluster: &str,
    name: &str,
    spec: pb::NodePoolSpec,
    paths: Vec<&str>,
    etag: Option<&str>,
    request_id: String,
    validate_only: bool,
) -> pb::UpdateNodePoolRequest {
    pb::UpdateNodePoolRequest {
        cluster: cluster.to_owned(),
        node_pool: Some(pb::NodePool {
            cluster: cluster.to_owned(),
            spec: Some(pb::NodePoolSpec {
                name: name.to_owned(),
                ..spec
            }),
            status: None,
            etag: super::etag(etag),
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: paths.into_iter().map(str::to_owned).collect(),
        }),
        request_id,
        validate_only,
    }
}

/// `nodepool scale`'s request: `spec.replicas`, or `spec.autoscaling`.
pub fn scale_request(a: &ScaleArgs, request_id: String) -> pb::UpdateNodePoolRequest {
    let (replicas, autoscaling) = a.size.to_pb();
    let path = if autoscaling.is_some() {
        "spec.autoscaling"
    } else {
        "spec.replicas"
    };
    let spec = pb::NodePoolSpec {
        replicas,
        autoscaling,
        ..Default::default()
    };
    update_pool(
        &a.cluster,
        &a.name,
        spec,
        vec![path],
        a.etag.as_deref(),
        request_id,
        a.dry_run,
    )
}

/// `nodepool update`'s request: only what a flag names is in the mask; nothing named is a
/// usage error.
pub fn update_request(
    a: &UpdateArgs,
    request_id: String,
) -> Result<pb::UpdateNodePoolRequest, Usage> {
    let mut spec = pb::NodePoolSpec::default();
    let mut paths = Vec::new();
    if let Some(image) = &a.release_image {
        spec.release_image = image.trim().to_owned();
        paths.push("spec.release_image");
    }
    if a.clear_labels || !a.labels.is_empty() {
        spec.labels = labels_map(&a.labels)?;
        paths.push("spec.labels");
    }
    if a.clear_taints || !a.taints.is_empty() {
        spec.taints = a.taints.clone();
        paths.push("spec.taints");
    }
    if let Some(minutes) = a.drain_timeout_minutes {
        spec.node_drain_timeout_minutes = minutes;
        paths.push("spec.node_drain_timeout_minutes");
    }
    if paths.is_empty() {
        return Err(Usage(
            "nothing to change: give --release-image, --label, --clear-labels, --taint, \
             --clear-taints or --drain-timeout-minutes (to resize: `hypersaga nodepool scale`)"
                .to_owned(),
        ));
    }
    Ok(update_pool(
        &a.cluster,
        &a.name,
        spec,
        paths,
        a.etag.as_deref(),
        request_id,
        a.dry_run,
    ))
}

/// `nodepool delete`'s request.
pub fn delete_request(a: &DeleteArgs, request_id: String) -> pb::DeleteNodePoolRequest {
    pb::DeleteNodePoolRequest {
        cluster: a.cluster.clone(),
        name: a.name.clone(),
        request_id,
        etag: super::etag(a.etag.as_deref()),
        validate_only: a.dry_run,
    }
}

pub async fn run(cmd: NodePoolCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        NodePoolCommand::Create(a) => {
            let req = create_request(&a, request_id_or_new(a.request_id.clone()))?;
            let said = format!("Creating node pool {} in cluster {}", a.name, a.cluster);
            let mut c = a.client.client().await?;
            let answer = c.create_node_pool(req).await;
            changed(
                answer,
                c,
                &a.client,
                (&a.cluster, &a.name),
                &said,
                (a.wait, a.dry_run),
            )
            .await
        }
        NodePoolCommand::Get {
            cluster,
            name,
            client,
        } => {
            let mut c = client.client().await?;
            match c
                .get_node_pool(pb::GetNodePoolRequest { cluster, name })
                .await
            {
                Ok(r) => {
                    super::print_objects(&[r.into_inner()], &client, true, &super::NODE_POOLS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(&client, s),
            }
        }
        NodePoolCommand::List {
            cluster,
            page_size,
            client,
        } => {
            let c = client.client().await?;
            let pages = super::all_pages(|page_token| {
                let (mut c, cluster) = (c.clone(), cluster.clone());
                async move {
                    let req = pb::ListNodePoolsRequest {
                        cluster,
                        page_size: page_size.unwrap_or(0),
                        page_token,
                    };
                    let page = c.list_node_pools(req).await?.into_inner();
                    Ok((page.node_pools, page.next_page_token))
                }
            });
            let pools = match pages.await {
                Ok(pools) => pools,
                Err(s) => return fail(&client, s),
            };
            super::print_objects(&pools, &client, false, &super::NODE_POOLS)?;
            Ok(ExitCode::SUCCESS)
        }
        NodePoolCommand::Scale(a) => {
            let req = scale_request(&a, request_id_or_new(a.request_id.clone()));
            let said = format!(
                "Scaling node pool {} of cluster {} to {}",
                a.name,
                a.cluster,
                a.size.describe()
            );
            let mut c = a.client.client().await?;
            let answer = c.update_node_pool(req).await;
            changed(
                answer,
                c,
                &a.client,
                (&a.cluster, &a.name),
                &said,
                (a.wait, a.dry_run),
            )
            .await
        }
        NodePoolCommand::Update(a) => {
            let req = update_request(&a, request_id_or_new(a.request_id.clone()))?;
            let paths = req
                .update_mask
                .as_ref()
                .map(|m| m.paths.join(", "))
                .unwrap_or_default();
            let said = format!(
                "Updating {paths} of node pool {} of cluster {}",
                a.name, a.cluster
            );
            let mut c = a.client.client().await?;
            let answer = c.update_node_pool(req).await;
            changed(
                answer,
                c,
                &a.client,
                (&a.cluster, &a.name),
                &said,
                (a.wait, a.dry_run),
            )
            .await
        }
        NodePoolCommand::Delete(a) => {
            let req = delete_request(&a, request_id_or_new(a.request_id.clone()));
            let said = format!("Deleting node pool {} of cluster {}", a.name, a.cluster);
            let mut c = a.client.client().await?;
            let answer = c.delete_node_pool(req).await;
            changed(
                answer,
                c,
                &a.client,
                (&a.cluster, &a.name),
                &said,
                (a.wait, a.dry_run),
            )
            .await
        }
    }
}

/// After a change was asked: the refusal, or what was accepted (`said`, and the operation)
/// and, with `--wait`, the operation followed to its end as `cluster create --wait` does; a
/// dry run's plan.
async fn changed(
    answer: Result<tonic::Response<pb::Operation>, tonic::Status>,
    c: crate::client::Client,
    client: &ClientArgs,
    (cluster, pool): (&str, &str),
    said: &str,
    (wait, dry_run): (bool, bool),
) -> anyhow::Result<ExitCode> {
    let op = match answer {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(client, s),
    };
    if dry_run {
        return super::cluster::dry_run(client, &op);
    }
    if matches!(client.output, Output::Text | Output::Wide) {
        outln!("{said} (operation {}).", op.id)?;
    }
    let end = Follow::pool(cluster, pool, &op);
    if wait {
        return follow(client, c, &end).await;
    }
    accepted(client, &end, &op)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<NodePoolCommand, clap::Error> {
        let mut argv = vec!["hypersaga", "nodepool"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Nodepool(c) => Ok(c),
            other => panic!("not a nodepool command: {other:?}"),
        }
    }

    fn paths(req: &pb::UpdateNodePoolRequest) -> Vec<&str> {
        req.update_mask
            .as_ref()
            .map(|m| m.paths.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn spec(req: &pb::UpdateNodePoolRequest) -> pb::NodePoolSpec {
        req.node_pool
            .as_ref()
            .and_then(|p| p.spec.clone())
            .unwrap_or_default()
    }

    #[test]
    fn create_takes_every_field_of_a_pool() {
        let Ok(NodePoolCommand::Create(a)) = parse(&[
            "create",
            "demo",
            "gpu",
            "--vm-size",
            "Standard_NC24ads_A100_v4",
            "--min",
            "1",
            "--max",
            "4",
            "--release-image",
            "quay.io/openshift-release-dev/ocp-release:4.21.0-multi",
            "--os-disk-gib",
            "256",
            "--os-disk-type",
            "StandardSSD_LRS",
            "--zone",
            "2",
            "--subnet-id",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/gpu",
            "--label",
            "tier=gpu",
            "--label",
            "team=",
            "--taint",
            "nvidia.com/gpu=true:NoSchedule",
            "--taint",
            "dedicated:noexecute",
            "--upgrade-type",
            "InPlace",
            "--drain-timeout-minutes",
            "45",
            "--request-id",
            "r-1",
        ]) else {
            panic!("not a create");
        };
        let req = create_request(&a, "r-1".into()).unwrap();
        assert_eq!(req.cluster, "demo");
        assert_eq!(req.request_id, "r-1");
        let p = req.node_pool.unwrap();
        assert_eq!(p.name, "gpu");
        assert_eq!(p.replicas, None);
        assert_eq!(p.autoscaling, Some(pb::Autoscaling { min: 1, max: 4 }));
        assert_eq!(p.vm_size, "Standard_NC24ads_A100_v4");
        assert_eq!(
            p.os_disk,
            Some(pb::OsDisk {
                size_gib: 256,
                storage_account_type: "StandardSSD_LRS".into()
            })
        );
        assert_eq!(p.availability_zone, "2");
        assert!(p.subnet_id.ends_with("/subnets/gpu"));
        assert_eq!(p.labels.get("tier").map(String::as_str), Some("gpu"));
        assert_eq!(p.labels.get("team").map(String::as_str), Some(""));
        assert_eq!(
            p.taints,
            [
                pb::Taint {
                    key: "nvidia.com/gpu".into(),
                    value: "true".into(),
                    effect: "NoSchedule".into()
                },
                pb::Taint {
                    key: "dedicated".into(),
                    value: String::new(),
                    effect: "NoExecute".into()
                },
            ]
        );
        assert_eq!(p.upgrade_type, pb::UpgradeType::InPlace as i32);
        assert_eq!(p.node_drain_timeout_minutes, 45);
    }

    #[test]
    fn create_leaves_what_is_not_given_to_the_servers_defaults() {
        let Ok(NodePoolCommand::Create(a)) = parse(&[
            "create",
            "demo",
            "extra",
            "--vm-size",
            "Standard_D4s_v5",
            "--replicas",
            "0",
        ]) else {
            panic!("not a create");
        };
        let p = create_request(&a, "r".into()).unwrap().node_pool.unwrap();
        assert_eq!(p.replicas, Some(0), "zero nodes is a size, not no size");
        assert_eq!(p.autoscaling, None);
        assert_eq!(p.release_image, "", "the control plane's");
        assert_eq!(p.os_disk, None);
        assert_eq!(p.availability_zone, "");
        assert_eq!(p.upgrade_type, pb::UpgradeType::Unspecified as i32);
        assert!(p.labels.is_empty() && p.taints.is_empty());
    }

    #[test]
    fn a_size_is_a_count_or_both_bounds_never_a_mix() {
        let base = ["create", "demo", "gpu", "--vm-size", "Standard_D4s_v5"];
        let with = |extra: &[&str]| {
            let mut args = base.to_vec();
            args.extend_from_slice(extra);
            parse(&args).map(|_| ()).map_err(|e| e.kind())
        };
        use clap::error::ErrorKind;
        assert_eq!(with(&[]), Err(ErrorKind::MissingRequiredArgument));
        assert_eq!(
            with(&["--replicas", "2", "--min", "1", "--max", "3"]),
            Err(ErrorKind::ArgumentConflict)
        );
        assert_eq!(
            with(&["--min", "1"]),
            Err(ErrorKind::MissingRequiredArgument)
        );
        assert_eq!(
            with(&["--max", "3"]),
            Err(ErrorKind::MissingRequiredArgument)
        );
        assert_eq!(with(&["--replicas=-1"]), Err(ErrorKind::ValueValidation));
        assert_eq!(
            with(&["--replicas", "2", "--zone", "4"]),
            Err(ErrorKind::InvalidValue)
        );
        assert_eq!(
            with(&["--replicas", "2", "--upgrade-type", "Sideways"]),
            Err(ErrorKind::InvalidValue)
        );
        assert_eq!(with(&["--replicas", "2"]), Ok(()));
        assert_eq!(with(&["--min", "1", "--max", "3"]), Ok(()));
    }

    #[test]
    fn scale_names_the_field_it_changes() {
        let Ok(NodePoolCommand::Scale(a)) = parse(&["scale", "demo", "workers", "--replicas", "5"])
        else {
            panic!("not a scale");
        };
        let req = scale_request(&a, "r".into());
        assert_eq!(req.cluster, "demo");
        assert_eq!(paths(&req), ["spec.replicas"]);
        assert_eq!(spec(&req).name, "workers");
        assert_eq!(spec(&req).replicas, Some(5));
        assert_eq!(spec(&req).autoscaling, None);
        assert_eq!(
            req.node_pool.as_ref().unwrap().etag,
            "",
            "no --etag, no check"
        );

        let Ok(NodePoolCommand::Scale(a)) = parse(&[
            "scale", "demo", "workers", "--min", "2", "--max", "6", "--etag", "0123abcd",
        ]) else {
            panic!("not a scale");
        };
        let req = scale_request(&a, "r".into());
        assert_eq!(paths(&req), ["spec.autoscaling"]);
        assert_eq!(spec(&req).replicas, None);
        assert_eq!(
            spec(&req).autoscaling,
            Some(pb::Autoscaling { min: 2, max: 6 })
        );
        assert_eq!(req.node_pool.unwrap().etag, "\"0123abcd\"");
        assert!(
            parse(&["scale", "demo", "workers"]).is_err(),
            "a size is required"
        );
    }

    #[test]
    fn update_masks_only_what_its_flags_name() {
        let update = |extra: &[&str]| {
            let mut args = vec!["update", "demo", "workers"];
            args.extend_from_slice(extra);
            match parse(&args) {
                Ok(NodePoolCommand::Update(a)) => update_request(&a, "r".into()),
                other => panic!("{other:?}"),
            }
        };
        let req = update(&["--release-image", "quay.io/x/ocp-release:4.22.0-multi"]).unwrap();
        assert_eq!(paths(&req), ["spec.release_image"]);
        assert_eq!(
            spec(&req).release_image,
            "quay.io/x/ocp-release:4.22.0-multi"
        );

        let req = update(&["--label", "a=1", "--label", "b=2"]).unwrap();
        assert_eq!(paths(&req), ["spec.labels"]);
        assert_eq!(spec(&req).labels.len(), 2);

        let req = update(&["--clear-labels", "--clear-taints"]).unwrap();
        assert_eq!(paths(&req), ["spec.labels", "spec.taints"]);
        assert!(spec(&req).labels.is_empty() && spec(&req).taints.is_empty());

        let req = update(&[
            "--taint",
            "a=b:PreferNoSchedule",
            "--drain-timeout-minutes",
            "0",
            "--etag",
            "\"feed\"",
        ])
        .unwrap();
        assert_eq!(
            paths(&req),
            ["spec.taints", "spec.node_drain_timeout_minutes"]
        );
        assert_eq!(spec(&req).node_drain_timeout_minutes, 0);
        assert_eq!(req.node_pool.unwrap().etag, "\"feed\"");

        let nothing = update(&[]).unwrap_err();
        assert!(nothing.0.contains("nothing to change"), "{}", nothing.0);
        let twice = update(&["--label", "a=1", "--label", "a=2"]).unwrap_err();
        assert!(twice.0.contains("given twice"), "{}", twice.0);
        assert!(update(&["--label", "a=1", "--label", "a=1"]).is_ok());
        let clash = parse(&[
            "update",
            "demo",
            "workers",
            "--label",
            "a=1",
            "--clear-labels",
        ]);
        assert_eq!(
            clash.map(|_| ()).map_err(|e| e.kind()),
            Err(clap::error::ErrorKind::ArgumentConflict)
        );
    }

    #[test]
    fn delete_sends_the_etag_only_when_given() {
        let Ok(NodePoolCommand::Delete(a)) = parse(&["delete", "demo", "gpu"]) else {
            panic!("not a delete");
        };
        let req = delete_request(&a, "r".into());
        assert_eq!((req.cluster.as_str(), req.name.as_str()), ("demo", "gpu"));
        assert_eq!(req.etag, "");
        let Ok(NodePoolCommand::Delete(a)) = parse(&["delete", "demo", "gpu", "--etag", "e1"])
        else {
            panic!("not a delete");
        };
        assert_eq!(delete_request(&a, "r".into()).etag, "\"e1\"");
    }

    #[test]
    fn labels_and_taints_are_read_as_kubectl_writes_them() {
        assert_eq!(parse_label("tier=gpu"), Ok(("tier".into(), "gpu".into())));
        assert_eq!(parse_label("tier="), Ok(("tier".into(), String::new())));
        assert_eq!(
            parse_label("example.com/role=a=b"),
            Ok(("example.com/role".into(), "a=b".into())),
            "the value is the rest; the server says whether it is one"
        );
        for bad in ["tier", "=gpu", ""] {
            let e = parse_label(bad).unwrap_err();
            assert!(e.contains("is not KEY=VALUE"), "{bad}: {e}");
        }
        assert_eq!(
            parse_taint("gpu=true:NoSchedule").map(|t| (t.key, t.value, t.effect)),
            Ok(("gpu".into(), "true".into(), "NoSchedule".into()))
        );
        assert_eq!(
            parse_taint("gpu:prefernoschedule").map(|t| (t.key, t.value, t.effect)),
            Ok(("gpu".into(), String::new(), "PreferNoSchedule".into()))
        );
        let e = parse_taint("gpu=true:NoWay").unwrap_err();
        assert!(
            e.contains("\"NoWay\" is not one of NoSchedule, PreferNoSchedule, NoExecute"),
            "{e}"
        );
        for bad in ["gpu=true", ":NoSchedule", "=x:NoSchedule"] {
            let e = parse_taint(bad).unwrap_err();
            assert!(e.contains("is not KEY=VALUE:EFFECT"), "{bad}: {e}");
        }
        let e = parse(&["scale", "demo", "w", "--replicas", "1"])
            .and_then(|_| parse(&["update", "demo", "w", "--taint", "gpu"]))
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
    }
}
