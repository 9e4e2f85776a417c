//! Schema validation with kube-apiserver's wording.
//!
//! A CRD object is checked against its structural schema by kube-openapi's validator, whose
//! findings `kubeOpenAPIResultToFieldErrors` (`apiextensions-apiserver/pkg/apiserver/validation`)
//! turns into field errors: `Required value`, `Unsupported value: "x": supported values: …`,
//! `Too long: may not be more than N bytes`, `Too many: N: must have at most M items`,
//! `Invalid value: "x": spec.f in body should match '…'` and the other messages of
//! `k8s.io/kube-openapi/pkg/validation/errors/schema.go`. Duplicate keys of `map`/`set` lists
//! are `Duplicate value` (`schema/listtype`), and the [`crate::schema::Rule`]s stand in for
//! the CEL rules (`Invalid value: "object": <message>`, or `<error> evaluating rule:
//! <message>` when a rule cannot be evaluated).
//!
//! On updates, errors the stored object already had are not reported (validation
//! ratcheting, on by default since Kubernetes 1.30).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::Cause;
use crate::fieldpath::{PathElement, compare_values};
use crate::schema::{Kind, ListType, Node, NumberRules, StringRules};

/// What a walk found: the schema's violations, then the rules' (checked only when no schema
/// violation blocks them).
#[derive(Default)]
struct Found {
    schema: Vec<Cause>,
    rules: Vec<Cause>,
}

/// kube-apiserver's note when schema violations kept the CEL rules from running
/// (`hasBlockingErr`: `field.Invalid(nil, nil, …)`).
const RULES_NOT_CHECKED: &str = "some validation rules were not checked because the object was \
     invalid; correct the existing errors to complete validation";

/// Every violation of `node` in `value`, ignoring those `old` has too. As in
/// kube-apiserver, an unsupported, required, too long, too many or mistyped value keeps
/// the rules from being evaluated at all (the object does not have the shape they were
/// written for), which a last cause says.
pub fn validate(node: &Node, value: &Value, old: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut found = Found::default();
    walk(node, value, old, path, &mut found);
    if let Some(old) = old {
        let mut before = Found::default();
        walk(node, old, None, path, &mut before);
        found.schema.retain(|c| !before.schema.contains(c));
        found.rules.retain(|c| !before.rules.contains(c));
    }
    let mut causes = found.schema;
    let blocking = causes.iter().any(|c| {
        matches!(
            c.reason,
            "FieldValueNotSupported"
                | "FieldValueRequired"
                | "FieldValueTooLong"
                | "FieldValueTooMany"
                | "FieldValueTypeInvalid"
        )
    });
    if blocking {
        causes.push(Cause::invalid(
            "",
            &Value::String("null".into()),
            RULES_NOT_CHECKED,
        ));
    } else {
        causes.extend(found.rules);
    }
    causes
}

/// `metadata.name`: an RFC 1123 subdomain (`ValidateObjectMeta`, `NameIsDNSSubdomain`).
pub fn name(name: &str) -> Option<Cause> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then(|| {
        Cause::invalid(
            "metadata.name",
            &Value::String(name.to_owned()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        )
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(node: &Node, value: &Value, old: Option<&Value>, path: &str, found: &mut Found) {
    if value.is_null() {
        // Non-nullable nulls were pruned before validation; a nullable one is valid.
        return;
    }
    let expected = match &node.kind {
        Kind::String(_) => Some("string"),
        Kind::Integer(_) => Some("integer"),
        Kind::Boolean => Some("boolean"),
        Kind::Object(_) | Kind::Map(_) => Some("object"),
        Kind::List(_) => Some("array"),
        Kind::IntOrString(_) | Kind::Any => None,
    };
    let actual = type_name(value);
    let type_ok = match expected {
        Some(t) => t == actual,
        None => {
            !matches!(&node.kind, Kind::IntOrString(_)) || matches!(actual, "integer" | "string")
        }
    };
    if !type_ok {
        let expected = expected.unwrap_or("integer,string");
        found.schema.push(Cause::type_invalid(
            path,
            value,
            &format!("{path} in body must be of type {expected}: \"{actual}\""),
        ));
        return;
    }
    // A node's rules before its children's, as the CEL validator walks the schema.
    let kind = Value::String(actual.to_owned());
    for rule in &node.rules {
        match rule.eval(value, old) {
            Ok(true) => {}
            Ok(false) => found.rules.push(Cause::invalid(path, &kind, rule.message)),
            // `validation.go`: "no such key: {key}, index out of bounds: {index}, …".
            Err(e) => found.rules.push(Cause::invalid(
                path,
                &kind,
                &format!("{e} evaluating rule: {}", rule.message),
            )),
        }
    }
    match (&node.kind, value) {
        (Kind::String(rules) | Kind::IntOrString(rules), Value::String(s)) => {
            check_string(rules, s, value, path, &mut found.schema);
        }
        (Kind::Integer(rules), Value::Number(n)) => {
            check_number(rules, n, value, path, &mut found.schema)
        }
        (Kind::Object(o), Value::Object(map)) => {
            for name in &o.required {
                if !map.contains_key(*name) {
                    found.schema.push(Cause::required(child(path, name)));
                }
            }
            if let Some(min) = o.min_properties
                && map.len() < min
            {
                found.schema.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should have at least {min} properties"),
                ));
            }
            if let Some(max) = o.max_properties
                && map.len() > max
            {
                found.schema.push(Cause::too_many(path, map.len(), max));
            }
            for (k, v) in map {
                if let Some(field) = o.fields.get(k.as_str()) {
                    walk(field, v, old.and_then(|o| o.get(k)), &child(path, k), found);
                }
            }
        }
        (Kind::Map(m), Value::Object(map)) => {
            if let Some(max) = m.max_properties
                && map.len() > max
            {
                found.schema.push(Cause::too_many(path, map.len(), max));
            }
            for (k, v) in map {
                walk(
                    &m.values,
                    v,
                    old.and_then(|o| o.get(k)),
                    &child(path, k),
                    found,
                );
            }
        }
        (Kind::List(l), Value::Array(items)) => {
            if let Some(max) = l.max_items
                && items.len() > max
            {
                found.schema.push(Cause::too_many(path, items.len(), max));
            }
            if let Some(min) = l.min_items
                && items.len() < min
            {
                found.schema.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should have at least {min} items"),
                ));
            }
            check_list_keys(&l.list_type, items, path, &mut found.schema);
            for (i, item) in items.iter().enumerate() {
                let old_item = match &l.list_type {
                    ListType::Map(keys) => old
                        .and_then(Value::as_array)
                        .and_then(|olds| olds.iter().find(|o| same_key(keys, o, item))),
                    _ => None,
                };
                walk(&l.items, item, old_item, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

fn check_string(rules: &StringRules, s: &str, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if !rules.one_of.is_empty() && !rules.one_of.contains(&s) {
        out.push(Cause::not_supported(path, value, &rules.one_of));
    }
    let len = s.chars().count();
    if let Some(max) = rules.max_len
        && len > max
    {
        out.push(Cause::too_long(path, max));
    }
    if let Some(min) = rules.min_len
        && len < min
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = &rules.pattern
        && !p.regex.is_match(s)
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should match '{}'", p.source),
        ));
    }
}

fn check_number(
    rules: &NumberRules,
    n: &serde_json::Number,
    value: &Value,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(n) = n.as_i64() else { return };
    if let Some(min) = rules.minimum
        && n < min
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be greater than or equal to {min}"),
        ));
    }
    if let Some(max) = rules.maximum
        && n > max
    {
        out.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be less than or equal to {max}"),
        ));
    }
}

fn key_of(keys: &[&str], item: &Value) -> Value {
    let map = keys
        .iter()
        .filter_map(|k| item.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    Value::Object(map)
}

fn same_key(keys: &[&str], a: &Value, b: &Value) -> bool {
    compare_values(&key_of(keys, a), &key_of(keys, b)).is_eq()
}

/// Duplicate items of `set` and `map` lists (`schema/listtype/validation.go`).
fn check_list_keys(list_type: &ListType, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    let mut seen: BTreeSet<PathElement> = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let (element, shown) = match list_type {
            ListType::Atomic => return,
            ListType::Set => (PathElement::Value(item.clone()), item.clone()),
            ListType::Map(keys) => {
                let key = key_of(keys, item);
                let fields = key.as_object().map(|m| m.clone().into_iter().collect());
                (PathElement::Key(fields.unwrap_or_default()), key)
            }
        };
        if !seen.insert(element) {
            out.push(Cause::duplicate(format!("{path}[{i}]"), &shown));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{HOSTED_CLUSTERS, NODE_POOLS};
    use crate::schema::for_kind;
    use serde_json::json;

    const SUBNET: &str = "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/vnet-1/subnets/workers";

    /// A NodePool using every field the emulator validates, each validly.
    fn full_node_pool() -> Value {
        json!({"spec": {
            "clusterName": "demo-1", "arch": "amd64",
            "release": {"image": "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64"},
            "autoScaling": {"min": 0, "max": 3},
            "pausedUntil": "2026-09-01T10:00:00Z",
            "taints": [{"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"}],
            "management": {"upgradeType": "Replace", "replace": {"strategy": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}}},
            "platform": {"type": "Azure", "azure": {
                "vmSize": "Standard_D4s_v5", "subnetID": SUBNET, "availabilityZone": "2",
                "osDisk": {"sizeGiB": 128, "diskStorageAccountType": "Premium_LRS",
                    "encryptionSetID": "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/keys/providers/Microsoft.Compute/diskEncryptionSets/des-1"},
                "image": {"type": "AzureMarketplace", "azureMarketplace": {
                    "publisher": "azureopenshift", "offer": "aro4", "sku": "aro_419", "version": "419.6.20250523"}},
                "diagnostics": {"storageAccountType": "UserManaged",
                    "userManaged": {"storageAccountURI": "https://diag.blob.core.windows.net/"}}}}}})
    }

    fn node_pool_messages(new: &Value, old: Option<&Value>) -> Vec<String> {
        messages(&validate(for_kind(NODE_POOLS), new, old, ""))
    }

    #[test]
    fn a_node_pool_using_every_field_validly_passes() {
        assert_eq!(
            node_pool_messages(&full_node_pool(), None),
            Vec::<String>::new()
        );
    }

    #[test]
    fn node_pool_rules_refuse_as_hypershifts_crd_declares() {
        let mut np = full_node_pool();
        np["spec"]["replicas"] = json!(2);
        np["spec"]["autoScaling"] = json!({"min": 4, "max": 3});
        np["spec"]["clusterName"] = json!("Demo");
        np["spec"]["pausedUntil"] = json!("tomorrow");
        np["spec"]["management"]["replace"]["strategy"] = json!("OnDelete");
        np["spec"]["management"]["inPlace"] = json!({"maxUnavailable": 1});
        np["spec"]["platform"]["azure"]["availabilityZone"] = json!("4");
        np["spec"]["platform"]["azure"]["image"]["azureMarketplace"] =
            json!({"imageGeneration": "Gen2", "publisher": "azureopenshift"});
        np["spec"]["platform"]["azure"]["diagnostics"] = json!({"storageAccountType": "Managed",
            "userManaged": {"storageAccountURI": "http://diag"}});
        let got = node_pool_messages(&np, None);
        for expected in [
            "spec: Invalid value: \"object\": Both replicas or autoScaling should not be set",
            "spec.autoScaling: Invalid value: \"object\": max must be equal or greater than min",
            "spec.clusterName: Invalid value: \"string\": clusterName must consist of lowercase alphanumeric characters or '-', start and end with an alphanumeric character, and be between 1 and 253 characters",
            "spec.pausedUntil: Invalid value: \"string\": PausedUntil must be a date in RFC3339 format or 'True', 'true', 'False' or 'false'",
            "spec.management: Invalid value: \"object\": The 'inPlace' field can only be set when 'upgradeType' is 'InPlace'",
            "spec.management.replace: Invalid value: \"object\": The 'rollingUpdate' field can only be set when 'strategy' is 'RollingUpdate'",
            "spec.platform.azure.availabilityZone: Invalid value: \"string\": failed rule: self in ['1', '2', '3']",
            "spec.platform.azure.image.azureMarketplace: Invalid value: \"object\": publisher, offer, sku and version must either be all set, or all omitted",
            "spec.platform.azure.diagnostics: Invalid value: \"object\": userManaged is required when storageAccountType is UserManaged, and forbidden otherwise",
            "spec.platform.azure.diagnostics.userManaged.storageAccountURI: Invalid value: \"string\": storageAccountURI must be a valid HTTPS URL",
        ] {
            assert!(
                got.contains(&expected.to_owned()),
                "{expected}\nnot in {got:#?}"
            );
        }
        assert_eq!(got.len(), 10, "{got:#?}");

        // A value of an unsupported enum (like a mistyped, missing or too long one) keeps
        // every rule from running, as kube-apiserver's `hasBlockingErr` does.
        let mut blocked = np.clone();
        blocked["spec"]["taints"][0]["effect"] = json!("Sometimes");
        assert_eq!(
            node_pool_messages(&blocked, None),
            [
                "spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                ": Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ]
        );

        // Scale from zero: AWS and Azure only.
        let mut kubevirt = full_node_pool();
        kubevirt["spec"]["platform"] = json!({"type": "KubeVirt", "kubevirt": {}});
        assert_eq!(
            node_pool_messages(&kubevirt, None),
            [
                "spec: Invalid value: \"object\": Scale-from-zero (autoScaling.min=0) is currently only supported for AWS and Azure platforms"
            ]
        );
    }

    #[test]
    fn node_pool_immutable_fields_are_refused_on_update() {
        let old = full_node_pool();
        let mut new = old.clone();
        new["spec"]["management"]["upgradeType"] = json!("InPlace");
        new["spec"]["management"]["replace"] = json!({"strategy": "RollingUpdate"});
        new["spec"]["platform"]["type"] = json!("AWS");
        new["spec"]["platform"]["azure"]["subnetID"] = json!(SUBNET.replace("workers", "other"));
        new["spec"]["arch"] = json!("arm64");
        let got = node_pool_messages(&new, Some(&old));
        assert_eq!(
            got,
            [
                "spec.arch: Invalid value: \"string\": Arch is immutable",
                "spec.management.upgradeType: Invalid value: \"string\": UpgradeType is immutable",
                "spec.platform.azure.subnetID: Invalid value: \"string\": SubnetID is immutable",
                "spec.platform.type: Invalid value: \"string\": Type is immutable",
            ]
        );
        // What may change on day 2 passes: replicas, release, labels, taints, drain timeout.
        let mut day2 = old.clone();
        day2["spec"]["autoScaling"] = json!({"min": 1, "max": 5});
        day2["spec"]["release"]["image"] =
            json!("quay.io/openshift-release-dev/ocp-release:4.20.1-x86_64");
        day2["spec"]["nodeLabels"] = json!({"team": "a"});
        day2["spec"]["taints"] = json!([]);
        day2["spec"]["nodeDrainTimeout"] = json!("10m");
        assert_eq!(node_pool_messages(&day2, Some(&old)), Vec::<String>::new());
    }

    #[test]
    fn a_malformed_subnet_id_fails_each_rule_as_cel_evaluates_it() {
        let mut np = full_node_pool();
        np["spec"]["platform"]["azure"]["subnetID"] =
            json!("/subscriptions/sub/resourceGroups/rg.");
        let got = node_pool_messages(&np, None);
        let p = "spec.platform.azure.subnetID: Invalid value: \"string\"";
        assert_eq!(
            got,
            [
                format!(
                    "{p}: encryptionSetID must be in the format `/subscriptions/{{subscriptionId}}/resourceGroups/{{resourceGroupName}}/providers/Microsoft.Network/virtualNetworks/{{vnetName}}/subnets/{{subnetName}}`"
                ),
                format!(
                    "{p}: the subscriptionId in the encryptionSetID must be a valid UUID. It should be 5 groups of hyphen separated hexadecimal characters in the form 8-4-4-4-12"
                ),
                format!(
                    "{p}: the resourceGroupName in the subnetID must not end with a period (.) character"
                ),
                format!(
                    "{p}: index '8' out of range in list size '5' evaluating rule: The vnetName should be between 2 and 64 characters, consisting only of alphanumeric characters, hyphens, underscores and periods"
                ),
                format!(
                    "{p}: index '8' out of range in list size '5' evaluating rule: the vnetName in the subnetID must not end with either a period (.) or hyphen (-) character"
                ),
                format!(
                    "{p}: index '10' out of range in list size '5' evaluating rule: The subnetName should be between 1 and 80 characters, consisting only of alphanumeric characters, hyphens and underscores and must start with an alphanumeric character"
                ),
                format!(
                    "{p}: index '10' out of range in list size '5' evaluating rule: the subnetName in the subnetID must not end with a period (.) or hyphen (-) character"
                ),
            ]
        );
        let mut image = full_node_pool();
        image["spec"]["release"]["image"] = json!(" quay.io/x:4.19.0");
        assert_eq!(
            node_pool_messages(&image, None),
            [
                "spec.release.image: Invalid value: \"string\": Image must start with a word character (letters, digits, or underscores) and contain no white spaces"
            ]
        );
    }

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn reports_like_kube_openapi() {
        let np = json!({"spec": {
            "clusterName": "c", "release": {"image": "i"}, "replicas": "two",
            "management": {"upgradeType": "Sideways"},
            "platform": {"type": "Azure", "azure": {
                "vmSize": "big", "subnetID": SUBNET, "osDisk": {"sizeGiB": 8},
                "image": {"type": "ImageID"}}}}});
        let got = messages(&validate(for_kind(NODE_POOLS), &np, None, ""));
        assert_eq!(
            got,
            [
                "spec.management.upgradeType: Unsupported value: \"Sideways\": supported values: \"Replace\", \"InPlace\"",
                "spec.platform.azure.osDisk.sizeGiB: Invalid value: 8: spec.platform.azure.osDisk.sizeGiB in body should be greater than or equal to 16",
                "spec.platform.azure.vmSize: Invalid value: \"big\": spec.platform.azure.vmSize in body should match '^(Standard_|Basic_)?[A-Z]+[0-9]+(-[0-9]+)?[abdilmptsCNP]*(_[A-Z]*[0-9]+[A-Z]*)?(_v[0-9]+)?$'",
                "spec.replicas: Invalid value: \"two\": spec.replicas in body must be of type integer: \"string\"",
                // The unsupported and mistyped values keep the rules (`imageID is required…`)
                // from being evaluated.
                ": Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ]
        );
    }

    #[test]
    fn duplicates_and_immutability() {
        let old = json!({"spec": {"infraID": "a"}});
        let new = json!({"spec": {"infraID": "b"},
            "status": {"conditions": [
                {"type": "A", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "t"},
                {"type": "A", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "t"}]}});
        let got = messages(&validate(for_kind(HOSTED_CLUSTERS), &new, Some(&old), ""));
        assert!(
            got.contains(
                &"spec.infraID: Invalid value: \"string\": infraID is immutable".to_owned()
            ),
            "{got:?}"
        );
        assert!(
            got.contains(&"status.conditions[1]: Duplicate value: {\"type\":\"A\"}".to_owned()),
            "{got:?}"
        );
    }
}
