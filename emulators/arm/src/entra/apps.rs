//! App registrations (made through Graph) as the token endpoint sees them: the app a
//! `client_id` names in the tenant asked for, its federated identity credentials in the form
//! [`super::federation::matching`] reads, and its service principal there, the identity its
//! tokens stand for.
//!
//! Replication is the caller's to judge: everything here carries the time it was written.

use time::OffsetDateTime;
use uuid::Uuid;

use super::federation::Credential;
use crate::directory::{AppKey, Directory};

/// An app registration, as the client-assertion grant needs it.
#[derive(Clone, Debug)]
pub(crate) struct AppClient {
    pub app_id: String,
    pub display_name: String,
    pub tenant_id: String,
    pub created: OffsetDateTime,
    pub credentials: Vec<Credential>,
    /// Object id and creation time of its service principal in the tenant, if it has one.
    pub service_principal: Option<(String, OffsetDateTime)>,
}

/// The app whose `appId` is `client_id` in `tenant`. A `client_id` that is not a GUID names
/// no app registration.
pub(crate) fn find_app(directory: &Directory, tenant: &str, client_id: &str) -> Option<AppClient> {
    let app_id = Uuid::parse_str(client_id).ok()?;
    let app = directory.app(tenant, AppKey::AppId(app_id))?;
    let credentials = app
        .federated_identity_credentials
        .iter()
        .map(|c| Credential {
            issuer: c.issuer.clone(),
            subject: c.subject.clone(),
            audiences: c.audiences.clone(),
            created: c.created,
        })
        .collect();
    Some(AppClient {
        app_id: app.app_id.clone(),
        display_name: app.display_name.clone(),
        tenant_id: app.tenant_id.clone(),
        created: app.created,
        credentials,
        service_principal: directory
            .principal_of_app(tenant, &app_id)
            .map(|p| (p.id.clone(), p.created)),
    })
}
