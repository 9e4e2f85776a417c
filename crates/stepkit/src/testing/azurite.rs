//! A real Azurite blob service for tests, as `crates/oidc/tests/azurite.rs` starts it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use hypersaga_config::{BlobConfig, Secret};
use tokio::process::{Child, Command};

/// Azurite's well-known development account.
pub const ACCOUNT: &str = "devstoreaccount1";
/// Azurite's well-known development account key (public, documented by Microsoft).
pub const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// A running `azurite-blob` (in memory), killed on drop.
pub struct Azurite {
    /// `http://127.0.0.1:PORT/devstoreaccount1`.
    pub endpoint: String,
    _child: Child,
}

impl Azurite {
    /// Starts `azurite-blob` on a free loopback port from `<workspace>/node_modules/.bin`
    /// (`npm install --no-save azurite@3.35.0` in the workspace root), falling back to `npx`.
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let local = root.join("node_modules/.bin/azurite-blob");
        let mut cmd = if local.exists() {
            Command::new(local)
        } else {
            let mut c = Command::new("npx");
            c.args(["--yes", "--package", "azurite@3.35.0", "azurite-blob"]);
            c
        };
        let port_arg = port.to_string();
        cmd.args([
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            &port_arg,
            "--inMemoryPersistence",
            "--loose",
            "--skipApiVersionCheck",
            "--disableTelemetry",
            "--silent",
        ])
        .current_dir(&root)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
        let child = cmd
            .spawn()
            .expect("start azurite-blob (npm install --no-save azurite@3.35.0)");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "azurite did not start on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self {
            endpoint: format!("http://127.0.0.1:{port}/{ACCOUNT}"),
            _child: child,
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
