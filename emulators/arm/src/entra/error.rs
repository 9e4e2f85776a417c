//! The refusals of Entra's token endpoint, worded as Entra words them.
//!
//! Clients read `error` (the OAuth 2.0 class) and print `error_description`, which always
//! starts with `AADSTS<code>:` and ends with the trace, correlation and timestamp trailer
//! (`reference-error-codes.md` in MicrosoftDocs/entra-docs shows the body). The workload
//! identity federation codes are not in that reference; their wording is Entra's as clients
//! have quoted it, and each constructor names where it was seen.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use time::OffsetDateTime;
use time::macros::format_description;

/// Where the federation mismatch messages send the reader (the wording of 2025 answers).
const WIF_DOCS: &str = "https://learn.microsoft.com/entra/workload-id/workload-identity-federation";

/// Closing sentence of the 7002xx mismatch messages.
const CHECK_FIC: &str = "Check your federated identity credential Subject, Audience and Issuer \
                         against the presented assertion.";

/// One refusal of the token endpoint.
#[derive(Clone, Debug, thiserror::Error)]
#[error("AADSTS{code}: {description}")]
pub(crate) struct EntraError {
    pub status: StatusCode,
    /// The OAuth 2.0 `error` (`invalid_request`, `invalid_client`, …).
    pub error: &'static str,
    pub code: u32,
    pub description: String,
}

/// `2016-01-09 02:02:12Z`: how Entra stamps `timestamp` and the description trailer.
fn entra_timestamp(t: OffsetDateTime) -> String {
    t.format(format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second]Z"
    ))
    .unwrap_or_default()
}

/// `2025-08-29T05:47:32.1501147Z`: how 700024 prints instants (.NET round-trip form, seven
/// fractional digits; an absent `nbf` prints as the epoch).
fn dotnet_instant(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].0000000Z"
            ))
            .ok()
        })
        .unwrap_or_else(|| unix.to_string())
}

impl EntraError {
    fn new(status: StatusCode, error: &'static str, code: u32, description: String) -> Self {
        Self {
            status,
            error,
            code,
            description,
        }
    }

    /// `invalid_client` refusals answer 401, as Entra answers them.
    fn client(code: u32, description: String) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            code,
            description,
        )
    }

    pub fn missing_parameter(name: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            900144,
            format!("The request body must contain the following parameter: '{name}'."),
        )
    }

    pub fn unsupported_grant(grant: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            70003,
            format!("The app requested an unsupported grant type '{grant}'."),
        )
    }

    pub fn invalid_scope(scope: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            1002012,
            format!(
                "The provided value for scope {scope} is not valid. Client credential flows must \
                 have a scope value with /.default suffixed to the resource identifier \
                 (application ID URI)."
            ),
        )
    }

    /// A tenant Entra does not have, refused before anything else is read, at the token
    /// endpoint as at OIDC discovery (the `GET …/v2.0/.well-known/openid-configuration` MSAL
    /// makes first). The 400 of the discovery is in AzureAD/microsoft-authentication-library-
    /// for-python#275, the body MSAL then shows in Azure/azure-cli#22145, the token request's
    /// refusal in sjkp/letsencrypt-siteextension#108.
    pub fn tenant_not_found(tenant: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_tenant",
            90002,
            format!(
                "Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID \
                 and are signing into the correct cloud. Check with your subscription \
                 administrator, this may happen if there are no active subscriptions for the \
                 tenant."
            ),
        )
    }

    /// No application (or managed identity) with that client id in the tenant.
    pub fn application_not_found(client_id: &str, tenant: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            700016,
            format!(
                "Application with identifier '{client_id}' was not found in the directory \
                 '{tenant}'. This can happen if the application has not been installed by the \
                 administrator of the tenant or consented to by any user in the tenant. You may \
                 have sent your authentication request to the wrong tenant."
            ),
        )
    }

    pub fn credential_required() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            7000216,
            "'client_assertion', 'client_secret' or 'request' is required for the \
             'client_credentials' grant type."
                .into(),
        )
    }

    pub fn invalid_secret(client_id: &str) -> Self {
        Self::client(
            7000215,
            format!(
                "Invalid client secret provided. Ensure the secret being sent in the request is \
                 the client secret value, not the client secret ID, for a secret added to app \
                 '{client_id}'."
            ),
        )
    }

    /// A `client_assertion_type` other than RFC 7523's JWT bearer (AzureAD/azure-activedirectory-
    /// library-for-ruby#53 quotes it).
    pub fn unexpected_assertion_type() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            90011,
            "Unexpected client assertion type.".into(),
        )
    }

    /// A `client_assertion` that is not a JWT with the claims federation needs
    /// (panva/openid-client#348 quotes the text).
    pub fn malformed_assertion() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            50027,
            "JWT token is invalid or malformed.".into(),
        )
    }

    /// Expired or not yet valid (AzureAD/microsoft-authentication-library-for-java#984).
    pub fn assertion_time_range(now: i64, nbf: Option<i64>, exp: i64) -> Self {
        Self::client(
            700024,
            format!(
                "Client assertion is not within its valid time range. Current time: {}, \
                 assertion valid from {}, expiry time of assertion {}. Review the documentation \
                 at https://learn.microsoft.com/entra/identity-platform/certificate-credentials .",
                dotnet_instant(now),
                dotnet_instant(nbf.unwrap_or(0)),
                dotnet_instant(exp),
            ),
        )
    }

    /// No credential trusts the issuer (Azure/azure-workload-identity#1200).
    pub fn no_record_for_issuer(issuer: &str) -> Self {
        Self::client(
            700211,
            format!(
                "No matching federated identity record found for presented assertion issuer \
                 '{issuer}'. {CHECK_FIC} {WIF_DOCS}"
            ),
        )
    }

    /// The issuer is trusted, not for this subject (dotnet/maui#31978).
    pub fn no_record_for_subject(subject: &str) -> Self {
        Self::client(
            700213,
            format!(
                "No matching federated identity record found for presented assertion subject \
                 '{subject}'. {CHECK_FIC} {WIF_DOCS}"
            ),
        )
    }

    /// The subject differs from a trusted one only in case (Azure/login#515): the matching has
    /// been case-sensitive since the August 2024 breaking change.
    pub fn subject_differs_in_case(subject: &str) -> Self {
        Self::client(
            7002138,
            format!(
                "No matching federated identity record found for presented assertion subject \
                 '{subject}'. The subject matches with case-insensitive comparison, but not with \
                 case-sensitive comparison. {CHECK_FIC} See documentation at: {WIF_DOCS}. See \
                 breaking change notification and remediation at: \
                 https://learn.microsoft.com/en-us/entra/identity-platform/reference-breaking-changes#august-2024."
            ),
        )
    }

    /// Issuer and subject are trusted, the audience is not (a Kubernetes token minted for the
    /// API server instead of the federation audience).
    pub fn no_record_for_audience(audience: &str) -> Self {
        Self::client(
            700212,
            format!(
                "No matching federated identity record found for presented assertion audience \
                 '{audience}'. {CHECK_FIC} {WIF_DOCS}"
            ),
        )
    }

    /// The generic mismatch, answered while a new credential is still replicating through
    /// Entra (workload-identity-federation-considerations.md) and for an app with no
    /// credential at all (Azure/login#175 shows the three-part wording).
    pub fn no_federated_record(issuer: &str, subject: &str, audience: &str) -> Self {
        Self::client(
            70021,
            format!(
                "No matching federated identity record found for presented assertion. Assertion \
                 Issuer: '{issuer}'. Assertion Subject: '{subject}'. Assertion Audience: \
                 '{audience}'. https://docs.microsoft.com/en-us/azure/active-directory/develop/workload-identity-federation"
            ),
        )
    }

    /// An app registration with no federated identity credential at all: Entra names the app
    /// and its display name (the wording clients quote in 2025-2026 workflow logs, e.g.
    /// `The client '…'(fast-azure-backend) has no configured federated identity credentials.`).
    pub fn no_configured_credentials(app_id: &str, display_name: &str) -> Self {
        Self::client(
            70025,
            format!(
                "The client '{app_id}'({display_name}) has no configured federated identity \
                 credentials."
            ),
        )
    }

    /// An app registration with no service principal in the tenant asked for: it has no
    /// identity there to give a token to (`az ad app create` makes none;
    /// microsoft/teams.ts docs and Azure/Commercial-Marketplace-SaaS-Accelerator#830 quote the
    /// 401 `invalid_client` body).
    pub fn missing_service_principal(app_id: &str, tenant: &str) -> Self {
        Self::client(
            7000229,
            format!(
                "The client application {app_id} is missing service principal in the tenant \
                 {tenant}. See instructions here: https://go.microsoft.com/fwlink/?linkid=2225119"
            ),
        )
    }

    /// The issuer's discovery document or key set could not be had (Azure/azure-workload-
    /// identity#642, #1130: unreachable or private storage account).
    pub fn oidc_endpoint_failed() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            50166,
            "Request to External OIDC endpoint failed.".into(),
        )
    }

    /// The key set has no key with the assertion's `kid` (Azure/azure-workload-identity#616
    /// shows the empty identifier of a token without one).
    pub fn signing_key_not_found(kid: &str, issuer: &str) -> Self {
        Self::client(
            7000272,
            format!(
                "The certificate with identifier {kid} used to sign the federated credential \
                 could not be found in the metadata of identity provider {issuer}. Please \
                 validate that your Identity Provider's metadata exposes the key used to sign \
                 the incoming token."
            ),
        )
    }

    /// The signature does not verify with the published key, or is not RS256
    /// (`reference-error-codes.md`).
    pub fn bad_signature() -> Self {
        Self::client(
            700027,
            "Client assertion failed signature validation.".into(),
        )
    }

    pub fn server_error(what: &str) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            50000,
            format!("There was an error issuing a token. {what}"),
        )
    }
}

impl IntoResponse for EntraError {
    fn into_response(self) -> Response {
        let now = OffsetDateTime::now_utc();
        let stamp = entra_timestamp(now);
        let trace = uuid::Uuid::new_v4().to_string();
        let correlation = uuid::Uuid::new_v4().to_string();
        let body = json!({
            "error": self.error,
            "error_description": format!(
                "AADSTS{}: {} Trace ID: {trace} Correlation ID: {correlation} Timestamp: {stamp}",
                self.code, self.description
            ),
            "error_codes": [self.code],
            "timestamp": stamp,
            "trace_id": trace,
            "correlation_id": correlation,
            "error_uri": format!("https://login.microsoftonline.com/error?code={}", self.code),
        });
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_print_as_entra_prints_them() {
        assert_eq!(dotnet_instant(0), "1970-01-01T00:00:00.0000000Z");
        assert_eq!(
            dotnet_instant(1_756_446_452),
            "2025-08-29T05:47:32.0000000Z"
        );
        let t = OffsetDateTime::from_unix_timestamp(1_452_304_932).expect("instant");
        assert_eq!(entra_timestamp(t), "2016-01-09 02:02:12Z");
    }
}
