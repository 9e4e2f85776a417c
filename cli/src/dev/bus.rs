//! The closed bus of the local system: an nkey per role, the server's permissions rendered from
//! the same table the services are written against, and TLS from the dev CA. Every test that
//! runs `hypersaga dev` runs on it, so a permission the code needs and the table lacks fails a
//! test instead of a deployment.

use std::path::{Path, PathBuf};

use hypersaga_bus::access;

use super::TlsFiles;
use crate::commands::bus::write_credentials;

/// What `hypersaga dev` hands out: where each role's seed is, and the server's configuration.
pub struct ClosedBus {
    /// `<role>.nk` for every role, and the callout's `callout-issuer.nk`.
    pub credentials_dir: PathBuf,
    /// nats-server configuration: TLS and one user per role.
    pub server_config: String,
}

/// Gives each dev tenant's audit reader a password, kept in `<dir>/audit-<tenant>.secret`
/// (where `hypersaga audit tail --tenant` finds it); answers them by tenant name, for their
/// digests in the configuration.
pub fn write_audit_passwords(
    dir: &Path,
    tenants: &[crate::endpoints::DevTenant],
) -> anyhow::Result<std::collections::HashMap<String, String>> {
    let mut passwords = std::collections::HashMap::new();
    for t in tenants {
        let password = hypersaga_config::new_token(&format!("audit_{}", t.name));
        crate::endpoints::write_private(
            &dir.join(format!("audit-{}.secret", t.name)),
            format!("{password}\n").as_bytes(),
        )?;
        passwords.insert(t.name.clone(), password);
    }
    Ok(passwords)
}

/// Writes every role's seed under `<state>/bus/credentials` and renders the server's
/// configuration, serving TLS with `tls` (certificate and key files).
pub fn prepare(state: &Path, prefix: &str, tls: &TlsFiles) -> anyhow::Result<ClosedBus> {
    let credentials_dir = state.join("bus").join("credentials");
    let (users, issuer) = write_credentials(&credentials_dir)?;
    let logs = state.join("logs");
    std::fs::create_dir_all(&logs)?;
    let server_config = format!(
        "log_file: {log:?}\ntls {{\n  cert_file: {cert:?}\n  key_file: {key:?}\n}}\n{auth}",
        log = logs.join("nats-server.log"),
        cert = tls.cert_file,
        key = tls.key_file,
        auth = access::authorization_block(prefix, &users, &issuer),
    );
    Ok(ClosedBus {
        credentials_dir,
        server_config,
    })
}
