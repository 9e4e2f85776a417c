//! Test harnesses for the step services' integration tests (a dev-dependency only).
//!
//! * [`TestArm`] — the real ARM + Entra emulator (`hypersaga-emulator-arm`) served over TLS
//!   with a fresh dev CA, its admin API, and a [`Config`] pointing a service at it;
//! * [`Azurite`] — a real Azurite blob service on a free loopback port;
//! * [`command`] — a hand-built [`StepCommand`], so a handler can be called directly without
//!   NATS.
//!
//! Test code: failures to start a harness panic with a message saying what to install.
#![forbid(unsafe_code)]
#![allow(clippy::missing_panics_doc)]

mod azurite;

use std::collections::BTreeMap;
use std::io::Write as _;

use hypersaga_bus::{
    Action, ENVELOPE_VERSION, Outputs, StepCommand, StepContext, StepId, StepOutputs,
};
use hypersaga_config::{Config, Secret, TenantAzure, TenantConfig};
use hypersaga_emulator_arm::admin_client::AdminClient;
use hypersaga_emulator_arm::{Emulator, LatencyModel, Principal};
use hypersaga_model::{ClusterSpec, Names, NetworkSpec, TenantId, names};

pub use azurite::{ACCOUNT as AZURITE_ACCOUNT, Azurite};

/// Azurite's public development account key (also usable as a syntactically valid key for
/// blob settings a test never contacts).
pub fn azurite_key() -> &'static str {
    azurite::ACCOUNT_KEY
}
pub use hypersaga_emulator_arm::{FaultSpec, requests::RequestStats};

/// Tenant id every harness uses.
pub const TENANT: &str = "acme";
/// Entra tenant of the test principal.
pub const AZURE_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
/// Subscription of the test tenant.
pub const SUBSCRIPTION: &str = "11111111-2222-3333-4444-555555555555";
const CLIENT_ID: &str = "0ad2e8a1-0000-4000-8000-00000000c1e7";
const CLIENT_SECRET: &str = "test-secret";

/// A running ARM emulator with its admin API.
pub struct TestArm {
    /// The emulator itself (for direct inspection).
    pub emulator: Emulator,
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// Admin API client (faults, request counts, resource dump).
    pub admin: AdminClient,
    ca_file: tempfile::NamedTempFile,
    _served: hypersaga_devca::Loopback,
}

impl TestArm {
    /// Starts the emulator with zero latency and one principal owning [`SUBSCRIPTION`].
    pub async fn start() -> Self {
        hypersaga_devca::install_crypto_provider();
        let emulator = Emulator::new(hypersaga_emulator_arm::Config {
            principals: vec![Principal {
                azure_tenant_id: AZURE_TENANT.into(),
                client_id: CLIENT_ID.into(),
                client_secret: CLIENT_SECRET.into(),
                subscription_ids: vec![SUBSCRIPTION.into()],
            }],
            latency: LatencyModel::Zero,
            ..hypersaga_emulator_arm::Config::default()
        });
        let ca = hypersaga_devca::DevCa::generate().expect("dev CA");
        let cert = ca.issue_loopback_cert().expect("loopback cert");
        let served = hypersaga_devca::serve_loopback(
            emulator.router(),
            emulator.admin_router(),
            &cert,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("serve the ARM emulator");
        let mut ca_file = tempfile::NamedTempFile::new().expect("CA temp file");
        ca_file
            .write_all(ca.cert_pem().as_bytes())
            .expect("write CA");
        let admin = AdminClient::new(format!("{}/", served.admin_url).parse().expect("admin url"));
        Self {
            emulator,
            url: served.url.clone(),
            admin,
            ca_file,
            _served: served,
        }
    }

    /// A configuration pointing at this emulator, with tenant [`TENANT`], LRO polls every
    /// 50 ms, and Azurite's blob settings when given.
    pub fn config(&self, blob: Option<&Azurite>) -> Config {
        let mut config = Config::default();
        config.azure.resource_manager_url = self.url.clone();
        config.azure.authority_host = self.url.clone();
        config.azure.ca_bundle = Some(self.ca_file.path().to_owned());
        config.azure.lro_poll_interval_ms = 50;
        config.azure.lro_timeout_s = 30;
        config.tenants = vec![TenantConfig {
            id: tenant(),
            tokens: vec![hypersaga_config::TokenDigest::of(
                "0123456789abcdef-acme-token",
            )],
            audit_credentials: Vec::new(),
            azure: TenantAzure {
                tenant_id: AZURE_TENANT.into(),
                subscription_id: SUBSCRIPTION.into(),
                client_id: CLIENT_ID.into(),
                client_secret: Some(Secret::new(CLIENT_SECRET)),
            },
        }];
        if let Some(az) = blob {
            config.blob = az.blob_config();
            config.signing_keys = az.signing_keys_config();
        }
        config
    }

    /// Every stored resource of the test subscription (admin dump).
    pub async fn resources(&self) -> Vec<serde_json::Value> {
        self.admin
            .resources(Some(SUBSCRIPTION))
            .await
            .expect("admin resources")
    }

    /// The stored resource with this id (case-insensitive), if any.
    pub async fn resource(&self, id: &str) -> Option<serde_json::Value> {
        self.resources()
            .await
            .into_iter()
            .find(|r| r["id"].as_str().is_some_and(|i| i.eq_ignore_ascii_case(id)))
    }

    /// Request counters.
    pub async fn requests(&self) -> RequestStats {
        self.admin.requests().await.expect("admin requests")
    }

    /// Number of requests with `method` on `resource_type` answered with `status`.
    pub async fn count_status(&self, method: &str, resource_type: &str, status: u16) -> u64 {
        self.requests()
            .await
            .counts
            .iter()
            .filter(|c| {
                c.method.eq_ignore_ascii_case(method)
                    && c.resource_type.eq_ignore_ascii_case(resource_type)
                    && c.status == status
            })
            .map(|c| c.count)
            .sum()
    }

    /// Installs a fault failing the next `count` matching requests.
    pub async fn fault(
        &self,
        method: &str,
        resource_type: &str,
        status: u16,
        code: &str,
        count: u32,
    ) {
        self.admin
            .add_fault(&FaultSpec {
                method: method.into(),
                resource_type: resource_type.into(),
                name_contains: None,
                path_contains: None,
                status,
                code: code.into(),
                message: None,
                retry_after_secs: None,
                count: Some(count),
            })
            .await
            .expect("add fault");
    }
}

/// The test tenant id.
pub fn tenant() -> TenantId {
    TenantId::new(TENANT).expect("valid tenant")
}

/// The default spec: `eastus`, `example.com`, a network hypersaga creates.
pub fn spec() -> ClusterSpec {
    ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64".into(),
        node_pools: Vec::new(),
        network: NetworkSpec::default(),
        addons: Vec::new(),
    }
}

/// The names of cluster `cluster` (uid `<cluster>-uid`) under the test tenant.
pub fn names_of(cluster: &str, spec: &ClusterSpec) -> Names {
    names_for(&tenant(), cluster, spec)
}

/// The names of cluster `cluster` (uid `<cluster>-uid`) under `tenant`.
pub fn names_for(tenant: &TenantId, cluster: &str, spec: &ClusterSpec) -> Names {
    let infra = names::infra_id(cluster, &format!("{cluster}-uid"));
    Names::new(tenant, cluster, &infra, &spec.base_domain)
}

/// The outputs of an earlier step, as [`command`] takes them:
/// `prior(StepId::Oidc, OidcOutputs { .. })`.
pub fn prior<T: StepOutputs>(step: StepId, outputs: T) -> (String, Outputs) {
    assert!(
        T::belongs_to(&step),
        "{} are not outputs of {step}",
        std::any::type_name::<T>()
    );
    (step.to_string(), outputs.into_outputs())
}

/// A command for `step`/`action` of cluster `cluster`, attempt 1, with the outputs of earlier
/// steps as given (`[prior(StepId::Oidc, outputs)]`). `step` is a [`StepId`], or any string
/// (a step no service owns).
pub fn command(
    cluster: &str,
    spec: ClusterSpec,
    step: impl std::fmt::Display,
    action: Action,
    outputs: impl IntoIterator<Item = (String, Outputs)>,
) -> StepCommand {
    command_for(&tenant(), cluster, spec, step, action, outputs)
}

/// [`command`] under `tenant`.
pub fn command_for(
    tenant: &TenantId,
    cluster: &str,
    spec: ClusterSpec,
    step: impl std::fmt::Display,
    action: Action,
    outputs: impl IntoIterator<Item = (String, Outputs)>,
) -> StepCommand {
    let names = names_for(tenant, cluster, &spec);
    StepCommand {
        v: ENVELOPE_VERSION,
        saga_id: format!("saga-{cluster}"),
        tenant: tenant.clone(),
        cluster: cluster.to_owned(),
        step: step.to_string(),
        action,
        attempt: 1,
        fence: 1,
        not_before: None,
        deadline: time::OffsetDateTime::now_utc() + time::Duration::hours(1),
        lease_ms: 60_000,
        memo: serde_json::Value::Null,
        waiting_since: None,
        dispatched_in: None,
        context: StepContext {
            cluster_uid: format!("{cluster}-uid"),
            names,
            spec,
            outputs: outputs.into_iter().collect::<BTreeMap<_, _>>(),
            management_cluster: hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER.to_owned(),
        },
    }
}
