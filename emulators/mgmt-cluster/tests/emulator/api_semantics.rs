//! Errors, conflicts, auth, selectors, namespaces and watches.

use std::time::Duration;

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use hypersaga_emulator_mgmt::Config;
use hypersaga_hypershift::HostedCluster;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};

fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    cm
}

fn api_error(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn missing_or_wrong_token_is_401() {
    let h = Harness::fast().await;
    let bad = client_for(&h.url, &h.ca_pem, "wrong").await;
    let err = Api::<Namespace>::all(bad)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn invalid_hosted_cluster_is_422_with_field_causes() {
    let h = Harness::fast().await;
    namespace(&h.client, "v").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "v");
    let mut hc = hosted_cluster("bad", "v");
    hc.spec.services.clear();
    let azure = hc.spec.platform.azure.as_mut().unwrap();
    azure.subnet_id.clear();
    azure
        .azure_authentication_config
        .workload_identities
        .as_mut()
        .unwrap()
        .disk
        .client_id
        .clear();
    let status = api_error(hcs.create(&PostParams::default(), &hc).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let mut causes: Vec<(String, String)> = status
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect();
    causes.sort();
    // Expected from HyperShift's CRD (`services` +required; `subnetID` minLength 1; a
    // workload identity `clientID` is 36 characters matching a UUID pattern) worded as
    // kube-apiserver's `kubeOpenAPIResultToFieldErrors` words kube-openapi's findings.
    // An empty `location` is valid: HyperShift gives it no minimum length. The missing
    // `services` keeps the CEL rules from running, which kube-apiserver notes last
    // (`hasBlockingErr`), with no field.
    let wi = "spec.platform.azure.azureAuthenticationConfig.workloadIdentities.disk.clientID";
    assert_eq!(
        causes,
        [
            (
                String::new(),
                "Invalid value: \"null\": some validation rules were not checked because the \
                 object was invalid; correct the existing errors to complete validation"
                    .to_owned()
            ),
            (
                wi.to_owned(),
                format!("Invalid value: \"\": {wi} in body should be at least 36 chars long")
            ),
            (
                wi.to_owned(),
                format!(
                    "Invalid value: \"\": {wi} in body should match \
                     '^[0-9a-fA-F]{{8}}-([0-9a-fA-F]{{4}}-){{3}}[0-9a-fA-F]{{12}}$'"
                )
            ),
            (
                "spec.platform.azure.subnetID".to_owned(),
                "Invalid value: \"\": spec.platform.azure.subnetID in body should be at least 1 chars long"
                    .to_owned()
            ),
            ("spec.services".to_owned(), "Required value".to_owned()),
        ]
    );
}

#[tokio::test]
async fn create_conflicts_and_missing_namespace() {
    let h = Harness::fast().await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "nope");
    let status = api_error(
        cms.create(&PostParams::default(), &configmap("a", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 404);

    namespace(&h.client, "ns1").await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "ns1");
    let first = cms
        .create(&PostParams::default(), &configmap("a", &[]))
        .await
        .unwrap();
    let status = api_error(
        cms.create(&PostParams::default(), &configmap("a", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );

    // Replace with the current resourceVersion works once; the stale one then conflicts.
    let mut update = first.clone();
    update.data = Some([("k".to_owned(), "v2".to_owned())].into());
    let second = cms
        .replace("a", &PostParams::default(), &update)
        .await
        .unwrap();
    assert_ne!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let status = api_error(
        cms.replace("a", &PostParams::default(), &update)
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
}

#[tokio::test]
async fn list_selectors_and_pagination() {
    let h = Harness::fast().await;
    namespace(&h.client, "sel").await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "sel");
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web"), ("d", "web")] {
        cms.create(&PostParams::default(), &configmap(name, &[("tier", tier)]))
            .await
            .unwrap();
    }
    let web = cms
        .list(&ListParams::default().labels("tier=web"))
        .await
        .unwrap();
    assert_eq!(web.items.len(), 3);
    let one = cms
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);

    let page1 = cms.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(page1.items.len(), 2);
    let token = page1.metadata.continue_.clone().unwrap();
    let page2 = cms
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    let names: Vec<_> = page1
        .items
        .iter()
        .chain(&page2.items)
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn namespace_delete_removes_contents() {
    let h = Harness::fast().await;
    namespace(&h.client, "gone").await;
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), "gone");
    let mut s = Secret::default();
    s.metadata.name = Some("s".into());
    secrets.create(&PostParams::default(), &s).await.unwrap();
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "gone");
    create_hosted_cluster(&hcs, "hc", "gone").await.unwrap();

    let nss: Api<Namespace> = Api::all(h.client.clone());
    nss.delete("gone", &DeleteParams::default()).await.unwrap();
    assert!(secrets.get_opt("s").await.unwrap().is_none());
    // The HostedCluster's finalizer holds the namespace until the operator lets go.
    within("namespace gone", async {
        while nss.get_opt("gone").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(hcs.get_opt("hc").await.unwrap().is_none());
}

#[tokio::test]
async fn runtime_watcher_sees_changes() {
    let h = Harness::fast().await;
    namespace(&h.client, "w").await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "w");
    cms.create(&PostParams::default(), &configmap("before", &[]))
        .await
        .unwrap();

    let mut stream = watcher(cms.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let first = within("initial", stream.try_next()).await.unwrap().unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("before"));
    cms.create(&PostParams::default(), &configmap("after", &[]))
        .await
        .unwrap();
    let second = within("live event", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.metadata.name.as_deref(), Some("after"));
}

#[tokio::test]
async fn raw_watch_bookmarks_and_expiry() {
    let mut config = Config::fast(TOKEN, Duration::from_millis(100));
    config.watch_history = 5;
    config.bookmark_interval = Duration::from_millis(100);
    let h = Harness::start(config).await;
    namespace(&h.client, "rw").await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "rw");
    for i in 0..10 {
        cms.create(&PostParams::default(), &configmap(&format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    // Far behind the kept history: the stream carries a 410 Expired ERROR event.
    let mut old = cms
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    match within("expired", old.try_next()).await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }

    let list = cms.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let wp = WatchParams::default().timeout(2);
    let mut live = cms.watch(&wp, &rv).await.unwrap().boxed();
    match within("bookmark", live.try_next()).await.unwrap() {
        Some(WatchEvent::Bookmark(b)) => assert_eq!(b.metadata.resource_version, rv),
        other => panic!("expected bookmark, got {other:?}"),
    }
    cms.delete("c0", &DeleteParams::default()).await.unwrap();
    loop {
        match within("deleted", live.try_next()).await.unwrap() {
            Some(WatchEvent::Bookmark(_)) => continue,
            Some(WatchEvent::Deleted(cm)) => {
                assert_eq!(cm.metadata.name.as_deref(), Some("c0"));
                break;
            }
            other => panic!("expected DELETED, got {other:?}"),
        }
    }
    // timeoutSeconds ends the stream.
    within("timeout", async {
        while live.try_next().await.unwrap().is_some() {}
    })
    .await;
}

#[tokio::test]
async fn custom_resources_refuse_unconditional_updates() {
    // CRD strategies do not allow unconditional updates: a PUT without the resourceVersion
    // it read is 422 on `metadata.resourceVersion` (`Store.Update` in
    // `apiserver/pkg/registry/generic/registry/store.go`); built-in ConfigMaps allow it.
    let h = Harness::fast().await;
    namespace(&h.client, "put").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "put");
    let mut hc = create_hosted_cluster(&hcs, "hc", "put").await.unwrap();
    hc.metadata.resource_version = None;
    hc.metadata.managed_fields = None;
    let status = api_error(
        hcs.replace("hc", &PostParams::default(), &hc)
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "hostedclusters.hypershift.openshift.io \"hc\" is invalid: metadata.resourceVersion: \
         Invalid value: 0: must be specified for an update"
    );

    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "put");
    cms.create(&PostParams::default(), &configmap("cm", &[]))
        .await
        .unwrap();
    cms.replace("cm", &PostParams::default(), &configmap("cm", &[]))
        .await
        .expect("built-in kinds allow unconditional updates");
}
