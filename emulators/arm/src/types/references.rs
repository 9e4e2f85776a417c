//! References between resources: which ids a resource's body names, and the check a resource
//! provider applies to them when the body is PUT.
//!
//! One list of references per type serves three jobs: refusing a PUT that names something
//! missing (`InvalidResourceReference`), refusing the DELETE of something still named by
//! another resource (the `InUse…` codes), and ordering a resource group's cascade so that
//! users go before what they use.

use serde_json::{Map, Value};

use super::PutCheck;
use crate::errors::{ArmError, Result};
use crate::store::Store;

/// One id a resource's body names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The id as written in the body.
    pub target: String,
    /// The (sub-)resource that holds the reference: a subnet, an IP configuration, a load
    /// balancer frontend, or the resource itself. In-use refusals name it.
    pub holder: String,
    /// The id the network resource provider names as "referenced by resource …" when the
    /// target is missing (the NIC for its IP configurations, the sub-resource otherwise).
    pub referrer: String,
    /// Whether the resource provider requires both ends in one region.
    pub same_region: bool,
    /// Whether the target cannot be deleted while this reference stands.
    pub blocks_delete: bool,
}

impl Reference {
    /// A reference that must resolve, in the same region, and blocks the target's deletion.
    pub fn strict(target: &str, holder: &str, referrer: &str) -> Self {
        Self {
            target: target.to_owned(),
            holder: holder.to_owned(),
            referrer: referrer.to_owned(),
            same_region: true,
            blocks_delete: true,
        }
    }
}

/// `value.id` when present and a non-empty string.
pub fn id_of(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(|v| v.get("id"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// `null`, for sub-resources sent without `properties`.
static NULL: Value = Value::Null;

/// The named items of `props[array]` with their `properties` (`null` when absent, which every
/// lookup treats as empty).
pub fn items<'a>(
    props: &'a Map<String, Value>,
    array: &str,
) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
    props
        .get(array)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let name = item.get("name").and_then(Value::as_str)?;
            Some((name, item.get("properties").unwrap_or(&NULL)))
        })
}

/// Whether `props` (a resource's own, possibly not yet stored, properties) holds the inline
/// sub-resource `{own_id}/{array}/{name}` that `target` names.
fn inline_exists(own_id: &str, props: &Map<String, Value>, target: &str) -> bool {
    let Some(rest) = strip_prefix_ci(target, own_id).and_then(|r| r.strip_prefix('/')) else {
        return false;
    };
    let Some((array, name)) = rest.split_once('/') else {
        return false;
    };
    props
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(array))
        .and_then(|(_, v)| v.as_array())
        .is_some_and(|list| {
            list.iter().any(|i| {
                i.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
        })
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s.is_char_boundary(prefix.len()))
        .then(|| s.split_at(prefix.len()))
        .filter(|(head, _)| head.eq_ignore_ascii_case(prefix))
        .map(|(_, tail)| tail)
}

/// ARM compares regions without case or spaces (`East US` = `eastus`).
pub fn same_location(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.replace(' ', "").to_ascii_lowercase();
    norm(a) == norm(b)
}

/// How a reference resolved: missing, or found with the region of the resource holding it.
enum Resolved {
    Missing,
    Found(Option<String>),
}

fn resolve(store: &Store, put: &PutCheck<'_>, target: &str) -> Resolved {
    if strip_prefix_ci(target, put.id).is_some_and(|r| r.starts_with('/')) {
        return if inline_exists(put.id, put.properties, target) {
            Resolved::Found(put.location.map(str::to_owned))
        } else {
            Resolved::Missing
        };
    }
    match store.resolve(target) {
        Some(owner) => Resolved::Found(owner.location.clone()),
        None => Resolved::Missing,
    }
}

/// Checks every reference of a PUT body the way the network resource provider does: each must
/// name an existing resource (or an inline sub-resource of one, or of the body itself) in the
/// writer's region, else `400 InvalidResourceReference`.
pub fn check_all(store: &Store, put: &PutCheck<'_>, refs: &[Reference]) -> Result<()> {
    for r in refs {
        let ok = match resolve(store, put, &r.target) {
            Resolved::Missing => false,
            Resolved::Found(loc) => {
                !r.same_region
                    || match (loc.as_deref(), put.location) {
                        (Some(a), Some(b)) => same_location(a, b),
                        _ => true,
                    }
            }
        };
        if !ok {
            return Err(ArmError::invalid_resource_reference(&r.target, &r.referrer));
        }
    }
    Ok(())
}
