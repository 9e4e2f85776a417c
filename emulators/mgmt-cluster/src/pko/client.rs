//! Package Operator's view of one cluster's API (the management cluster's, or a hosted
//! cluster's through the remote-phase manager): its REST mapping, server-side apply as field
//! owner `package-operator` with force (`phase_reconciler.go`'s `defaultPatcher`), dry runs
//! (`preflight/dryrun.go`), get and delete. Requests go straight to the cluster's store
//! through the same write path as HTTP requests, so what kube-apiserver refuses is refused.

use serde_json::{Value, json};

use super::FIELD_OWNER;
use crate::error::{ApiError, ApiResult};
use crate::kinds::{self, KINDS, Profile, ResourceId};
use crate::meta::{finalizers, meta_str, set_finalizers};
use crate::registry::{self, Apply, Scope};
use crate::store::Store;

/// One cluster's API.
#[derive(Clone, Copy)]
pub(crate) struct Api<'a> {
    pub store: &'a Store,
    pub profile: Profile,
}

/// `schema.GroupVersionKind.String()` of an object: `apps/v1, Kind=Deployment`,
/// `/v1, Kind=ConfigMap`.
pub(crate) fn gvk_string(obj: &Value) -> String {
    let api_version = text(obj, "apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={}", text(obj, "kind"))
}

pub(crate) fn text<'v>(obj: &'v Value, field: &str) -> &'v str {
    obj.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// `ns/name` as `client.ObjectKey` prints it.
pub(crate) fn object_key(obj: &Value) -> String {
    format!(
        "{}/{}",
        meta_str(obj, "namespace").unwrap_or_default(),
        meta_str(obj, "name").unwrap_or_default()
    )
}

impl Api<'_> {
    /// The served kind of `obj`; PKO's API-existence preflight check words a miss
    /// (`preflight/apis_exist.go`).
    pub(crate) fn resource(&self, obj: &Value) -> Result<ResourceId, String> {
        kinds::by_api_version(self.profile, text(obj, "apiVersion"), text(obj, "kind"))
            .ok_or_else(|| format!("{} not registered on the api server.", gvk_string(obj)))
    }

    /// Where `obj` lives: its namespace if its kind is namespaced, else none.
    fn key(&self, res: ResourceId, obj: &Value) -> (String, String) {
        let ns = if KINDS[res].namespaced {
            meta_str(obj, "namespace").unwrap_or_default().to_owned()
        } else {
            String::new()
        };
        (ns, meta_str(obj, "name").unwrap_or_default().to_owned())
    }

    /// The object `obj` names, as stored.
    pub(crate) fn get(&self, obj: &Value) -> Option<Value> {
        let res = self.resource(obj).ok()?;
        let (ns, name) = self.key(res, obj);
        self.store.get(res, &ns, &name).ok()
    }

    /// Server-side apply of `obj` (its `status` dropped) as `package-operator`, forcing
    /// ownership; with `dry_run` nothing is stored. Creates the object when missing.
    pub(crate) fn apply(&self, obj: &Value, dry_run: bool) -> ApiResult<Value> {
        let res = self
            .resource(obj)
            .map_err(|m| ApiError::resource_not_found(&m))?;
        let (ns, name) = self.key(res, obj);
        let mut config = obj.clone();
        if let Some(map) = config.as_object_mut() {
            map.remove("status");
        }
        if !KINDS[res].namespaced
            && let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("namespace");
        }
        let written = self.store.upsert(res, &ns, &name, dry_run, |cur| {
            registry::prepare_apply(
                &Apply {
                    res,
                    ns: &ns,
                    name: &name,
                    config: &config,
                    scope: Scope::Main,
                    manager: FIELD_OWNER,
                    force: true,
                },
                cur,
            )
        })?;
        Ok(written.object)
    }

    /// Deletes `obj` if its uid is still `uid` (PKO deletes with preconditions).
    pub(crate) fn delete(&self, current: &Value) -> ApiResult<()> {
        let res = self
            .resource(current)
            .map_err(|m| ApiError::resource_not_found(&m))?;
        let (ns, name) = self.key(res, current);
        self.store.delete(res, &ns, &name, false).map(|_| ())
    }

    /// Rewrites `current`'s metadata with `change` (an update as `package-operator`).
    pub(crate) fn update_meta(
        &self,
        current: &Value,
        change: impl FnOnce(&mut Value),
    ) -> ApiResult<Value> {
        let res = self
            .resource(current)
            .map_err(|m| ApiError::resource_not_found(&m))?;
        let (ns, name) = self.key(res, current);
        let written = self.store.update(res, &ns, &name, false, |cur| {
            let mut next = cur.clone();
            change(&mut next);
            registry::prepare_update(res, cur, next, Scope::Main, FIELD_OWNER)
        })?;
        Ok(written.object)
    }

    /// Adds `finalizer` to a stored object unless present; true when written.
    pub(crate) fn ensure_finalizer(&self, obj: &Value, finalizer: &str) -> bool {
        if finalizers(obj).iter().any(|f| f == finalizer) {
            return false;
        }
        self.update_meta(obj, |next| {
            let mut list = finalizers(next);
            list.push(finalizer.to_owned());
            set_finalizers(next, list);
        })
        .inspect_err(|e| tracing::debug!(error = %e, "finalizer not added"))
        .is_ok()
    }

    /// Removes `finalizer` from a stored object if present.
    pub(crate) fn remove_finalizer(&self, obj: &Value, finalizer: &str) {
        if !finalizers(obj).iter().any(|f| f == finalizer) {
            return;
        }
        let removed = self.update_meta(obj, |next| {
            let list = finalizers(next)
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            set_finalizers(next, list);
        });
        if let Err(e) = removed {
            tracing::debug!(error = %e, "finalizer not removed");
        }
    }
}

/// A controller owner reference to `owner` (`controllerutil.SetControllerReference`).
pub(crate) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": text(owner, "apiVersion"), "kind": text(owner, "kind"),
        "name": meta_str(owner, "name").unwrap_or_default(),
        "uid": meta_str(owner, "uid").unwrap_or_default(),
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// The uid of `obj`'s controller among its owner references.
pub(crate) fn controller_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}
