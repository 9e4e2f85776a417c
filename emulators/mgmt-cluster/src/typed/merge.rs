//! Merging an applied configuration into a live object (`typed/merge.go`, rule
//! `ruleKeepRHS`): granular maps merge key by key, associative lists merge item by item in
//! the order described below, everything else takes the applied value.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Shape, as_array, as_object, child_node, joint_shape, list_item_element};
use crate::fieldpath::{PathElement, path_string};
use crate::schema::{List, Node};

/// A configuration that cannot be merged.
#[derive(Debug, thiserror::Error)]
#[error("{path}: duplicate entries for key {element}")]
pub struct MergeError {
    pub path: String,
    pub element: String,
}

/// `rhs` merged into `lhs`.
pub fn merge(node: &Node, lhs: &Value, rhs: &Value) -> Result<Value, MergeError> {
    Ok(walk(node, Some(lhs), Some(rhs), &mut Vec::new())?.unwrap_or(Value::Null))
}

fn walk(
    node: &Node,
    l: Option<&Value>,
    r: Option<&Value>,
    path: &mut Vec<PathElement>,
) -> Result<Option<Value>, MergeError> {
    let keep_rhs = || r.or(l).cloned();
    match joint_shape(node, l, r) {
        Shape::Leaf => Ok(keep_rhs()),
        Shape::Map(map_node) => {
            let (lm, rm) = (as_object(l), as_object(r));
            if lm.is_none_or(|m| m.is_empty()) && rm.is_none_or(|m| m.is_empty()) {
                return Ok(keep_rhs());
            }
            let mut keys: Vec<&String> = lm.into_iter().flat_map(|m| m.keys()).collect();
            keys.extend(rm.into_iter().flat_map(|m| m.keys()));
            keys.sort();
            keys.dedup();
            let mut out = Map::new();
            for key in keys {
                path.push(PathElement::Field(key.clone()));
                let merged = walk(
                    child_node(map_node, key),
                    lm.and_then(|m| m.get(key)),
                    rm.and_then(|m| m.get(key)),
                    path,
                )?;
                path.pop();
                if let Some(v) = merged {
                    out.insert(key.clone(), v);
                }
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        Shape::List(list) => {
            let (la, ra) = (as_array(l), as_array(r));
            if la.is_empty() && ra.is_empty() {
                return Ok(keep_rhs());
            }
            let out = merge_list(list, la, ra, path)?;
            Ok((!out.is_empty()).then_some(Value::Array(out)))
        }
    }
}

/// `visitListItems`: the result follows the applied order; live-only items keep their
/// place relative to the shared items around them.
fn merge_list(
    list: &List,
    lhs: &[Value],
    rhs: &[Value],
    path: &mut Vec<PathElement>,
) -> Result<Vec<Value>, MergeError> {
    let rhs_pes: Vec<PathElement> = rhs
        .iter()
        .enumerate()
        .map(|(i, v)| list_item_element(list, v, i))
        .collect();
    let mut observed_rhs: BTreeMap<&PathElement, &Value> = BTreeMap::new();
    for (pe, v) in rhs_pes.iter().zip(rhs) {
        if observed_rhs.insert(pe, v).is_some() {
            return Err(MergeError {
                path: path_string(path),
                element: pe.to_string(),
            });
        }
    }
    let lhs_pes: Vec<PathElement> = lhs
        .iter()
        .enumerate()
        .map(|(i, v)| list_item_element(list, v, i))
        .collect();
    // A duplicated live item is not merged with the applied one (it becomes absent).
    let mut observed_lhs: BTreeMap<&PathElement, Option<&Value>> = BTreeMap::new();
    for (pe, v) in lhs_pes.iter().zip(lhs) {
        observed_lhs
            .entry(pe)
            .and_modify(|slot| *slot = None)
            .or_insert(Some(v));
    }
    let live = |pe: &PathElement| observed_lhs.get(pe).copied().flatten();

    let mut shared = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(pe))
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let mut item =
        |pe: &PathElement, l: Option<&Value>, r: Option<&Value>, out: &mut Vec<Value>| {
            path.push(pe.clone());
            let merged = walk(&list.items, l, r, path);
            path.pop();
            if let Some(v) = merged? {
                out.push(v);
            }
            Ok::<(), MergeError>(())
        };
    let (mut li, mut ri) = (0, 0);
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe);
                item(pe, live(pe), observed_rhs.get(pe).copied(), &mut out)?;
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|s| s != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                item(pe, Some(&lhs[li]), None, &mut out)?;
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe);
            item(pe, live(pe), observed_rhs.get(pe).copied(), &mut out)?;
            ri += 1;
            if next_shared.is_some_and(|s| s == pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::HOSTED_CLUSTERS;
    use crate::schema::for_kind;
    use serde_json::json;

    #[test]
    fn keyed_lists_merge_and_atomic_lists_replace() {
        let node = for_kind(HOSTED_CLUSTERS);
        let live = json!({
            "metadata": {"finalizers": ["a"]},
            "spec": {"services": [{"service": "APIServer"}]},
            "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}
        });
        let applied = json!({
            "metadata": {"finalizers": ["b"]},
            "spec": {"services": [{"service": "Ignition"}]},
            "status": {"conditions": [{"type": "B", "status": "False"}, {"type": "C", "status": "True"}]}
        });
        let out = merge(node, &live, &applied).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(out["spec"]["services"], json!([{"service": "Ignition"}]));
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "A", "status": "True"}, {"type": "B", "status": "False"}, {"type": "C", "status": "True"}])
        );
        let dup = json!({"metadata": {"finalizers": ["x", "x"]}});
        assert!(merge(node, &live, &dup).is_err());
    }
}
