//! The gateway: the gRPC front door (`hypersaga.v1.ClusterService`).
//!
//! It authenticates the caller to one tenant, validates the whole request (every violation,
//! with its field path), checks the tenant's quotas, records the intent in one write — the
//! cluster record, naming the new operation — in JetStream KV, wakes the coordinator (which
//! builds the operation's saga from that record) and answers at once with the operation. It
//! makes no call to Azure or the management cluster itself.
#![forbid(unsafe_code)]

mod audit_access;
mod calls;
mod convert;
mod service;
mod web;

use std::net::TcpListener;
use std::time::Duration;

use hypersaga_api::v1::addon_service_server::AddonServiceServer;
use hypersaga_api::v1::admin_service_server::AdminServiceServer;
use hypersaga_api::v1::cluster_service_server::ClusterServiceServer;
use hypersaga_bus::Bus;
use hypersaga_config::Config;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tracing::info;

pub use service::{Addons, Admin, Gateway};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bus(#[from] hypersaga_bus::Error),
    #[error("gRPC server failed")]
    Serve(#[from] tonic::transport::Error),
    #[error("reflection service failed to build")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("management clusters: {0}")]
    Placement(String),
    #[error("auth callout: {0}")]
    Callout(String),
    #[error("cannot follow the tenants: {0}")]
    Tenants(String),
    #[error("cannot use listener")]
    Io(#[from] std::io::Error),
    #[error("cannot read TLS file {path}")]
    Tls {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr} for the live view (gateway.web_listen)")]
    WebListen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS file {path} holds no valid PEM for the live view")]
    WebPem {
        path: std::path::PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("the live view's TLS configuration is invalid")]
    WebTls(#[source] rustls::Error),
    #[error("the live view's client CA (gateway.tls.client_ca_file) is unusable")]
    WebClientCa(#[from] rustls::server::VerifierBuilderError),
    #[error("the live view stopped")]
    Web(#[source] Box<Error>),
    #[error("the live view's task failed: {0}")]
    WebTask(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Serves the API on an already-bound listener until `shutdown` (tests pass port 0).
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<()> {
    let settings = &config.gateway;
    let bus = Bus::connect_configured(&config.nats, &hypersaga_bus::Role::Gateway).await?;
    let tenants =
        hypersaga_tenants::Directory::follow(config, bus.tenants().await?, shutdown.clone())
            .await
            .map_err(|e| Error::Tenants(e.to_string()))?;
    let gateway = Gateway::new(config.clone(), bus, tenants.clone()).await?;
    gateway
        .ensure_management_clusters()
        .await
        .map_err(|e| Error::Placement(e.to_string()))?;
    let admin = Admin::new(gateway.clone(), tenants.clone()).await?;
    // The live view, when asked for: bound first, so a port in use stops the start.
    let live_view = match settings.web_listen {
        Some(addr) => {
            let listener =
                TcpListener::bind(addr).map_err(|source| Error::WebListen { addr, source })?;
            let tls = settings.tls.as_ref().map(web::tls_config).transpose()?;
            let (gateway, shutdown) = (gateway.clone(), shutdown.clone());
            Some(tokio::spawn(async move {
                let result = web::serve(gateway, listener, tls, shutdown.clone()).await;
                if let Err(e) = &result {
                    tracing::error!(error = %e, "the live view stopped; stopping the gateway");
                    shutdown.cancel();
                }
                result
            }))
        }
        None => None,
    };
    let driving = tokio::spawn(gateway.clone().drive_rollouts(shutdown.clone()));
    // Tenants' audit readers: let in by the callout, cut off as tenants change. A failure
    // stops the gateway (readers would otherwise be refused unseen).
    let callout = {
        let (config, shutdown) = (config.clone(), shutdown.clone());
        tokio::spawn(async move {
            let result = audit_access::run(&config, tenants, shutdown.clone()).await;
            if let Err(e) = &result {
                tracing::error!(error = %e, "the auth callout stopped; stopping the gateway");
                shutdown.cancel();
            }
            result
        })
    };
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<ClusterServiceServer<Gateway>>().await;
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let mut server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(settings.keepalive_interval_s)))
        .http2_keepalive_timeout(Some(Duration::from_secs(settings.keepalive_timeout_s)))
        // Every call's span (continuing the caller's trace) and its metrics.
        .layer(calls::Calls);
    if let Some(tls) = &settings.tls {
        server = server.tls_config(tls_config(tls)?)?;
    }
    let addons = AddonServiceServer::new(Addons::new(gateway.clone()))
        .max_decoding_message_size(settings.max_message_bytes);
    let api =
        ClusterServiceServer::new(gateway).max_decoding_message_size(settings.max_message_bytes);
    let admin =
        AdminServiceServer::new(admin).max_decoding_message_size(settings.max_message_bytes);
    let mut routes = server
        .add_service(health_service)
        .add_service(api)
        .add_service(addons)
        .add_service(admin);
    if settings.reflection {
        let reflection = || {
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(hypersaga_api::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        };
        // v1alpha too: grpcurl speaks v1, Python's grpcio-reflection v1alpha.
        routes = routes
            .add_service(reflection().build_v1()?)
            .add_service(reflection().build_v1alpha()?);
    }
    info!(
        addr = %listener.local_addr()?,
        tls = settings.tls.is_some(),
        reflection = settings.reflection,
        "gateway serving gRPC"
    );
    hypersaga_telemetry::probes::set_ready(true);
    routes
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            shutdown.clone().cancelled_owned(),
        )
        .await?;
    shutdown.cancel();
    let _ = driving.await;
    if let Some(live_view) = live_view {
        match live_view.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Error::Web(Box::new(e))),
            Err(e) => return Err(Error::WebTask(e.to_string())),
        }
    }
    match callout.await {
        Ok(result) => result,
        Err(e) => Err(Error::Callout(format!("task failed: {e}"))),
    }
}

fn tls_config(tls: &hypersaga_config::GatewayTls) -> Result<ServerTlsConfig> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|source| Error::Tls {
            path: path.to_owned(),
            source,
        })
    };
    let identity = Identity::from_pem(read(&tls.cert_file)?, read(&tls.key_file)?);
    let mut config = ServerTlsConfig::new().identity(identity);
    if let Some(ca) = &tls.client_ca_file {
        config = config
            .client_ca_root(Certificate::from_pem(read(ca)?))
            .client_auth_optional(!tls.require_client_cert);
    }
    Ok(config)
}
