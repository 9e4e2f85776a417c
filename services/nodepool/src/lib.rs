//! The nodepool service: owns steps `nodepool.<pool name>`.
//!
//! **Do** makes the pool's `NodePool` be as the spec says, whether that creates, scales,
//! autoscales or upgrades it: it first refuses a change the tenant's vCPU quota cannot hold
//! (see [`quota`]), then server-side applies the whole intent (Azure marketplace Gen2 image,
//! the pool's OS disk, zone, subnet, labels, taints, drain timeout and release) next to its
//! HostedCluster and waits until the nodes it wants are ready and its release's version has
//! rolled out. **Undo** deletes the NodePool and waits until the operator's finalizer has
//! released it.
//!
//! A refusal CAPZ reports on the pool's Cluster API Machines that waiting cannot clear (a
//! missing role assignment, an assertion Entra will not take, a VM size the region's Resource
//! SKUs do not list) fails the step with Azure's and CAPZ's words; see [`machines`].
//!
//! Management-cluster plumbing (apply, checks, error mapping) is stepkit's
//! [`hypersaga_stepkit::kube`], shared with the controlplane service.
#![forbid(unsafe_code)]
// `StepError` is large by design: it keeps Azure's (or Kubernetes') whole error — code,
// message, target, step, Retry-After — for users and operators to act on.
#![allow(clippy::result_large_err)]

mod handler;
mod machines;
mod quota;

use std::sync::Arc;
use std::time::Duration;

use hypersaga_config::Config;
use tokio_util::sync::CancellationToken;

pub use handler::NodePoolHandler;

/// Service name: consumes `<prefix>.*.cmd.nodepool`.
pub const SERVICE: &str = hypersaga_bus::Service::NodePool.as_str();
/// Default wait for the pool's nodes (shares `kube.available_timeout_s`).
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(1800);

/// Errors starting or running the service.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("management cluster client: {0}")]
    Kube(#[from] hypersaga_hypershift::client::Error),
    #[error(transparent)]
    Service(#[from] hypersaga_stepkit::Error),
}

/// Runs the nodepool service until `shutdown`: builds the handler (one kube client),
/// connects to the bus and serves the service's commands
/// ([`hypersaga_stepkit::run_service`]).
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<(), Error> {
    let bus = hypersaga_stepkit::connect(config, SERVICE).await?;
    let tenants = hypersaga_stepkit::tenants(&bus, config, shutdown.clone()).await?;
    let handler = Arc::new(
        NodePoolHandler::new(config)
            .await?
            .with_tenants(tenants.clone()),
    );
    hypersaga_stepkit::run_service(config, SERVICE, bus, handler, shutdown).await?;
    Ok(())
}
