//! An authenticated `ClusterService` client.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use hypersaga_api::v1::cluster_service_client::ClusterServiceClient;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone)]
pub struct BearerAuth(MetadataValue<tonic::metadata::Ascii>);

impl Interceptor for BearerAuth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

pub type Client = ClusterServiceClient<InterceptedService<Channel, BearerAuth>>;

/// Connects to `server` (`https://…`, or `http://…` for a plaintext test server) as the holder
/// of `token`. Over TLS the server's certificate is checked against `ca` if given (the dev CA),
/// else against the system's roots.
pub async fn connect(server: &str, token: &str, ca: Option<&Path>) -> anyhow::Result<Client> {
    let channel = channel(server, ca).await?;
    let value = format!("Bearer {token}")
        .parse()
        .context("token contains characters not allowed in metadata")?;
    Ok(ClusterServiceClient::with_interceptor(
        channel,
        BearerAuth(value),
    ))
}

/// A channel to the API at `server`, without a token (health, reflection): TLS for `https://`,
/// checked against `ca` if given, else the system's roots.
pub async fn channel(server: &str, ca: Option<&Path>) -> anyhow::Result<Channel> {
    // A peer that vanished without closing (a host gone, a NAT entry dropped) would leave a
    // watch, or a connection attempt, hanging for ever: pings and a connect timeout turn it
    // into an error, which `--wait` then recovers from.
    let mut endpoint = Channel::from_shared(server.to_owned())
        .with_context(|| format!("{server:?} is not a valid server URL"))?
        .connect_timeout(Duration::from_secs(10))
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true);
    if server.starts_with("https://") {
        let tls = match ca {
            Some(ca) => {
                let pem = std::fs::read(ca)
                    .with_context(|| format!("cannot read the CA bundle {}", ca.display()))?;
                ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem))
            }
            None => ClientTlsConfig::new().with_native_roots(),
        };
        endpoint = endpoint
            .tls_config(tls)
            .context("cannot set up TLS for the API")?;
    } else if ca.is_some() {
        anyhow::bail!("--ca given, but {server} is not an https:// URL");
    }
    endpoint.connect().await.map_err(|source| {
        anyhow::Error::new(Unreachable {
            server: server.to_owned(),
            source,
        })
    })
}

/// The API did not answer at all (refused, reset, TLS failed): the exit code says so
/// ([`crate::exit::UNREACHABLE`]) apart from the API's own refusals.
#[derive(Debug)]
pub struct Unreachable {
    pub server: String,
    pub source: tonic::transport::Error,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot connect to the hypersaga API at {}", self.server)
    }
}

impl std::error::Error for Unreachable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
