//! The object store: every served kind as JSON, one global resourceVersion counter, and a
//! bounded history of watch events.
//!
//! All mutation goes through [`Store::create`], [`Store::modify`] and [`Store::delete`] under
//! one mutex, so resourceVersion order, the event history and the broadcast to watchers always
//! agree. No lock is held across an `.await`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast};

use crate::error::{ApiError, ApiResult};
use crate::kinds::{KINDS, NAMESPACES, ResourceDef, ResourceId};
use crate::meta::{self, finalizers, is_deleting, meta_str, metadata_mut, now_rfc3339};
use crate::validate;

/// Kind of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in history and broadcast to watchers.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub resource: ResourceId,
    pub namespace: String,
    pub type_: EventType,
    pub object: Value,
}

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything but `status` (for kinds with a status subresource).
    Main,
    /// Only `status`.
    Status,
}

/// The outcome of a write.
#[derive(Debug, Clone)]
pub struct Written {
    pub object: Value,
    pub created: bool,
}

type Key = (ResourceId, String, String);

struct State {
    rv: u64,
    objects: BTreeMap<Key, Value>,
    history: VecDeque<Arc<Event>>,
    /// Watches may resume from any resourceVersion >= this; older ones get 410 Expired.
    floor: u64,
}

/// Shared object store.
pub struct Store {
    state: Mutex<State>,
    history_limit: usize,
    events: broadcast::Sender<Arc<Event>>,
    /// Wakes the simulated operator after every committed change.
    pub(crate) changed: Arc<Notify>,
}

/// What a new watch starts from: events already missed (history or synthetic ADDEDs) and a
/// live receiver positioned right after them.
pub struct Subscription {
    pub backlog: Vec<Arc<Event>>,
    pub receiver: broadcast::Receiver<Arc<Event>>,
    pub start_rv: u64,
}

impl Store {
    /// An empty store keeping the last `history_limit` events for watch resumption.
    pub fn new(history_limit: usize) -> Self {
        let (events, _) = broadcast::channel(history_limit.max(16));
        Self {
            state: Mutex::new(State {
                rv: 0,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                floor: 0,
            }),
            history_limit: history_limit.max(1),
            events,
            changed: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (every write is a single
        // insert/remove), so poisoning is not a reason to stop serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    pub fn get(&self, res: ResourceId, ns: &str, name: &str) -> ApiResult<Value> {
        let st = self.lock();
        st.objects
            .get(&(res, ns.to_owned(), name.to_owned()))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&KINDS[res], name))
    }

    /// Objects of `res` (in `ns`, or everywhere when `None`) in key order, and the list's
    /// resourceVersion.
    pub fn list(&self, res: ResourceId, ns: Option<&str>) -> (Vec<Value>, u64) {
        let st = self.lock();
        let items = st
            .objects
            .iter()
            .filter(|((r, n, _), _)| *r == res && ns.is_none_or(|ns| ns == n))
            .map(|(_, v)| v.clone())
            .collect();
        (items, st.rv)
    }

    /// Every object, for the admin dump.
    pub fn dump(&self) -> Vec<Value> {
        self.lock().objects.values().cloned().collect()
    }

    /// Creates an object; `namespace` must exist for namespaced kinds.
    pub fn create(&self, res: ResourceId, ns: &str, mut obj: Value) -> ApiResult<Value> {
        let def = &KINDS[res];
        let mut st = self.lock();
        check_namespace(&st, def, ns)?;
        let name = resolve_name(&mut obj)?;
        if let Some(cause) = validate::name(&name) {
            return Err(ApiError::invalid(def, &name, &[cause]));
        }
        let key = (res, ns.to_owned(), name.clone());
        if st.objects.contains_key(&key) {
            return Err(ApiError::already_exists(def, &name));
        }
        prepare_new(def, ns, &name, &mut obj);
        if let Some(validate) = def.validate {
            let causes = validate(&obj);
            if !causes.is_empty() {
                return Err(ApiError::invalid(def, &name, &causes));
            }
        }
        st.rv += 1;
        set_rv(&mut obj, st.rv);
        st.objects.insert(key, obj.clone());
        self.emit(&mut st, res, ns, EventType::Added, obj.clone());
        Ok(obj)
    }

    /// Read-modify-write of one object under the lock. `f` gets the current object (or
    /// `None`) and returns the desired one; with `create_missing`, a desired object for a
    /// missing key is created (server-side apply). The scope decides which parts of the
    /// desired object are taken; a `metadata.resourceVersion` in it is a precondition.
    pub fn modify(
        &self,
        res: ResourceId,
        ns: &str,
        name: &str,
        scope: Scope,
        create_missing: bool,
        f: impl FnOnce(Option<&Value>) -> ApiResult<Value>,
    ) -> ApiResult<Written> {
        let def = &KINDS[res];
        let mut st = self.lock();
        let key = (res, ns.to_owned(), name.to_owned());
        let Some(current) = st.objects.get(&key).cloned() else {
            if !create_missing || scope == Scope::Status {
                return Err(ApiError::not_found(def, name));
            }
            let mut desired = f(None)?;
            metadata_mut(&mut desired).insert("name".into(), json!(name));
            metadata_mut(&mut desired).remove("resourceVersion");
            drop(st);
            return self.create(res, ns, desired).map(|object| Written {
                object,
                created: true,
            });
        };
        let desired = f(Some(&current))?;
        if let Some(rv) = meta_str(&desired, "resourceVersion").filter(|rv| !rv.is_empty())
            && Some(rv) != meta_str(&current, "resourceVersion")
        {
            return Err(ApiError::conflict(def, name));
        }
        if let Some(body_name) = meta_str(&desired, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let mut next = merge_scoped(def, &current, desired, scope);
        if scope == Scope::Main
            && let Some(validate) = def.validate
        {
            let causes = validate(&next);
            if !causes.is_empty() {
                return Err(ApiError::invalid(def, name, &causes));
            }
        }
        if same_ignoring_rv(&current, &next) {
            return Ok(Written {
                object: current,
                created: false,
            });
        }
        st.rv += 1;
        set_rv(&mut next, st.rv);
        if is_deleting(&next) && finalizers(&next).is_empty() {
            st.objects.remove(&key);
            self.emit(&mut st, res, ns, EventType::Deleted, next.clone());
        } else {
            st.objects.insert(key, next.clone());
            self.emit(&mut st, res, ns, EventType::Modified, next.clone());
        }
        Ok(Written {
            object: next,
            created: false,
        })
    }

    /// Deletes an object: marks it (`deletionTimestamp`) while finalizers remain, removes it
    /// otherwise. Deleting a namespace deletes everything in it; the namespace itself goes
    /// once it is empty (see [`Store::finalize_namespaces`]).
    pub fn delete(&self, res: ResourceId, ns: &str, name: &str) -> ApiResult<Value> {
        let marked = self.delete_one(res, ns, name)?;
        if res != NAMESPACES {
            return Ok(marked);
        }
        let contents: Vec<Key> = {
            let st = self.lock();
            st.objects
                .keys()
                .filter(|(r, n, _)| *r != NAMESPACES && n == name)
                .cloned()
                .collect()
        };
        for (res, ns, obj_name) in contents {
            // Already gone (a racing delete) is fine: the goal is an empty namespace.
            let _ = self.delete_one(res, &ns, &obj_name);
        }
        self.finalize_namespaces();
        Ok(self.get(NAMESPACES, "", name).unwrap_or(marked))
    }

    /// Deletes or marks one object. Namespaces are always only marked (their `kubernetes`
    /// finalizer is released by [`Store::finalize_namespaces`] once they are empty).
    fn delete_one(&self, res: ResourceId, ns: &str, name: &str) -> ApiResult<Value> {
        let def = &KINDS[res];
        let mut st = self.lock();
        let key = (res, ns.to_owned(), name.to_owned());
        let Some(mut obj) = st.objects.get(&key).cloned() else {
            return Err(ApiError::not_found(def, name));
        };
        st.rv += 1;
        let rv = st.rv;
        if finalizers(&obj).is_empty() && res != NAMESPACES {
            st.objects.remove(&key);
            set_rv(&mut obj, rv);
            self.emit(&mut st, res, ns, EventType::Deleted, obj.clone());
            return Ok(obj);
        }
        if is_deleting(&obj) {
            st.rv -= 1; // nothing changes: already marked
            return Ok(obj);
        }
        mark_deleting(&mut obj);
        set_rv(&mut obj, rv);
        st.objects.insert(key, obj.clone());
        self.emit(&mut st, res, ns, EventType::Modified, obj.clone());
        Ok(obj)
    }

    /// Removes terminating namespaces that have become empty. Called after deletions and by
    /// the operator loop (objects with finalizers leave later).
    pub fn finalize_namespaces(&self) {
        let mut st = self.lock();
        let terminating: Vec<String> = st
            .objects
            .iter()
            .filter(|((r, _, _), v)| *r == NAMESPACES && is_deleting(v))
            .map(|((_, _, n), _)| n.clone())
            .collect();
        for ns in terminating {
            let empty = !st
                .objects
                .keys()
                .any(|(r, n, _)| *r != NAMESPACES && *n == ns);
            if !empty {
                continue;
            }
            if let Some(mut obj) = st.objects.remove(&(NAMESPACES, String::new(), ns)) {
                st.rv += 1;
                set_rv(&mut obj, st.rv);
                self.emit(&mut st, NAMESPACES, "", EventType::Deleted, obj);
            }
        }
    }

    /// Starts a watch of `res` after `from` (`None`: current state as synthetic ADDEDs).
    /// Fails with 410 `Expired` when `from` is older than the kept history.
    pub fn subscribe(&self, res: ResourceId, from: Option<u64>) -> ApiResult<Subscription> {
        let st = self.lock();
        let receiver = self.events.subscribe();
        let backlog = match from {
            Some(rv) if rv < st.floor => {
                return Err(ApiError::expired(format!(
                    "too old resource version: {rv} ({})",
                    st.floor + 1
                )));
            }
            Some(rv) => st
                .history
                .iter()
                .filter(|e| e.rv > rv && e.resource == res)
                .cloned()
                .collect(),
            None => st
                .objects
                .iter()
                .filter(|((r, _, _), _)| *r == res)
                .map(|((r, ns, _), obj)| {
                    Arc::new(Event {
                        rv: st.rv,
                        resource: *r,
                        namespace: ns.clone(),
                        type_: EventType::Added,
                        object: obj.clone(),
                    })
                })
                .collect(),
        };
        Ok(Subscription {
            backlog,
            receiver,
            start_rv: from.unwrap_or(st.rv),
        })
    }

    fn emit(
        &self,
        st: &mut State,
        resource: ResourceId,
        ns: &str,
        type_: EventType,
        object: Value,
    ) {
        let event = Arc::new(Event {
            rv: st.rv,
            resource,
            namespace: ns.to_owned(),
            type_,
            object,
        });
        st.history.push_back(event.clone());
        while st.history.len() > self.history_limit {
            if let Some(old) = st.history.pop_front() {
                st.floor = old.rv;
            }
        }
        // No receivers is normal (nobody watching).
        let _ = self.events.send(event);
        self.changed.notify_one();
    }
}

fn check_namespace(st: &State, def: &ResourceDef, ns: &str) -> ApiResult<()> {
    if !def.namespaced {
        return Ok(());
    }
    match st.objects.get(&(NAMESPACES, String::new(), ns.to_owned())) {
        None => Err(ApiError::namespace_not_found(ns)),
        Some(obj) if is_deleting(obj) => Err(ApiError::namespace_terminating(ns)),
        Some(_) => Ok(()),
    }
}

/// `metadata.name`, or one generated from `metadata.generateName`.
fn resolve_name(obj: &mut Value) -> ApiResult<String> {
    if let Some(name) = meta_str(obj, "name").filter(|n| !n.is_empty()) {
        return Ok(name.to_owned());
    }
    if let Some(prefix) = meta_str(obj, "generateName").filter(|n| !n.is_empty()) {
        let suffix: String = uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .chars()
            .take(5)
            .collect();
        let name = format!("{prefix}{suffix}");
        metadata_mut(obj).insert("name".into(), json!(name));
        return Ok(name);
    }
    Err(ApiError::bad_request("name or generateName is required"))
}

/// Fills server-owned metadata of a new object and drops what clients may not set.
fn prepare_new(def: &ResourceDef, ns: &str, name: &str, obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".into(), json!(def.api_version()));
        map.insert("kind".into(), json!(def.kind));
    }
    let meta = metadata_mut(obj);
    meta.insert("name".into(), json!(name));
    if def.namespaced {
        meta.insert("namespace".into(), json!(ns));
    } else {
        meta.remove("namespace");
    }
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    if def.generation {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    if let Some(normalize) = def.normalize {
        normalize(obj);
    }
}

/// The next version of `current` after a write of `desired` in `scope`: server-owned
/// metadata always comes from `current`; the status subresource splits spec from status.
fn merge_scoped(def: &ResourceDef, current: &Value, mut desired: Value, scope: Scope) -> Value {
    let mut next = match scope {
        Scope::Status => {
            let mut next = current.clone();
            if let (Some(map), Some(status)) = (next.as_object_mut(), desired.get_mut("status")) {
                map.insert("status".into(), status.take());
            }
            next
        }
        Scope::Main => {
            if !desired.is_object() {
                desired = json!({});
            }
            if def.status_subresource
                && let Some(map) = desired.as_object_mut()
            {
                match current.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            desired
        }
    };
    if let Some(map) = next.as_object_mut() {
        map.insert("apiVersion".into(), json!(def.api_version()));
        map.insert("kind".into(), json!(def.kind));
    }
    let generation = current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let spec_changed = current.get("spec") != next.get("spec");
    let meta = metadata_mut(&mut next);
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match current.get("metadata").and_then(|m| m.get(field)) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    if def.generation {
        let generation = if spec_changed {
            generation + 1
        } else {
            generation
        };
        meta.insert("generation".into(), json!(generation));
    }
    if let Some(normalize) = def.normalize {
        normalize(&mut next);
    }
    next
}

fn mark_deleting(obj: &mut Value) {
    let meta = metadata_mut(obj);
    meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if let Some(normalize) = obj
        .get("kind")
        .and_then(Value::as_str)
        .and_then(crate::kinds::by_kind)
        .and_then(|r| KINDS[r].normalize)
    {
        normalize(obj);
    }
}

fn set_rv(obj: &mut Value, rv: u64) {
    metadata_mut(obj).insert("resourceVersion".into(), json!(rv.to_string()));
}

fn same_ignoring_rv(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        meta::metadata_mut(&mut v).remove("resourceVersion");
        v
    };
    strip(a) == strip(b)
}
