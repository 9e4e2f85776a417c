//! A delete issued while the create is still running supersedes it — at whatever point the
//! create is — and ends `deleted` with nothing left but what a delete keeps.

use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_emulator_mgmt::admin_client::{Fault, FaultKind};

use crate::support::*;

/// Nothing of `name` is left on the management cluster, nor in Azure but the tenant's
/// identity group (kept for its other clusters).
async fn nothing_left(system: &System, infra_id: &str) {
    let objects = system.mgmt_admin().objects().await.unwrap();
    let ns = crate::support::namespace("acme", infra_id);
    assert!(
        !objects
            .iter()
            .any(|o| o["metadata"]["namespace"] == ns || o["metadata"]["name"] == ns),
        "left on the management cluster: {objects:#?}"
    );
    for r in system.resource_names("acme").await {
        assert!(outlives_clusters(&r), "left in Azure: {r}");
    }
}

/// Deletes `name` (which must be accepted, not refused) and follows it to `deleted`.
async fn delete_and_follow(system: &System, name: &str) -> pb::Cluster {
    let op = system.delete("acme", name).await;
    assert_eq!(op.kind, pb::OperationKind::Delete as i32);
    system.watch_to_end("acme", name).await
}

async fn audit_kinds(system: &System, cluster: &str) -> Vec<String> {
    system
        .audit_events("acme", cluster)
        .await
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_delete_during_a_create_supersedes_it_at_any_point() {
    let system = System::start().await;

    // 1. Before anything ran: the delete is accepted at once, the create stops.
    let created = system.create("acme", "early", 1).await;
    let gone = delete_and_follow(&system, "early").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    let infra = gone.status.as_ref().unwrap().infra_id.clone();
    nothing_left(&system, &infra).await;
    // Either the coordinator had built the create (which then ends superseded), or the delete
    // came first and the create was recorded as never built: the delete starts from it
    // (`operation.released`) in both cases.
    let kinds = audit_kinds(&system, "early").await;
    assert!(
        kinds.iter().any(|k| k == "operation.superseding")
            || kinds.iter().any(|k| k == "operation.released"),
        "{kinds:?}"
    );
    assert_ne!(
        created.id,
        gone.status.unwrap().operation.unwrap().id,
        "the delete is its own operation"
    );

    // 2. While it waits on a node pool that never gets ready: the wait is cancelled at once.
    system
        .mgmt_admin()
        .inject_fault(&Fault {
            kind: FaultKind::NodePool,
            condition: None,
            name_contains: Some("waiting".into()),
            reason: "ScalingDown".into(),
            message: "nodes are not joining".into(),
        })
        .await
        .unwrap();
    system.create("acme", "waiting", 1).await;
    system
        .wait_until("acme", "waiting", "the node pool step to wait", |c| {
            c.status
                .as_ref()
                .and_then(|s| s.operation.as_ref())
                .is_some_and(|o| {
                    o.steps
                        .iter()
                        .any(|s| s.id == "nodepool.workers" && s.waiting_since.is_some())
                })
        })
        .await;
    let gone = delete_and_follow(&system, "waiting").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    nothing_left(&system, &gone.status.unwrap().infra_id).await;
    let kinds = audit_kinds(&system, "waiting").await;
    assert!(
        kinds.iter().any(|k| k == "step.cancelled"),
        "the wait was cancelled: {kinds:?}"
    );
    assert!(
        kinds.iter().any(|k| k == "operation.superseded"),
        "{kinds:?}"
    );
    system.mgmt_admin().clear_faults().await.unwrap();

    // 3. While a service holds a step and says nothing: the create stops once the step's
    // lease lapses, the delete then waits for the service to come back, and finishes.
    let frozen = system.stop("network-0");
    system.create("acme", "held", 1).await;
    system
        .wait_until("acme", "held", "a network step to be dispatched", |c| {
            steps(c)
                .get("network.resource-groups")
                .is_some_and(|(s, _)| s == "running")
        })
        .await;
    system.delete("acme", "held").await;
    let deadline = Instant::now() + TIMEOUT;
    while !audit_kinds(&system, "held")
        .await
        .iter()
        .any(|k| k == "operation.superseded")
    {
        assert!(Instant::now() < deadline, "the create never stopped");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    frozen.cont();
    let gone = system.watch_to_end("acme", "held").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    nothing_left(&system, &gone.status.unwrap().infra_id).await;
}
