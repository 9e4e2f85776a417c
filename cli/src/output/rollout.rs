//! Rollouts as the CLI prints them (`hypersaga rollout …`): a table of rollouts, one in detail
//! with each of its clusters, the JSON document behind `-o json|yaml`, and the lines a watch
//! prints as a rollout moves from wave to wave.
//!
//! Waves are shown counting from 1 (`wave 1/2`, the first being the canary), as the API's
//! messages say them; the document keeps the API's numbers (`wave` 0 is the canary).

use std::collections::BTreeMap;

use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

use super::{Table, duration_text, enum_name, error_json, time, time_text};

/// `rollout/<id>`, as kubectl names what it printed.
pub fn rollout_name(id: &str) -> String {
    format!("rollout/{id}")
}

/// `RUNNING` → `running`.
pub fn rollout_state(s: i32) -> String {
    pb::rollout::State::try_from(s)
        .map(|s| enum_name(s.as_str_name(), "STATE_"))
        .unwrap_or_else(|_| s.to_string())
}

/// A rollout's cluster's state: `pending`, `upgrading`, `succeeded` or `failed`.
pub fn rollout_cluster_state(s: i32) -> String {
    pb::rollout_cluster::State::try_from(s)
        .map(|s| enum_name(s.as_str_name(), "STATE_"))
        .unwrap_or_else(|_| s.to_string())
}

/// Whether the rollout has ended (succeeded, failed or cancelled): a watch ends there.
pub fn rollout_ended(r: &pb::Rollout) -> bool {
    matches!(
        pb::rollout::State::try_from(r.state),
        Ok(pb::rollout::State::Succeeded
            | pb::rollout::State::Failed
            | pb::rollout::State::Cancelled)
    )
}

/// How many of a rollout's clusters are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub succeeded: usize,
    pub upgrading: usize,
    pub failed: usize,
}

pub fn counts(r: &pb::Rollout) -> Counts {
    let mut c = Counts {
        total: r.clusters.len(),
        ..Default::default()
    };
    for m in &r.clusters {
        match pb::rollout_cluster::State::try_from(m.state) {
            Ok(pb::rollout_cluster::State::Succeeded) => c.succeeded += 1,
            Ok(pb::rollout_cluster::State::Upgrading) => c.upgrading += 1,
            Ok(pb::rollout_cluster::State::Failed) => c.failed += 1,
            _ => {}
        }
    }
    c
}

/// The wave now (or the last one, once ended) of all of them, from 1: `1/2`; `-` without
/// clusters.
pub fn wave_text(r: &pb::Rollout) -> String {
    if r.waves == 0 {
        "-".to_owned()
    } else {
        format!("{}/{}", r.wave + 1, r.waves)
    }
}

/// A cluster's wave for people: `1 (canary)`, `2`, …
fn member_wave(wave: u32) -> String {
    if wave == 0 {
        "1 (canary)".to_owned()
    } else {
        (wave + 1).to_string()
    }
}

/// A cluster's wave in a watch line: `canary, wave 1`, `wave 2`, …
fn member_wave_phrase(wave: u32) -> String {
    if wave == 0 {
        "canary, wave 1".to_owned()
    } else {
        format!("wave {}", wave + 1)
    }
}

/// The selector as `k=v,k2=v2`, by key.
pub fn selector_text(r: &pb::Rollout) -> String {
    super::nodepool::labels_text(&r.selector)
}

/// The first failed cluster: the one that stopped the rollout.
fn failed_cluster(r: &pb::Rollout) -> Option<&pb::RolloutCluster> {
    r.clusters
        .iter()
        .find(|m| m.state == pb::rollout_cluster::State::Failed as i32)
}

fn error_text(e: &pb::ErrorDetail) -> String {
    if e.code.is_empty() {
        e.message.clone()
    } else {
        format!("{}: {}", e.code, e.message)
    }
}

pub fn rollout_json(r: &pb::Rollout) -> Value {
    let selector: BTreeMap<&String, &String> = r.selector.iter().collect();
    let c = counts(r);
    json!({
        "id": r.id,
        "state": rollout_state(r.state),
        "message": r.message,
        "selector": selector,
        "release_image": r.release_image,
        "addon": r.addon.as_ref().map(crate::commands::addon::addon_ref_text),
        "canary": r.canary,
        "max_parallel": r.max_parallel,
        "wave": r.wave,
        "waves": r.waves,
        "counts": {
            "total": c.total,
            "succeeded": c.succeeded,
            "upgrading": c.upgrading,
            "failed": c.failed,
        },
        "create_time": time(&r.create_time),
        "end_time": time(&r.end_time),
        "created_by": r.created_by,
        "error": error_json(&r.error),
        "clusters": r.clusters.iter().map(|m| json!({
            "name": m.name,
            "wave": m.wave,
            "state": rollout_cluster_state(m.state),
            "operation": m.operation,
            "error": error_json(&m.error),
        })).collect::<Vec<_>>(),
    })
}

/// ID, STATE, WAVE (now, of all), CLUSTERS (upgraded/total), UPGRADING, RELEASE, MESSAGE;
/// `wide` adds the selector, the canary, the wave size and when it was made and ended.
pub fn rollouts_table(items: &[pb::Rollout], wide: bool) -> Table {
    let mut headers = vec!["ID", "STATE", "WAVE", "CLUSTERS", "UPGRADING", "TARGET"];
    if wide {
        headers.extend(["SELECTOR", "CANARY", "MAX PARALLEL", "CREATED", "ENDED"]);
    }
    headers.push("MESSAGE");
    let mut table = Table::new(headers);
    for r in items {
        let c = counts(r);
        let mut row = vec![
            r.id.clone(),
            rollout_state(r.state),
            wave_text(r),
            format!("{}/{}", c.succeeded, c.total),
            c.upgrading.to_string(),
            target_text(r),
        ];
        if wide {
            row.extend([
                selector_text(r),
                r.canary.to_string(),
                r.max_parallel.to_string(),
                time_text(&r.create_time),
                if r.end_time.is_some() {
                    time_text(&r.end_time)
                } else {
                    String::new()
                },
            ]);
        }
        row.push(r.message.clone());
        table.row(row);
    }
    table
}

/// What a rollout moves its clusters to: a release image, or `add-on NAME@VERSION`.
pub fn target_text(r: &pb::Rollout) -> String {
    match &r.addon {
        Some(a) => format!("add-on {}", crate::commands::addon::addon_ref_text(a)),
        None => r.release_image.clone(),
    }
}

/// One rollout in detail: what it upgrades to, its waves, and each cluster with its wave,
/// state, operation and error.
pub fn rollout_text(r: &pb::Rollout) -> String {
    let c = counts(r);
    let mut out = format!("Rollout:   {}\n", r.id);
    out.push_str(&format!(
        "State:     {}  — {}\n",
        rollout_state(r.state),
        r.message
    ));
    out.push_str(&format!("Selector:  {}\n", selector_text(r)));
    match &r.addon {
        Some(_) => out.push_str(&format!("Add-on:    {}\n", target_text(r))),
        None => out.push_str(&format!("Release:   {}\n", r.release_image)),
    }
    out.push_str(&format!(
        "Waves:     {} (a canary of {}, then at most {} at a time); wave {}\n",
        r.waves,
        r.canary,
        r.max_parallel,
        wave_text(r)
    ));
    out.push_str(&format!(
        "Created:   {} by {}\n",
        time_text(&r.create_time),
        r.created_by
    ));
    if r.end_time.is_some() {
        out.push_str(&format!("Ended:     {}\n", time_text(&r.end_time)));
    }
    if let Some(e) = &r.error {
        out.push_str(&format!("Error:     {}\n", error_text(e)));
    }
    out.push_str(&format!(
        "Clusters:  {}/{} upgraded, {} upgrading, {} failed\n",
        c.succeeded, c.total, c.upgrading, c.failed
    ));
    let mut t = Table::new(vec!["NAME", "WAVE", "STATE", "OPERATION", "ERROR"]);
    for m in &r.clusters {
        t.row(vec![
            m.name.clone(),
            member_wave(m.wave),
            rollout_cluster_state(m.state),
            m.operation.clone(),
            m.error.as_ref().map(error_text).unwrap_or_default(),
        ]);
    }
    for line in t.render(true).lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// What `rollout create` says once the API took it.
pub fn rollout_started(r: &pb::Rollout) -> String {
    let n = r.clusters.len();
    format!(
        "Rollout {} started: {n} cluster{} ({}) to {} in {} wave{}: a canary of {}, then at most {} at a time.",
        r.id,
        if n == 1 { "" } else { "s" },
        selector_text(r),
        target_text(r),
        r.waves,
        if r.waves == 1 { "" } else { "s" },
        r.canary,
        r.max_parallel
    )
}

/// The last line of `rollout watch` and `create --wait`: how the rollout ended, its state as
/// the API names it (`SUCCEEDED`, `FAILED`, `CANCELLED`), and what to do about a failure.
pub fn rollout_outcome(r: &pb::Rollout) -> String {
    let c = counts(r);
    let state = pb::rollout::State::try_from(r.state).unwrap_or_default();
    let took = match (&r.create_time, &r.end_time) {
        (Some(a), Some(b)) => format!(" ({})", duration_text(b.seconds - a.seconds)),
        _ => String::new(),
    };
    match state {
        pb::rollout::State::Succeeded => format!(
            "Rollout {} SUCCEEDED: {}/{} clusters upgraded to {} in {} wave{}{took}.",
            r.id,
            c.succeeded,
            c.total,
            target_text(r),
            r.waves,
            if r.waves == 1 { "" } else { "s" }
        ),
        pb::rollout::State::Failed => {
            let why = match failed_cluster(r) {
                Some(m) => format!(
                    "cluster {} failed to upgrade{}",
                    m.name,
                    m.error
                        .as_ref()
                        .map(|e| format!(" ({})", error_text(e)))
                        .unwrap_or_default()
                ),
                None => r
                    .error
                    .as_ref()
                    .map(error_text)
                    .unwrap_or_else(|| r.message.clone()),
            };
            format!(
                "Rollout {} FAILED at wave {}: {why}; {}/{} upgraded, the rest untouched. \
                 Once the cause is fixed, `hypersaga rollout resume {}` retries the failed clusters.",
                r.id,
                wave_text(r),
                c.succeeded,
                c.total,
                r.id
            )
        }
        pb::rollout::State::Cancelled => format!(
            "Rollout {} CANCELLED at wave {}: {}/{} clusters upgraded; no further cluster is started.",
            r.id,
            wave_text(r),
            c.succeeded,
            c.total
        ),
        _ => format!(
            "Rollout {} is {}: {}",
            r.id,
            rollout_state(r.state),
            r.message
        ),
    }
}

/// What a watch last showed of the rollout, to print only what changed.
#[derive(Default)]
pub struct RolloutProgress {
    /// Each cluster's state and operation.
    seen: BTreeMap<String, (i32, String)>,
    /// The summary line last printed (without its time stamp).
    summary: Option<String>,
    started: Option<std::time::Instant>,
}

impl RolloutProgress {
    /// Lines for what changed since the last snapshot: the rollout's state, wave and counts
    /// (and, stopped by a failure, the cluster and its error), and each cluster that started,
    /// succeeded or failed. The first snapshot lists only clusters that have started.
    pub fn changes(&mut self, r: &pb::Rollout) -> Vec<String> {
        let started = *self.started.get_or_insert_with(std::time::Instant::now);
        let stamp = {
            let e = started.elapsed().as_secs();
            format!("[{:02}:{:02}]", e / 60, e % 60)
        };
        let first = self.seen.is_empty();
        let mut members = Vec::new();
        for m in &r.clusters {
            let now = (m.state, m.operation.clone());
            if self.seen.insert(m.name.clone(), now.clone()) == Some(now) {
                continue;
            }
            let state = rollout_cluster_state(m.state);
            if first && state == "pending" {
                continue;
            }
            let mut line = format!(
                "{stamp}   cluster {} ({}) {state}",
                m.name,
                member_wave_phrase(m.wave)
            );
            if !m.operation.is_empty() {
                line.push_str(&format!(", operation {}", m.operation));
            }
            if let Some(e) = &m.error {
                line.push_str(&format!(" — {}", error_text(e)));
            }
            members.push(line);
        }
        let now = summary(r);
        let said = (self.summary.as_ref() != Some(&now)).then(|| {
            self.summary = Some(now.clone());
            format!("{stamp} {now}")
        });
        let mut lines = Vec::new();
        let ended = rollout_ended(r);
        if !ended {
            lines.extend(said.clone());
        }
        lines.extend(members);
        if ended {
            lines.extend(said);
        }
        lines
    }
}

/// `rollout ro-… running: wave 2/3, 1/5 upgraded, 2 upgrading`, and for a failed one the
/// cluster that stopped it.
fn summary(r: &pb::Rollout) -> String {
    let c = counts(r);
    let mut line = format!(
        "rollout {} {}: wave {}, {}/{} upgraded, {} upgrading",
        r.id,
        rollout_state(r.state),
        wave_text(r),
        c.succeeded,
        c.total,
        c.upgrading
    );
    if c.failed > 0 {
        line.push_str(&format!(", {} failed", c.failed));
    }
    if r.state == pb::rollout::State::Failed as i32
        && let Some(m) = failed_cluster(r)
    {
        line.push_str(&format!(
            " — stopped by cluster {}{}",
            m.name,
            m.error
                .as_ref()
                .map(|e| format!(": {}", error_text(e)))
                .unwrap_or_default()
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::rollout::State as R;
    use pb::rollout_cluster::State as M;

    fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    fn member(name: &str, wave: u32, state: M, op: &str) -> pb::RolloutCluster {
        pb::RolloutCluster {
            name: name.into(),
            wave,
            state: state as i32,
            operation: op.into(),
            error: None,
        }
    }

    /// Three prod clusters, a canary of one then two at a time: the canary done, the second
    /// wave upgrading.
    fn rollout() -> pb::Rollout {
        pb::Rollout {
            id: "ro-0123456789abcdef".into(),
            selector: [("env".to_owned(), "prod".to_owned())].into(),
            release_image: "quay.io/openshift-release-dev/ocp-release:4.22.0-multi".into(),
            canary: 1,
            max_parallel: 2,
            state: R::Running as i32,
            message: "wave 2 of 2: 2 upgrading, 1/3 upgraded".into(),
            clusters: vec![
                member("prod-a", 0, M::Succeeded, "op-a"),
                member("prod-b", 1, M::Upgrading, "op-b"),
                member("prod-c", 1, M::Upgrading, "op-c"),
            ],
            wave: 1,
            waves: 2,
            create_time: ts(1_800_000_000),
            end_time: None,
            created_by: "tenant:acme".into(),
            error: None,
            addon: None,
        }
    }

    fn failed() -> pb::Rollout {
        let mut r = rollout();
        r.state = R::Failed as i32;
        r.end_time = ts(1_800_000_095);
        let e = pb::ErrorDetail {
            code: "UpgradeFailed".into(),
            message: "the HostedCluster rejected the release".into(),
            step: "controlplane.rollout".into(),
            ..Default::default()
        };
        r.clusters[1].state = M::Failed as i32;
        r.clusters[1].error = Some(e.clone());
        r.clusters[2].state = M::Succeeded as i32;
        r.error = Some(pb::ErrorDetail {
            message: format!("cluster prod-b: {}", e.message),
            ..e
        });
        r.message = "stopped: cluster prod-b failed to upgrade".into();
        r
    }

    #[test]
    fn the_table_shows_the_wave_the_clusters_done_and_upgrading_and_wide_adds_the_plan() {
        let t = rollouts_table(&[rollout()], false).render(true);
        let lines: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            lines[0],
            [
                "ID",
                "STATE",
                "WAVE",
                "CLUSTERS",
                "UPGRADING",
                "TARGET",
                "MESSAGE"
            ],
            "{t}"
        );
        assert_eq!(
            lines[1][..6],
            [
                "ro-0123456789abcdef",
                "running",
                "2/2",
                "1/3",
                "2",
                "quay.io/openshift-release-dev/ocp-release:4.22.0-multi"
            ],
            "{t}"
        );
        assert!(t.lines().nth(1).unwrap().ends_with("1/3 upgraded"), "{t}");
        let bare = rollouts_table(&[rollout()], false).render(false);
        assert_eq!(bare.lines().count(), 1, "{bare}");

        let wide = rollouts_table(&[failed()], true).render(true);
        for expected in [
            "SELECTOR",
            "CANARY",
            "MAX PARALLEL",
            "CREATED",
            "ENDED",
            "env=prod",
            "2027-01-15T08:00:00Z",
            "2027-01-15T08:01:35Z",
            "failed",
        ] {
            assert!(wide.contains(expected), "missing {expected:?} in:\n{wide}");
        }
    }

    #[test]
    fn get_lists_each_cluster_with_its_wave_state_operation_and_error() {
        let text = rollout_text(&failed());
        for expected in [
            "Rollout:   ro-0123456789abcdef",
            "State:     failed  — stopped: cluster prod-b failed to upgrade",
            "Selector:  env=prod",
            "Release:   quay.io/openshift-release-dev/ocp-release:4.22.0-multi",
            "Waves:     2 (a canary of 1, then at most 2 at a time); wave 2/2",
            "Created:   2027-01-15T08:00:00Z by tenant:acme",
            "Ended:     2027-01-15T08:01:35Z",
            "Error:     UpgradeFailed: cluster prod-b: the HostedCluster rejected the release",
            "Clusters:  2/3 upgraded, 0 upgrading, 1 failed",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("NAME"))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0], ["NAME", "WAVE", "STATE", "OPERATION", "ERROR"]);
        assert_eq!(
            rows[1],
            ["prod-a", "1", "(canary)", "succeeded", "op-a"],
            "{text}"
        );
        assert_eq!(
            rows[2],
            [
                "prod-b",
                "2",
                "failed",
                "op-b",
                "UpgradeFailed:",
                "the",
                "HostedCluster",
                "rejected",
                "the",
                "release"
            ],
            "{text}"
        );
        assert_eq!(rows[3], ["prod-c", "2", "succeeded", "op-c"], "{text}");
    }

    #[test]
    fn the_document_keeps_the_apis_numbers_and_names_states_in_words() {
        let doc = rollout_json(&failed());
        assert_eq!(doc["state"], "failed");
        assert_eq!(doc["waves"], 2);
        assert_eq!(doc["wave"], 1);
        assert_eq!(doc["selector"]["env"], "prod");
        assert_eq!(doc["counts"]["succeeded"], 2);
        assert_eq!(doc["counts"]["failed"], 1);
        assert_eq!(doc["clusters"][0]["wave"], 0, "the canary is wave 0");
        assert_eq!(doc["clusters"][1]["state"], "failed");
        assert_eq!(doc["clusters"][1]["error"]["code"], "UpgradeFailed");
        assert_eq!(doc["clusters"][2]["operation"], "op-c");
        assert_eq!(doc["end_time"], "2027-01-15T08:01:35Z");
        assert_eq!(doc["error"]["step"], "controlplane.rollout");
        let yaml = super::super::Output::Yaml.document(&doc).unwrap().unwrap();
        assert_eq!(serde_norway::from_str::<Value>(&yaml).unwrap(), doc);
        assert_eq!(rollout_name("ro-1"), "rollout/ro-1");
        assert_eq!(rollout_state(R::Cancelled as i32), "cancelled");
        assert_eq!(rollout_cluster_state(M::Pending as i32), "pending");
    }

    #[test]
    fn a_watch_prints_a_line_per_change_and_the_failure_names_the_cluster() {
        let mut p = RolloutProgress::default();
        let mut r = rollout();
        r.clusters[0].state = M::Upgrading as i32;
        r.clusters[1].state = M::Pending as i32;
        r.clusters[1].operation.clear();
        r.clusters[2].state = M::Pending as i32;
        r.clusters[2].operation.clear();
        r.wave = 0;
        let lines = p.changes(&r);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].ends_with(
                "rollout ro-0123456789abcdef running: wave 1/2, 0/3 upgraded, 1 upgrading"
            ),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with("cluster prod-a (canary, wave 1) upgrading, operation op-a"),
            "{lines:?}"
        );
        assert!(p.changes(&r).is_empty(), "nothing changed, nothing said");

        let lines = p.changes(&rollout());
        assert!(
            lines[0].ends_with("running: wave 2/2, 1/3 upgraded, 2 upgrading"),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with("cluster prod-a (canary, wave 1) succeeded, operation op-a"),
            "{lines:?}"
        );
        assert!(lines[2].ends_with("cluster prod-b (wave 2) upgrading, operation op-b"));
        assert!(lines[3].ends_with("cluster prod-c (wave 2) upgrading, operation op-c"));

        let lines = p.changes(&failed());
        assert!(
            lines[0].ends_with(
                "cluster prod-b (wave 2) failed, operation op-b — UpgradeFailed: the HostedCluster rejected the release"
            ),
            "{lines:?}"
        );
        let last = lines.last().unwrap();
        assert!(
            last.ends_with(
                "rollout ro-0123456789abcdef failed: wave 2/2, 2/3 upgraded, 0 upgrading, 1 failed — stopped by cluster prod-b: UpgradeFailed: the HostedCluster rejected the release"
            ),
            "the end comes after the clusters that led to it: {lines:?}"
        );
    }

    #[test]
    fn the_outcome_names_the_state_and_for_a_failure_the_cluster_and_what_resume_does() {
        let mut done = rollout();
        done.state = R::Succeeded as i32;
        done.end_time = ts(1_800_000_065);
        for m in &mut done.clusters {
            m.state = M::Succeeded as i32;
        }
        assert_eq!(
            rollout_outcome(&done),
            "Rollout ro-0123456789abcdef SUCCEEDED: 3/3 clusters upgraded to quay.io/openshift-release-dev/ocp-release:4.22.0-multi in 2 waves (1m05s)."
        );
        assert_eq!(
            rollout_outcome(&failed()),
            "Rollout ro-0123456789abcdef FAILED at wave 2/2: cluster prod-b failed to upgrade (UpgradeFailed: the HostedCluster rejected the release); 2/3 upgraded, the rest untouched. Once the cause is fixed, `hypersaga rollout resume ro-0123456789abcdef` retries the failed clusters."
        );
        let mut cancelled = rollout();
        cancelled.state = R::Cancelled as i32;
        assert!(rollout_outcome(&cancelled).starts_with(
            "Rollout ro-0123456789abcdef CANCELLED at wave 2/2: 1/3 clusters upgraded"
        ));
        assert!(rollout_ended(&cancelled) && !rollout_ended(&rollout()));
        assert_eq!(
            rollout_started(&rollout()),
            "Rollout ro-0123456789abcdef started: 3 clusters (env=prod) to quay.io/openshift-release-dev/ocp-release:4.22.0-multi in 2 waves: a canary of 1, then at most 2 at a time."
        );
    }
}
