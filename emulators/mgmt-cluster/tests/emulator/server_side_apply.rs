//! Server-side apply as several managers see it: field ownership, keyed-list and set merges,
//! conflicts and forcing, the status subresource, and managedFields for plain updates.
//!
//! Expectations come from the Kubernetes documentation of Server-Side Apply
//! (<https://kubernetes.io/docs/reference/using-api/server-side-apply/>: field management,
//! conflicts, merge strategy) and from the code kube-apiserver runs:
//! `sigs.k8s.io/structured-merge-diff/v6` (`merge/update.go`, `typed/merge.go`,
//! `typed/tofieldset.go`) and `k8s.io/apimachinery/pkg/util/managedfields/internal`
//! (`conflict.go`, `managedfieldsupdater.go`, `stripmeta.go`). List types are HyperShift's
//! markers: `HostedClusterStatus.Conditions` is `+listType=map` `+listMapKey=type`;
//! `ObjectMeta.Finalizers` is `+listType=set`.

use std::collections::BTreeMap;

use crate::common::*;
use hypersaga_hypershift::HostedCluster;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const HC_API: &str = "hypershift.openshift.io/v1beta1";

fn condition(type_: &str, status: &str) -> Value {
    json!({"type": type_, "status": status, "reason": "AsExpected", "message": "",
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

/// A status-only apply configuration carrying `conditions`.
fn status_config(name: &str, conditions: &[Value]) -> Value {
    json!({"apiVersion": HC_API, "kind": "HostedCluster",
           "metadata": {"name": name},
           "status": {"conditions": conditions}})
}

fn condition_types(hc: &HostedCluster) -> Vec<String> {
    let mut types: Vec<String> = hc
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .map(|c| c.type_.clone())
        .collect();
    types.sort();
    types
}

/// Conditions written by the simulated operator, which these tests leave alone.
const OPERATOR_CONDITIONS: [&str; 13] = [
    "Available",
    "ClusterVersionAvailable",
    "ClusterVersionProgressing",
    "ClusterVersionReleaseAccepted",
    "ClusterVersionSucceeding",
    "ClusterVersionUpgradeable",
    "Degraded",
    "PlatformCredentialsFound",
    "Progressing",
    "ReconciliationSucceeded",
    "SupportedHostedCluster",
    "ValidConfiguration",
    "ValidReleaseImage",
];

fn applied_condition_types(hc: &HostedCluster) -> Vec<String> {
    condition_types(hc)
        .into_iter()
        .filter(|t| !OPERATOR_CONDITIONS.contains(&t.as_str()))
        .collect()
}

async fn created_hosted_cluster(h: &Harness, ns: &str, name: &str) -> Api<HostedCluster> {
    namespace(&h.client, ns).await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), ns);
    create_hosted_cluster(&hcs, name, ns)
        .await
        .expect("HostedCluster created");
    hcs
}

#[tokio::test]
async fn two_managers_applying_different_conditions_keep_both() {
    // "listType=map: ... Merge with items of the other managers by key" (SSA docs, merge
    // strategy); `typed/merge.go` merges keyed items one by one.
    let h = quiet().await;
    let hcs = created_hosted_cluster(&h, "conds", "hc").await;

    hcs.patch_status(
        "hc",
        &PatchParams::apply("dns-checker"),
        &Patch::Apply(status_config(
            "hc",
            &[condition("ExternalDNSReachable", "True")],
        )),
    )
    .await
    .unwrap();
    let hc = hcs
        .patch_status(
            "hc",
            &PatchParams::apply("config-validator"),
            &Patch::Apply(status_config(
                "hc",
                &[condition("IgnitionEndpointAvailable", "True")],
            )),
        )
        .await
        .unwrap();

    assert_eq!(
        applied_condition_types(&hc),
        ["ExternalDNSReachable", "IgnitionEndpointAvailable"]
    );
    // Each applier owns exactly its own item, recorded as `k:{"type":...}` in fieldsV1,
    // through the `status` subresource.
    let obj = serde_json::to_value(&hc).unwrap();
    let dns = managed_entry(&obj, "dns-checker", "Apply", "status").expect("dns-checker entry");
    let owned = &dns["fieldsV1"]["f:status"]["f:conditions"];
    assert!(
        owned.get("k:{\"type\":\"ExternalDNSReachable\"}").is_some(),
        "{owned}"
    );
    assert!(
        owned
            .get("k:{\"type\":\"IgnitionEndpointAvailable\"}")
            .is_none(),
        "{owned}"
    );
    assert_eq!(dns["apiVersion"], HC_API);
    assert_eq!(dns["fieldsType"], "FieldsV1");
    assert!(dns["time"].as_str().is_some_and(|t| t.ends_with('Z')));
}

#[tokio::test]
async fn removing_a_condition_from_one_managers_apply_removes_only_that_one() {
    // "If you remove a field from a manifest and apply that manifest, Server-Side Apply
    // checks if there are any other field managers that also own the field. If the field is
    // not owned by any other field managers, it is either deleted from the live object ..."
    // (SSA docs, field management; `Updater.prune` in `merge/update.go`).
    let h = quiet().await;
    let hcs = created_hosted_cluster(&h, "prune", "hc").await;
    let a = PatchParams::apply("manager-a");
    let b = PatchParams::apply("manager-b");
    hcs.patch_status(
        "hc",
        &a,
        &Patch::Apply(status_config(
            "hc",
            &[
                condition("ExternalDNSReachable", "True"),
                condition("IgnitionEndpointAvailable", "True"),
            ],
        )),
    )
    .await
    .unwrap();
    hcs.patch_status(
        "hc",
        &b,
        &Patch::Apply(status_config(
            "hc",
            &[condition("IgnitionEndpointAvailable", "True")],
        )),
    )
    .await
    .unwrap();

    let hc = hcs
        .patch_status(
            "hc",
            &a,
            &Patch::Apply(status_config(
                "hc",
                &[condition("ExternalDNSReachable", "True")],
            )),
        )
        .await
        .unwrap();
    assert_eq!(
        applied_condition_types(&hc),
        ["ExternalDNSReachable", "IgnitionEndpointAvailable"],
        "only manager-a's dropped item goes"
    );
    // A manager sharing an item keeps it alive: b applies a's item too, then a drops it.
    hcs.patch_status(
        "hc",
        &b,
        &Patch::Apply(status_config(
            "hc",
            &[
                condition("IgnitionEndpointAvailable", "True"),
                condition("ExternalDNSReachable", "True"),
            ],
        )),
    )
    .await
    .unwrap();
    let hc = hcs
        .patch_status("hc", &a, &Patch::Apply(status_config("hc", &[])))
        .await
        .unwrap();
    assert_eq!(
        applied_condition_types(&hc),
        ["ExternalDNSReachable", "IgnitionEndpointAvailable"],
        "still owned by manager-b"
    );
}

#[tokio::test]
async fn finalizers_added_by_two_managers_are_a_set() {
    // `metadata.finalizers` is `+listType=set` (ObjectMeta): applied values merge, each
    // owned as `v:"<value>"`; a manager dropping its value removes only that value.
    let h = quiet().await;
    namespace(&h.client, "fins").await;
    let secret = |finalizers: &[&str]| {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "s", "finalizers": finalizers},
               "data": {"k": "dg=="}})
    };
    let created = h
        .raw(
            "PATCH",
            "/api/v1/namespaces/fins/secrets/s?fieldManager=one",
            "application/apply-patch+yaml",
            secret(&["example.com/one"]).to_string(),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let both = h
        .raw(
            "PATCH",
            "/api/v1/namespaces/fins/secrets/s?fieldManager=two",
            "application/apply-patch+yaml",
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s", "finalizers": ["example.com/two"]}})
            .to_string(),
        )
        .await;
    assert_eq!(both.status, 200, "{}", both.body);
    assert_eq!(
        both.body["metadata"]["finalizers"],
        json!(["example.com/one", "example.com/two"])
    );
    let two = managed_entry(&both.body, "two", "Apply", "").unwrap();
    assert_eq!(
        two["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"example.com/two\"": {}}}})
    );

    let after = h
        .raw(
            "PATCH",
            "/api/v1/namespaces/fins/secrets/s?fieldManager=one",
            "application/apply-patch+yaml",
            secret(&[]).to_string(),
        )
        .await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(
        after.body["metadata"]["finalizers"],
        json!(["example.com/two"])
    );
}

#[tokio::test]
async fn conflicting_apply_is_409_unless_forced_and_force_moves_ownership() {
    // "fields that have a different value and are owned by another manager will result in a
    // conflict ... Writes ... can be forced, in which case the value of any conflicted field
    // will be overridden, and the ownership will be transferred" (SSA docs, conflicts).
    // The Status comes from `NewConflictError`/`NewApplyConflict`: 409, reason Conflict,
    // one `FieldManagerConflict` cause per field naming the manager.
    let h = quiet().await;
    namespace(&h.client, "conflict").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "conflict");
    let owner = PatchParams::apply("hypersaga");
    hcs.patch(
        "hc",
        &owner,
        &Patch::Apply(hosted_cluster("hc", "conflict")),
    )
    .await
    .unwrap();

    let takeover = json!({"apiVersion": HC_API, "kind": "HostedCluster",
        "metadata": {"name": "hc"},
        "spec": {"release": {"image": "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"}}});
    let refused = h
        .raw(
            "PATCH",
            "/apis/hypershift.openshift.io/v1beta1/namespaces/conflict/hostedclusters/hc?fieldManager=upgrader",
            "application/apply-patch+yaml",
            takeover.to_string(),
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Conflict");
    assert_eq!(
        refused.body["message"],
        "Apply failed with 1 conflict: conflict with \"hypersaga\": .spec.release.image"
    );
    assert_eq!(
        refused.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"hypersaga\"",
                "field": ".spec.release.image"}])
    );
    let unchanged = hcs.get("hc").await.unwrap();
    assert_eq!(
        unchanged.spec.release.image, IMAGE,
        "a conflict changes nothing"
    );

    // Applying the same value is not a conflict: the two managers share the field.
    let same = json!({"apiVersion": HC_API, "kind": "HostedCluster", "metadata": {"name": "hc"},
                      "spec": {"infraID": "hc-abcde"}});
    hcs.patch("hc", &PatchParams::apply("upgrader"), &Patch::Apply(same))
        .await
        .expect("shared ownership");

    let forced = hcs
        .patch(
            "hc",
            &PatchParams::apply("upgrader").force(),
            &Patch::Apply(takeover),
        )
        .await
        .unwrap();
    assert!(forced.spec.release.image.ends_with("4.20.0-x86_64"));
    let obj = serde_json::to_value(&forced).unwrap();
    let upgrader = managed_entry(&obj, "upgrader", "Apply", "").unwrap();
    assert!(upgrader["fieldsV1"]["f:spec"]["f:release"]["f:image"].is_object());
    let hypersaga = managed_entry(&obj, "hypersaga", "Apply", "").unwrap();
    assert!(
        hypersaga["fieldsV1"]["f:spec"]["f:release"]
            .get("f:image")
            .is_none(),
        "ownership moved: {}",
        hypersaga["fieldsV1"]
    );
    // The same intent from the old owner now conflicts the other way round.
    let back = hcs
        .patch(
            "hc",
            &owner_without_force(),
            &Patch::Apply(hosted_cluster("hc", "conflict")),
        )
        .await
        .unwrap_err();
    match back {
        kube::Error::Api(s) => assert_eq!(
            s.details.unwrap().causes[0].message,
            "conflict with \"upgrader\""
        ),
        other => panic!("expected 409, got {other:?}"),
    }
}

fn owner_without_force() -> PatchParams {
    PatchParams::apply("hypersaga")
}

#[tokio::test]
async fn status_subresource_and_main_resource_apply_are_separate() {
    // CRD strategies reset `status` on the main resource and everything but `status` on
    // `/status` (`GetResetFields`, `PrepareForUpdate` in apiextensions' customresource
    // strategy), and those fields are never owned through that endpoint.
    let h = quiet().await;
    namespace(&h.client, "split").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "split");
    let mut with_status = serde_json::to_value(hosted_cluster("hc", "split")).unwrap();
    with_status["status"] =
        json!({"conditions": [condition("IgnitionEndpointAvailable", "False")]});
    let created = hcs
        .patch(
            "hc",
            &PatchParams::apply("hypersaga"),
            &Patch::Apply(with_status),
        )
        .await
        .unwrap();
    assert!(
        applied_condition_types(&created).is_empty(),
        "main-resource apply ignores status"
    );
    let obj = serde_json::to_value(&created).unwrap();
    let entry = managed_entry(&obj, "hypersaga", "Apply", "").unwrap();
    assert!(entry["fieldsV1"].get("f:status").is_none());

    let status_apply = json!({"apiVersion": HC_API, "kind": "HostedCluster",
        "metadata": {"name": "hc", "labels": {"sneaky": "yes"}},
        "spec": {"infraID": "changed"},
        "status": {"conditions": [condition("IgnitionEndpointAvailable", "True")]}});
    let after = hcs
        .patch_status(
            "hc",
            &PatchParams::apply("hypersaga"),
            &Patch::Apply(status_apply),
        )
        .await
        .unwrap();
    assert_eq!(after.spec.infra_id, "hc-abcde", "status apply leaves spec");
    let labels = after.metadata.labels.clone().unwrap_or_default();
    assert!(
        !labels.contains_key("sneaky"),
        "status apply leaves metadata"
    );
    assert_eq!(
        applied_condition_types(&after),
        ["IgnitionEndpointAvailable"]
    );
    assert_eq!(
        after.metadata.generation,
        Some(1),
        "status writes keep generation"
    );
}

#[tokio::test]
async fn plain_writes_are_recorded_as_update_operations() {
    // Create, update and merge patch record `operation: Update` under the request's
    // fieldManager (or the user agent's product token), with the apiVersion written
    // (`buildmanagerinfo.go`); only fields the write changed are taken.
    let h = quiet().await;
    namespace(&h.client, "updates").await;
    let created = h
        .raw(
            "POST",
            "/api/v1/namespaces/updates/configmaps?fieldManager=creator",
            "application/json",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                   "data": {"a": "1"}})
            .to_string(),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let creator = managed_entry(&created.body, "creator", "Update", "").unwrap();
    assert_eq!(creator["apiVersion"], "v1");
    assert_eq!(creator["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));

    let patched = h
        .raw(
            "PATCH",
            "/api/v1/namespaces/updates/configmaps/cm?fieldManager=editor",
            "application/merge-patch+json",
            json!({"data": {"b": "2"}, "metadata": {"labels": {"l": "v"}}}).to_string(),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let editor = managed_entry(&patched.body, "editor", "Update", "").unwrap();
    assert_eq!(
        editor["fieldsV1"],
        json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}}})
    );
    let creator = managed_entry(&patched.body, "creator", "Update", "").unwrap();
    assert_eq!(creator["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));

    // Changing a field another updater set moves it without a conflict (updates are forced).
    let taken = h
        .raw(
            "PATCH",
            "/api/v1/namespaces/updates/configmaps/cm?fieldManager=editor",
            "application/merge-patch+json",
            json!({"data": {"a": "changed"}}).to_string(),
        )
        .await;
    assert_eq!(taken.status, 200);
    let creator = managed_entry(&taken.body, "creator", "Update", "").unwrap();
    assert_eq!(creator["fieldsV1"], json!({"f:data": {}}));
}

#[tokio::test]
async fn reapplying_the_same_intent_writes_nothing() {
    // A no-op apply leaves the object, its resourceVersion and the manager's time alone
    // (`managedFieldsUpdater.Apply`: the time moves only when the object changed).
    let h = quiet().await;
    namespace(&h.client, "noop").await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(h.client.clone(), "noop");
    let mut s = k8s_openapi::api::core::v1::Secret::default();
    s.metadata.name = Some("s".into());
    s.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
    s.type_ = Some("Opaque".into());
    let pp = PatchParams::apply("hypersaga").force();
    let first = secrets.patch("s", &pp, &Patch::Apply(&s)).await.unwrap();
    let again = secrets.patch("s", &pp, &Patch::Apply(&s)).await.unwrap();
    assert_eq!(
        first.metadata.resource_version,
        again.metadata.resource_version
    );
    assert_eq!(first.metadata.managed_fields, again.metadata.managed_fields);
}

#[tokio::test]
async fn apply_requires_a_field_manager() {
    // `ValidatePatchOptions`: fieldManager is required for apply patch → 422 on
    // PatchOptions.meta.k8s.io.
    let h = quiet().await;
    namespace(&h.client, "nomgr").await;
    let reply = h
        .raw(
            "PATCH",
            "/api/v1/namespaces/nomgr/configmaps/cm",
            "application/apply-patch+yaml",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
                .to_string(),
        )
        .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
}

#[tokio::test]
async fn controller_updates_are_recorded_per_subresource() {
    // A controller writing with updates (HyperShift's operator uses controller-runtime's
    // Update and Status().Update, manager = its binary name) owns what it changed, as
    // `operation: Update`, separately for the main resource and `status`
    // (`BuildManagerIdentifier` keys on subresource).
    let h = Harness::fast().await;
    let hcs = created_hosted_cluster(&h, "ctrl", "hc").await;
    let hc = within(
        "operator status",
        kube::runtime::wait::await_condition(hcs.clone(), "hc", |o: Option<&HostedCluster>| {
            o.is_some_and(|hc| hc.metadata.finalizers.is_some() && hc.status.is_some())
        }),
    )
    .await
    .unwrap()
    .unwrap();
    let obj = serde_json::to_value(&hc).unwrap();
    let main = managed_entry(&obj, "hypershift-operator", "Update", "").expect("finalizer entry");
    assert_eq!(
        main["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"hypershift.openshift.io/finalizer\"": {}}}})
    );
    assert_eq!(main["apiVersion"], HC_API);
    let status =
        managed_entry(&obj, "hypershift-operator", "Update", "status").expect("status entry");
    let conditions = &status["fieldsV1"]["f:status"]["f:conditions"];
    assert!(
        conditions.get("k:{\"type\":\"Available\"}").is_some(),
        "{conditions}"
    );
    // The creator (kube-rs sends no fieldManager and no user agent) is `unknown`.
    assert!(managed_entry(&obj, "unknown", "Update", "").is_some());
}
