//! An authenticated `ClusterService` client.

use anyhow::Context;
use hypersaga_api::v1::cluster_service_client::ClusterServiceClient;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

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

/// Connects to `server` (e.g. `http://127.0.0.1:50051`) as the holder of `token`.
pub async fn connect(server: &str, token: &str) -> anyhow::Result<Client> {
    let channel = Channel::from_shared(server.to_owned())
        .with_context(|| format!("{server:?} is not a valid server URL"))?
        .connect()
        .await
        .with_context(|| format!("cannot connect to the hypersaga API at {server}"))?;
    let value = format!("Bearer {token}")
        .parse()
        .context("token contains characters not allowed in metadata")?;
    Ok(ClusterServiceClient::with_interceptor(
        channel,
        BearerAuth(value),
    ))
}
