//! A real Azurite blob service for tests (started by `hypersaga_procs`, like `hypersaga dev`).

use hypersaga_config::{BlobConfig, Secret};
pub use hypersaga_procs::{AZURITE_ACCOUNT as ACCOUNT, AZURITE_KEY as ACCOUNT_KEY};

/// A running `azurite-blob` (in memory), killed on drop.
pub struct Azurite {
    /// `http://127.0.0.1:PORT/devstoreaccount1`.
    pub endpoint: String,
    /// `http://127.0.0.1:PORT/hypersagakeys`: the signing keys' account.
    pub key_store_endpoint: String,
    /// The signing keys' account key, made for this Azurite.
    pub key_store_key: String,
    _process: hypersaga_procs::Azurite,
}

impl Azurite {
    /// Starts Azurite on a free loopback port (installed by `scripts/setup.sh`).
    pub async fn start() -> Self {
        let process = hypersaga_procs::Azurite::start()
            .await
            .expect("start Azurite (run scripts/setup.sh)");
        Self {
            endpoint: process.blob_endpoint(),
            key_store_endpoint: process.key_store_endpoint(),
            key_store_key: process.key_store_key().to_owned(),
            _process: process,
        }
    }

    /// The `[blob]` configuration section for this Azurite.
    pub fn blob_config(&self) -> BlobConfig {
        BlobConfig {
            endpoint: self.endpoint.clone(),
            account_name: ACCOUNT.into(),
            account_key: Secret::new(ACCOUNT_KEY),
        }
    }

    /// The `[signing_keys]` configuration section for this Azurite: its second account.
    pub fn signing_keys_config(&self) -> BlobConfig {
        BlobConfig {
            endpoint: self.key_store_endpoint.clone(),
            account_name: hypersaga_procs::AZURITE_KEY_STORE_ACCOUNT.into(),
            account_key: Secret::new(self.key_store_key.clone()),
        }
    }
}
