//! The closed bus of the local system: an nkey per role, the server's permissions rendered from
//! the same table the services are written against, and TLS from the dev CA. Every test that
//! runs `hypersaga dev` runs on it, so a permission the code needs and the table lacks fails a
//! test instead of a deployment.

use std::path::{Path, PathBuf};

use hypersaga_bus::access;
use hypersaga_model::TenantId;

use super::TlsFiles;
use crate::commands::bus::write_credentials;

/// What `hypersaga dev` hands out: where each role's seed is, and the server's configuration.
pub struct ClosedBus {
    /// `<role>.nk` for every role, and the callout's `callout-issuer.nk`.
    pub credentials_dir: PathBuf,
    /// nats-server configuration: TLS and one user per role.
    pub server_config: String,
}

/// Writes every role's seed under `<state>/bus/credentials` and renders the server's
/// configuration, serving TLS with `tls` (certificate and key files).
pub fn prepare(
    state: &Path,
    prefix: &str,
    tenants: &[TenantId],
    tls: &TlsFiles,
) -> anyhow::Result<ClosedBus> {
    let credentials_dir = state.join("bus").join("credentials");
    let (users, issuer) = write_credentials(&credentials_dir)?;
    let logs = state.join("logs");
    std::fs::create_dir_all(&logs)?;
    let server_config = format!(
        "log_file: {log:?}\ntls {{\n  cert_file: {cert:?}\n  key_file: {key:?}\n}}\n{auth}",
        log = logs.join("nats-server.log"),
        cert = tls.cert_file,
        key = tls.key_file,
        auth = access::authorization_block(prefix, tenants, &users, &issuer),
    );
    Ok(ClosedBus {
        credentials_dir,
        server_config,
    })
}
