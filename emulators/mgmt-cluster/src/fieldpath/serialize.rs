//! The `fieldsV1` wire format of `metadata.managedFields[].fieldsV1`.
//!
//! Follows `structured-merge-diff/v6` `fieldpath/serialize.go` and `serialize-pe.go`: every
//! path element is an object key (`f:<name>`, `k:<json object of the key fields>`,
//! `v:<json value>`, `i:<index>`); a node that is itself a member and also has children
//! carries `".": {}`; a leaf member is `{}`.

use serde_json::{Map, Value};

use super::element::PathElement;
use super::set::Set;

/// Why a `fieldsV1` document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FieldsError {
    #[error("key must be 2 characters long: {0:?}")]
    ShortKey(String),
    #[error("unknown path element type: {0:?}")]
    UnknownType(String),
    #[error("invalid path element {key:?}: {source}")]
    BadJson {
        key: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid path element {0:?}: a key element must be a JSON object")]
    KeyNotObject(String),
    #[error("invalid index in {0:?}")]
    BadIndex(String),
    #[error("fieldsV1 must be a JSON object")]
    NotObject,
}

/// The string form of one path element.
pub fn element_to_string(pe: &PathElement) -> String {
    match pe {
        PathElement::Field(name) => format!("f:{name}"),
        PathElement::Key(fields) => {
            let map: Map<String, Value> = fields.iter().cloned().collect();
            format!("k:{}", Value::Object(map))
        }
        PathElement::Value(v) => format!("v:{v}"),
        PathElement::Index(i) => format!("i:{i}"),
    }
}

/// Parses one path element.
pub fn element_from_string(s: &str) -> Result<PathElement, FieldsError> {
    let (prefix, rest) = s
        .split_once(':')
        .filter(|(p, _)| p.len() == 1)
        .ok_or_else(|| FieldsError::ShortKey(s.to_owned()))?;
    let json = |rest: &str| {
        serde_json::from_str::<Value>(rest).map_err(|source| FieldsError::BadJson {
            key: s.to_owned(),
            source,
        })
    };
    match prefix {
        "f" => Ok(PathElement::Field(rest.to_owned())),
        "v" => Ok(PathElement::Value(json(rest)?)),
        "k" => match json(rest)? {
            Value::Object(map) => Ok(PathElement::Key(map.into_iter().collect())),
            _ => Err(FieldsError::KeyNotObject(s.to_owned())),
        },
        "i" => rest
            .parse()
            .map(PathElement::Index)
            .map_err(|_| FieldsError::BadIndex(s.to_owned())),
        _ => Err(FieldsError::UnknownType(s.to_owned())),
    }
}

/// A set as a `fieldsV1` object.
pub fn to_fields_v1(set: &Set) -> Value {
    Value::Object(contents(set, false))
}

fn contents(set: &Set, include_self: bool) -> Map<String, Value> {
    let mut out = Map::new();
    if include_self {
        out.insert(".".into(), Value::Object(Map::new()));
    }
    for pe in set.members() {
        if set.child(pe).is_none() {
            out.insert(element_to_string(pe), Value::Object(Map::new()));
        }
    }
    for (pe, child) in set.children() {
        if child.is_empty() {
            continue;
        }
        let inner = contents(child, set.has_member(pe));
        out.insert(element_to_string(pe), Value::Object(inner));
    }
    out
}

/// Reads a `fieldsV1` object.
pub fn from_fields_v1(fields: &Value) -> Result<Set, FieldsError> {
    let Value::Object(map) = fields else {
        return Err(FieldsError::NotObject);
    };
    read(map).map(|(set, _)| set)
}

/// The set below a node and whether the node itself is a member (`readIterV1`): a node with
/// no children is a member; one with children is a member only if it says `"."`.
fn read(map: &Map<String, Value>) -> Result<(Set, bool), FieldsError> {
    let mut set = Set::new();
    let mut is_member = false;
    let mut has_children = false;
    for (key, value) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        has_children = true;
        let pe = element_from_string(key)?;
        let inner = match value {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let (grandchildren, child_is_member) = read(&inner)?;
        if child_is_member {
            set.insert_member(pe.clone());
        }
        if !grandchildren.is_empty() {
            set.set_child(pe, grandchildren);
        }
    }
    Ok((set, is_member || !has_children))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_the_real_format() {
        // Shape of a kube-apiserver managedFields entry for an applied condition list.
        let wire = json!({
            "f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}}, "f:labels": {"f:team": {}}},
            "f:status": {"f:conditions": {
                "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}
            }}
        });
        let set = from_fields_v1(&wire).unwrap();
        assert!(set.has(&[
            PathElement::Field("status".into()),
            PathElement::Field("conditions".into()),
            PathElement::Key(vec![("type".into(), json!("Ready"))]),
        ]));
        assert!(set.has(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("finalizers".into()),
        ]));
        assert_eq!(to_fields_v1(&set), wire);
    }
}
