//! Running a step service: bus + worker, configured from [`Config`].

use std::sync::Arc;
use std::time::Duration;

use hypersaga_bus::Bus;
use hypersaga_config::Config;
use hypersaga_tenants::Directory;
use hypersaga_worker::{StepHandler, WorkerOptions};
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::pacing::Budgets;
use hypersaga_pacer::Pacer;

/// How long in-flight steps may finish after shutdown before they are left to redelivery.
/// Short on purpose: every step is idempotent, so an unfinished one is simply re-run (and its
/// work adopted) by another replica.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// Connects to the bus as the worker role of `service`.
pub async fn connect(config: &Config, service: &str) -> Result<Bus, Error> {
    let role = hypersaga_bus::Role::Worker(service.to_owned());
    Ok(Bus::connect_configured(&config.nats, &role).await?)
}

/// The shared ARM request budgets on `bus`, as `config.azure` sets them (`None`: pacing off).
pub async fn budgets(bus: &Bus, config: &Config) -> Result<Option<Budgets>, Error> {
    if !config.azure.budget.enabled {
        return Ok(None);
    }
    let pacer = Pacer::new(bus.jetstream().clone(), hypersaga_pacer::DEFAULT_BUCKET)
        .await
        .map_err(|e| Error::Config(format!("ARM budget store: {e}")))?;
    Ok(Budgets::new(
        pacer,
        &config.azure.arm_region,
        &config.azure.budget,
    ))
}

/// The tenants the service serves, followed live on `bus` until `shutdown`. Warns of every
/// configured tenant whose Azure access is a client secret.
pub async fn tenants(
    bus: &Bus,
    config: &Config,
    shutdown: CancellationToken,
) -> Result<Directory, Error> {
    for tenant in config.tenants_with_client_secrets() {
        tracing::warn!(%tenant, "this tenant's Azure access is a long-lived client secret in the configuration; onboard it with workload identity federation instead (`hypersaga tenant add`)");
    }
    let store = bus.tenants().await?;
    Directory::follow(config, store, shutdown)
        .await
        .map_err(|e| Error::Config(format!("tenants: {e}")))
}

/// Runs `handler` on the service's commands, and answers plan requests and sweep listings
/// with it, until
/// `shutdown`. Queues follow the work: those of tenants with commands stored are opened at
/// once, any other's from its first command (however many tenants are onboarded).
pub async fn run_service(
    config: &Config,
    service: &str,
    bus: Bus,
    handler: Arc<dyn StepHandler>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let opts = WorkerOptions {
        service: service.to_owned(),
        tenants: Vec::new(),
        concurrency: config.worker.concurrency.max(1),
        ack_wait: Duration::from_secs(config.worker.ack_wait_s.max(1)),
        drain_grace: DRAIN_GRACE,
    };
    // Plans and sweep listings are answered beside the steps; a request server that stops
    // takes the service down with it, as a worker that stops does.
    let plans = hypersaga_worker::serve_requests(
        bus.clone(),
        handler.clone(),
        service.to_owned(),
        shutdown.clone(),
    );
    let (worked, planned) = tokio::join!(
        hypersaga_worker::run(bus, handler, opts, shutdown.clone()),
        async {
            let r = plans.await;
            shutdown.cancel();
            r
        }
    );
    worked?;
    planned?;
    Ok(())
}
