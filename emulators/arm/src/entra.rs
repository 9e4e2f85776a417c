//! The Entra ID (v2.0) token endpoint, and verification of the tokens it issues.
//!
//! `azure_identity`'s `ClientSecretCredential` makes no discovery calls: it posts
//! `grant_type=client_credentials&client_id&client_secret&scope` straight to
//! `{authority}/{tenant}/oauth2/v2.0/token` and reads `access_token`/`expires_in`, or
//! `error_description`/`error_codes` on failure. The emulator signs its tokens itself (HS256
//! with a per-instance key) and ARM requests are verified against that key.

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

fn entra_error(status: StatusCode, error: &str, code: u32, description: String) -> Response {
    let now = OffsetDateTime::now_utc();
    let body = json!({
        "error": error,
        "error_description": format!("AADSTS{code}: {description} Trace ID: {} Correlation ID: {} Timestamp: {}",
            uuid::Uuid::new_v4(), uuid::Uuid::new_v4(), crate::store::rfc3339(now)),
        "error_codes": [code],
        "timestamp": crate::store::rfc3339(now),
        "trace_id": uuid::Uuid::new_v4().to_string(),
        "correlation_id": uuid::Uuid::new_v4().to_string(),
        "error_uri": format!("https://login.microsoftonline.com/error?code={code}"),
    });
    (status, Json(body)).into_response()
}

/// `POST /{tenant}/oauth2/v2.0/token`
pub async fn token(
    State(emu): State<Emulator>,
    Path(tenant): Path<String>,
    body: Bytes,
) -> Response {
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let missing = |p: &str| {
        entra_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            900144,
            format!("The request body must contain the following parameter: '{p}'."),
        )
    };
    let Some(grant) = field("grant_type") else {
        return missing("grant_type");
    };
    if grant != "client_credentials" {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            70003,
            format!("The app requested an unsupported grant type '{grant}'."),
        );
    }
    let Some(client_id) = field("client_id") else {
        return missing("client_id");
    };
    let Some(scope) = field("scope") else {
        return missing("scope");
    };
    let Some(resource) = scope
        .split(' ')
        .next()
        .and_then(|s| s.strip_suffix(".default"))
    else {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            1002012,
            format!(
                "The provided value for scope {scope} is not valid. Client credential flows must \
                 have a scope value with /.default suffixed to the resource identifier (application ID URI)."
            ),
        );
    };
    let principal: Option<&Principal> = emu.config().principals.iter().find(|p| {
        p.client_id.eq_ignore_ascii_case(client_id)
            && p.azure_tenant_id.eq_ignore_ascii_case(&tenant)
    });
    let Some(principal) = principal else {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            700016,
            format!(
                "Application with identifier '{client_id}' was not found in the directory '{tenant}'. \
                 This can happen if the application has not been installed by the administrator of \
                 the tenant or consented to by any user in the tenant."
            ),
        );
    };
    if field("client_assertion").is_some() {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            70021,
            "No matching federated identity record found for presented assertion.".into(),
        );
    }
    let Some(secret) = field("client_secret") else {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            7000216,
            "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.".into(),
        );
    };
    if secret != principal.client_secret {
        return entra_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            7000215,
            format!(
                "Invalid client secret provided. Ensure the secret being sent in the request is the \
                 client secret value, not the client secret ID, for a secret added to app '{client_id}'."
            ),
        );
    }
    let aud = if resource.ends_with('/') {
        resource.to_owned()
    } else {
        format!("{resource}/")
    };
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let lifetime = emu.config().token_lifetime_secs as i64;
    let oid = object_id(&principal.client_id);
    let claims = Claims {
        aud,
        iss: format!("https://sts.windows.net/{}/", principal.azure_tenant_id),
        iat: now,
        nbf: now,
        exp: now + lifetime,
        appid: principal.client_id.clone(),
        sub: oid.clone(),
        oid,
        tid: principal.azure_tenant_id.clone(),
        idtyp: "app".into(),
        ver: "1.0".into(),
    };
    let token = match jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &emu.inner.keys.encoding,
    ) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "signing token failed");
            return entra_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                50000,
                "Token signing failed.".into(),
            );
        }
    };
    let body = json!({
        "token_type": "Bearer",
        "expires_in": lifetime,
        "ext_expires_in": lifetime,
        "access_token": token,
    });
    ([(header::CACHE_CONTROL, "no-store, no-cache")], Json(body)).into_response()
}

/// `GET /{tenant}/v2.0/.well-known/openid-configuration` (for MSAL-style clients).
pub async fn openid_configuration(Path(tenant): Path<String>, headers: HeaderMap) -> Response {
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

    /// The principal must be configured for the subscription (stand-in for RBAC).
    pub(crate) fn authorize(
        &self,
        claims: &Claims,
        sub: &str,
        action: &str,
        scope: &str,
    ) -> Result<(), ArmError> {
        let allowed = self.config().principals.iter().any(|p| {
            p.client_id.eq_ignore_ascii_case(&claims.appid)
                && p.subscription_ids
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(sub))
        });
        if allowed {
            return Ok(());
        }
        Err(ArmError::new(
            StatusCode::FORBIDDEN,
            "AuthorizationFailed",
            format!(
                "The client '{oid}' with object id '{oid}' does not have authorization to perform \
                 action '{action}' over scope '{scope}' or the scope is invalid. If access was \
                 recently granted, please refresh your credentials.",
                oid = claims.oid
            ),
        ))
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
