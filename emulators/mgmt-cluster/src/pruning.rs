//! Pruning: what a structural CRD schema does to every object it decodes
//! (`k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning`, and
//! `PruneNonNullableNullsWithoutDefaults` in `schema/defaulting`).
//!
//! Unknown fields are dropped and reported by path (`spec.ports[0].unknownNested`, sorted,
//! as `unknown field "<path>"` in strict decoding errors); `null` where the schema does not
//! allow it is dropped silently, so a default can take its place.

use serde_json::Value;

use crate::schema::{Kind, Node};

/// Drops fields the schema does not declare; returns their paths, sorted.
pub fn prune_unknown(node: &Node, value: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    walk(node, value, "", &mut unknown);
    unknown.sort();
    unknown
}

fn child_path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk(node: &Node, value: &mut Value, path: &str, unknown: &mut Vec<String>) {
    match (&node.kind, value) {
        (Kind::Object(o), Value::Object(map)) => {
            map.retain(|k, _| {
                let known = o.fields.contains_key(k.as_str());
                if !known {
                    unknown.push(child_path(path, k));
                }
                known
            });
            for (k, v) in map.iter_mut() {
                if let Some(child) = o.fields.get(k.as_str()) {
                    walk(child, v, &child_path(path, k), unknown);
                }
            }
        }
        (Kind::Map(m), Value::Object(map)) => {
            for (k, v) in map.iter_mut() {
                walk(&m.values, v, &child_path(path, k), unknown);
            }
        }
        (Kind::List(l), Value::Array(items)) => {
            for (i, v) in items.iter_mut().enumerate() {
                walk(&l.items, v, &format!("{path}[{i}]"), unknown);
            }
        }
        _ => {}
    }
}

/// Drops `null` values of fields that are not `nullable` (the field then counts as absent,
/// and gets its default if it has one).
pub fn prune_nulls(node: &Node, value: &mut Value) {
    match (&node.kind, value) {
        (Kind::Object(o), Value::Object(map)) => {
            map.retain(|k, v| !v.is_null() || o.fields.get(k.as_str()).is_some_and(|f| f.nullable));
            for (k, v) in map.iter_mut() {
                if let Some(child) = o.fields.get(k.as_str()) {
                    prune_nulls(child, v);
                }
            }
        }
        (Kind::Map(m), Value::Object(map)) => {
            if !m.values.nullable {
                map.retain(|_, v| !v.is_null());
            }
            for v in map.values_mut() {
                prune_nulls(&m.values, v);
            }
        }
        (Kind::List(l), Value::Array(items)) => {
            for v in items.iter_mut() {
                prune_nulls(&l.items, v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::HOSTED_CLUSTERS;
    use crate::schema::for_kind;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_dropped_and_named() {
        let mut hc = json!({
            "metadata": {"name": "a", "bogus": 1},
            "spec": {"relase": {"image": "x"}, "services": [{"service": "APIServer", "extra": true}],
                     "labels": {"anything": "goes"}},
            "status": {"version": {"availableUpdates": null}, "kubeconfig": null}
        });
        let unknown = prune_unknown(for_kind(HOSTED_CLUSTERS), &mut hc);
        assert_eq!(
            unknown,
            ["metadata.bogus", "spec.relase", "spec.services[0].extra"]
        );
        assert_eq!(hc["spec"]["labels"], json!({"anything": "goes"}));
        prune_nulls(for_kind(HOSTED_CLUSTERS), &mut hc);
        assert_eq!(hc["status"], json!({"version": {"availableUpdates": null}}));
    }
}
