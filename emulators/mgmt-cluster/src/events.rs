//! core/v1 `Event`: what kube-apiserver checks on every write beyond the schema
//! (`legacyValidateEvent`, `pkg/apis/core/validation/events.go`). Through core/v1 that is all
//! it checks — the stricter rules of events.k8s.io/v1 do not apply here.
//!
//! Recording events, as a controller does, is [`crate::recorder`]'s job.

use serde_json::Value;

use crate::error::Cause;

/// `ReportingInstanceLengthLimit`, `ActionLengthLimit`, `ReasonLengthLimit`, `NoteLengthLimit`.
const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;

fn text<'a>(event: &'a Value, pointer: &str) -> &'a str {
    event.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `legacyValidateEvent`: the event's namespace agrees with its object's; events with an
/// `eventTime` (written by the events.k8s.io recorder) also name their reporter and action.
pub fn validate(event: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let namespace = text(event, "/metadata/namespace");
    let involved_ns = text(event, "/involvedObject/namespace");
    let mismatch = || {
        Cause::invalid(
            "involvedObject.namespace",
            &Value::String(involved_ns.to_owned()),
            "does not match event.namespace",
        )
    };
    let new_style = event.get("eventTime").is_some_and(|t| !t.is_null());
    if !new_style {
        // Old clients may put an event about a cluster-scoped object in `default`.
        let agrees = if involved_ns.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_ns
        };
        if !agrees {
            causes.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
            causes.push(mismatch());
        }
        let controller = text(event, "/reportingComponent");
        if controller.is_empty() {
            causes.push(Cause::required("reportingController"));
        }
        let instance = text(event, "/reportingInstance");
        if instance.is_empty() {
            causes.push(Cause::required("reportingInstance"));
        }
        if instance.len() > REPORTING_INSTANCE_MAX {
            causes.push(too_long("reportingInstance", REPORTING_INSTANCE_MAX));
        }
        let action = text(event, "/action");
        if action.is_empty() {
            causes.push(Cause::required("action"));
        }
        if action.len() > ACTION_MAX {
            causes.push(too_long("action", ACTION_MAX));
        }
        let reason = text(event, "/reason");
        if reason.is_empty() {
            causes.push(Cause::required("reason"));
        }
        if reason.len() > REASON_MAX {
            causes.push(too_long("reason", REASON_MAX));
        }
        if text(event, "/message").len() > NOTE_MAX {
            causes.push(too_long("message", NOTE_MAX));
        }
    }
    if !namespace.is_empty() && crate::validation::name(namespace).is_some() {
        causes.push(Cause::invalid(
            "namespace",
            &Value::String(namespace.to_owned()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ));
    }
    causes
}

/// The length checks' wording: `field.Invalid(path, "", "can have at most N characters")`.
fn too_long(field: &str, max: usize) -> Cause {
    Cause::invalid(
        field,
        &Value::String(String::new()),
        &format!("can have at most {max} characters"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespaces_must_agree() {
        let ok = json!({"metadata": {"namespace": "c"}, "involvedObject": {"namespace": "c"}});
        assert!(validate(&ok).is_empty());
        let cluster_scoped = json!({"metadata": {"namespace": "default"}, "involvedObject": {}});
        assert!(validate(&cluster_scoped).is_empty());
        let bad = json!({"metadata": {"namespace": "c"}, "involvedObject": {"namespace": "d"}});
        let causes = validate(&bad);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "involvedObject.namespace");
        assert_eq!(
            causes[0].message,
            "Invalid value: \"d\": does not match event.namespace"
        );
    }

    #[test]
    fn new_style_events_name_their_reporter() {
        let ev = json!({"metadata": {"namespace": "c"}, "involvedObject": {"namespace": "c"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "R"});
        let fields: Vec<String> = validate(&ev).into_iter().map(|c| c.field).collect();
        assert_eq!(
            fields,
            ["reportingController", "reportingInstance", "action"]
        );
    }
}
