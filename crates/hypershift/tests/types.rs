use hypersaga_hypershift::{HostedCluster, NodePool};
use kube::{CustomResourceExt, Resource};

#[test]
fn crd_metadata_matches_hypershift() {
    let crd = HostedCluster::crd();
    assert_eq!(crd.spec.group, "hypershift.openshift.io");
    assert_eq!(crd.spec.names.plural, "hostedclusters");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(
        HostedCluster::api_version(&()),
        "hypershift.openshift.io/v1beta1"
    );
    assert_eq!(NodePool::plural(&()), "nodepools");
    assert!(
        hypersaga_hypershift::crd_yaml::<NodePool>()
            .unwrap()
            .contains("nodepools")
    );
}

#[test]
fn real_object_round_trips_and_reports_readiness() {
    let json = serde_json::json!({
        "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
        "metadata": {"name": "demo", "namespace": "clusters"},
        "spec": {
            "release": {"image": "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64"},
            "infraID": "demo-abcde", "issuerURL": "https://issuer",
            "pullSecret": {"name": "demo-pull-secret"},
            "dns": {"baseDomain": "example.com", "privateZoneID": "/z"},
            "networking": {"clusterNetwork": [{"cidr": "10.132.0.0/14"}], "networkType": "OVNKubernetes"},
            "platform": {"type": "Azure", "azure": {
                "location": "eastus", "resourceGroup": "rg", "vnetID": "/v", "subnetID": "/s",
                "subscriptionID": "sub", "securityGroupID": "/nsg", "tenantID": "t",
                "azureAuthenticationConfig": {"azureAuthenticationConfigType": "WorkloadIdentities",
                  "workloadIdentities": {"imageRegistry": {"clientID": "a"}, "ingress": {"clientID": "b"},
                   "file": {"clientID": "c"}, "disk": {"clientID": "d"}, "nodePoolManagement": {"clientID": "e"},
                   "cloudProvider": {"clientID": "f"}, "network": {"clientID": "g"}}}}}
        },
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "AsExpected",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}],
            "controlPlaneEndpoint": {"host": "10.0.0.1", "port": 7443},
            "kubeconfig": {"name": "demo-admin-kubeconfig"}}
    });
    let hc: HostedCluster = serde_json::from_value(json.clone()).unwrap();
    assert!(hc.is_available());
    assert_eq!(hc.kubeconfig_secret(), Some("demo-admin-kubeconfig"));
    let back = serde_json::to_value(&hc).unwrap();
    assert_eq!(back["spec"], json["spec"]);
    assert_eq!(back["status"], json["status"]);
}
