//! Typed, layered configuration shared by every role: built-in defaults, then a file
//! (`--config`, TOML or JSON), then environment variables `HYPERSAGA_<SECTION>__<KEY>` (see
//! [`env`] for the mapping), then command-line flags. Validated before any port is bound,
//! every problem named by its setting; secrets never print.
#![forbid(unsafe_code)]

pub mod env;
mod secret;
mod token;
mod validate;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format, Json, Serialized, Toml};
use figment::value::Dict;
use hypersaga_model::TenantId;
use serde::{Deserialize, Serialize};

pub use secret::Secret;
pub use token::{TokenDigest, new_token};
pub use validate::{Problem, Problems, Role};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Everything found wrong, each with its setting (or environment variable).
    #[error("configuration is invalid ({}):\n{}", .0.summary(), .0)]
    Invalid(Problems),
}

impl Error {
    pub fn problems(&self) -> &[Problem] {
        match self {
            Error::Invalid(p) => &p.0,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The whole configuration. Every role reads the same shape and uses its own sections.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[derive(Default)]
pub struct Config {
    pub nats: NatsConfig,
    pub tenants: Vec<TenantConfig>,
    pub azure: AzureConfig,
    pub blob: BlobConfig,
    /// The private store of the tenants' OIDC signing keys: a storage account of its own,
    /// never the one in `blob` that serves the issuers anonymously. Read by identity and
    /// controlplane only.
    pub signing_keys: BlobConfig,
    pub kube: KubeConfig,
    pub gateway: GatewayConfig,
    pub coordinator: CoordinatorConfig,
    pub worker: WorkerConfig,
    pub log: LogConfig,
    pub health: HealthConfig,
    pub quotas: QuotasConfig,
    pub federation: FederationConfig,
}

/// hypersaga's own OIDC issuer, which each tenant's Entra trusts through a federated
/// credential on the application the tenant registered: the roles that call Azure present a
/// client assertion signed with this key instead of any secret of the tenant's.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FederationConfig {
    /// The issuer URL: its `/.well-known/openid-configuration` and key set are served there
    /// (`deploy/federation-issuer.sh` writes them; `hypersaga dev` publishes its own). Empty: tenants without a configured client
    /// secret cannot be reached.
    pub issuer: String,
    /// PEM private key (RSA) the assertions are signed with; read by the roles that call
    /// Azure.
    pub signing_key_file: Option<PathBuf>,
    /// `aud` of the assertions: Entra's token exchange audience.
    pub audience: String,
}

impl Default for FederationConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            signing_key_file: None,
            audience: FEDERATION_AUDIENCE.into(),
        }
    }
}

/// The audience Entra expects of a federated credential in public Azure.
pub const FEDERATION_AUDIENCE: &str = "api://AzureADTokenExchange";

impl FederationConfig {
    /// The subject a tenant's federated credential must name: one per tenant, so one tenant's
    /// credential never lets hypersaga act as another's.
    pub fn subject(tenant: &TenantId) -> String {
        format!("hypersaga:tenant:{tenant}")
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NatsConfig {
    pub url: String,
    /// Subject prefix (`hcp` → `hcp.<tenant>.cmd.<service>`).
    pub prefix: String,
    /// Directory of the roles' nkey seeds, `<role>.nk` each (`hypersaga bus credentials`
    /// writes them). A process reads only its own role's file, so a deployment mounts only
    /// that one. Unset: the bus is open (no authentication), which only tests should run.
    pub credentials_dir: Option<std::path::PathBuf>,
    /// CA bundle of the NATS server's certificate; set, connections require TLS.
    pub ca_file: Option<std::path::PathBuf>,
    /// Copies of every stream and bucket (3 on a production cluster). Existing ones are
    /// brought to it at the coordinator's start.
    pub replicas: usize,
}

impl Default for NatsConfig {
    fn default() -> Self {
        Self {
            url: "nats://127.0.0.1:4222".into(),
            prefix: "hcp".into(),
            credentials_dir: None,
            ca_file: None,
            replicas: 1,
        }
    }
}

/// A tenant declared in the configuration (the others are onboarded through the admin API and
/// kept on the bus): the bearer tokens its callers present (by digest), and the Azure
/// application and subscription its clusters are built in.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    pub id: TenantId,
    /// Digests of the tokens that authenticate as this tenant; several during a rotation.
    pub tokens: Vec<TokenDigest>,
    /// Digests of the passwords its audit readers connect to the bus with (user
    /// `audit-<tenant>`), checked by the gateway's auth callout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit_credentials: Vec<TokenDigest>,
    pub azure: TenantAzure,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantAzure {
    /// Entra (AAD) tenant id.
    pub tenant_id: String,
    pub subscription_id: String,
    pub client_id: String,
    /// A long-lived client secret: only where a user explicitly configures one (each role
    /// warns at start). Unset, hypersaga reaches the tenant through workload identity
    /// federation and holds no secret of the tenant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AzureConfig {
    pub resource_manager_url: String,
    pub authority_host: String,
    /// Extra CA bundle to trust (the dev CA); system roots are always trusted.
    pub ca_bundle: Option<PathBuf>,
    /// LRO poll interval when Azure sends no `Retry-After` (Azure SDKs use 30 s).
    pub lro_poll_interval_ms: u64,
    pub lro_timeout_s: u64,
    /// The ARM regional instance requests reach: ARM throttles per region, so budgets are
    /// kept per region.
    pub arm_region: String,
    /// The request budget every replica of every service shares per subscription.
    pub budget: ArmBudget,
}

/// ARM's throttling limits per subscription × principal × region (since 2024: reads 250 /
/// 25 s⁻¹, writes and deletes 200 / 10 s⁻¹), and the share of them hypersaga allows itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArmBudget {
    /// Off: requests go out unpaced and ARM's 429s are the only brake.
    pub enabled: bool,
    pub reads_per_sec: f64,
    pub reads_burst: u32,
    pub writes_per_sec: f64,
    pub writes_burst: u32,
    pub deletes_per_sec: f64,
    pub deletes_burst: u32,
    /// Fraction of the limits used (the rest is left for other clients of the subscription
    /// and for clock skew between replicas).
    pub headroom: f64,
    /// A step is held back (without running, without a worker) while its subscription's
    /// budget is spent further ahead than this.
    pub defer_after_ms: u64,
}

impl Default for ArmBudget {
    fn default() -> Self {
        Self {
            enabled: true,
            reads_per_sec: 25.0,
            reads_burst: 250,
            writes_per_sec: 10.0,
            writes_burst: 200,
            deletes_per_sec: 10.0,
            deletes_burst: 200,
            headroom: 0.9,
            defer_after_ms: 2_000,
        }
    }
}

impl Default for AzureConfig {
    fn default() -> Self {
        Self {
            resource_manager_url: "https://management.azure.com".into(),
            authority_host: "https://login.microsoftonline.com".into(),
            ca_bundle: None,
            lro_poll_interval_ms: 30_000,
            lro_timeout_s: 1800,
            arm_region: "eastus".into(),
            budget: ArmBudget::default(),
        }
    }
}

/// A blob storage account: `blob` hosts the tenants' OIDC issuer documents (public
/// containers), `signing_keys` their signing keys (private containers).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlobConfig {
    /// e.g. `http://127.0.0.1:10000/devstoreaccount1` (Azurite, path style).
    pub endpoint: String,
    pub account_name: String,
    pub account_key: Secret,
}

impl Default for BlobConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            account_name: String::new(),
            account_key: Secret::new(""),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubeConfig {
    /// Kubeconfig of the management cluster; empty = the usual inference (in-cluster, `~/.kube`).
    pub kubeconfig: Option<PathBuf>,
    /// Pull secret (dockerconfigjson) given to every HostedCluster.
    pub pull_secret: Option<Secret>,
    /// How long the control plane step waits for `Available` before failing retryably.
    pub available_timeout_s: Option<u64>,
    /// How often a HostedCluster or NodePool still coming up (or going) is looked at again.
    /// The wait holds no worker: each look is one short re-check the saga sends.
    pub recheck_interval_ms: Option<u64>,
    /// The management clusters hosted control planes are placed on. Empty: one, `default`,
    /// reached through `kubeconfig`, in every region, with no capacity limit.
    pub management_clusters: Vec<ManagementClusterConfig>,
}

/// One management cluster: where it is, how many hosted control planes it may carry, and how
/// to reach it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagementClusterConfig {
    /// `[a-z0-9-]{1,40}`; recorded on every cluster placed on it.
    pub name: String,
    /// The Azure region its clusters are created in (a cluster's `spec.location`).
    pub region: String,
    /// Hosted control planes it may carry (ARO-HCP sizes stamps in the dozens).
    pub capacity: u32,
    /// Its kubeconfig; unset, the usual inference (in-cluster, `~/.kube`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<PathBuf>,
}

impl KubeConfig {
    /// The management clusters, the implicit `default` one when none are listed (capacity 0:
    /// unlimited, region empty: any).
    pub fn management_clusters(&self) -> Vec<ManagementClusterConfig> {
        if !self.management_clusters.is_empty() {
            return self.management_clusters.clone();
        }
        vec![ManagementClusterConfig {
            name: hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER.to_owned(),
            region: String::new(),
            capacity: 0,
            kubeconfig: self.kubeconfig.clone(),
        }]
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    pub listen: SocketAddr,
    /// Serve over TLS; unset, the API is plaintext (tests only: bearer tokens would travel in
    /// clear).
    pub tls: Option<GatewayTls>,
    /// Serve gRPC server reflection (v1 and v1alpha), for tools such as grpcurl.
    pub reflection: bool,
    /// Largest request message accepted. A valid request is a few KB (every field has its own
    /// limit); this bounds what a call may make the gateway read before its fields are checked.
    pub max_message_bytes: usize,
    /// HTTP/2 keepalive pings to idle clients, and how long to wait for their answer.
    pub keepalive_interval_s: u64,
    pub keepalive_timeout_s: u64,
    /// Requests per second each tenant may make (sustained), and in a burst; beyond them
    /// calls are refused `RESOURCE_EXHAUSTED`. 0: no limit.
    pub requests_per_sec_per_tenant: u32,
    pub request_burst_per_tenant: u32,
    /// Who may call the admin API (`hypersaga.v1.AdminService`: onboard, suspend and remove
    /// tenants). Their tokens are never a tenant's; none listed, the admin API refuses every
    /// call.
    pub admins: Vec<AdminConfig>,
    /// Where to serve the live view of operations (a web page and its HTTP JSON API, with the
    /// tenants' bearer tokens, over TLS when `tls` is set, as gRPC is). Unset: not served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_listen: Option<SocketAddr>,
}

/// One admin of the platform: a name (the actor audited for everything it does) and the
/// digests of its bearer tokens.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    pub name: String,
    pub tokens: Vec<TokenDigest>,
}

/// The gateway's certificate, and optionally the CA of client certificates it accepts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayTls {
    /// PEM certificate chain and private key.
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// CA of client certificates. Callers may present one (it is verified); whether one is
    /// required is `require_client_cert`.
    pub client_ca_file: Option<PathBuf>,
    #[serde(default)]
    pub require_client_cert: bool,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 50051)),
            tls: None,
            reflection: true,
            max_message_bytes: 1024 * 1024,
            keepalive_interval_s: 30,
            keepalive_timeout_s: 10,
            requests_per_sec_per_tenant: 50,
            request_burst_per_tenant: 200,
            admins: Vec::new(),
            web_listen: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoordinatorConfig {
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
    pub create_timeout_s: u64,
    pub delete_timeout_s: u64,
    /// How often every unfinished saga is re-examined: a safety net only, since each saga
    /// carries a durable timer for whatever falls due next.
    pub resync_interval_ms: u64,
    /// Events processed at once.
    pub concurrency: usize,
    /// An event not acknowledged within this (its coordinator died) goes to another replica.
    pub ack_wait_s: u64,
    /// Silence allowed from a worker running a step before the coordinator takes it back
    /// (workers heartbeat at a third of it).
    pub lease_ms: u64,
    /// How long a dispatched command may wait for a free worker before it is presumed lost.
    pub start_lease_ms: u64,
    /// Wall time one action of one step may take, waits and retries included, before the
    /// saga pauses with a reason. Time spent waiting for the subscription's shared ARM
    /// request budget is not the step's own and does not count.
    pub step_timeout_s: u64,
    /// Bounds on how soon and how late a waiting step is re-checked.
    pub recheck_min_ms: u64,
    pub recheck_max_ms: u64,
    /// Sagas a replica keeps as it last wrote them, so most transitions need no read (0: none).
    pub cache_sagas: usize,
    /// How long the operations of a deleted cluster stay readable (`GetOperation`,
    /// `ListOperations`) once its delete has finished; the audit stream keeps their events
    /// longer. 0: forever.
    pub deleted_history_s: u64,
    /// Deliveries of an input that fails every time (a saga record this version cannot read)
    /// before it is moved to `HCP_DEAD`; the pause between them grows from 0.5 s to 30 s, so
    /// 80 is about 25 minutes of trying.
    pub poison_after: u32,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base_delay_ms: 2_000,
            max_delay_ms: 120_000,
            create_timeout_s: 3600,
            delete_timeout_s: 12 * 3600,
            resync_interval_ms: 300_000,
            concurrency: 64,
            ack_wait_s: 30,
            lease_ms: 60_000,
            start_lease_ms: 300_000,
            step_timeout_s: 2_700,
            recheck_min_ms: 500,
            recheck_max_ms: 30_000,
            cache_sagas: 10_000,
            deleted_history_s: 30 * 24 * 3600,
            poison_after: 80,
        }
    }
}

/// Per-tenant limits the gateway enforces (`RESOURCE_EXHAUSTED` beyond them).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotasConfig {
    /// Clusters a tenant may have (any phase but deleted).
    pub max_clusters: u32,
    /// Operations of a tenant that have not finished (paused ones included).
    pub max_operations_in_flight: u32,
    /// Overrides by tenant id (`[quotas.tenants.acme] max_clusters = 500`).
    pub tenants: BTreeMap<String, QuotaOverrides>,
}

impl Default for QuotasConfig {
    fn default() -> Self {
        Self {
            max_clusters: 100,
            max_operations_in_flight: 64,
            tenants: BTreeMap::new(),
        }
    }
}

/// One tenant's quotas where they differ from the defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaOverrides {
    pub max_clusters: Option<u32>,
    pub max_operations_in_flight: Option<u32>,
}

/// The quotas that apply to one tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quotas {
    pub max_clusters: u32,
    pub max_operations_in_flight: u32,
}

impl QuotasConfig {
    /// The defaults, with the tenant's overrides applied.
    pub fn for_tenant(&self, tenant: &TenantId) -> Quotas {
        let o = self.tenants.get(tenant.as_str());
        Quotas {
            max_clusters: o.and_then(|o| o.max_clusters).unwrap_or(self.max_clusters),
            max_operations_in_flight: o
                .and_then(|o| o.max_operations_in_flight)
                .unwrap_or(self.max_operations_in_flight),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// Steps one service replica runs at once.
    pub concurrency: usize,
    /// JetStream ack wait; a replica that dies mid-step has its command redelivered after it.
    pub ack_wait_s: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 16,
            ack_wait_s: 30,
        }
    }
}

/// Where a role answers liveness, readiness and metrics scrapes (`/healthz`, `/readyz`,
/// `/metrics`). Unset: not served (several roles on one host, as under `hypersaga dev`, would
/// otherwise contend for one port).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HealthConfig {
    pub listen: Option<SocketAddr>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub filter: String,
    /// `text` or `json`.
    pub format: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            filter: "info".into(),
            format: "text".into(),
        }
    }
}

impl Config {
    /// Defaults, then `file` (TOML, or JSON when it ends in `.json`), then `HYPERSAGA_…`
    /// environment variables (`HYPERSAGA_NATS__URL=nats://…`), then [`Config::validate`].
    pub fn load(file: Option<&Path>) -> Result<Self> {
        Self::load_with(file, Self::process_env())
    }

    /// As [`Config::load`], with the environment given rather than the process's.
    pub fn load_with(
        file: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self> {
        match Self::load_checked(file, vars) {
            (Some(config), problems) if problems.is_empty() => Ok(config),
            (_, problems) => Err(Error::Invalid(Problems(problems))),
        }
    }

    /// The configuration, if it could be read at all, and every problem found: for
    /// `serve --check-config`, which goes on to check what the role needs even when some
    /// values are wrong, so that one run lists everything.
    pub fn load_checked(
        file: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> (Option<Self>, Vec<Problem>) {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(f) = file {
            fig = if f.extension().is_some_and(|e| e == "json") {
                fig.merge(Json::file_exact(f))
            } else {
                fig.merge(Toml::file_exact(f))
            };
        }
        let (env, mut problems) = env::EnvLayer::read(vars);
        let base: Dict = match fig.extract() {
            Ok(base) => base,
            Err(e) => {
                problems.extend(figment_problems(e));
                return (None, problems);
            }
        };
        let (overrides, more) = env.over(base);
        problems.extend(more);
        match fig.merge(overrides).extract::<Config>() {
            Ok(config) => {
                problems.extend(config.problems());
                (Some(config), problems)
            }
            Err(e) => {
                problems.extend(figment_problems(e));
                (None, problems)
            }
        }
    }

    /// The process's environment, for [`Config::load_checked`].
    pub fn process_env() -> impl Iterator<Item = (String, String)> {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
    }

    /// Every section's rules ([`Config::problems`]): zero or absurd values, contradictions.
    pub fn validate(&self) -> Result<()> {
        let problems = self.problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(Problems(problems)))
        }
    }

    /// A configuration with every optional part present and one entry in every list and map
    /// (named `*`), from which [`env::settings`] lists every setting. Its values mean nothing.
    pub fn every_setting() -> Config {
        let digest = TokenDigest::of("0123456789abcdef-sample");
        Config {
            nats: NatsConfig {
                credentials_dir: Some(PathBuf::new()),
                ca_file: Some(PathBuf::new()),
                ..NatsConfig::default()
            },
            tenants: vec![TenantConfig {
                id: TenantId::new("sample").expect("a valid tenant id"),
                tokens: vec![digest],
                audit_credentials: Vec::new(),
                azure: TenantAzure {
                    tenant_id: String::new(),
                    subscription_id: String::new(),
                    client_id: String::new(),
                    client_secret: Some(Secret::new("")),
                },
            }],
            azure: AzureConfig {
                ca_bundle: Some(PathBuf::new()),
                ..AzureConfig::default()
            },
            kube: KubeConfig {
                kubeconfig: Some(PathBuf::new()),
                pull_secret: Some(Secret::new("")),
                available_timeout_s: Some(0),
                recheck_interval_ms: Some(0),
                management_clusters: vec![ManagementClusterConfig {
                    name: "mc-1".into(),
                    region: "eastus".into(),
                    capacity: 50,
                    kubeconfig: Some(PathBuf::new()),
                }],
            },
            gateway: GatewayConfig {
                tls: Some(GatewayTls {
                    cert_file: PathBuf::new(),
                    key_file: PathBuf::new(),
                    client_ca_file: Some(PathBuf::new()),
                    require_client_cert: false,
                }),
                admins: vec![AdminConfig {
                    name: "sample".into(),
                    tokens: vec![TokenDigest::of("0123456789abcdef-admin")],
                }],
                web_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
                ..GatewayConfig::default()
            },
            health: HealthConfig {
                listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            },
            federation: FederationConfig {
                issuer: "https://issuer.example".into(),
                signing_key_file: Some(PathBuf::new()),
                ..FederationConfig::default()
            },
            quotas: QuotasConfig {
                tenants: BTreeMap::from([(
                    "*".to_owned(),
                    QuotaOverrides {
                        max_clusters: Some(0),
                        max_operations_in_flight: Some(0),
                    },
                )]),
                ..QuotasConfig::default()
            },
            ..Config::default()
        }
    }

    /// The tenant a bearer token belongs to, among the configured ones. Every digest is
    /// compared, each in constant time, so how long this takes says nothing about which
    /// tenant or token came close.
    pub fn tenant_by_token(&self, token: &str) -> Option<&TenantConfig> {
        by_token(&self.tenants, |t| &t.tokens, token)
    }

    /// The admin a bearer token belongs to, compared as [`Config::tenant_by_token`] does.
    pub fn admin_by_token(&self, token: &str) -> Option<&AdminConfig> {
        by_token(&self.gateway.admins, |a| &a.tokens, token)
    }

    /// The configured tenants whose Azure access is a client secret (each role warns at start).
    pub fn tenants_with_client_secrets(&self) -> Vec<&TenantId> {
        self.tenants
            .iter()
            .filter(|t| t.azure.client_secret.is_some())
            .map(|t| &t.id)
            .collect()
    }

    /// The effective configuration as JSON with every secret replaced, for `--dump-config`.
    pub fn redacted_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        secret::redact(&mut value, self);
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }
}

/// The item of `items` one of whose digests `token` matches. Every digest is compared, each in
/// constant time, so how long this takes says nothing about which item or token came close.
fn by_token<'a, T>(
    items: &'a [T],
    digests: impl Fn(&T) -> &Vec<TokenDigest>,
    token: &str,
) -> Option<&'a T> {
    let mut found = None;
    for item in items {
        for digest in digests(item) {
            if digest.matches(token) && found.is_none() {
                found = Some(item);
            }
        }
    }
    found
}

/// figment's errors (a file that does not parse, a value of the wrong type, an unknown key)
/// as problems, each named by its setting, or by the variable that set it.
fn figment_problems(e: figment::Error) -> Vec<Problem> {
    e.into_iter()
        .map(|e| {
            let from_env = e
                .metadata
                .as_ref()
                .is_some_and(|m| m.name.starts_with(env::PREFIX));
            let setting = if from_env && !e.path.is_empty() {
                let keys: Vec<&str> = e.path.iter().map(String::as_str).collect();
                env::variable_for(&keys)
            } else if e.path.is_empty() {
                "configuration".to_owned()
            } else {
                let mut s = String::new();
                for key in &e.path {
                    if key.parse::<usize>().is_ok() {
                        s.push_str(&format!("[{key}]"));
                    } else {
                        if !s.is_empty() {
                            s.push('.');
                        }
                        s.push_str(key);
                    }
                }
                s
            };
            let source = e.metadata.as_ref().map(|m| match &m.source {
                Some(source) => format!(" (in {source})"),
                None if from_env => String::new(),
                None => format!(" (in {})", m.name),
            });
            Problem::new(setting, format!("{}{}", e.kind, source.unwrap_or_default()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_override_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            r#"
[nats]
url = "nats://10.0.0.1:4222"
[[tenants]]
id = "acme"
tokens = ["sha256:0f0f3b739600eddaded8f332529fbdd1fdcf9a17bd304c5110245506185cdd6c"]
[tenants.azure]
tenant_id = "t"
subscription_id = "s"
client_id = "c"
client_secret = "shh"
"#,
        )
        .unwrap();
        let c = Config::load(Some(&path)).unwrap();
        assert_eq!(c.nats.url, "nats://10.0.0.1:4222");
        assert_eq!(c.nats.prefix, "hcp");
        assert_eq!(
            c.tenant_by_token("0123456789abcdef-acme")
                .unwrap()
                .id
                .as_str(),
            "acme"
        );
        assert!(c.tenant_by_token("nope").is_none());
        let dumped = c.redacted_json();
        assert!(
            !dumped.contains("shh") && !dumped.contains("0123456789abcdef-acme"),
            "{dumped}"
        );
        assert!(!format!("{c:?}").contains("shh"));
    }

    #[test]
    // figment's `Jail` closure returns figment's own (large) error type.
    #[allow(clippy::result_large_err)]
    fn section_variables_override_and_the_client_commands_variables_are_not_config() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("HYPERSAGA_NATS__URL", "nats://10.0.0.9:4222");
            // What a user of the client commands has exported.
            jail.set_env("HYPERSAGA_ENDPOINTS", "/tmp/endpoints.json");
            jail.set_env("HYPERSAGA_TOKEN", "hs_acme_0123");
            let c = Config::load(None).map_err(|e| e.to_string())?;
            assert_eq!(c.nats.url, "nats://10.0.0.9:4222");
            jail.set_env("HYPERSAGA_NATS__NO_SUCH_KEY", "x");
            let e = format!("{:?}", Config::load(None).unwrap_err());
            assert!(e.contains("no_such_key"), "{e}");
            Ok(())
        });
    }

    #[test]
    fn quotas_default_and_are_overridden_per_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let tenant = |id: &str| {
            let digest = TokenDigest::of(&format!("0123456789abcdef-{id}"));
            format!(
                r#"
[[tenants]]
id = "{id}"
tokens = ["{digest}"]
[tenants.azure]
tenant_id = "t"
subscription_id = "s"
client_id = "c"
client_secret = "shh"
"#
            )
        };
        let quotas = r#"
[quotas]
max_operations_in_flight = 10
[quotas.tenants.acme]
max_clusters = 3
"#;
        std::fs::write(
            &path,
            format!("{quotas}{}{}", tenant("acme"), tenant("globex")),
        )
        .unwrap();
        let c = Config::load(Some(&path)).unwrap();
        let q = |id: &str| c.quotas.for_tenant(&TenantId::new(id).unwrap());
        assert_eq!(
            q("acme"),
            Quotas {
                max_clusters: 3,
                max_operations_in_flight: 10
            }
        );
        assert_eq!(
            q("globex"),
            Quotas {
                max_clusters: 100,
                max_operations_in_flight: 10
            }
        );
        std::fs::write(
            &path,
            format!(
                "{}\n[quotas.tenants.nobody]\nmax_clusters = 1\n",
                tenant("acme")
            ),
        )
        .unwrap();
        let err = Config::load(Some(&path)).unwrap_err().to_string();
        assert!(err.contains("quotas.tenants.nobody"), "{err}");
    }

    #[test]
    fn invalid_tenants_are_refused() {
        let mut c = Config::default();
        let t = TenantConfig {
            id: TenantId::new("a").unwrap(),
            tokens: vec![TokenDigest::of("0123456789abcdef-a")],
            audit_credentials: Vec::new(),
            azure: TenantAzure {
                tenant_id: "t".into(),
                subscription_id: "s".into(),
                client_id: "c".into(),
                client_secret: Some(Secret::new("x")),
            },
        };
        let tokenless = TenantConfig {
            id: TenantId::new("b").unwrap(),
            tokens: vec![],
            audit_credentials: Vec::new(),
            ..t.clone()
        };
        c.tenants = vec![t.clone(), t, tokenless];
        let err = c.validate().unwrap_err().to_string();
        assert!(
            err.contains("duplicate tenant")
                && err.contains("tenants[1].tokens[0]: the same token is listed twice")
                && err.contains("tenants[2].tokens: at least one"),
            "{err}"
        );
    }

    /// The settings named by a failed load, in order.
    fn settings_of(e: &Error) -> Vec<String> {
        e.problems().iter().map(|p| p.setting.clone()).collect()
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    const ACME: &str = r#"
[[tenants]]
id = "acme"
tokens = ["sha256:0f0f3b739600eddaded8f332529fbdd1fdcf9a17bd304c5110245506185cdd6c"]
[tenants.azure]
tenant_id = "t"
subscription_id = "s"
client_id = "c"
client_secret = "from-the-file"
"#;

    #[test]
    fn the_defaults_are_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn zero_and_absurd_values_are_refused_all_at_once_each_with_its_setting() {
        let mut c = Config::default();
        c.nats.url = "http://nats:4222".into();
        c.nats.prefix = "hcp.prod".into();
        c.nats.replicas = 7;
        c.azure.lro_poll_interval_ms = 0;
        c.azure.budget.writes_per_sec = 0.0;
        c.azure.budget.headroom = 1.5;
        c.kube.recheck_interval_ms = Some(0);
        c.gateway.listen = "0.0.0.0:0".parse().unwrap();
        c.gateway.max_message_bytes = 10;
        c.gateway.web_listen = Some(c.gateway.listen);
        c.health.listen = Some(c.gateway.listen);
        c.quotas.max_clusters = 0;
        c.coordinator.concurrency = 0;
        c.coordinator.ack_wait_s = 0;
        c.coordinator.resync_interval_ms = 5;
        c.coordinator.max_delay_ms = 10;
        c.coordinator.recheck_max_ms = 1;
        c.worker.concurrency = 100_000;
        c.worker.ack_wait_s = 0;
        c.log.format = "xml".into();
        let err = c.validate().unwrap_err();
        let said = err.to_string();
        for setting in [
            "nats.url",
            "nats.prefix",
            "nats.replicas",
            "azure.lro_poll_interval_ms",
            "azure.budget.writes_per_sec",
            "azure.budget.headroom",
            "kube.recheck_interval_ms",
            "gateway.listen",
            "gateway.max_message_bytes",
            "gateway.web_listen",
            "health.listen",
            "quotas.max_clusters",
            "coordinator.concurrency",
            "coordinator.ack_wait_s",
            "coordinator.resync_interval_ms",
            "coordinator.max_delay_ms",
            "coordinator.recheck_max_ms",
            "worker.concurrency",
            "worker.ack_wait_s",
            "log.format",
        ] {
            assert!(
                settings_of(&err).iter().any(|s| s == setting),
                "{setting} not named in:\n{said}"
            );
        }
        assert!(
            said.contains("coordinator.concurrency: 0 is not allowed"),
            "{said}"
        );
        assert!(
            said.contains("worker.concurrency: 100000 is above the maximum 10000"),
            "{said}"
        );
    }

    #[test]
    fn a_lease_shorter_than_the_ack_wait_or_a_deadline_shorter_than_the_lease_is_refused() {
        let mut c = Config::default();
        c.worker.ack_wait_s = 120;
        c.coordinator.lease_ms = 60_000;
        c.coordinator.start_lease_ms = 30_000;
        c.coordinator.step_timeout_s = 10;
        let said = c.validate().unwrap_err().to_string();
        for expected in [
            "coordinator.lease_ms: 60000 ms is shorter than worker.ack_wait_s (120 s)",
            "coordinator.start_lease_ms: 30000 is below coordinator.lease_ms (60000)",
            "coordinator.step_timeout_s: 10 s is shorter than coordinator.lease_ms",
        ] {
            assert!(said.contains(expected), "missing {expected:?} in:\n{said}");
        }
    }

    #[test]
    fn every_setting_is_settable_by_environment_lists_and_tenants_included() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, ACME).unwrap();
        let globex = TokenDigest::of("0123456789abcdef-globex").to_string();
        let rotated = TokenDigest::of("0123456789abcdef-acme-2").to_string();
        let c = Config::load_with(
            Some(&path),
            vars(&[
                ("HYPERSAGA_COORDINATOR__LEASE_MS", "90000"),
                ("HYPERSAGA_AZURE__BUDGET__HEADROOM", "0.5"),
                ("HYPERSAGA_GATEWAY__TLS__CERT_FILE", "/tls/cert.pem"),
                ("HYPERSAGA_GATEWAY__TLS__KEY_FILE", "/tls/key.pem"),
                // The file's tenant: a secret from the environment, a token added.
                (
                    "HYPERSAGA_TENANTS__0__AZURE__CLIENT_SECRET",
                    "from-a-secret",
                ),
                ("HYPERSAGA_TENANTS__0__TOKENS__1", &rotated),
                // A second tenant entirely from the environment.
                ("HYPERSAGA_TENANTS__1__ID", "globex"),
                ("HYPERSAGA_TENANTS__1__TOKENS", &format!("[{globex}]")),
                ("HYPERSAGA_TENANTS__1__AZURE__TENANT_ID", "t2"),
                ("HYPERSAGA_TENANTS__1__AZURE__SUBSCRIPTION_ID", "s2"),
                ("HYPERSAGA_TENANTS__1__AZURE__CLIENT_ID", "c2"),
                ("HYPERSAGA_TENANTS__1__AZURE__CLIENT_SECRET", "shh2"),
                ("HYPERSAGA_QUOTAS__TENANTS__GLOBEX__MAX_CLUSTERS", "3"),
                // Not settings: the client commands' own, and other programs'.
                ("HYPERSAGA_ENDPOINTS", "/tmp/endpoints.json"),
                ("HYPERSAGA_TOKEN", "hs_acme_0123"),
                ("PATH", "/usr/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(c.coordinator.lease_ms, 90_000);
        assert_eq!(c.azure.budget.headroom, 0.5);
        assert_eq!(
            c.gateway.tls.as_ref().map(|t| t.key_file.clone()),
            Some(PathBuf::from("/tls/key.pem"))
        );
        assert_eq!(c.tenants.len(), 2);
        assert_eq!(
            c.tenants[0].azure.client_secret.as_ref().unwrap().expose(),
            "from-a-secret"
        );
        assert_eq!(
            c.tenants[0].azure.subscription_id, "s",
            "the rest of the file's tenant stays"
        );
        assert_eq!(
            c.tenant_by_token("0123456789abcdef-acme-2")
                .map(|t| t.id.as_str()),
            Some("acme")
        );
        assert_eq!(
            c.tenant_by_token("0123456789abcdef-globex")
                .map(|t| t.id.as_str()),
            Some("globex")
        );
        assert_eq!(
            c.quotas
                .for_tenant(&TenantId::new("globex").unwrap())
                .max_clusters,
            3
        );
    }

    #[test]
    fn a_variable_that_names_no_setting_is_refused_by_name() {
        let err = Config::load_with(
            None,
            vars(&[
                ("HYPERSAGA_LOG_FILTER", "debug"),
                ("HYPERSAGA_WORKER__CONCURENCY", "4"),
                ("HYPERSAGA_TENANTS__3__ID", "gap"),
                ("HYPERSAGA_NATS_URL", "nats://10.0.0.1:4222"),
            ]),
        )
        .unwrap_err();
        let said = err.to_string();
        assert_eq!(
            settings_of(&err),
            [
                "HYPERSAGA_LOG_FILTER",
                "HYPERSAGA_WORKER__CONCURENCY",
                "HYPERSAGA_TENANTS__3__ID"
            ],
            "{said}"
        );
        assert!(
            said.contains("did you mean HYPERSAGA_LOG__FILTER?"),
            "{said}"
        );
        assert!(
            said.contains("tenants has 0 entries: the next one is index 0, not 3"),
            "{said}"
        );
        assert!(
            said.contains(
                "no setting `worker.concurency`; did you mean HYPERSAGA_WORKER__CONCURRENCY?"
            ),
            "{said}"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_names_the_variable_that_set_it() {
        let err = Config::load_with(None, vars(&[("HYPERSAGA_WORKER__CONCURRENCY", "many")]))
            .unwrap_err();
        assert_eq!(
            settings_of(&err),
            ["HYPERSAGA_WORKER__CONCURRENCY"],
            "{err}"
        );
        let err =
            Config::load_with(None, vars(&[("HYPERSAGA_WORKER__CONCURRENCY", "0")])).unwrap_err();
        assert_eq!(settings_of(&err), ["worker.concurrency"], "{err}");
    }

    #[test]
    fn the_settings_list_covers_every_optional_part() {
        let sample = serde_json::to_string(&Config::every_setting()).unwrap();
        assert!(
            !sample.contains("null"),
            "an optional setting is missing from Config::every_setting: {sample}"
        );
        let settings = env::settings();
        for s in [
            "coordinator.lease_ms",
            "tenants[].azure.client_secret",
            "tenants[].tokens[]",
            "quotas.tenants.<key>.max_clusters",
            "gateway.tls.client_ca_file",
            "gateway.admins[].tokens[]",
            "federation.signing_key_file",
            "health.listen",
        ] {
            assert!(settings.iter().any(|x| x == s), "{s} not in {settings:?}");
        }
    }

    #[test]
    fn a_role_is_told_what_it_lacks_on_this_host() {
        let mut c = Config::default();
        c.nats.credentials_dir = Some(PathBuf::from("/nonexistent/bus"));
        c.gateway.tls = Some(GatewayTls {
            cert_file: PathBuf::from("/nonexistent/cert.pem"),
            key_file: PathBuf::from("/nonexistent/key.pem"),
            client_ca_file: None,
            require_client_cert: false,
        });
        let said: Vec<String> = c
            .role_problems(Role::Gateway)
            .iter()
            .map(ToString::to_string)
            .collect();
        let said = said.join("\n");
        for expected in [
            "nats.credentials_dir: cannot read /nonexistent/bus/gateway.nk",
            "gateway.tls.cert_file: cannot read /nonexistent/cert.pem",
            "gateway.tls.key_file: cannot read /nonexistent/key.pem",
        ] {
            assert!(said.contains(expected), "missing {expected:?} in:\n{said}");
        }
        assert!(
            !c.role_problems(Role::Coordinator)
                .iter()
                .any(|p| p.setting.starts_with("gateway") || p.setting == "tenants"),
            "the coordinator needs neither the gateway's files nor tenants"
        );
    }
}
