//! The part of client-go's JSONPath (`k8s.io/client-go/util/jsonpath`) that CRD printer
//! columns use: `.field`, `['field']`, `[n]`, `[*]`, and filters `[?(@.path op "literal")]`
//! / `[?(@.path)]`, evaluated with missing keys allowed (`AllowMissingKeys(true)`), as the
//! apiextensions table convertor does.

use serde_json::Value;

/// A path that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized column definition {0:?}")]
pub struct PathError(pub String);

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Vec<Step>,
    /// `None` for an existence test.
    compare: Option<(Op, Value)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath(Vec<Step>);

impl JsonPath {
    pub fn parse(path: &str) -> Result<Self, PathError> {
        let err = || PathError(path.to_owned());
        let inner = path
            .trim()
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(path.trim());
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        let (steps, rest) = steps(inner).ok_or_else(err)?;
        if !rest.is_empty() {
            return Err(err());
        }
        Ok(Self(steps))
    }

    /// Every value the path reaches in `root`, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        eval(&self.0, vec![root])
    }
}

/// Parses steps until the input ends or a character that cannot start one (e.g. an operator).
fn steps(mut s: &str) -> Option<(Vec<Step>, &str)> {
    let mut out = Vec::new();
    loop {
        if let Some(rest) = s.strip_prefix('.') {
            if let Some(rest) = rest.strip_prefix('*') {
                out.push(Step::All);
                s = rest;
                continue;
            }
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '/'))
                .unwrap_or(rest.len());
            if end == 0 {
                return None;
            }
            out.push(Step::Field(rest[..end].to_owned()));
            s = &rest[end..];
        } else if let Some(rest) = s.strip_prefix('[') {
            let (step, rest) = bracket(rest)?;
            out.push(step);
            s = rest;
        } else {
            return Some((out, s));
        }
    }
}

/// The inside of `[...]` and what follows the `]`.
fn bracket(s: &str) -> Option<(Step, &str)> {
    if let Some(rest) = s.strip_prefix("?(") {
        let close = rest.find(")]")?;
        let filter = filter(&rest[..close])?;
        return Some((Step::Filter(filter), &rest[close + 2..]));
    }
    let close = s.find(']')?;
    let (body, rest) = (s[..close].trim(), &s[close + 1..]);
    let step = if body == "*" {
        Step::All
    } else if let Some(q) = quoted(body) {
        Step::Field(q)
    } else {
        Step::Index(body.parse().ok()?)
    };
    Some((step, rest))
}

fn quoted(s: &str) -> Option<String> {
    for q in ['\'', '"'] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return Some(inner.to_owned());
        }
    }
    None
}

fn filter(s: &str) -> Option<Filter> {
    let s = s.trim().strip_prefix('@')?;
    let (left, rest) = steps(s)?;
    let rest = rest.trim();
    if rest.is_empty() {
        return Some(Filter {
            left,
            compare: None,
        });
    }
    let (op, literal) = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ]
    .iter()
    .find_map(|(tok, op)| rest.strip_prefix(tok).map(|r| (*op, r.trim())))?;
    let value = match quoted(literal) {
        Some(s) => Value::String(s),
        None => serde_json::from_str::<Value>(literal).ok()?,
    };
    Some(Filter {
        left,
        compare: Some((op, value)),
    })
}

fn eval<'a>(steps: &[Step], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Field(name) => next.extend(v.get(name.as_str())),
                Step::Index(i) => {
                    if let Some(items) = v.as_array() {
                        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                        let at = if *i < 0 { len + i } else { *i };
                        next.extend(usize::try_from(at).ok().and_then(|at| items.get(at)));
                    }
                }
                Step::All => match v {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Filter(f) => {
                    if let Some(items) = v.as_array() {
                        next.extend(items.iter().filter(|item| f.holds(item)));
                    }
                }
            }
        }
        current = next;
    }
    current
}

impl Filter {
    fn holds(&self, item: &Value) -> bool {
        let left = eval(&self.left, vec![item]);
        // An item the left side does not reach is skipped.
        let [value] = left.as_slice() else {
            return false;
        };
        let Some((op, right)) = &self.compare else {
            return true;
        };
        let ordering = match (value, right) {
            (Value::String(a), Value::String(b)) => a.partial_cmp(b),
            (Value::Number(a), Value::Number(b)) => a.as_f64().partial_cmp(&b.as_f64()),
            (Value::Bool(a), Value::Bool(b)) => a.partial_cmp(b),
            _ => None,
        };
        let Some(ordering) = ordering else {
            return false;
        };
        match op {
            Op::Eq => ordering.is_eq(),
            Op::Ne => ordering.is_ne(),
            Op::Lt => ordering.is_lt(),
            Op::Le => ordering.is_le(),
            Op::Gt => ordering.is_gt(),
            Op::Ge => ordering.is_ge(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hypershift_printer_columns() {
        let hc = json!({"status": {
            "version": {"history": [
                {"state": "Partial", "version": "4.19.1"},
                {"state": "Completed", "version": "4.19.0"}]},
            "conditions": [{"type": "Available", "status": "True", "message": "ok"}]}});
        let find = |p: &str| -> Vec<Value> {
            JsonPath::parse(p)
                .unwrap()
                .find(&hc)
                .into_iter()
                .cloned()
                .collect()
        };
        assert_eq!(
            find(r#".status.version.history[?(@.state=="Completed")].version"#),
            [json!("4.19.0")]
        );
        assert_eq!(
            find(r#".status.version.history[?(@.state!="")].state"#),
            [json!("Partial"), json!("Completed")]
        );
        assert_eq!(find(".status.version.history[0].state"), [json!("Partial")]);
        assert_eq!(
            find(r#".status.conditions[?(@.type=="Available")].message"#),
            [json!("ok")]
        );
        assert!(find(r#".status.conditions[?(@.type=="Progressing")].status"#).is_empty());
        assert!(find(".status.controlPlaneVersion.history[0].state").is_empty());
        assert_eq!(find("{.status.conditions[*].type}"), [json!("Available")]);
        assert!(JsonPath::parse(".a[?(@.b ~ 1)]").is_err());
    }
}
