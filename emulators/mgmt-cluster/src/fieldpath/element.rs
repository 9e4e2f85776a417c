//! One step of a field path, and the total order structured-merge-diff puts on them.
//!
//! Ported from `sigs.k8s.io/structured-merge-diff/v6` `fieldpath/element.go` and
//! `value/value.go` (`Compare`, `ToString`): the order decides how sets are walked and how
//! conflicts are listed, and the string form is what kube-apiserver prints in a conflict's
//! `details.causes[].field` (`.status.conditions[type="Ready"].status`).

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

/// A step into an object: a named field (`f:`), a keyed item of a `listType=map` list
/// (`k:`), an item of a `listType=set` list (`v:`), or a position (`i:`).
#[derive(Debug, Clone)]
pub enum PathElement {
    Field(String),
    /// The key fields of a map-list item, sorted by name.
    Key(Vec<(String, Value)>),
    Value(Value),
    Index(usize),
}

/// A path from the object root.
pub type Path = Vec<PathElement>;

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            Self::Field(_) => 0,
            Self::Key(_) => 1,
            Self::Value(_) => 2,
            Self::Index(_) => 3,
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Field(a), Self::Field(b)) => a.cmp(b),
            (Self::Key(a), Self::Key(b)) => compare_key_lists(a, b),
            (Self::Value(a), Self::Value(b)) => compare_values(a, b),
            (Self::Index(a), Self::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

fn compare_key_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let c = x.0.cmp(&y.0).then_with(|| compare_values(&x.1, &y.1));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// structured-merge-diff's total order over values: numbers, strings, booleans, lists, maps,
/// then null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => {
                let (f, g) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                f.partial_cmp(&g).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            for ((k1, v1), (k2, v2)) in x.iter().zip(y) {
                let c = k1.cmp(k2).then_with(|| compare_values(v1, v2));
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A value as structured-merge-diff prints it in paths: strings quoted, everything else
/// plain (`value.ToString`).
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_to_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect(),
        other => other.to_string(),
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(name) => write!(f, ".{name}"),
            Self::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            Self::Value(v) => write!(f, "[={}]", value_to_string(v)),
            Self::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as kube-apiserver prints it in conflict causes.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn order_and_display_follow_structured_merge_diff() {
        let f = PathElement::Field("status".into());
        let k = PathElement::Key(vec![("type".into(), json!("Ready"))]);
        let v = PathElement::Value(json!("fin"));
        let i = PathElement::Index(0);
        assert!(f < k && k < v && v < i);
        assert_eq!(
            path_string(&[f, PathElement::Field("conditions".into()), k]),
            ".status.conditions[type=\"Ready\"]"
        );
        assert_eq!(v.to_string(), "[=\"fin\"]");
        assert_eq!(
            compare_values(&json!(2), &json!(10)),
            Ordering::Less,
            "numbers compare as numbers"
        );
    }
}
