//! Which fields a change added, modified and removed (`typed/compare.go`).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;

use super::{Shape, as_array, as_object, child_node, joint_shape, list_item_element};
use crate::fieldpath::{PathElement, Set, compare_values};
use crate::schema::Node;

/// The difference between two versions of an object.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    /// Drops `fields` and everything below them (`Comparison.ExcludeFields`).
    pub fn exclude(self, fields: &Set) -> Self {
        Self {
            added: self.added.recursive_difference(fields),
            modified: self.modified.recursive_difference(fields),
            removed: self.removed.recursive_difference(fields),
        }
    }
}

/// Compares `lhs` (before) with `rhs` (after).
pub fn compare(node: &Node, lhs: &Value, rhs: &Value) -> Comparison {
    let mut out = Comparison::default();
    walk(node, Some(lhs), Some(rhs), &mut Vec::new(), &mut out);
    out
}

fn leaf(l: Option<&Value>, r: Option<&Value>, path: &[PathElement], out: &mut Comparison) {
    match (l, r) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(a), Some(b)) if compare_values(a, b) != Ordering::Equal => out.modified.insert(path),
        _ => {}
    }
}

fn walk(
    node: &Node,
    l: Option<&Value>,
    r: Option<&Value>,
    path: &mut Vec<PathElement>,
    out: &mut Comparison,
) {
    match joint_shape(node, l, r) {
        Shape::Leaf => return leaf(l, r, path, out),
        Shape::Map(map_node) => {
            let (lm, rm) = (as_object(l), as_object(r));
            if lm.is_none_or(|m| m.is_empty()) && rm.is_none_or(|m| m.is_empty()) {
                return leaf(l, r, path, out);
            }
            let mut keys: Vec<&String> = lm.into_iter().flat_map(|m| m.keys()).collect();
            keys.extend(rm.into_iter().flat_map(|m| m.keys()));
            keys.sort();
            keys.dedup();
            for key in keys {
                path.push(PathElement::Field(key.clone()));
                walk(
                    child_node(map_node, key),
                    lm.and_then(|m| m.get(key)),
                    rm.and_then(|m| m.get(key)),
                    path,
                    out,
                );
                path.pop();
            }
        }
        Shape::List(list) => {
            let (la, ra) = (as_array(l), as_array(r));
            if la.is_empty() && ra.is_empty() {
                return leaf(l, r, path, out);
            }
            // Items grouped by path element, in first-seen order (lhs first).
            let mut order: Vec<PathElement> = Vec::new();
            let mut sides: BTreeMap<PathElement, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
            for (i, item) in la.iter().enumerate() {
                let pe = list_item_element(list, item, i);
                if !sides.contains_key(&pe) {
                    order.push(pe.clone());
                }
                sides.entry(pe).or_default().0.push(item);
            }
            for (i, item) in ra.iter().enumerate() {
                let pe = list_item_element(list, item, i);
                if !sides.contains_key(&pe) {
                    order.push(pe.clone());
                }
                sides.entry(pe).or_default().1.push(item);
            }
            for pe in order {
                let Some((ls, rs)) = sides.get(&pe) else {
                    continue;
                };
                path.push(pe);
                match (ls.len(), rs.len()) {
                    (0..=1, 0..=1) => walk(
                        &list.items,
                        ls.first().copied(),
                        rs.first().copied(),
                        path,
                        out,
                    ),
                    (a, b) if a >= 2 && b >= 2 => {
                        let equal = a == b
                            && ls
                                .iter()
                                .zip(rs)
                                .all(|(x, y)| compare_values(x, y) == Ordering::Equal);
                        if !equal {
                            out.modified.insert(path);
                        }
                    }
                    (a, _) if a >= 2 => {
                        if let Some(r0) = rs.first() {
                            walk(&list.items, None, Some(r0), path, out);
                        }
                        out.removed.insert(path);
                    }
                    _ => {
                        if let Some(l0) = ls.first() {
                            walk(&list.items, Some(l0), None, path, out);
                        }
                        out.added.insert(path);
                    }
                }
                path.pop();
            }
        }
    }
    // A container that appeared or disappeared is itself added or removed.
    let absent = |v: Option<&Value>| v.is_none();
    if absent(l) {
        out.added.insert(path);
    } else if absent(r) {
        out.removed.insert(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::path_string;
    use crate::kinds::HOSTED_CLUSTERS;
    use crate::schema::for_kind;
    use serde_json::json;

    fn paths(set: &Set) -> Vec<String> {
        set.paths().iter().map(|p| path_string(p)).collect()
    }

    #[test]
    fn keyed_items_are_compared_by_key() {
        let node = for_kind(HOSTED_CLUSTERS);
        let before = json!({"status": {"conditions": [
            {"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}});
        let after = json!({"status": {"conditions": [
            {"type": "B", "status": "False"}, {"type": "C", "status": "True"}]}});
        let c = compare(node, &before, &after);
        assert_eq!(
            paths(&c.modified),
            [".status.conditions[type=\"B\"].status"]
        );
        assert!(paths(&c.added).contains(&".status.conditions[type=\"C\"]".to_owned()));
        assert!(paths(&c.removed).contains(&".status.conditions[type=\"A\"].status".to_owned()));
    }
}
