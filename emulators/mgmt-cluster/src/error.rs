//! Kubernetes `Status` errors.
//!
//! Clients branch on `reason` and `code` (kube-rs `ErrorResponse`, client-go
//! `IsNotFound`/`IsConflict`), so every failure leaves the server as a `Status` object shaped
//! exactly like the real API server's (`k8s.io/apimachinery/pkg/api/errors/errors.go`), and
//! field-level causes carry the wording of `k8s.io/apimachinery/pkg/util/validation/field`.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::kinds::ResourceDef;

/// One API failure, rendered as a `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    pub code: u16,
    /// `StatusReason`; empty for errors kube-apiserver does not classify (500s).
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

/// One entry of `details.causes`: a field-level failure or an apply conflict.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cause {
    /// The cause type (`FieldValueRequired`, `FieldManagerConflict`, …), sent as `reason`.
    pub reason: &'static str,
    pub field: String,
    /// The message without the field (`ErrorBody`).
    pub message: String,
}

/// A value as `field.Error.ErrorBody` prints it: numbers and booleans plain, strings
/// quoted, anything else as JSON.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

impl Cause {
    fn new(reason: &'static str, field: impl Into<String>, message: String) -> Self {
        Self {
            reason,
            field: field.into(),
            message,
        }
    }

    /// `field.Required(path, "")`.
    pub fn required(field: impl Into<String>) -> Self {
        Self::new("FieldValueRequired", field, "Required value".into())
    }

    /// `field.Required(path, detail)`.
    pub fn required_because(field: impl Into<String>, detail: &str) -> Self {
        Self::new(
            "FieldValueRequired",
            field,
            format!("Required value: {detail}"),
        )
    }

    /// `field.Invalid(path, value, detail)`.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {detail}", render_value(value)),
        )
    }

    /// `field.TypeInvalid(path, value, detail)`.
    pub fn type_invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::new(
            "FieldValueTypeInvalid",
            field,
            format!("Invalid value: {}: {detail}", render_value(value)),
        )
    }

    /// `field.NotSupported(path, value, valid)`.
    pub fn not_supported(field: impl Into<String>, value: &Value, valid: &[&str]) -> Self {
        let quoted: Vec<String> = valid
            .iter()
            .map(|v| Value::String((*v).to_owned()).to_string())
            .collect();
        Self::new(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                render_value(value),
                quoted.join(", ")
            ),
        )
    }

    /// `field.TooLong(path, value, max)` (the value is omitted).
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            "FieldValueTooLong",
            field,
            format!("Too long: may not be more than {max} {unit}"),
        )
    }

    /// `field.TooMany(path, actual, max)`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            "FieldValueTooMany",
            field,
            format!("Too many: {actual}: must have at most {max} {unit}"),
        )
    }

    /// `field.Duplicate(path, value)`.
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Self::new(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", render_value(value)),
        )
    }

    /// `field.Forbidden(path, detail)`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
    }

    fn to_json(&self) -> Value {
        json!({"reason": self.reason, "message": self.message, "field": self.field})
    }
}

/// `field.ErrorList.ToAggregate().Error()`: one error alone, several in brackets.
fn aggregate(causes: &[Cause]) -> String {
    let mut seen = Vec::new();
    for c in causes {
        let text = format!("{}: {}", c.field, c.message);
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    match seen.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
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

    /// `errors.NewApplyConflict`: 409 `Conflict` naming each conflicting field and manager.
    pub fn apply_conflict(message: String, causes: Vec<Cause>) -> Self {
        let causes: Vec<Value> = causes.iter().map(Cause::to_json).collect();
        Self::new(409, "Conflict", message).with_details(json!({"causes": causes}))
    }

    /// `errors.NewInvalid` for an object of `def`.
    pub fn invalid(def: &ResourceDef, name: &str, causes: &[Cause]) -> Self {
        let kind = if def.group.is_empty() {
            def.kind.to_owned()
        } else {
            format!("{}.{}", def.kind, def.group)
        };
        Self::invalid_kind(&kind, def.group, def.kind, name, causes)
    }

    /// `errors.NewInvalid` for any `GroupKind` (`kind` is `Kind.group`, or empty).
    pub fn invalid_kind(
        qualified: &str,
        group: &str,
        kind: &str,
        name: &str,
        causes: &[Cause],
    ) -> Self {
        let causes_json: Vec<Value> = causes.iter().map(Cause::to_json).collect();
        Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {}", aggregate(causes)),
        )
        .with_details(json!({"name": name, "group": group, "kind": kind, "causes": causes_json}))
    }

    /// Invalid request options (`CreateOptions`, `UpdateOptions`, `PatchOptions`,
    /// `DeleteOptions` of `meta.k8s.io`).
    pub fn invalid_options(kind: &str, causes: &[Cause]) -> Self {
        Self::invalid_kind(
            &format!("{kind}.meta.k8s.io"),
            "meta.k8s.io",
            kind,
            "",
            causes,
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// An error kube-apiserver does not turn into a `metav1.Status` itself: 500 with no
    /// reason (`responsewriters.ErrorToAPIStatus`).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// `NewUnsupportedMediaTypeError`: a body in a format the endpoint does not decode;
    /// `accepted` lists what it does.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 `NotAcceptable`: no representation the client accepts can be produced.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
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
            "status": "Failure", "message": self.message, "code": self.code,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{HOSTED_CLUSTERS, KINDS, SECRETS};

    #[test]
    fn invalid_messages_read_like_kube_apiserver() {
        let one = ApiError::invalid(
            &KINDS[HOSTED_CLUSTERS],
            "x",
            &[Cause::required("spec.release")],
        );
        assert_eq!(
            one.message,
            "HostedCluster.hypershift.openshift.io \"x\" is invalid: spec.release: Required value"
        );
        let two = ApiError::invalid(
            &KINDS[SECRETS],
            "s",
            &[
                Cause::too_long("data", 3),
                Cause::not_supported("type", &json!("x"), &["a", "b"]),
            ],
        );
        assert_eq!(
            two.message,
            "Secret \"s\" is invalid: [data: Too long: may not be more than 3 bytes, \
             type: Unsupported value: \"x\": supported values: \"a\", \"b\"]"
        );
    }
}
