//! Availability probes as Package Operator evaluates them: `internal/probing/parse.go` builds
//! them, boxcutter's `probing` package (`condition.go`, `fieldsequal.go`,
//! `observedgeneration.go`, `selectors.go`, `probe.go`) runs them. An object no probe's
//! selector matches passes; a probe's result is True, False or Unknown with messages, and
//! `And` combines results (Unknown wins over False, False over True).
//!
//! CEL probes are not evaluated: they report Unknown, so an object with one never becomes
//! available here (stricter than PKO, which would evaluate the rule).

use serde_json::Value;

use crate::label_selector;

/// A probe's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    True,
    False,
    Unknown,
}

/// A probe's verdict and what it says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub status: Status,
    pub messages: Vec<String>,
}

impl Outcome {
    fn new(status: Status, message: String) -> Self {
        Self {
            status,
            messages: vec![message],
        }
    }
}

/// The probes of an ObjectSet (`spec.availabilityProbes`), parsed once per reconcile.
pub(crate) struct Prober<'a> {
    probes: Vec<&'a Value>,
}

impl<'a> Prober<'a> {
    pub(crate) fn parse(availability_probes: Option<&'a Value>) -> Self {
        Self {
            probes: availability_probes
                .and_then(Value::as_array)
                .map(|l| l.iter().collect())
                .unwrap_or_default(),
        }
    }

    /// `probing.And` over every `ObjectSetProbe`.
    pub(crate) fn probe(&self, obj: &Value) -> Outcome {
        and(self.probes.iter().map(|p| object_set_probe(p, obj)))
    }
}

/// One `ObjectSetProbe`: its selector (kind, then labels) wrapping the observed-generation
/// check and its probes.
fn object_set_probe(spec: &Value, obj: &Value) -> Outcome {
    let pass = Outcome {
        status: Status::True,
        messages: Vec::new(),
    };
    if let Some(kind) = spec.pointer("/selector/kind") {
        let group = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(g, _)| g);
        let obj_kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        if kind
            .get("group")
            .and_then(Value::as_str)
            .unwrap_or_default()
            != group
            || kind.get("kind").and_then(Value::as_str).unwrap_or_default() != obj_kind
        {
            return pass;
        }
    }
    if let Some(selector) = spec.pointer("/selector/selector") {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        if !label_selector::matches(Some(selector), labels) {
            return pass;
        }
    }
    let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
    if let Some(observed) = obj
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        && Some(observed) != generation.or(Some(0))
    {
        return Outcome::new(Status::Unknown, ".status outdated".into());
    }
    let probes = spec.get("probes").and_then(Value::as_array);
    and(probes
        .into_iter()
        .flatten()
        .filter_map(|p| one_probe(p, obj)))
}

/// A `Probe`: the first of `fieldsEqual`, `condition`, `cel` it has (none: skipped).
fn one_probe(p: &Value, obj: &Value) -> Option<Outcome> {
    if let Some(fe) = p.get("fieldsEqual") {
        let text = |f: &str| fe.get(f).and_then(Value::as_str).unwrap_or_default();
        return Some(fields_equal(obj, text("fieldA"), text("fieldB")));
    }
    if let Some(c) = p.get("condition") {
        let text = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default();
        return Some(condition(obj, text("type"), text("status")));
    }
    p.get("cel").map(|cel| {
        let rule = cel.get("rule").and_then(Value::as_str).unwrap_or_default();
        Outcome::new(
            Status::Unknown,
            format!("CEL probes are not simulated by the emulator: {rule}"),
        )
    })
}

/// `ConditionProbe`.
pub(crate) fn condition(obj: &Value, type_: &str, want: &str) -> Outcome {
    let Some(conditions) = obj.pointer("/status/conditions") else {
        return Outcome::new(Status::Unknown, "missing .status.conditions".into());
    };
    let Some(list) = conditions.as_array() else {
        return Outcome::new(Status::Unknown, "malformed .status.conditions".into());
    };
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    for c in list {
        if !c.is_object() {
            return Outcome::new(Status::Unknown, "malformed .status.conditions".into());
        }
        if c.get("type").and_then(Value::as_str) != Some(type_) {
            continue;
        }
        if let Some(observed) = c.get("observedGeneration").and_then(Value::as_i64)
            && observed != generation
        {
            return Outcome::new(
                Status::Unknown,
                format!(".status.condition[\"{type_}\"] outdated"),
            );
        }
        let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
        let verdict = if status == want {
            Status::True
        } else {
            Status::False
        };
        return Outcome::new(
            verdict,
            format!(".status.condition[\"{type_}\"] is {status}"),
        );
    }
    Outcome::new(
        Status::Unknown,
        format!("missing .status.condition[\"{type_}\"]"),
    )
}

/// The value at a dotted path (`.status.replicas`), as `unstructured.NestedFieldCopy` finds it.
fn at_path<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    path.trim_matches('.')
        .split('.')
        .try_fold(obj, |v, key| v.as_object()?.get(key))
}

/// `FieldsEqualProbe`.
pub(crate) fn fields_equal(obj: &Value, a: &str, b: &str) -> Outcome {
    let Some(va) = at_path(obj, a) else {
        return Outcome::new(Status::False, format!("\"{a}\" missing"));
    };
    let Some(vb) = at_path(obj, b) else {
        return Outcome::new(Status::False, format!("\"{b}\" missing"));
    };
    if va != vb {
        return Outcome::new(
            Status::False,
            format!("\"{a}\" != \"{b}\" expected: {va} got: {vb}"),
        );
    }
    Outcome::new(Status::True, format!("\"{a}\" == \"{b}\""))
}

/// `probing.And`.
fn and(results: impl Iterator<Item = Outcome>) -> Outcome {
    let (mut unknown, mut falses, mut trues) = (Vec::new(), Vec::new(), Vec::new());
    for r in results {
        match r.status {
            Status::True => trues.extend(r.messages),
            Status::False => falses.push(r.messages),
            Status::Unknown => unknown.push(r.messages),
        }
    }
    if !unknown.is_empty() {
        return Outcome {
            status: Status::Unknown,
            messages: unknown.concat(),
        };
    }
    if !falses.is_empty() {
        return Outcome {
            status: Status::False,
            messages: falses.concat(),
        };
    }
    Outcome {
        status: Status::True,
        messages: trues,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "generation": 2, "labels": {"app": "x"}}, "status": status})
    }

    #[test]
    fn probes_read_like_boxcutter() {
        let probes = json!([{
        "selector": {"kind": {"group": "apps", "kind": "Deployment"}},
        "probes": [
            {"condition": {"type": "Available", "status": "True"}},
            {"fieldsEqual": {"fieldA": ".status.updatedReplicas", "fieldB": ".status.replicas"}}
        ]}]);
        let prober = Prober::parse(Some(&probes));
        let missing = prober.probe(&deployment(json!({})));
        assert_eq!(missing.status, Status::Unknown);
        assert_eq!(missing.messages, ["missing .status.conditions"]);
        let outdated = prober.probe(&deployment(json!({"observedGeneration": 1})));
        assert_eq!(outdated.messages, [".status outdated"]);
        let down = prober.probe(&deployment(json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 1, "conditions": [{"type": "Available", "status": "False"}]})));
        assert_eq!(down.status, Status::False);
        assert_eq!(down.messages, [".status.condition[\"Available\"] is False"]);
        let up = prober.probe(&deployment(json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]})));
        assert_eq!(up.status, Status::True);
        // Objects no selector matches pass.
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(prober.probe(&cm).status, Status::True);
        let fe = fields_equal(&json!({"a": 1, "b": 2}), ".a", ".b");
        assert_eq!(fe.messages, ["\".a\" != \".b\" expected: 1 got: 2"]);
    }
}
