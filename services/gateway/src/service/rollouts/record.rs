//! A rollout as the bus keeps it (`hcp_rollouts`, key `<tenant>.<id>`), and the pure rules
//! of its progress: which wave is current, what a member's operation's end means, when the
//! rollout is over. The driver applies them; nothing here does I/O.

use std::collections::BTreeMap;

use hypersaga_model::record::{ErrorInfo, OperationKind, OperationState};
use hypersaga_model::{AddonRef, ClusterRecord, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

pub const ROLLOUT_RECORD_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RolloutRecord {
    pub v: u32,
    pub id: String,
    pub tenant: TenantId,
    pub selector: BTreeMap<String, String>,
    pub release_image: String,
    pub canary: u32,
    pub max_parallel: u32,
    pub state: RolloutState,
    pub message: String,
    pub members: Vec<Member>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    pub created_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The failure that stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// An add-on rollout's version (then `release_image` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon: Option<AddonRef>,
}

/// What a rollout moves its clusters to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// The control plane's release (`UpdateCluster`).
    Release(&'a str),
    /// An add-on's version on the clusters that carry it (`UpdateAddon`).
    Addon(&'a AddonRef),
}

impl Target<'_> {
    /// The operation that moves one cluster.
    pub fn kind(self) -> OperationKind {
        match self {
            Self::Release(_) => OperationKind::UpdateCluster,
            Self::Addon(_) => OperationKind::UpdateAddon,
        }
    }

    /// Whether `rec` concerns this rollout: every cluster a release; those carrying it, an
    /// add-on.
    pub fn concerns(self, rec: &ClusterRecord) -> bool {
        match self {
            Self::Release(_) => true,
            Self::Addon(a) => rec
                .spec
                .addon(&a.name)
                .is_some_and(|carried| carried.scope == a.scope),
        }
    }

    /// Whether `rec`'s spec is at the target already.
    pub fn reached(self, rec: &ClusterRecord) -> bool {
        match self {
            Self::Release(image) => rec.spec.release_image == image,
            Self::Addon(a) => rec.spec.addon(&a.name) == Some(a),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutState {
    Running,
    Paused,
    Succeeded,
    Failed,
    Cancelled,
}

impl RolloutState {
    /// Whether the driver still looks at it (a paused rollout's upgrades are still followed).
    pub fn is_live(self) -> bool {
        matches!(self, Self::Running | Self::Paused)
    }
}

/// One cluster of a rollout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub wave: u32,
    pub state: MemberState,
    /// The upgrade's operation, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Upgrades started for it (a resumed rollout starts a failed one again).
    #[serde(default)]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberState {
    Pending,
    Upgrading,
    Succeeded,
    Failed,
}

/// The wave of the `index`-th cluster: the canary wave holds the first `canary`, every later
/// one `max_parallel`.
pub fn wave_of(index: usize, canary: u32, max_parallel: u32) -> u32 {
    let (canary, per) = (canary.max(1) as usize, max_parallel.max(1) as usize);
    if index < canary {
        0
    } else {
        u32::try_from(1 + (index - canary) / per).unwrap_or(u32::MAX)
    }
}

impl RolloutRecord {
    /// What the rollout moves its clusters to.
    pub fn target(&self) -> Target<'_> {
        match &self.addon {
            Some(a) => Target::Addon(a),
            None => Target::Release(&self.release_image),
        }
    }

    /// `<tenant>.<id>`.
    pub fn key(&self) -> String {
        format!("{}.{}", self.tenant, self.id)
    }

    pub fn waves(&self) -> u32 {
        self.members.iter().map(|m| m.wave + 1).max().unwrap_or(0)
    }

    /// The first wave with a cluster not yet succeeded (`None`: all have).
    pub fn current_wave(&self) -> Option<u32> {
        self.members
            .iter()
            .filter(|m| m.state != MemberState::Succeeded)
            .map(|m| m.wave)
            .min()
    }

    /// Members upgrading now.
    pub fn upgrading(&self) -> usize {
        self.members
            .iter()
            .filter(|m| m.state == MemberState::Upgrading)
            .count()
    }

    /// What the rollout is doing, for people.
    pub fn describe(&self) -> String {
        let done = self
            .members
            .iter()
            .filter(|m| m.state == MemberState::Succeeded)
            .count();
        let total = self.members.len();
        match (self.state, self.current_wave()) {
            (RolloutState::Succeeded, _) => format!("all {total} clusters upgraded"),
            (RolloutState::Cancelled, _) => format!("cancelled: {done}/{total} clusters upgraded"),
            (RolloutState::Failed, _) => self
                .members
                .iter()
                .find(|m| m.state == MemberState::Failed)
                .map(|m| {
                    format!(
                        "stopped: cluster {} failed to upgrade ({}); {done}/{total} upgraded, the rest untouched",
                        m.name,
                        m.error.as_ref().map(|e| format!("{}: {}", e.code, e.message)).unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| "stopped".into()),
            (state, Some(wave)) => format!(
                "{}wave {} of {}: {} upgrading, {done}/{total} upgraded",
                if state == RolloutState::Paused { "paused at " } else { "" },
                wave + 1,
                self.waves(),
                self.upgrading()
            ),
            (_, None) => format!("{done}/{total} upgraded"),
        }
    }

    /// Ends the rollout once every member has succeeded, or stops it at the first failure.
    pub fn settle(&mut self, now: OffsetDateTime) {
        if !self.state.is_live() {
            return;
        }
        if let Some(failed) = self.members.iter().find(|m| m.state == MemberState::Failed) {
            self.state = RolloutState::Failed;
            self.error = failed.error.clone().map(|mut e| {
                e.message = format!("cluster {}: {}", failed.name, e.message);
                e
            });
            self.ended_at = Some(now);
        } else if self.current_wave().is_none() {
            self.state = RolloutState::Succeeded;
            self.ended_at = Some(now);
        }
        self.message = self.describe();
    }
}

/// What an upgrading member's operation says now: paused waits for an operator, so it stops
/// the rollout as a failure does.
pub fn outcome(state: OperationState) -> Option<MemberState> {
    match state {
        OperationState::Succeeded => Some(MemberState::Succeeded),
        OperationState::Failed | OperationState::Paused => Some(MemberState::Failed),
        OperationState::Running | OperationState::Compensating => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(n: usize, canary: u32, parallel: u32) -> RolloutRecord {
        RolloutRecord {
            v: ROLLOUT_RECORD_VERSION,
            id: "ro-1".into(),
            tenant: TenantId::new("acme").unwrap(),
            selector: [("env".to_owned(), "prod".to_owned())].into(),
            release_image: "quay.io/x:4.22.0-multi".into(),
            canary,
            max_parallel: parallel,
            state: RolloutState::Running,
            message: String::new(),
            members: (0..n)
                .map(|i| Member {
                    name: format!("c{i:02}"),
                    wave: wave_of(i, canary, parallel),
                    state: MemberState::Pending,
                    operation: None,
                    attempts: 0,
                    error: None,
                })
                .collect(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            ended_at: None,
            created_by: "tenant:acme".into(),
            request_id: None,
            error: None,
            addon: None,
        }
    }

    #[test]
    fn twelve_clusters_canary_one_then_four_make_four_waves() {
        let r = rollout(12, 1, 4);
        let waves: Vec<u32> = r.members.iter().map(|m| m.wave).collect();
        assert_eq!(waves, [0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3]);
        assert_eq!(r.waves(), 4);
        assert_eq!(r.current_wave(), Some(0));
    }

    #[test]
    fn the_first_failure_stops_it_naming_the_cluster_and_all_succeeded_ends_it() {
        let mut r = rollout(3, 1, 1);
        r.members[0].state = MemberState::Succeeded;
        r.members[1].state = MemberState::Failed;
        r.members[1].error = Some(ErrorInfo {
            code: "UpgradeFailed".into(),
            message: "boom".into(),
            ..Default::default()
        });
        r.settle(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(r.state, RolloutState::Failed);
        assert!(r.message.contains("cluster c01 failed"), "{}", r.message);
        assert!(r.error.as_ref().unwrap().message.starts_with("cluster c01"));
        let mut r = rollout(2, 1, 1);
        r.members
            .iter_mut()
            .for_each(|m| m.state = MemberState::Succeeded);
        r.settle(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(r.state, RolloutState::Succeeded);
    }

    #[test]
    fn an_add_on_rollout_concerns_the_clusters_carrying_it_and_is_reached_at_its_version() {
        use hypersaga_model::AddonScope;
        let rec = |addons: Vec<AddonRef>| -> ClusterRecord {
            let mut r: ClusterRecord = serde_json::from_value(serde_json::json!({
                "v": 1, "tenant": "acme", "name": "c1", "uid": "u", "infra_id": "c1-x",
                "spec": {"location": "eastus", "base_domain": "example.com", "release_image": "quay.io/x:4.21.0"},
                "created_at": "2026-11-01T00:00:00Z", "phase": "ready",
                "operation": {"id": "op-1", "cluster": "c1", "kind": "create", "state": "succeeded",
                    "started_at": "2026-11-01T00:00:00Z", "deadline": "2026-11-01T01:00:00Z", "steps": []},
            }))
            .unwrap();
            r.spec.addons = addons;
            r
        };
        let v2 = AddonRef::new("logging", "2", AddonScope::Tenant);
        let target = Target::Addon(&v2);
        assert_eq!(target.kind(), OperationKind::UpdateAddon);
        assert!(!target.concerns(&rec(vec![])));
        let platform = AddonRef::new("logging", "1", AddonScope::Platform);
        assert!(
            !target.concerns(&rec(vec![platform])),
            "another scope's add-on of that name"
        );
        let v1 = rec(vec![AddonRef::new("logging", "1", AddonScope::Tenant)]);
        assert!(target.concerns(&v1) && !target.reached(&v1));
        assert!(target.reached(&rec(vec![v2.clone()])));
        assert!(Target::Release("quay.io/x:4.21.0").reached(&v1));
    }
}
