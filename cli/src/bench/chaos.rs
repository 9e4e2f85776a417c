//! `bench fleet --kill-every-ms`: `kill -9` of replicas while the fleet is created and deleted,
//! and what a user would check afterwards: each operation ended once, its journal has no gap
//! and no repeat, and Azure holds one cluster's worth of resources per cluster.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The replica the bench's client talks to: killing it would only drop the bench's own calls.
const SPARED: &str = "gateway-0";

/// Kills one replica (any role) every `every`, in turn over the ones `hypersaga dev` lists,
/// until stopped; the supervisor restarts each.
pub struct Killer {
    stop: CancellationToken,
    task: JoinHandle<Vec<String>>,
}

impl Killer {
    pub fn start(state_dir: PathBuf, every: Duration) -> Self {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut killed = Vec::new();
            for i in 0usize.. {
                tokio::select! {
                    () = token.cancelled() => break,
                    () = tokio::time::sleep(every) => {}
                }
                let pids: BTreeMap<String, u32> = std::fs::read(state_dir.join("pids.json"))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default();
                let victims: Vec<(&String, &u32)> =
                    pids.iter().filter(|(n, _)| *n != SPARED).collect();
                if victims.is_empty() {
                    continue;
                }
                // A reproducible spread over every role and replica.
                let (name, pid) = victims[(i * 7 + 3) % victims.len()];
                let Ok(pid) = i32::try_from(*pid) else {
                    continue;
                };
                let sent = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
                if sent.is_ok() {
                    killed.push(name.clone());
                }
            }
            killed
        });
        Self { stop, task }
    }

    /// Stops killing; the replicas killed, in order.
    pub async fn stop(self) -> Vec<String> {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

/// What the kills did not break, per phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Chaos {
    /// Replicas killed while the phase ran.
    pub kills: usize,
    /// By role (`coordinator`, `network`, …).
    pub kills_by_role: BTreeMap<String, usize>,
    /// Operations whose journal does not show their end exactly once (`cluster: n × event`).
    pub not_once: Vec<String>,
    /// Operations whose journal has a gap or a repeat.
    pub broken_journals: Vec<String>,
}

impl Chaos {
    pub fn new(killed: &[String]) -> Self {
        let mut kills_by_role = BTreeMap::new();
        for name in killed {
            let role = name.rsplit_once('-').map_or(name.as_str(), |(r, _)| r);
            *kills_by_role.entry(role.to_owned()).or_insert(0) += 1;
        }
        Self {
            kills: killed.len(),
            kills_by_role,
            ..Self::default()
        }
    }

    /// Checks each cluster's journal of the operation that `ends` (`cluster.ready`,
    /// `cluster.deleted`): that event exactly once, and positions 1, 2, 3, … without gap or
    /// repeat.
    pub fn check(&mut self, journals: &BTreeMap<String, Vec<Event>>, ends: &str) {
        for (cluster, events) in journals {
            let mut by_op: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
            for e in events {
                by_op.entry(e.operation.as_str()).or_default().push(e);
            }
            let Some((op, events)) = by_op
                .into_iter()
                .find(|(_, evs)| evs.iter().any(|e| e.kind == ends))
            else {
                self.not_once.push(format!("{cluster}: no {ends}"));
                continue;
            };
            let n = events.iter().filter(|e| e.kind == ends).count();
            if n != 1 {
                self.not_once.push(format!("{cluster}: {n} × {ends}"));
            }
            let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
            if seqs != (1..=seqs.len() as u64).collect::<Vec<_>>() {
                self.broken_journals.push(format!("{cluster} ({op})"));
            }
        }
    }
}

/// One audit event, as much of it as the checks need.
#[derive(Clone, Debug, Deserialize)]
pub struct Event {
    pub seq: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub cluster: String,
    pub operation: String,
}

/// Every audit event of `tenant`'s clusters named in `clusters`, by cluster, in stream order.
pub async fn journals(
    endpoints: &crate::endpoints::Endpoints,
    tenant: &str,
    clusters: &[String],
) -> anyhow::Result<BTreeMap<String, Vec<Event>>> {
    let access = crate::audit_feed::AuditAccess::from_endpoints(endpoints);
    let tenant = hypersaga_model::TenantId::new(tenant)?;
    let consumer = crate::audit_feed::open(&access, Some(&tenant), None, true)
        .await
        .context("reading the audit stream")?;
    let count = consumer.cached_info().num_pending;
    let mut messages = consumer.messages().await?;
    let mut out: BTreeMap<String, Vec<Event>> =
        clusters.iter().map(|c| (c.clone(), Vec::new())).collect();
    for _ in 0..count {
        let msg = tokio::time::timeout(Duration::from_secs(10), messages.next())
            .await
            .context("the audit stream stalled")?
            .context("the audit stream ended")??;
        let Ok(event) = serde_json::from_slice::<Event>(&msg.payload) else {
            continue;
        };
        if let Some(events) = out.get_mut(&event.cluster) {
            events.push(event);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64, kind: &str, cluster: &str, op: &str) -> Event {
        Event {
            seq,
            kind: kind.into(),
            cluster: cluster.into(),
            operation: op.into(),
        }
    }

    #[test]
    fn an_end_seen_twice_or_a_gap_is_reported_and_kills_count_by_role() {
        let journals: BTreeMap<String, Vec<Event>> = [
            (
                "a".to_owned(),
                vec![
                    ev(1, "cluster.accepted", "a", "op1"),
                    ev(2, "cluster.ready", "a", "op1"),
                ],
            ),
            (
                "b".to_owned(),
                vec![
                    ev(1, "cluster.accepted", "b", "op2"),
                    ev(3, "cluster.ready", "b", "op2"),
                    ev(3, "cluster.ready", "b", "op2"),
                ],
            ),
            ("c".to_owned(), vec![ev(1, "cluster.accepted", "c", "op3")]),
        ]
        .into();
        let mut chaos = Chaos::new(&[
            "coordinator-1".into(),
            "network-0".into(),
            "network-2".into(),
        ]);
        chaos.check(&journals, "cluster.ready");
        assert_eq!(chaos.kills, 3);
        assert_eq!(chaos.kills_by_role["network"], 2);
        assert_eq!(
            chaos.not_once,
            vec!["b: 2 × cluster.ready", "c: no cluster.ready"]
        );
        assert_eq!(chaos.broken_journals, vec!["b (op2)"]);
    }
}
