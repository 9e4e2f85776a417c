//! A user's session with `hypersaga rollout` against a running system: clusters labelled as
//! they are made, a rollout upgrading the prod ones in a canary wave then a wave of two, and
//! the dev cluster left on its release.

use std::process::Output;

use serde_json::Value;

use crate::support::*;

const RELEASE: &str = "quay.io/openshift-release-dev/ocp-release:4.21.0-multi";

/// The document `-o json` printed.
fn document(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", text(out)))
}

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

#[tokio::test]
async fn a_rollout_upgrades_the_prod_clusters_a_canary_then_two_and_leaves_dev_alone() {
    let system = System::start().await;
    // The next release `cluster upgrade` takes in day2.rs: the emulated HyperShift accepts it.
    let next = RELEASE.replace("4.21.0", "4.22.0");

    // Three prod clusters and a dev one, labelled as they are made.
    let clusters = [
        ("prod-a", "env=prod"),
        ("prod-b", "env=prod"),
        ("prod-c", "env=prod"),
        ("dev-a", "env=dev"),
    ];
    for (name, label) in clusters {
        let out = ok(
            &system,
            &[
                "cluster",
                "create",
                name,
                "--label",
                label,
                "--label",
                "team=platform",
                "--node-pool-replicas",
                "1",
            ],
        );
        assert!(
            text(&out).contains(&format!("Creating cluster {name}")),
            "{}",
            text(&out)
        );
    }
    // A label that is not KEY=VALUE is refused before anything is asked, naming the flag.
    let bad = hypersaga(&system, &["cluster", "create", "prod-x", "--label", "prod"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("--label"), "{}", text(&bad));
    for (name, _) in clusters {
        let c = system.watch_to_end("acme", name).await;
        assert_eq!(phase(&c), "ready", "{c:#?}");
    }

    // `cluster get` shows the labels, for people and for scripts.
    let shown = text(&ok(&system, &["cluster", "get", "prod-a"]));
    assert!(
        shown.contains("Labels:    env=prod,team=platform"),
        "{shown}"
    );
    let dev = document(&ok(&system, &["cluster", "get", "dev-a", "-o", "json"]));
    assert_eq!(dev["labels"]["env"], "dev", "{dev}");
    assert_eq!(dev["labels"]["team"], "platform", "{dev}");

    // The rollout of prod: a canary of one, then at most two at a time, followed to its end.
    let out = ok(
        &system,
        &[
            "rollout",
            "create",
            "--selector",
            "env=prod",
            "--release-image",
            &next,
            "--canary",
            "1",
            "--max-parallel",
            "2",
            "--wait",
        ],
    );
    let shown = text(&out);
    let id = shown
        .lines()
        .find_map(|l| l.strip_prefix("Rollout ")?.split_once(" started: "))
        .map(|(id, _)| id.to_owned())
        .unwrap_or_else(|| panic!("no `Rollout ID started` line in:\n{shown}"));
    for expected in [
        format!("Rollout {id} started: 3 clusters (env=prod) to {next} in 2 waves"),
        "cluster prod-a (canary, wave 1) upgrading".to_owned(),
        "cluster prod-b (wave 2) succeeded".to_owned(),
        "cluster prod-c (wave 2) succeeded".to_owned(),
        format!("Rollout {id} SUCCEEDED: 3/3 clusters upgraded to {next} in 2 waves"),
    ] {
        assert!(
            shown.contains(&expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    // The canary finished before the second wave started.
    let canary_done = shown
        .find("cluster prod-a (canary, wave 1) succeeded")
        .unwrap_or_else(|| panic!("the canary's success is shown:\n{shown}"));
    let second_wave = shown
        .find("cluster prod-b (wave 2) upgrading")
        .unwrap_or_else(|| panic!("the second wave's start is shown:\n{shown}"));
    assert!(canary_done < second_wave, "{shown}");

    // For scripts: three clusters upgraded in two waves, each by its own operation.
    let rollout = document(&ok(&system, &["rollout", "get", &id, "-o", "json"]));
    assert_eq!(rollout["state"], "succeeded", "{rollout}");
    assert_eq!(rollout["waves"], 2, "{rollout}");
    assert_eq!(rollout["selector"]["env"], "prod", "{rollout}");
    assert_eq!(rollout["release_image"], next.as_str(), "{rollout}");
    let members = rollout["clusters"].as_array().expect("clusters");
    let seen: Vec<(&str, u64, &str)> = members
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or_default(),
                m["wave"].as_u64().unwrap_or(99),
                m["state"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("prod-a", 0, "succeeded"),
            ("prod-b", 1, "succeeded"),
            ("prod-c", 1, "succeeded")
        ],
        "{rollout}"
    );
    assert!(
        members
            .iter()
            .all(|m| m["operation"].as_str().is_some_and(|o| !o.is_empty())),
        "{rollout}"
    );

    // The prod clusters run the new release; dev is untouched on its old one.
    for name in ["prod-a", "prod-b", "prod-c"] {
        let c = system
            .wait_until("acme", name, "the control plane at 4.22.0", |c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.control_plane.as_ref())
                    .is_some_and(|cp| cp.version == "4.22.0")
            })
            .await;
        assert_eq!(c.spec.expect("spec").release_image, next);
    }
    let dev = document(&ok(&system, &["cluster", "get", "dev-a", "-o", "json"]));
    assert_eq!(dev["spec"]["release_image"], RELEASE, "{dev}");
    assert_eq!(dev["status"]["control_plane"]["version"], "4.21.0", "{dev}");
    assert_eq!(dev["status"]["operation"]["kind"], "create", "{dev}");

    // The rollout is listed, and watching an ended one says how it ended at once.
    let list = text(&ok(&system, &["rollout", "list"]));
    let row = list
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} not listed:\n{list}"));
    assert_eq!(
        row.split_whitespace().take(6).collect::<Vec<_>>(),
        [id.as_str(), "succeeded", "2/2", "3/3", "0", next.as_str()],
        "{list}"
    );
    assert_eq!(
        text(&ok(&system, &["rollout", "list", "-o", "name"])).trim(),
        format!("rollout/{id}")
    );
    let watched = text(&ok(&system, &["rollout", "watch", &id]));
    assert!(
        watched.contains(&format!("Rollout {id} SUCCEEDED")),
        "{watched}"
    );

    // An ended rollout is neither paused nor cancelled: the refusal says what it is.
    for verb in ["pause", "cancel"] {
        let late = hypersaga(&system, &["rollout", verb, &id]);
        assert_eq!(late.status.code(), Some(1), "{}", text(&late));
        assert!(text(&late).contains("Succeeded"), "{}", text(&late));
    }

    // Nothing takes env=staging; an unknown rollout is not found.
    let none = hypersaga(
        &system,
        &[
            "rollout",
            "create",
            "--selector",
            "env=staging",
            "--release-image",
            &next,
        ],
    );
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(
        text(&none).contains("no cluster carries"),
        "{}",
        text(&none)
    );
    let missing = hypersaga(&system, &["rollout", "get", "ro-0000000000000000"]);
    assert_eq!(missing.status.code(), Some(3), "{}", text(&missing));
}
