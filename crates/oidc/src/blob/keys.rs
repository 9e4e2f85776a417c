//! [`KeyStore`]: the tenants' signing keys, in a storage account of their own.
//!
//! The issuer documents must be readable by anyone (Entra fetches them with no credential), so
//! the account serving them has blob public access on, and whoever holds its key can publish.
//! A signing key kept there is one mis-set container away from the internet, and readable by
//! every holder of the publishing key. So keys live in a second account that never serves
//! anything anonymously (on Azure: `allowBlobPublicAccess: false`), and only the roles that
//! need a key get its credential: identity (which makes and publishes) and controlplane
//! (which hands the key to the HostedCluster).
//!
//! Each tenant has a private container of its own, [`KeyStore::container`]: a container is the
//! narrowest scope an Azure role assignment can name (Storage Blob Data Reader on one tenant's
//! keys), and removing a tenant's key material is removing one container.

use sha2::{Digest, Sha256};

use super::publisher::BlobPublisher;
use crate::blob::BlobConfig;
use crate::error::{Error, Result};
use crate::key::SigningKey;

/// Where keys lived before they had an account of their own: one private container of the
/// issuers' account, `<tenant>/sa-signer.key` each. [`KeyStore::migrate_legacy`] moves them.
pub const LEGACY_KEY_CONTAINER: &str = "hypersaga-signing-keys";

/// The tenants' signing keys (PKCS#1 PEM), one private container per tenant, in the
/// key-store account.
///
/// ```no_run
/// # async fn demo() -> hypersaga_oidc::Result<()> {
/// use hypersaga_oidc::{BlobConfig, KeyStore, Secret, SigningKey};
/// let keys = KeyStore::new(BlobConfig {
///     blob_endpoint: "http://127.0.0.1:10000/hypersagakeys".parse().unwrap(),
///     account_name: "hypersagakeys".into(),
///     account_key: Secret::new("c2VjcmV0"),
/// })?;
/// let key = SigningKey::generate()?;
/// // Create-only: of two racing writers, one key wins and both must use it.
/// if !keys.create("tenant-a", &key).await? {
///     let winner = keys.load("tenant-a").await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct KeyStore {
    account: BlobPublisher,
}

/// The blob holding a tenant's key inside its container.
pub const KEY_BLOB: &str = "sa-signer.key";

/// What [`KeyStore::migrate_legacy`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Migration {
    /// No key in the old place: nothing to do.
    NothingToMove,
    /// The old key is now in the key store (its `kid`) and gone from the issuers' account.
    Moved(String),
    /// The key store already held the same key; the old copy was removed.
    AlreadyMoved(String),
    /// The key store holds a different key than the old place. Neither is touched: one of
    /// them signs tokens a published JWKS no longer matches, which an operator must decide.
    Conflict {
        /// `kid` of the key in the key store.
        stored: String,
        /// `kid` of the key left in the issuers' account.
        legacy: String,
    },
}

impl KeyStore {
    /// Builds the store's client. Does no I/O.
    pub fn new(config: BlobConfig) -> Result<Self> {
        Ok(Self {
            account: BlobPublisher::new(config)?,
        })
    }

    /// The tenant's private container: `sa-key-<tenant>`. A tenant id Azure would not take in
    /// a container name (`--`, a trailing `-`) is folded, with a digest of the id appended so
    /// that two tenants can never share a container.
    pub fn container(tenant: &str) -> String {
        let plain = format!("sa-key-{tenant}");
        let mut folded = plain.clone();
        while folded.contains("--") {
            folded = folded.replace("--", "-");
        }
        let folded = folded.trim_end_matches('-');
        if folded == plain {
            plain
        } else {
            let digest = Sha256::digest(tenant.as_bytes());
            format!("{folded}-{}", hex8(&digest))
        }
    }

    /// The tenant's key; `None` when it has none yet.
    pub async fn load(&self, tenant: &str) -> Result<Option<SigningKey>> {
        let Some(bytes) = self
            .account
            .get_blob(&Self::container(tenant), KEY_BLOB)
            .await?
        else {
            return Ok(None);
        };
        parse(bytes).map(Some)
    }

    /// Saves `key` as the tenant's only if it has none yet. `Ok(false)` when another writer
    /// stored one first (two clusters of a tenant racing to create the shared issuer): the
    /// caller must then use that key ([`Self::load`]), never its own, or the published JWKS
    /// and the tokens would disagree.
    pub async fn create(&self, tenant: &str, key: &SigningKey) -> Result<bool> {
        let container = Self::container(tenant);
        self.account.ensure_private_container(&container).await?;
        self.account
            .create_blob(
                &container,
                KEY_BLOB,
                key.private_key_pem().into_bytes(),
                "application/x-pem-file",
            )
            .await
    }

    /// Saves (overwrites) the tenant's key. Only for restoring a key from a backup: a key
    /// in use must never be replaced, see [`Self::create`].
    pub async fn store(&self, tenant: &str, key: &SigningKey) -> Result<()> {
        let container = Self::container(tenant);
        self.account.ensure_private_container(&container).await?;
        self.account
            .put_blob(
                &container,
                KEY_BLOB,
                key.private_key_pem().into_bytes(),
                "application/x-pem-file",
            )
            .await
    }

    /// Moves the tenant's key from where earlier versions kept it (the issuers' account,
    /// [`LEGACY_KEY_CONTAINER`]) into this store, then deletes the old copy. Idempotent, and
    /// safe to run from several replicas at once: the copy is create-only and the delete of
    /// a blob already gone succeeds.
    pub async fn migrate_legacy(&self, issuers: &BlobPublisher, tenant: &str) -> Result<Migration> {
        let path = legacy_key_blob(tenant);
        let Some(bytes) = issuers.get_blob(LEGACY_KEY_CONTAINER, &path).await? else {
            return Ok(Migration::NothingToMove);
        };
        let legacy = parse(bytes)?;
        let outcome = if self.create(tenant, &legacy).await? {
            Migration::Moved(legacy.kid())
        } else {
            let stored = self.load(tenant).await?.ok_or_else(|| Error::Blob {
                operation: format!("migrate the signing key of {tenant}"),
                status: None,
                code: Some("SigningKeyRace".into()),
                message: "the key store refused the copy but holds no key".into(),
                source: None,
            })?;
            if stored.kid() != legacy.kid() {
                return Ok(Migration::Conflict {
                    stored: stored.kid(),
                    legacy: legacy.kid(),
                });
            }
            Migration::AlreadyMoved(legacy.kid())
        };
        issuers.delete_blob(LEGACY_KEY_CONTAINER, &path).await?;
        Ok(outcome)
    }
}

/// The old blob path of a tenant's key in [`LEGACY_KEY_CONTAINER`].
pub fn legacy_key_blob(tenant: &str) -> String {
    format!("{tenant}/{KEY_BLOB}")
}

fn parse(bytes: Vec<u8>) -> Result<SigningKey> {
    let pem = String::from_utf8(bytes).map_err(|_| Error::Pem("stored key is not UTF-8".into()))?;
    SigningKey::from_private_key_pem(&pem)
}

fn hex8(digest: &[u8]) -> String {
    digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tenant_has_a_container_of_its_own_with_a_valid_name() {
        assert_eq!(KeyStore::container("acme"), "sa-key-acme");
        let folded = KeyStore::container("a--b-");
        let other = KeyStore::container("a-b");
        assert_eq!(other, "sa-key-a-b");
        assert!(folded.starts_with("sa-key-a-b-") && folded.len() == "sa-key-a-b-".len() + 8);
        assert_ne!(folded, other, "two tenants must not share a container");
        assert_ne!(KeyStore::container("a-"), KeyStore::container("a--"));
        let longest = KeyStore::container(&"x-".repeat(20));
        assert!(longest.len() <= 63, "{longest}");
        for name in [folded, other, longest, KeyStore::container("-a")] {
            assert!(
                !name.contains("--") && !name.ends_with('-'),
                "{name} is not a container name"
            );
        }
    }
}
