//! Schema-aware operations on JSON objects — field sets, comparison, merge, removal — as
//! `sigs.k8s.io/structured-merge-diff/v6/typed` defines them. Server-side apply and the
//! managedFields bookkeeping of every write are built from these.
//!
//! How a value is walked depends on its schema node and its shape: granular objects and maps
//! descend into their keys (`f:`), `listType=map` lists into their keyed items (`k:`),
//! `listType=set` lists into their values (`v:`); scalars, atomic objects and atomic lists
//! are leaves. A value whose shape disagrees with its schema is treated as a leaf (schema
//! validation reports it afterwards).

mod compare;
mod fieldset;
mod merge;
mod remove;

pub use compare::{Comparison, compare};
pub use fieldset::{ensure_named_fields_are_members, to_field_set};
pub use merge::{MergeError, merge};
pub use remove::remove_items;

use serde_json::{Map, Value};

use crate::fieldpath::PathElement;
use crate::schema::{Kind, List, ListType, Node, any_node};

/// How a value is walked.
#[derive(Clone, Copy)]
enum Shape<'a> {
    Leaf,
    /// A granular object or map: its keys are walked, each with the node of that key.
    Map(&'a Node),
    /// An associative (`set` or `map`) list.
    List(&'a List),
}

fn shape<'a>(node: &'a Node, value: &Value) -> Shape<'a> {
    match (&node.kind, value) {
        (Kind::Object(o), Value::Object(_)) if !o.atomic => Shape::Map(node),
        (Kind::Map(m), Value::Object(_)) if !m.atomic => Shape::Map(node),
        (Kind::Any, Value::Object(_)) => Shape::Map(node),
        (Kind::List(l), Value::Array(_)) if l.list_type != ListType::Atomic => Shape::List(l),
        _ => Shape::Leaf,
    }
}

/// The shape two sides are walked with: a missing or `null` side takes the other's; two
/// different shapes are compared and merged as leaves.
fn joint_shape<'a>(node: &'a Node, l: Option<&Value>, r: Option<&Value>) -> Shape<'a> {
    fn present(v: Option<&Value>) -> Option<&Value> {
        v.filter(|v| !v.is_null())
    }
    match (present(l), present(r)) {
        (None, None) => Shape::Leaf,
        (Some(v), None) | (None, Some(v)) => shape(node, v),
        (Some(a), Some(b)) => match (shape(node, a), shape(node, b)) {
            (s @ Shape::Map(_), Shape::Map(_)) => s,
            (s @ Shape::List(_), Shape::List(_)) => s,
            _ => Shape::Leaf,
        },
    }
}

/// The node of key `name` under a map-shaped node (undeclared keys of a struct are walked
/// as [`Kind::Any`]).
fn child_node<'a>(node: &'a Node, name: &str) -> &'a Node {
    node.field(name).unwrap_or_else(|| any_node())
}

fn as_object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn as_array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The path element of a list item (`listItemToPathElement`): its key fields for a map list
/// (a missing key field takes its schema default), its value for a set. `None` for an item
/// that cannot be addressed (a map-list item without any key, a set item that is not a
/// scalar); such items are walked by index.
pub fn list_item_element(list: &List, item: &Value, index: usize) -> PathElement {
    let addressed = match &list.list_type {
        ListType::Map(keys) => item.as_object().and_then(|obj| {
            let mut fields: Vec<(String, Value)> = keys
                .iter()
                .filter_map(|k| {
                    obj.get(*k)
                        .cloned()
                        .or_else(|| list.items.field(k).and_then(|n| n.default.clone()))
                        .map(|v| ((*k).to_owned(), v))
                })
                .collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            (!fields.is_empty()).then_some(PathElement::Key(fields))
        }),
        ListType::Set => match item {
            Value::Object(_) | Value::Array(_) | Value::Null => None,
            scalar => Some(PathElement::Value(scalar.clone())),
        },
        ListType::Atomic => None,
    };
    addressed.unwrap_or(PathElement::Index(index))
}
