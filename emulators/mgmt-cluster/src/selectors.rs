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

/// A parsed field selector; only `metadata.name` and `metadata.namespace` are supported,
/// as for most resources on a real server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(s: &str) -> ApiResult<Self> {
        let mut reqs = Vec::new();
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
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            reqs.push((field.to_owned(), negate, value.trim().to_owned()));
        }
        Ok(Self(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, negate, value)| {
            let actual = meta::meta_str(obj, field.trim_start_matches("metadata.")).unwrap_or("");
            (actual == value) != *negate
        })
    }
}

/// Both selectors of a list or watch request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> ApiResult<Self> {
        Ok(Self {
            labels: labels
                .map(LabelSelector::parse)
                .transpose()?
                .unwrap_or_default(),
            fields: fields
                .map(FieldSelector::parse)
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
        let obj = json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            !FieldSelector::parse("metadata.name!=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(FieldSelector::parse("spec.x=a").is_err());
    }
}
