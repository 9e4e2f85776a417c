//! Graph's refusals, in Graph's shape: `{"error":{"code","message","innerError":{"date",
//! "request-id","client-request-id"}}}` (the shape every Graph error quoted in public issues
//! has), with the codes Graph uses.
//!
//! Where a wording was seen in Graph's answers, the constructor names where; the rest follow
//! Graph's general forms and say so.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::format_description;

/// What Graph's 401s carry in `WWW-Authenticate`: where to get a token, and for which app.
const WWW_AUTHENTICATE: &str = "Bearer realm=\"\", \
     authorization_uri=\"https://login.microsoftonline.com/common/oauth2/authorize\", \
     client_id=\"00000003-0000-0000-c000-000000000000\"";

/// One refusal of Graph.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub(crate) struct GraphError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// `details`, when Graph sends them (each `{code, message, target}`).
    pub details: Option<Vec<Value>>,
}

/// The ids a Graph answer repeats in its headers and in an error's `innerError`.
#[derive(Clone, Debug)]
pub(crate) struct RequestIds {
    pub request_id: String,
    /// The caller's `client-request-id`, else the request id (as Graph answers).
    pub client_request_id: String,
}

impl GraphError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }

    /// No bearer token (Graph's wording for a request without one).
    pub fn token_empty() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "Access token is empty.",
        )
    }

    /// A token Graph cannot validate (not signed by Entra, malformed).
    pub fn token_invalid() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "Access token validation failure.",
        )
    }

    /// An expired token (Graph's wording, quoted by Graph SDK users' logs).
    pub fn token_expired() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "Lifetime validation failed, the token is expired.",
        )
    }

    /// A token for another resource, ARM's for one (microsoftgraph/microsoft-graph-docs#16208).
    pub fn wrong_audience() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "Access token validation failure. Invalid audience.",
        )
    }

    /// The caller's token holds no application permission for the call.
    pub fn insufficient_privileges() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "Authorization_RequestDenied",
            "Insufficient privileges to complete the operation.",
        )
    }

    /// A path segment Graph has no resource for (azure-cli#25291 shows the form).
    pub fn no_resource_for_segment(segment: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            format!("Resource not found for the segment '{segment}'."),
        )
    }

    /// A method the resource does not have.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "Request_BadRequest",
            "Specified HTTP method is not allowed for the request target.",
        )
    }

    /// An object id that is not a GUID.
    pub fn invalid_object_id(id: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "Request_BadRequest",
            format!("Invalid object identifier '{id}'."),
        )
    }

    /// No such object in the caller's directory.
    pub fn not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "Request_ResourceNotFound",
            format!(
                "Resource '{id}' does not exist or one of its queried reference-property objects \
                 are not present."
            ),
        )
    }

    /// A body that is not a JSON object.
    pub fn unreadable_body() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "Unable to read JSON request payload. Please ensure Content-Type header is set and \
             payload is of valid JSON format.",
        )
    }

    /// A property the emulator does not model (Graph's wording for one the type lacks; the
    /// emulator refuses what it would otherwise silently drop).
    pub fn unknown_property(property: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "Request_BadRequest",
            format!(
                "Property '{property}' does not exist as a declared property or extension property."
            ),
        )
    }

    /// A missing, mistyped or out-of-bounds value (Graph's form for directory objects).
    pub fn invalid_value(property: &str, resource: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "Request_BadRequest",
            format!("Invalid value specified for property '{property}' of resource '{resource}'."),
        )
    }

    /// A `$filter` the emulator cannot evaluate.
    pub fn unsupported_filter(property: &str, resource: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "Request_UnsupportedQuery",
            format!(
                "Unsupported or invalid query filter clause specified for property '{property}' \
                 of resource '{resource}'."
            ),
        )
    }

    /// A service principal for an appId Graph has no application for, or has not yet
    /// replicated (azure-cli retries exactly this right after `az ad app create`).
    pub fn no_backing_application(app_id: &str) -> Self {
        let message = format!(
            "The appId '{app_id}' of the service principal does not reference a valid \
             application object."
        );
        Self {
            details: Some(vec![json!({
                "code": "NoBackingApplicationObject",
                "message": message,
                "target": "appId",
            })]),
            ..Self::new(StatusCode::BAD_REQUEST, "Request_BadRequest", message)
        }
    }

    /// A second service principal for one app (hashicorp terraform-provider-azuread users
    /// quote the 409).
    pub fn service_principal_exists(app_id: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "Request_MultipleObjectsWithSameKeyValue",
            format!(
                "The service principal cannot be created, updated, or restored because the \
                 service principal name {app_id} is already in use."
            ),
        )
    }

    /// A second credential of that name on the app (Azure/azure-dev#1482).
    pub fn credential_name_exists(name: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "Request_MultipleObjectsWithSameKeyValue",
            format!("FederatedIdentityCredential with name {name} already exists."),
        )
    }

    /// A second credential for the same issuer and subject (Azure/azure-workload-identity#434).
    pub fn issuer_subject_exists(issuer: &str, subject: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "InvalidFederatedIdentityCredentialValue",
            format!(
                "The combination of issuer and subject must be unique for the application. \
                 Issuer {issuer} and Subject: {subject} already exist. paramName: \
                 FederatedIdentityCredential.Subject, paramValue: {subject}, objectType: \
                 Microsoft.Online.DirectoryServices.Application"
            ),
        )
    }

    /// A 21st credential. The limit is documented; Graph's wording for it is not, so this
    /// one is the emulator's.
    pub fn too_many_credentials(limit: usize) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "Request_BadRequest",
            format!(
                "An application can have at most {limit} federated identity credentials. \
                 Delete one before adding another."
            ),
        )
    }

    /// The answer, stamped with the request's ids.
    pub fn render(self, ids: &RequestIds) -> Response {
        let date = OffsetDateTime::now_utc()
            .format(format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second]"
            ))
            .unwrap_or_default();
        let mut error = json!({
            "code": self.code,
            "message": self.message,
            "innerError": {
                "date": date,
                "request-id": ids.request_id,
                "client-request-id": ids.client_request_id,
            },
        });
        if let Some(details) = self.details {
            error["details"] = Value::Array(details);
        }
        let mut resp = (self.status, Json(json!({ "error": error }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(WWW_AUTHENTICATE),
            );
        }
        resp
    }
}
