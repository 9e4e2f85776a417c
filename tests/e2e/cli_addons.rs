//! A user's session with `hypersaga addon` against a running system: putting an add-on from a
//! YAML file (and from standard input), putting it again (unchanged), another definition under
//! the same version (refused), a bad one (each problem by its field path), listing and showing
//! the catalog, a platform add-on put with the admin token (and refused with a tenant's),
//! what another tenant sees, and deleting versions. Rolling add-ons out on clusters is
//! another test's (it needs Package Operator's emulator).

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::support::*;

const LOGGING: &str = r#"
name: logging
version: 1.4.0
description: Ships the cluster's logs
phases:
- name: rbac
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}
  - object: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: log-reader}}
- name: deploy
  objects:
  - object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: log-forwarder}, spec: {}}
- name: configure
  class: hosted-cluster
  objects:
  - object: {apiVersion: v1, kind: ServiceAccount, metadata: {name: collector, namespace: logging}}
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: pipeline, namespace: logging}}
"#;

/// A definition with a problem at each of three field paths.
const BAD: &str = r#"
name: broken
version: "1"
phases:
- name: rbac
  class: remote
  objects:
  - object: {apiVersion: v1, kind: Namespace, metadata: {name: x}}
- name: deploy
  objects:
  - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: kube-system}}
  - object: {apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {password: hunter2}}
"#;

const MONITORING: &str = r#"{
  "name": "monitoring",
  "version": "2",
  "phases": [
    {"name": "agents", "class": "hosted-cluster", "objects": [
      {"object": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}}}
    ]}
  ]
}"#;

/// Runs `hypersaga args`, which must succeed; what it printed.
fn ok(system: &System, args: &[&str]) -> Output {
    let out = hypersaga(system, args);
    assert!(
        out.status.success(),
        "`hypersaga {}` exited {:?}:\n{}",
        args.join(" "),
        out.status.code(),
        text(&out)
    );
    out
}

/// The document `-o json` printed.
fn document(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", text(out)))
}

/// Runs `hypersaga args` with `input` on its standard input.
fn hypersaga_with_input(system: &System, args: &[&str], input: &str) -> Output {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
        .args(args)
        .env(
            "HYPERSAGA_ENDPOINTS",
            system.state_dir().join("endpoints.json"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hypersaga");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write the definition");
    child.wait_with_output().expect("hypersaga's output")
}

/// `(name, version, scope)` of each add-on `addon list -o json` printed, in order.
fn listed(out: &Output) -> Vec<(String, String, String)> {
    let all = document(out);
    all.as_array()
        .unwrap_or_else(|| panic!("not a list: {all}"))
        .iter()
        .map(|a| {
            let s = |k: &str| a[k].as_str().unwrap_or_default().to_owned();
            (s("name"), s("version"), s("scope"))
        })
        .collect()
}

fn entry(name: &str, version: &str, scope: &str) -> (String, String, String) {
    (name.into(), version.into(), scope.into())
}

#[tokio::test]
async fn cli_addons_put_list_get_and_delete_a_tenants_and_the_platforms_add_ons() {
    let system = System::start().await;
    let admin_token = system
        .endpoints
        .admin_token
        .clone()
        .expect("hypersaga dev writes an admin token into its endpoints file");
    let files = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, body: &str| {
        let path = files.path().join(name);
        std::fs::write(&path, body).expect("write the definition");
        path.to_string_lossy().into_owned()
    };
    let logging = write("logging-1.4.0.yaml", LOGGING);

    // Put from a YAML file: what was stored, phase by phase.
    let shown = text(&ok(&system, &["addon", "put", "--file", &logging]));
    for expected in [
        "Add-on logging 1.4.0 put in the tenant's catalog.",
        "Add-on:       logging 1.4.0  (tenant)",
        "Description:  Ships the cluster's logs",
        "by tenant:acme",
        "Digest:       ",
        "Phases:       3, rolled out in order by Package Operator",
        "  1. rbac (class hosted-cluster: in the hosted cluster)",
        "       Namespace/logging",
        "       ClusterRole/log-reader",
        "  2. deploy (on the management cluster, in the control-plane namespace)",
        "       Deployment/log-forwarder",
        "       ServiceAccount logging/collector",
        "       ConfigMap logging/pipeline",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }

    // The same definition again: unchanged.
    let shown = text(&ok(&system, &["addon", "put", "-f", &logging]));
    assert!(
        shown.contains("Add-on logging 1.4.0 is unchanged"),
        "{shown}"
    );
    let again = document(&ok(
        &system,
        &["addon", "put", "-f", &logging, "-o", "json"],
    ));
    assert_eq!(again["unchanged"], true, "{again}");
    assert_eq!(again["scope"], "tenant", "{again}");

    // Another definition under the same version: refused, the version never changes.
    let changed = write(
        "logging-changed.yaml",
        &LOGGING.replace("Ships the cluster's logs", "Ships logs elsewhere"),
    );
    let out = hypersaga(&system, &["addon", "put", "--file", &changed]);
    let refused = text(&out);
    assert_eq!(out.status.code(), Some(4), "{refused}");
    for expected in [
        "AlreadyExists",
        "add-on logging version 1.4.0 exists with another definition",
        "put it as a new version",
    ] {
        assert!(
            refused.contains(expected),
            "missing {expected:?} in:\n{refused}"
        );
    }

    // A bad definition: every problem by its field path, on stderr; exit 2.
    let bad = write("broken.yaml", BAD);
    let out = hypersaga(&system, &["addon", "put", "--file", &bad]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for expected in [
        "InvalidArgument: the request is invalid:",
        "  - phases[0].class: ",
        "  - phases[1].objects[0].object.metadata.namespace: ",
        "  - phases[1].objects[1].object.stringData: ",
    ] {
        assert!(
            stderr.contains(expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
    // One that is not an add-on at all, from standard input: the field it lacks.
    let out = hypersaga_with_input(&system, &["addon", "put", "-f", "-"], "name: x\n");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing field `version`"),
        "{}",
        text(&out)
    );

    // A new version, from standard input.
    let newer = LOGGING.replace("version: 1.4.0", "version: 1.5.0");
    let out = hypersaga_with_input(&system, &["addon", "put", "-f", "-", "-o", "json"], &newer);
    assert!(out.status.success(), "{}", text(&out));
    let put = document(&out);
    assert_eq!(
        (&put["version"], &put["unchanged"]),
        (&"1.5.0".into(), &false.into())
    );

    // The platform's add-on: put with the admin token (the endpoints file's), refused with a
    // tenant's.
    let monitoring = write("monitoring.json", MONITORING);
    let out = hypersaga(
        &system,
        &[
            "addon",
            "put",
            "-f",
            &monitoring,
            "--platform",
            "--admin-token",
            &system.token("acme"),
        ],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(text(&out).contains("PermissionDenied"), "{}", text(&out));
    assert!(
        text(&out).contains("written with an administrator's token"),
        "{}",
        text(&out)
    );
    let shown = text(&ok(
        &system,
        &["addon", "put", "-f", &monitoring, "--platform"],
    ));
    assert!(
        shown.contains("Add-on monitoring 2 put in the platform's catalog."),
        "{shown}"
    );
    assert!(shown.contains("by admin:"), "{shown}");
    assert!(
        !shown.contains(&admin_token),
        "the admin token is never printed"
    );
    // An admin token given without --platform: said before anything is asked.
    let out = hypersaga(
        &system,
        &[
            "addon",
            "put",
            "-f",
            &monitoring,
            "--admin-token",
            &admin_token,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("add --platform"), "{}", text(&out));

    // The catalog: the tenant's versions newest first, and the platform's.
    let out = ok(&system, &["addon", "list", "-o", "json"]);
    assert_eq!(
        listed(&out),
        [
            entry("logging", "1.5.0", "tenant"),
            entry("logging", "1.4.0", "tenant"),
            entry("monitoring", "2", "platform"),
        ],
        "{}",
        text(&out)
    );
    let all = document(&out);
    assert_eq!(all[0]["put_by"], "tenant:acme", "{all}");
    assert_eq!(all[0]["phases"][0], "rbac (hosted-cluster)", "{all}");
    let table = text(&ok(&system, &["addon", "list"]));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["NAME", "VERSION", "SCOPE", "PHASES", "PUT-BY", "AGE"],
        "{table}"
    );
    assert_eq!(
        rows[1][..5],
        ["logging", "1.5.0", "tenant", "3", "tenant:acme"],
        "{table}"
    );
    let out = ok(&system, &["addon", "list", "--platform", "-o", "json"]);
    assert_eq!(listed(&out), [entry("monitoring", "2", "platform")]);
    let out = ok(
        &system,
        &[
            "addon", "list", "logging", "--scope", "tenant", "-o", "json",
        ],
    );
    assert_eq!(listed(&out).len(), 2, "{}", text(&out));
    // Another tenant sees the platform's add-on, not acme's own.
    let out = ok(
        &system,
        &["addon", "list", "-o", "json", "--tenant", "globex"],
    );
    assert_eq!(listed(&out), [entry("monitoring", "2", "platform")]);

    // One version: the newest by default, the definition as the API carries it in JSON and
    // readable in YAML.
    let got = document(&ok(&system, &["addon", "get", "logging", "-o", "json"]));
    assert_eq!(got["version"], "1.5.0", "{got}");
    let definition: Value = serde_json::from_str(got["document"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("document is not JSON ({e}): {got}"));
    assert_eq!(definition["phases"][2]["name"], "configure", "{got}");
    let yaml = ok(&system, &["addon", "get", "logging@1.4.0", "-o", "yaml"]);
    let yaml = String::from_utf8_lossy(&yaml.stdout).into_owned();
    for expected in [
        "version: 1.4.0",
        "definition:\n",
        "  name: logging\n",
        "    class: hosted-cluster\n",
        "        kind: ServiceAccount\n",
    ] {
        assert!(yaml.contains(expected), "missing {expected:?} in:\n{yaml}");
    }
    assert!(!yaml.contains("document:"), "{yaml}");
    let shown = text(&ok(&system, &["addon", "get", "platform:monitoring"]));
    assert!(
        shown.contains("Add-on:       monitoring 2  (platform)"),
        "{shown}"
    );
    let out = hypersaga(&system, &["addon", "get", "logging@9.9.9"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("no add-on \"logging\" version \"9.9.9\" in the catalog"),
        "{}",
        text(&out)
    );

    // A cluster naming an add-on the catalog lacks is refused before anything is made.
    let out = hypersaga(
        &system,
        &["cluster", "create", "demo", "--addon", "nosuch@1"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out)
            .contains("spec.addons[0].name: no add-on \"nosuch\" version \"1\" in the catalog"),
        "{}",
        text(&out)
    );
    let out = hypersaga(
        &system,
        &["cluster", "create", "demo", "--addon", "acme:logging"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is not a scope"), "{}", text(&out));

    // Deleting: one version, then the rest; the platform's with the admin token.
    let shown = text(&ok(
        &system,
        &["addon", "delete", "logging", "--version", "1.4.0"],
    ));
    assert!(
        shown.contains("Deleted add-on logging version 1.4.0 from the tenant's catalog."),
        "{shown}"
    );
    let out = hypersaga(&system, &["addon", "get", "logging@1.4.0"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let deleted = document(&ok(&system, &["addon", "delete", "logging", "-o", "json"]));
    assert_eq!(
        deleted["versions"],
        serde_json::json!(["1.5.0"]),
        "{deleted}"
    );
    let out = hypersaga(&system, &["addon", "delete", "monitoring"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "not the tenant's: {}",
        text(&out)
    );
    let shown = text(&ok(
        &system,
        &["addon", "delete", "monitoring", "--platform"],
    ));
    assert!(
        shown.contains("Deleted add-on monitoring version 2 from the platform's catalog."),
        "{shown}"
    );
    let out = ok(&system, &["addon", "list", "-o", "json"]);
    assert_eq!(listed(&out), [], "{}", text(&out));
}
