//! The identity service: who the hosted cluster's components are in Azure.
//!
//! | step | do | undo |
//! |---|---|---|
//! | `identity.oidc` | the tenant's OIDC issuer (signing key, discovery document, JWKS), shared by all its clusters | nothing |
//! | `identity.workload` | the tenant's identity RG, 8 user-assigned identities, their 13 federated credentials | the 8 identities (their credentials go with them); the RG stays |
//! | `identity.role-assignments` | the identities' 18 built-in role assignments on the cluster's groups and the public zone's | the 18 assignments |
//!
//! The issuer is never undone: every cluster of the tenant shares it. The identities are
//! named per infra id, so nothing else uses them once their cluster is gone; a delete that
//! asks to keep them (`keep_identities`) never runs this undo (the plan marks the step kept).
#![forbid(unsafe_code)]
// `StepError` is large by design: it keeps Azure's (or Kubernetes') whole error — code,
// message, target, step, Retry-After — for users and operators to act on.
#![allow(clippy::result_large_err)]

mod blob;
mod issuer;
mod roles;
mod sweep;
mod workload;

use std::sync::Arc;

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Action, Outputs, Service, StepCommand, StepError, StepId};
use hypersaga_config::Config;
use hypersaga_oidc::{BlobConfig, BlobPublisher, KeyStore, Migration, Secret};
use hypersaga_stepkit::{ArmClients, ArmStep, Halt, Notes, Ops, unknown_step};
use hypersaga_worker::{Progress, StepHandler, StepResult};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use roles::AUTHORIZATION_API;
pub use workload::{FIC_API, MSI_API, RESOURCES_API};

/// Why the service could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bus, worker or ARM configuration failure.
    #[error(transparent)]
    Stepkit(#[from] hypersaga_stepkit::Error),
    /// The `[blob]` or `[signing_keys]` section is unusable.
    #[error("blob configuration: {0}")]
    Blob(String),
}

/// Runs the identity service until `shutdown`.
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<(), Error> {
    let service = Service::Identity.as_str();
    let bus = hypersaga_stepkit::connect(config, service).await?;
    let budgets = hypersaga_stepkit::budgets(&bus, config).await?;
    let tenants = hypersaga_stepkit::tenants(&bus, config, shutdown.clone()).await?;
    let handler = Arc::new(
        IdentityHandler::new(config)?
            .with_budgets(budgets)
            .with_tenants(tenants.clone()),
    );
    handler.migrate_legacy_keys(config).await;
    hypersaga_stepkit::run_service(config, service, bus, handler, shutdown).await?;
    Ok(())
}

/// Runs the `identity.*` steps.
///
/// Idempotent, as every handler must be: each step looks first and adopts what exists (the
/// tenant's stored signing key, an identity, a federated credential that already says the
/// right thing), and only then creates; names are deterministic, so a redelivered command
/// finds what the first attempt made.
pub struct IdentityHandler {
    arm: ArmClients,
    publisher: BlobPublisher,
    keys: KeyStore,
}

impl IdentityHandler {
    /// Builds the handler: ARM clients from `config.azure`/`config.tenants`, the issuer
    /// publisher from `config.blob`, the signing-key store from `config.signing_keys`. Does
    /// no I/O beyond reading the CA bundle.
    pub fn new(config: &Config) -> Result<Self, Error> {
        let publisher = BlobPublisher::new(blob_config("blob", &config.blob)?)
            .map_err(|e| Error::Blob(e.to_string()))?;
        let keys = KeyStore::new(blob_config("signing_keys", &config.signing_keys)?)
            .map_err(|e| Error::Blob(e.to_string()))?;
        Ok(Self {
            arm: ArmClients::new(config)?,
            publisher,
            keys,
        })
    }

    /// Moves every configured tenant's signing key from where earlier versions kept it (a
    /// private container of the issuers' account) into the key store, so that controlplane,
    /// which can read only the key store, finds the keys of tenants made before. A failure is
    /// logged, not fatal: `identity.oidc` tries the same move before it would make a key.
    pub async fn migrate_legacy_keys(&self, config: &Config) {
        for tenant in &config.tenants {
            let tenant = tenant.id.as_str();
            match self.keys.migrate_legacy(&self.publisher, tenant).await {
                Ok(Migration::NothingToMove) => {}
                Ok(Migration::Conflict { stored, legacy }) => warn!(
                    tenant,
                    stored,
                    legacy,
                    "two different signing keys for the tenant: the key store's is used, the old one left in place"
                ),
                Ok(moved) => info!(tenant, ?moved, "signing key moved into the key store"),
                Err(e) => {
                    warn!(tenant, error = %e, "signing key not moved yet; identity.oidc will try again")
                }
            }
        }
    }

    /// Paces its ARM requests through the shared per-subscription budgets.
    pub fn with_budgets(mut self, budgets: Option<hypersaga_stepkit::Budgets>) -> Self {
        self.arm = self.arm.with_budgets(budgets);
        self
    }

    /// Serves the live tenants (`hypersaga_stepkit::tenants`), not only the configured ones.
    pub fn with_tenants(mut self, tenants: hypersaga_tenants::Directory) -> Self {
        self.arm = self.arm.with_tenants(tenants);
        self
    }
}

/// One pass of a step; the worker's check and the in-place run come with [`ArmStep`].
#[async_trait::async_trait]
impl ArmStep for IdentityHandler {
    async fn step(&self, cmd: &StepCommand, ops: &Ops, notes: &dyn Notes) -> Result<Outputs, Halt> {
        match (cmd.step_id()?, cmd.action) {
            (StepId::Oidc, Action::Do) => {
                Ok(issuer::ensure(&self.publisher, &self.keys, cmd, notes).await?)
            }
            (StepId::WorkloadIdentities, Action::Do) => {
                let arm = self.arm.tenant(&cmd.tenant)?;
                workload::ensure(&arm, cmd, ops, notes).await
            }
            (StepId::RoleAssignments, Action::Do) => {
                let arm = self.arm.tenant(&cmd.tenant)?;
                roles::ensure(&arm, cmd, ops).await
            }
            (StepId::RoleAssignments, Action::Undo) => {
                let arm = self.arm.tenant(&cmd.tenant)?;
                roles::delete(&arm, cmd, ops).await
            }
            (StepId::WorkloadIdentities, Action::Undo) => {
                let arm = self.arm.tenant(&cmd.tenant)?;
                workload::delete(&arm, cmd, ops).await
            }
            (StepId::Sweep(_), Action::Do) => {
                let arm = self.arm.tenant(&cmd.tenant)?;
                sweep::run(&arm, cmd, ops).await
            }
            (StepId::Oidc, Action::Undo) => {
                info!(step = %cmd.step, "the tenant's issuer is shared; undo leaves it in place");
                Ok(Outputs::new())
            }
            _ => Err(unknown_step(cmd).into()),
        }
    }
}

/// One storage account's client settings from its configuration section (`name`, for errors).
fn blob_config(name: &str, section: &hypersaga_config::BlobConfig) -> Result<BlobConfig, Error> {
    if section.endpoint.is_empty() {
        return Err(Error::Blob(format!("{name}.endpoint is required")));
    }
    let blob_endpoint = section
        .endpoint
        .parse()
        .map_err(|e| Error::Blob(format!("{name}.endpoint {:?}: {e}", section.endpoint)))?;
    Ok(BlobConfig {
        blob_endpoint,
        account_name: section.account_name.clone(),
        account_key: Secret::new(section.account_key.expose().to_owned()),
    })
}

#[async_trait::async_trait]
impl StepHandler for IdentityHandler {
    async fn defer(&self, cmd: &StepCommand) -> Option<std::time::Duration> {
        self.arm.defer(cmd).await
    }

    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError> {
        self.check(cmd, progress).await
    }

    /// The workload identities tagged for `tenant` (and `cluster`), and their role
    /// assignments.
    async fn made(
        &self,
        tenant: &hypersaga_model::TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError> {
        let arm = self.arm.tenant(tenant)?;
        sweep::made(&arm, tenant, cluster).await
    }

    /// The create's plan of each `identity.*` step, from the ids and bodies its run writes, with
    /// the permissions the tenant's principal lacks for its Azure changes as findings.
    async fn plan(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        if cmd.action != Action::Do {
            return Err(cmd.unknown_step());
        }
        let step = cmd.step_id()?;
        if step == StepId::Oidc {
            // Blobs in hypersaga's own issuer account: nothing the tenant's principal does.
            return issuer::plan(&self.publisher, &self.keys, cmd).await;
        }
        let arm = self.arm.tenant(&cmd.tenant)?;
        let plan = match step {
            StepId::WorkloadIdentities => workload::plan(&arm, cmd)?,
            StepId::RoleAssignments => roles::plan(&arm, cmd)?,
            _ => return Err(cmd.unknown_step()),
        };
        hypersaga_stepkit::plan::permitted(&arm, cmd, plan).await
    }
}
