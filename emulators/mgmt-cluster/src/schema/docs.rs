//! Field descriptions, published with the schemas in OpenAPI so `kubectl explain` shows them.
//!
//! They are the APIs' own documentation, kept as data: HyperShift's from its generated CRDs
//! (`docs/hypershift.yaml`), the built-in kinds' from the swagger docs of `k8s.io/api` and
//! `k8s.io/apimachinery` (`docs/core.yaml`), each limited to the fields the emulator models.
//! Keyed by schema name (`HostedCluster`, `ObjectMeta`, …) and dotted field path as `kubectl
//! explain` writes it (list items and map values take their field's path; `""` is the type).

use std::collections::HashMap;
use std::sync::LazyLock;

type Docs = HashMap<String, HashMap<String, String>>;

static DOCS: LazyLock<Docs> = LazyLock::new(|| {
    let mut all = Docs::new();
    for (file, text) in [
        ("core.yaml", include_str!("docs/core.yaml")),
        ("hypershift.yaml", include_str!("docs/hypershift.yaml")),
    ] {
        match serde_norway::from_str::<Docs>(text) {
            Ok(docs) => all.extend(docs),
            Err(e) => tracing::error!(file, error = %e, "schema descriptions do not parse"),
        }
    }
    all
});

/// The description of `path` in schema `type_name`, if documented.
pub fn description(type_name: &str, path: &str) -> Option<&'static str> {
    DOCS.get(type_name)?.get(path).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_load() {
        assert!(description("HostedCluster", "").is_some_and(|d| d.starts_with("HostedCluster")));
        assert!(description("NodePool", "spec.platform.azure.vmSize").is_some());
        assert!(description("ObjectMeta", "name").is_some());
        assert!(description("Event", "involvedObject").is_some());
    }
}
