//! A real Azurite blob service for tests (started by `hypersaga_procs`, like `hypersaga dev`).

use hypersaga_config::{BlobConfig, Secret};
pub use hypersaga_procs::{AZURITE_ACCOUNT as ACCOUNT, AZURITE_KEY as ACCOUNT_KEY};

/// A running `azurite-blob` (in memory), killed on drop.
pub struct Azurite {
    /// `http://127.0.0.1:PORT/devstoreaccount1`.
    pub endpoint: String,
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
}
