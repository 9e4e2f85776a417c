//! Add-ons as the CLI prints them (`hypersaga addon …`, and a cluster's add-ons in `cluster
//! get`): a table of the catalog, one version in detail (its phases and their objects, read
//! from its definition), what a put stored and a delete removed, and the documents behind
//! `-o json|yaml`.

use hypersaga_api::v1 as pb;
use serde_json::{Map, Value, json};

use super::{Table, enum_name, time, time_text};

/// `addon/<name>`, as kubectl names what it printed.
pub fn addon_name(name: &str) -> String {
    format!("addon/{name}")
}

/// `ADDON_SCOPE_PLATFORM` → `platform`; unspecified (a request's "the tenant's, else the
/// platform's") → `any`.
pub fn addon_scope(s: i32) -> String {
    match pb::AddonScope::try_from(s) {
        Ok(pb::AddonScope::Unspecified) => "any".to_owned(),
        Ok(s) => enum_name(s.as_str_name(), "ADDON_SCOPE_"),
        Err(_) => s.to_string(),
    }
}

/// Whose catalog, for a sentence: `the tenant's` or `the platform's`.
fn whose(scope: i32) -> &'static str {
    if scope == pb::AddonScope::Platform as i32 {
        "the platform's"
    } else {
        "the tenant's"
    }
}

/// The definition an API object carries (`document`, JSON), parsed; `None` when it carries
/// none (`ListAddons`) or it is not JSON.
pub fn definition(a: &pb::Addon) -> Option<Value> {
    if a.document.trim().is_empty() {
        return None;
    }
    serde_json::from_str(&a.document).ok()
}

/// An add-on as a document: the API's `Addon`, its scope as a word, its definition as the
/// API carries it (a JSON string under `document`; absent when the API sent none, as a list
/// does). [`readable_yaml`] makes the definition readable for `-o yaml`.
pub fn addon_json(a: &pb::Addon) -> Value {
    let mut doc = json!({
        "name": a.name,
        "version": a.version,
        "scope": addon_scope(a.scope),
        "description": a.description,
        "digest": a.digest,
        "put_time": time(&a.put_time),
        "put_by": a.put_by,
        "phases": a.phases,
    });
    if let Some(map) = doc.as_object_mut()
        && !a.document.is_empty()
    {
        map.insert("document".into(), Value::from(a.document.clone()));
    }
    doc
}

/// `-o yaml` of an add-on document (or a list of them): each definition (`document`, a JSON
/// string) parsed and put last, under `definition`, in its author's order, rather than a
/// string of JSON.
pub fn readable_yaml(doc: &Value) -> serde_norway::Value {
    use serde_norway::Value as Yaml;
    match doc {
        Value::Array(items) => Yaml::Sequence(items.iter().map(readable_yaml).collect()),
        Value::Object(map) => {
            let definition = map
                .get("document")
                .and_then(Value::as_str)
                .and_then(|d| serde_norway::from_str::<Yaml>(d).ok());
            let mut rest = map.clone();
            if definition.is_some() {
                rest.remove("document");
            }
            let mut out = serde_norway::to_value(Value::Object(rest)).unwrap_or(Yaml::Null);
            if let (Yaml::Mapping(m), Some(def)) = (&mut out, definition) {
                m.insert(Yaml::from("definition"), def);
            }
            out
        }
        other => serde_norway::to_value(other).unwrap_or(Yaml::Null),
    }
}

/// How long ago, as kubectl's AGE column says it: `42s`, `7m`, `5h`, `3d` (`?` unknown).
pub fn age(t: &Option<prost_types::Timestamp>, now: i64) -> String {
    let Some(t) = t else {
        return "?".to_owned();
    };
    let secs = (now - t.seconds).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The catalog as a table, in the API's order (by name, newest version first within a
/// name): NAME, VERSION, SCOPE, PHASES (how many), PUT-BY and AGE; `wide` adds when it was
/// put, its digest and its description. `now` is the current Unix time.
pub fn addons_table(addons: &[pb::Addon], wide: bool, now: i64) -> Table {
    let mut headers = vec!["NAME", "VERSION", "SCOPE", "PHASES", "PUT-BY", "AGE"];
    if wide {
        headers.extend(["PUT", "DIGEST", "DESCRIPTION"]);
    }
    let mut table = Table::new(headers);
    for a in addons {
        let mut row = vec![
            a.name.clone(),
            a.version.clone(),
            addon_scope(a.scope),
            a.phases.len().to_string(),
            a.put_by.clone(),
            age(&a.put_time, now),
        ];
        if wide {
            row.extend([
                time_text(&a.put_time),
                a.digest.clone(),
                a.description.clone(),
            ]);
        }
        table.row(row);
    }
    table
}

/// One object of a phase for people: `Kind/name`, or `Kind namespace/name` for one with a
/// namespace.
pub fn object_text(object: &Value) -> String {
    let field = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("?");
    let kind = field("/kind");
    let name = field("/metadata/name");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Where a phase's objects go, by its class: the hosted cluster, or the management cluster
/// (the cluster's control-plane namespace).
fn phase_place(class: Option<&str>) -> String {
    match class {
        Some("hosted-cluster") => "class hosted-cluster: in the hosted cluster".to_owned(),
        Some(other) => format!("class {other}"),
        None => "on the management cluster, in the control-plane namespace".to_owned(),
    }
}

/// The phases of a definition, each with its class and its objects, in order.
fn phases_text(def: &Value) -> String {
    let mut out = String::new();
    let phases = def.get("phases").and_then(Value::as_array);
    for (i, phase) in phases.into_iter().flatten().enumerate() {
        let name = phase.get("name").and_then(Value::as_str).unwrap_or("?");
        let class = phase.get("class").and_then(Value::as_str);
        out.push_str(&format!("  {}. {name} ({})\n", i + 1, phase_place(class)));
        let objects = phase.get("objects").and_then(Value::as_array);
        for o in objects.into_iter().flatten() {
            let object = o.get("object").unwrap_or(&Value::Null);
            out.push_str(&format!("       {}\n", object_text(object)));
        }
    }
    out
}

/// One add-on version for people (`addon get`, `addon put`): version and scope, who put it
/// and when, its digest and, from its definition, each phase with its class and objects
/// (without a definition, the phases the API names).
pub fn addon_text(a: &pb::Addon) -> String {
    let mut out = format!(
        "Add-on:       {} {}  ({})\n",
        a.name,
        a.version,
        addon_scope(a.scope)
    );
    if !a.description.is_empty() {
        out.push_str(&format!("Description:  {}\n", a.description));
    }
    out.push_str(&format!(
        "Put:          {} by {}\n",
        time_text(&a.put_time),
        a.put_by
    ));
    out.push_str(&format!("Digest:       {}\n", a.digest));
    let def = definition(a);
    let probes = def
        .as_ref()
        .and_then(|d| d.get("availabilityProbes"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if probes > 0 {
        out.push_str(&format!("Availability: {probes} probe(s) of its own\n"));
    }
    out.push_str(&format!(
        "Phases:       {}, rolled out in order by Package Operator\n",
        a.phases.len()
    ));
    match &def {
        Some(def) => out.push_str(&phases_text(def)),
        None => {
            for (i, p) in a.phases.iter().enumerate() {
                out.push_str(&format!("  {}. {p}\n", i + 1));
            }
        }
    }
    out
}

/// What `addon put` says: the version stored, or that the same definition was there.
pub fn put_text(a: &pb::Addon, unchanged: bool) -> String {
    let head = if unchanged {
        format!(
            "Add-on {} {} is unchanged: {} catalog had this definition already.\n",
            a.name,
            a.version,
            whose(a.scope)
        )
    } else {
        format!(
            "Add-on {} {} put in {} catalog.\n",
            a.name,
            a.version,
            whose(a.scope)
        )
    };
    format!("{head}\n{}", addon_text(a))
}

/// `addon put -o json|yaml`: the add-on stored, and whether it was there already.
pub fn put_json(a: &pb::Addon, unchanged: bool) -> Value {
    let mut doc = addon_json(a);
    if let Some(map) = doc.as_object_mut() {
        map.insert("unchanged".into(), Value::from(unchanged));
    }
    doc
}

/// What `addon delete` says: the versions deleted, from whose catalog.
pub fn deleted_text(name: &str, versions: &[String], platform: bool) -> String {
    let whose = if platform {
        "the platform's"
    } else {
        "the tenant's"
    };
    let which = if versions.len() == 1 {
        "version"
    } else {
        "versions"
    };
    format!(
        "Deleted add-on {name} {which} {} from {whose} catalog.\n",
        versions.join(", ")
    )
}

/// `addon delete -o json|yaml`.
pub fn deleted_json(name: &str, versions: &[String], platform: bool) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::from(name));
    m.insert(
        "scope".into(),
        Value::from(if platform { "platform" } else { "tenant" }),
    );
    m.insert("versions".into(), Value::from(versions.to_vec()));
    Value::Object(m)
}

/// A cluster's add-ons as a document (its spec's).
pub fn cluster_addons_json(addons: &[pb::ClusterAddon]) -> Value {
    Value::from(
        addons
            .iter()
            .map(|a| json!({"name": a.name, "version": a.version, "scope": addon_scope(a.scope)}))
            .collect::<Vec<_>>(),
    )
}

/// A cluster's add-ons for `cluster get`: `Add-ons:   <none>`, or a table of name, version
/// and scope.
pub fn cluster_addons_text(addons: &[pb::ClusterAddon]) -> String {
    if addons.is_empty() {
        return "Add-ons:   <none>\n".to_owned();
    }
    let mut table = Table::new(vec!["NAME", "VERSION", "SCOPE"]);
    for a in addons {
        let version = if a.version.is_empty() {
            "newest".to_owned()
        } else {
            a.version.clone()
        };
        table.row(vec![a.name.clone(), version, addon_scope(a.scope)]);
    }
    let mut out = String::from("Add-ons:\n");
    for line in table.render(true).lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    const DOCUMENT: &str = r#"{"name":"logging","version":"1.4.0","description":"Ships logs","phases":[{"name":"rbac","class":"hosted-cluster","objects":[{"object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"logging"}}},{"object":{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"collector","namespace":"logging"}}}]},{"name":"deploy","objects":[{"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"log-forwarder"},"spec":{}}}]}]}"#;

    pub(crate) fn addon(name: &str, version: &str, scope: pb::AddonScope) -> pb::Addon {
        pb::Addon {
            name: name.into(),
            version: version.into(),
            scope: scope as i32,
            description: "Ships logs".into(),
            document: String::new(),
            digest: "9f86d081884c7d65".into(),
            put_time: ts(1_800_000_000),
            put_by: "tenant:acme".into(),
            phases: vec!["rbac (hosted-cluster)".into(), "deploy".into()],
        }
    }

    fn with_document() -> pb::Addon {
        pb::Addon {
            document: DOCUMENT.into(),
            ..addon("logging", "1.4.0", pb::AddonScope::Tenant)
        }
    }

    #[test]
    fn one_version_shows_each_phase_with_its_class_and_objects() {
        let text = addon_text(&with_document());
        for expected in [
            "Add-on:       logging 1.4.0  (tenant)",
            "Description:  Ships logs",
            "Put:          2027-01-15T08:00:00Z by tenant:acme",
            "Digest:       9f86d081884c7d65",
            "Phases:       2, rolled out in order by Package Operator",
            "  1. rbac (class hosted-cluster: in the hosted cluster)\n       Namespace/logging\n       ServiceAccount logging/collector\n",
            "  2. deploy (on the management cluster, in the control-plane namespace)\n       Deployment/log-forwarder\n",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        // Without its definition (a list's answer), the phases as the API names them.
        let bare = addon_text(&addon("logging", "1.4.0", pb::AddonScope::Platform));
        assert!(bare.contains("(platform)"), "{bare}");
        assert!(
            bare.contains("  1. rbac (hosted-cluster)\n  2. deploy\n"),
            "{bare}"
        );
    }

    #[test]
    fn yaml_shows_the_definition_as_yaml_and_json_as_the_api_carries_it() {
        let a = with_document();
        let json_doc = addon_json(&a);
        assert_eq!(json_doc["document"], DOCUMENT);
        assert_eq!(json_doc["scope"], "tenant");
        assert_eq!(json_doc["put_time"], "2027-01-15T08:00:00Z");
        assert!(json_doc.get("definition").is_none());
        let yaml = serde_norway::to_string(&readable_yaml(&put_json(&a, true))).unwrap();
        assert!(!yaml.contains("document:"), "{yaml}");
        assert!(yaml.contains("unchanged: true\n"), "{yaml}");
        // Last, in its author's order.
        assert!(
            yaml.contains(
                "definition:\n  name: logging\n  version: 1.4.0\n  description: Ships logs\n  phases:\n  - name: rbac\n    class: hosted-cluster\n    objects:\n    - object:\n        apiVersion: v1\n        kind: Namespace\n"
            ),
            "{yaml}"
        );
        let back: serde_norway::Value = serde_norway::from_str(&yaml).unwrap();
        assert_eq!(
            back["definition"]["phases"][1]["name"].as_str(),
            Some("deploy")
        );
        // A list carries no definition: neither key.
        let listed = addon_json(&addon("logging", "1.4.0", pb::AddonScope::Tenant));
        assert!(listed.get("document").is_none() && listed.get("definition").is_none());
        assert_eq!(listed["phases"][0], "rbac (hosted-cluster)");
        let list = readable_yaml(&Value::from(vec![listed.clone(), json_doc]));
        assert_eq!(list[0], serde_norway::to_value(&listed).unwrap());
        assert_eq!(list[1]["definition"]["name"].as_str(), Some("logging"));
    }

    #[test]
    fn the_catalog_table_has_name_version_scope_phases_put_by_and_age() {
        let addons = [
            addon("logging", "1.4.0", pb::AddonScope::Tenant),
            addon("logging", "1.3.0", pb::AddonScope::Tenant),
            pb::Addon {
                put_by: "admin:ops".into(),
                put_time: ts(1_800_000_000 - 3 * 86400),
                ..addon("monitoring", "2", pb::AddonScope::Platform)
            },
        ];
        let now = 1_800_000_000 + 300;
        let shown = addons_table(&addons, false, now).render(true);
        let rows: Vec<Vec<&str>> = shown
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            rows[0],
            ["NAME", "VERSION", "SCOPE", "PHASES", "PUT-BY", "AGE"]
        );
        assert_eq!(
            rows[1],
            ["logging", "1.4.0", "tenant", "2", "tenant:acme", "5m"]
        );
        assert_eq!(rows[2][1], "1.3.0");
        assert_eq!(
            rows[3],
            ["monitoring", "2", "platform", "2", "admin:ops", "3d"]
        );
        let wide = addons_table(&addons, true, now).render(true);
        for expected in ["DIGEST", "DESCRIPTION", "9f86d081884c7d65", "Ships logs"] {
            assert!(wide.contains(expected), "missing {expected:?} in:\n{wide}");
        }
        assert_eq!(addon_name("logging"), "addon/logging");
    }

    #[test]
    fn ages_read_as_kubectl_writes_them() {
        let at = ts(1000);
        assert_eq!(age(&at, 1042), "42s");
        assert_eq!(age(&at, 1000 + 119), "119s");
        assert_eq!(age(&at, 1000 + 600), "10m");
        assert_eq!(age(&at, 1000 + 3 * 3600), "3h");
        assert_eq!(age(&at, 1000 + 50 * 3600), "2d");
        assert_eq!(age(&at, 0), "0s", "a clock behind the server's");
        assert_eq!(age(&None, 1000), "?");
    }

    #[test]
    fn a_put_says_whether_it_stored_a_version_or_found_it_there() {
        let a = with_document();
        let put = put_text(&a, false);
        assert!(
            put.starts_with("Add-on logging 1.4.0 put in the tenant's catalog.\n\nAdd-on:"),
            "{put}"
        );
        let same = put_text(&a, true);
        assert!(
            same.starts_with("Add-on logging 1.4.0 is unchanged: the tenant's catalog"),
            "{same}"
        );
        assert_eq!(put_json(&a, true)["unchanged"], true);
        assert_eq!(
            deleted_text("logging", &["1.4.0".into(), "1.3.0".into()], true),
            "Deleted add-on logging versions 1.4.0, 1.3.0 from the platform's catalog.\n"
        );
        assert_eq!(
            deleted_text("logging", &["1.4.0".into()], false),
            "Deleted add-on logging version 1.4.0 from the tenant's catalog.\n"
        );
        assert_eq!(
            deleted_json("logging", &["1".into()], false),
            json!({"name": "logging", "scope": "tenant", "versions": ["1"]})
        );
    }

    #[test]
    fn a_clusters_add_ons_are_a_small_table() {
        assert_eq!(cluster_addons_text(&[]), "Add-ons:   <none>\n");
        let text = cluster_addons_text(&[
            pb::ClusterAddon {
                name: "logging".into(),
                version: "1.4.0".into(),
                scope: pb::AddonScope::Tenant as i32,
            },
            pb::ClusterAddon {
                name: "monitoring".into(),
                version: "2".into(),
                scope: pb::AddonScope::Platform as i32,
            },
        ]);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0], ["Add-ons:"]);
        assert_eq!(rows[1], ["NAME", "VERSION", "SCOPE"]);
        assert_eq!(rows[2], ["logging", "1.4.0", "tenant"]);
        assert_eq!(rows[3], ["monitoring", "2", "platform"]);
        assert_eq!(addon_scope(pb::AddonScope::Unspecified as i32), "any");
    }
}
