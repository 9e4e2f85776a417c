//! `endpoints.json`: what `hypersaga dev` started and how to reach it. Client commands read it
//! by default, so a user of the local system never copies an address or a token by hand.
//! Versioned: fields are only added.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub const ENDPOINTS_VERSION: u32 = 1;
/// Default state directory of `hypersaga dev`, relative to the working directory.
pub const DEFAULT_STATE_DIR: &str = ".hypersaga";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Endpoints {
    pub version: u32,
    /// gRPC API, e.g. `http://127.0.0.1:50051`.
    pub grpc: String,
    pub nats_url: String,
    /// Each bus role's nkey seed, `<role>.nk` (`audit-<tenant>.nk` reads one tenant's audit
    /// events; `audit.nk` every tenant's). The server's certificate is signed by `ca_bundle`.
    #[serde(default)]
    pub nats_credentials_dir: Option<PathBuf>,
    /// ARM and Entra (one HTTPS emulator).
    pub arm_url: String,
    pub entra_url: String,
    /// Admin API of the ARM emulator (faults, request counts, inventory dump).
    pub emulator_admin_url: String,
    /// Admin API of the management-cluster emulator (faults, object dump).
    pub mgmt_admin_url: String,
    pub kubeconfig: PathBuf,
    pub azurite_blob_url: String,
    pub ca_bundle: PathBuf,
    pub tenants: Vec<DevTenant>,
    pub state_dir: PathBuf,
    /// Each supervised service's probes and metrics (`/healthz`, `/readyz`, `/metrics`), by
    /// name (`coordinator-0`), e.g. `http://127.0.0.1:40123`.
    #[serde(default)]
    pub health: std::collections::BTreeMap<String, String>,
    /// Every management cluster's emulator (the first is `mgmt_admin_url` and `kubeconfig`).
    #[serde(default)]
    pub management_clusters: Vec<DevManagementCluster>,
    /// A token of the platform's admin (`hypersaga tenant …`): the admin API's, never a
    /// tenant's.
    #[serde(default)]
    pub admin_token: Option<String>,
    /// The live view of operations (the gateway's web page), e.g. `https://127.0.0.1:40124/`;
    /// it asks for a tenant's token (or takes one from a `#token=…` fragment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web: Option<String>,
}

/// Why the endpoints file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum EndpointsError {
    /// No file: no `hypersaga dev` runs with this state directory (exit code 7, like any
    /// system that cannot be reached).
    #[error(
        "no endpoints file at {}: the local system is not running, or runs with another state \
         directory. Start `hypersaga dev`, or point at its file: `export \
         HYPERSAGA_ENDPOINTS=<state-dir>/endpoints.json` (its banner prints the line) or \
         --endpoints FILE; for another system, pass --server URL --token TOKEN",
        path.display()
    )]
    Missing { path: PathBuf },
    #[error("cannot read the endpoints file {}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid endpoints file", path.display())]
    Invalid {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// One emulated management cluster of the local system.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DevManagementCluster {
    pub name: String,
    /// Its emulator's admin API (object dump, faults).
    pub admin_url: String,
    pub kubeconfig: PathBuf,
}

/// A development tenant: its API token and its Azure identity in the emulator.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DevTenant {
    pub name: String,
    pub token: String,
    /// The client id of the application the tenant registered for hypersaga (federated with
    /// hypersaga's issuer): what hypersaga's tenant record holds. `client_id` and
    /// `client_secret` below are the tenant administrator's own credential, which hypersaga
    /// never holds.
    #[serde(default)]
    pub hypersaga_client_id: String,
    pub azure_tenant_id: String,
    pub subscription_id: String,
    pub client_id: String,
    pub client_secret: String,
}

impl Endpoints {
    /// The path used when none is given: `$HYPERSAGA_ENDPOINTS`, else `.hypersaga/endpoints.json`.
    pub fn default_path() -> PathBuf {
        std::env::var_os("HYPERSAGA_ENDPOINTS")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(DEFAULT_STATE_DIR).join("endpoints.json"))
    }

    pub fn load(path: &Path) -> Result<Self, EndpointsError> {
        let bytes = std::fs::read(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                EndpointsError::Missing {
                    path: path.to_owned(),
                }
            } else {
                EndpointsError::Unreadable {
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
        serde_json::from_slice(&bytes).map_err(|source| EndpointsError::Invalid {
            path: path.to_owned(),
            source,
        })
    }

    /// Writes atomically (temp file + rename), readable only by the owner: it holds tokens.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        write_private(path, &serde_json::to_vec_pretty(self)?)
    }

    pub fn tenant(&self, name: Option<&str>) -> anyhow::Result<&DevTenant> {
        match name {
            None => self
                .tenants
                .first()
                .context("endpoints file lists no tenants"),
            Some(n) => self.tenants.iter().find(|t| t.name == n).with_context(|| {
                format!(
                    "unknown tenant {n:?}: this system's tenants are {}",
                    self.tenant_names().join(", ")
                )
            }),
        }
    }
}

impl Endpoints {
    /// The dev tenants' names, in the file's order.
    pub fn tenant_names(&self) -> Vec<&str> {
        self.tenants.iter().map(|t| t.name.as_str()).collect()
    }
}

/// Atomic, owner-only file write.
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    // One temporary file per write: two writers of the same file (the supervisor's tasks
    // updating `pids.json`) must not interleave in one, and the rename keeps the last whole.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!(
        "tmp.{}.{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
