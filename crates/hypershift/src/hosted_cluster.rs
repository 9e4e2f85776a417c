//! `HostedCluster`: one hosted control plane on the management cluster.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{LocalObjectReference, Release};
use crate::condition::{self, Condition, conditions};

/// `HostedCluster.spec` — the fields hypersaga sets for a self-managed Azure cluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "hypershift.openshift.io",
    version = "v1beta1",
    kind = "HostedCluster",
    plural = "hostedclusters",
    namespaced,
    status = "HostedClusterStatus",
    shortname = "hc",
    shortname = "hcs",
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version.history[?(@.state==\"Completed\")].version"}"#,
    printcolumn = r#"{"name":"KubeConfig","type":"string","jsonPath":".status.kubeconfig.name"}"#,
    printcolumn = r#"{"name":"Progress","type":"string","jsonPath":".status.version.history[?(@.state!=\"\")].state"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Progressing","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].status"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterSpec {
    pub release: Release,
    /// Prefix of every cloud resource name of this cluster; immutable.
    #[serde(rename = "infraID", default, skip_serializing_if = "String::is_empty")]
    pub infra_id: String,
    /// OIDC issuer of the guest service-account tokens (the workload-identity issuer).
    #[serde(rename = "issuerURL", default, skip_serializing_if = "Option::is_none")]
    pub issuer_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<LocalObjectReference>,
    /// Secret holding the private key that signs guest service-account tokens
    /// (must match the JWKS published at `issuerURL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_signing_key: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<DnsSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<ClusterNetworking>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServicePublishingStrategyMapping>,
    pub platform: PlatformSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_encryption: Option<SecretEncryptionSpec>,
}

/// `spec.dns`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsSpec {
    pub base_domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_domain_prefix: Option<String>,
    #[serde(
        rename = "publicZoneID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub public_zone_id: Option<String>,
    #[serde(
        rename = "privateZoneID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub private_zone_id: Option<String>,
}

/// `spec.networking`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworking {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_network: Vec<NetworkEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<NetworkEntry>,
    /// `OVNKubernetes`, `OpenShiftSDN`, `Calico` or `Other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<String>,
}

/// A pod network CIDR and the per-node prefix carved from it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworkEntry {
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_prefix: Option<i32>,
}

/// A service or machine network CIDR.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkEntry {
    pub cidr: String,
}

/// One entry of `spec.services`: how a control-plane service is exposed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServicePublishingStrategyMapping {
    /// `APIServer`, `OAuthServer`, `Konnectivity`, `Ignition`, …
    pub service: String,
    pub service_publishing_strategy: ServicePublishingStrategy,
}

/// `LoadBalancer`, `Route`, `NodePort` or `None`, with the optional hostname.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServicePublishingStrategy {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<HostnameSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<HostnameSpec>,
}

/// A published hostname (`loadBalancer.hostname`, `route.hostname`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostnameSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
}

/// `spec.platform`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformSpec {
    /// `Azure` for everything hypersaga creates.
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzurePlatformSpec>,
}

/// `spec.platform.azure` (`AzurePlatformSpec`). All IDs are full ARM resource IDs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzurePlatformSpec {
    /// `AzurePublicCloud` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<String>,
    pub location: String,
    pub resource_group: String,
    #[serde(rename = "vnetID")]
    pub vnet_id: String,
    #[serde(rename = "subnetID")]
    pub subnet_id: String,
    #[serde(rename = "subscriptionID")]
    pub subscription_id: String,
    #[serde(rename = "securityGroupID")]
    pub security_group_id: String,
    #[serde(rename = "tenantID")]
    pub tenant_id: String,
    /// `Public`, `PublicAndPrivate` or `Private`; must be set with workload identities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    pub azure_authentication_config: AzureAuthenticationConfig,
}

/// Discriminated union: `azureAuthenticationConfigType` names the member that must be set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureAuthenticationConfig {
    /// `WorkloadIdentities` (self-managed) or `ManagedIdentities` (ARO HCP).
    pub azure_authentication_config_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_identities: Option<AzureWorkloadIdentities>,
}

impl AzureAuthenticationConfig {
    /// The discriminator value for self-managed workload identities.
    pub const WORKLOAD_IDENTITIES: &'static str = "WorkloadIdentities";
}

/// The client IDs of the user-assigned identities each component federates into
/// (`workload-identities.json`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureWorkloadIdentities {
    pub image_registry: WorkloadIdentity,
    pub ingress: WorkloadIdentity,
    pub file: WorkloadIdentity,
    pub disk: WorkloadIdentity,
    pub node_pool_management: WorkloadIdentity,
    pub cloud_provider: WorkloadIdentity,
    pub network: WorkloadIdentity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_operator: Option<WorkloadIdentity>,
}

/// One workload identity: the client ID of a user-assigned managed identity.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct WorkloadIdentity {
    #[serde(rename = "clientID")]
    pub client_id: String,
}

/// `spec.secretEncryption` (etcd encryption at rest).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretEncryptionSpec {
    /// `aescbc` or `kms`.
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aescbc: Option<AescbcSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<KmsSpec>,
}

/// AES-CBC encryption with a key from a Secret.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AescbcSpec {
    pub active_key: LocalObjectReference,
}

/// KMS encryption; hypersaga only uses the Azure Key Vault provider.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KmsSpec {
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureKmsSpec>,
}

/// Azure Key Vault KMS settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureKmsSpec {
    pub active_key: AzureKmsKey,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_vault_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_identity: Option<WorkloadIdentity>,
}

/// A Key Vault key version.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureKmsKey {
    pub key_vault_name: String,
    pub key_name: String,
    pub key_version: String,
}

/// `HostedCluster.status`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ClusterVersionStatus>,
    /// Where the hosted kube-apiserver listens (port 7443 on Azure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,
    /// Secret (same namespace) holding the admin kubeconfig under key `kubeconfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeadmin_password: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint: Option<String>,
}

/// `status.controlPlaneEndpoint`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEndpoint {
    pub host: String,
    pub port: i32,
}

/// `status.version`: desired release and rollout history (newest first).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<ReleaseStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<UpdateHistory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A release as reported in status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One rollout in `status.version.history`; `completionTime` set means the rollout finished
/// (what `hypershift create cluster --wait` waits for).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateHistory {
    /// `Completed` or `Partial`.
    pub state: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    #[serde(default)]
    pub verified: bool,
}

impl HostedCluster {
    /// The status condition of `type_`, if the operator has reported it.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        condition::find(self.status.as_ref()?.conditions.as_slice(), type_)
    }

    /// `Available=True`: the control plane is up (what `oc wait --for=condition=Available` checks).
    pub fn is_available(&self) -> bool {
        self.condition(conditions::AVAILABLE)
            .is_some_and(Condition::is_true)
    }

    /// `Degraded=True`: the operator reports a persistent failure.
    pub fn is_degraded(&self) -> bool {
        self.condition(conditions::DEGRADED)
            .is_some_and(Condition::is_true)
    }

    /// The hosted API endpoint once published.
    pub fn control_plane_endpoint(&self) -> Option<&ApiEndpoint> {
        self.status.as_ref()?.control_plane_endpoint.as_ref()
    }

    /// Name of the Secret holding the admin kubeconfig, once published.
    pub fn kubeconfig_secret(&self) -> Option<&str> {
        Some(self.status.as_ref()?.kubeconfig.as_ref()?.name.as_str())
    }

    /// Whether the newest rollout in `status.version.history` has completed.
    pub fn rollout_completed(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.version.as_ref())
            .and_then(|v| v.history.first())
            .is_some_and(|h| h.completion_time.is_some())
    }
}
