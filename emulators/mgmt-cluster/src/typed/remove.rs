//! Removing a set of fields from a value (`typed/remove.go`, `RemoveItems`). As there, a
//! container emptied by the removal becomes `null`; the write path then prunes nulls the
//! schema does not allow, so emptied fields disappear.

use serde_json::{Map, Value};

use super::{Shape, child_node, list_item_element, shape};
use crate::fieldpath::{PathElement, Set};
use crate::schema::Node;

/// `value` without the members of `set`.
pub fn remove_items(node: &Node, value: &Value, set: &Set) -> Value {
    match shape(node, value) {
        Shape::Leaf => value.clone(),
        Shape::Map(map_node) => {
            let Value::Object(map) = value else {
                return value.clone();
            };
            if map.is_empty() {
                return value.clone();
            }
            let mut out = Map::new();
            for (key, child) in map {
                let pe = PathElement::Field(key.clone());
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(sub) => remove_items(child_node(map_node, key), child, sub),
                    None => child.clone(),
                };
                out.insert(key.clone(), kept);
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Object(out)
            }
        }
        Shape::List(list) => {
            let Value::Array(items) = value else {
                return value.clone();
            };
            if items.is_empty() {
                return value.clone();
            }
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let pe = list_item_element(list, item, i);
                if set.has_member(&pe) {
                    continue;
                }
                out.push(match set.child(&pe) {
                    Some(sub) => remove_items(&list.items, item, sub),
                    None => item.clone(),
                });
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Array(out)
            }
        }
    }
}
