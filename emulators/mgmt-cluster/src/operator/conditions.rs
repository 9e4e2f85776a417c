//! NodePool and HostedCluster conditions as HyperShift sets them (`SetStatusCondition`,
//! `meta.SetStatusCondition`): one per type, `lastTransitionTime` kept unless the status flips.

use serde_json::{Value, json};

use crate::meta::now_rfc3339;

/// A condition HyperShift has not evaluated yet (nothing to copy from the control plane).
pub(crate) fn set_unknown(list: &mut Vec<Value>, type_: &str, message: &str, generation: i64) {
    put_condition(list, type_, "Unknown", "StatusUnknown", message, generation);
}

pub(crate) fn conditions_mut(status: &mut Value) -> &mut Vec<Value> {
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    match status.get_mut("conditions") {
        Some(Value::Array(list)) => list,
        _ => unreachable!("just set to an array"),
    }
}

/// Sets a condition, keeping `lastTransitionTime` unless the status flips (metav1 semantics).
pub(crate) fn set_condition(
    list: &mut Vec<Value>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: i64,
) {
    let status = if status { "True" } else { "False" };
    put_condition(list, type_, status, reason, message, generation);
}

/// Sets a condition to `status` (`True`, `False` or `Unknown`).
pub(crate) fn put_condition(
    list: &mut Vec<Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    generation: i64,
) {
    let existing = list.iter_mut().find(|c| c["type"] == type_);
    let transition = match &existing {
        Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
        _ => json!(now_rfc3339()),
    };
    let cond = json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": transition, "observedGeneration": generation,
    });
    match existing {
        Some(c) => *c = cond,
        None => list.push(cond),
    }
}
