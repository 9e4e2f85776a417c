//! Recording core/v1 Events about objects, the way client-go's `record.EventRecorder` does
//! for a controller, so `kubectl describe` shows what the simulated operator did.
//!
//! Like the real recorder: the event lives in the object's namespace (`default` for a
//! cluster-scoped one), is named `<object>.<unix nanoseconds in hex>`, carries the
//! recorder's component as `source.component` and `reportingComponent`, and leaves
//! `eventTime` unset (the core/v1 path). A repeat of an event — same component, object,
//! type, reason and message — bumps `count` and `lastTimestamp` of the one already stored
//! instead of creating another (the recorder's `EventCorrelator`).

use serde_json::{Value, json};

use crate::kinds::{EVENTS, KINDS};
use crate::meta::{meta_str, now_rfc3339};
use crate::registry::{self, Scope};
use crate::store::Store;

/// `corev1.EventTypeNormal` / `EventTypeWarning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// A recorder for one component, writing as one field manager.
pub struct Recorder<'a> {
    pub store: &'a Store,
    /// `source.component`, e.g. `nodepool-controller`.
    pub component: &'a str,
    /// The field manager of the writes (the controller binary's user agent).
    pub manager: &'a str,
}

/// `ObjectReference` of `obj` as `reference.GetReference` builds it.
fn reference(obj: &Value) -> Value {
    let mut r = serde_json::Map::new();
    for (field, value) in [
        ("kind", obj.get("kind").and_then(Value::as_str)),
        ("namespace", meta_str(obj, "namespace")),
        ("name", meta_str(obj, "name")),
        ("uid", meta_str(obj, "uid")),
        ("apiVersion", obj.get("apiVersion").and_then(Value::as_str)),
        ("resourceVersion", meta_str(obj, "resourceVersion")),
    ] {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            r.insert(field.into(), json!(v));
        }
    }
    Value::Object(r)
}

/// Whether `event` is the same occurrence as the one described (the correlator's key, which
/// ignores the object's resourceVersion).
fn same(
    event: &Value,
    involved: &Value,
    component: &str,
    type_: &str,
    reason: &str,
    message: &str,
) -> bool {
    let io = |e: &Value, f: &str| e.get(f).cloned();
    ["kind", "namespace", "name", "uid", "apiVersion"]
        .iter()
        .all(|f| event.get("involvedObject").and_then(|e| io(e, f)) == io(involved, f))
        && event.pointer("/source/component").and_then(Value::as_str) == Some(component)
        && event["type"] == type_
        && event["reason"] == reason
        && event["message"] == message
}

impl Recorder<'_> {
    /// Records `reason`/`message` about `obj`. Failures (e.g. a namespace being deleted) are
    /// logged and otherwise ignored, as a recorder's are.
    pub fn event(&self, obj: &Value, type_: EventType, reason: &str, message: &str) {
        if let Err(e) = self.write(obj, type_.as_str(), reason, message) {
            tracing::debug!(error = %e, reason, "event not recorded");
        }
    }

    fn write(
        &self,
        obj: &Value,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> crate::error::ApiResult<()> {
        let involved = reference(obj);
        let ns = meta_str(obj, "namespace")
            .filter(|n| !n.is_empty())
            .unwrap_or("default");
        let now = now_rfc3339();
        let (events, _) = self.store.list(EVENTS, Some(ns));
        if let Some(existing) = events
            .iter()
            .find(|e| same(e, &involved, self.component, type_, reason, message))
        {
            let name = meta_str(existing, "name").unwrap_or_default();
            self.store.update(EVENTS, ns, name, false, |cur| {
                let mut next = cur.clone();
                let count = cur.get("count").and_then(Value::as_i64).unwrap_or(1);
                next["count"] = json!(count + 1);
                next["lastTimestamp"] = json!(now);
                registry::prepare_update(EVENTS, cur, next, Scope::Main, self.manager)
            })?;
            return Ok(());
        }
        let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        let name = format!("{}.{nanos:x}", meta_str(obj, "name").unwrap_or_default());
        let event = json!({
            "apiVersion": KINDS[EVENTS].api_version(), "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": involved,
            "reason": reason, "message": message,
            "source": {"component": self.component},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "type": type_,
            "eventTime": null,
            "reportingComponent": self.component, "reportingInstance": "",
        });
        let event = registry::prepare_create(EVENTS, ns, event, self.manager)?;
        self.store.create(EVENTS, ns, event, false)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::NAMESPACES;

    #[test]
    fn repeats_are_counted() {
        let store = Store::new(100);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c"}});
        let ns = registry::prepare_create(NAMESPACES, "", ns, "t").unwrap();
        store.create(NAMESPACES, "", ns, false).unwrap();
        let obj = json!({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "NodePool",
            "metadata": {"name": "np", "namespace": "c", "uid": "u", "resourceVersion": "3"}});
        let rec = Recorder {
            store: &store,
            component: "nodepool-controller",
            manager: "hypershift-operator",
        };
        rec.event(&obj, EventType::Warning, "ReconcileError", "boom");
        rec.event(&obj, EventType::Warning, "ReconcileError", "boom");
        rec.event(&obj, EventType::Normal, "AsExpected", "fine");
        let (events, _) = store.list(EVENTS, Some("c"));
        assert_eq!(events.len(), 2);
        let first = &events[0];
        assert_eq!(first["count"], 2);
        assert_eq!(first["involvedObject"]["uid"], "u");
        assert_eq!(first["source"]["component"], "nodepool-controller");
        assert!(first["eventTime"].is_null());
        assert!(
            meta_str(first, "name").is_some_and(|n| n.starts_with("np.")),
            "{first}"
        );
    }
}
