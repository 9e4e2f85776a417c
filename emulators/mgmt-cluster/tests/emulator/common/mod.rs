//! Test harness: a real emulator over TLS on 127.0.0.1:0 and a kube client from its kubeconfig.
#![allow(dead_code)]

use std::time::Duration;

use hypersaga_emulator_mgmt::admin_client::AdminClient;
use hypersaga_emulator_mgmt::{Config, Emulator, kubeconfig_yaml};
use hypersaga_hypershift::*;
use kube::config::{KubeConfigOptions, Kubeconfig};

pub const TOKEN: &str = "test-token";

pub struct Harness {
    pub emulator: Emulator,
    pub client: kube::Client,
    pub admin: AdminClient,
    pub url: String,
    pub ca_pem: String,
    _served: hypersaga_devca::Loopback,
}

impl Harness {
    pub async fn start(config: Config) -> Self {
        hypersaga_devca::install_crypto_provider();
        let emulator = Emulator::new(config);
        let ca = hypersaga_devca::DevCa::generate().expect("CA");
        let cert = ca.issue_loopback_cert().expect("cert");
        let served = hypersaga_devca::serve_loopback(
            emulator.router(),
            emulator.admin_router(),
            &cert,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("serve the emulator");
        let (url, admin_url) = (served.url.clone(), served.admin_url.clone());
        let ca_pem = ca.cert_pem().to_owned();
        emulator.set_served_at(url.clone(), ca_pem.clone());
        let client = client_for(&url, &ca_pem, TOKEN).await;
        Self {
            emulator,
            client,
            admin: AdminClient::new(admin_url),
            url,
            ca_pem,
            _served: served,
        }
    }

    pub async fn fast() -> Self {
        Self::start(Config::fast(TOKEN, Duration::from_millis(150))).await
    }
}

pub async fn client_for(url: &str, ca_pem: &str, token: &str) -> kube::Client {
    let yaml = kubeconfig_yaml(url, ca_pem, token);
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(config).expect("client")
}

pub const IMAGE: &str = "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64";

fn wi(id: &str) -> WorkloadIdentity {
    WorkloadIdentity {
        client_id: format!("00000000-0000-0000-0000-00000000000{id}"),
    }
}

pub fn hosted_cluster(name: &str, ns: &str) -> HostedCluster {
    let sub = "11111111-1111-1111-1111-111111111111";
    let rg = format!("/subscriptions/{sub}/resourceGroups/{name}-rg");
    let mut hc = HostedCluster::new(
        name,
        HostedClusterSpec {
            release: Release {
                image: IMAGE.into(),
            },
            infra_id: format!("{name}-abcde"),
            issuer_url: Some("https://issuer.example/demo".into()),
            pull_secret: Some(LocalObjectReference {
                name: format!("{name}-pull-secret"),
            }),
            dns: Some(DnsSpec {
                base_domain: "example.com".into(),
                ..Default::default()
            }),
            // Required by HyperShift's CRD (`services`, `+required`); what the product sends.
            services: [
                ("APIServer", "LoadBalancer"),
                ("OAuthServer", "Route"),
                ("Konnectivity", "Route"),
                ("Ignition", "Route"),
            ]
            .map(|(service, type_)| ServicePublishingStrategyMapping {
                service: service.into(),
                service_publishing_strategy: ServicePublishingStrategy {
                    type_: type_.into(),
                    ..Default::default()
                },
            })
            .to_vec(),
            platform: PlatformSpec {
                type_: "Azure".into(),
                azure: Some(AzurePlatformSpec {
                    location: "eastus".into(),
                    resource_group: format!("{name}-rg"),
                    vnet_id: format!("{rg}/providers/Microsoft.Network/virtualNetworks/vnet"),
                    subnet_id: format!(
                        "{rg}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"
                    ),
                    subscription_id: sub.into(),
                    security_group_id: format!(
                        "{rg}/providers/Microsoft.Network/networkSecurityGroups/nsg"
                    ),
                    tenant_id: "22222222-2222-2222-2222-222222222222".into(),
                    topology: Some("Public".into()),
                    azure_authentication_config: AzureAuthenticationConfig {
                        azure_authentication_config_type:
                            AzureAuthenticationConfig::WORKLOAD_IDENTITIES.into(),
                        workload_identities: Some(AzureWorkloadIdentities {
                            image_registry: wi("1"),
                            ingress: wi("2"),
                            file: wi("3"),
                            disk: wi("4"),
                            node_pool_management: wi("5"),
                            cloud_provider: wi("6"),
                            network: wi("7"),
                            control_plane_operator: None,
                        }),
                    },
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
    );
    hc.metadata.namespace = Some(ns.into());
    hc
}

pub fn node_pool(name: &str, ns: &str, cluster: &str, replicas: i32) -> NodePool {
    let mut np = NodePool::new(
        name,
        NodePoolSpec {
            cluster_name: cluster.into(),
            replicas: Some(replicas),
            release: Release { image: IMAGE.into() },
            management: Some(NodePoolManagement { upgrade_type: "Replace".into(), auto_repair: None }),
            platform: NodePoolPlatform {
                type_: "Azure".into(),
                azure: Some(AzureNodePoolPlatform {
                    vm_size: "Standard_D4s_v5".into(),
                    image: AzureVmImage {
                        type_: "AzureMarketplace".into(),
                        azure_marketplace: Some(AzureMarketplaceImage { image_generation: Some("Gen2".into()), ..Default::default() }),
                        ..Default::default()
                    },
                    os_disk: AzureNodePoolOsDisk { size_gib: 120, disk_storage_account_type: Some("Premium_LRS".into()), ..Default::default() },
                    subnet_id: "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default".into(),
                    ..Default::default()
                }),
            },
            auto_scaling: None,
            ..Default::default()
        },
    );
    np.metadata.namespace = Some(ns.into());
    np
}

/// The pull secret [`hosted_cluster`] names (`<name>-pull-secret`, with a
/// `.dockerconfigjson`), which HyperShift reads before anything else.
pub async fn pull_secret(client: &kube::Client, ns: &str, cluster: &str) {
    use k8s_openapi::api::core::v1::Secret;
    let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), ns);
    let mut secret = Secret::default();
    secret.metadata.name = Some(format!("{cluster}-pull-secret"));
    secret.type_ = Some("kubernetes.io/dockerconfigjson".into());
    secret.string_data = Some(
        [(
            ".dockerconfigjson".to_owned(),
            r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#.to_owned(),
        )]
        .into(),
    );
    api.create(&Default::default(), &secret)
        .await
        .expect("pull secret created");
}

/// Creates [`hosted_cluster`] `name` in `ns` through `hcs`, with the pull secret it names.
pub async fn create_hosted_cluster(
    hcs: &kube::Api<HostedCluster>,
    name: &str,
    ns: &str,
) -> kube::Result<HostedCluster> {
    pull_secret(&hcs.clone().into_client(), ns, name).await;
    hcs.create(&Default::default(), &hosted_cluster(name, ns))
        .await
}

/// Creates a namespace.
pub async fn namespace(client: &kube::Client, name: &str) {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    api.create(&Default::default(), &ns)
        .await
        .expect("namespace created");
}

/// Bounds every wait so a regression fails fast instead of hanging.
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// What a client sees of one raw HTTP exchange.
pub struct Reply {
    pub status: u16,
    /// `Warning` header values, in order.
    pub warnings: Vec<String>,
    pub body: serde_json::Value,
}

impl Harness {
    /// One request as kubectl or client-go would send it, for what kube-rs does not show
    /// (`Warning` headers, raw `Status` bodies, arbitrary content types and query strings).
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: impl Into<String>,
    ) -> Reply {
        let cert = reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).expect("CA");
        let http = reqwest::Client::builder()
            .add_root_certificate(cert)
            .build()
            .expect("http client");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let response = http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
            .header("content-type", content_type)
            .body(body.into())
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        let warnings = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().expect("ascii").to_owned())
            .collect();
        let body = response.json().await.unwrap_or(serde_json::Value::Null);
        Reply {
            status,
            warnings,
            body,
        }
    }
}

/// The `managedFields` entry of `manager` with `operation` (and `subresource`, `""` for the
/// main resource), if any.
pub fn managed_entry<'a>(
    obj: &'a serde_json::Value,
    manager: &str,
    operation: &str,
    subresource: &str,
) -> Option<&'a serde_json::Value> {
    obj.pointer("/metadata/managedFields")?
        .as_array()?
        .iter()
        .find(|e| {
            e["manager"] == manager
                && e["operation"] == operation
                && e.get("subresource").and_then(|s| s.as_str()).unwrap_or("") == subresource
        })
}

/// An emulator whose operator waits an hour before reporting progress, so tests of API
/// semantics see only their own writes (plus the operator's finalizer and first status).
pub async fn quiet() -> Harness {
    Harness::start(Config::fast(TOKEN, Duration::from_secs(3600))).await
}

/// A raw response: status, headers and body bytes.
pub struct RawReply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl RawReply {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

impl Harness {
    /// One request with the given headers and body, redirects not followed.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> RawReply {
        let cert = reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).expect("CA");
        let http = reqwest::Client::builder()
            .add_root_certificate(cert)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("http client");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let response = req.send().await.expect("request sent");
        RawReply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.bytes().await.expect("body").to_vec(),
        }
    }
}
