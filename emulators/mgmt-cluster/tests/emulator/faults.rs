//! Fault injection through the admin API.

use std::time::Duration;

use crate::common::*;
use hypersaga_emulator_mgmt::admin_client::{ApiFault, Fault, FaultKind};
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
    create_hosted_cluster(&hcs, "bad-one", "f").await.unwrap();
    create_hosted_cluster(&hcs, "good-one", "f").await.unwrap();

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
    create_hosted_cluster(&hcs, "hc", "g").await.unwrap();
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

#[tokio::test]
async fn the_api_answers_an_injected_error_as_kube_apiserver_does_then_serves_again() {
    let h = quiet().await;
    namespace(&h.client, "api").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "api");
    create_hosted_cluster(&hcs, "busy", "api").await.unwrap();
    h.admin
        .add_api_fault(&ApiFault {
            verb: "get".into(),
            resource: "hostedclusters".into(),
            name_contains: Some("busy".into()),
            status: 429,
            message: None,
            retry_after_secs: Some(2),
            count: Some(1),
        })
        .await
        .unwrap();
    h.admin
        .add_api_fault(&ApiFault {
            verb: "patch".into(),
            resource: "hostedclusters".into(),
            name_contains: None,
            status: 403,
            message: None,
            retry_after_secs: None,
            count: None,
        })
        .await
        .unwrap();

    // Shedding load: 429 TooManyRequests with Retry-After, once, then served.
    let shed = h
        .request(
            "GET",
            "/apis/hypershift.openshift.io/v1beta1/namespaces/api/hostedclusters/busy",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(shed.status, 429);
    assert_eq!(shed.header("retry-after"), "2");
    let status = shed.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["details"]["retryAfterSeconds"], 2);
    assert_eq!(
        hcs.get("busy").await.unwrap().metadata.name.as_deref(),
        Some("busy")
    );

    // RBAC refusing a verb: 403 Forbidden, worded as kube-apiserver words it, until removed.
    let refused = hcs
        .patch(
            "busy",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(e) = refused else {
        panic!("not an API error: {refused:?}");
    };
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(
        e.message.contains("\"busy\" is forbidden") && e.message.contains("cannot patch"),
        "{}",
        e.message
    );
    let listed = h.admin.api_faults().await.unwrap();
    assert_eq!(listed.len(), 1, "the 429 was used up: {listed:?}");
    assert_eq!(listed[0].hits, 1);

    // Removing the faults of one scope leaves the others; clearing removes all.
    h.admin
        .add_api_fault(&ApiFault {
            verb: "*".into(),
            resource: "*".into(),
            name_contains: Some("busy".into()),
            status: 503,
            message: None,
            retry_after_secs: None,
            count: None,
        })
        .await
        .unwrap();
    assert_eq!(h.admin.remove_faults("busy").await.unwrap(), 1);
    assert_eq!(
        h.admin.api_faults().await.unwrap().len(),
        1,
        "the 403 stays"
    );
    h.admin.clear_faults().await.unwrap();
    assert!(h.admin.api_faults().await.unwrap().is_empty());
    hcs.patch(
        "busy",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"a": "b"}}})),
    )
    .await
    .expect("served once the fault is gone");
}
