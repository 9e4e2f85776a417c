//! Small helpers over JSON object metadata.

use serde_json::{Map, Value};

/// RFC 3339 UTC timestamp with second precision, as Kubernetes writes them.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `metadata` as a mutable map, created if missing or not an object.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(map) = obj else {
        unreachable!("just made an object")
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable!("just made an object"),
    }
}

/// `metadata.<field>` as a string.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.finalizers` (empty when absent).
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers` (removing the key when empty, as the API server does).
pub fn set_finalizers(obj: &mut Value, list: Vec<String>) {
    let meta = metadata_mut(obj);
    if list.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(list));
    }
}

/// `metadata.labels` as (key, value) pairs.
pub fn labels(obj: &Value) -> Vec<(&str, &str)> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the object is being deleted.
pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}
