//! The Entra ID (v2.0) token endpoint, and verification of the tokens it issues.
//!
//! Two `client_credentials` grants are served. A configured app registration authenticates
//! with its secret: `azure_identity`'s `ClientSecretCredential` makes no discovery calls, it
//! posts `grant_type=client_credentials&client_id&client_secret&scope` straight to
//! `{authority}/{tenant}/oauth2/v2.0/token` and reads `access_token`/`expires_in`, or
//! `error_description`/`error_codes` on failure; Python's (MSAL underneath) first reads the
//! tenant's OpenID configuration to find that endpoint. Both the configuration and the token
//! endpoint refuse a tenant the emulator does not have, as Entra does. A user-assigned managed
//! identity authenticates with a client assertion (workload identity federation, what
//! `WorkloadIdentityCredential` sends): see [`exchange`]. The emulator signs its tokens itself
//! (HS256 with a per-instance key) and ARM requests are verified against that key.

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
    pub(crate) fn known_tenant(&self, tenant: &str) -> Option<&str> {
        self.config()
            .principals
            .iter()
            .map(|p| p.azure_tenant_id.as_str())
            .find(|t| t.eq_ignore_ascii_case(tenant))
    }

    /// The configured app registration `client_id` of `tenant` (GUIDs: ignoring case).
    pub(crate) fn principal(&self, tenant: &str, client_id: &str) -> Option<&Principal> {
        self.config().principals.iter().find(|p| {
            p.client_id.eq_ignore_ascii_case(client_id)
                && p.azure_tenant_id.eq_ignore_ascii_case(tenant)
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

    let grantee = if let Some(assertion) = field("client_assertion") {
        exchange::federated(
            emu,
            tenant,
            client_id,
            field("client_assertion_type"),
            assertion,
        )
        .await?
    } else {
        let principal = emu
            .principal(tenant, client_id)
            .ok_or_else(|| EntraError::application_not_found(client_id, tenant))?;
        let secret = field("client_secret").ok_or_else(EntraError::credential_required)?;
        if secret != principal.client_secret {
            return Err(EntraError::invalid_secret(client_id));
        }
        Grantee {
            app_id: principal.client_id.clone(),
            object_id: object_id(&principal.client_id),
            tenant_id: principal.azure_tenant_id.clone(),
        }
    };
    issue(emu, &grantee, resource)
}

/// The access token (ARM's v1 shape) and Entra's token response around it.
fn issue(emu: &Emulator, who: &Grantee, resource: &str) -> Result<Response, EntraError> {
    let aud = if resource.ends_with('/') {
        resource.to_owned()
    } else {
        format!("{resource}/")
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
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_aud = false;
        validation.leeway = 0;
        let data = jsonwebtoken::decode::<Claims>(token, &self.inner.keys.decoding, &validation)
            .map_err(|e| {
                if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::ExpiredSignature) {
                    unauthorized(
                        "ExpiredAuthenticationToken",
                        "The access token has expired.",
                        "The access token has expired.",
                    )
                } else {
                    unauthorized(
                        "InvalidAuthenticationToken",
                        "The access token is invalid.",
                        "The access token is invalid.",
                    )
                }
            })?;
        let claims = data.claims;
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

    /// Tenant that owns a subscription (the first principal configured for it).
    pub(crate) fn tenant_of(&self, sub: &str) -> String {
        self.config()
            .principals
            .iter()
            .find(|p| {
                p.subscription_ids
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(sub))
            })
            .map(|p| p.azure_tenant_id.clone())
            .unwrap_or_default()
    }
}
