//! The set of fields a value sets (`typed/tofieldset.go`), and `EnsureNamedFieldsAreMembers`
//! (`fieldpath/set.go`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Shape, child_node, list_item_element, shape};
use crate::fieldpath::{PathElement, Set};
use crate::schema::{Kind, Node};

/// Every field `value` sets: scalars, atomic values, map entries that are not struct fields,
/// empty or null struct fields, and list items together with their contents.
pub fn to_field_set(node: &Node, value: &Value) -> Set {
    let mut set = Set::new();
    walk(node, value, &mut Vec::new(), &mut set);
    set
}

fn walk(node: &Node, value: &Value, path: &mut Vec<PathElement>, set: &mut Set) {
    match shape(node, value) {
        Shape::Leaf => set.insert(path),
        Shape::Map(map_node) => {
            let Value::Object(map) = value else { return };
            for (key, child) in map {
                path.push(PathElement::Field(key.clone()));
                walk(child_node(map_node, key), child, path, set);
                let empty = child.is_null() || child.as_object().is_some_and(|m| m.is_empty());
                if empty || !map_node.declares(key) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(list) => {
            let Value::Array(items) = value else { return };
            let elements: Vec<PathElement> = items
                .iter()
                .enumerate()
                .map(|(i, item)| list_item_element(list, item, i))
                .collect();
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            for pe in &elements {
                if !seen.insert(pe.clone()) {
                    duplicates.insert(pe.clone());
                }
            }
            for (pe, item) in elements.iter().zip(items) {
                path.push(pe.clone());
                if !duplicates.contains(pe) {
                    walk(&list.items, item, path, set);
                }
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// Makes every struct field that has owned children a member itself, so removing it
/// removes the field (structured-merge-diff does this before pruning).
pub fn ensure_named_fields_are_members(set: &Set, node: &Node) -> Set {
    ensure(set, Some(node))
}

fn ensure(set: &Set, node: Option<&Node>) -> Set {
    let mut out = Set::new();
    for m in set.members() {
        out.insert_member(m.clone());
    }
    for (pe, child) in set.children() {
        let child_node = match pe {
            PathElement::Field(name) => node.and_then(|n| match &n.kind {
                Kind::Object(o) => {
                    if o.fields.contains_key(name.as_str()) {
                        out.insert_member(pe.clone());
                    }
                    o.fields.get(name.as_str())
                }
                Kind::Map(m) => Some(m.values.as_ref()),
                Kind::Any => Some(n),
                _ => None,
            }),
            PathElement::Key(_) => node.and_then(|n| match &n.kind {
                Kind::List(l) => Some(l.items.as_ref()),
                _ => None,
            }),
            _ => None,
        };
        let inner = ensure(child, child_node);
        if !inner.is_empty() {
            *out.child_mut(pe.clone()) = inner;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::to_fields_v1;
    use crate::kinds::HOSTED_CLUSTERS;
    use crate::schema::for_kind;
    use serde_json::json;

    #[test]
    fn field_set_matches_kube_apiserver_shape() {
        let hc = json!({
            "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": "a", "labels": {"team": "x"}, "finalizers": ["f"]},
            "spec": {"release": {"image": "i"}, "pullSecret": {"name": "p"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        });
        let set = to_field_set(for_kind(HOSTED_CLUSTERS), &hc);
        assert_eq!(
            to_fields_v1(&set),
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:name": {}, "f:labels": {"f:team": {}},
                               "f:finalizers": {"v:\"f\"": {}}},
                "f:spec": {"f:release": {"f:image": {}}, "f:pullSecret": {}},
                "f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {
                    ".": {}, "f:type": {}, "f:status": {}}}}
            })
        );
    }
}
