//! The API's messages as JSON documents: what `hypersaga … -o json` prints and what the
//! gateway's web view serves, so a script and a page read one shape.
//!
//! Enums are their names without the type's prefix, in lower case (`OPERATION_STATE_PAUSED`
//! is `"paused"`); timestamps are RFC 3339 (`null` when absent); an absent message is `null`.

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::v1 as pb;

/// `CLUSTER_PHASE_READY` with prefix `CLUSTER_PHASE_` → `ready`.
pub fn enum_name(full: &str, prefix: &str) -> String {
    full.strip_prefix(prefix)
        .unwrap_or(full)
        .to_ascii_lowercase()
}

/// A cluster's phase: `ready`, `provisioning`, … (the number, for a value this version does
/// not know).
pub fn phase(p: i32) -> String {
    pb::ClusterPhase::try_from(p)
        .map(|p| enum_name(p.as_str_name(), "CLUSTER_PHASE_"))
        .unwrap_or_else(|_| p.to_string())
}

/// A step's state: `pending`, `running`, `succeeded`, …
pub fn step_state(s: i32) -> String {
    pb::StepState::try_from(s)
        .map(|s| enum_name(s.as_str_name(), "STEP_STATE_"))
        .unwrap_or_else(|_| s.to_string())
}

/// An operation's state: `running`, `paused`, `succeeded`, …
pub fn op_state(s: i32) -> String {
    pb::OperationState::try_from(s)
        .map(|s| enum_name(s.as_str_name(), "OPERATION_STATE_"))
        .unwrap_or_else(|_| s.to_string())
}

/// An operation's kind as the API's error messages and records name it: `create`,
/// `delete`, `update_cluster`, `create_node_pool`, `update_node_pool`, `delete_node_pool`,
/// `add_addon`, `update_addon`, `remove_addon`.
pub fn op_kind(k: i32) -> String {
    pb::OperationKind::try_from(k)
        .map(|k| enum_name(k.as_str_name(), "OPERATION_KIND_"))
        .unwrap_or_else(|_| k.to_string())
}

/// A timestamp as RFC 3339 (whole seconds), `null` when absent or out of range.
pub fn time(t: &Option<prost_types::Timestamp>) -> Value {
    t.as_ref()
        .and_then(|t| OffsetDateTime::from_unix_timestamp(t.seconds).ok())
        .and_then(|t| t.format(&Rfc3339).ok())
        .map(Value::from)
        .unwrap_or(Value::Null)
}

pub fn error(e: &Option<pb::ErrorDetail>) -> Value {
    match e {
        Some(e) => {
            json!({ "code": e.code, "message": e.message, "target": e.target, "step": e.step, "retryable": e.retryable })
        }
        None => Value::Null,
    }
}

/// One step: its state, attempts, last error, progress message, what it depends on, when it
/// started and ended, and since when it waits on something outside.
pub fn step(s: &pb::Step) -> Value {
    json!({
        "id": s.id,
        "service": s.service,
        "state": step_state(s.state),
        "attempts": s.attempts,
        "message": s.message,
        "depends_on": s.depends_on,
        "last_error": error(&s.last_error),
        "start_time": time(&s.start_time),
        "end_time": time(&s.end_time),
        "waiting_since": time(&s.waiting_since),
    })
}

/// An operation with every step, and its pause while it is paused.
pub fn operation(o: &pb::Operation) -> Value {
    json!({
        "id": o.id,
        "cluster": o.cluster,
        "kind": op_kind(o.kind),
        "state": op_state(o.state),
        "start_time": time(&o.start_time),
        "end_time": time(&o.end_time),
        "deadline": time(&o.deadline),
        "request_id": o.request_id,
        "node_pool": o.node_pool,
        "addon": o.addon,
        "error": error(&o.error),
        "pause": o.pause.as_ref().map(|p| json!({
            "since": time(&p.since),
            "reason": error(&p.reason),
            "steps": p.steps,
        })).unwrap_or(Value::Null),
        "steps": o.steps.iter().map(step).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_reads_as_names_and_rfc3339_times_with_absent_parts_null() {
        let op = pb::Operation {
            id: "op-1".into(),
            cluster: "demo".into(),
            kind: pb::OperationKind::Create as i32,
            state: pb::OperationState::Paused as i32,
            start_time: Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 0,
            }),
            pause: Some(pb::PauseDetail {
                since: None,
                reason: Some(pb::ErrorDetail {
                    code: "LeaseExpired".into(),
                    step: "dns.private-zone".into(),
                    ..Default::default()
                }),
                steps: vec!["dns.private-zone".into()],
            }),
            steps: vec![pb::Step {
                id: "dns.private-zone".into(),
                state: pb::StepState::Failed as i32,
                depends_on: vec!["network.resource-group".into()],
                attempts: 3,
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = operation(&op);
        assert_eq!(v["kind"], "create");
        assert_eq!(v["state"], "paused");
        assert_eq!(v["start_time"], "2023-11-14T22:13:20Z");
        assert_eq!(v["end_time"], Value::Null);
        assert_eq!(v["error"], Value::Null);
        assert_eq!(v["pause"]["reason"]["code"], "LeaseExpired");
        assert_eq!(v["pause"]["since"], Value::Null);
        assert_eq!(v["steps"][0]["state"], "failed");
        assert_eq!(v["steps"][0]["attempts"], 3);
        assert_eq!(v["steps"][0]["depends_on"][0], "network.resource-group");
        assert_eq!(phase(99), "99", "an unknown value is its number");
    }
}
