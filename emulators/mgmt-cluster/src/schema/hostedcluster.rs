//! `HostedCluster` (`hypershift.openshift.io/v1beta1`), transcribed from HyperShift's
//! `api/hypershift/v1beta1/hostedcluster_types.go` and `azure.go` and their generated CRD
//! (`zz_generated.featuregated-crd-manifests/hostedclusters.hypershift.openshift.io/AAA_ungated.yaml`).
//!
//! Merge semantics worth knowing: `spec.services` is `+kubebuilder:validation:ListType=atomic`
//! (one manager owns the whole list), `status.conditions` is `+listType=map` keyed by `type`,
//! the secret references are `+structType=atomic`.

use serde_json::json;

use super::Node;
use super::builder::*;
use super::meta::envelope;
use super::rules::{immutable, required_iff};
use super::shared::{azure_client_id, local_object_reference, metav1_condition, release};

pub fn hosted_cluster() -> Node {
    envelope([("spec", spec()), ("status", status())])
}

fn spec() -> Node {
    object([
        ("additionalTrustBundle", local_object_reference()),
        ("auditWebhook", local_object_reference()),
        ("autoNode", any()),
        ("autoscaling", any()),
        ("capabilities", any().default(json!({}))),
        ("channel", string().min_len(1).max_len(100)),
        ("clusterID", string().min_len(36).max_len(36)),
        ("configuration", any()),
        ("controlPlaneRelease", release()),
        (
            "controllerAvailabilityPolicy",
            string()
                .one_of(&["HighlyAvailable", "SingleReplica"])
                .default(json!("HighlyAvailable")),
        ),
        ("dns", dns()),
        ("etcd", etcd()),
        ("fips", boolean()),
        ("imageContentSources", atomic_list(any()).max_items(255)),
        (
            "infraID",
            string()
                .min_len(1)
                .max_len(253)
                .rule(immutable("infraID is immutable")),
        ),
        (
            "infrastructureAvailabilityPolicy",
            string()
                .one_of(&["HighlyAvailable", "SingleReplica"])
                .default(json!("SingleReplica")),
        ),
        (
            "issuerURL",
            string()
                .max_len(255)
                .default(json!("https://kubernetes.default.svc"))
                .rule(immutable("issuerURL is immutable")),
        ),
        ("kubeAPIServerDNSName", string().max_len(253)),
        ("labels", map_of(string()).max_properties(20)),
        ("monitoring", any()),
        ("networking", networking()),
        ("nodeSelector", map_of(string())),
        (
            "olmCatalogPlacement",
            string()
                .one_of(&["management", "guest"])
                .default(json!("management")),
        ),
        ("operatorConfiguration", any()),
        ("pausedUntil", string().min_len(4).max_len(35)),
        ("platform", platform()),
        ("pullSecret", local_object_reference()),
        ("release", release()),
        ("secretEncryption", secret_encryption()),
        ("serviceAccountSigningKey", local_object_reference()),
        ("services", atomic_list(service_mapping()).max_items(6)),
        ("sshKey", local_object_reference()),
        ("tolerations", atomic_list(any()).max_items(25)),
        ("updateService", string()),
    ])
    .require(&[
        "etcd",
        "networking",
        "platform",
        "pullSecret",
        "release",
        "services",
    ])
}

fn dns() -> Node {
    object([
        (
            "baseDomain",
            string()
                .max_len(253)
                .rule(immutable("baseDomain is immutable")),
        ),
        ("baseDomainPrefix", string().max_len(253)),
        ("privateZoneID", string().min_len(1).max_len(265)),
        ("publicZoneID", string().min_len(1).max_len(258)),
    ])
    .require(&["baseDomain"])
}

fn etcd() -> Node {
    let storage = object([
        (
            "persistentVolume",
            object([
                (
                    "size",
                    int_or_string()
                        .pattern(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
                        .default(json!("8Gi")),
                ),
                ("storageClassName", string().max_len(255)),
            ]),
        ),
        (
            "restoreSnapshotURL",
            set_list(string().max_len(1024)).max_items(1),
        ),
        ("type", string().one_of(&["PersistentVolume"])),
    ])
    .require(&["type"]);
    object([
        (
            "managed",
            object([("storage", storage)]).require(&["storage"]),
        ),
        (
            "managementType",
            string()
                .one_of(&["Managed", "Unmanaged"])
                .rule(immutable("managementType is immutable")),
        ),
        (
            "unmanaged",
            object([
                ("endpoint", string().max_len(255).pattern("^https://")),
                (
                    "tls",
                    object([("clientSecret", local_object_reference())]).require(&["clientSecret"]),
                ),
            ])
            .require(&["endpoint", "tls"]),
        ),
    ])
    .require(&["managementType"])
    .default(json!({
        "managementType": "Managed",
        "managed": {"storage": {"type": "PersistentVolume", "persistentVolume": {"size": "8Gi"}}}
    }))
}

fn cidr_entry() -> Node {
    object([("cidr", string().max_len(43)), ("hostPrefix", integer())]).require(&["cidr"])
}

fn networking() -> Node {
    object([
        (
            "allocateNodeCIDRs",
            string().one_of(&["Enabled", "Disabled"]),
        ),
        (
            "apiServer",
            object([
                ("advertiseAddress", string().max_len(255)),
                (
                    "allowedCIDRBlocks",
                    set_list(string().max_len(43)).max_items(500),
                ),
                ("port", integer()),
            ]),
        ),
        (
            "clusterNetwork",
            atomic_list(cidr_entry())
                .min_items(1)
                .max_items(2)
                .default(json!([{"cidr": "10.132.0.0/14"}])),
        ),
        (
            "machineNetwork",
            atomic_list(object([("cidr", string().max_len(43))]).require(&["cidr"]))
                .min_items(1)
                .max_items(2),
        ),
        (
            "networkType",
            string()
                .one_of(&["OpenShiftSDN", "Calico", "OVNKubernetes", "Other"])
                .default(json!("OVNKubernetes")),
        ),
        (
            "serviceNetwork",
            atomic_list(object([("cidr", string().max_len(43))]).require(&["cidr"]))
                .min_items(1)
                .max_items(2)
                .default(json!([{"cidr": "172.31.0.0/16"}])),
        ),
    ])
    .default(json!({
        "clusterNetwork": [{"cidr": "10.132.0.0/14"}],
        "networkType": "OVNKubernetes",
        "serviceNetwork": [{"cidr": "172.31.0.0/16"}]
    }))
}

fn hostname() -> Node {
    object([("hostname", string().min_len(1).max_len(253))])
}

fn service_mapping() -> Node {
    object([
        (
            "service",
            string().one_of(&[
                "APIServer",
                "OAuthServer",
                "OIDC",
                "Konnectivity",
                "Ignition",
                "OVNSbDb",
            ]),
        ),
        (
            "servicePublishingStrategy",
            object([
                ("loadBalancer", hostname()),
                (
                    "nodePort",
                    object([
                        ("address", string().min_len(1).max_len(253)),
                        ("port", integer()),
                    ])
                    .require(&["address"]),
                ),
                ("route", hostname()),
                (
                    "type",
                    string().one_of(&["LoadBalancer", "NodePort", "Route", "None", "S3"]),
                ),
            ])
            .require(&["type"]),
        ),
    ])
    .require(&["service", "servicePublishingStrategy"])
}

fn platform() -> Node {
    object([
        ("agent", any()),
        ("aws", any()),
        ("azure", azure()),
        ("ibmcloud", any()),
        ("kubevirt", any()),
        ("powervs", any()),
        (
            "type",
            string()
                .max_len(100)
                .one_of(&[
                    "AWS", "Azure", "IBMCloud", "KubeVirt", "Agent", "PowerVS", "None",
                ])
                .rule(immutable("Type is immutable")),
        ),
    ])
    .require(&["type"])
}

fn workload_identity() -> Node {
    object([("clientID", azure_client_id())]).require(&["clientID"])
}

/// `AzurePlatformSpec` (`azure.go`, reference §5.1).
fn azure() -> Node {
    const IDENTITIES: [&str; 7] = [
        "cloudProvider",
        "disk",
        "file",
        "imageRegistry",
        "ingress",
        "network",
        "nodePoolManagement",
    ];
    let workload_identities = object([
        ("cloudProvider", workload_identity()),
        ("controlPlaneOperator", workload_identity()),
        ("disk", workload_identity()),
        ("file", workload_identity()),
        ("imageRegistry", workload_identity()),
        ("ingress", workload_identity()),
        ("network", workload_identity()),
        ("nodePoolManagement", workload_identity()),
    ])
    .require(&IDENTITIES);
    let auth = object([
        (
            "azureAuthenticationConfigType",
            string().one_of(&["ManagedIdentities", "WorkloadIdentities"]),
        ),
        ("managedIdentities", any()),
        ("workloadIdentities", workload_identities),
    ])
    .require(&["azureAuthenticationConfigType"])
    .rule(required_iff(
        "azureAuthenticationConfigType",
        "ManagedIdentities",
        "managedIdentities",
        "managedIdentities is required when azureAuthenticationConfigType is ManagedIdentities, and forbidden otherwise",
    ))
    .rule(required_iff(
        "azureAuthenticationConfigType",
        "WorkloadIdentities",
        "workloadIdentities",
        "workloadIdentities is required when azureAuthenticationConfigType is WorkloadIdentities, and forbidden otherwise",
    ));
    object([
        ("azureAuthenticationConfig", auth),
        (
            "cloud",
            string()
                .one_of(&[
                    "AzurePublicCloud",
                    "AzureUSGovernmentCloud",
                    "AzureChinaCloud",
                    "AzureGermanCloud",
                    "AzureBleuCloud",
                    "AzureStackCloud",
                ])
                .default(json!("AzurePublicCloud")),
        ),
        ("containerRegistry", any()),
        (
            "location",
            string()
                .max_len(255)
                .rule(immutable("Location is immutable")),
        ),
        ("private", any()),
        (
            "resourceGroup",
            string()
                .max_len(90)
                .pattern(r"^[a-zA-Z0-9_()\-\.]{1,89}[a-zA-Z0-9_()\-]$")
                .default(json!("default"))
                .rule(immutable("ResourceGroupName is immutable")),
        ),
        (
            "securityGroupID",
            string()
                .max_len(255)
                .rule(immutable("SecurityGroupID is immutable")),
        ),
        (
            "subnetID",
            string()
                .min_len(1)
                .max_len(355)
                .rule(immutable("SubnetID is immutable")),
        ),
        (
            "subscriptionID",
            string()
                .max_len(255)
                .rule(immutable("SubscriptionID is immutable")),
        ),
        ("tenantID", string().max_len(255)),
        (
            "topology",
            string().one_of(&["Public", "PublicAndPrivate", "Private"]),
        ),
        (
            "vnetID",
            string().max_len(255).rule(immutable("VnetID is immutable")),
        ),
    ])
    .require(&[
        "azureAuthenticationConfig",
        "location",
        "resourceGroup",
        "securityGroupID",
        "subnetID",
        "subscriptionID",
        "tenantID",
        "vnetID",
    ])
}

fn azure_kms_key() -> Node {
    object([
        ("keyName", string().min_len(1).max_len(255)),
        ("keyVaultName", string().min_len(1).max_len(255)),
        ("keyVersion", string().min_len(1).max_len(255)),
    ])
    .require(&["keyName", "keyVaultName", "keyVersion"])
}

fn secret_encryption() -> Node {
    let azure = object([
        ("activeKey", azure_kms_key()),
        ("backupKey", azure_kms_key()),
        (
            "keyVaultAccess",
            string().one_of(&["Public", "Private", ""]),
        ),
        ("keyVaultType", string().one_of(&["KeyVault", "ManagedHSM"])),
        ("kms", any()),
        ("workloadIdentity", workload_identity()),
    ])
    .require(&["activeKey"]);
    object([
        (
            "aescbc",
            object([
                ("activeKey", local_object_reference()),
                ("backupKey", local_object_reference()),
            ])
            .require(&["activeKey"]),
        ),
        (
            "kms",
            object([
                ("aws", any()),
                ("azure", azure),
                ("ibmcloud", any()),
                ("provider", string().one_of(&["IBMCloud", "AWS", "Azure"])),
            ])
            .require(&["provider"]),
        ),
        ("type", string().one_of(&["kms", "aescbc"])),
    ])
    .require(&["type"])
}

fn status() -> Node {
    let history = object([
        ("acceptedRisks", string()),
        ("completionTime", string().nullable()),
        ("image", string()),
        ("startedTime", string()),
        ("state", string()),
        ("verified", boolean()),
        ("version", string()),
    ])
    .require(&[
        "completionTime",
        "image",
        "startedTime",
        "state",
        "verified",
    ]);
    let version = object([
        (
            "availableUpdates",
            atomic_list(any()).max_items(100).nullable(),
        ),
        ("conditionalUpdates", atomic_list(any()).max_items(100)),
        (
            "desired",
            object([
                ("channels", set_list(string())),
                ("image", string()),
                ("url", string()),
                ("version", string()),
            ])
            .require(&["image", "version"]),
        ),
        ("history", atomic_list(history)),
        ("observedGeneration", integer()),
    ])
    .require(&["availableUpdates", "desired", "observedGeneration"]);
    object([
        ("autoNode", any()),
        (
            "conditions",
            map_list(metav1_condition(), &["type"]).max_items(100),
        ),
        ("configuration", any()),
        (
            "controlPlaneEndpoint",
            object([("host", string().max_len(255)), ("port", integer())])
                .require(&["host", "port"]),
        ),
        ("controlPlaneVersion", any()),
        ("customKubeconfig", local_object_reference()),
        ("ignitionEndpoint", string().max_len(1024)),
        ("kubeadminPassword", local_object_reference()),
        ("kubeconfig", local_object_reference()),
        ("oauthCallbackURLTemplate", string().max_len(1024)),
        (
            "payloadArch",
            string().one_of(&["Multi", "ARM64", "AMD64", "PPC64LE", "S390X"]),
        ),
        ("platform", any()),
        ("secretEncryption", any()),
        ("version", version),
    ])
}
