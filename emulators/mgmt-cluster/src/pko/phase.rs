//! Reconciling and tearing down the objects of one phase, for an ObjectSet's in-process
//! phases and for the hosted-cluster ObjectSetPhase controller alike
//! (`internal/controllers/phase_reconciler.go`): the desired object gets the
//! `package-operator.run/cache` label, the revision annotation and its owner's controller
//! reference; a missing object is created by server-side apply; an existing one is adopted
//! only from a previous revision (collision protection `Prevent`, `IfNoController`, `None`)
//! and then patched; each result is probed.

use serde_json::{Value, json};

use super::client::{Api, gvk_string, object_key, text};
use super::ownership::Ownership;
use super::probes::{Prober, Status};
use super::{CACHE_LABEL, OWNERS_ANNOTATION, REVISION_ANNOTATION};
use crate::meta::{meta_str, metadata_mut};

/// Why a phase could not be reconciled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PhaseError {
    /// Adoption refused (`ObjectNotOwnedByPreviousRevisionError`, `RevisionCollisionError`):
    /// reported as `CollisionDetected`.
    #[error("{0}")]
    Collision(String),
    /// A request failed for another reason: PKO retries without reporting it.
    #[error("{0}")]
    Other(String),
}

/// The owner of a phase's objects and how it marks them.
pub(crate) struct PhaseOwner<'a> {
    pub api: Api<'a>,
    pub ownership: Ownership,
    /// The ObjectSet or ObjectSetPhase.
    pub owner: &'a Value,
    pub revision: i64,
    /// Uids of the previous revisions (ObjectSets and their remote phases) objects may be
    /// adopted from.
    pub previous: &'a [String],
    pub paused: bool,
    /// The owner's namespace, given to objects without one (in-process phases only).
    pub default_namespace: Option<&'a str>,
}

/// What reconciling a phase found: the objects as they are, and the probe failures.
pub(crate) struct PhaseResult {
    pub actual: Vec<Value>,
    /// `<group> <Kind> <ns>/<name>: <messages>` per object not available.
    pub failures: Vec<String>,
}

fn owner_uid(owner: &Value) -> &str {
    meta_str(owner, "uid").unwrap_or_default()
}

fn revision_of(obj: &Value) -> i64 {
    obj.pointer(&format!(
        "/metadata/annotations/{}",
        REVISION_ANNOTATION.replace('/', "~1")
    ))
    .and_then(Value::as_str)
    .and_then(|r| r.parse().ok())
    .unwrap_or(0)
}

fn set_revision(obj: &mut Value, revision: i64) {
    let annotations = metadata_mut(obj)
        .entry("annotations")
        .or_insert_with(|| json!({}));
    if let Some(map) = annotations.as_object_mut() {
        map.insert(REVISION_ANNOTATION.into(), json!(revision.to_string()));
    }
}

/// `recordingProbe.recordForObj`.
pub(crate) fn failure(obj: &Value, messages: &[String]) -> String {
    let group = text(obj, "apiVersion")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    format!(
        "{group} {} {}: {}",
        text(obj, "kind"),
        object_key(obj),
        messages.join(", ")
    )
}

impl PhaseOwner<'_> {
    /// `desiredObject`: the phase's object as PKO applies it.
    pub(crate) fn desired(&self, object: &Value) -> Value {
        let mut desired = object.clone();
        let meta = metadata_mut(&mut desired);
        if let Some(ns) = self.default_namespace
            && meta
                .get("namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            meta.insert("namespace".into(), json!(ns));
        }
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(map) = labels.as_object_mut() {
            map.insert(CACHE_LABEL.into(), json!("True"));
        }
        set_revision(&mut desired, self.revision);
        desired
    }

    /// The dry-run preflight of each desired object (`preflight/dryrun.go`): what the API
    /// server would refuse, as `(object, error)`.
    pub(crate) fn dry_run(&self, desired: &[Value]) -> Vec<(Value, String)> {
        let mut refused = Vec::new();
        for obj in desired {
            if let Err(why) = self.api.resource(obj) {
                refused.push((obj.clone(), why));
                continue;
            }
            let mut candidate = obj.clone();
            self.ownership.set_controller(self.owner, &mut candidate);
            if let Err(e) = self.api.apply(&candidate, true) {
                refused.push((obj.clone(), e.message));
            }
        }
        refused
    }

    /// Reconciles every desired object and probes it.
    pub(crate) fn reconcile(
        &self,
        desired: &[Value],
        prober: &Prober<'_>,
        collision: impl Fn(usize) -> String,
    ) -> Result<PhaseResult, PhaseError> {
        let mut result = PhaseResult {
            actual: Vec::new(),
            failures: Vec::new(),
        };
        for (i, obj) in desired.iter().enumerate() {
            let actual = match self.reconcile_object(obj, &collision(i))? {
                Some(actual) => actual,
                None => {
                    result
                        .failures
                        .push(failure(obj, &["not found".to_owned()]));
                    continue;
                }
            };
            let outcome = prober.probe(&actual);
            if outcome.status != Status::True {
                result.failures.push(failure(&actual, &outcome.messages));
            }
            result.actual.push(actual);
        }
        Ok(result)
    }

    fn reconcile_object(
        &self,
        desired: &Value,
        protection: &str,
    ) -> Result<Option<Value>, PhaseError> {
        let mut desired = desired.clone();
        self.ownership.set_controller(self.owner, &mut desired);
        let Some(current) = self.api.get(&desired) else {
            if self.paused {
                return Ok(None);
            }
            return self
                .api
                .apply(&desired, false)
                .map(|_| Some(desired))
                .map_err(|e| PhaseError::Other(format!("creating: {}", e.message)));
        };
        if self.paused {
            return Ok(Some(current));
        }
        let uid = owner_uid(self.owner);
        let mut updated = current.clone();
        if !self.ownership.is_controller(uid, &current) {
            if revision_of(&current) > self.revision {
                // A newer revision has it.
                return Ok(Some(current));
            }
            let adopt_anyway = match protection {
                "None" => true,
                "IfNoController" => self.ownership.controller_uid(&current).is_none(),
                _ => false,
            };
            if !adopt_anyway {
                let previous = self
                    .ownership
                    .controller_uid(&current)
                    .is_some_and(|c| self.previous.contains(&c));
                let what = format!("{} {}", gvk_string(&current), object_key(&current));
                if !previous {
                    return Err(PhaseError::Collision(format!(
                        "refusing adoption, object {what} not owned by previous revision"
                    )));
                }
                if revision_of(&current) == self.revision {
                    return Err(PhaseError::Collision(format!(
                        "refusing adoption, revision collision on {what}"
                    )));
                }
            }
            set_revision(&mut updated, self.revision);
            self.ownership.set_controller(self.owner, &mut updated);
        }
        // The patch carries the owner references (or owners annotation) of the adopted object.
        let mut patch = desired;
        match self.ownership {
            Ownership::Native => {
                metadata_mut(&mut patch).insert(
                    "ownerReferences".into(),
                    json!(self.ownership.refs(&updated)),
                );
            }
            Ownership::Annotation => {
                let refs = Value::Array(self.ownership.refs(&updated)).to_string();
                let annotations = metadata_mut(&mut patch)
                    .entry("annotations")
                    .or_insert_with(|| json!({}));
                if let Some(map) = annotations.as_object_mut() {
                    map.insert(OWNERS_ANNOTATION.into(), json!(refs));
                }
            }
        }
        self.api
            .apply(&patch, false)
            .map(Some)
            .map_err(|e| PhaseError::Other(format!("patching object: {}", e.message)))
    }

    /// Tears down a phase's objects (`TeardownPhase`): deletes those it controls, lets go of
    /// those it only owns; true once every object is gone or released.
    pub(crate) fn teardown(&self, desired: &[Value]) -> bool {
        let uid = owner_uid(self.owner);
        let mut done = 0;
        for obj in desired {
            if self.api.resource(obj).is_err() {
                done += 1;
                continue;
            }
            let Some(current) = self.api.get(obj) else {
                done += 1;
                continue;
            };
            if !self.ownership.is_controller(uid, &current) {
                if self.ownership.is_owner(uid, &current) {
                    let released = self.api.update_meta(&current, |next| {
                        self.ownership.remove_owner(uid, next);
                        if let Some(labels) = next
                            .pointer_mut("/metadata/labels")
                            .and_then(Value::as_object_mut)
                        {
                            labels.remove(CACHE_LABEL);
                        }
                    });
                    if let Err(e) = released {
                        tracing::debug!(error = %e, "owner reference not removed");
                        continue;
                    }
                }
                done += 1;
                continue;
            }
            if let Err(e) = self.api.delete(&current) {
                if e.code == 404 {
                    done += 1;
                } else {
                    tracing::debug!(error = %e, "managed object not deleted");
                }
            }
        }
        done == desired.len()
    }

    /// `GetStatusControllerOf`: references of the objects this owner controls.
    pub(crate) fn controller_of(&self, actual: &[Value]) -> Vec<Value> {
        let uid = owner_uid(self.owner);
        actual
            .iter()
            .filter(|o| self.ownership.is_controller(uid, o))
            .map(|o| {
                let group = text(o, "apiVersion")
                    .rsplit_once('/')
                    .map_or("", |(g, _)| g);
                // PKO leaves `version` empty (`controllers.GetStatusControllerOf`).
                let mut r = json!({"kind": text(o, "kind"), "group": group,
                    "name": meta_str(o, "name").unwrap_or_default(), "version": ""});
                if let Some(ns) = meta_str(o, "namespace").filter(|n| !n.is_empty()) {
                    r["namespace"] = json!(ns);
                }
                r
            })
            .collect()
    }
}
