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
mod workload;

use std::sync::Arc;

use hypersaga_bus::{Action, Outputs, Service, StepCommand, StepError, StepId};
use hypersaga_config::Config;
use hypersaga_oidc::{BlobConfig, BlobPublisher, Secret};
use hypersaga_stepkit::{ArmClients, ArmStep, Halt, Notes, Ops, unknown_step};
use hypersaga_worker::{Progress, StepHandler, StepResult};
use tokio_util::sync::CancellationToken;
use tracing::info;

pub use roles::AUTHORIZATION_API;
pub use workload::{FIC_API, MSI_API, RESOURCES_API};

/// Why the service could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bus, worker or ARM configuration failure.
    #[error(transparent)]
    Stepkit(#[from] hypersaga_stepkit::Error),
    /// The `[blob]` section is unusable.
    #[error("blob configuration: {0}")]
    Blob(String),
}

/// Runs the identity service until `shutdown`.
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<(), Error> {
    let service = Service::Identity.as_str();
    let bus = hypersaga_stepkit::connect(config, service).await?;
    let budgets = hypersaga_stepkit::budgets(&bus, config).await?;
    let handler = Arc::new(IdentityHandler::new(config)?.with_budgets(budgets));
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
}

impl IdentityHandler {
    /// Builds the handler: ARM clients from `config.azure`/`config.tenants`, the issuer
    /// publisher from `config.blob`. Does no I/O beyond reading the CA bundle.
    pub fn new(config: &Config) -> Result<Self, Error> {
        let endpoint =
            config.blob.endpoint.parse().map_err(|e| {
                Error::Blob(format!("blob.endpoint {:?}: {e}", config.blob.endpoint))
            })?;
        let publisher = BlobPublisher::new(BlobConfig {
            blob_endpoint: endpoint,
            account_name: config.blob.account_name.clone(),
            account_key: Secret::new(config.blob.account_key.expose().to_owned()),
        })
        .map_err(|e| Error::Blob(e.to_string()))?;
        Ok(Self {
            arm: ArmClients::new(config)?,
            publisher,
        })
    }

    /// Paces its ARM requests through the shared per-subscription budgets.
    pub fn with_budgets(mut self, budgets: Option<hypersaga_stepkit::Budgets>) -> Self {
        self.arm = self.arm.with_budgets(budgets);
        self
    }
}

/// One pass of a step; the worker's check and the in-place run come with [`ArmStep`].
#[async_trait::async_trait]
impl ArmStep for IdentityHandler {
    async fn step(&self, cmd: &StepCommand, ops: &Ops, notes: &dyn Notes) -> Result<Outputs, Halt> {
        match (cmd.step_id()?, cmd.action) {
            (StepId::Oidc, Action::Do) => Ok(issuer::ensure(&self.publisher, cmd, notes).await?),
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
            (StepId::Oidc, Action::Undo) => {
                info!(step = %cmd.step, "the tenant's issuer is shared; undo leaves it in place");
                Ok(Outputs::new())
            }
            _ => Err(unknown_step(cmd).into()),
        }
    }
}

#[async_trait::async_trait]
impl StepHandler for IdentityHandler {
    async fn defer(&self, cmd: &StepCommand) -> Option<std::time::Duration> {
        self.arm.defer(cmd).await
    }

    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError> {
        self.check(cmd, progress).await
    }
}
