//! `hypersaga bench day2`: how long hypersaga takes for day-2 work beside the time the
//! simulated HyperShift operator itself needs for it.
//!
//! On `hypersaga dev` (the real profile by default: ARM's latencies unscaled, each node ready
//! 7 min after its machine, a control-plane upgrade 20 min), one cluster is created (not
//! measured), then:
//! - a pool of 0 nodes is added (not measured) and scaled to `--nodes`;
//! - the control plane is upgraded to the next minor, then the cluster's first pool.
//!
//! Each operation's time is its own (the operation's start to its end, as the API reports
//! them). The operator's time for the same work is read off the management cluster, polled
//! every 100 ms: from the moment the object asks for the change (the NodePool's or the
//! HostedCluster's spec) until the moment it shows the change done (the pool's nodes ready
//! at its version; the HostedCluster's history `Completed` for the new release). What
//! hypersaga adds is the difference: accepting and planning the operation, the quota check,
//! applying, and noticing the end.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use hypersaga_api::v1 as pb;
use hypersaga_emulator_mgmt::admin_client::AdminClient as MgmtAdmin;
use serde::Serialize;
use serde_json::Value;

use super::report::{Table, Target, emit, num, progress, ratio, targets_and_notes};
use super::system::{DevSystem, SystemArgs, create_one, create_request};
use crate::client::Client;
use crate::dev::Profile;
use crate::output::{self, Format};

const TENANT: &str = "acme";
const CLUSTER: &str = "day2";
const POOL: &str = "bench";
/// How far an operation may exceed the operator's own time (the target: + 2 %).
const SLACK: f64 = 1.02;
/// How often the management cluster is looked at.
const POLL: Duration = Duration::from_millis(100);

#[derive(Args, Debug)]
pub struct Day2Args {
    /// Nodes the added pool is scaled to, from 0.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=200))]
    pub nodes: u32,
    /// Timing profile of `hypersaga dev` (real: Azure's and HyperShift's p50s).
    #[arg(long, value_enum, default_value_t = Profile::Real)]
    pub profile: Profile,
    /// Longest wait for any one operation.
    #[arg(long, default_value_t = 7200)]
    pub timeout_secs: u64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// One piece of day-2 work, timed both ways.
#[derive(Debug, Serialize)]
pub struct Work {
    pub what: String,
    pub operation: String,
    /// The operation's start to its end, as the API reports them.
    pub hypersaga_secs: Option<f64>,
    /// The management cluster's object asking for the change until it shows it done.
    pub operator_secs: Option<f64>,
    pub state: String,
}

impl Work {
    fn ratio(&self) -> Option<f64> {
        ratio(self.hypersaga_secs, self.operator_secs)
    }
}

#[derive(Debug, Serialize)]
pub struct Day2Report {
    pub bench: &'static str,
    pub profile: String,
    pub nodes: u32,
    pub work: Vec<Work>,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
}

pub async fn run(args: Day2Args) -> anyhow::Result<ExitCode> {
    let system = SystemArgs {
        profile: args.profile,
        replicas: 1,
        arm_budget_scale: 1.0,
        timeout_secs: args.timeout_secs,
    };
    let sys = DevSystem::start(&system).await?;
    let result = measure(&sys, &args, system.timeout()).await;
    sys.stop().await;
    let report = result?;
    emit(args.output, &report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

async fn measure(
    sys: &DevSystem,
    args: &Day2Args,
    timeout: Duration,
) -> anyhow::Result<Day2Report> {
    let client = sys.client(TENANT).await?;
    let mgmt = MgmtAdmin::new(sys.endpoints.mgmt_admin_url.clone());
    progress(format!("creating cluster {CLUSTER} (not measured)"));
    let created = create_one(&client, CLUSTER, timeout).await;
    anyhow::ensure!(
        matches!(created.settled, super::system::Settled::Succeeded),
        "the cluster did not become ready: {:?}",
        created.settled
    );
    let release = create_request(CLUSTER)
        .spec
        .map(|s| s.release_image)
        .unwrap_or_default();
    let next = release.replace("4.21.0", "4.22.0");

    progress(format!("adding pool {POOL} of 0 nodes (not measured)"));
    let mut c = client.clone();
    let op = c
        .create_node_pool(pb::CreateNodePoolRequest {
            validate_only: false,
            cluster: CLUSTER.into(),
            node_pool: Some(pb::NodePoolSpec {
                name: POOL.into(),
                replicas: Some(0),
                vm_size: "Standard_D4s_v5".into(),
                ..Default::default()
            }),
            request_id: uuid::Uuid::new_v4().to_string(),
        })
        .await
        .context("create node pool")?
        .into_inner();
    wait_op(&client, &op.id, timeout).await?;

    let mut work = Vec::new();
    progress(format!("scaling {POOL} 0 → {}", args.nodes));
    let nodes = i64::from(args.nodes);
    let op = c
        .update_node_pool(pool_update(
            POOL,
            pb::NodePoolSpec {
                replicas: Some(i32::try_from(args.nodes).unwrap_or(i32::MAX)),
                ..Default::default()
            },
            "spec.replicas",
        ))
        .await
        .context("scale")?
        .into_inner();
    let added = format!("{CLUSTER}-{POOL}");
    let operator = watch_object(&mgmt, "NodePool", &added, timeout, |np| {
        (np["spec"]["replicas"] == nodes, pool_ready(np, nodes, None))
    });
    work.push(timed("scale a pool 0 → N", &client, &op.id, operator, timeout).await?);

    progress("upgrading the control plane to the next minor");
    let etag = String::new();
    let op = c
        .update_cluster(pb::UpdateClusterRequest {
            validate_only: false,
            cluster: Some(pb::Cluster {
                name: CLUSTER.into(),
                etag,
                spec: Some(pb::ClusterSpec {
                    release_image: next.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            update_mask: Some(prost_types::FieldMask {
                paths: vec!["spec.release_image".into()],
            }),
            request_id: uuid::Uuid::new_v4().to_string(),
        })
        .await
        .context("upgrade")?
        .into_inner();
    let image = next.clone();
    let operator = watch_object(&mgmt, "HostedCluster", CLUSTER, timeout, move |hc| {
        let newest = &hc["status"]["version"]["history"][0];
        (
            hc["spec"]["release"]["image"] == image.as_str(),
            newest["image"] == image.as_str() && newest["state"] == "Completed",
        )
    });
    work.push(
        timed(
            "upgrade the control plane",
            &client,
            &op.id,
            operator,
            timeout,
        )
        .await?,
    );

    progress("upgrading pool workers to the control plane's release");
    let op = c
        .update_node_pool(pool_update(
            "workers",
            pb::NodePoolSpec {
                release_image: next.clone(),
                ..Default::default()
            },
            "spec.release_image",
        ))
        .await
        .context("pool upgrade")?
        .into_inner();
    let image = next.clone();
    let replicas = create_request(CLUSTER)
        .spec
        .and_then(|s| s.node_pools.first().and_then(|p| p.replicas))
        .map_or(0, i64::from);
    let first = format!("{CLUSTER}-workers");
    let operator = watch_object(&mgmt, "NodePool", &first, timeout, move |np| {
        (
            np["spec"]["release"]["image"] == image.as_str(),
            pool_ready(np, replicas, Some("4.22.0")),
        )
    });
    work.push(timed("upgrade a pool", &client, &op.id, operator, timeout).await?);

    let targets = work
        .iter()
        .map(|w| {
            Target::new(
                format!("{}: hypersaga / operator", w.what),
                w.ratio(),
                "ratio",
                format!("<= {SLACK:.2}"),
            )
        })
        .collect();
    Ok(Day2Report {
        bench: "day2",
        profile: format!("{:?}", args.profile).to_lowercase(),
        nodes: args.nodes,
        work,
        targets,
        notes: vec![
            "operator time: the management cluster's object asking for the change until it \
             shows it done, polled every 100 ms"
                .into(),
        ],
    })
}

fn pool_update(name: &str, spec: pb::NodePoolSpec, path: &str) -> pb::UpdateNodePoolRequest {
    pb::UpdateNodePoolRequest {
        validate_only: false,
        cluster: CLUSTER.into(),
        node_pool: Some(pb::NodePool {
            spec: Some(pb::NodePoolSpec {
                name: name.into(),
                ..spec
            }),
            ..Default::default()
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: vec![path.into()],
        }),
        request_id: uuid::Uuid::new_v4().to_string(),
    }
}

/// Whether a NodePool shows `replicas` ready nodes (and `version` rolled out, when given).
fn pool_ready(np: &Value, replicas: i64, version: Option<&str>) -> bool {
    let ready = np["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    ready
        && np["status"]["replicas"] == replicas
        && version.is_none_or(|v| np["status"]["version"] == v)
}

/// Follows object `kind`/`name` on the management cluster until `check` says it asks for the
/// change (first) and shows it done (second); the seconds between the two.
async fn watch_object(
    mgmt: &MgmtAdmin,
    kind: &str,
    name: &str,
    timeout: Duration,
    check: impl Fn(&Value) -> (bool, bool),
) -> anyhow::Result<f64> {
    let deadline = Instant::now() + timeout;
    let mut asked: Option<Instant> = None;
    loop {
        let objects = mgmt.objects().await.context("management cluster objects")?;
        let obj = objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name);
        if let Some(obj) = obj {
            let (asks, done) = check(obj);
            if asks && asked.is_none() {
                asked = Some(Instant::now());
            }
            if let (Some(at), true) = (asked, done) {
                return Ok(at.elapsed().as_secs_f64());
            }
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{kind} {name} never showed the change done"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// The operation's own time beside the operator's, once both are known.
async fn timed(
    what: &str,
    client: &Client,
    id: &str,
    operator: impl std::future::Future<Output = anyhow::Result<f64>>,
    timeout: Duration,
) -> anyhow::Result<Work> {
    let (operator, op) = tokio::join!(operator, wait_op(client, id, timeout));
    let op = op?;
    let secs = |t: &Option<prost_types::Timestamp>| {
        t.as_ref()
            .map(|t| t.seconds as f64 + f64::from(t.nanos) / 1e9)
    };
    let hypersaga_secs = match (secs(&op.start_time), secs(&op.end_time)) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let work = Work {
        what: what.into(),
        operation: id.into(),
        hypersaga_secs,
        operator_secs: operator.ok(),
        state: output::op_state(op.state),
    };
    progress(format!(
        "{what}: {} s (the operator's {} s)",
        num(work.hypersaga_secs, 1),
        num(work.operator_secs, 1)
    ));
    Ok(work)
}

/// Polls the operation until it has ended; its last state.
async fn wait_op(client: &Client, id: &str, timeout: Duration) -> anyhow::Result<pb::Operation> {
    let mut c = client.clone();
    let deadline = Instant::now() + timeout;
    loop {
        let op = c
            .get_operation(pb::GetOperationRequest { id: id.into() })
            .await
            .context("get operation")?
            .into_inner();
        match output::op_state(op.state).as_str() {
            "succeeded" => return Ok(op),
            "failed" | "paused" => anyhow::bail!(
                "operation {id} {}: {:?}",
                output::op_state(op.state),
                op.error.or_else(|| op.pause.and_then(|p| p.reason))
            ),
            _ => {}
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "operation {id} did not end in time"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn render(r: &Day2Report) -> String {
    let mut t = Table::new(["WORK", "HYPERSAGA", "OPERATOR", "RATIO", "STATE"]);
    for w in &r.work {
        t.row([
            w.what.clone(),
            format!("{} s", num(w.hypersaga_secs, 1)),
            format!("{} s", num(w.operator_secs, 1)),
            format!("{}×", num(w.ratio(), 3)),
            w.state.clone(),
        ]);
    }
    format!(
        "day-2 work on one cluster ({} profile, a pool scaled 0 → {})\n\n{}\n{}",
        r.profile,
        r.nodes,
        t.render(),
        targets_and_notes(&r.targets, &r.notes)
    )
}
