//! [`BlobPublisher`]: containers and blobs of one storage account, and the issuer documents.

use std::sync::Arc;

use azure_core::Bytes;
use azure_core::credentials::Secret;
use azure_core::http::headers::HeaderName;
use azure_core::http::policies::Policy;
use azure_core::http::{ClientOptions, StatusCode};
use azure_storage_blob::models::{
    BlobClientUploadOptions, BlobContainerClientCreateOptions, PublicAccessType,
};
use azure_storage_blob::{
    BlobClient, BlobClientOptions, BlobContainerClient, BlobContainerClientOptions,
};
use url::Url;

use super::shared_key::SharedKeyPolicy;
use crate::documents::{DISCOVERY_PATH, JWKS_PATH, discovery_document, jwks};
use crate::error::{Error, Result};
use crate::key::PublicKey;

/// Where the blobs go and how to sign for them.
#[derive(Clone, Debug)]
pub struct BlobConfig {
    /// Account blob endpoint without trailing slash: `http://127.0.0.1:10000/devstoreaccount1`
    /// (Azurite, path style) or `https://<account>.blob.core.windows.net`.
    pub blob_endpoint: Url,
    /// Storage account name (`devstoreaccount1` on Azurite).
    pub account_name: String,
    /// Base64 account key (SharedKey); never logged.
    pub account_key: Secret,
}

/// One storage account's containers and blobs; publishes OIDC issuer documents (public
/// containers). Signing keys are not kept here but in a [`crate::KeyStore`], an account of
/// their own.
///
/// ```no_run
/// # async fn demo() -> hypersaga_oidc::Result<()> {
/// use hypersaga_oidc::{BlobConfig, BlobPublisher, Secret, SigningKey};
/// let publisher = BlobPublisher::new(BlobConfig {
///     blob_endpoint: "http://127.0.0.1:10000/devstoreaccount1".parse().unwrap(),
///     account_name: "devstoreaccount1".into(),
///     account_key: Secret::new("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="),
/// })?;
/// let key = SigningKey::generate()?;
/// let issuer = publisher.publish_issuer("tenant-a", &[key.public_key()]).await?;
/// assert_eq!(issuer, "http://127.0.0.1:10000/devstoreaccount1/tenant-a");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct BlobPublisher {
    endpoint: Url,
    policy: Arc<dyn Policy>,
}

impl std::fmt::Debug for BlobPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobPublisher")
            .field("endpoint", &self.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

const PUBLIC_ACCESS: HeaderName = HeaderName::from_static("x-ms-blob-public-access");

impl BlobPublisher {
    /// Builds the publisher. Does no I/O.
    pub fn new(config: BlobConfig) -> Result<Self> {
        if config.blob_endpoint.cannot_be_a_base() {
            return Err(Error::Config(format!(
                "blob endpoint is not a base URL: {}",
                config.blob_endpoint
            )));
        }
        let policy = SharedKeyPolicy::new(&config.account_name, config.account_key.secret())?;
        let mut endpoint = config.blob_endpoint;
        let trimmed = endpoint.path().trim_end_matches('/').to_owned();
        endpoint.set_path(&trimmed);
        endpoint.set_query(None);
        Ok(Self {
            endpoint,
            policy: Arc::new(policy),
        })
    }

    /// The issuer URL for `container`: blob endpoint + `/` + container, no trailing slash.
    /// It must equal the token `iss` and every FIC's `issuer` byte-for-byte.
    pub fn issuer_url(&self, container: &str) -> String {
        format!(
            "{}/{container}",
            self.endpoint.as_str().trim_end_matches('/')
        )
    }

    /// Creates `name` with public access level `blob` (anonymous read of blobs, no listing),
    /// or accepts it if it already exists with public read.
    pub async fn ensure_public_container(&self, name: &str) -> Result<()> {
        self.ensure_container(name, Some(PublicAccessType::Blob))
            .await
    }

    /// Creates `name` with no public access, or accepts it if it already exists private.
    pub async fn ensure_private_container(&self, name: &str) -> Result<()> {
        self.ensure_container(name, None).await
    }

    /// Uploads (overwrites) one blob. `path` may contain `/` (kept as-is, not escaped).
    pub async fn put_blob(
        &self,
        container: &str,
        path: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<()> {
        let client = self.blob_client(container, path)?;
        let options = BlobClientUploadOptions {
            blob_content_type: Some(content_type.to_owned()),
            ..Default::default()
        };
        client
            .upload(Bytes::from(bytes).into(), Some(options))
            .await
            .map_err(|e| Error::blob(format!("put {container}/{path}"), e))?;
        tracing::debug!(container, path, "blob uploaded");
        Ok(())
    }

    /// Uploads one blob only if none exists at `path` (`If-None-Match: *`). `Ok(false)` when
    /// one already does: another writer got there first, and its blob is left untouched.
    /// For values that must be chosen once, such as a tenant's signing key.
    pub async fn create_blob(
        &self,
        container: &str,
        path: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<bool> {
        let client = self.blob_client(container, path)?;
        let options = BlobClientUploadOptions {
            blob_content_type: Some(content_type.to_owned()),
            ..Default::default()
        }
        .if_not_exists();
        match client
            .upload(Bytes::from(bytes).into(), Some(options))
            .await
        {
            Ok(_) => {
                tracing::debug!(container, path, "blob created");
                Ok(true)
            }
            // 409 BlobAlreadyExists (412 ConditionNotMet on some service versions).
            Err(e)
                if matches!(
                    e.http_status(),
                    Some(StatusCode::Conflict) | Some(StatusCode::PreconditionFailed)
                ) =>
            {
                tracing::debug!(container, path, "blob already exists; not overwritten");
                Ok(false)
            }
            Err(e) => Err(Error::blob(format!("create {container}/{path}"), e)),
        }
    }

    /// Reads one blob; `None` when it (or its container) does not exist.
    pub async fn get_blob(&self, container: &str, path: &str) -> Result<Option<Vec<u8>>> {
        let client = self.blob_client(container, path)?;
        let op = || format!("get {container}/{path}");
        match client.download(None).await {
            Ok(result) => Ok(Some(
                result
                    .body
                    .collect()
                    .await
                    .map_err(|e| Error::blob(op(), e))?
                    .to_vec(),
            )),
            Err(e) if e.http_status() == Some(StatusCode::NotFound) => Ok(None),
            Err(e) => Err(Error::blob(op(), e)),
        }
    }

    /// Publishes a tenant issuer in container `container`: ensures the public container, then
    /// writes the discovery document and the JWKS (both `application/json`). Idempotent.
    /// Returns the issuer URL.
    pub async fn publish_issuer(&self, container: &str, keys: &[PublicKey]) -> Result<String> {
        let issuer = self.issuer_url(container);
        self.ensure_public_container(container).await?;
        let discovery = serde_json::to_vec(&discovery_document(&issuer))
            .map_err(|e| Error::Config(e.to_string()))?;
        let key_set = serde_json::to_vec(&jwks(keys)).map_err(|e| Error::Config(e.to_string()))?;
        self.put_blob(container, DISCOVERY_PATH, discovery, "application/json")
            .await?;
        self.put_blob(container, JWKS_PATH, key_set, "application/json")
            .await?;
        tracing::info!(issuer = %issuer, keys = keys.len(), "OIDC issuer published");
        Ok(issuer)
    }

    /// Deletes one blob; a blob (or container) already gone is success.
    pub async fn delete_blob(&self, container: &str, path: &str) -> Result<()> {
        let client = self.blob_client(container, path)?;
        match client.delete(None).await {
            Ok(_) => {
                tracing::debug!(container, path, "blob deleted");
                Ok(())
            }
            Err(e) if e.http_status() == Some(StatusCode::NotFound) => Ok(()),
            Err(e) => Err(Error::blob(format!("delete {container}/{path}"), e)),
        }
    }

    async fn ensure_container(&self, name: &str, access: Option<PublicAccessType>) -> Result<()> {
        validate_container_name(name)?;
        let client = self.container_client(name)?;
        let want_public = access.is_some();
        let options = BlobContainerClientCreateOptions {
            access,
            ..Default::default()
        };
        match client.create(Some(options)).await {
            Ok(_) => {
                tracing::info!(
                    container = name,
                    public = want_public,
                    "blob container created"
                );
                Ok(())
            }
            Err(e) if e.http_status() == Some(StatusCode::Conflict) => {
                // ContainerAlreadyExists: fine, as long as its access level is what we need —
                // a private issuer container would make every token exchange fail later.
                let props = client
                    .get_properties(None)
                    .await
                    .map_err(|e| Error::blob(format!("read container {name}"), e))?;
                let level = props
                    .headers()
                    .get_optional_str(&PUBLIC_ACCESS)
                    .unwrap_or("")
                    .to_ascii_lowercase();
                let is_public = level == "blob" || level == "container";
                if is_public == want_public {
                    Ok(())
                } else {
                    Err(Error::Blob {
                        operation: format!("ensure container {name}"),
                        status: Some(409),
                        code: Some("ContainerAlreadyExists".into()),
                        message: format!(
                            "container exists with public access {:?}, wanted {}",
                            level,
                            if want_public { "blob" } else { "none" }
                        ),
                        source: None,
                    })
                }
            }
            Err(e) => Err(Error::blob(format!("create container {name}"), e)),
        }
    }

    fn client_options(&self) -> ClientOptions {
        ClientOptions {
            per_try_policies: vec![self.policy.clone()],
            ..Default::default()
        }
    }

    fn container_url(&self, container: &str) -> Result<Url> {
        let mut url = self.endpoint.clone();
        url.path_segments_mut()
            .map_err(|()| Error::Config("blob endpoint is not a base URL".into()))?
            .pop_if_empty()
            .push(container);
        Ok(url)
    }

    fn container_client(&self, container: &str) -> Result<BlobContainerClient> {
        let options = BlobContainerClientOptions {
            client_options: self.client_options(),
            ..Default::default()
        };
        BlobContainerClient::new(self.container_url(container)?, None, Some(options))
            .map_err(|e| Error::blob(format!("client for {container}"), e))
    }

    fn blob_client(&self, container: &str, path: &str) -> Result<BlobClient> {
        validate_container_name(container)?;
        if path.is_empty()
            || path.starts_with('/')
            || path
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(Error::Config(format!("invalid blob path {path:?}")));
        }
        let mut url = self.container_url(container)?;
        url.path_segments_mut()
            .map_err(|()| Error::Config("blob endpoint is not a base URL".into()))?
            .extend(path.split('/'));
        let options = BlobClientOptions {
            client_options: self.client_options(),
            ..Default::default()
        };
        BlobClient::new(url, None, Some(options))
            .map_err(|e| Error::blob(format!("client for {container}/{path}"), e))
    }
}

/// Azure's rule: 3–63 chars, lowercase letters, digits and single hyphens, starting and
/// ending with a letter or digit.
fn validate_container_name(name: &str) -> Result<()> {
    let ok = (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(Error::Config(format!("invalid container name {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publisher() -> BlobPublisher {
        BlobPublisher::new(BlobConfig {
            blob_endpoint: "http://127.0.0.1:10000/devstoreaccount1/".parse().unwrap(),
            account_name: "devstoreaccount1".into(),
            account_key: Secret::new("a2V5"),
        })
        .unwrap()
    }

    #[test]
    fn urls() {
        let p = publisher();
        assert_eq!(
            p.issuer_url("oidc"),
            "http://127.0.0.1:10000/devstoreaccount1/oidc"
        );
        assert_eq!(
            p.blob_client("oidc", ".well-known/openid-configuration")
                .unwrap()
                .url()
                .as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/oidc/.well-known/openid-configuration"
        );
        assert!(p.blob_client("oidc", "../x").is_err());
        assert!(p.blob_client("Bad_Name", "x").is_err());
    }
}
