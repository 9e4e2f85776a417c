//! Generic resource storage and the lazy lifecycle of asynchronous operations.
//!
//! Resources are keyed by their lower-cased ARM id (ARM compares ids case-insensitively) and
//! keep the id casing they were created with. Nothing runs in the background: every request
//! first calls [`Store::settle`], which completes the operations whose deadline has passed.
//! That keeps the emulator deterministic under `LatencyModel::Zero` and free of timers.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::config::QuotaConfig;
use crate::directory::Directory;
use crate::errors::ArmError;
use crate::faults::OpFailure;
use crate::quota::Limits;
use crate::types::{Etag, ResourceType, cascade};

/// A stored resource.
#[derive(Clone, Debug)]
pub struct StoredResource {
    /// Canonical id, casing as created.
    pub id: String,
    pub parent_key: String,
    pub rtype: &'static ResourceType,
    pub name: String,
    pub sub: String,
    pub rg: String,
    pub location: Option<String>,
    pub tags: Option<Value>,
    /// Includes `provisioningState`.
    pub properties: Map<String, Value>,
    /// Other top-level fields the caller sent (`sku`, `zones`, `kind`, `identity`, …).
    pub extra: Map<String, Value>,
    pub etag: Option<String>,
    pub pending: Option<Pending>,
    pub created: OffsetDateTime,
}

/// An operation in flight on a resource.
#[derive(Clone, Debug)]
pub struct Pending {
    pub op_id: String,
    pub kind: OpKind,
    pub done_at: OffsetDateTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Write,
    Delete,
}

/// An operation status resource, answered from its timestamps.
#[derive(Clone, Debug)]
pub struct Operation {
    pub id: String,
    pub sub: String,
    pub resource_key: String,
    pub kind: OpKind,
    pub rtype: &'static ResourceType,
    pub start: OffsetDateTime,
    pub done_at: OffsetDateTime,
    /// Path (no host) of the `Azure-AsyncOperation` URL, used as the status body's `id`.
    pub status_path: Option<String>,
    /// Absolute `Location` URL, repeated on 202 answers.
    pub result_url: Option<String>,
    pub retry_after: Option<u64>,
    /// Set when the operation is to end `Failed` (an injected failure after acceptance).
    pub failure: Option<OpFailure>,
    /// Set when the operation ended `Failed` for a reason found only as it completed (a
    /// resource-group delete some of whose resources were still in use elsewhere): the error
    /// its `Location` URL answers, status included.
    pub error: Option<ArmError>,
}

impl Operation {
    pub fn done(&self, now: OffsetDateTime) -> bool {
        now >= self.done_at
    }
}

/// A role assignment. Kept apart from the resources because it hangs on any scope (a
/// subscription, a group or a resource) rather than in a resource group, but keyed the same
/// way, by lower-cased id, so deleting a scope's tree takes its assignments with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAssignment {
    /// Canonical id: `{scope}/providers/Microsoft.Authorization/roleAssignments/{name}`.
    pub id: String,
    pub name: String,
    pub sub: String,
    /// The scope's canonical id.
    pub scope: String,
    /// `/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{guid}`.
    pub role_definition_id: String,
    pub principal_id: String,
    /// As sent, or as the directory knows the principal when it was omitted.
    pub principal_type: String,
    pub description: Option<String>,
    pub condition: Option<String>,
    pub condition_version: Option<String>,
    pub delegated_managed_identity_resource_id: Option<String>,
    pub created_on: OffsetDateTime,
    pub updated_on: OffsetDateTime,
    /// Object ids of the callers.
    pub created_by: String,
    pub updated_by: String,
}

/// All resources, role assignments and operations, and the subscriptions' vCPU limits (kept
/// here, under the same lock as the VMs, so a VM PUT checks its quota and is stored in one
/// step), and the Entra directories (app registrations and service principals, kept here so
/// Graph, the token endpoint and ARM's principal lookup read one state under one lock).
#[derive(Default)]
pub struct Store {
    resources: BTreeMap<String, StoredResource>,
    assignments: BTreeMap<String, StoredAssignment>,
    ops: HashMap<String, Operation>,
    /// Parent key → end of the write in flight under it (`exclusive_parent_writes` types).
    exclusive_writes: HashMap<String, OffsetDateTime>,
    quota: Limits,
    directory: Directory,
}

pub fn new_etag(kind: Etag) -> Option<String> {
    let g = uuid::Uuid::new_v4();
    match kind {
        Etag::None => None,
        Etag::Weak => Some(format!("W/\"{g}\"")),
        Etag::Plain => Some(g.to_string()),
    }
}

pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl Store {
    /// An empty store whose subscriptions start with the `quota` limits.
    pub fn new(quota: QuotaConfig) -> Self {
        Self {
            quota: Limits::new(quota),
            ..Self::default()
        }
    }

    /// Empties the store and forgets the limits set; the configured ones stay.
    pub fn clear(&mut self) {
        self.resources.clear();
        self.assignments.clear();
        self.ops.clear();
        self.exclusive_writes.clear();
        self.quota.clear();
        self.directory.clear();
    }

    pub(crate) fn directory(&self) -> &Directory {
        &self.directory
    }

    pub(crate) fn directory_mut(&mut self) -> &mut Directory {
        &mut self.directory
    }

    pub fn quota(&self) -> &Limits {
        &self.quota
    }

    pub fn quota_mut(&mut self) -> &mut Limits {
        &mut self.quota
    }

    /// Claims the one write slot under `parent_key` until `until`; `false` when another write
    /// still holds it.
    pub fn claim_exclusive_write(
        &mut self,
        parent_key: &str,
        now: OffsetDateTime,
        until: OffsetDateTime,
    ) -> bool {
        if self
            .exclusive_writes
            .get(parent_key)
            .is_some_and(|end| *end > now)
        {
            return false;
        }
        self.exclusive_writes.insert(parent_key.to_owned(), until);
        true
    }

    pub fn assignment(&self, key: &str) -> Option<&StoredAssignment> {
        self.assignments.get(key)
    }

    pub fn insert_assignment(&mut self, a: StoredAssignment) {
        self.assignments.insert(a.id.to_ascii_lowercase(), a);
    }

    pub fn remove_assignment(&mut self, key: &str) -> Option<StoredAssignment> {
        self.assignments.remove(key)
    }

    /// Every role assignment, ordered by id.
    pub fn assignments(&self) -> impl Iterator<Item = &StoredAssignment> {
        self.assignments.values()
    }

    pub fn get(&self, key: &str) -> Option<&StoredResource> {
        self.resources.get(key)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut StoredResource> {
        self.resources.get_mut(key)
    }

    pub fn insert(&mut self, r: StoredResource) {
        self.resources.insert(r.id.to_ascii_lowercase(), r);
    }

    pub fn all(&self) -> impl Iterator<Item = &StoredResource> {
        self.resources.values()
    }

    /// The resource and everything nested under it (ids are hierarchical).
    pub fn descendants<'a>(&'a self, key: &str) -> impl Iterator<Item = &'a StoredResource> + 'a {
        let prefix = format!("{key}/");
        self.resources
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
    }

    pub fn children_of<'a>(
        &'a self,
        parent_key: &'a str,
    ) -> impl Iterator<Item = &'a StoredResource> + 'a {
        self.descendants(parent_key)
            .filter(move |r| r.parent_key == parent_key)
    }

    /// Removes a resource and its descendants, and the role assignments on any of them (ARM
    /// deletes a scope's assignments with the scope); returns how many resources were removed.
    pub fn remove_tree(&mut self, key: &str) -> usize {
        let prefix = format!("{key}/");
        let doomed_assignments: Vec<String> = self
            .assignments
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &doomed_assignments {
            self.assignments.remove(k);
        }
        let doomed: Vec<String> = self
            .resources
            .range(key.to_owned()..)
            .take_while(|(k, _)| k.as_str() == key || k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &doomed {
            self.resources.remove(k);
        }
        doomed.len()
    }

    /// The stored resource an id names: the resource itself, or the one holding it inline
    /// (`…/virtualNetworks/v/subnets/s` → the VNet, `…/loadBalancers/l/backendAddressPools/b`
    /// → the load balancer). `None` when neither exists.
    pub fn resolve(&self, id: &str) -> Option<&StoredResource> {
        let key = id.to_ascii_lowercase();
        if let Some(r) = self.resources.get(&key) {
            return Some(r);
        }
        let (head, name) = key.rsplit_once('/')?;
        let (parent, array) = head.rsplit_once('/')?;
        let owner = self.resources.get(parent)?;
        let holds = owner
            .properties
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(array))
            .and_then(|(_, v)| v.as_array())
            .is_some_and(|items| {
                items.iter().any(|i| {
                    i.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
                })
            });
        holds.then_some(owner)
    }

    pub fn add_op(&mut self, op: Operation) {
        self.ops.insert(op.id.to_ascii_lowercase(), op);
    }

    pub fn op(&self, id: &str) -> Option<&Operation> {
        self.ops.get(&id.to_ascii_lowercase())
    }

    pub fn op_mut(&mut self, id: &str) -> Option<&mut Operation> {
        self.ops.get_mut(&id.to_ascii_lowercase())
    }

    /// Completes every operation whose deadline has passed, earliest first, so that a delete
    /// finishing before another one is seen by it (a VNet group gone before the NSG group
    /// that held its NSG). A failed operation leaves its resource in place with
    /// `provisioningState: Failed`, as ARM's RPC asks of a resource provider whose PUT or
    /// DELETE fails after acceptance.
    pub fn settle(&mut self, now: OffsetDateTime) {
        let mut due: Vec<(OffsetDateTime, String, OpKind, String)> = self
            .resources
            .iter()
            .filter_map(|(key, r)| {
                let p = r.pending.as_ref().filter(|p| p.done_at <= now)?;
                Some((p.done_at, key.clone(), p.kind, p.op_id.clone()))
            })
            .collect();
        due.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        for (_, key, kind, op_id) in due {
            // An earlier completion may have taken the resource with it.
            let current = self
                .resources
                .get(&key)
                .and_then(|r| r.pending.as_ref())
                .is_some_and(|p| p.op_id == op_id);
            if !current {
                continue;
            }
            let fails = self.op(&op_id).is_some_and(|o| o.failure.is_some());
            let state = match kind {
                _ if fails => "Failed",
                OpKind::Write => "Succeeded",
                OpKind::Delete => {
                    cascade::finish_delete(self, &key, &op_id);
                    continue;
                }
            };
            if let Some(r) = self.resources.get_mut(&key) {
                r.pending = None;
                r.properties
                    .insert("provisioningState".into(), json!(state));
            }
        }
    }

    /// The resource as ARM returns it.
    pub fn render(&self, r: &StoredResource) -> Value {
        let mut obj = r.extra.clone();
        obj.insert("id".into(), json!(r.id));
        obj.insert("name".into(), json!(r.name));
        obj.insert("type".into(), json!(r.rtype.full_name()));
        if let Some(loc) = &r.location {
            obj.insert("location".into(), json!(loc));
        }
        if let Some(tags) = &r.tags {
            obj.insert("tags".into(), tags.clone());
        }
        if let Some(etag) = &r.etag {
            obj.insert("etag".into(), json!(etag));
        }
        let mut props = r.properties.clone();
        let state = props
            .get("provisioningState")
            .cloned()
            .unwrap_or(json!("Succeeded"));
        for array in r.rtype.inline_children {
            if let Some(items) = props.get_mut(*array).and_then(Value::as_array_mut) {
                for item in items {
                    if let Some(p) = item.get_mut("properties").and_then(Value::as_object_mut) {
                        p.insert("provisioningState".into(), state.clone());
                    }
                }
            }
        }
        if r.rtype
            .type_path
            .eq_ignore_ascii_case("privateDnsZones/virtualNetworkLinks")
        {
            let link_state = if r.pending.is_some() {
                "InProgress"
            } else {
                "Completed"
            };
            props.insert("virtualNetworkLinkState".into(), json!(link_state));
        }
        if r.rtype.type_path.eq_ignore_ascii_case("privateDnsZones") {
            let links = self
                .children_of(&r.id.to_ascii_lowercase())
                .filter(|c| c.rtype.last_segment() == "virtualNetworkLinks")
                .count();
            props.insert("numberOfVirtualNetworkLinks".into(), json!(links));
        }
        obj.insert("properties".into(), Value::Object(props));
        if let Some(decorate) = r.rtype.decorate {
            decorate(self, r, &mut obj);
        }
        Value::Object(obj)
    }

    /// The short form ARM's `/resources` inventory lists.
    pub fn render_inventory(&self, r: &StoredResource) -> Value {
        let mut obj = Map::new();
        obj.insert("id".into(), json!(r.id));
        obj.insert("name".into(), json!(r.name));
        obj.insert("type".into(), json!(r.rtype.full_name()));
        if let Some(loc) = &r.location {
            obj.insert("location".into(), json!(loc));
        }
        if let Some(tags) = &r.tags {
            obj.insert("tags".into(), tags.clone());
        }
        for k in ["sku", "kind", "managedBy"] {
            if let Some(v) = r.extra.get(k) {
                obj.insert(k.into(), v.clone());
            }
        }
        // What the resource provider derives (a disk's `managedBy`) shows here too.
        if r.rtype.decorate.is_some()
            && let Some(v) = self.render(r).get("managedBy")
        {
            obj.insert("managedBy".into(), v.clone());
        }
        Value::Object(obj)
    }

    /// Every stored resource, for admin assertions, with its internal state.
    pub fn dump(&self, sub: Option<&str>) -> Vec<Value> {
        self.resources
            .values()
            .filter(|r| sub.is_none_or(|s| r.sub.eq_ignore_ascii_case(s)))
            .map(|r| {
                let mut v = self.render(r);
                v["pendingOperation"] = match &r.pending {
                    Some(p) => json!({
                        "id": p.op_id,
                        "kind": format!("{:?}", p.kind),
                        "doneAt": rfc3339(p.done_at),
                    }),
                    None => Value::Null,
                };
                v
            })
            .collect()
    }
}
