//! The directory objects: app registrations, their federated identity credentials, and service
//! principals, as the emulator keeps them (and as the admin API lists them).
//!
//! Ids are lower-case hyphenated GUIDs, as Graph prints them. `created` is when the object was
//! written; Entra learns of it through its own replication, so the token endpoint and ARM's
//! principal lookup only see it `principal_replication_delay` later.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// An app registration (Graph's `application`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Application {
    /// The directory (tenant) the app was registered in.
    pub tenant_id: String,
    /// The object id (Graph's `id`).
    pub id: String,
    /// The client id (Graph's `appId`), what a token request names as `client_id`.
    pub app_id: String,
    pub display_name: String,
    pub description: Option<String>,
    pub sign_in_audience: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created: OffsetDateTime,
    pub federated_identity_credentials: Vec<FederatedCredential>,
}

/// A federated identity credential of an app registration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FederatedCredential {
    pub id: String,
    /// Unique per app (an alternate key: Graph addresses a credential by id or by name).
    pub name: String,
    pub issuer: String,
    pub subject: String,
    /// Exactly one value (Graph refuses any other count).
    pub audiences: Vec<String>,
    pub description: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created: OffsetDateTime,
}

/// A service principal (Graph's `servicePrincipal`): the app's instance in a directory, the
/// object role assignments name and tokens carry as `oid`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePrincipal {
    pub tenant_id: String,
    /// The object id: the token's `oid`, a role assignment's `principalId`.
    pub id: String,
    pub app_id: String,
    /// The app's display name when the principal was made.
    pub display_name: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created: OffsetDateTime,
}

/// An app registration with its service principal in its own directory, if it has one (the
/// admin API's `GET /directory/applications` row).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppRegistration {
    pub application: Application,
    pub service_principal: Option<ServicePrincipal>,
}
