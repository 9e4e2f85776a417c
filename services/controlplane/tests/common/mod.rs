//! Test harness: the real management-cluster emulator in-process over TLS, a real Azurite for
//! the signing keys, and hand-built step commands.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use hypersaga_bus::{
    Action, NsgOutputs, OidcOutputs, Outputs, PrivateZoneOutputs, ResourceGroupsOutputs,
    StepCommand, StepError, StepId, StepOutputs, VnetOutputs, WorkloadClient,
    WorkloadIdentitiesOutputs,
};
use hypersaga_config::{Config, Secret, TenantAzure, TenantConfig};
use hypersaga_emulator_mgmt::{Emulator, kubeconfig_yaml};
use hypersaga_model::{ClusterSpec, NodePoolSpec, TenantId};
use hypersaga_stepkit::Notes;
use hypersaga_worker::StepResult;
use tokio::sync::oneshot;

pub const TOKEN: &str = "test-token";
pub const ACCOUNT: &str = "devstoreaccount1";
pub const SUBSCRIPTION: &str = "11111111-1111-1111-1111-111111111111";
pub const AZURE_TENANT: &str = "22222222-2222-2222-2222-222222222222";
pub const IMAGE: &str = "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64";

/// The emulator serving the Kubernetes API over TLS, and a kubeconfig file for it.
pub struct Mgmt {
    pub emulator: Emulator,
    pub client: kube::Client,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

pub async fn mgmt(delay: Duration) -> Mgmt {
    hypersaga_devca::install_crypto_provider();
    let emulator = Emulator::new(hypersaga_emulator_mgmt::Config::fast(TOKEN, delay));
    let ca = hypersaga_devca::DevCa::generate().expect("CA");
    let cert = ca.issue_loopback_cert().expect("cert");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "https://127.0.0.1:{}",
        listener.local_addr().expect("addr").port()
    );
    let (stop, stopped) = oneshot::channel::<()>();
    let router = emulator.router();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        hypersaga_devca::serve_tls(listener, router, &cert, shutdown)
            .await
            .expect("serve");
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_yaml(&url, ca.cert_pem(), TOKEN))
        .expect("write kubeconfig");
    let client = hypersaga_hypershift::client::client(Some(&kubeconfig))
        .await
        .expect("client");
    Mgmt {
        emulator,
        client,
        kubeconfig,
        _dir: dir,
        _stop: stop,
    }
}

/// A real Azurite blob service on a free loopback port (as `hypersaga dev` starts it).
pub struct Azurite {
    pub endpoint: String,
    pub key_store_endpoint: String,
    pub key_store_key: String,
    _process: hypersaga_procs::Azurite,
}

pub async fn azurite() -> Azurite {
    let process = hypersaga_procs::Azurite::start()
        .await
        .expect("start Azurite (run scripts/setup.sh)");
    Azurite {
        endpoint: process.blob_endpoint(),
        key_store_endpoint: process.key_store_endpoint(),
        key_store_key: process.key_store_key().to_owned(),
        _process: process,
    }
}

/// The signing keys' store in `az` (its second account), as identity writes it.
pub fn key_store(az: &Azurite) -> hypersaga_oidc::KeyStore {
    hypersaga_oidc::KeyStore::new(hypersaga_oidc::BlobConfig {
        blob_endpoint: az.key_store_endpoint.parse().expect("url"),
        account_name: hypersaga_procs::AZURITE_KEY_STORE_ACCOUNT.into(),
        account_key: hypersaga_oidc::Secret::new(az.key_store_key.clone()),
    })
    .expect("key store")
}

pub fn tenant_config(id: &str) -> TenantConfig {
    TenantConfig {
        id: TenantId::new(id).expect("tenant id"),
        tokens: vec![hypersaga_config::TokenDigest::of(&format!(
            "0123456789abcdef-{id}"
        ))],
        audit_credentials: Vec::new(),
        azure: TenantAzure {
            tenant_id: AZURE_TENANT.into(),
            subscription_id: SUBSCRIPTION.into(),
            client_id: "client".into(),
            client_secret: Some(Secret::new("secret")),
        },
    }
}

/// A pull secret in the shape `docker login` writes.
pub const PULL_SECRET: &str = r#"{"auths":{"registry.example.com":{"auth":"dGVzdDp0ZXN0"}}}"#;

pub fn config(mgmt: &Mgmt, az: Option<&Azurite>, tenants: &[&str]) -> Config {
    let mut c = Config {
        tenants: tenants.iter().map(|t| tenant_config(t)).collect(),
        ..Default::default()
    };
    c.kube.kubeconfig = Some(mgmt.kubeconfig.clone());
    c.kube.pull_secret = Some(Secret::new(PULL_SECRET));
    c.kube.available_timeout_s = Some(20);
    if let Some(az) = az {
        // Only the key store: controlplane is never given the issuers' account.
        c.signing_keys.endpoint = az.key_store_endpoint.clone();
        c.signing_keys.account_name = hypersaga_procs::AZURITE_KEY_STORE_ACCOUNT.into();
        c.signing_keys.account_key = Secret::new(az.key_store_key.clone());
    }
    c
}

pub fn rg_id(rg: &str) -> String {
    format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}")
}

/// A step command as the coordinator would send it, with the outputs of every step the
/// control plane depends on. `step` is a [`StepId`], or any string (a step no service owns).
pub fn command(
    tenant: &str,
    cluster: &str,
    step: impl std::fmt::Display,
    action: Action,
    pools: Vec<NodePoolSpec>,
) -> StepCommand {
    let tenant = TenantId::new(tenant).expect("tenant");
    let spec = ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: IMAGE.into(),
        node_pools: pools,
        network: Default::default(),
        addons: Vec::new(),
    };
    let names = hypersaga_testkit::names_for(&tenant, cluster, &spec);
    let vnet = format!(
        "{}/providers/Microsoft.Network/virtualNetworks/{}",
        rg_id(&names.vnet_rg),
        names.vnet
    );
    let mut outputs: BTreeMap<String, Outputs> = BTreeMap::new();
    let mut put = |step: StepId, o: Outputs| {
        outputs.insert(step.to_string(), o);
    };
    put(
        StepId::Oidc,
        OidcOutputs {
            issuer_url: format!("http://127.0.0.1:10000/{ACCOUNT}/oidc-{tenant}"),
            kid: "kid-1".into(),
        }
        .into_outputs(),
    );
    let keys = [
        "imageRegistry",
        "ingress",
        "file",
        "disk",
        "nodePoolManagement",
        "cloudProvider",
        "network",
    ];
    let identity_rg = rg_id(&format!("hcp-{tenant}-identities"));
    put(
        StepId::WorkloadIdentities,
        WorkloadIdentitiesOutputs {
            workload_identities: (1..)
                .zip(keys)
                .map(|(n, k)| {
                    let client_id = format!("00000000-0000-0000-0000-0000000000{n:02}");
                    (k.to_owned(), WorkloadClient { client_id })
                })
                .collect(),
            workload_principals: keys
                .iter()
                .map(|k| ((*k).to_owned(), format!("principal-{k}")))
                .collect(),
            identity_ids: keys
                .iter()
                .map(|k| {
                    let id = format!(
                        "{identity_rg}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{k}"
                    );
                    ((*k).to_owned(), id)
                })
                .collect(),
            identity_rg_id: identity_rg,
        }
        .into_outputs(),
    );
    put(
        StepId::Vnet,
        VnetOutputs {
            subnet_id: format!("{vnet}/subnets/{}", names.subnet),
            vnet_id: vnet,
        }
        .into_outputs(),
    );
    put(
        StepId::Nsg,
        NsgOutputs {
            nsg_id: format!(
                "{}/providers/Microsoft.Network/networkSecurityGroups/{}",
                rg_id(&names.nsg_rg),
                names.nsg
            ),
        }
        .into_outputs(),
    );
    put(
        StepId::ResourceGroups,
        ResourceGroupsOutputs {
            managed_rg_id: rg_id(&names.managed_rg),
            vnet_rg_id: Some(rg_id(&names.vnet_rg)),
            nsg_rg_id: Some(rg_id(&names.nsg_rg)),
        }
        .into_outputs(),
    );
    put(
        StepId::PublicZone,
        hypersaga_bus::PublicZoneOutputs {
            public_zone: format!(
                "{}/providers/Microsoft.Network/dnsZones/example.com",
                rg_id("dns")
            ),
        }
        .into_outputs(),
    );
    put(
        StepId::PrivateZone,
        PrivateZoneOutputs {
            private_zone_id: format!(
                "{}/providers/Microsoft.Network/privateDnsZones/{}",
                rg_id(&names.managed_rg),
                names.private_zone
            ),
        }
        .into_outputs(),
    );
    hypersaga_testkit::command_for(&tenant, cluster, spec, step, action, outputs)
}

/// Collects progress notes.
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<String>>);

#[async_trait::async_trait]
impl Notes for Collect {
    async fn note(&self, message: String) {
        self.0.lock().expect("lock").push(message);
    }
}

impl Collect {
    pub fn notes(&self) -> Vec<String> {
        self.0.lock().expect("lock").clone()
    }
}

/// Bounds every step so a regression fails fast instead of hanging.
/// A step handler as these tests call it (each service's `execute`).
#[async_trait::async_trait]
pub trait Execute: Sync {
    async fn exec(&self, cmd: &StepCommand, notes: &dyn Notes) -> Result<StepResult, StepError>;
}

#[async_trait::async_trait]
impl Execute for hypersaga_controlplane::ControlPlaneHandler {
    async fn exec(&self, cmd: &StepCommand, notes: &dyn Notes) -> Result<StepResult, StepError> {
        self.execute(cmd, notes).await
    }
}

/// Runs a step as the saga would: the command, then re-checks — each with the memo the
/// handler left, a new fence and `waiting_since` set — for as long as it answers "wait"
/// (each wait's message goes to `notes`, as the saga shows it to users).
pub async fn drive(
    handler: &dyn Execute,
    cmd: &StepCommand,
    notes: &Collect,
) -> Result<Outputs, StepError> {
    let mut cmd = cmd.clone();
    loop {
        match handler.exec(&cmd, notes).await? {
            StepResult::Done(outputs) => return Ok(outputs),
            StepResult::Wait {
                message,
                recheck_after,
                memo,
            } => {
                notes.note(message).await;
                cmd.memo = memo;
                cmd.fence += 1;
                cmd.waiting_since
                    .get_or_insert_with(time::OffsetDateTime::now_utc);
                tokio::time::sleep(recheck_after.min(Duration::from_millis(100))).await;
            }
        }
    }
}

pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// Objects the emulator holds in `namespace` (any kind), as `kind/name`.
pub fn objects_in(emulator: &Emulator, namespace: &str) -> Vec<String> {
    emulator
        .objects()
        .into_iter()
        .filter(|o| {
            o.pointer("/metadata/namespace").and_then(|v| v.as_str()) == Some(namespace)
                || (o["kind"] == "Namespace"
                    && o.pointer("/metadata/name").and_then(|v| v.as_str()) == Some(namespace))
        })
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}
