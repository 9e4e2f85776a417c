//! The gateway: the gRPC front door (`hypersaga.v1.ClusterService`).
//!
//! It authenticates the caller to one tenant, validates the whole request (every violation,
//! with its field path), checks the tenant's quotas, records the intent in one write — the
//! cluster record, naming the new operation — in JetStream KV, wakes the coordinator (which
//! builds the operation's saga from that record) and answers at once with the operation. It
//! makes no call to Azure or the management cluster itself.
#![forbid(unsafe_code)]

mod convert;
mod service;

use std::net::TcpListener;

use hypersaga_api::v1::cluster_service_server::ClusterServiceServer;
use hypersaga_bus::Bus;
use hypersaga_config::Config;
use tokio_util::sync::CancellationToken;
use tracing::info;

pub use service::Gateway;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bus(#[from] hypersaga_bus::Error),
    #[error("gRPC server failed")]
    Serve(#[from] tonic::transport::Error),
    #[error("reflection service failed to build")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("cannot use listener")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Serves the API on an already-bound listener until `shutdown` (tests pass port 0).
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<()> {
    let bus = Bus::connect(&config.nats.url, "hypersaga-gateway", &config.nats.prefix).await?;
    let gateway = Gateway::new(config.clone(), bus).await?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<ClusterServiceServer<Gateway>>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(hypersaga_api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    info!(addr = %listener.local_addr()?, "gateway serving gRPC");
    tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(reflection)
        .add_service(ClusterServiceServer::new(gateway))
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            shutdown.cancelled_owned(),
        )
        .await?;
    Ok(())
}
