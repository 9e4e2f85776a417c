//! HostedCluster and NodePool lifecycle through the real kube-rs client.

use std::collections::BTreeMap;

use crate::common::*;
use hypersaga_hypershift::{HYPERSHIFT_FINALIZER, HostedCluster, NodePool};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions::is_deleted};
use serde_json::json;

#[tokio::test]
async fn hosted_cluster_and_node_pool_converge_and_delete() {
    let h = Harness::fast().await;
    namespace(&h.client, "clusters").await;

    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), "clusters");
    let mut pull = Secret::default();
    pull.metadata.name = Some("demo-pull-secret".into());
    pull.string_data = Some(BTreeMap::from([(
        ".dockerconfigjson".to_owned(),
        "{}".to_owned(),
    )]));
    let stored = secrets.create(&PostParams::default(), &pull).await.unwrap();
    assert!(
        stored.data.unwrap().contains_key(".dockerconfigjson"),
        "stringData folded into data"
    );

    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    let created = hcs
        .create(&PostParams::default(), &hosted_cluster("demo", "clusters"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());

    let hc = within(
        "HostedCluster Available",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::is_available)
        }),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        hc.metadata
            .finalizers
            .as_ref()
            .unwrap()
            .iter()
            .any(|f| f == HYPERSHIFT_FINALIZER)
    );
    let endpoint = hc.control_plane_endpoint().unwrap();
    assert!(endpoint.host.starts_with("10."));
    assert_eq!(endpoint.port, 7443);
    assert_eq!(hc.kubeconfig_secret(), Some("demo-admin-kubeconfig"));
    // HyperShift's version history comes from the guest cluster's ClusterVersion, which
    // completes only on nodes (`hypershift create cluster --wait` needs replicas > 0).
    assert!(!hc.rollout_completed());
    assert_eq!(hc.condition("ValidReleaseImage").unwrap().status, "True");
    // The control plane's own namespace, `<namespace>-<name>`.
    let namespaces: Api<Namespace> = Api::all(h.client.clone());
    assert!(namespaces.get("clusters-demo").await.is_ok());
    let kubeconfig = secrets.get("demo-admin-kubeconfig").await.unwrap();
    assert!(kubeconfig.data.unwrap().contains_key("kubeconfig"));

    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    nps.create(
        &PostParams::default(),
        &node_pool("demo-workers", "clusters", "demo", 2),
    )
    .await
    .unwrap();
    let np = within(
        "NodePool ready",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.is_some_and(|np| np.ready_replicas() == 2)
        }),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(np.is_ready());
    assert_eq!(
        np.status.as_ref().unwrap().version.as_deref(),
        Some("4.19.0")
    );
    for c in ["Ready", "AllMachinesReady", "AllNodesHealthy"] {
        assert!(np.condition(c).unwrap().is_true(), "{c}");
    }
    let hc = within(
        "the rollout to complete on the nodes",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::rollout_completed)
        }),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(hc.condition("Degraded").unwrap().status, "False");

    // Scale: a spec change bumps generation and converges again.
    let scaled = nps
        .patch(
            "demo-workers",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));
    within(
        "NodePool scaled",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.is_some_and(|np| np.ready_replicas() == 3 && np.is_ready())
        }),
    )
    .await
    .unwrap();

    // Deleting the HostedCluster takes its NodePools with it, after the finalizer delay.
    let uid = hc.metadata.uid.clone().unwrap();
    let marked = hcs.delete("demo", &DeleteParams::default()).await.unwrap();
    let marked = marked.left().expect("object kept while finalizer remains");
    assert!(marked.metadata.deletion_timestamp.is_some());
    within(
        "HostedCluster gone",
        await_condition(hcs.clone(), "demo", is_deleted(&uid)),
    )
    .await
    .unwrap();
    assert!(nps.get_opt("demo-workers").await.unwrap().is_none());
    // Its control plane's namespace went first (it may still be terminating).
    let cp = namespaces.get_opt("clusters-demo").await.unwrap();
    assert!(
        cp.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the control plane namespace outlived its HostedCluster"
    );

    let counts = h.admin.requests().await.unwrap();
    assert!(
        counts.get("create hostedclusters").copied() == Some(1),
        "{counts:?}"
    );
}

#[tokio::test]
async fn node_pool_waits_for_its_hosted_cluster() {
    let h = Harness::fast().await;
    namespace(&h.client, "c1").await;
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "c1");
    nps.create(
        &PostParams::default(),
        &node_pool("early", "c1", "later", 1),
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let np = nps.get("early").await.unwrap();
    assert_eq!(np.ready_replicas(), 0);
    assert_eq!(
        np.condition("Ready").unwrap().reason,
        "WaitingForAvailableHostedCluster"
    );

    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "c1");
    create_hosted_cluster(&hcs, "later", "c1").await.unwrap();
    within(
        "NodePool ready after HC",
        await_condition(nps.clone(), "early", |o: Option<&NodePool>| {
            o.is_some_and(NodePool::is_ready)
        }),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn server_side_apply_creates_then_merges() {
    let h = Harness::fast().await;
    namespace(&h.client, "ssa").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "ssa");
    let pp = PatchParams::apply("hypersaga-controlplane").force();
    let mut hc = hosted_cluster("applied", "ssa");
    hc.metadata.labels = Some(BTreeMap::from([("team".to_owned(), "a".to_owned())]));
    let first = hcs.patch("applied", &pp, &Patch::Apply(&hc)).await.unwrap();
    assert_eq!(first.metadata.generation, Some(1));

    // Re-applying the same intent is a no-op: same resourceVersion once the operator settled.
    within(
        "finalizer added",
        await_condition(hcs.clone(), "applied", |o: Option<&HostedCluster>| {
            o.is_some_and(|o| o.metadata.finalizers.is_some())
        }),
    )
    .await
    .unwrap();
    let before = hcs.get("applied").await.unwrap();
    let mut intent = hosted_cluster("applied", "ssa");
    intent.metadata.labels = Some(BTreeMap::from([("team".to_owned(), "a".to_owned())]));
    let again = hcs
        .patch("applied", &pp, &Patch::Apply(&intent))
        .await
        .unwrap();
    assert_eq!(again.metadata.generation, Some(1));
    assert!(
        again.metadata.finalizers.is_some(),
        "apply keeps fields it does not mention"
    );

    // Changing the spec bumps generation; the operator's status stays.
    intent.spec.release.image = "quay.io/openshift-release-dev/ocp-release:4.19.1-x86_64".into();
    let changed = hcs
        .patch("applied", &pp, &Patch::Apply(&intent))
        .await
        .unwrap();
    assert_eq!(changed.metadata.generation, Some(2));
    assert_eq!(
        changed.status,
        before.status.clone().or(changed.status.clone())
    );

    // Missing fieldManager is refused.
    let err = hcs
        .patch("applied", &PatchParams::default(), &Patch::Apply(&intent))
        .await;
    assert!(err.is_err());
}

#[tokio::test]
async fn status_subresource_is_separate_from_spec() {
    let h = Harness::fast().await;
    namespace(&h.client, "st").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "st");
    create_hosted_cluster(&hcs, "s", "st").await.unwrap();
    // A main-resource write carrying status does not change status...
    let patched = hcs
        .patch("s", &PatchParams::default(), &Patch::Merge(json!({"status": {"kubeconfig": {"name": "forged"}}, "metadata": {"labels": {"x": "y"}}})))
        .await
        .unwrap();
    assert_ne!(patched.kubeconfig_secret(), Some("forged"));
    // ...and a status write does not change spec.
    let status = hcs
        .patch_status("s", &PatchParams::default(), &Patch::Merge(json!({"spec": {"infraID": "forged"}, "status": {"ignitionEndpoint": "ign.example"}})))
        .await
        .unwrap();
    assert_eq!(status.spec.infra_id, "s-abcde");
    assert_eq!(
        status.status.unwrap().ignition_endpoint.as_deref(),
        Some("ign.example")
    );
}

/// HyperShift reads the pull secret before it looks the release up: without it the
/// HostedCluster reports `ValidReleaseImage=False` (`SecretNotFound`, in HyperShift's words)
/// and does not come up; once the secret is there, the next reconcile clears it.
#[tokio::test]
async fn a_missing_pull_secret_blocks_the_cluster_until_it_is_there() {
    let h = Harness::fast().await;
    namespace(&h.client, "nopull").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "nopull");
    hcs.create(&PostParams::default(), &hosted_cluster("lost", "nopull"))
        .await
        .unwrap();
    let refused = within(
        "ValidReleaseImage False",
        await_condition(hcs.clone(), "lost", |o: Option<&HostedCluster>| {
            o.and_then(|hc| hc.condition("ValidReleaseImage"))
                .is_some_and(|c| c.status == "False")
        }),
    )
    .await
    .unwrap()
    .unwrap();
    let c = refused.condition("ValidReleaseImage").unwrap();
    assert_eq!(c.reason, "SecretNotFound");
    assert_eq!(
        c.message,
        "failed to get pull secret: secrets \"lost-pull-secret\" not found"
    );
    assert!(!refused.is_available());

    pull_secret(&h.client, "nopull", "lost").await;
    within(
        "Available once the secret is there",
        await_condition(hcs.clone(), "lost", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::is_available)
        }),
    )
    .await
    .unwrap();
}
