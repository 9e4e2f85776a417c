//! Kubernetes `Status` errors.
//!
//! Clients branch on `reason` and `code` (kube-rs `ErrorResponse`, client-go
//! `IsNotFound`/`IsConflict`), so every failure leaves the server as a `Status` object shaped
//! exactly like the real API server's.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::kinds::ResourceDef;

/// One API failure, rendered as a `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

/// One entry of `details.causes` (a field-level validation failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub reason: &'static str,
    pub field: String,
    pub message: String,
}

impl Cause {
    /// `FieldValueRequired` on `field`.
    pub fn required(field: impl Into<String>) -> Self {
        Self {
            reason: "FieldValueRequired",
            field: field.into(),
            message: "Required value".into(),
        }
    }

    /// `FieldValueInvalid` on `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: message.into(),
        }
    }
}

fn details(def: &ResourceDef, name: &str) -> Value {
    json!({"name": name, "group": def.group, "kind": def.plural})
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn not_found(def: &ResourceDef, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", def.qualified()),
        )
        .with_details(details(def, name))
    }

    pub fn namespace_not_found(ns: &str) -> Self {
        Self::new(404, "NotFound", format!("namespaces \"{ns}\" not found"))
            .with_details(json!({"name": ns, "kind": "namespaces"}))
    }

    pub fn namespace_terminating(ns: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        )
    }

    pub fn already_exists(def: &ResourceDef, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", def.qualified()),
        )
        .with_details(details(def, name))
    }

    pub fn conflict(def: &ResourceDef, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                def.qualified()
            ),
        )
        .with_details(details(def, name))
    }

    pub fn invalid(def: &ResourceDef, name: &str, causes: &[Cause]) -> Self {
        let summary: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let causes: Vec<Value> = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect();
        Self::new(
            422,
            "Invalid",
            format!(
                "{}.{} \"{name}\" is invalid: [{}]",
                def.kind,
                def.group_or_core(),
                summary.join(", ")
            ),
        )
        .with_details(json!({"name": name, "group": def.group, "kind": def.kind, "causes": causes}))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json, application/yaml, application/json-patch+json, \
                 application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
            ),
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn resource_not_found(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (code, axum::Json(self.to_status())).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
