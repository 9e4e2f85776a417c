//! `metadata.managedFields`: who owns which field, kept on every write, and server-side
//! apply on top of it.
//!
//! The layering follows kube-apiserver's field manager
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal`, `NewDefaultFieldManager`):
//! decode the entries, start tracking on create or first apply (`skipnonapplied.go`, with
//! the `before-first-apply` manager), cap update managers at ten (`capmanagers.go`), build
//! the manager identity (`buildmanagerinfo.go`), stamp the time only when the manager changed
//! something (`managedfieldsupdater.go`), never record type and system metadata
//! (`stripmeta.go`), and merge (`structuredmerge.go` → [`updater`]).

mod conflict;
mod entries;
mod updater;

use serde_json::{Value, json};

pub use entries::{Managed, ManagerId, Operation};

use crate::error::ApiError;
use crate::fieldpath::{PathElement, Set};
use crate::meta::metadata_mut;
use crate::schema::Node;
use entries::{Entry, is_reset};
use updater::{ApplyError, Scope};

/// Updaters kept before the oldest are merged into `ancient-changes`
/// (`DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;

/// The field manager of one endpoint: a kind's schema, its `group/version`, and whether
/// this is the main resource or the `status` subresource.
pub struct FieldManager<'a> {
    pub schema: &'a Node,
    pub api_version: &'a str,
    /// `""` for the main resource, `"status"` for the status subresource.
    pub subresource: &'a str,
    /// Fields this endpoint resets (`GetResetFields`): they are never owned through it.
    pub ignored: Set,
}

/// Paths never recorded as owned (`NewStripMetaManager`).
fn strip_set() -> Set {
    let mut set = Set::new();
    let f = |s: &str| PathElement::Field(s.to_owned());
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    set.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(name)]);
    }
    set
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    obj
}

fn has_uid(obj: &Value) -> bool {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .is_some_and(|u| !u.is_empty())
}

fn set_managed_fields(obj: &mut Value, managed: &Managed) {
    let meta = metadata_mut(obj);
    match entries::encode(managed) {
        Some(list) => meta.insert("managedFields".into(), list),
        None => meta.remove("managedFields"),
    };
}

impl FieldManager<'_> {
    fn scope(&self) -> Scope<'_> {
        Scope {
            schema: self.schema,
            ignored: &self.ignored,
            api_version: self.api_version,
        }
    }

    /// Records that `manager` changed `live` into `new` (a create when `live` has no uid):
    /// the `FieldManager.Update` path of create, update, merge and JSON patches. Returns
    /// `new` with its managedFields set.
    pub fn update(&self, live: &Value, mut new: Value, manager: &str, now: &str) -> Value {
        let live_entries = live.pointer("/metadata/managedFields");
        let sent = new.pointer("/metadata/managedFields");
        // decodeLiveOrNew: a subresource never takes managedFields from the request; the
        // main resource takes them when sent (an empty list resets them), else keeps live's.
        let mut managed = if !self.subresource.is_empty() {
            entries::decode(live_entries).unwrap_or_default()
        } else if is_reset(sent) {
            Managed::new()
        } else {
            match entries::decode(sent) {
                Ok(m) if !m.is_empty() => m,
                _ => entries::decode(live_entries).unwrap_or_default(),
            }
        };
        let live = without_managed_fields(live);
        new = without_managed_fields(&new);
        // Objects whose tracking was reset stay untracked until someone applies.
        if managed.is_empty() && has_uid(&live) {
            return new;
        }
        self.record_update(&live, &new, &mut managed, manager, now);
        set_managed_fields(&mut new, &managed);
        new
    }

    fn record_update(
        &self,
        live: &Value,
        new: &Value,
        managed: &mut Managed,
        manager: &str,
        now: &str,
    ) {
        let id = ManagerId::new(
            manager,
            Operation::Update,
            self.api_version,
            self.subresource,
        );
        // managedFieldsUpdater: compute what this operation took, then fold it into the
        // manager's previous entry, stamping the time only if it took something.
        let current = ManagerId {
            manager: "current-operation".into(),
            operation: Operation::Update,
            api_version: String::new(),
            subresource: String::new(),
        };
        updater::update(&self.scope(), live, new, managed, &current);
        if let Some(took) = managed.remove(&current) {
            let set = took.set.difference(&strip_set());
            if !set.is_empty() {
                let previous = managed.remove(&id).map(|e| e.set).unwrap_or_default();
                managed.insert(
                    id,
                    Entry {
                        set: set.union(&previous),
                        api_version: self.api_version.to_owned(),
                        time: Some(now.to_owned()),
                    },
                );
            }
        }
        cap_update_managers(managed);
    }

    /// Server-side apply of `config` by `manager` to `live` (an empty object when creating).
    /// Returns the object to store, with its managedFields.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApiError> {
        let mut managed = entries::decode(live.pointer("/metadata/managedFields"))
            .map_err(|e| ApiError::internal(format!("failed to decode managed fields: {e}")))?;
        let mut live = without_managed_fields(live);
        if managed.is_empty() {
            // Fields set before anyone applied belong to `before-first-apply`.
            let empty = json!({"apiVersion": live.get("apiVersion"), "kind": live.get("kind")});
            self.record_update(&empty, &live, &mut managed, "before-first-apply", now);
            live = without_managed_fields(&live);
        }
        let id = ManagerId::new(
            manager,
            Operation::Apply,
            self.api_version,
            self.subresource,
        );
        let applied = updater::apply(&self.scope(), &live, config, &mut managed, &id, force);
        let new = match applied {
            Ok(new) => new,
            Err(ApplyError::Conflicts(c)) => return Err(conflict::error(c)),
            Err(e @ ApplyError::Merge(_)) => return Err(ApiError::internal(e.to_string())),
        };
        if let Some(entry) = managed.get_mut(&id) {
            entry.set = entry.set.difference(&strip_set());
            if new.is_some() {
                entry.time = Some(now.to_owned());
            }
        }
        managed.retain(|_, e| !e.set.is_empty());
        let mut object = new.unwrap_or(live);
        set_managed_fields(&mut object, &managed);
        Ok(object)
    }
}

/// Merges the oldest update entries into one `ancient-changes` entry per apiVersion once
/// there are more than ten (`capManagersManager.capUpdateManagers`).
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<ManagerId> = managed
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| managed[a].time.cmp(&managed[b].time).then_with(|| a.cmp(b)));
    let mut length = updaters.len();
    let mut first_of_version: std::collections::BTreeMap<String, ManagerId> = Default::default();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.get(&id).cloned() else {
            continue;
        };
        let bucket = ManagerId::new("ancient-changes", Operation::Update, &entry.api_version, "");
        match first_of_version.get(&entry.api_version) {
            Some(first) => {
                if !managed.contains_key(&bucket)
                    && let Some(moved) = managed.remove(first)
                {
                    managed.insert(bucket.clone(), moved);
                }
                let merged = managed
                    .get(&bucket)
                    .map(|b| b.set.union(&entry.set))
                    .unwrap_or_else(|| entry.set.clone());
                managed.remove(&id);
                managed.insert(
                    bucket,
                    Entry {
                        set: merged,
                        api_version: entry.api_version.clone(),
                        time: entry.time.clone(),
                    },
                );
                length -= 1;
            }
            None => {
                first_of_version.insert(entry.api_version.clone(), id);
            }
        }
    }
}
