//! The controlplane service: owns steps `controlplane.hostedcluster`, `controlplane.rollout`
//! and `controlplane.addon.<name>` (an add-on, through Package Operator: module `addon`).
//!
//! **Do** puts a hosted control plane on the management cluster the way
//! `hypershift create cluster azure` does — namespace, pull secret, service-account signing
//! key secret (the tenant's OIDC key, so tokens verify against the published JWKS), cloud
//! credentials secret, then the `HostedCluster` — and waits, with a kube watch, until the
//! operator reports `Available=True`. **Undo** deletes the HostedCluster, waits until the
//! operator's finalizer has torn it down, then removes the secrets and the namespace.
//!
//! Every write is a server-side apply (`fieldManager=hypersaga`, forced) of the full intent,
//! and every delete treats 404 as success, so any attempt may be repeated at any point. The
//! management-cluster plumbing (apply, checks, error mapping) is stepkit's
//! [`hypersaga_stepkit::kube`], shared with the nodepool service.
#![forbid(unsafe_code)]
// `StepError` is large by design: it keeps Azure's (or Kubernetes') whole error — code,
// message, target, step, Retry-After — for users and operators to act on.
#![allow(clippy::result_large_err)]

mod addon;
mod handler;
mod release;
mod sweep;

use std::sync::Arc;
use std::time::Duration;

use hypersaga_config::Config;
use tokio_util::sync::CancellationToken;

pub use handler::{ControlPlaneHandler, check_pull_secret};

/// Service name: consumes `<prefix>.*.cmd.controlplane`.
pub const SERVICE: &str = hypersaga_bus::Service::ControlPlane.as_str();
/// Default wait for `Available=True` (HyperShift's docs wait 30 min).
pub const DEFAULT_AVAILABLE_TIMEOUT: Duration = Duration::from_secs(1800);

/// Errors starting or running the service.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("management cluster client: {0}")]
    Kube(#[from] hypersaga_hypershift::client::Error),
    #[error("signing key store: {0}")]
    Blob(#[from] hypersaga_oidc::Error),
    #[error("signing_keys.endpoint {endpoint:?} is not a URL: {message}")]
    BlobEndpoint { endpoint: String, message: String },
    #[error("kube.pull_secret: {0}")]
    PullSecret(String),
    #[error(transparent)]
    Service(#[from] hypersaga_stepkit::Error),
}

/// Runs the controlplane service until `shutdown`: builds the handler (one kube client, one
/// blob client), connects to the bus and serves the service's commands
/// ([`hypersaga_stepkit::run_service`]).
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<(), Error> {
    let bus = hypersaga_stepkit::connect(config, SERVICE).await?;
    let tenants = hypersaga_stepkit::tenants(&bus, config, shutdown.clone()).await?;
    let catalog =
        hypersaga_addons::Catalog::new(bus.addons().await.map_err(hypersaga_stepkit::Error::from)?);
    let handler = Arc::new(
        ControlPlaneHandler::new(config)
            .await?
            .with_tenants(tenants.clone())
            .with_catalog(catalog),
    );
    hypersaga_stepkit::run_service(config, SERVICE, bus, handler, shutdown).await?;
    Ok(())
}
