//! A HostedCluster's `status.version`: the desired release and its rollout history.

use serde_json::{Value, json};

use crate::meta::now_rfc3339;

pub(super) fn set_version(
    status: &mut Value,
    image: &str,
    version: &str,
    completed: bool,
    generation: i64,
) {
    let mut history: Vec<Value> = status
        .pointer("/version/history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if history.first().is_none_or(|h| h["image"] != image) {
        history.insert(0, json!({"state": "Partial", "image": image, "version": version, "startedTime": now_rfc3339(), "completionTime": null, "verified": false}));
    }
    if completed
        && let Some(h) = history.first_mut()
        && h["state"] != "Completed"
    {
        h["state"] = json!("Completed");
        h["completionTime"] = json!(now_rfc3339());
    }
    // `availableUpdates` and `completionTime` are required (nullable) by the CRD schema.
    status["version"] = json!({
        "availableUpdates": null,
        "desired": {"image": image, "version": version},
        "history": history,
        "observedGeneration": generation,
    });
}
