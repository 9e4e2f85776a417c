//! How an [`crate::ArmClient`] reaches Azure: endpoints, trust, credential, LRO pacing.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use azure_core::credentials::{Secret, TokenCredential};
use url::Url;

/// Everything an [`crate::ArmClient`] needs. The same struct points at the local emulator
/// (`https://127.0.0.1:PORT` for both URLs plus the dev CA) or at public Azure.
#[derive(Clone, Debug)]
pub struct ArmConfig {
    /// ARM endpoint, e.g. `https://management.azure.com` or the emulator's URL.
    pub resource_manager_url: Url,
    /// Entra authority, e.g. `https://login.microsoftonline.com` or the emulator's URL.
    /// Must be `https` (azure_identity refuses anything else).
    pub authority_host: Url,
    /// Extra trusted CA certificates (PEM, may hold several), added to the system roots.
    pub ca_bundle_pem: Option<String>,
    /// Which credential gets the ARM token.
    pub credential: CredentialConfig,
    /// Wait between LRO polls when ARM sends no `Retry-After` (Azure SDKs use 30 s).
    pub lro_poll_interval: Duration,
    /// Give up watching one long-running operation after this long.
    pub lro_timeout: Duration,
}

impl ArmConfig {
    /// Azure SDKs' default poll interval when ARM gives no `Retry-After`.
    pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(30);

    /// The token scope for this ARM endpoint: `{origin}/.default`, which is
    /// `https://management.azure.com/.default` for public Azure and the emulator's origin
    /// locally (so a token minted for one ARM is never sent to another).
    pub fn token_scope(&self) -> String {
        format!(
            "{}/.default",
            self.resource_manager_url.origin().ascii_serialization()
        )
    }
}

/// Makes client assertions: a fresh signed JWT each time Entra is asked for a token.
pub trait AssertionSource: Send + Sync {
    /// A new assertion, or why none can be made.
    fn assertion(&self) -> Result<String, String>;
}

/// Where the ARM token comes from. An enum so workload identity (token file) and managed
/// identity slot in as variants without changing callers.
#[derive(Clone)]
#[non_exhaustive]
pub enum CredentialConfig {
    /// A service principal with a client secret (`ClientSecretCredential`).
    ClientSecret {
        /// Entra tenant (directory) id.
        tenant_id: String,
        /// Application (client) id.
        client_id: String,
        /// The client secret; never logged (`Secret`'s `Debug` is redacted).
        client_secret: Secret,
    },
    /// Workload identity federation: an application in `tenant_id`'s directory that trusts an
    /// issuer of the caller's, authenticated with a client assertion signed by that issuer
    /// (`ClientAssertionCredential`). No secret is involved.
    ClientAssertion {
        /// The directory the application lives in.
        tenant_id: String,
        /// The application (client) id.
        client_id: String,
        /// Signs the assertions, one per token request.
        assertion: Arc<dyn AssertionSource>,
    },
    /// An already-built credential, for callers that need one this enum does not model yet.
    /// Its HTTP transport (and so its CA trust) is the caller's business.
    Custom(Arc<dyn TokenCredential>),
}

impl fmt::Debug for CredentialConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClientSecret {
                tenant_id,
                client_id,
                ..
            } => f
                .debug_struct("ClientSecret")
                .field("tenant_id", tenant_id)
                .field("client_id", client_id)
                .field("client_secret", &"<redacted>")
                .finish(),
            Self::ClientAssertion {
                tenant_id,
                client_id,
                ..
            } => f
                .debug_struct("ClientAssertion")
                .field("tenant_id", tenant_id)
                .field("client_id", client_id)
                .finish_non_exhaustive(),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}
