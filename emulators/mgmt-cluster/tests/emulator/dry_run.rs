//! `dryRun=All`: the request is validated and admitted in full and answered with the
//! object it would produce, but nothing is stored, no watch event is sent and the
//! resourceVersion does not move.
//!
//! From the Kubernetes API concepts documentation ("Dry-run": "the request is still
//! processed as a typical request: fields are defaulted, the object is validated, it goes
//! through the validation admission chain ... but the final storage to the storage backend
//! is not performed"), and `apiserver/pkg/registry/generic/registry/dryrun.go`
//! (`DryRunnableStorage`: a dry-run create returns the object before storage, without a
//! resourceVersion; a dry-run update returns the would-be object; a dry-run delete checks
//! the preconditions and returns the object).

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use hypersaga_hypershift::HostedCluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    cm
}

async fn list_rv(cms: &Api<ConfigMap>) -> String {
    cms.list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let h = quiet().await;
    namespace(&h.client, "dry").await;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "dry");
    let existing = cms
        .create(&PostParams::default(), &configmap("existing"))
        .await
        .unwrap();
    let rv = list_rv(&cms).await;
    let mut events = cms
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();

    let dry_post = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let would_be = cms.create(&dry_post, &configmap("new")).await.unwrap();
    assert!(would_be.metadata.uid.is_some(), "a full create was run");
    assert!(would_be.metadata.creation_timestamp.is_some());
    assert_eq!(would_be.metadata.resource_version, None);
    assert!(
        would_be.metadata.managed_fields.is_some(),
        "managedFields are computed too"
    );
    assert!(cms.get_opt("new").await.unwrap().is_none());

    // Validation and admission still run: an invalid name is refused in a dry run.
    let err = cms
        .create(&dry_post, &configmap("Not_Valid"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );

    let dry_patch = PatchParams::default().dry_run();
    let patched = cms
        .patch(
            "existing",
            &dry_patch,
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["k"], "changed", "the would-be object");
    assert_eq!(
        patched.metadata.resource_version, existing.metadata.resource_version,
        "resourceVersion unchanged"
    );
    let applied = cms
        .patch(
            "existing",
            &PatchParams::apply("hypersaga").dry_run(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "existing"}, "data": {"other": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap().len(), 2);
    let created_by_apply = cms
        .patch(
            "applied",
            &PatchParams::apply("hypersaga").dry_run(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "applied"}})),
        )
        .await
        .unwrap();
    assert!(created_by_apply.metadata.uid.is_some());
    assert!(cms.get_opt("applied").await.unwrap().is_none());

    let mut replaced = existing.clone();
    replaced.data = Some([("k".to_owned(), "replaced".to_owned())].into());
    cms.replace("existing", &dry_post, &replaced).await.unwrap();

    let deleted = cms
        .delete("existing", &DeleteParams::default().dry_run())
        .await
        .unwrap();
    assert!(deleted.left().is_some(), "answered with the object");

    let stored = cms.get("existing").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "v");
    assert_eq!(
        stored.metadata.resource_version,
        existing.metadata.resource_version
    );
    assert_eq!(list_rv(&cms).await, rv, "the resourceVersion did not move");

    // The watch saw none of it: its first event is the next real write.
    cms.create(&PostParams::default(), &configmap("real"))
        .await
        .unwrap();
    let first = within("watch event", async {
        loop {
            match events.try_next().await.unwrap() {
                Some(WatchEvent::Bookmark(_)) => continue,
                other => return other,
            }
        }
    })
    .await;
    match first {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.metadata.name.as_deref(), Some("real")),
        other => panic!("expected the real create first, got {other:?}"),
    }
}

#[tokio::test]
async fn dry_run_delete_of_a_finalized_object_keeps_it() {
    let h = quiet().await;
    namespace(&h.client, "dryfin").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "dryfin");
    create_hosted_cluster(&hcs, "hc", "dryfin").await.unwrap();
    within(
        "operator finalizer",
        kube::runtime::wait::await_condition(hcs.clone(), "hc", |o: Option<&HostedCluster>| {
            o.is_some_and(|hc| hc.metadata.finalizers.is_some())
        }),
    )
    .await
    .unwrap();
    let marked = hcs
        .delete("hc", &DeleteParams::default().dry_run())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert!(
        marked.metadata.deletion_timestamp.is_some(),
        "the would-be marked object"
    );
    let stored = hcs.get("hc").await.unwrap();
    assert!(stored.metadata.deletion_timestamp.is_none());
}
