//! What the built-in kinds' decoding and strategies do to objects on every write: a Secret's
//! `stringData` folds into base64 `data` and its `type` defaults to `Opaque`
//! (`k8s.io/api/core/v1` conversion and `SetDefaults_Secret`); a Namespace gets the
//! `kubernetes` finalizer and reports its phase (`pkg/registry/core/namespace/strategy.go`).

use base64::Engine;
use serde_json::{Value, json};

/// Secrets: fold `stringData` into base64 `data` (write-only field) and default `type`.
pub fn normalize_secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(string_data)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in string_data {
                let text = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                data.insert(k, Value::String(encoded));
            }
        }
    }
    map.entry("type").or_insert_with(|| json!("Opaque"));
}

/// Namespaces: the `kubernetes` finalizer and `status.phase` the real server reports.
pub fn normalize_namespace(obj: &mut Value) {
    let terminating = obj.pointer("/metadata/deletionTimestamp").is_some();
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.entry("finalizers")
            .or_insert_with(|| json!(["kubernetes"]));
    }
    let phase = if terminating { "Terminating" } else { "Active" };
    map.insert("status".into(), json!({"phase": phase}));
}
