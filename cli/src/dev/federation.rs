//! hypersaga's own OIDC issuer in the local system: the key its services sign client
//! assertions with, and the issuer's discovery document and key set, published on the blob
//! account (Azurite) where the emulated Entra fetches them, as a tenant's real Entra would
//! fetch them from wherever a production install serves its issuer.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use hypersaga_config::{BlobConfig, FederationConfig};
use hypersaga_oidc::{BlobPublisher, SigningKey};

use crate::endpoints::write_private;

/// The container hypersaga's issuer lives in (tenants' cluster issuers have their own).
const CONTAINER: &str = "hypersaga-federation";

/// Makes the issuer's key (kept owner-only under `<state>/federation`), publishes the issuer
/// on `blob`, and answers the configuration that points the services at both.
pub async fn publish(state: &Path, blob: &BlobConfig) -> anyhow::Result<FederationConfig> {
    let key = SigningKey::generate().context("generating hypersaga's issuer key")?;
    let dir = state.join("federation");
    std::fs::create_dir_all(&dir)?;
    let key_file: PathBuf = dir.join("signing-key.pem");
    write_private(&key_file, key.private_key_pem().as_bytes())?;
    let publisher = BlobPublisher::new(hypersaga_oidc::BlobConfig {
        blob_endpoint: blob.endpoint.parse().context("blob.endpoint")?,
        account_name: blob.account_name.clone(),
        account_key: hypersaga_oidc::Secret::new(blob.account_key.expose().to_owned()),
    })
    .context("the issuer's blob account")?;
    let issuer = publisher
        .publish_issuer(CONTAINER, &[key.public_key()])
        .await
        .context("publishing hypersaga's issuer")?;
    Ok(FederationConfig {
        issuer,
        signing_key_file: Some(std::path::absolute(&key_file)?),
        ..FederationConfig::default()
    })
}
