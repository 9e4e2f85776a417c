//! The object store: every served kind as JSON, one global resourceVersion counter, and a
//! bounded history of watch events.
//!
//! All mutation goes through [`Store::create`], [`Store::update`] and [`Store::delete`] under
//! one mutex, so resourceVersion order, the event history and the broadcast to watchers always
//! agree. No lock is held across an `.await`.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast};

use crate::error::{ApiError, ApiResult};
use crate::kinds::{KINDS, NAMESPACES, ResourceDef, ResourceId};
use crate::meta::{finalizers, is_deleting, meta_str, metadata_mut, now_rfc3339};

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
        Self::with_notify(history_limit, Arc::new(Notify::new()))
    }

    /// An empty store that wakes `changed` after every change: a hosted cluster's store
    /// wakes the management cluster's operator, which runs that cluster's controllers.
    pub fn with_notify(history_limit: usize, changed: Arc<Notify>) -> Self {
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
            changed,
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

    /// The uid of every object, and copies of only those `keep` selects: one pass under the
    /// lock, cloning what the caller needs rather than the whole store (events included).
    pub fn uids_and(&self, keep: impl Fn(&Value) -> bool) -> (HashSet<String>, Vec<Value>) {
        let st = self.lock();
        let mut uids = HashSet::with_capacity(st.objects.len());
        let mut kept = Vec::new();
        for v in st.objects.values() {
            if let Some(uid) = v.pointer("/metadata/uid").and_then(Value::as_str) {
                uids.insert(uid.to_owned());
            }
            if keep(v) {
                kept.push(v.clone());
            }
        }
        (uids, kept)
    }

    /// Every object, for the admin dump.
    pub fn dump(&self) -> Vec<Value> {
        self.lock().objects.values().cloned().collect()
    }

    /// Stores a new object prepared by [`crate::registry::prepare_create`]; its namespace must
    /// exist. With `dry_run` nothing is stored and the object comes back without a
    /// resourceVersion, as kube-apiserver's dry-run storage returns it.
    pub fn create(&self, res: ResourceId, ns: &str, obj: Value, dry_run: bool) -> ApiResult<Value> {
        let mut st = self.lock();
        self.insert_new(&mut st, res, ns, obj, dry_run)
    }

    fn insert_new(
        &self,
        st: &mut State,
        res: ResourceId,
        ns: &str,
        mut obj: Value,
        dry_run: bool,
    ) -> ApiResult<Value> {
        let def = &KINDS[res];
        check_namespace(st, def, ns)?;
        let name = meta_str(&obj, "name").unwrap_or_default().to_owned();
        let key = (res, ns.to_owned(), name.clone());
        if st.objects.contains_key(&key) {
            return Err(ApiError::already_exists(def, &name));
        }
        if dry_run {
            metadata_mut(&mut obj).remove("resourceVersion");
            return Ok(obj);
        }
        st.rv += 1;
        set_rv(&mut obj, st.rv);
        st.objects.insert(key, obj.clone());
        self.emit(st, res, ns, EventType::Added, obj.clone());
        Ok(obj)
    }

    /// Read-modify-write of one existing object under the lock: `prepare` gets the stored
    /// object and returns the next one, complete (see [`crate::registry`]). A
    /// `metadata.resourceVersion` in the next object is a precondition. Nothing is written
    /// when the object does not change, or with `dry_run`.
    pub fn update(
        &self,
        res: ResourceId,
        ns: &str,
        name: &str,
        dry_run: bool,
        prepare: impl FnOnce(&Value) -> ApiResult<Value>,
    ) -> ApiResult<Written> {
        self.write(res, ns, name, dry_run, false, |cur| match cur {
            Some(cur) => prepare(cur),
            None => Err(ApiError::not_found(&KINDS[res], name)),
        })
    }

    /// Like [`Store::update`], but a missing object is created from `prepare(None)`
    /// (server-side apply).
    pub fn upsert(
        &self,
        res: ResourceId,
        ns: &str,
        name: &str,
        dry_run: bool,
        prepare: impl FnOnce(Option<&Value>) -> ApiResult<Value>,
    ) -> ApiResult<Written> {
        self.write(res, ns, name, dry_run, true, prepare)
    }

    fn write(
        &self,
        res: ResourceId,
        ns: &str,
        name: &str,
        dry_run: bool,
        create_missing: bool,
        prepare: impl FnOnce(Option<&Value>) -> ApiResult<Value>,
    ) -> ApiResult<Written> {
        let def = &KINDS[res];
        let mut st = self.lock();
        let key = (res, ns.to_owned(), name.to_owned());
        let Some(current) = st.objects.get(&key).cloned() else {
            if !create_missing {
                return Err(ApiError::not_found(def, name));
            }
            let desired = prepare(None)?;
            let object = self.insert_new(&mut st, res, ns, desired, dry_run)?;
            return Ok(Written {
                object,
                created: true,
            });
        };
        let mut next = prepare(Some(&current))?;
        let current_rv = meta_str(&current, "resourceVersion")
            .unwrap_or_default()
            .to_owned();
        if let Some(rv) = meta_str(&next, "resourceVersion").filter(|rv| !rv.is_empty())
            && rv != current_rv
        {
            return Err(ApiError::conflict(def, name));
        }
        metadata_mut(&mut next).insert("resourceVersion".into(), json!(current_rv));
        if next == current || dry_run {
            return Ok(Written {
                object: next,
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
    pub fn delete(&self, res: ResourceId, ns: &str, name: &str, dry_run: bool) -> ApiResult<Value> {
        if dry_run {
            return self.delete_preview(res, ns, name);
        }
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

    /// What [`Store::delete`] would answer, changing nothing (dry run): the object as it
    /// would be deleted, or marked while finalizers hold it.
    fn delete_preview(&self, res: ResourceId, ns: &str, name: &str) -> ApiResult<Value> {
        let mut obj = self.get(res, ns, name)?;
        if (finalizers(&obj).is_empty() && res != NAMESPACES) || is_deleting(&obj) {
            return Ok(obj);
        }
        mark_deleting(&mut obj);
        Ok(obj)
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
