//! [`ArmError`]: every way an ARM call can fail, with Azure's own words kept.
//!
//! Step handlers turn an `ArmError` into a saga event. They need three things without parsing
//! strings: what to do ([`ArmError::kind`]), when ([`ArmError::retry_after`]) and what to tell
//! the user (status, ARM `code`, `message`, `target`, request id for a support ticket).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::classify::{ErrorKind, classify, reason_label};
use crate::ids::IdError;

/// ARM's error object: `{"error":{"code","message","target","details":[…]}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArmErrorBody {
    /// Machine-readable code, e.g. `AuthorizationFailed`.
    #[serde(default)]
    pub code: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
    /// The property or resource the error is about, when ARM says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Nested errors (validation failures often put the useful one here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<ArmErrorBody>,
}

impl ArmErrorBody {
    /// The most specific code: the first detail's when the top-level one is a generic wrapper
    /// such as `InvalidTemplateDeployment`/`BadRequest` and a detail says more.
    pub(crate) fn effective_code(&self) -> Option<&str> {
        const GENERIC: &[&str] = &[
            "BadRequest",
            "InvalidTemplateDeployment",
            "DeploymentFailed",
            "Failed",
        ];
        if GENERIC.iter().any(|g| g.eq_ignore_ascii_case(&self.code))
            && let Some(d) = self.details.iter().find(|d| !d.code.is_empty())
        {
            return Some(&d.code);
        }
        (!self.code.is_empty()).then_some(self.code.as_str())
    }
}

/// A failed call to Azure Resource Manager (or to Entra for its token).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArmError {
    /// ARM answered with an error status.
    #[error("ARM {method} {path} failed with HTTP {status}{}", describe(error.as_ref()))]
    Http {
        /// Request method.
        method: String,
        /// Request path without query (ids are not secret; poll-URL signatures are).
        path: String,
        /// HTTP status.
        status: u16,
        /// ARM's error object, if the body had one.
        error: Option<ArmErrorBody>,
        /// `Retry-After` / `retry-after-ms` from the response.
        retry_after: Option<Duration>,
        /// `x-ms-request-id` (or the correlation id) for support.
        request_id: Option<String>,
    },
    /// A long-running operation reached `Failed` or `Canceled` (operation status or the
    /// resource's `provisioningState`).
    #[error("ARM operation on {path} ended {status}{}", describe(Some(error)))]
    OperationFailed {
        /// The resource id or operation path that was polled.
        path: String,
        /// `Failed` or `Canceled`.
        status: String,
        /// The operation's error (code `OperationFailed` with no message when ARM gave none).
        error: ArmErrorBody,
        /// Request id of the poll that saw the terminal state.
        request_id: Option<String>,
    },
    /// No HTTP answer: connection refused/reset, TLS failure, read timeout.
    #[error("could not reach ARM for {method} {path}: {message}")]
    Transport {
        /// Request method.
        method: String,
        /// Request path without query.
        path: String,
        /// What went wrong, from the HTTP stack.
        message: String,
        /// The underlying error.
        #[source]
        source: azure_core::Error,
    },
    /// The credential could not get a token.
    #[error("could not get an ARM token{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Credential {
        /// Status from the token endpoint, when it answered.
        status: Option<u16>,
        /// Entra's description, as far as the SDK exposes it.
        message: String,
        /// The underlying error.
        #[source]
        source: azure_core::Error,
    },
    /// A long-running operation was still running when [`crate::ArmConfig::lro_timeout`]
    /// expired. Retryable: ARM keeps working, and a re-PUT/re-DELETE resumes watching it.
    #[error("ARM operation on {path} still running after {timeout:?}")]
    LroTimeout {
        /// The resource id or operation path.
        path: String,
        /// The configured timeout.
        timeout: Duration,
    },
    /// ARM answered something this client cannot interpret (not JSON, no `status`, …).
    #[error("unexpected ARM response for {path}: {message}")]
    InvalidResponse {
        /// Request path without query.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// Not sent: the shared request budget's next slot for this class is `retry_after` away,
    /// further than is worth waiting in place. Backpressure, like a 429, but before ARM saw it.
    #[error("{class} budget for ARM spent: {path} not sent, next slot in {retry_after:?}")]
    Paced {
        /// Request path without query.
        path: String,
        /// `reads`, `writes` or `deletes`.
        class: &'static str,
        /// When the budget has a slot again.
        retry_after: Duration,
    },
    /// Not sent: the work this request was for may no longer change anything (its step
    /// command is stale, see [`crate::MutationGuard`]).
    #[error("{method} {path} not sent: {reason}")]
    Fenced {
        /// Request path without query.
        path: String,
        /// The HTTP method.
        method: String,
        /// Why the guard refused it.
        reason: String,
    },
    /// The client was configured wrongly (bad URL, unreadable CA bundle, …).
    #[error("invalid ARM client configuration: {0}")]
    Config(String),
    /// A resource id passed in was malformed.
    #[error(transparent)]
    InvalidId(#[from] IdError),
}

/// `pub type Result<T, E = ArmError>` for this crate's calls.
pub type Result<T, E = ArmError> = std::result::Result<T, E>;

fn describe(error: Option<&ArmErrorBody>) -> String {
    match error {
        None => String::new(),
        Some(e) => {
            let mut s = format!(
                ": {}",
                if e.code.is_empty() {
                    "(no code)"
                } else {
                    &e.code
                }
            );
            if !e.message.is_empty() {
                s.push_str(": ");
                s.push_str(&e.message);
            }
            if let Some(t) = &e.target {
                s.push_str(&format!(" (target: {t})"));
            }
            s
        }
    }
}

impl ArmError {
    /// What the caller should do: retry later, give up, or treat as absent.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Http { status, error, .. } => classify(
                Some(*status),
                error.as_ref().and_then(|e| e.effective_code()),
            ),
            Self::OperationFailed { status, error, .. } => match error.effective_code() {
                // No HTTP status here: probe with 200 so that only the code decides, and an
                // unknown code counts as terminal (a failed operation rarely heals by itself).
                Some(code) => classify(Some(200), Some(code)),
                // ARM cancels an operation when a newer write pre-empts it: try again.
                None if status.eq_ignore_ascii_case("Canceled") => ErrorKind::Retryable,
                None => ErrorKind::Terminal,
            },
            Self::Transport { .. }
            | Self::LroTimeout { .. }
            | Self::Paced { .. }
            | Self::Fenced { .. } => ErrorKind::Retryable,
            Self::Credential { status, .. } => match status {
                None => ErrorKind::Retryable,
                Some(s) => match classify(Some(*s), None) {
                    ErrorKind::NotFound => ErrorKind::Terminal,
                    k => k,
                },
            },
            Self::InvalidResponse { .. } => ErrorKind::Retryable,
            Self::Config(_) | Self::InvalidId(_) => ErrorKind::Terminal,
        }
    }

    /// True for [`ErrorKind::Retryable`].
    pub fn is_retryable(&self) -> bool {
        self.kind() == ErrorKind::Retryable
    }

    /// True for [`ErrorKind::NotFound`].
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// HTTP status, when ARM answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            Self::Credential { status, .. } => *status,
            _ => None,
        }
    }

    /// ARM's error object, when there was one.
    pub fn arm_error(&self) -> Option<&ArmErrorBody> {
        match self {
            Self::Http { error, .. } => error.as_ref(),
            Self::OperationFailed { error, .. } => Some(error),
            _ => None,
        }
    }

    /// ARM error code (the most specific one), e.g. `AuthorizationFailed`.
    pub fn code(&self) -> Option<&str> {
        self.arm_error().and_then(|e| e.effective_code())
    }

    /// True when the ARM code equals `code` (case-insensitive): for the few places a handler
    /// reacts to one code, such as adopting on `RoleAssignmentExists`.
    pub fn has_code(&self, code: &str) -> bool {
        self.code().is_some_and(|c| c.eq_ignore_ascii_case(code))
    }

    /// ARM's message (or the transport/credential message).
    pub fn message(&self) -> String {
        match self {
            Self::Http { error: Some(e), .. } | Self::OperationFailed { error: e, .. }
                if !e.message.is_empty() =>
            {
                e.message.clone()
            }
            Self::Transport { message, .. } | Self::Credential { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// ARM's `target` (the offending property or resource), when given.
    pub fn target(&self) -> Option<&str> {
        self.arm_error().and_then(|e| e.target.as_deref())
    }

    /// How long ARM asked us to wait before trying again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            Self::Paced { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// `x-ms-request-id` of the failing response, for support tickets.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Self::Http { request_id, .. } | Self::OperationFailed { request_id, .. } => {
                request_id.as_deref()
            }
            _ => None,
        }
    }

    /// Low-cardinality reason for metrics labels: `throttled`, `conflict`, `server_error`,
    /// `authorization`, `quota`, `invalid_request`, `not_found`, `transport`, `credential`,
    /// `operation_failed`, `lro_timeout`, …; never an id, code or message.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Http { status, error, .. } => reason_label(
                Some(*status),
                error.as_ref().and_then(|e| e.effective_code()),
            ),
            Self::OperationFailed { error, .. } => {
                match reason_label(Some(200), error.effective_code()) {
                    "invalid_request" => "operation_failed",
                    l => l,
                }
            }
            Self::Transport { .. } => "transport",
            Self::Credential { .. } => "credential",
            Self::LroTimeout { .. } => "lro_timeout",
            Self::Paced { .. } => "paced",
            Self::Fenced { .. } => "fenced",
            Self::InvalidResponse { .. } => "invalid_response",
            Self::Config(_) => "config",
            Self::InvalidId(_) => "invalid_id",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, code: &str) -> ArmError {
        ArmError::Http {
            method: "PUT".into(),
            path: "/x".into(),
            status,
            error: Some(ArmErrorBody {
                code: code.into(),
                message: "m".into(),
                target: Some("t".into()),
                details: vec![],
            }),
            retry_after: None,
            request_id: Some("rid".into()),
        }
    }

    fn op(status: &str, code: &str) -> ArmError {
        ArmError::OperationFailed {
            path: "/x".into(),
            status: status.into(),
            error: ArmErrorBody {
                code: code.into(),
                ..Default::default()
            },
            request_id: None,
        }
    }

    #[test]
    fn http_errors() {
        let e = http(403, "AuthorizationFailed");
        assert_eq!(e.kind(), ErrorKind::Terminal);
        assert_eq!(e.code(), Some("AuthorizationFailed"));
        assert_eq!(e.target(), Some("t"));
        assert_eq!(e.request_id(), Some("rid"));
        assert_eq!(e.metric_label(), "authorization");
        assert!(
            e.to_string()
                .contains("HTTP 403: AuthorizationFailed: m (target: t)"),
            "{e}"
        );
        assert_eq!(
            http(409, "AnotherOperationInProgress").kind(),
            ErrorKind::Retryable
        );
    }

    #[test]
    fn operation_failures() {
        assert_eq!(op("Failed", "InvalidParameter").kind(), ErrorKind::Terminal);
        assert_eq!(op("Failed", "SomethingNew").kind(), ErrorKind::Terminal);
        assert_eq!(op("Failed", "").kind(), ErrorKind::Terminal);
        assert_eq!(op("Canceled", "").kind(), ErrorKind::Retryable);
        assert_eq!(
            op("Failed", "InternalServerError").kind(),
            ErrorKind::Retryable
        );
        assert_eq!(
            op("Failed", "AnotherOperationInProgress").kind(),
            ErrorKind::Retryable
        );
        assert_eq!(op("Failed", "QuotaExceeded").metric_label(), "quota");
        assert_eq!(op("Failed", "Weird").metric_label(), "operation_failed");
    }

    #[test]
    fn generic_code_uses_detail() {
        let body: ArmErrorBody = serde_json::from_value(serde_json::json!({
            "code": "BadRequest", "message": "x",
            "details": [{"code": "PrincipalNotFound", "message": "y"}]
        }))
        .unwrap();
        assert_eq!(body.effective_code(), Some("PrincipalNotFound"));
    }
}
