//! Day 2 on a living cluster, through the public API: node pools created, scaled,
//! autoscaled and deleted, with their VMs in ARM and their NodePools on the management
//! cluster following; every refusal before anything is written; a failed change that leaves
//! the cluster ready with what it had.

use std::collections::BTreeMap;
use std::time::Duration;

use hypersaga_api::v1 as pb;
use serde_json::Value;
use tokio::time::Instant;

use crate::support::*;

const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release:4.21.0-multi";

/// The VMs of pool `pool` of `cluster` (CAPZ names them after their Machines,
/// `<cluster>-<pool>-…`), by name, with their size.
async fn vms(system: &System, cluster: &str, pool: &str) -> BTreeMap<String, String> {
    let prefix = format!("{cluster}-{pool}-");
    system
        .inventory("acme")
        .await
        .into_iter()
        .filter(|r| is_of(r, "Microsoft.Compute/virtualMachines", &prefix))
        .map(|r| {
            let size = r["properties"]["hardwareProfile"]["vmSize"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (name_of(&r).to_owned(), size)
        })
        .collect()
}

/// How many NICs and disks of pool `pool` of `cluster` ARM holds.
async fn nics_and_disks(system: &System, cluster: &str, pool: &str) -> usize {
    let prefix = format!("{cluster}-{pool}-");
    system
        .inventory("acme")
        .await
        .iter()
        .filter(|r| {
            is_of(r, "Microsoft.Network/networkInterfaces", &prefix)
                || is_of(r, "Microsoft.Compute/disks", &prefix)
        })
        .count()
}

fn name_of(r: &Value) -> &str {
    r["id"]
        .as_str()
        .and_then(|id| id.rsplit('/').next())
        .unwrap_or_default()
}

fn is_of(r: &Value, ty: &str, prefix: &str) -> bool {
    let id = r["id"].as_str().unwrap_or_default();
    id.contains(&format!("/providers/{ty}/")) && name_of(r).starts_with(prefix)
}

/// The NodePool object `<cluster>-<pool>` on the management cluster.
async fn node_pool_object(system: &System, cluster: &str, pool: &str) -> Option<Value> {
    let name = format!("{cluster}-{pool}");
    system
        .mgmt_admin()
        .objects()
        .await
        .expect("objects")
        .into_iter()
        .find(|o| o["kind"] == "NodePool" && o["metadata"]["name"] == name.as_str())
}

/// Polls the operation until `pred` holds; its state then.
async fn op_until(
    system: &System,
    id: &str,
    what: &str,
    pred: impl Fn(pb::OperationState) -> bool,
) -> pb::Operation {
    let mut c = system.client("acme").await;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let op = c
            .get_operation(pb::GetOperationRequest { id: id.into() })
            .await
            .expect("get operation")
            .into_inner();
        if pred(pb::OperationState::try_from(op.state).unwrap_or_default()) {
            return op;
        }
        if Instant::now() > deadline {
            system.dump_logs();
            panic!("operation {id} never {what}: {op:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls the operation until it has ended; its last state.
async fn ended(system: &System, id: &str) -> pb::Operation {
    op_until(system, id, "ended", |s| {
        matches!(
            s,
            pb::OperationState::Succeeded | pb::OperationState::Failed
        )
    })
    .await
}

/// Polls until the NodePool object asks for `n` nodes: the change was applied.
async fn applied(system: &System, cluster: &str, pool: &str, n: i32) {
    let deadline = Instant::now() + TIMEOUT;
    while node_pool_object(system, cluster, pool)
        .await
        .is_none_or(|np| np["spec"]["replicas"] != n)
    {
        assert!(
            Instant::now() < deadline,
            "the NodePool never asked for {n}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// VM creations of `cluster`'s pool `pool` fail retryably until the faults are cleared: CAPZ
/// keeps trying, and the scale waits.
async fn hold_vms(system: &System, cluster: &str, pool: &str) {
    system
        .arm_admin()
        .add_fault(&hypersaga_emulator_arm::FaultSpec {
            method: "PUT".into(),
            resource_type: "Microsoft.Compute/virtualMachines".into(),
            name_contains: Some(format!("{cluster}-{pool}-")),
            path_contains: None,
            status: 500,
            code: "InternalServerError".into(),
            message: Some("injected: held".into()),
            retry_after_secs: None,
            count: None,
        })
        .await
        .expect("fault");
}

fn succeeded(op: &pb::Operation) -> bool {
    op.state == pb::OperationState::Succeeded as i32
}

async fn pool(system: &System, cluster: &str, name: &str) -> pb::NodePool {
    system
        .client("acme")
        .await
        .get_node_pool(pb::GetNodePoolRequest {
            cluster: cluster.into(),
            name: name.into(),
        })
        .await
        .expect("get node pool")
        .into_inner()
}

fn mask(paths: &[&str]) -> Option<prost_types::FieldMask> {
    Some(prost_types::FieldMask {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    })
}

/// An update of pool `name` setting `spec`'s fields named in `paths`, against `etag`.
fn update(
    cluster: &str,
    name: &str,
    spec: pb::NodePoolSpec,
    paths: &[&str],
    etag: &str,
) -> pb::UpdateNodePoolRequest {
    pb::UpdateNodePoolRequest {
        validate_only: false,
        cluster: cluster.into(),
        node_pool: Some(pb::NodePool {
            spec: Some(pb::NodePoolSpec {
                name: name.into(),
                ..spec
            }),
            etag: etag.into(),
            ..Default::default()
        }),
        update_mask: mask(paths),
        request_id: uuid::Uuid::new_v4().to_string(),
    }
}

fn replicas(n: i32) -> pb::NodePoolSpec {
    pb::NodePoolSpec {
        replicas: Some(n),
        ..Default::default()
    }
}

/// The field paths of an `INVALID_ARGUMENT`'s `google.rpc.BadRequest`.
fn violations(status: &tonic::Status) -> Vec<String> {
    use tonic_types::StatusExt;
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    status
        .get_error_details()
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn node_pools_are_created_scaled_autoscaled_and_deleted_beside_an_untouched_first_pool() {
    let system = System::start().await;
    let mut c = system.client("acme").await;
    system.create("acme", "living", 2).await;
    let ready = system.watch_to_end("acme", "living").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let first = vms(&system, "living", "workers").await;
    assert_eq!(first.len(), 2, "{first:?}");

    // A second pool of 3 × Standard_D8s_v5.
    let op = c
        .create_node_pool(pb::CreateNodePoolRequest {
            validate_only: false,
            cluster: "living".into(),
            node_pool: Some(pb::NodePoolSpec {
                name: "big".into(),
                replicas: Some(3),
                vm_size: "Standard_D8s_v5".into(),
                labels: [("tier".to_owned(), "batch".to_owned())].into(),
                ..Default::default()
            }),
            request_id: "big-1".into(),
        })
        .await
        .expect("create node pool")
        .into_inner();
    assert_eq!(op.kind, pb::OperationKind::CreateNodePool as i32);
    assert_eq!(op.node_pool, "big");

    // While it runs, the cluster takes no other change, and says which one runs.
    let busy = c
        .update_node_pool(update(
            "living",
            "workers",
            replicas(3),
            &["spec.replicas"],
            "",
        ))
        .await
        .expect_err("one change at a time");
    assert_eq!(busy.code(), tonic::Code::FailedPrecondition, "{busy:?}");
    assert!(busy.message().contains(&op.id), "{busy:?}");

    let done = ended(&system, &op.id).await;
    assert!(succeeded(&done), "{done:#?}");
    let big = vms(&system, "living", "big").await;
    assert_eq!(big.len(), 3, "{big:?}");
    assert!(big.values().all(|s| s == "Standard_D8s_v5"), "{big:?}");
    // As Microsoft's compute SDK reads them: the same three, with their disks, and the vCPUs
    // they hold in the region's usages (2 × 4 of the first pool, 3 × 8 of this one).
    let found = azure_sdk_reads(&system, "acme").await;
    let sdk_vms: BTreeMap<String, String> = found["compute"]["virtualMachines"]
        .as_array()
        .expect("virtual machines")
        .iter()
        .filter(|v| {
            v["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("living-big-"))
        })
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_owned(),
                v["vmSize"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(sdk_vms, big, "{found:#}");
    let family = found["compute"]["usages"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["name"] == "standardDSv5Family"))
        .unwrap_or_else(|| panic!("{found:#}"));
    assert_eq!(family["currentValue"], 2 * 4 + 3 * 8, "{family:#}");
    let np = node_pool_object(&system, "living", "big")
        .await
        .expect("NodePool");
    assert_eq!(np["spec"]["replicas"], 3);
    assert_eq!(np["spec"]["nodeLabels"]["tier"], "batch");
    let got = pool(&system, "living", "big").await;
    let status = got.status.clone().expect("status");
    assert_eq!((status.state.as_str(), status.ready_replicas), ("Ready", 3));
    assert_eq!(status.version, "4.21.0");
    let cluster = system
        .wait_until("acme", "living", "ready again", |c| phase(c) == "ready")
        .await;
    let resources = cluster.status.clone().expect("status").resources;
    assert!(resources.contains_key("node_pool/big"), "{resources:?}");
    assert!(resources.contains_key("node_pool/workers"), "{resources:?}");

    // A retry of the create is the same operation.
    let again = c
        .create_node_pool(pb::CreateNodePoolRequest {
            validate_only: false,
            cluster: "living".into(),
            node_pool: Some(pb::NodePoolSpec {
                name: "big".into(),
                replicas: Some(3),
                vm_size: "Standard_D8s_v5".into(),
                labels: [("tier".to_owned(), "batch".to_owned())].into(),
                ..Default::default()
            }),
            request_id: "big-1".into(),
        })
        .await
        .expect("retried create")
        .into_inner();
    assert_eq!(again.id, op.id);

    // A stale etag is refused; the current one is taken.
    let stale = c
        .update_node_pool(update(
            "living",
            "big",
            replicas(5),
            &["spec.replicas"],
            "\"0\"",
        ))
        .await
        .expect_err("stale etag");
    assert_eq!(stale.code(), tonic::Code::Aborted, "{stale:?}");

    // Scaled to 5, then 1: the VMs follow.
    for n in [5, 1] {
        let etag = pool(&system, "living", "big").await.etag;
        let op = c
            .update_node_pool(update(
                "living",
                "big",
                replicas(n),
                &["spec.replicas"],
                &etag,
            ))
            .await
            .expect("scale")
            .into_inner();
        let done = ended(&system, &op.id).await;
        assert!(succeeded(&done), "scale to {n}: {done:#?}");
        let now = vms(&system, "living", "big").await;
        assert_eq!(
            now.len(),
            usize::try_from(n).unwrap(),
            "scale to {n}: {now:?}"
        );
    }

    // Autoscaling 2..4 replaces the count on the NodePool.
    let auto = pb::NodePoolSpec {
        autoscaling: Some(pb::Autoscaling { min: 2, max: 4 }),
        ..Default::default()
    };
    let op = c
        .update_node_pool(update("living", "big", auto, &["spec.autoscaling"], ""))
        .await
        .expect("autoscale")
        .into_inner();
    let done = ended(&system, &op.id).await;
    assert!(succeeded(&done), "{done:#?}");
    let np = node_pool_object(&system, "living", "big")
        .await
        .expect("NodePool");
    assert!(
        np["spec"].get("replicas").is_none_or(Value::is_null),
        "{np:#}"
    );
    assert_eq!(np["spec"]["autoScaling"]["min"], 2);
    assert_eq!(np["spec"]["autoScaling"]["max"], 4);
    let now = vms(&system, "living", "big").await.len();
    assert!((2..=4).contains(&now), "{now} VMs");

    // Deleted: its VMs, NICs and disks are gone.
    let op = c
        .delete_node_pool(pb::DeleteNodePoolRequest {
            validate_only: false,
            cluster: "living".into(),
            name: "big".into(),
            request_id: "big-delete".into(),
            etag: String::new(),
        })
        .await
        .expect("delete node pool")
        .into_inner();
    let done = ended(&system, &op.id).await;
    assert!(succeeded(&done), "{done:#?}");
    assert!(vms(&system, "living", "big").await.is_empty());
    assert_eq!(nics_and_disks(&system, "living", "big").await, 0);
    assert!(node_pool_object(&system, "living", "big").await.is_none());
    let gone = c
        .get_node_pool(pb::GetNodePoolRequest {
            cluster: "living".into(),
            name: "big".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), tonic::Code::NotFound);

    // The first pool's VMs were never touched.
    assert_eq!(vms(&system, "living", "workers").await, first);

    // Refused before anything is written, each with its field path.
    let newer = c
        .create_node_pool(pb::CreateNodePoolRequest {
            validate_only: false,
            cluster: "living".into(),
            node_pool: Some(pb::NodePoolSpec {
                name: "next".into(),
                replicas: Some(1),
                vm_size: "Standard_D4s_v5".into(),
                release_image: RELEASE.replace("4.21.0", "4.22.0"),
                ..Default::default()
            }),
            request_id: String::new(),
        })
        .await
        .expect_err("a pool newer than its control plane");
    assert_eq!(violations(&newer), ["node_pool.release_image"]);
    let skip = c
        .update_cluster(pb::UpdateClusterRequest {
            validate_only: false,
            cluster: Some(pb::Cluster {
                name: "living".into(),
                spec: Some(pb::ClusterSpec {
                    release_image: RELEASE.replace("4.21.0", "4.23.0"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            update_mask: mask(&["spec.release_image"]),
            request_id: String::new(),
        })
        .await
        .expect_err("a control plane skipping a minor");
    assert_eq!(violations(&skip), ["cluster.spec.release_image"]);
    let vm_size = c
        .update_node_pool(update(
            "living",
            "workers",
            pb::NodePoolSpec {
                vm_size: "Standard_D8s_v5".into(),
                ..Default::default()
            },
            &["spec.vm_size"],
            "",
        ))
        .await
        .expect_err("an immutable field");
    assert_eq!(violations(&vm_size), ["update_mask"]);
    let both = c
        .update_node_pool(update(
            "living",
            "workers",
            pb::NodePoolSpec {
                replicas: Some(3),
                autoscaling: Some(pb::Autoscaling { min: 1, max: 3 }),
                ..Default::default()
            },
            &["spec.replicas", "spec.autoscaling"],
            "",
        ))
        .await
        .expect_err("replicas with autoscaling");
    assert_eq!(violations(&both), ["node_pool.spec.replicas"]);
    let after = system
        .wait_until("acme", "living", "unchanged", |c| phase(c) == "ready")
        .await;
    assert_eq!(
        after
            .status
            .expect("status")
            .operation
            .expect("operation")
            .id,
        op.id,
        "no refused call started an operation"
    );
}

#[tokio::test]
async fn a_scale_over_the_vcpu_quota_is_refused_with_the_arithmetic_and_a_failed_pool_create_leaves_the_cluster_as_it_was()
 {
    let system = System::start().await;
    let mut c = system.client("acme").await;
    system.create("acme", "tight", 1).await;
    let ready = system.watch_to_end("acme", "tight").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let first = vms(&system, "tight", "workers").await;

    // 4 Dsv5 vCPUs left beside the worker: a scale to 3 × Standard_D4s_v5 needs 8.
    system.set_dsv5_quota("acme", 8).await;
    // The scale's preflight refuses it before anything is applied.
    let refused = preflight_refusal(
        c.update_node_pool(update(
            "tight",
            "workers",
            replicas(3),
            &["spec.replicas"],
            "",
        ))
        .await,
    );
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(
        (refused[0].r#type.as_str(), refused[0].subject.as_str()),
        ("QUOTA", "node_pool.spec.replicas")
    );
    assert!(
        refused[0]
            .description
            .contains("need 8 vCPUs, have 4 remaining"),
        "{refused:#?}"
    );
    let cluster = system
        .wait_until("acme", "tight", "ready with what it has", |c| {
            phase(c) == "ready"
        })
        .await;
    assert_eq!(vms(&system, "tight", "workers").await, first);
    let workers = node_pool_object(&system, "tight", "workers")
        .await
        .expect("NodePool");
    assert_eq!(workers["spec"]["replicas"], 1, "nothing was applied");
    drop(cluster);

    // A new pool whose VMs ARM refuses for good: the pool is removed again, the first pool
    // untouched, the cluster ready, the operation failed with Azure's words.
    system
        .arm_admin()
        .clear_quota_limits()
        .await
        .expect("clear quota");
    system
        .arm_admin()
        .add_fault(&hypersaga_emulator_arm::FaultSpec {
            method: "PUT".into(),
            resource_type: "Microsoft.Compute/virtualMachines".into(),
            name_contains: Some("tight-gpu-".into()),
            path_contains: None,
            status: 400,
            code: "InvalidParameter".into(),
            message: Some("injected: the image is not available for this VM size".into()),
            retry_after_secs: None,
            count: None,
        })
        .await
        .expect("fault");
    let op = c
        .create_node_pool(pb::CreateNodePoolRequest {
            validate_only: false,
            cluster: "tight".into(),
            node_pool: Some(pb::NodePoolSpec {
                name: "gpu".into(),
                replicas: Some(1),
                vm_size: "Standard_D4s_v5".into(),
                ..Default::default()
            }),
            request_id: String::new(),
        })
        .await
        .expect("create node pool")
        .into_inner();
    let failed = ended(&system, &op.id).await;
    assert_eq!(
        failed.state,
        pb::OperationState::Failed as i32,
        "{failed:#?}"
    );
    let error = failed.error.clone().expect("error");
    assert!(error.message.contains("InvalidParameter"), "{error:?}");
    let cluster = system
        .wait_until("acme", "tight", "ready again", |c| phase(c) == "ready")
        .await;
    let spec = cluster.spec.expect("spec");
    assert_eq!(spec.node_pools.len(), 1, "the failed pool left the spec");
    assert!(node_pool_object(&system, "tight", "gpu").await.is_none());
    assert!(vms(&system, "tight", "gpu").await.is_empty());
    assert_eq!(vms(&system, "tight", "workers").await, first);
}

#[tokio::test]
async fn a_scale_pauses_and_resumes_survives_kill_9_and_a_delete_supersedes_it() {
    let system = System::start().await;
    let mut c = system.client("acme").await;
    system.create("acme", "steady", 1).await;
    let ready = system.watch_to_end("acme", "steady").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");

    // Out of retries (the management cluster refuses every write of the NodePool), the scale
    // pauses with the reason; once the refusals stop, an operator resumes it.
    system
        .mgmt_admin()
        .add_api_fault(&hypersaga_emulator_mgmt::ApiFault {
            verb: "patch".into(),
            resource: "nodepools".into(),
            name_contains: Some("steady-workers".into()),
            status: 500,
            message: Some("injected".into()),
            retry_after_secs: None,
            count: None,
        })
        .await
        .expect("api fault");
    let op = c
        .update_node_pool(update(
            "steady",
            "workers",
            replicas(2),
            &["spec.replicas"],
            "",
        ))
        .await
        .expect("scale")
        .into_inner();
    let paused = op_until(&system, &op.id, "paused", |s| {
        s == pb::OperationState::Paused
    })
    .await;
    let pause = paused.pause.clone().expect("pause");
    assert_eq!(pause.steps, ["nodepool.workers"], "{paused:#?}");
    let cluster = system
        .wait_until("acme", "steady", "updating while paused", |c| {
            phase(c) == "updating"
        })
        .await;
    drop(cluster);
    system.mgmt_admin().clear_faults().await.expect("clear");
    c.resume_operation(pb::ResumeOperationRequest {
        id: op.id.clone(),
        request_id: "resume-1".into(),
    })
    .await
    .expect("resume");
    let done = ended(&system, &op.id).await;
    assert!(succeeded(&done), "{done:#?}");
    assert_eq!(vms(&system, "steady", "workers").await.len(), 2);

    // kill -9 of the coordinator and the nodepool service while the scale waits on Azure:
    // restarted, the scale ends as if nothing had happened, no VM made twice.
    hold_vms(&system, "steady", "workers").await;
    let op = c
        .update_node_pool(update(
            "steady",
            "workers",
            replicas(3),
            &["spec.replicas"],
            "",
        ))
        .await
        .expect("scale")
        .into_inner();
    applied(&system, "steady", "workers", 3).await;
    let coordinator = system.kill9("coordinator-0");
    let nodepool = system.kill9("nodepool-0");
    system.arm_admin().clear_faults().await.expect("clear");
    let done = ended(&system, &op.id).await;
    assert!(succeeded(&done), "{done:#?}");
    let after = system.pids();
    assert_ne!(after["coordinator-0"], coordinator, "restarted");
    assert_ne!(after["nodepool-0"], nodepool, "restarted");
    assert_eq!(vms(&system, "steady", "workers").await.len(), 3);
    assert_eq!(nics_and_disks(&system, "steady", "workers").await, 6);

    // A delete during a scale supersedes it and removes everything.
    hold_vms(&system, "steady", "workers").await;
    c.update_node_pool(update(
        "steady",
        "workers",
        replicas(4),
        &["spec.replicas"],
        "",
    ))
    .await
    .expect("scale");
    applied(&system, "steady", "workers", 4).await;
    system.delete("acme", "steady").await;
    system.arm_admin().clear_faults().await.expect("clear");
    let deleted = system.watch_to_end("acme", "steady").await;
    assert_eq!(phase(&deleted), "deleted", "{deleted:#?}");
    assert!(vms(&system, "steady", "workers").await.is_empty());
    assert_eq!(nics_and_disks(&system, "steady", "workers").await, 0);
    assert!(
        node_pool_object(&system, "steady", "workers")
            .await
            .is_none()
    );
}

/// An upgrade of the control plane of `cluster` to `image`, against `etag` (empty: none).
fn upgrade(cluster: &str, image: &str, etag: &str) -> pb::UpdateClusterRequest {
    pb::UpdateClusterRequest {
        validate_only: false,
        cluster: Some(pb::Cluster {
            name: cluster.into(),
            etag: etag.into(),
            spec: Some(pb::ClusterSpec {
                release_image: image.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        update_mask: mask(&["spec.release_image"]),
        request_id: uuid::Uuid::new_v4().to_string(),
    }
}

/// Polls the operation until `step` runs.
async fn step_running(system: &System, id: &str, step: &str) {
    let mut c = system.client("acme").await;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let op = c
            .get_operation(pb::GetOperationRequest { id: id.into() })
            .await
            .expect("get operation")
            .into_inner();
        if op
            .steps
            .iter()
            .any(|s| s.id == step && s.state == pb::StepState::Running as i32)
        {
            return;
        }
        assert!(Instant::now() < deadline, "{step} never ran: {op:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_control_plane_then_a_pool_upgrade_with_hypershifts_rules_through_kill_9_and_a_delete_supersedes_an_upgrade()
 {
    let system = System::start().await;
    let mut c = system.client("acme").await;
    system.create("acme", "upgrader", 2).await;
    let ready = system.watch_to_end("acme", "upgrader").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let old_vms = vms(&system, "upgrader", "workers").await;
    let next = RELEASE.replace("4.21.0", "4.22.0");

    // Down is refused before anything is written.
    let down = c
        .update_cluster(upgrade(
            "upgrader",
            &RELEASE.replace("4.21.0", "4.20.5"),
            "",
        ))
        .await
        .expect_err("a downgrade");
    assert_eq!(violations(&down), ["cluster.spec.release_image"]);

    // The control plane to the next minor, through a kill -9 of the coordinator and the
    // controlplane service while the rollout is awaited: the version history completes, the
    // pools stay where they were.
    let op = c
        .update_cluster(upgrade("upgrader", &next, &ready.etag))
        .await
        .expect("upgrade")
        .into_inner();
    assert_eq!(op.kind, pb::OperationKind::UpdateCluster as i32);
    step_running(&system, &op.id, "controlplane.rollout").await;
    system.kill9("coordinator-0");
    system.kill9("controlplane-0");
    let done = ended(&system, &op.id).await;
    assert!(succeeded(&done), "{done:#?}");
    let cluster = system
        .wait_until("acme", "upgrader", "ready after the upgrade", |c| {
            phase(c) == "ready"
        })
        .await;
    let status = cluster.status.clone().expect("status");
    let cp = status.control_plane.clone().expect("control plane");
    assert_eq!(cp.version, "4.22.0", "{cp:#?}");
    assert_eq!(
        (cp.history[0].version.as_str(), cp.history[0].state.as_str()),
        ("4.22.0", "Completed"),
        "{cp:#?}"
    );
    assert!(cp.history.iter().any(|h| h.version == "4.21.0"), "{cp:#?}");
    let spec = cluster.spec.clone().expect("spec");
    assert_eq!(spec.release_image, next);
    assert_eq!(spec.node_pools[0].release_image, RELEASE, "the pool stays");
    let np = node_pool_object(&system, "upgrader", "workers")
        .await
        .expect("NodePool");
    assert_eq!(np["spec"]["release"]["image"], RELEASE);
    assert_eq!(vms(&system, "upgrader", "workers").await, old_vms);

    // The pool: every VM replaced, one new one ready before an old one goes, so the ready
    // nodes never fall below two; through a kill -9 of the nodepool service mid-roll.
    let update_release = pb::NodePoolSpec {
        release_image: next.clone(),
        ..Default::default()
    };
    let op = c
        .update_node_pool(update(
            "upgrader",
            "workers",
            update_release,
            &["spec.release_image"],
            "",
        ))
        .await
        .expect("pool upgrade")
        .into_inner();
    let mut lowest = i64::MAX;
    let mut killed = false;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(np) = node_pool_object(&system, "upgrader", "workers").await
            && np["spec"]["release"]["image"] == next.as_str()
        {
            lowest = lowest.min(np["status"]["replicas"].as_i64().unwrap_or(0));
            if !killed {
                system.kill9("nodepool-0");
                killed = true;
            }
        }
        let op = c
            .get_operation(pb::GetOperationRequest { id: op.id.clone() })
            .await
            .expect("get operation")
            .into_inner();
        if op.state == pb::OperationState::Succeeded as i32 {
            break;
        }
        assert!(
            op.state != pb::OperationState::Failed as i32 && Instant::now() < deadline,
            "{op:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(killed, "the roll was seen");
    assert_eq!(lowest, 2, "ready nodes never fell below the desired two");
    let new_vms = vms(&system, "upgrader", "workers").await;
    assert_eq!(new_vms.len(), 2, "{new_vms:?}");
    assert!(
        new_vms.keys().all(|n| !old_vms.contains_key(n)),
        "every VM replaced: {old_vms:?} → {new_vms:?}"
    );
    let pool = pool(&system, "upgrader", "workers").await;
    assert_eq!(pool.status.expect("status").version, "4.22.0");

    // A delete during an upgrade (its HostedCluster write held by the management cluster)
    // supersedes it and removes everything.
    system
        .mgmt_admin()
        .add_api_fault(&hypersaga_emulator_mgmt::ApiFault {
            verb: "patch".into(),
            resource: "hostedclusters".into(),
            name_contains: Some("upgrader".into()),
            status: 503,
            message: Some("injected".into()),
            retry_after_secs: None,
            count: None,
        })
        .await
        .expect("api fault");
    let op = c
        .update_cluster(upgrade(
            "upgrader",
            &RELEASE.replace("4.21.0", "4.22.1"),
            "",
        ))
        .await
        .expect("z-stream upgrade")
        .into_inner();
    step_running(&system, &op.id, "controlplane.hostedcluster").await;
    system.delete("acme", "upgrader").await;
    system.mgmt_admin().clear_faults().await.expect("clear");
    let deleted = system.watch_to_end("acme", "upgrader").await;
    assert_eq!(phase(&deleted), "deleted", "{deleted:#?}");
    let superseded = ended(&system, &op.id).await;
    assert_eq!(superseded.state, pb::OperationState::Failed as i32);
    assert!(vms(&system, "upgrader", "workers").await.is_empty());
    let objects = system.mgmt_admin().objects().await.expect("objects");
    assert!(
        objects
            .iter()
            .all(|o| o["kind"] != "HostedCluster" && o["kind"] != "NodePool"),
        "nothing left on the management cluster"
    );
}

#[tokio::test]
async fn the_command_line_adds_scales_lists_upgrades_and_removes_as_a_user_would() {
    let system = System::start().await;
    system.create("acme", "cli", 1).await;
    let ready = system.watch_to_end("acme", "cli").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let run = |args: &[&str]| {
        let out = hypersaga(&system, args);
        (out.status.code(), text(&out))
    };

    let (code, out) = run(&[
        "nodepool",
        "create",
        "cli",
        "gpu",
        "--vm-size",
        "Standard_D8s_v5",
        "--replicas",
        "1",
        "--label",
        "tier=gpu",
        "--taint",
        "nvidia.com/gpu=present:NoSchedule",
        "--wait",
    ]);
    assert_eq!(code, Some(0), "{out}");
    // A dry run prints the change's plan and changes nothing.
    let (code, out) = run(&[
        "nodepool",
        "scale",
        "cli",
        "gpu",
        "--replicas",
        "2",
        "--dry-run",
        "-o",
        "json",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let plan: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(plan["steps"][0]["step"], "nodepool.gpu", "{plan:#}");
    assert_eq!(plan["findings"], serde_json::json!([]), "{plan:#}");
    assert_eq!(
        vms(&system, "cli", "gpu").await.len(),
        1,
        "a dry run changes nothing"
    );
    let (code, out) = run(&[
        "nodepool",
        "scale",
        "cli",
        "gpu",
        "--replicas",
        "2",
        "--wait",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(&["nodepool", "list", "cli", "-o", "json"]);
    assert_eq!(code, Some(0), "{out}");
    let pools: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let gpu = pools
        .as_array()
        .and_then(|a| a.iter().find(|p| p["spec"]["name"] == "gpu"))
        .unwrap_or_else(|| panic!("{pools:#}"));
    assert_eq!(gpu["status"]["ready_replicas"], 2, "{gpu:#}");
    assert_eq!(vms(&system, "cli", "gpu").await.len(), 2);

    // A rule broken is refused before anything is written, exit 2, with its field path.
    let (code, out) = run(&[
        "cluster",
        "upgrade",
        "cli",
        "--release-image",
        &RELEASE.replace("4.21.0", "4.23.0"),
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("cluster.spec.release_image"), "{out}");

    let next = RELEASE.replace("4.21.0", "4.22.0");
    let (code, out) = run(&[
        "cluster",
        "upgrade",
        "cli",
        "--release-image",
        &next,
        "--wait",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(&["cluster", "get", "cli", "-o", "json"]);
    assert_eq!(code, Some(0), "{out}");
    let cluster: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        cluster["status"]["control_plane"]["version"], "4.22.0",
        "{cluster:#}"
    );

    let (code, out) = run(&[
        "nodepool",
        "update",
        "cli",
        "gpu",
        "--release-image",
        &next,
        "--wait",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(&["nodepool", "delete", "cli", "gpu", "--wait"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(vms(&system, "cli", "gpu").await.is_empty());
    let (code, out) = run(&["nodepool", "get", "cli", "gpu"]);
    assert_eq!(code, Some(3), "not found: {out}");
}
