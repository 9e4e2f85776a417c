//! Fault injection through the admin API.

mod common;

use std::time::Duration;

use common::*;
use hypersaga_emulator_mgmt::admin_client::{Fault, FaultKind};
use hypersaga_hypershift::{HostedCluster, NodePool};
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;

#[tokio::test]
async fn hosted_cluster_fault_is_refused_input_until_cleared() {
    let h = Harness::fast().await;
    namespace(&h.client, "f").await;
    h.admin
        .inject_fault(&Fault {
            kind: FaultKind::HostedCluster,
            condition: None,
            name_contains: Some("bad".into()),
            reason: "InvalidConfiguration".into(),
            message: "the signing key is not a valid RSA key".into(),
        })
        .await
        .unwrap();
    assert_eq!(h.admin.faults().await.unwrap().len(), 1);
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "f");
    hcs.create(&PostParams::default(), &hosted_cluster("bad-one", "f"))
        .await
        .unwrap();
    hcs.create(&PostParams::default(), &hosted_cluster("good-one", "f"))
        .await
        .unwrap();

    // Refused as HyperShift refuses input: the condition is False, the reconcile blocked.
    let bad = within(
        "refused",
        await_condition(hcs.clone(), "bad-one", |o: Option<&HostedCluster>| {
            o.and_then(|hc| hc.condition("ValidConfiguration"))
                .is_some_and(|c| c.status == "False")
        }),
    )
    .await
    .unwrap()
    .unwrap();
    let valid = bad.condition("ValidConfiguration").unwrap();
    assert_eq!(
        (valid.reason.as_str(), valid.message.as_str()),
        (
            "InvalidConfiguration",
            "the signing key is not a valid RSA key"
        )
    );
    let progressing = bad.condition("Progressing").unwrap();
    assert_eq!(progressing.reason, "Blocked");
    assert!(
        progressing
            .message
            .starts_with("ValidConfiguration condition is false")
    );
    within(
        "good available",
        await_condition(hcs.clone(), "good-one", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::is_available)
        }),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !hcs.get("bad-one").await.unwrap().is_available(),
        "faulted cluster never becomes available"
    );

    h.admin.clear_faults().await.unwrap();
    within(
        "recovered",
        await_condition(hcs.clone(), "bad-one", |o: Option<&HostedCluster>| {
            o.is_some_and(|hc| hc.is_available() && !hc.is_degraded())
        }),
    )
    .await
    .unwrap();
    let objects = h.admin.objects().await.unwrap();
    assert!(
        objects
            .iter()
            .any(|o| o["metadata"]["name"] == "bad-one-admin-kubeconfig")
    );
}

#[tokio::test]
async fn node_pool_fault_keeps_it_unready() {
    let h = Harness::fast().await;
    namespace(&h.client, "g").await;
    h.emulator.inject_fault(Fault {
        kind: FaultKind::NodePool,
        condition: None,
        name_contains: None,
        reason: "QuotaExceeded".into(),
        message: "not enough cores".into(),
    });
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "g");
    hcs.create(&PostParams::default(), &hosted_cluster("hc", "g"))
        .await
        .unwrap();
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "g");
    nps.create(&PostParams::default(), &node_pool("np", "g", "hc", 2))
        .await
        .unwrap();
    let np = within(
        "fault reported",
        await_condition(nps.clone(), "np", |o: Option<&NodePool>| {
            o.and_then(|np| np.condition("Ready"))
                .is_some_and(|c| c.reason == "QuotaExceeded")
        }),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(np.ready_replicas(), 0);
    assert!(!np.is_ready());
}
