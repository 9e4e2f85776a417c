//! The `hypersaga` command line against a running system, as a user types it.

use serde_json::Value;

use crate::support::*;

#[tokio::test]
async fn create_wait_shows_progress_and_json_output_is_parseable() {
    let system = System::start().await;
    let out = tokio::task::spawn_blocking({
        let endpoints = system.state_dir().join("endpoints.json");
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
                .args([
                    "cluster",
                    "create",
                    "cli-demo",
                    "--node-pool-replicas",
                    "1",
                    "--wait",
                ])
                .env("HYPERSAGA_ENDPOINTS", endpoints)
                .output()
                .expect("run")
        }
    })
    .await
    .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    for expected in [
        "Creating cluster cli-demo",
        "network.vnet",
        "succeeded",
        "controlplane.hostedcluster",
        "is ready",
        "Resources:",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }

    let out = hypersaga(&system, &["cluster", "get", "cli-demo", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["status"]["phase"], "ready");
    assert_eq!(
        v["status"]["operation"]["steps"].as_array().map(Vec::len),
        Some(15)
    );

    let out = hypersaga(
        &system,
        &["cluster", "list", "-o", "json", "--tenant", "globex"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v, serde_json::json!([]), "the other tenant sees nothing");

    // Invalid input: every violation, with its field path, and a distinct exit code.
    let out = hypersaga(
        &system,
        &[
            "cluster",
            "create",
            "Bad_Name",
            "--node-pool-replicas",
            "999",
            "--subnet-cidr",
            "10.9.0.0/24",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    for field in [
        "name:",
        "spec.node_pools[0].replicas:",
        "spec.network.subnet_cidr:",
    ] {
        assert!(shown.contains(field), "missing {field} in:\n{shown}");
    }

    let out = hypersaga(&system, &["emulator", "requests", "-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v["counts"].as_array().is_some_and(|c| !c.is_empty()));

    let out = hypersaga(&system, &["cluster", "delete", "cli-demo", "--wait"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("deleted"), "{}", text(&out));
    let out = hypersaga(&system, &["cluster", "get", "cli-demo"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "not found after delete: {}",
        text(&out)
    );

    let out = hypersaga(
        &system,
        &[
            "audit",
            "tail",
            "--cluster",
            "cli-demo",
            "--from-start",
            "--count",
            "3",
            "-o",
            "json",
        ],
    );
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("{}"),
    )
    .expect("json line");
    assert_eq!(first["type"], "cluster.accepted");
}
