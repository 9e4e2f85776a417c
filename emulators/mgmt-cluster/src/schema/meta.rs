//! `TypeMeta` and `ObjectMeta`, shared by every kind.
//!
//! From `k8s.io/apimachinery/pkg/apis/meta/v1/types.go` (`ObjectMeta`): `finalizers` is
//! `+listType=set`, `ownerReferences` is `+listType=map` keyed by `uid`, `managedFields` is
//! `+listType=atomic`, labels and annotations are string maps.

use super::Node;
use super::builder::*;

fn owner_reference() -> Node {
    object([
        ("apiVersion", string()),
        ("kind", string()),
        ("name", string()),
        ("uid", string()),
        ("controller", boolean()),
        ("blockOwnerDeletion", boolean()),
    ])
    .require(&["apiVersion", "kind", "name", "uid"])
    .atomic()
}

fn managed_fields_entry() -> Node {
    object([
        ("manager", string()),
        ("operation", string()),
        ("apiVersion", string()),
        ("time", string()),
        ("fieldsType", string()),
        ("fieldsV1", any()),
        ("subresource", string()),
    ])
}

/// `metadata`.
pub fn object_meta() -> Node {
    object([
        ("name", string()),
        ("generateName", string()),
        ("namespace", string()),
        ("selfLink", string()),
        ("uid", string()),
        ("resourceVersion", string()),
        ("generation", integer()),
        ("creationTimestamp", string().nullable()),
        ("deletionTimestamp", string().nullable()),
        ("deletionGracePeriodSeconds", integer()),
        ("labels", map_of(string())),
        ("annotations", map_of(string())),
        ("ownerReferences", map_list(owner_reference(), &["uid"])),
        ("finalizers", set_list(string())),
        ("managedFields", atomic_list(managed_fields_entry())),
    ])
}

/// A whole object: `apiVersion`, `kind`, `metadata` and the kind's own top-level fields.
pub fn envelope<const N: usize>(fields: [(&'static str, Node); N]) -> Node {
    let mut top = object([
        ("apiVersion", string()),
        ("kind", string()),
        ("metadata", object_meta()),
    ]);
    if let super::Kind::Object(o) = &mut top.kind {
        o.fields.extend(fields);
    }
    top
}
