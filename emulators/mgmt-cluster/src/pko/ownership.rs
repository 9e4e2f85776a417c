//! How Package Operator marks the objects it controls. On the cluster of the owner, native
//! owner references (`ownerhandling.NewNative`); across clusters — an ObjectSetPhase in the
//! management cluster owning objects in a hosted cluster — the `package-operator.run/owners`
//! annotation, a JSON list of references (`ownerhandling.NewAnnotation`, boxcutter
//! `ownerhandling/annotation.go`).

use serde_json::{Value, json};

use super::OWNERS_ANNOTATION;
use super::client::text;
use crate::meta::{meta_str, metadata_mut};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ownership {
    Native,
    Annotation,
}

impl Ownership {
    /// The object's owner references under this strategy.
    pub(crate) fn refs(self, obj: &Value) -> Vec<Value> {
        match self {
            Self::Native => obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            Self::Annotation => obj
                .pointer(&format!(
                    "/metadata/annotations/{}",
                    OWNERS_ANNOTATION.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                .and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
                .unwrap_or_default(),
        }
    }

    fn set_refs(self, obj: &mut Value, refs: Vec<Value>) {
        let meta = metadata_mut(obj);
        match self {
            Self::Native if refs.is_empty() => {
                meta.remove("ownerReferences");
            }
            Self::Native => {
                meta.insert("ownerReferences".into(), Value::Array(refs));
            }
            Self::Annotation => {
                let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Some(map) = annotations.as_object_mut() {
                    map.insert(
                        OWNERS_ANNOTATION.into(),
                        json!(Value::Array(refs).to_string()),
                    );
                }
            }
        }
    }

    pub(crate) fn controller_uid(self, obj: &Value) -> Option<String> {
        self.refs(obj)
            .iter()
            .find(|r| r["controller"] == true)
            .and_then(|r| r.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    pub(crate) fn is_controller(self, owner_uid: &str, obj: &Value) -> bool {
        self.controller_uid(obj).as_deref() == Some(owner_uid)
    }

    pub(crate) fn is_owner(self, owner_uid: &str, obj: &Value) -> bool {
        self.refs(obj).iter().any(|r| r["uid"] == owner_uid)
    }

    /// `ReleaseController` then `SetControllerReference`: any other controller stays an
    /// owner, `owner` becomes the controller.
    pub(crate) fn set_controller(self, owner: &Value, obj: &mut Value) {
        let uid = meta_str(owner, "uid").unwrap_or_default();
        let mut refs: Vec<Value> = self
            .refs(obj)
            .into_iter()
            .filter(|r| r["uid"] != uid)
            .map(|mut r| {
                if let Some(map) = r.as_object_mut() {
                    map.remove("controller");
                }
                r
            })
            .collect();
        let mut ours = json!({
            "apiVersion": text(owner, "apiVersion"), "kind": text(owner, "kind"),
            "name": meta_str(owner, "name").unwrap_or_default(), "uid": uid, "controller": true,
        });
        match self {
            Self::Native => ours["blockOwnerDeletion"] = json!(true),
            Self::Annotation => {
                ours["namespace"] = json!(meta_str(owner, "namespace").unwrap_or_default());
            }
        }
        refs.push(ours);
        self.set_refs(obj, refs);
    }

    /// `RemoveOwner`.
    pub(crate) fn remove_owner(self, owner_uid: &str, obj: &mut Value) {
        let refs = self
            .refs(obj)
            .into_iter()
            .filter(|r| r["uid"] != owner_uid)
            .collect();
        self.set_refs(obj, refs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_moves_and_old_owner_stays() {
        let old = json!({"apiVersion": "package-operator.run/v1alpha1", "kind": "ObjectSet",
            "metadata": {"name": "a", "namespace": "n", "uid": "1"}});
        let new = json!({"apiVersion": "package-operator.run/v1alpha1", "kind": "ObjectSet",
            "metadata": {"name": "b", "namespace": "n", "uid": "2"}});
        for o in [Ownership::Native, Ownership::Annotation] {
            let mut obj = json!({"metadata": {"name": "x"}});
            o.set_controller(&old, &mut obj);
            assert!(o.is_controller("1", &obj));
            o.set_controller(&new, &mut obj);
            assert!(o.is_controller("2", &obj) && o.is_owner("1", &obj));
            o.remove_owner("1", &mut obj);
            assert!(!o.is_owner("1", &obj));
        }
    }
}
