//! The HTTP stack under the ARM pipeline and the credential: one `reqwest` client that trusts
//! the dev CA, and `azure_core` options with the pipeline's own retries switched off.
//!
//! Retries are off on purpose: the saga engine retries whole steps with visible, bounded,
//! jittered backoff and needs ARM's `Retry-After` handed back in the error. A pipeline that
//! silently retried 429s three times would hide throttling and multiply the load it causes.

use std::sync::Arc;
use std::time::Duration;

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::TokenCredential;
use azure_core::http::{ClientOptions, RetryOptions, Transport};
use azure_identity::{
    ClientAssertion, ClientAssertionCredential, ClientAssertionCredentialOptions,
    ClientSecretCredential, ClientSecretCredentialOptions,
};

use crate::config::{ArmConfig, CredentialConfig};
use crate::error::{ArmError, Result};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// ARM answers within seconds (long work is an LRO); a stuck socket must not hang a step.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A `reqwest` client trusting the system roots plus `ca_bundle_pem`.
pub(crate) fn http_client(ca_bundle_pem: Option<&str>) -> Result<reqwest::Client> {
    // One rustls provider for the process; an error only means one is installed already.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        // ARM never redirects; following one could carry the bearer token elsewhere.
        .redirect(reqwest::redirect::Policy::none());
    if let Some(pem) = ca_bundle_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .map_err(|e| ArmError::Config(format!("CA bundle is not valid PEM: {e}")))?;
        if certs.is_empty() {
            return Err(ArmError::Config("CA bundle holds no certificate".into()));
        }
        builder = builder.tls_certs_merge(certs);
    }
    builder
        .build()
        .map_err(|e| ArmError::Config(format!("cannot build HTTP client: {e}")))
}

/// `azure_core` client options over `http` with no pipeline retries.
pub(crate) fn client_options(http: &reqwest::Client) -> ClientOptions {
    ClientOptions {
        transport: Some(Transport::new(Arc::new(http.clone()))),
        retry: RetryOptions::none(),
        ..Default::default()
    }
}

/// Builds the token credential described by `config`, sharing the trusted HTTP client.
pub(crate) fn credential(
    config: &ArmConfig,
    http: &reqwest::Client,
) -> Result<Arc<dyn TokenCredential>> {
    match &config.credential {
        CredentialConfig::ClientSecret {
            tenant_id,
            client_id,
            client_secret,
        } => {
            let client_options = entra_options(config, http);
            let credential = ClientSecretCredential::new(
                tenant_id,
                client_id.clone(),
                client_secret.clone(),
                Some(ClientSecretCredentialOptions { client_options }),
            )
            .map_err(|e| ArmError::Config(format!("client secret credential: {e}")))?;
            Ok(credential)
        }
        CredentialConfig::ClientAssertion {
            tenant_id,
            client_id,
            assertion,
        } => {
            let credential = ClientAssertionCredential::new(
                tenant_id.clone(),
                client_id.clone(),
                Assertions(assertion.clone()),
                Some(ClientAssertionCredentialOptions {
                    client_options: entra_options(config, http),
                }),
            )
            .map_err(|e| ArmError::Config(format!("client assertion credential: {e}")))?;
            Ok(credential)
        }
        CredentialConfig::Custom(credential) => Ok(credential.clone()),
    }
}

/// The client options of a credential that asks `config.authority_host` for tokens.
fn entra_options(config: &ArmConfig, http: &reqwest::Client) -> ClientOptions {
    let mut custom = CustomConfiguration::default();
    custom.authority_host = config
        .authority_host
        .as_str()
        .trim_end_matches('/')
        .to_owned();
    let mut client_options = client_options(http);
    client_options.cloud = Some(Arc::new(CloudConfiguration::from(custom)));
    client_options
}

/// An [`AssertionSource`] as `azure_identity` asks for assertions.
struct Assertions(Arc<dyn crate::config::AssertionSource>);

impl std::fmt::Debug for Assertions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Assertions(..)")
    }
}

#[async_trait::async_trait]
impl ClientAssertion for Assertions {
    async fn secret(
        &self,
        _options: Option<azure_core::http::ClientMethodOptions<'_>>,
    ) -> azure_core::Result<String> {
        self.0.assertion().map_err(|e| {
            azure_core::Error::with_message(azure_core::error::ErrorKind::Credential, e)
        })
    }
}
