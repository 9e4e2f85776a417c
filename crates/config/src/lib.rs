//! Typed, layered configuration shared by every role: built-in defaults, then a file
//! (`--config`, TOML or JSON), then environment variables `HYPERSAGA_<SECTION>__<KEY>`, then
//! command-line flags. Validated before any port is bound; secrets never print.
#![forbid(unsafe_code)]

mod secret;
mod token;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Json, Serialized, Toml};
use hypersaga_model::TenantId;
use serde::{Deserialize, Serialize};

pub use secret::Secret;
pub use token::TokenDigest;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("configuration is invalid")]
    Load(#[from] Box<figment::Error>),
    #[error("configuration is invalid: {0}")]
    Invalid(String),
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

/// One tenant: the bearer tokens its callers present (by digest), and the Azure principal and
/// subscription its clusters are built in.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    pub id: TenantId,
    /// Digests of the tokens that authenticate as this tenant; several during a rotation.
    pub tokens: Vec<TokenDigest>,
    pub azure: TenantAzure,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantAzure {
    /// Entra (AAD) tenant id.
    pub tenant_id: String,
    pub subscription_id: String,
    pub client_id: String,
    pub client_secret: Secret,
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
    /// Largest request message accepted.
    pub max_message_bytes: usize,
    /// HTTP/2 keepalive pings to idle clients, and how long to wait for their answer.
    pub keepalive_interval_s: u64,
    pub keepalive_timeout_s: u64,
    /// Requests per second each tenant may make (sustained), and in a burst; beyond them
    /// calls are refused `RESOURCE_EXHAUSTED`. 0: no limit.
    pub requests_per_sec_per_tenant: u32,
    pub request_burst_per_tenant: u32,
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
            max_message_bytes: 4 * 1024 * 1024,
            keepalive_interval_s: 30,
            keepalive_timeout_s: 10,
            requests_per_sec_per_tenant: 50,
            request_burst_per_tenant: 200,
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
    /// saga pauses with a reason.
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
    /// environment variables (`HYPERSAGA_NATS__URL=nats://…`).
    pub fn load(file: Option<&Path>) -> Result<Self> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(f) = file {
            fig = if f.extension().is_some_and(|e| e == "json") {
                fig.merge(Json::file_exact(f))
            } else {
                fig.merge(Toml::file_exact(f))
            };
        }
        // Only `SECTION__KEY` variables: the client commands' own (`HYPERSAGA_ENDPOINTS`,
        // `HYPERSAGA_TOKEN`, …) share the prefix, and a user who exported one must not see
        // every service refuse to start over an "unknown field".
        fig = fig.merge(
            Env::prefixed("HYPERSAGA_")
                .filter(|key| key.as_str().contains("__"))
                .split("__"),
        );
        let config: Config = fig.extract().map_err(Box::new)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what types cannot: unique tenants and tokens, parsable URLs.
    pub fn validate(&self) -> Result<()> {
        let mut problems = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let mut tokens = std::collections::HashSet::new();
        for (i, t) in self.tenants.iter().enumerate() {
            if !ids.insert(t.id.as_str()) {
                problems.push(format!("tenants[{i}].id: duplicate tenant {}", t.id));
            }
            if t.tokens.is_empty() {
                problems.push(format!(
                    "tenants[{i}].tokens: at least one token digest is required (`hypersaga token new`)"
                ));
            }
            for (j, digest) in t.tokens.iter().enumerate() {
                if !tokens.insert(digest) {
                    problems.push(format!(
                        "tenants[{i}].tokens[{j}]: the same token is listed twice (here or for another tenant)"
                    ));
                }
            }
        }
        for id in self.quotas.tenants.keys() {
            if !self.tenants.iter().any(|t| t.id.as_str() == id) {
                problems.push(format!("quotas.tenants.{id}: no such tenant"));
            }
        }
        for (field, value) in [
            (
                "azure.resource_manager_url",
                &self.azure.resource_manager_url,
            ),
            ("azure.authority_host", &self.azure.authority_host),
        ] {
            if url::Url::parse(value).is_err() {
                problems.push(format!("{field}: {value:?} is not a URL"));
            }
        }
        // Keys beside anonymously served issuers would be one mis-set container from the
        // internet, and readable with the publishing key.
        if !self.signing_keys.endpoint.is_empty()
            && self.signing_keys.endpoint.trim_end_matches('/')
                == self.blob.endpoint.trim_end_matches('/')
        {
            problems.push(
                "signing_keys.endpoint: the signing keys need a storage account of their own, not blob's"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(problems.join("; ")))
        }
    }

    /// The tenant a bearer token belongs to. Every digest is compared, each in constant time,
    /// so how long this takes says nothing about which tenant or token came close.
    pub fn tenant_by_token(&self, token: &str) -> Option<&TenantConfig> {
        let mut found = None;
        for tenant in &self.tenants {
            for digest in &tenant.tokens {
                if digest.matches(token) && found.is_none() {
                    found = Some(tenant);
                }
            }
        }
        found
    }

    pub fn tenant(&self, id: &TenantId) -> Option<&TenantConfig> {
        self.tenants.iter().find(|t| &t.id == id)
    }

    /// The effective configuration as JSON with every secret replaced, for `--dump-config`.
    pub fn redacted_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        secret::redact(&mut value, self);
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }
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
            azure: TenantAzure {
                tenant_id: "t".into(),
                subscription_id: "s".into(),
                client_id: "c".into(),
                client_secret: Secret::new("x"),
            },
        };
        let tokenless = TenantConfig {
            id: TenantId::new("b").unwrap(),
            tokens: vec![],
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
}
