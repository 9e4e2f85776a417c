//! Everything wrong with an add-on, at once, with field paths of its document
//! (`phases[1].objects[0].object.metadata.namespace`), before anything is written.

use std::collections::BTreeSet;

use hypersaga_model::FieldViolation;
use hypersaga_model::addon::{check_addon_name, check_addon_version};
use hypersaga_model::validate::clip;
use serde_json::Value;

use crate::definition::{Addon, HOSTED_CLUSTER_CLASS, Phase};
use crate::scope::{Scopes, group_of};

/// Largest add-on, as JSON: it travels in one bus message and one `ObjectDeployment`
/// (kube-apiserver's limit on an object is 1.5 MiB; a NATS message's default 1 MiB).
pub const MAX_ADDON_BYTES: usize = 512 * 1024;
/// Longest phase name (a label value in Package Operator's objects).
const MAX_PHASE_NAME: usize = 63;

/// Checks `addon` whole: its name and version, its phases (named once each, a class hypersaga
/// deploys), and each object (`apiVersion`, `kind`, `metadata.name`; a namespace where its
/// cluster needs one and none where it must not; no secret material; none twice).
pub fn validate(addon: &Addon) -> Vec<FieldViolation> {
    let mut v = Vec::new();
    check_addon_name(&mut v, "name", &addon.name);
    check_addon_version(&mut v, "version", &addon.version);
    let size = addon.to_json().len();
    if size > MAX_ADDON_BYTES {
        v.push(FieldViolation::new(
            "",
            format!("the add-on is {size} bytes as JSON; at most {MAX_ADDON_BYTES} are accepted"),
        ));
    }
    if addon.phases.is_empty() {
        v.push(FieldViolation::new(
            "phases",
            "at least one phase is required",
        ));
    }
    let scopes = Scopes::new(
        addon
            .phases
            .iter()
            .flat_map(|p| p.objects.iter().map(|o| &o.object)),
    );
    let mut seen = BTreeSet::new();
    for (i, phase) in addon.phases.iter().enumerate() {
        let at = format!("phases[{i}]");
        check_phase(&mut v, &at, phase, &addon.phases[..i]);
        check_namespaces_first(&mut v, &at, phase);
        for (j, o) in phase.objects.iter().enumerate() {
            let at = format!("{at}.objects[{j}].object");
            if let Some(identity) = check_object(&mut v, &at, &o.object, phase, &scopes)
                && !seen.insert(identity.clone())
            {
                v.push(FieldViolation::new(
                    format!("{at}.metadata.name"),
                    format!("{identity} is already an object of this add-on; each object belongs to one phase"),
                ));
            }
        }
    }
    for (i, probe) in addon.availability_probes.iter().enumerate() {
        let at = format!("availabilityProbes[{i}]");
        if !probe.get("probes").is_some_and(Value::is_array) {
            v.push(FieldViolation::new(
                format!("{at}.probes"),
                "is required: the probes objects of the selected kind must pass",
            ));
        }
        if !probe.get("selector").is_some_and(Value::is_object) {
            v.push(FieldViolation::new(
                format!("{at}.selector"),
                "is required: which objects the probes apply to (`kind: {group, kind}`)",
            ));
        }
    }
    v
}

fn check_phase(v: &mut Vec<FieldViolation>, at: &str, phase: &Phase, before: &[Phase]) {
    let name = &phase.name;
    let valid = !name.is_empty()
        && name.len() <= MAX_PHASE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid {
        v.push(FieldViolation::new(
            format!("{at}.name"),
            format!(
                "{} must be a DNS label of at most {MAX_PHASE_NAME} characters",
                clip(name)
            ),
        ));
    } else if before.iter().any(|p| &p.name == name) {
        v.push(FieldViolation::new(
            format!("{at}.name"),
            format!(
                "{} names an earlier phase too; phase names are unique",
                clip(name)
            ),
        ));
    }
    if let Some(class) = &phase.class
        && class != HOSTED_CLUSTER_CLASS
    {
        v.push(FieldViolation::new(
            format!("{at}.class"),
            format!(
                "{} is not a class hypersaga deploys: leave it out for the management cluster (the control-plane namespace), or use {HOSTED_CLUSTER_CLASS:?} for the hosted cluster",
                clip(class)
            ),
        ));
    }
}

/// A Namespace and objects in it cannot share a phase: Package Operator dry-runs every object
/// of a phase before it applies any, and the API server refuses an object of a namespace that
/// does not exist yet (`PreflightError`).
fn check_namespaces_first(v: &mut Vec<FieldViolation>, at: &str, phase: &Phase) {
    let made: BTreeSet<&str> = phase
        .objects
        .iter()
        .map(|o| &o.object)
        .filter(|o| o["kind"] == "Namespace" && o["apiVersion"] == "v1")
        .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    for (j, o) in phase.objects.iter().enumerate() {
        if let Some(ns) = o
            .object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            && made.contains(ns)
        {
            v.push(FieldViolation::new(
                format!("{at}.objects[{j}].object.metadata.namespace"),
                format!("namespace {} is made in this same phase: Package Operator dry-runs a phase's objects before applying any, and the namespace does not exist yet; put the Namespace in an earlier phase", clip(ns)),
            ));
        }
    }
}

/// Checks one object; answers `group/kind namespace/name` when it is well formed enough to
/// say which object it is.
fn check_object(
    v: &mut Vec<FieldViolation>,
    at: &str,
    object: &Value,
    phase: &Phase,
    scopes: &Scopes,
) -> Option<String> {
    if !object.is_object() {
        v.push(FieldViolation::new(at, "must be a Kubernetes object"));
        return None;
    }
    let field = |f: &str| {
        object
            .pointer(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (api_version, kind, name) = (
        field("/apiVersion"),
        field("/kind"),
        field("/metadata/name"),
    );
    for (path, value) in [
        ("apiVersion", api_version),
        ("kind", kind),
        ("metadata.name", name),
    ] {
        if value.is_empty() {
            v.push(FieldViolation::new(format!("{at}.{path}"), "is required"));
        }
    }
    if api_version.is_empty() || kind.is_empty() || name.is_empty() {
        return None;
    }
    let group = group_of(api_version);
    let namespaced = scopes.namespaced(group, kind);
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    let ns_field = format!("{at}.metadata.namespace");
    match (phase.is_hosted(), namespaced, namespace) {
        (false, false, _) => v.push(FieldViolation::new(
            format!("{at}.kind"),
            format!("{kind} is cluster-scoped: a phase for the management cluster holds only objects of the cluster's control-plane namespace; put it in a {HOSTED_CLUSTER_CLASS:?} phase"),
        )),
        (false, true, Some(_)) => v.push(FieldViolation::new(
            ns_field,
            "is the cluster's control-plane namespace, which hypersaga sets: leave it out",
        )),
        (true, true, None) => v.push(FieldViolation::new(
            ns_field,
            format!("is required: {kind} is namespaced, and a {HOSTED_CLUSTER_CLASS:?} object names its namespace in the hosted cluster"),
        )),
        (true, false, Some(_)) => v.push(FieldViolation::new(
            ns_field,
            format!("must be left out: {kind} is cluster-scoped"),
        )),
        _ => {}
    }
    if group.is_empty() && kind == "Secret" {
        for key in ["data", "stringData"] {
            if object
                .get(key)
                .is_some_and(|d| d.as_object().is_some_and(|m| !m.is_empty()))
            {
                v.push(FieldViolation::new(
                    format!("{at}.{key}"),
                    "hypersaga holds no tenant's secret: deliver secret values another way (an external secrets operator, a workload identity), not in an add-on",
                ));
            }
        }
    }
    let cluster = if phase.is_hosted() {
        "hosted"
    } else {
        "management"
    };
    Some(format!(
        "{cluster} {group}/{kind} {}/{name}",
        namespace.unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn violations(yaml: &str) -> Vec<String> {
        validate(&Addon::parse(yaml).unwrap())
            .into_iter()
            .map(|f| format!("{}: {}", f.field, f.description))
            .collect()
    }

    const GOOD: &str = r#"
name: logging
version: 1.4.0
phases:
- name: namespace
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}
- name: rbac
  class: hosted-cluster
  objects:
  - object: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: log-reader}}
  - object: {apiVersion: v1, kind: ServiceAccount, metadata: {name: collector, namespace: logging}}
- name: deploy
  objects:
  - object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: log-forwarder}, spec: {}}
- name: configure
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: pipeline, namespace: logging}}
"#;

    #[test]
    fn a_three_phase_add_on_across_both_clusters_is_valid() {
        assert_eq!(violations(GOOD), Vec::<String>::new());
    }

    #[test]
    fn every_problem_is_reported_at_its_path() {
        let v = violations(
            r#"
name: Logging
version: "1.4.0+x"
phases:
- name: rbac
  class: remote
  objects:
  - object: {apiVersion: v1, metadata: {name: logging}}
- name: rbac
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}}
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: x, namespace: y}}
- name: deploy
  objects:
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: kube-system}}
  - object: {apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {password: hunter2}}
  - object: {apiVersion: v1, kind: Secret, metadata: {name: s}}
"#,
        );
        let fields: Vec<&str> = v.iter().map(|s| s.split(": ").next().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "name",
                "version",
                "phases[0].class",
                "phases[0].objects[0].object.kind",
                "phases[1].name",
                "phases[1].objects[0].object.metadata.namespace",
                "phases[1].objects[1].object.metadata.namespace",
                "phases[2].objects[0].object.kind",
                "phases[2].objects[1].object.metadata.namespace",
                "phases[2].objects[2].object.stringData",
                "phases[2].objects[3].object.metadata.name",
            ],
            "{v:#?}"
        );
        assert!(v[7].contains("Namespace is cluster-scoped"), "{}", v[7]);
    }

    #[test]
    fn a_namespace_and_its_objects_cannot_share_a_phase() {
        let v = violations(
            r#"
name: logging
version: "1"
phases:
- name: rbac
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}
  - object: {apiVersion: v1, kind: ServiceAccount, metadata: {name: c, namespace: logging}}
"#,
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("phases[0].objects[1].object.metadata.namespace: namespace \"logging\" is made in this same phase"));
    }

    #[test]
    fn a_crd_of_the_add_on_decides_its_kinds_scope() {
        let v = violations(
            r#"
name: policy
version: "1"
phases:
- name: crds
  class: hosted-cluster
  objects:
  - object:
      apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      metadata: {name: logpolicies.logging.example.com}
      spec: {group: logging.example.com, scope: Cluster, names: {kind: LogPolicy, plural: logpolicies}}
- name: config
  class: hosted-cluster
  objects:
  - object: {apiVersion: logging.example.com/v1, kind: LogPolicy, metadata: {name: default}}
"#,
        );
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn the_example_add_on_is_valid() {
        let example = include_str!("../../../examples/addons/logging.yaml");
        let addon = Addon::parse(example).expect("the example parses");
        assert_eq!(validate(&addon), Vec::new());
        assert_eq!(addon.phases.len(), 3);
    }
}
