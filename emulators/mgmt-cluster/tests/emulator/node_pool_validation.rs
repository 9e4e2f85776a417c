//! NodePool writes the API server refuses, as HyperShift's CRD declares its rules and as
//! kube-apiserver answers: `422 Invalid`, the message naming each field, and
//! `status.details.causes` with `FieldValueInvalid`, the field path and the rule's message.
//! Nothing refused is stored.

use crate::common::*;
use serde_json::{Value, json};

const NPS: &str = "/apis/hypershift.openshift.io/v1beta1/namespaces/npv/nodepools";

fn pool(name: &str) -> Value {
    serde_json::to_value(node_pool(name, "npv", "demo", 2)).expect("json")
}

/// `(field, message)` of each cause of a 422 answer.
fn causes(reply: &Reply) -> Vec<(String, String)> {
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(reply.body["kind"], "Status");
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(reply.body["details"]["kind"], "NodePool");
    assert_eq!(reply.body["details"]["group"], "hypershift.openshift.io");
    reply.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            assert_eq!(c["reason"], "FieldValueInvalid", "{c}");
            (
                c["field"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

async fn create(h: &Harness, body: &Value) -> Reply {
    h.raw("POST", NPS, "application/json", body.to_string())
        .await
}

async fn merge(h: &Harness, name: &str, patch: Value) -> Reply {
    h.raw(
        "PATCH",
        &format!("{NPS}/{name}"),
        "application/merge-patch+json",
        patch.to_string(),
    )
    .await
}

#[tokio::test]
async fn replicas_and_autoscaling_bounds_are_refused_on_create() {
    let h = quiet().await;
    namespace(&h.client, "npv").await;

    let mut both = pool("both");
    both["spec"]["autoScaling"] = json!({"min": 1, "max": 3});
    let reply = create(&h, &both).await;
    assert_eq!(
        causes(&reply),
        [(
            "spec".to_owned(),
            "Invalid value: \"object\": Both replicas or autoScaling should not be set".to_owned()
        )]
    );
    assert_eq!(
        reply.body["message"],
        "NodePool.hypershift.openshift.io \"both\" is invalid: spec: Invalid value: \"object\": \
         Both replicas or autoScaling should not be set"
    );

    let mut inverted = pool("inverted");
    inverted["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("replicas");
    inverted["spec"]["autoScaling"] = json!({"min": 3, "max": 2});
    assert_eq!(
        causes(&create(&h, &inverted).await),
        [(
            "spec.autoScaling".to_owned(),
            "Invalid value: \"object\": max must be equal or greater than min".to_owned()
        )]
    );

    // Scale from zero is for AWS and Azure only.
    let mut kubevirt = pool("kubevirt");
    kubevirt["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("replicas");
    kubevirt["spec"]["autoScaling"] = json!({"min": 0, "max": 2});
    kubevirt["spec"]["platform"] = json!({"type": "KubeVirt", "kubevirt": {}});
    assert_eq!(
        causes(&create(&h, &kubevirt).await),
        [(
            "spec".to_owned(),
            "Invalid value: \"object\": Scale-from-zero (autoScaling.min=0) is currently only \
             supported for AWS and Azure platforms"
                .to_owned()
        )]
    );
    // On Azure it is accepted.
    let mut azure = kubevirt.clone();
    azure["metadata"]["name"] = json!("azure");
    azure["spec"]["platform"] = pool("x")["spec"]["platform"].clone();
    assert_eq!(create(&h, &azure).await.status, 201);

    let listed = h.raw("GET", NPS, "application/json", "").await.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|np| np["metadata"]["name"].clone())
        .collect::<Vec<_>>();
    assert_eq!(listed, [json!("azure")], "nothing refused was stored");
}

#[tokio::test]
async fn immutable_fields_are_refused_on_update_and_day2_fields_are_not() {
    let h = quiet().await;
    namespace(&h.client, "npv").await;
    assert_eq!(create(&h, &pool("workers")).await.status, 201);

    let refused = [
        (
            json!({"spec": {"management": {"upgradeType": "InPlace"}}}),
            "spec.management.upgradeType",
            "UpgradeType is immutable",
        ),
        (
            json!({"spec": {"platform": {"azure": {"subnetID":
                "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/other"}}}}),
            "spec.platform.azure.subnetID",
            "SubnetID is immutable",
        ),
        (
            json!({"spec": {"platform": {"type": "None"}}}),
            "spec.platform.type",
            "Type is immutable",
        ),
        (
            json!({"spec": {"clusterName": "other"}}),
            "spec.clusterName",
            "ClusterName is immutable",
        ),
    ];
    for (patch, field, message) in refused {
        let reply = merge(&h, "workers", patch).await;
        assert_eq!(
            causes(&reply),
            [(
                field.to_owned(),
                format!("Invalid value: \"string\": {message}")
            )]
        );
    }
    let stored = h
        .raw("GET", &format!("{NPS}/workers"), "application/json", "")
        .await
        .body;
    assert_eq!(stored["metadata"]["generation"], 1, "nothing was written");

    // What changes on day 2 is accepted: scale, autoscale, release, labels, taints, drain.
    let reply = merge(
        &h,
        "workers",
        json!({"spec": {
            "replicas": null, "autoScaling": {"min": 1, "max": 4},
            "release": {"image": "quay.io/openshift-release-dev/ocp-release:4.19.7-x86_64"},
            "nodeLabels": {"team": "a"},
            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            "nodeDrainTimeout": "10m"}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["metadata"]["generation"], 2);

    // A rolling update's bounds belong to RollingUpdate only.
    let reply = merge(
        &h,
        "workers",
        json!({"spec": {"management": {"replace": {"strategy": "OnDelete"}}}}),
    )
    .await;
    assert_eq!(
        causes(&reply),
        [(
            "spec.management.replace".to_owned(),
            "Invalid value: \"object\": The 'rollingUpdate' field can only be set when \
             'strategy' is 'RollingUpdate'"
                .to_owned()
        )]
    );
}

#[tokio::test]
async fn azure_platform_constraints_are_the_types() {
    let h = quiet().await;
    namespace(&h.client, "npv").await;
    let mut np = pool("sized");
    let azure = &mut np["spec"]["platform"]["azure"];
    azure["vmSize"] = json!("Standard_D4s_v5_extra");
    azure["osDisk"] = json!({"sizeGiB": 8, "diskStorageAccountType": "Premium_LRS"});
    azure["availabilityZone"] = json!("4");
    let reply = create(&h, &np).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    let found: Vec<(String, String)> = reply.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "spec.platform.azure.osDisk.sizeGiB".to_owned(),
                "Invalid value: 8: spec.platform.azure.osDisk.sizeGiB in body should be greater \
                 than or equal to 16"
                    .to_owned()
            ),
            (
                "spec.platform.azure.vmSize".to_owned(),
                "Invalid value: \"Standard_D4s_v5_extra\": spec.platform.azure.vmSize in body \
                 should match '^(Standard_|Basic_)?[A-Z]+[0-9]+(-[0-9]+)?[abdilmptsCNP]*(_[A-Z]*[0-9]+[A-Z]*)?(_v[0-9]+)?$'"
                    .to_owned()
            ),
            (
                "spec.platform.azure.availabilityZone".to_owned(),
                "Invalid value: \"string\": failed rule: self in ['1', '2', '3']".to_owned()
            ),
        ]
    );
}
