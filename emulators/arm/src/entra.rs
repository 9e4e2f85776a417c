//! The Entra ID (v2.0) token endpoint, and verification of the tokens it issues.
//!
//! Two `client_credentials` grants are served. A configured app registration authenticates
//! with its secret: `azure_identity`'s `ClientSecretCredential` makes no discovery calls, it
//! posts `grant_type=client_credentials&client_id&client_secret&scope` straight to
//! `{authority}/{tenant}/oauth2/v2.0/token` and reads `access_token`/`expires_in`, or
//! `error_description`/`error_codes` on failure; Python's (MSAL underneath) first reads the
//! tenant's OpenID configuration to find that endpoint. Both the configuration and the token
//! endpoint refuse a tenant the emulator does not have, as Entra does. A user-assigned managed
//! identity, or an app registration made through Graph (`crate::graph`), authenticates with a
//! client assertion (workload identity federation, what `WorkloadIdentityCredential` sends):
//! see [`exchange`]. The emulator signs its tokens itself (HS256 with a per-instance key) and
//! ARM and Graph requests are verified against that key, each refusing the other's audience.
//!
//! A token for Microsoft Graph (`https://graph.microsoft.com/.default`) carries Graph's
//! audience, and, for a configured app registration only, the application permission its
//! tenant admin consented to (`roles: ["Application.ReadWrite.All"]`): the configured
//! principals play each tenant's administrator, who manages the directory's apps.

mod apps;
mod assertion;
mod error;
mod exchange;
mod federation;
mod issuers;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;

use crate::Emulator;
use crate::config::Principal;
use crate::errors::ArmError;
pub(crate) use error::EntraError;
pub(crate) use issuers::Issuers;

/// Claims of an emulator-issued app token (ARM's v1 token shape).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Claims {
    pub aud: String,
    pub iss: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub appid: String,
    pub oid: String,
    pub sub: String,
    pub tid: String,
    pub idtyp: String,
    pub ver: String,
    /// Application permissions (app roles) granted to the client on the token's resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

/// Why an emulator-issued bearer token is not accepted, before its audience is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    #[error("the token has expired")]
    Expired,
    #[error("the token is not one this emulator signed")]
    Invalid,
}

/// The signing key of one emulator instance.
pub struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl Keys {
    pub fn generate() -> Self {
        let mut secret = Vec::with_capacity(64);
        for _ in 0..4 {
            secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        }
        Self {
            encoding: EncodingKey::from_secret(&secret),
            decoding: DecodingKey::from_secret(&secret),
        }
    }
}

/// The object id Entra would give the principal's service principal: stable per client id.
pub fn object_id(client_id: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, client_id.as_bytes()).to_string()
}

/// ARM accepts tokens for these audiences (plus the emulator's own loopback host).
const ARM_AUDIENCES: &[&str] = &[
    "https://management.core.windows.net/",
    "https://management.core.windows.net",
    "https://management.azure.com/",
    "https://management.azure.com",
];

/// The audiences Graph accepts: its identifier URI (with or without the trailing slash), or
/// its well-known application id.
const GRAPH_AUDIENCES: &[&str] = &[
    "https://graph.microsoft.com",
    "https://graph.microsoft.com/",
    GRAPH_APP_ID,
];

/// Microsoft Graph's application (client) id, the same in every tenant.
pub(crate) const GRAPH_APP_ID: &str = "00000003-0000-0000-c000-000000000000";

/// The `aud` of Graph tokens asked for by identifier URI.
pub(crate) const GRAPH_AUDIENCE: &str = "https://graph.microsoft.com";

/// The application permission a tenant admin's app holds on Graph here.
pub(crate) const APPLICATION_READ_WRITE_ALL: &str = "Application.ReadWrite.All";

/// Who a token is issued to: the app (client) id, the object id of its service principal
/// and the tenant.
pub(crate) struct Grantee {
    pub app_id: String,
    pub object_id: String,
    pub tenant_id: String,
}

impl Emulator {
    /// The tenant `tenant` names, as configured (GUIDs: ignoring case): the tenants of the app
    /// registrations, which own every subscription and managed identity here. Entra refuses
    /// any other before looking at the request ([`EntraError::tenant_not_found`]).
    pub(crate) fn known_tenant(&self, tenant: &str) -> Option<String> {
        self.with_principals(|all| {
            all.iter()
                .map(|p| p.azure_tenant_id.as_str())
                .find(|t| t.eq_ignore_ascii_case(tenant))
                .map(str::to_owned)
        })
    }

    /// The configured app registration `client_id` of `tenant` (GUIDs: ignoring case).
    pub(crate) fn principal(&self, tenant: &str, client_id: &str) -> Option<Principal> {
        self.with_principals(|all| {
            all.iter()
                .find(|p| {
                    p.client_id.eq_ignore_ascii_case(client_id)
                        && p.azure_tenant_id.eq_ignore_ascii_case(tenant)
                })
                .cloned()
        })
    }
}

/// `POST /{tenant}/oauth2/v2.0/token`
pub async fn token(
    State(emu): State<Emulator>,
    Path(tenant): Path<String>,
    body: Bytes,
) -> Response {
    match grant(&emu, &tenant, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn grant(emu: &Emulator, tenant: &str, body: &Bytes) -> Result<Response, EntraError> {
    if emu.known_tenant(tenant).is_none() {
        return Err(EntraError::tenant_not_found(tenant));
    }
    let form: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let grant = field("grant_type").ok_or_else(|| EntraError::missing_parameter("grant_type"))?;
    if grant != "client_credentials" {
        return Err(EntraError::unsupported_grant(grant));
    }
    let client_id = field("client_id").ok_or_else(|| EntraError::missing_parameter("client_id"))?;
    let scope = field("scope").ok_or_else(|| EntraError::missing_parameter("scope"))?;
    let resource = scope
        .split(' ')
        .next()
        .and_then(|s| s.strip_suffix(".default"))
        .ok_or_else(|| EntraError::invalid_scope(scope))?;

    // Federated clients hold no Graph permission here; the configured ones are tenant admins.
    let (grantee, roles) = if let Some(assertion) = field("client_assertion") {
        let grantee = exchange::federated(
            emu,
            tenant,
            client_id,
            field("client_assertion_type"),
            assertion,
        )
        .await?;
        (grantee, Vec::new())
    } else {
        let Some(principal) = emu.principal(tenant, client_id) else {
            return Err(refuse_secret_of_unconfigured(
                emu,
                tenant,
                client_id,
                field("client_secret"),
            ));
        };
        let secret = field("client_secret").ok_or_else(EntraError::credential_required)?;
        if secret != principal.client_secret {
            return Err(EntraError::invalid_secret(client_id));
        }
        let grantee = Grantee {
            app_id: principal.client_id.clone(),
            object_id: object_id(&principal.client_id),
            tenant_id: principal.azure_tenant_id.clone(),
        };
        (grantee, vec![APPLICATION_READ_WRITE_ALL.to_owned()])
    };
    issue(emu, &grantee, resource, roles)
}

/// The refusal of a secret grant for a client that is no configured principal: an app
/// registration made through Graph has no secret (the emulator has no `addPassword`), so any
/// secret is wrong for it; anything else is an app the tenant does not have.
fn refuse_secret_of_unconfigured(
    emu: &Emulator,
    tenant: &str,
    client_id: &str,
    secret: Option<&str>,
) -> EntraError {
    let now = OffsetDateTime::now_utc();
    let registered = {
        let mut st = emu.lock();
        st.store.settle(now);
        apps::find_app(st.store.directory(), tenant, client_id)
    }
    .is_some_and(|app| emu.replicated(app.created, now));
    match (registered, secret) {
        (false, _) => EntraError::application_not_found(client_id, tenant),
        (true, None) => EntraError::credential_required(),
        (true, Some(_)) => EntraError::invalid_secret(client_id),
    }
}

/// The `aud` of a token for `resource`: Graph's own audience for Graph, else the resource
/// with a trailing slash (ARM's v1 form, `https://management.azure.com/`).
fn audience(resource: &str) -> String {
    let bare = resource.trim_end_matches('/');
    if bare.eq_ignore_ascii_case(GRAPH_AUDIENCE) {
        GRAPH_AUDIENCE.to_owned()
    } else if bare.eq_ignore_ascii_case(GRAPH_APP_ID) {
        GRAPH_APP_ID.to_owned()
    } else if resource.ends_with('/') {
        resource.to_owned()
    } else {
        format!("{resource}/")
    }
}

/// Whether `aud` is Microsoft Graph's.
pub(crate) fn is_graph_audience(aud: &str) -> bool {
    GRAPH_AUDIENCES.contains(&aud)
}

/// The access token (ARM's v1 shape) and Entra's token response around it. `roles` reach
/// Graph tokens only: ARM authorizes by role assignments, never by app roles.
fn issue(
    emu: &Emulator,
    who: &Grantee,
    resource: &str,
    roles: Vec<String>,
) -> Result<Response, EntraError> {
    let aud = audience(resource);
    let roles = if is_graph_audience(&aud) {
        roles
    } else {
        Vec::new()
    };
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let lifetime = emu.config().token_lifetime_secs as i64;
    let claims = Claims {
        aud,
        iss: format!("https://sts.windows.net/{}/", who.tenant_id),
        iat: now,
        nbf: now,
        exp: now + lifetime,
        appid: who.app_id.clone(),
        sub: who.object_id.clone(),
        oid: who.object_id.clone(),
        tid: who.tenant_id.clone(),
        idtyp: "app".into(),
        ver: "1.0".into(),
        roles,
    };
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &emu.inner.keys.encoding,
    )
    .map_err(|e| {
        tracing::error!(error = %e, "signing token failed");
        EntraError::server_error("Token signing failed.")
    })?;
    let body = json!({
        "token_type": "Bearer",
        "expires_in": lifetime,
        "ext_expires_in": lifetime,
        "access_token": token,
    });
    Ok(([(header::CACHE_CONTROL, "no-store, no-cache")], Json(body)).into_response())
}

/// `GET /{tenant}/v2.0/.well-known/openid-configuration`, which MSAL (Python's
/// `azure-identity`) reads before its first token request: the tenant's endpoints, named by its
/// id whatever casing the path used, or Entra's `400 invalid_tenant` for a tenant it does not
/// have.
pub async fn openid_configuration(
    State(emu): State<Emulator>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(tenant) = emu.known_tenant(&tenant) else {
        return EntraError::tenant_not_found(&tenant).into_response();
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let base = format!("https://{host}/{tenant}");
    Json(json!({
        "token_endpoint": format!("{base}/oauth2/v2.0/token"),
        "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
        "issuer": format!("https://login.microsoftonline.com/{tenant}/v2.0"),
        "authorization_endpoint": format!("{base}/oauth2/v2.0/authorize"),
        "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "tenant_region_scope": "WW",
    }))
    .into_response()
}

fn www_authenticate(description: &str) -> String {
    format!(
        "Bearer authorization_uri=\"https://login.windows.net/common\", error=\"invalid_token\", \
         error_description=\"{description}\""
    )
}

impl Emulator {
    /// The claims of a bearer token this emulator signed, checked for signature and lifetime
    /// (no leeway); the audience is the caller's to check.
    pub(crate) fn decode_token(&self, token: &str) -> Result<Claims, TokenError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_aud = false;
        validation.leeway = 0;
        jsonwebtoken::decode::<Claims>(token, &self.inner.keys.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| {
                if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::ExpiredSignature) {
                    TokenError::Expired
                } else {
                    TokenError::Invalid
                }
            })
    }

    /// Verifies the bearer token of an ARM request.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<Claims, ArmError> {
        let unauthorized = |code: &str, msg: &str, desc: &str| {
            ArmError::new(StatusCode::UNAUTHORIZED, code, msg)
                .with_header("www-authenticate", www_authenticate(desc))
        };
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized(
                "AuthenticationFailed",
                "Authentication failed. The 'Authorization' header is missing.",
                "The authentication failed because of missing 'Authorization' header.",
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .ok_or_else(|| {
                unauthorized(
                    "AuthenticationFailed",
                    "Authentication failed. The 'Authorization' header is provided in an invalid format.",
                    "The authentication failed because of invalid 'Authorization' header.",
                )
            })?;
        let claims = self.decode_token(token).map_err(|e| match e {
            TokenError::Expired => unauthorized(
                "ExpiredAuthenticationToken",
                "The access token has expired.",
                "The access token has expired.",
            ),
            TokenError::Invalid => unauthorized(
                "InvalidAuthenticationToken",
                "The access token is invalid.",
                "The access token is invalid.",
            ),
        })?;
        let loopback = claims.aud.starts_with("https://127.0.0.1")
            || claims.aud.starts_with("https://localhost");
        if !loopback && !ARM_AUDIENCES.contains(&claims.aud.as_str()) {
            return Err(unauthorized(
                "InvalidAuthenticationTokenAudience",
                &format!(
                    "The access token has been obtained for wrong audience or resource '{}'. It should \
                     exactly match with one of the allowed audiences '{}'.",
                    claims.aud,
                    ARM_AUDIENCES.join("','")
                ),
                "The access token has been obtained for wrong audience or resource.",
            ));
        }
        Ok(claims)
    }

    /// ARM's gateway check that a token comes from the directory that owns the subscription:
    /// a token of another tenant is refused before any role assignment is read, whatever they
    /// grant. Subscriptions no principal is configured for have no owner here, and are left to
    /// the authorization that follows.
    pub(crate) fn check_token_tenant(&self, claims: &Claims, sub: &str) -> Result<(), ArmError> {
        let owner = self.tenant_of(sub);
        if owner.is_empty() || owner.eq_ignore_ascii_case(&claims.tid) {
            return Ok(());
        }
        let description = format!(
            "The access token is from the wrong issuer 'https://sts.windows.net/{}/'. It must \
             match the tenant 'https://sts.windows.net/{owner}/' associated with this \
             subscription. Please use the authority (URL) 'https://login.windows.net/{owner}' to \
             get the token. Note, if the subscription is transferred to another tenant there is \
             no impact to the services, but information about new tenant could take time to \
             propagate (up to an hour). If you just transferred your subscription and see this \
             error message, please try back later.",
            claims.tid
        );
        Err(ArmError::new(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationTokenTenant",
            description,
        )
        .with_header(
            "www-authenticate",
            www_authenticate("The access token is from the wrong issuer."),
        ))
    }

    /// Tenant that owns a subscription (the first directory, configured or added, listing it).
    pub(crate) fn tenant_of(&self, sub: &str) -> String {
        self.with_principals(|all| {
            all.iter()
                .find(|p| {
                    p.subscription_ids
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(sub))
                })
                .map(|p| p.azure_tenant_id.clone())
                .unwrap_or_default()
        })
    }
}
