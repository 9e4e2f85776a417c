//! Checks of built-in kinds' strategies that no schema expresses, worded as kube-apiserver
//! words them (`pkg/apis/apps/validation/validation.go`, `pkg/apis/rbac/validation`).

use serde_json::Value;

use crate::error::Cause;
use crate::label_selector;

/// Go's `%#v` of a `map[string]string`, as `field.Invalid` prints a labels map.
fn go_string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_owned(),
        Some(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        Value::String(v.as_str().unwrap_or_default().to_owned())
                    )
                })
                .collect();
            format!("map[string]string{{{}}}", entries.join(", "))
        }
    }
}

/// `ValidateDeploymentSpec`: a selector is required, must not be empty, and must match the
/// pod template's labels.
pub fn validate_deployment(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(selector) = obj.pointer("/spec/selector") else {
        causes.push(Cause::required("spec.selector"));
        return causes;
    };
    if label_selector::is_empty(selector) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            field: "spec.selector".into(),
            message: "Invalid value: \"{}\": empty selector is invalid for deployment".into(),
        });
        return causes;
    }
    let labels = obj.pointer("/spec/template/metadata/labels");
    if !label_selector::matches(Some(selector), labels.and_then(Value::as_object)) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            field: "spec.template.metadata.labels".into(),
            message: format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(labels)
            ),
        });
    }
    causes
}

/// `ValidateRoleBindingUpdate`/`ValidateClusterRoleBindingUpdate`: `roleRef` never changes.
pub fn validate_role_ref_update(next: &Value, old: &Value) -> Vec<Cause> {
    let role_ref = |o: &Value| o.get("roleRef").cloned().unwrap_or(Value::Null);
    let (new_ref, old_ref) = (role_ref(next), role_ref(old));
    if new_ref == old_ref {
        return Vec::new();
    }
    let text = |f: &str| {
        Value::String(
            new_ref
                .get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        )
    };
    vec![Cause {
        reason: "FieldValueInvalid",
        field: "roleRef".into(),
        message: format!(
            "Invalid value: rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}: cannot change roleRef",
            text("apiGroup"),
            text("kind"),
            text("name")
        ),
    }]
}

/// `ValidateRoleBinding`/`ValidateClusterRoleBinding`'s checks of `roleRef`: the RBAC group,
/// a kind the binding may refer to, a name.
fn validate_role_ref(obj: &Value, kinds: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    let field = |f: &str| obj.pointer(&format!("/roleRef/{f}")).cloned();
    let group = field("apiGroup").unwrap_or(Value::String(String::new()));
    if group != "rbac.authorization.k8s.io" {
        causes.push(Cause::not_supported(
            "roleRef.apiGroup",
            &group,
            &["rbac.authorization.k8s.io"],
        ));
    }
    let kind = field("kind").unwrap_or(Value::String(String::new()));
    if !kind.as_str().is_some_and(|k| kinds.contains(&k)) {
        causes.push(Cause::not_supported("roleRef.kind", &kind, kinds));
    }
    if field("name")
        .and_then(|n| n.as_str().map(str::is_empty))
        .unwrap_or(true)
    {
        causes.push(Cause::required("roleRef.name"));
    }
    causes
}

/// A RoleBinding may refer to a Role or a ClusterRole.
pub fn validate_role_binding(obj: &Value) -> Vec<Cause> {
    validate_role_ref(obj, &["Role", "ClusterRole"])
}

/// A ClusterRoleBinding may refer only to a ClusterRole.
pub fn validate_cluster_role_binding(obj: &Value) -> Vec<Cause> {
    validate_role_ref(obj, &["ClusterRole"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selector_must_match_template_labels() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b", "x": "y"}}}}});
        let causes = validate_deployment(&d);
        assert_eq!(causes[0].field, "spec.template.metadata.labels");
        assert_eq!(
            causes[0].message,
            "Invalid value: map[string]string{\"app\":\"b\", \"x\":\"y\"}: `selector` does not match template `labels`"
        );
        let ok = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}}}});
        assert!(validate_deployment(&ok).is_empty());
    }

    #[test]
    fn role_ref_is_immutable() {
        let a = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}});
        let b = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "b"}});
        assert!(validate_role_ref_update(&a, &a).is_empty());
        let causes = validate_role_ref_update(&b, &a);
        assert!(
            causes[0]
                .message
                .ends_with("Name:\"b\"}: cannot change roleRef")
        );
        assert!(validate_role_binding(&a).is_empty());
        assert_eq!(validate_cluster_role_binding(&a).len(), 1);
    }
}
