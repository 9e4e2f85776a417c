//! `metav1.LabelSelector` objects (`matchLabels`, `matchExpressions`) as found in specs — a
//! Deployment's selector, an ObjectDeployment's, a probe's — evaluated as
//! `metav1.LabelSelectorAsSelector` does (`apimachinery/pkg/apis/meta/v1/helpers.go`).

use serde_json::{Map, Value};

/// Whether `selector` selects an object with `labels`. An absent or empty selector selects
/// everything (`labels.Everything()`); an operator other than `In`, `NotIn`, `Exists` and
/// `DoesNotExist` selects nothing, where the Go helper would fail.
pub fn matches(selector: Option<&Value>, labels: Option<&Map<String, Value>>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let have = label(key);
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => have.is_some_and(|v| values.contains(&v)),
                Some("NotIn") => have.is_none_or(|v| !values.contains(&v)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                _ => false,
            }
        });
    match_labels && expressions
}

/// Whether a selector has no requirement at all (`selector.Empty()`).
pub fn is_empty(selector: &Value) -> bool {
    let count = |field: &str| {
        selector.get(field).map_or(0, |v| {
            v.as_object().map_or(0, Map::len) + v.as_array().map_or(0, Vec::len)
        })
    };
    count("matchLabels") + count("matchExpressions") == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_and_expressions() {
        let labels = json!({"app": "web", "tier": "front"});
        let labels = labels.as_object();
        assert!(matches(
            Some(&json!({"matchLabels": {"app": "web"}})),
            labels
        ));
        assert!(!matches(
            Some(&json!({"matchLabels": {"app": "db"}})),
            labels
        ));
        let expr = json!({"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "back"]},
            {"key": "gone", "operator": "DoesNotExist"}]});
        assert!(matches(Some(&expr), labels));
        assert!(matches(None, None));
        assert!(is_empty(&json!({})));
        assert!(!is_empty(&expr));
    }
}
