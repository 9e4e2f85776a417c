//! A schema tree as an OpenAPI v3 schema object, as kube-apiserver publishes a CRD's
//! structural schema (and, for built-in kinds, their types' schemas): `type`, `properties`,
//! `required`, `enum`, length and item bounds, `pattern`, `minimum`/`maximum`, `default`,
//! `nullable`, `items`, `additionalProperties`, the `x-kubernetes-*` list and map extensions,
//! and each field's description from [`super::docs`].
//!
//! Built-in kinds also carry the strategic-merge-patch extensions of their `map` and `set`
//! lists (`+patchStrategy=merge`), which `kubectl apply` reads to compute patches; custom
//! resources have none, as they have no strategic merge patch.
//!
//! OpenAPI v2 has no `nullable` and no `anyOf`; for it the schema is rendered as
//! apiextensions' `ToStructuralOpenAPIV2` publishes a CRD's: a nullable node loses its type,
//! items and properties (so kubectl accepts `null` there), an int-or-string node its type.

use serde_json::{Map, Value, json};

use super::docs::description;
use super::{Kind, ListType, Node};

/// Where descriptions come from and whether patch extensions apply.
#[derive(Debug, Clone, Copy)]
pub struct Style<'a> {
    /// Schema name the descriptions are keyed by (`HostedCluster`, `ObjectMeta`, …).
    pub docs: &'a str,
    /// A built-in kind: strategic-merge-patch extensions on `map`/`set` lists.
    pub builtin: bool,
    /// OpenAPI v2 rather than v3.
    pub v2: bool,
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The OpenAPI schema of `node`, found at `path` of the documented type.
pub fn to_openapi(node: &Node, style: Style<'_>, path: &str) -> Value {
    let mut s = Map::new();
    if let Some(d) = description(style.docs, path) {
        s.insert("description".into(), json!(d));
    }
    match &node.kind {
        Kind::String(r) | Kind::IntOrString(r) => {
            if matches!(node.kind, Kind::IntOrString(_)) {
                s.insert("x-kubernetes-int-or-string".into(), json!(true));
                if !style.v2 {
                    s.insert(
                        "anyOf".into(),
                        json!([{"type": "integer"}, {"type": "string"}]),
                    );
                }
            } else {
                s.insert("type".into(), json!("string"));
            }
            if !r.one_of.is_empty() {
                s.insert("enum".into(), json!(r.one_of));
            }
            if let Some(n) = r.min_len {
                s.insert("minLength".into(), json!(n));
            }
            if let Some(n) = r.max_len {
                s.insert("maxLength".into(), json!(n));
            }
            if let Some(p) = &r.pattern {
                s.insert("pattern".into(), json!(p.source));
            }
        }
        Kind::Integer(r) => {
            s.insert("type".into(), json!("integer"));
            if let Some(n) = r.minimum {
                s.insert("minimum".into(), json!(n));
            }
            if let Some(n) = r.maximum {
                s.insert("maximum".into(), json!(n));
            }
        }
        Kind::Boolean => {
            s.insert("type".into(), json!("boolean"));
        }
        Kind::Object(o) => {
            s.insert("type".into(), json!("object"));
            let props: Map<String, Value> = o
                .fields
                .iter()
                .map(|(name, field)| {
                    (
                        (*name).to_owned(),
                        to_openapi(field, style, &child(path, name)),
                    )
                })
                .collect();
            if !props.is_empty() {
                s.insert("properties".into(), Value::Object(props));
            }
            if !o.required.is_empty() {
                s.insert("required".into(), json!(o.required));
            }
            if o.atomic {
                s.insert("x-kubernetes-map-type".into(), json!("atomic"));
            }
            if let Some(n) = o.min_properties {
                s.insert("minProperties".into(), json!(n));
            }
            if let Some(n) = o.max_properties {
                s.insert("maxProperties".into(), json!(n));
            }
        }
        Kind::Map(m) => {
            s.insert("type".into(), json!("object"));
            let mut values = to_openapi(&m.values, style, path);
            // The values share the field's path; its description is the field's alone.
            if let Some(v) = values.as_object_mut() {
                v.remove("description");
            }
            s.insert("additionalProperties".into(), values);
            if m.atomic {
                s.insert("x-kubernetes-map-type".into(), json!("atomic"));
            }
            if let Some(n) = m.max_properties {
                s.insert("maxProperties".into(), json!(n));
            }
        }
        Kind::List(l) => {
            s.insert("type".into(), json!("array"));
            let mut items = to_openapi(&l.items, style, path);
            if let Some(v) = items.as_object_mut() {
                v.remove("description");
            }
            s.insert("items".into(), items);
            let list_type = match &l.list_type {
                ListType::Atomic => "atomic",
                ListType::Set => "set",
                ListType::Map(keys) => {
                    s.insert("x-kubernetes-list-map-keys".into(), json!(keys));
                    if style.builtin
                        && let [key] = keys.as_slice()
                    {
                        s.insert("x-kubernetes-patch-merge-key".into(), json!(key));
                    }
                    "map"
                }
            };
            s.insert("x-kubernetes-list-type".into(), json!(list_type));
            if style.builtin && l.list_type != ListType::Atomic {
                s.insert("x-kubernetes-patch-strategy".into(), json!("merge"));
            }
            if let Some(n) = l.min_items {
                s.insert("minItems".into(), json!(n));
            }
            if let Some(n) = l.max_items {
                s.insert("maxItems".into(), json!(n));
            }
        }
        Kind::Any => {
            s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        }
    }
    if let Some(d) = &node.default {
        s.insert("default".into(), d.clone());
    }
    if node.nullable {
        if style.v2 {
            for key in ["type", "items", "properties"] {
                s.remove(key);
            }
        } else {
            s.insert("nullable".into(), json!(true));
        }
    }
    Value::Object(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{HOSTED_CLUSTERS, NAMESPACES};
    use crate::schema::for_kind;

    #[test]
    fn lists_and_maps_carry_their_extensions() {
        let hc = to_openapi(
            for_kind(HOSTED_CLUSTERS),
            Style {
                docs: "HostedCluster",
                builtin: false,
                v2: false,
            },
            "",
        );
        let conditions = &hc["properties"]["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
        assert!(conditions.get("x-kubernetes-patch-strategy").is_none());
        let azure = &hc["properties"]["spec"]["properties"]["platform"]["properties"]["azure"];
        assert_eq!(azure["type"], "object");
        assert!(
            azure["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("subnetID")))
        );
        let ns = to_openapi(
            for_kind(NAMESPACES),
            Style {
                docs: "Namespace",
                builtin: true,
                v2: false,
            },
            "",
        );
        let finalizers = &ns["properties"]["metadata"]["properties"]["finalizers"];
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    }
}
