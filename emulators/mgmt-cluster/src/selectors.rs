//! `labelSelector` and `fieldSelector` query parameters.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::meta;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (`a=b,c!=d,e in (x,y),!f`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn set_values(rest: &str) -> ApiResult<Vec<String>> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| ApiError::bad_request(format!("unable to parse requirement: {rest}")))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    pub fn parse(s: &str) -> ApiResult<Self> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                Requirement::NotIn(k.trim().to_owned(), set_values(rest)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                Requirement::In(k.trim().to_owned(), set_values(rest)?)
            } else {
                Requirement::Exists(part.to_owned())
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = meta::labels(obj);
        let get = |k: &str| labels.iter().find(|(lk, _)| *lk == k).map(|(_, v)| *v);
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEq(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|l| vs.iter().all(|v| v != l)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A field a kind can be selected by: its label and where its value is read (the first
/// pointer that holds a non-empty string; absent reads as `""`, as in a `fields.Set`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLabel {
    pub name: &'static str,
    pub pointers: &'static [&'static str],
}

impl FieldLabel {
    pub const fn at(name: &'static str, pointers: &'static [&'static str]) -> Self {
        Self { name, pointers }
    }

    fn value<'a>(&self, obj: &'a Value) -> &'a str {
        self.pointers
            .iter()
            .filter_map(|p| obj.pointer(p).and_then(Value::as_str))
            .find(|v| !v.is_empty())
            .unwrap_or("")
    }
}

/// One `field=value` or `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    label: FieldLabel,
    negate: bool,
    value: String,
}

/// A parsed field selector over the labels a kind supports; any other label is refused with
/// the field label conversion's `field label not supported: <label>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<FieldTerm>);

impl FieldSelector {
    pub fn parse(s: &str, labels: &[FieldLabel]) -> ApiResult<Self> {
        let mut terms = Vec::new();
        for part in split_top_level(s) {
            let (field, negate, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, false, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{part}'")));
            };
            let field = field.trim();
            let label = labels
                .iter()
                .find(|l| l.name == field)
                .copied()
                .ok_or_else(|| {
                    ApiError::bad_request(format!("field label not supported: {field}"))
                })?;
            terms.push(FieldTerm {
                label,
                negate,
                value: value.trim().to_owned(),
            });
        }
        Ok(Self(terms))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0
            .iter()
            .all(|t| (t.label.value(obj) == t.value) != t.negate)
    }
}

/// Both selectors of a list or watch request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub fn parse(
        labels: Option<&str>,
        fields: Option<&str>,
        field_labels: &[FieldLabel],
    ) -> ApiResult<Self> {
        Ok(Self {
            labels: labels
                .map(LabelSelector::parse)
                .transpose()?
                .unwrap_or_default(),
            fields: fields
                .map(|f| FieldSelector::parse(f, field_labels))
                .transpose()?
                .unwrap_or_default(),
        })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_forms() {
        let obj = json!({"metadata": {"labels": {"app": "x", "tier": "web"}}});
        for (sel, want) in [
            ("app=x", true),
            ("app==x,tier!=db", true),
            ("app in (x, y)", true),
            ("tier notin (web)", false),
            ("app,!missing", true),
            ("missing", false),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn field_selector_name() {
        let labels = crate::kinds::KINDS[crate::kinds::CONFIG_MAPS].field_labels;
        let obj = json!({"metadata": {"name": "a", "namespace": "n"}});
        let parse = |s| FieldSelector::parse(s, labels);
        assert!(parse("metadata.name=a").unwrap().matches(&obj));
        assert!(!parse("metadata.name!=a").unwrap().matches(&obj));
        let err = parse("spec.x=a").unwrap_err();
        assert_eq!(err.message, "field label not supported: spec.x");
    }

    /// What `kubectl describe` sends to find an object's events.
    #[test]
    fn event_field_selector() {
        let labels = crate::kinds::KINDS[crate::kinds::EVENTS].field_labels;
        let ev = json!({"metadata": {"name": "e", "namespace": "n"},
            "involvedObject": {"kind": "HostedCluster", "name": "a", "namespace": "n", "uid": "u"},
            "reportingComponent": "c"});
        let sel = "involvedObject.kind=HostedCluster,involvedObject.uid=u,\
                   involvedObject.name=a,involvedObject.namespace=n";
        assert!(FieldSelector::parse(sel, labels).unwrap().matches(&ev));
        assert!(
            FieldSelector::parse("source=c", labels)
                .unwrap()
                .matches(&ev)
        );
        assert!(
            !FieldSelector::parse("involvedObject.name=b", labels)
                .unwrap()
                .matches(&ev)
        );
        assert!(FieldSelector::parse("reportingComponent=c", labels).is_err());
    }
}
