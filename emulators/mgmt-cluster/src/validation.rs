//! Schema validation with kube-apiserver's wording.
//!
//! A CRD object is checked against its structural schema by kube-openapi's validator, whose
//! findings `kubeOpenAPIResultToFieldErrors` (`apiextensions-apiserver/pkg/apiserver/validation`)
//! turns into field errors: `Required value`, `Unsupported value: "x": supported values: …`,
//! `Too long: may not be more than N bytes`, `Too many: N: must have at most M items`,
//! `Invalid value: "x": spec.f in body should match '…'` and the other messages of
//! `k8s.io/kube-openapi/pkg/validation/errors/schema.go`. Duplicate keys of `map`/`set` lists
//! are `Duplicate value` (`schema/listtype`), and the [`crate::schema::Rule`]s stand in for
//! the CEL rules (`Invalid value: "object": <message>`).
//!
//! On updates, errors the stored object already had are not reported (validation
//! ratcheting, on by default since Kubernetes 1.30).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::Cause;
use crate::fieldpath::{PathElement, compare_values};
use crate::schema::{Kind, ListType, Node, NumberRules, StringRules};

/// Every violation of `node` in `value`, ignoring those `old` has too.
pub fn validate(node: &Node, value: &Value, old: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    walk(node, value, old, path, &mut causes);
    if let Some(old) = old {
        let mut before = Vec::new();
        walk(node, old, None, path, &mut before);
        causes.retain(|c| !before.contains(c));
    }
    causes
}

/// `metadata.name`: an RFC 1123 subdomain (`ValidateObjectMeta`, `NameIsDNSSubdomain`).
pub fn name(name: &str) -> Option<Cause> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then(|| {
        Cause::invalid(
            "metadata.name",
            &Value::String(name.to_owned()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        )
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(node: &Node, value: &Value, old: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    if value.is_null() {
        // Non-nullable nulls were pruned before validation; a nullable one is valid.
        return;
    }
    let expected = match &node.kind {
        Kind::String(_) => Some("string"),
        Kind::Integer(_) => Some("integer"),
        Kind::Boolean => Some("boolean"),
        Kind::Object(_) | Kind::Map(_) => Some("object"),
        Kind::List(_) => Some("array"),
        Kind::IntOrString(_) | Kind::Any => None,
    };
    let actual = type_name(value);
    let type_ok = match expected {
        Some(t) => t == actual,
        None => {
            !matches!(&node.kind, Kind::IntOrString(_)) || matches!(actual, "integer" | "string")
        }
    };
    if !type_ok {
        let expected = expected.unwrap_or("integer,string");
        out.push(Cause::type_invalid(
            path,
            value,
            &format!("{path} in body must be of type {expected}: \"{actual}\""),
        ));
        return;
    }
    match (&node.kind, value) {
        (Kind::String(rules) | Kind::IntOrString(rules), Value::String(s)) => {
            check_string(rules, s, value, path, out);
        }
        (Kind::Integer(rules), Value::Number(n)) => check_number(rules, n, value, path, out),
        (Kind::Object(o), Value::Object(map)) => {
            for name in &o.required {
                if !map.contains_key(*name) {
                    out.push(Cause::required(child(path, name)));
                }
            }
            if let Some(min) = o.min_properties
                && map.len() < min
            {
                out.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should have at least {min} properties"),
                ));
            }
            if let Some(max) = o.max_properties
                && map.len() > max
            {
                out.push(Cause::too_many(path, map.len(), max));
            }
            for (k, v) in map {
                if let Some(field) = o.fields.get(k.as_str()) {
                    walk(field, v, old.and_then(|o| o.get(k)), &child(path, k), out);
                }
            }
        }
        (Kind::Map(m), Value::Object(map)) => {
            if let Some(max) = m.max_properties
                && map.len() > max
            {
                out.push(Cause::too_many(path, map.len(), max));
            }
            for (k, v) in map {
                walk(
                    &m.values,
                    v,
                    old.and_then(|o| o.get(k)),
                    &child(path, k),
                    out,
                );
            }
        }
        (Kind::List(l), Value::Array(items)) => {
            if let Some(max) = l.max_items
                && items.len() > max
            {
                out.push(Cause::too_many(path, items.len(), max));
            }
            if let Some(min) = l.min_items
                && items.len() < min
            {
                out.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should have at least {min} items"),
                ));
            }
            check_list_keys(&l.list_type, items, path, out);
            for (i, item) in items.iter().enumerate() {
                let old_item = match &l.list_type {
                    ListType::Map(keys) => old
                        .and_then(Value::as_array)
                        .and_then(|olds| olds.iter().find(|o| same_key(keys, o, item))),
                    _ => None,
                };
                walk(&l.items, item, old_item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
    for rule in &node.rules {
        if !rule.holds(value, old) {
            out.push(Cause::invalid(
                path,
                &Value::String(actual.to_owned()),
                rule.message,
            ));
        }
    }
}

fn check_string(rules: &StringRules, s: &str, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if !rules.one_of.is_empty() && !rules.one_of.contains(&s) {
        out.push(Cause::not_supported(path, value, &rules.one_of));
    }
    let len = s.chars().count();
    if let Some(max) = rules.max_len
        && len > max
    {
        out.push(Cause::too_long(path, max));
    }
    if let Some(min) = rules.min_len
        && len < min
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = &rules.pattern
        && !p.regex.is_match(s)
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should match '{}'", p.source),
        ));
    }
}

fn check_number(
    rules: &NumberRules,
    n: &serde_json::Number,
    value: &Value,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(n) = n.as_i64() else { return };
    if let Some(min) = rules.minimum
        && n < min
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be greater than or equal to {min}"),
        ));
    }
    if let Some(max) = rules.maximum
        && n > max
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be less than or equal to {max}"),
        ));
    }
}

fn key_of(keys: &[&str], item: &Value) -> Value {
    let map = keys
        .iter()
        .filter_map(|k| item.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    Value::Object(map)
}

fn same_key(keys: &[&str], a: &Value, b: &Value) -> bool {
    compare_values(&key_of(keys, a), &key_of(keys, b)).is_eq()
}

/// Duplicate items of `set` and `map` lists (`schema/listtype/validation.go`).
fn check_list_keys(list_type: &ListType, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    let mut seen: BTreeSet<PathElement> = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let (element, shown) = match list_type {
            ListType::Atomic => return,
            ListType::Set => (PathElement::Value(item.clone()), item.clone()),
            ListType::Map(keys) => {
                let key = key_of(keys, item);
                let fields = key.as_object().map(|m| m.clone().into_iter().collect());
                (PathElement::Key(fields.unwrap_or_default()), key)
            }
        };
        if !seen.insert(element) {
            out.push(Cause::duplicate(format!("{path}[{i}]"), &shown));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS};
    use crate::schema::for_kind;
    use serde_json::json;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn reports_like_kube_openapi() {
        let np = json!({"spec": {
            "clusterName": "c", "release": {"image": "i"}, "replicas": "two",
            "management": {"upgradeType": "Sideways"},
            "platform": {"type": "Azure", "azure": {
                "vmSize": "big", "subnetID": "s", "osDisk": {"sizeGiB": 8},
                "image": {"type": "ImageID"}}}}});
        let got = messages(&validate(for_kind(NODE_POOLS), &np, None, ""));
        assert_eq!(
            got,
            [
                "spec.management.upgradeType: Unsupported value: \"Sideways\": supported values: \"Replace\", \"InPlace\"",
                "spec.platform.azure.image: Invalid value: \"object\": imageID is required when type is ImageID, and forbidden otherwise",
                "spec.platform.azure.osDisk.sizeGiB: Invalid value: 8: spec.platform.azure.osDisk.sizeGiB in body should be greater than or equal to 16",
                "spec.platform.azure.vmSize: Invalid value: \"big\": spec.platform.azure.vmSize in body should match '^(Standard_|Basic_)?[A-Z]+[0-9]+(-[0-9]+)?[abdilmptsCNP]*(_[A-Z]*[0-9]+[A-Z]*)?(_v[0-9]+)?$'",
                "spec.replicas: Invalid value: \"two\": spec.replicas in body must be of type integer: \"string\"",
            ]
        );
    }

    #[test]
    fn duplicates_and_immutability() {
        let old = json!({"spec": {"infraID": "a"}});
        let new = json!({"spec": {"infraID": "b"},
            "status": {"conditions": [
                {"type": "A", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "t"},
                {"type": "A", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "t"}]}});
        let got = messages(&validate(for_kind(HOSTED_CLUSTERS), &new, Some(&old), ""));
        assert!(
            got.contains(
                &"spec.infraID: Invalid value: \"string\": infraID is immutable".to_owned()
            ),
            "{got:?}"
        );
        assert!(
            got.contains(&"status.conditions[1]: Duplicate value: {\"type\":\"A\"}".to_owned()),
            "{got:?}"
        );
    }
}
