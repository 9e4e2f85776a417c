//! Add-ons: a platform team's extension put in the catalog, rolled out on a new cluster by
//! Package Operator in phases across the management and the hosted cluster, moved to a new
//! version by a rollout, removed, put back and deleted with the cluster; and one whose second
//! phase the API server refuses, failing its create with Package Operator's message.
//!
//! What a user sees is checked the way a user sees it: `kubectl` against the management
//! cluster, and against the hosted cluster with the kubeconfig HyperShift writes to
//! `service-network-admin-kubeconfig`.

use std::path::Path;
use std::process::Command;

use hypersaga_api::v1 as pb;
use hypersaga_api::v1::addon_service_client::AddonServiceClient;
use serde_json::Value;

use crate::support::*;

/// Phase 1 makes the hosted cluster's namespace and cluster-wide RBAC; phase 2 the forwarder
/// next to the control plane; phase 3 the configuration inside the hosted cluster (objects of
/// the namespace phase 1 made: Package Operator dry-runs a phase whole before applying it).
fn logging(version: &str) -> String {
    format!(
        r#"
name: logging
version: "{version}"
description: log forwarding for every hosted cluster
phases:
- name: namespace-and-rbac
  class: hosted-cluster
  objects:
  - object: {{apiVersion: v1, kind: Namespace, metadata: {{name: logging}}}}
  - object:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      metadata: {{name: log-reader}}
      rules: [{{apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}}]
  - object:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRoleBinding
      metadata: {{name: log-reader}}
      roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: log-reader}}
      subjects: [{{kind: ServiceAccount, name: collector, namespace: logging}}]
- name: forwarder
  objects:
  - object:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: log-forwarder, labels: {{app: log-forwarder}}}}
      spec:
        replicas: 1
        selector: {{matchLabels: {{app: log-forwarder}}}}
        template:
          metadata: {{labels: {{app: log-forwarder}}}}
          spec: {{containers: [{{name: forwarder, image: "quay.io/example/forwarder:{version}"}}]}}
- name: configure
  class: hosted-cluster
  objects:
  - object: {{apiVersion: v1, kind: ServiceAccount, metadata: {{name: collector, namespace: logging}}}}
  - object:
      apiVersion: v1
      kind: ConfigMap
      metadata: {{name: pipeline, namespace: logging}}
      data: {{version: "{version}"}}
"#
    )
}

/// Its second phase's Deployment selects pods its template does not label: the API server
/// refuses it, so Package Operator never gets past that phase.
const BROKEN: &str = r#"
name: broken
version: "1"
phases:
- name: config
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: before, namespace: default}}
- name: operator
  objects:
  - object:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: operator}
      spec:
        selector: {matchLabels: {app: operator}}
        template:
          metadata: {labels: {app: other}}
          spec: {containers: [{name: operator, image: quay.io/example/operator:1}]}
- name: after
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: after, namespace: default}}
"#;

/// `kubectl --kubeconfig <kubeconfig> <args>`: its stdout, or the test fails with what it said.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl_json(kubeconfig: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&kubectl(kubeconfig, &all)).expect("kubectl json")
}

/// The names of the objects `kubectl get <what>` lists.
fn names(kubeconfig: &Path, args: &[&str]) -> Vec<String> {
    kubectl_json(kubeconfig, args)["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// The hosted cluster's kubeconfig, read from the Secret HyperShift writes in the control
/// plane's namespace, into a file of the test's own.
fn hosted_kubeconfig(system: &System, mgmt: &Path, cp_namespace: &str) -> std::path::PathBuf {
    let text = kubectl(
        mgmt,
        &[
            "get",
            "secret",
            "service-network-admin-kubeconfig",
            "-n",
            cp_namespace,
            "-o",
            r#"go-template={{index .data "kubeconfig" | base64decode}}"#,
        ],
    );
    let path = system.dir.path().join(format!("{cp_namespace}.kubeconfig"));
    std::fs::write(&path, text).expect("write the hosted kubeconfig");
    path
}

fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

fn rfc3339(v: &Value) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(
        v.as_str().expect("a time"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("rfc3339")
}

/// The cluster's control-plane namespace on the management cluster (`<ns>-<name>`).
fn control_plane_namespace(c: &pb::Cluster) -> String {
    let infra = &c.status.as_ref().expect("status").infra_id;
    format!("{}-{}", namespace("acme", infra), c.name)
}

async fn last_operation(system: &System, name: &str) -> pb::Operation {
    let mut acme = system.client("acme").await;
    acme.get_cluster(pb::GetClusterRequest { name: name.into() })
        .await
        .expect("get")
        .into_inner()
        .status
        .and_then(|s| s.operation)
        .expect("an operation")
}

async fn wait_operation(system: &System, name: &str, kind: pb::OperationKind) -> pb::Operation {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let op = last_operation(system, name).await;
        let done = [
            pb::OperationState::Succeeded as i32,
            pb::OperationState::Failed as i32,
            pb::OperationState::Paused as i32,
        ];
        if op.kind == kind as i32 && done.contains(&op.state) {
            return op;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name}: no {kind:?} ended in time: {op:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

fn with_addon(name: &str, addon: &str) -> pb::CreateClusterRequest {
    let mut req = create_request(name, 1);
    if let Some(spec) = req.spec.as_mut() {
        spec.addons.push(pb::ClusterAddon {
            name: addon.into(),
            ..Default::default()
        });
    }
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_addon_rolls_out_in_phases_across_both_clusters_changes_version_and_goes_with_its_cluster()
 {
    let system = System::start().await;
    let mgmt = system.endpoints.kubeconfig.clone();
    let mut addons = AddonServiceClient::new(system.channel().await);
    let put = |document: String| {
        let mut req = tonic::Request::new(pb::PutAddonRequest { document, scope: 0 });
        let token = format!("Bearer {}", system.token("acme"));
        req.metadata_mut()
            .insert("authorization", token.parse().expect("header"));
        req
    };
    addons
        .put_addon(put(logging("1")))
        .await
        .expect("put logging 1");
    addons
        .put_addon(put(BROKEN.into()))
        .await
        .expect("put broken");

    let mut acme = system.client("acme").await;
    acme.create_cluster(with_addon("logs", "logging"))
        .await
        .expect("create logs");
    acme.create_cluster(with_addon("refused", "broken"))
        .await
        .expect("create refused");

    // The add-on is part of the create: ready only once Package Operator says it is available.
    let logs = system.watch_to_end("acme", "logs").await;
    assert_eq!(phase(&logs), "ready", "{logs:?}");
    let spec_addons = &logs.spec.as_ref().expect("spec").addons;
    assert_eq!(spec_addons.len(), 1);
    assert_eq!(
        (
            spec_addons[0].name.as_str(),
            spec_addons[0].version.as_str()
        ),
        ("logging", "1"),
        "the version is pinned at the create"
    );
    assert_eq!(
        steps(&logs)
            .get("controlplane.addon.logging")
            .map(|s| s.0.as_str()),
        Some("succeeded")
    );
    let cp = control_plane_namespace(&logs);
    let od = kubectl_json(&mgmt, &["get", "objectdeployment", "logging", "-n", &cp]);
    let available = condition(&od, "Available");
    assert_eq!(available["status"], "True", "{od:#}");
    let ready_at = system
        .audit_events("acme", "logs")
        .await
        .into_iter()
        .find(|e| e["type"] == "cluster.ready")
        .map(|e| rfc3339(&e["time"]))
        .expect("cluster.ready");
    assert!(
        rfc3339(&available["lastTransitionTime"]) <= ready_at,
        "ready before the add-on was available"
    );

    // Phases 1 and 3 in the hosted cluster, phase 2 next to the control plane.
    let hosted = hosted_kubeconfig(&system, &mgmt, &cp);
    assert!(names(&hosted, &["get", "namespaces"]).contains(&"logging".to_owned()));
    assert_eq!(
        names(
            &hosted,
            &[
                "get",
                "clusterrolebindings",
                "--field-selector",
                "metadata.name=log-reader"
            ]
        ),
        ["log-reader"]
    );
    assert_eq!(
        names(&hosted, &["get", "configmaps", "-n", "logging"]),
        ["pipeline"]
    );
    assert_eq!(
        names(&hosted, &["get", "serviceaccounts", "-n", "logging"]),
        ["collector"]
    );
    assert!(
        names(&hosted, &["get", "deployments", "-A"]).is_empty(),
        "the forwarder runs on the management cluster"
    );
    let forwarder = kubectl_json(&mgmt, &["get", "deployment", "log-forwarder", "-n", &cp]);
    assert_eq!(
        names(
            &mgmt,
            &[
                "get",
                "configmaps",
                "-n",
                &cp,
                "--field-selector",
                "metadata.name=pipeline"
            ]
        ),
        Vec::<String>::new(),
        "the configuration is the hosted cluster's"
    );
    // Phase 3 was not applied before phase 2 was available.
    let forwarder_available = rfc3339(&condition(&forwarder, "Available")["lastTransitionTime"]);
    let pipeline = kubectl_json(&hosted, &["get", "configmap", "pipeline", "-n", "logging"]);
    assert!(
        rfc3339(&pipeline["metadata"]["creationTimestamp"]) >= forwarder_available,
        "phase 3 made {} before phase 2 was available at {forwarder_available}",
        pipeline["metadata"]["creationTimestamp"]
    );
    // What Package Operator's types define, as kubectl shows it.
    let table = kubectl(&mgmt, &["get", "objectdeployments", "-A"]);
    assert!(
        table
            .lines()
            .any(|l| l.contains(&cp) && l.contains("logging") && l.contains("True")),
        "{table}"
    );
    let described = kubectl(
        &mgmt,
        &["describe", "objectdeployment", "logging", "-n", &cp],
    );
    for phase in [
        "namespace-and-rbac",
        "forwarder",
        "configure",
        "hosted-cluster",
        "Available",
    ] {
        assert!(
            described.contains(phase),
            "describe lacks {phase}:\n{described}"
        );
    }

    // The refused add-on fails its create at its step, with Package Operator's words, and
    // the create is compensated.
    let refused = system.watch_to_end("acme", "refused").await;
    assert_eq!(phase(&refused), "failed", "{refused:?}");
    let op = refused
        .status
        .as_ref()
        .and_then(|s| s.operation.as_ref())
        .expect("op");
    let error = op.error.as_ref().expect("an error");
    assert_eq!(error.code, "AddonRefused", "{error:?}");
    assert_eq!(error.step, "controlplane.addon.broken");
    assert!(
        error
            .message
            .contains("`selector` does not match template `labels`"),
        "{}",
        error.message
    );
    assert!(
        !system
            .mgmt_admin()
            .hosted_apis()
            .await
            .expect("hosted apis")
            .keys()
            .any(|h| h.contains("refused")),
        "the compensated cluster's hosted API is gone"
    );

    // Version 2 reaches the cluster through a rollout of the add-on.
    addons
        .put_addon(put(logging("2")))
        .await
        .expect("put logging 2");
    let rollout = acme
        .create_rollout(pb::CreateRolloutRequest {
            addon: Some(pb::ClusterAddon {
                name: "logging".into(),
                version: "2".into(),
                ..Default::default()
            }),
            request_id: "logging-2".into(),
            ..Default::default()
        })
        .await
        .expect("rollout")
        .into_inner();
    assert_eq!(
        rollout
            .clusters
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["logs"],
        "only the clusters carrying the add-on"
    );
    let op = wait_operation(&system, "logs", pb::OperationKind::UpdateAddon).await;
    assert_eq!(op.state, pb::OperationState::Succeeded as i32, "{op:?}");
    assert_eq!(op.addon, "logging");
    let pipeline = kubectl_json(&hosted, &["get", "configmap", "pipeline", "-n", "logging"]);
    assert_eq!(pipeline["data"]["version"], "2");
    let forwarder = kubectl_json(&mgmt, &["get", "deployment", "log-forwarder", "-n", &cp]);
    assert_eq!(
        forwarder
            .pointer("/spec/template/spec/containers/0/image")
            .and_then(Value::as_str),
        Some("quay.io/example/forwarder:2")
    );
    let events = system.audit_events("acme", "logs").await;
    let updated = events
        .iter()
        .find(|e| e["type"] == "addon.updating")
        .expect("addon.updating");
    assert_eq!(updated["detail"]["spec"]["version"], "2", "{updated}");
    assert!(events.iter().any(|e| e["type"] == "addon.updated"));

    // Removing it removes its objects from both clusters.
    acme.remove_cluster_addon(pb::RemoveClusterAddonRequest {
        cluster: "logs".into(),
        addon: "logging".into(),
        ..Default::default()
    })
    .await
    .expect("remove");
    let op = wait_operation(&system, "logs", pb::OperationKind::RemoveAddon).await;
    assert_eq!(op.state, pb::OperationState::Succeeded as i32, "{op:?}");
    assert!(!names(&hosted, &["get", "namespaces"]).contains(&"logging".to_owned()));
    assert!(
        names(
            &hosted,
            &[
                "get",
                "clusterroles",
                "--field-selector",
                "metadata.name=log-reader"
            ]
        )
        .is_empty()
    );
    assert!(names(&mgmt, &["get", "deployments", "-n", &cp]).is_empty());
    assert!(names(&mgmt, &["get", "objectdeployments", "-n", &cp]).is_empty());
    let logs = system.watch_to_end("acme", "logs").await;
    assert!(logs.spec.as_ref().expect("spec").addons.is_empty());

    // Put back, then the cluster deleted: everything goes, the hosted API included.
    acme.set_cluster_addon(pb::SetClusterAddonRequest {
        cluster: "logs".into(),
        addon: Some(pb::ClusterAddon {
            name: "logging".into(),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .expect("set");
    let op = wait_operation(&system, "logs", pb::OperationKind::AddAddon).await;
    assert_eq!(op.state, pb::OperationState::Succeeded as i32, "{op:?}");
    assert_eq!(
        kubectl_json(&hosted, &["get", "configmap", "pipeline", "-n", "logging"])["data"]["version"],
        "2",
        "the newest version"
    );
    system.delete("acme", "logs").await;
    let gone = system.watch_to_end("acme", "logs").await;
    assert_eq!(phase(&gone), "deleted", "{gone:?}");
    let steps = steps(&gone);
    assert_eq!(
        steps
            .get("controlplane.addon.logging")
            .map(|s| s.0.as_str()),
        Some("compensated"),
        "{steps:?}"
    );
    assert!(
        !system
            .mgmt_admin()
            .hosted_apis()
            .await
            .expect("hosted apis")
            .keys()
            .any(|h| h.contains(&cp)),
        "the hosted cluster's API is gone with it"
    );
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&hosted)
        .args(["get", "namespaces"])
        .output()
        .expect("kubectl");
    assert!(!out.status.success(), "the hosted API still answers");
}
