//! [`ArmClients`]: one ARM client per tenant, built on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hypersaga_azure::{
    ArmClient, ArmConfig, AssertionSource, CredentialConfig, Hooks, RequestClass, Secret, ids,
};
use hypersaga_bus::StepError;
use hypersaga_bus::{Action, StepCommand};
use hypersaga_config::{Config, FederationConfig, TenantAzure};
use hypersaga_model::TenantId;
use hypersaga_oidc::{AssertionSigner, SigningKey};
use hypersaga_tenants::Directory;
use url::Url;

use crate::Error;
use crate::errors::step_error;
use crate::fencing::WorkerGuard;
use crate::pacing::Budgets;

/// A tenant's ARM client and the subscription its clusters live in.
#[derive(Clone, Debug)]
pub struct TenantArm {
    /// Authenticated as the tenant's service principal.
    pub client: ArmClient,
    /// The tenant's subscription id.
    pub subscription_id: String,
    /// The client (application) id of the tenant's service principal.
    pub client_id: String,
    /// Its permissions lists read lately, shared by this client's clones
    /// ([`crate::plan::permitted`]).
    pub(crate) permissions: crate::plan::PermissionCache,
}

impl TenantArm {
    /// `/subscriptions/{sub}/resourceGroups/{rg}`.
    pub fn resource_group_id(&self, rg: &str) -> String {
        ids::resource_group_id(&self.subscription_id, rg)
    }

    /// `/subscriptions/{sub}/resourceGroups/{rg}/providers/{resource_type}/{name}`.
    pub fn resource_id(&self, rg: &str, resource_type: &str, name: &str) -> String {
        ids::resource_id(&self.subscription_id, rg, resource_type, name)
    }
}

/// Per-tenant ARM clients. Each tenant has its own application and subscription, so each gets
/// its own client (its own token cache); clients are built on the first step of a tenant and
/// reused, since building one per step would fetch a token per step. Tenants are read live
/// from the [`Directory`]: a client is built again when its tenant's Azure access changes.
pub struct ArmClients {
    resource_manager_url: Url,
    authority_host: Url,
    ca_bundle_pem: Option<String>,
    lro_poll_interval: Duration,
    lro_timeout: Duration,
    tenants: Directory,
    /// hypersaga's own issuer, whose assertions tenants' applications trust (none: only
    /// tenants with a configured client secret can be reached).
    federation: Option<Arc<AssertionSigner>>,
    cache: Mutex<HashMap<TenantId, (Access, TenantArm)>>,
    budgets: Option<Budgets>,
}

impl std::fmt::Debug for ArmClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArmClients")
            .field("resource_manager_url", &self.resource_manager_url.as_str())
            .field("tenants", &self.tenants)
            .finish_non_exhaustive()
    }
}

impl ArmClients {
    /// Reads the endpoints, tenants and CA bundle from `config`. The CA bundle is read here,
    /// once, so a wrong path stops the service at start-up instead of failing every step.
    pub fn new(config: &Config) -> Result<Self, Error> {
        let url = |field: &str, value: &str| {
            Url::parse(value).map_err(|e| Error::Config(format!("{field}: {value:?}: {e}")))
        };
        let ca_bundle_pem = match &config.azure.ca_bundle {
            Some(path) => {
                Some(
                    std::fs::read_to_string(path).map_err(|source| Error::CaBundle {
                        path: path.clone(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        Ok(Self {
            resource_manager_url: url(
                "azure.resource_manager_url",
                &config.azure.resource_manager_url,
            )?,
            authority_host: url("azure.authority_host", &config.azure.authority_host)?,
            ca_bundle_pem,
            // A zero interval would make the client refuse to build; 1 ms is "as fast as ARM allows".
            lro_poll_interval: Duration::from_millis(config.azure.lro_poll_interval_ms.max(1)),
            lro_timeout: Duration::from_secs(config.azure.lro_timeout_s),
            tenants: Directory::configured(config),
            federation: federation(&config.federation)?,
            cache: Mutex::new(HashMap::new()),
            budgets: None,
        })
    }

    /// Serves the tenants of `directory` (the live one the service follows) instead of the
    /// configured ones only.
    pub fn with_tenants(mut self, directory: Directory) -> Self {
        self.tenants = directory;
        self
    }

    /// The tenants served.
    pub fn tenants(&self) -> &Directory {
        &self.tenants
    }

    /// Paces every client's requests through the shared `budgets` (none: unpaced).
    pub fn with_budgets(mut self, budgets: Option<Budgets>) -> Self {
        self.budgets = budgets;
        self
    }

    /// How long a step of `tenant` should be held back before it starts, when its
    /// subscription's budget for what the step does (writes forward, deletes backward) is
    /// spent further ahead than the configured threshold. The worker defers it without
    /// running it, so no slot waits on the budget.
    pub async fn defer(&self, cmd: &StepCommand) -> Option<Duration> {
        let budgets = self.budgets.as_ref()?;
        let tenant = self.tenants.get(&cmd.tenant)?;
        let azure = &tenant.config.azure;
        // A re-check polls (reads); a first attempt writes or deletes.
        let class = match cmd.action {
            _ if cmd.is_recheck() => RequestClass::Read,
            Action::Do => RequestClass::Write,
            Action::Undo => RequestClass::Delete,
        };
        budgets
            .defer(&azure.subscription_id, &azure.client_id, class)
            .await
    }

    /// The client of `tenant`. A tenant unknown here (never onboarded, or removed) is terminal
    /// (`TenantNotConfigured`): retrying cannot make it appear.
    pub fn tenant(&self, tenant: &TenantId) -> Result<TenantArm, StepError> {
        let Some(record) = self.tenants.get(tenant) else {
            return Err(StepError::terminal(
                "TenantNotConfigured",
                format!("tenant {tenant} is not onboarded (or was removed)"),
            )
            .with_target("tenants"));
        };
        let azure = &record.config.azure;
        let access = Access::of(azure);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, arm)) = cache.get(tenant)
            && *held == access
        {
            return Ok(arm.clone());
        }
        let gate = self
            .budgets
            .as_ref()
            .map(|b| b.gate(&azure.subscription_id, &azure.client_id));
        let hooks = Hooks {
            gate,
            guard: Some(Arc::new(WorkerGuard)),
        };
        let client = ArmClient::with_hooks(
            ArmConfig {
                resource_manager_url: self.resource_manager_url.clone(),
                authority_host: self.authority_host.clone(),
                ca_bundle_pem: self.ca_bundle_pem.clone(),
                credential: self.credential(tenant, azure)?,
                lro_poll_interval: self.lro_poll_interval,
                lro_timeout: self.lro_timeout,
            },
            hooks,
        )
        .map_err(step_error)?;
        let arm = TenantArm {
            client,
            subscription_id: azure.subscription_id.clone(),
            client_id: azure.client_id.clone(),
            permissions: Default::default(),
        };
        cache.insert(tenant.clone(), (access, arm.clone()));
        Ok(arm)
    }

    /// How hypersaga authenticates to `tenant`'s directory.
    fn credential(
        &self,
        tenant: &TenantId,
        azure: &TenantAzure,
    ) -> Result<CredentialConfig, StepError> {
        match &azure.client_secret {
            Some(secret) => Ok(CredentialConfig::ClientSecret {
                tenant_id: azure.tenant_id.clone(),
                client_id: azure.client_id.clone(),
                client_secret: Secret::new(secret.expose().to_owned()),
            }),
            None => match &self.federation {
                Some(signer) => Ok(CredentialConfig::ClientAssertion {
                    tenant_id: azure.tenant_id.clone(),
                    client_id: azure.client_id.clone(),
                    assertion: Arc::new(TenantAssertion {
                        signer: signer.clone(),
                        subject: FederationConfig::subject(tenant),
                    }),
                }),
                None => Err(StepError::terminal(
                    "FederationNotConfigured",
                    format!("tenant {tenant} has no client secret, and this service has no workload identity federation issuer configured (federation.issuer, federation.signing_key_file)"),
                )
                .with_target("federation")),
            },
        }
    }
}

/// hypersaga's assertion signer, from `federation` (none when no key is configured).
fn federation(federation: &FederationConfig) -> Result<Option<Arc<AssertionSigner>>, Error> {
    let Some(path) = &federation.signing_key_file else {
        return Ok(None);
    };
    let pem = std::fs::read_to_string(path).map_err(|e| {
        Error::Config(format!(
            "federation.signing_key_file: cannot read {}: {e}",
            path.display()
        ))
    })?;
    let key = SigningKey::from_private_key_pem(&pem)
        .map_err(|e| Error::Config(format!("federation.signing_key_file: {e}")))?;
    if federation.issuer.is_empty() {
        return Err(Error::Config(
            "federation.issuer: empty, but a signing key is configured: tenants' federated credentials trust an issuer URL".into(),
        ));
    }
    Ok(Some(Arc::new(AssertionSigner::new(
        key,
        federation.issuer.clone(),
        federation.audience.clone(),
    ))))
}

/// Assertions for one tenant: hypersaga's issuer, the tenant's own subject.
struct TenantAssertion {
    signer: Arc<AssertionSigner>,
    subject: String,
}

impl AssertionSource for TenantAssertion {
    fn assertion(&self) -> Result<String, String> {
        self.signer
            .assertion(&self.subject)
            .map_err(|e| format!("signing a client assertion: {e}"))
    }
}

/// What a tenant's client was built from: a change of any of it builds a new one.
#[derive(Clone, PartialEq, Eq)]
struct Access {
    tenant_id: String,
    subscription_id: String,
    client_id: String,
    secret: Option<String>,
}

impl Access {
    fn of(azure: &TenantAzure) -> Self {
        Self {
            tenant_id: azure.tenant_id.clone(),
            subscription_id: azure.subscription_id.clone(),
            client_id: azure.client_id.clone(),
            secret: azure.client_secret.as_ref().map(|s| s.expose().to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use hypersaga_config::{Secret as ConfigSecret, TenantConfig};

    use super::*;

    fn config() -> Config {
        Config {
            tenants: vec![TenantConfig {
                id: TenantId::new("acme").expect("tenant"),
                tokens: vec![hypersaga_config::TokenDigest::of("0123456789abcdef-acme")],
                audit_credentials: Vec::new(),
                azure: TenantAzure {
                    tenant_id: "t".into(),
                    subscription_id: "sub-1".into(),
                    client_id: "c".into(),
                    client_secret: Some(ConfigSecret::new("s")),
                },
            }],
            ..Config::default()
        }
    }

    #[test]
    fn clients_are_per_tenant_and_cached() {
        let clients = ArmClients::new(&config()).expect("clients");
        let acme = clients
            .tenant(&TenantId::new("acme").unwrap())
            .expect("acme");
        assert_eq!(acme.subscription_id, "sub-1");
        assert_eq!(
            acme.resource_group_id("rg"),
            "/subscriptions/sub-1/resourceGroups/rg"
        );
        assert_eq!(clients.cache.lock().unwrap().len(), 1);
        clients
            .tenant(&TenantId::new("acme").unwrap())
            .expect("cached");
        assert_eq!(clients.cache.lock().unwrap().len(), 1);
        let e = clients
            .tenant(&TenantId::new("other").unwrap())
            .expect_err("unknown tenant");
        assert_eq!(e.info.code, "TenantNotConfigured");
        assert!(!e.is_retryable());
    }

    #[test]
    fn unreadable_ca_bundle_fails_at_start() {
        let mut c = config();
        c.azure.ca_bundle = Some("/nonexistent/ca.pem".into());
        assert!(matches!(ArmClients::new(&c), Err(Error::CaBundle { .. })));
    }

    #[test]
    fn plain_http_arm_is_a_terminal_step_error() {
        let mut c = config();
        c.azure.resource_manager_url = "http://127.0.0.1:1".into();
        let clients = ArmClients::new(&c).expect("parsed");
        let e = clients
            .tenant(&TenantId::new("acme").unwrap())
            .expect_err("http refused");
        assert_eq!(e.info.code, "AzureClientMisconfigured");
        assert!(!e.is_retryable());
    }
}
