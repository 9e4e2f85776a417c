//! A tenant's administrator, doing in the emulator's Entra directory what they would do in the
//! Azure portal to let hypersaga in without a secret: register an app, make its service
//! principal, add a federated identity credential trusting hypersaga's OIDC issuer for the
//! tenant's subject, and grant that principal roles on the subscription.
//!
//! Why a client rather than the admin API: `hypersaga dev` and the end-to-end tests play the
//! tenant's side, and must meet what a real administrator meets — Entra's token endpoint with
//! the administrator's secret, Microsoft Graph's validation, its replication refusals
//! (`NoBackingApplicationObject`), ARM's `PrincipalNotFound` — so everything here goes over the
//! emulator's real HTTP APIs, and would work against Azure with Azure's hosts behind one URL.
//!
//! ```no_run
//! # async fn demo() -> Result<(), hypersaga_emulator_arm::tenant_admin::TenantAdminError> {
//! use hypersaga_emulator_arm::tenant_admin::{CONTRIBUTOR, RBAC_ADMINISTRATOR, TenantAdmin};
//! let admin = TenantAdmin::new(
//!     "https://127.0.0.1:8443",
//!     Some("-----BEGIN CERTIFICATE-----\n…"),
//!     "72f988bf-86f1-41af-91ab-2d7cd011db47",
//!     "admin-client-id",
//!     "admin-secret",
//! )?;
//! let onboarded = admin
//!     .onboard(
//!         "hypersaga",
//!         "http://127.0.0.1:10000/devstoreaccount1/oidc",
//!         "hypersaga:tenant:acme",
//!         "api://AzureADTokenExchange",
//!         "11111111-2222-3333-4444-555555555555",
//!         &[CONTRIBUTOR, RBAC_ADMINISTRATOR],
//!     )
//!     .await?;
//! println!("hypersaga's client id for acme: {}", onboarded.app_id);
//! # Ok(()) }
//! ```

mod apps;
mod error;
mod http;
mod replication;
mod roles;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

pub use error::TenantAdminError;
pub use http::Polling;

/// `Contributor`'s role definition id.
pub const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
/// `Role Based Access Control Administrator`'s role definition id.
pub const RBAC_ADMINISTRATOR: &str = "f58310d9-a9f6-439a-9e8d-f62e7b41a168";
/// The audience Entra recommends for federated credentials.
pub const TOKEN_EXCHANGE_AUDIENCE: &str = "api://AzureADTokenExchange";

/// The scope of the administrator's Graph token.
const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";
/// The scope of the administrator's ARM token: ARM's public audience, which the emulator
/// accepts as Azure does (besides its own loopback URL).
const ARM_SCOPE: &str = "https://management.azure.com/.default";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// One tenant administrator's session against the emulator (ARM, Entra and Graph on one
/// host).
#[derive(Clone)]
pub struct TenantAdmin {
    base: Url,
    directory: String,
    admin_client_id: String,
    admin_secret: String,
    http: reqwest::Client,
    polling: Polling,
}

impl fmt::Debug for TenantAdmin {
    // The secret never reaches logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TenantAdmin")
            .field("base", &self.base.as_str())
            .field("directory", &self.directory)
            .field("admin_client_id", &self.admin_client_id)
            .field("admin_secret", &"<redacted>")
            .field("polling", &self.polling)
            .finish()
    }
}

/// What onboarding made or adopted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Onboarded {
    /// The app's client id: what hypersaga's tenant record takes, and the `client_id` of its
    /// client-assertion token requests.
    pub app_id: String,
    /// The app's object id (Graph's `id`).
    pub application_object_id: String,
    /// The service principal's object id: the `oid` of hypersaga's tokens, the principal of
    /// the role assignments.
    pub service_principal_id: String,
    /// The federated identity credential's id and name.
    pub federated_credential_id: String,
    pub federated_credential_name: String,
    /// The role assignments' full ARM ids, one per role asked for, in that order.
    pub role_assignment_ids: Vec<String>,
    /// Whether an app with the display name was there already (and was adopted).
    pub adopted_existing_app: bool,
}

impl TenantAdmin {
    /// A session for `directory`'s administrator (`admin_client_id` with `admin_secret`) on
    /// the emulator at `base_url` (`https://…`, or `http://…` for an emulator served plain),
    /// trusting `ca_pem` (a PEM bundle) besides the system roots.
    pub fn new(
        base_url: &str,
        ca_pem: Option<&str>,
        directory: &str,
        admin_client_id: &str,
        admin_secret: &str,
    ) -> Result<Self, TenantAdminError> {
        let mut base = Url::parse(base_url)
            .map_err(|e| TenantAdminError::Invalid(format!("base URL '{base_url}': {e}")))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(TenantAdminError::Invalid(format!(
                "base URL '{base_url}' is not http(s)"
            )));
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        for (name, value) in [
            ("directory", directory),
            ("admin client id", admin_client_id),
            ("admin secret", admin_secret),
        ] {
            if value.trim().is_empty() {
                return Err(TenantAdminError::Invalid(format!("{name} is blank")));
            }
        }
        // One rustls provider for the process, as reqwest needs one to speak TLS; an error
        // only means one is installed already.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            // None of the three services redirects; following one could carry a token away.
            .redirect(reqwest::redirect::Policy::none());
        if let Some(pem) = ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(|e| TenantAdminError::Ca(format!("not valid PEM: {e}")))?;
            if certs.is_empty() {
                return Err(TenantAdminError::Ca("no certificate in the bundle".into()));
            }
            builder = builder.tls_certs_merge(certs);
        }
        Ok(Self {
            base,
            directory: directory.to_owned(),
            admin_client_id: admin_client_id.to_owned(),
            admin_secret: admin_secret.to_owned(),
            http: builder.build().map_err(TenantAdminError::Client)?,
            polling: Polling::default(),
        })
    }

    /// How often and how long to wait out Entra's replication and throttling (default: every
    /// 500 ms for two minutes).
    pub fn with_polling(mut self, polling: Polling) -> Self {
        self.polling = polling;
        self
    }

    /// The directory (tenant id) this administrator manages.
    pub fn directory(&self) -> &str {
        &self.directory
    }

    /// Registers an app named `display_name` for hypersaga (single-tenant), its service
    /// principal, a federated credential trusting `issuer` for `subject` and `audience`, and
    /// grants the principal each of `role_definition_ids` (role definition GUIDs) on
    /// `/subscriptions/{subscription_id}`.
    ///
    /// Waits until Entra has replicated each object: retries Graph's `NoBackingApplicationObject`
    /// and `404`s on fresh objects and ARM's `PrincipalNotFound`, then probes the token
    /// endpoint until the app, its principal and the credential answer for an assertion (a
    /// probe whose signature cannot verify: see the README), so a client assertion signed by `issuer` for `subject` gets a token
    /// right after this returns. Idempotent: an app with that display name is adopted, and its
    /// principal, a credential with that issuer, subject and audience, and role assignments of
    /// those roles to it at that scope are reused.
    pub async fn onboard(
        &self,
        display_name: &str,
        issuer: &str,
        subject: &str,
        audience: &str,
        subscription_id: &str,
        role_definition_ids: &[&str],
    ) -> Result<Onboarded, TenantAdminError> {
        for (name, value) in [
            ("display name", display_name),
            ("issuer", issuer),
            ("subject", subject),
            ("audience", audience),
        ] {
            if value.trim().is_empty() {
                return Err(TenantAdminError::Invalid(format!("{name} is blank")));
            }
        }
        let subscription = guid("subscription id", subscription_id)?;
        let roles = role_definition_ids
            .iter()
            .map(|r| guid("role definition id", r))
            .collect::<Result<Vec<_>, _>>()?;

        let graph = self.token(GRAPH_SCOPE).await?;
        let (app, adopted) = self.find_or_register_app(&graph, display_name).await?;
        let principal = self.find_or_create_principal(&graph, &app).await?;
        let credential = self
            .find_or_add_credential(&graph, &app, issuer, subject, audience)
            .await?;
        self.await_replication(&app.app_id, issuer, subject, audience)
            .await?;

        let arm = self.token(ARM_SCOPE).await?;
        let mut role_assignment_ids = Vec::with_capacity(roles.len());
        for role in &roles {
            role_assignment_ids.push(self.grant(&arm, &subscription, role, &principal).await?);
        }
        Ok(Onboarded {
            app_id: app.app_id,
            application_object_id: app.id,
            service_principal_id: principal,
            federated_credential_id: credential.id,
            federated_credential_name: credential.name,
            role_assignment_ids,
            adopted_existing_app: adopted,
        })
    }

    /// Deletes every federated identity credential of the app whose client id is `app_id`
    /// (what a tenant does to cut hypersaga off: Entra then refuses its assertions with
    /// AADSTS70025). Answers how many were deleted; none is no error.
    pub async fn delete_federated_credentials(
        &self,
        app_id: &str,
    ) -> Result<usize, TenantAdminError> {
        let app_id = guid("app id", app_id)?;
        let graph = self.token(GRAPH_SCOPE).await?;
        self.delete_credentials(&graph, &app_id).await
    }
}

/// `value` as a lower-case GUID, or the argument error naming `what`.
fn guid(what: &str, value: &str) -> Result<String, TenantAdminError> {
    uuid::Uuid::parse_str(value.trim())
        .map(|u| u.to_string())
        .map_err(|_| TenantAdminError::Invalid(format!("{what} '{value}' is not a GUID")))
}
