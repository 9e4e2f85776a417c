//! PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902). Server-side apply
//! is not a patch format of its own here; see [`crate::managedfields`].

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// RFC 7386: objects merge recursively, `null` removes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    if let Value::Object(target_map) = target {
        for (k, v) in patch_map {
            if v.is_null() {
                target_map.remove(k);
            } else {
                merge_patch(target_map.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> ApiResult<(String, String)> {
    let (parent, last) = path
        .rsplit_once('/')
        .ok_or_else(|| ApiError::bad_request(format!("invalid JSON pointer {path:?}")))?;
    Ok((parent.to_owned(), unescape(last)))
}

fn add(doc: &mut Value, path: &str, value: Value) -> ApiResult<()> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
            Ok(())
        }
        Some(Value::Array(list)) => {
            if last == "-" {
                list.push(value);
                return Ok(());
            }
            let idx: usize = last
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid index in {path:?}")))?;
            if idx > list.len() {
                return Err(ApiError::bad_request(format!(
                    "index out of range in {path:?}"
                )));
            }
            list.insert(idx, value);
            Ok(())
        }
        _ => Err(ApiError::bad_request(format!(
            "doc is missing path: {path:?}"
        ))),
    }
}

fn remove(doc: &mut Value, path: &str) -> ApiResult<Value> {
    let (parent, last) = split_pointer(path)?;
    let missing = || ApiError::bad_request(format!("doc is missing path: {path:?}"));
    match doc.pointer_mut(&parent) {
        Some(Value::Object(map)) => map.remove(&last).ok_or_else(missing),
        Some(Value::Array(list)) => {
            let idx: usize = last.parse().map_err(|_| missing())?;
            (idx < list.len())
                .then(|| list.remove(idx))
                .ok_or_else(missing)
        }
        _ => Err(missing()),
    }
}

/// RFC 6902 JSON patch.
pub fn json_patch(doc: &mut Value, ops: &Value) -> ApiResult<()> {
    let ops = ops
        .as_array()
        .ok_or_else(|| ApiError::bad_request("json patch must be an array"))?;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| ApiError::bad_request(format!("{kind} needs a value")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad_request(format!("{kind} needs from")))
        };
        match kind {
            "add" => add(doc, path, value()?)?,
            "remove" => {
                remove(doc, path)?;
            }
            "replace" => {
                remove(doc, path)?;
                add(doc, path, value()?)?;
            }
            "test" => {
                if doc.pointer(path) != Some(&value()?) {
                    return Err(ApiError {
                        code: 422,
                        reason: "Invalid",
                        message: format!("testing value {path} failed"),
                        details: None,
                    });
                }
            }
            "move" => {
                let v = remove(doc, from()?)?;
                add(doc, path, v)?;
            }
            "copy" => {
                let v = doc
                    .pointer(from()?)
                    .cloned()
                    .ok_or_else(|| ApiError::bad_request("copy from a missing path"))?;
                add(doc, path, v)?;
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unexpected json patch op {other:?}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_removes_nulls() {
        let mut doc = json!({"a": {"b": 1, "c": 2}, "d": [1]});
        merge_patch(&mut doc, &json!({"a": {"b": null, "e": 3}, "d": [2]}));
        assert_eq!(doc, json!({"a": {"c": 2, "e": 3}, "d": [2]}));
    }

    #[test]
    fn json_patch_ops() {
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2]});
        json_patch(
            &mut doc,
            &json!([
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/list/0", "value": 9},
                {"op": "add", "path": "/list/-", "value": 3},
                {"op": "test", "path": "/list/1", "value": 2}
            ]),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"labels": {"b": "2"}}, "list": [9, 2, 3]})
        );
    }
}
