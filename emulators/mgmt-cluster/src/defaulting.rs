//! Structural defaulting (`k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting`):
//! an absent property of an object that exists takes its schema `default`, and defaulting
//! continues into what was just set.

use serde_json::Value;

use crate::schema::{Kind, Node};

/// Applies the defaults of `node` throughout `value`.
pub fn apply_defaults(node: &Node, value: &mut Value) {
    match (&node.kind, value) {
        (Kind::Object(o), Value::Object(map)) => {
            for (name, field) in &o.fields {
                if let Some(default) = &field.default
                    && !map.contains_key(*name)
                {
                    map.insert((*name).to_owned(), default.clone());
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(field) = o.fields.get(k.as_str()) {
                    apply_defaults(field, v);
                }
            }
        }
        (Kind::Map(m), Value::Object(map)) => {
            for v in map.values_mut() {
                apply_defaults(&m.values, v);
            }
        }
        (Kind::List(l), Value::Array(items)) => {
            for v in items.iter_mut() {
                apply_defaults(&l.items, v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::NODE_POOLS;
    use crate::schema::for_kind;
    use serde_json::json;

    #[test]
    fn defaults_fill_existing_objects_only() {
        let mut np = json!({"spec": {"management": {"upgradeType": "Replace"},
                                     "platform": {"type": "Azure", "azure": {"image": {"type": "AzureMarketplace", "azureMarketplace": {}}}}}});
        apply_defaults(for_kind(NODE_POOLS), &mut np);
        assert_eq!(np["spec"]["arch"], "amd64");
        assert_eq!(np["spec"]["management"]["autoRepair"], false);
        assert_eq!(
            np["spec"]["management"]["replace"]["rollingUpdate"]["maxSurge"],
            1
        );
        let azure = &np["spec"]["platform"]["azure"];
        assert_eq!(azure["encryptionAtHost"], "Enabled");
        assert_eq!(
            azure["image"]["azureMarketplace"]["imageGeneration"],
            "Gen2"
        );
        assert!(
            azure.get("diagnostics").is_none(),
            "absent objects stay absent"
        );
    }
}
