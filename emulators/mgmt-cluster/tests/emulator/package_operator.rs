//! Package Operator and hosted clusters, as the product will use them: a HostedCluster's
//! own API from its `service-network-admin-kubeconfig`, ObjectDeployments whose phases go
//! to the hosted cluster or stay on the management cluster, in order.

use std::time::Duration;

use crate::common::*;
use hypersaga_hypershift::{HostedCluster, NodePool};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

const CP: &str = "clusters-demo";

/// A management cluster with HostedCluster `clusters/demo` Available, a ready node, and a
/// client for its hosted cluster built from `service-network-admin-kubeconfig`.
async fn cluster() -> (Harness, kube::Client) {
    let h = Harness::start(hypersaga_emulator_mgmt::Config::fast(
        TOKEN,
        Duration::from_millis(100),
    ))
    .await;
    namespace(&h.client, "clusters").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    create_hosted_cluster(&hcs, "demo", "clusters")
        .await
        .unwrap();
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    nps.create(
        &PostParams::default(),
        &node_pool("demo-workers", "clusters", "demo", 1),
    )
    .await
    .unwrap();
    within(
        "HostedCluster Available",
        await_condition(hcs, "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::is_available)
        }),
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), CP);
    let secret = within("kubeconfig secret", async {
        loop {
            if let Ok(s) = secrets.get("service-network-admin-kubeconfig").await {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let yaml = secret.data.unwrap()["kubeconfig"].0.clone();
    let kubeconfig = Kubeconfig::from_yaml(&String::from_utf8(yaml).unwrap()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert!(config.cluster_url.path().ends_with("/hosted/clusters-demo"));
    let hosted = kube::Client::try_from(config).unwrap();
    (h, hosted)
}

fn resource(group: &str, version: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

fn object_deployments(client: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        CP,
        &resource("package-operator.run", "v1alpha1", "ObjectDeployment"),
    )
}

fn phase(name: &str, class: Option<&str>, objects: Vec<Value>) -> Value {
    let mut p = json!({"name": name, "objects": objects.into_iter().map(|o| json!({"object": o})).collect::<Vec<_>>()});
    if let Some(c) = class {
        p["class"] = json!(c);
    }
    p
}

fn deployment(name: &str, selector: &str, label: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": selector}},
            "template": {"metadata": {"labels": {"app": label}},
                "spec": {"containers": [{"name": "operator", "image": "quay.io/example/addon:v1"}]}}}})
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "addon"},
        "data": {"key": name}})
}

/// The add-on: RBAC in the hosted cluster, its operator on the management cluster, then its
/// configuration in the hosted cluster.
fn addon(version: &str, deploy: Value, configs: &[&str]) -> Value {
    json!({
        "apiVersion": "package-operator.run/v1alpha1", "kind": "ObjectDeployment",
        "metadata": {"name": "addon", "namespace": CP},
        "spec": {
            "selector": {"matchLabels": {"addon": "demo"}},
            "template": {
                "metadata": {"labels": {"addon": "demo", "version": version}},
                "spec": {
                    "phases": [
                        // PKO dry-runs every object of a phase before applying any: a
                        // namespaced object cannot share a phase with its new Namespace.
                        phase("namespaces", Some("hosted-cluster"), vec![
                            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "addon"}}),
                        ]),
                        phase("rbac", Some("hosted-cluster"), vec![
                            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                "metadata": {"name": "addon-reader"},
                                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
                            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                                "metadata": {"name": "addon", "namespace": "addon"}}),
                            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                "metadata": {"name": "addon", "namespace": "addon"},
                                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "addon-reader"},
                                "subjects": [{"kind": "ServiceAccount", "name": "addon", "namespace": "addon"}]}),
                        ]),
                        phase("deploy", None, vec![deploy]),
                        phase("configure", Some("hosted-cluster"),
                            configs.iter().map(|c| config_map(c)).collect()),
                    ],
                    "availabilityProbes": [{
                        "selector": {"kind": {"group": "apps", "kind": "Deployment"}},
                        "probes": [
                            {"condition": {"type": "Available", "status": "True"}},
                            {"fieldsEqual": {"fieldA": ".status.updatedReplicas", "fieldB": ".status.replicas"}}
                        ]
                    }]
                }
            }
        }
    })
}

fn condition<'a>(obj: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    obj.data
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// `Available=True` at the current generation: what the product waits for.
fn available(o: Option<&DynamicObject>) -> bool {
    o.and_then(|o| Some((condition(o, "Available")?, o.metadata.generation?)))
        .is_some_and(|(c, generation)| {
            c["status"] == "True" && c["observedGeneration"] == generation
        })
}

async fn apply(api: &Api<DynamicObject>, obj: &Value) {
    api.patch(
        "addon",
        &PatchParams::apply("product").force(),
        &Patch::Apply(obj),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn phases_roll_out_in_order_across_clusters_and_upgrade() {
    let (h, hosted) = cluster().await;
    let ods = object_deployments(&h.client);
    apply(
        &ods,
        &addon(
            "1",
            deployment("addon-operator", "addon", "addon"),
            &["addon-config"],
        ),
    )
    .await;
    let od = within(
        "ObjectDeployment Available",
        await_condition(ods.clone(), "addon", available),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(od.data["status"]["revision"], 1);
    assert_eq!(condition(&od, "Progressing").unwrap()["reason"], "Idle");

    // Phases 1 and 3 went to the hosted cluster, phase 2 stayed on the management cluster.
    let hosted_cms: Api<ConfigMap> = Api::namespaced(hosted.clone(), "addon");
    let cm = hosted_cms.get("addon-config").await.unwrap();
    let owners = &cm.metadata.annotations.as_ref().unwrap()["package-operator.run/owners"];
    assert!(owners.contains("\"kind\":\"ObjectSetPhase\""), "{owners}");
    let hosted_objects = h.admin.hosted_objects(CP).await.unwrap();
    for (kind, name) in [
        ("Namespace", "addon"),
        ("ClusterRole", "addon-reader"),
        ("ServiceAccount", "addon"),
        ("RoleBinding", "addon"),
    ] {
        assert!(
            hosted_objects
                .iter()
                .any(|o| o["kind"] == kind && o["metadata"]["name"] == name),
            "{kind} {name}"
        );
    }
    assert!(!hosted_objects.iter().any(|o| o["kind"] == "Deployment"));
    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), CP);
    let d = deployments.get("addon-operator").await.unwrap();
    let labels = d.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["package-operator.run/cache"], "True");
    assert_eq!(
        d.metadata.annotations.as_ref().unwrap()["package-operator.run/revision"],
        "1"
    );
    let became_available = d
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Available")
        .unwrap()
        .last_transition_time
        .clone()
        .unwrap()
        .0;
    let created = cm.metadata.creation_timestamp.unwrap().0;
    assert!(
        created >= became_available,
        "phase 3 ({created}) before phase 2 was available ({became_available})"
    );
    assert_eq!(
        h.admin.hosted_apis().await.unwrap()[CP],
        "/hosted/clusters-demo"
    );

    // Version 2: a new revision adopts the objects, drops one, and archives revision 1.
    apply(
        &ods,
        &addon(
            "2",
            deployment("addon-operator", "addon", "addon"),
            &["addon-settings"],
        ),
    )
    .await;
    let od = within(
        "revision 2 Available",
        await_condition(ods.clone(), "addon", |o: Option<&DynamicObject>| {
            available(o) && o.is_some_and(|o| o.data["status"]["revision"] == 2)
        }),
    )
    .await
    .unwrap()
    .unwrap();
    let sets: Api<DynamicObject> = Api::namespaced_with(
        h.client.clone(),
        CP,
        &resource("package-operator.run", "v1alpha1", "ObjectSet"),
    );
    let hash = od.data["status"]["templateHash"]
        .as_str()
        .unwrap()
        .to_owned();
    within("revision 1 archived and its ConfigMap gone", async {
        loop {
            let list = sets.list(&Default::default()).await.unwrap();
            let archived = list.items.iter().any(|s| {
                s.data["spec"]["revision"] == 1
                    && condition(s, "Archived").is_some_and(|c| c["status"] == "True")
            });
            if archived && hosted_cms.get_opt("addon-config").await.unwrap().is_none() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(hosted_cms.get("addon-settings").await.is_ok());
    let d = deployments.get("addon-operator").await.unwrap();
    let controller = d
        .metadata
        .owner_references
        .unwrap()
        .into_iter()
        .find(|r| r.controller == Some(true))
        .unwrap();
    assert_eq!(controller.name, format!("addon-{hash}"));
    assert_eq!(
        d.metadata.annotations.unwrap()["package-operator.run/revision"],
        "2"
    );

    // Deleting the ObjectDeployment tears its objects down on both clusters.
    ods.delete("addon", &DeleteParams::foreground())
        .await
        .unwrap();
    within("ObjectDeployment gone with its objects", async {
        loop {
            let gone = ods.get_opt("addon").await.unwrap().is_none()
                && deployments
                    .get_opt("addon-operator")
                    .await
                    .unwrap()
                    .is_none()
                && hosted_cms
                    .get_opt("addon-settings")
                    .await
                    .unwrap()
                    .is_none()
                && sets
                    .list(&Default::default())
                    .await
                    .unwrap()
                    .items
                    .is_empty();
            if gone {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let left = h.admin.hosted_objects(CP).await.unwrap();
    assert!(
        !left.iter().any(|o| o["metadata"]["name"] == "addon-reader"),
        "ClusterRole torn down"
    );

    // Deleting the HostedCluster takes its API with it.
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.delete("demo", &DeleteParams::default()).await.unwrap();
    let gone = within("hosted API gone", async {
        loop {
            match hosted_cms.list(&Default::default()).await {
                Err(kube::Error::Api(e)) if e.code == 404 => return e,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await;
    assert_eq!(gone.code, 404);
    assert!(h.admin.hosted_objects(CP).await.is_err());
}

#[tokio::test]
async fn a_refused_object_stops_the_rollout_at_its_phase() {
    let (h, hosted) = cluster().await;
    let ods = object_deployments(&h.client);
    apply(
        &ods,
        &addon("1", deployment("bad", "addon", "other"), &["addon-config"]),
    )
    .await;
    let od = within(
        "refusal reported",
        await_condition(ods.clone(), "addon", |o: Option<&DynamicObject>| {
            o.and_then(|o| condition(o, "Progressing"))
                .is_some_and(|c| {
                    c["message"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("is invalid")
                })
        }),
    )
    .await
    .unwrap()
    .unwrap();
    let progressing = condition(&od, "Progressing").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        progressing.starts_with("Latest Revision is Unavailable: Phase \"deploy\", Deployment clusters-demo/bad: Deployment.apps \"bad\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`"),
        "{progressing}"
    );
    let available = condition(&od, "Available").unwrap();
    assert_eq!(available["status"], "False");
    assert_eq!(available["message"], "No ObjectSet is available.");
    // Phase 1 is in the hosted cluster; phase 3 never was applied.
    let hosted_cms: Api<ConfigMap> = Api::namespaced(hosted, "addon");
    assert!(hosted_cms.get_opt("addon-config").await.unwrap().is_none());
    let objects = h.admin.hosted_objects(CP).await.unwrap();
    assert!(objects.iter().any(|o| o["kind"] == "ClusterRole"));
}
