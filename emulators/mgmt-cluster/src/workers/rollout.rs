//! Cluster API's MachineDeployment rollout planner (the v1.13 `rolloutPlanner` HyperShift's
//! control planes run): how many Machines each MachineSet of a NodePool's MachineDeployment
//! should have, given the Machines it has.
//!
//! A MachineDeployment has one new MachineSet (the current template) and the old ones of
//! earlier templates. `RollingUpdate` scales the new one up within `maxSurge` machines above
//! the desired count and the old ones down while at least `desired - maxUnavailable`
//! machines stay available, assuming the worst (that a scale-down deletes an available
//! machine); unavailable machines of old sets go first, and when nothing else can move one
//! of them is removed to unblock the rollout (`reconcileDeadlockBreaker`). `OnDelete`
//! replaces only the machines someone deleted. Plain scaling is the same planning with no
//! old sets. The result is a target per set; the MachineSets then create or delete Machines
//! to reach it (all of them in one pass, as CAPI's MachineSet does).
//!
//! The emulator's MachineSets converge at once, so a set's `spec.replicas` is its Machines
//! that are not being deleted and its `status.replicas` all of its Machines.

/// One MachineSet as the planner sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    pub name: String,
    /// Machines not being deleted (`spec.replicas`).
    pub spec: i64,
    /// Every Machine, deleting ones too (`status.replicas`).
    pub status: i64,
    /// Machines whose node is ready (`status.availableReplicas`).
    pub available: i64,
}

/// `MachineDeploymentStrategy`, with `maxSurge` and `maxUnavailable` as HyperShift passes them
/// (int or percentage).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    RollingUpdate {
        max_surge: IntOrPercent,
        max_unavailable: IntOrPercent,
    },
    OnDelete,
}

impl Default for Strategy {
    /// HyperShift's default: `RollingUpdate`, `maxSurge: 1`, `maxUnavailable: 0`.
    fn default() -> Self {
        Self::RollingUpdate {
            max_surge: IntOrPercent::Int(1),
            max_unavailable: IntOrPercent::Int(0),
        }
    }
}

/// An `intstr.IntOrString` count: absolute, or a percentage of the desired replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(i64),
    Percent(i64),
}

impl IntOrPercent {
    /// `GetScaledValueFromIntOrPercent`.
    fn scaled(self, total: i64, round_up: bool) -> i64 {
        match self {
            Self::Int(n) => n.max(0),
            Self::Percent(p) => {
                let scaled = p.max(0) * total.max(0);
                if round_up {
                    (scaled + 99) / 100
                } else {
                    scaled / 100
                }
            }
        }
    }

    /// From a JSON value (`1`, `"25%"`); `None` for anything else.
    pub fn parse(value: &serde_json::Value) -> Option<Self> {
        if let Some(n) = value.as_i64() {
            return Some(Self::Int(n));
        }
        let text = value.as_str()?;
        match text.strip_suffix('%') {
            Some(p) => p.parse().ok().map(Self::Percent),
            None => text.parse().ok().map(Self::Int),
        }
    }
}

impl Strategy {
    /// `ResolveFenceposts`: surge rounded up, unavailable down, and never both zero.
    pub fn fenceposts(&self, desired: i64) -> (i64, i64) {
        match self {
            Self::RollingUpdate {
                max_surge,
                max_unavailable,
            } => {
                let surge = max_surge.scaled(desired, true);
                let unavailable = max_unavailable.scaled(desired, false);
                if surge == 0 && unavailable == 0 {
                    (0, 1)
                } else {
                    (surge, unavailable)
                }
            }
            Self::OnDelete => (0, 0),
        }
    }

    /// `MaxUnavailable`: at most the desired replicas.
    pub fn max_unavailable(&self, desired: i64) -> i64 {
        self.fenceposts(desired).1.min(desired.max(0))
    }
}

/// The planned `spec.replicas` of the new set and of each old set (same order as given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub new: i64,
    pub old: Vec<i64>,
}

/// Plans one pass of the MachineDeployment controller. `old` are the sets of earlier
/// templates, oldest first.
pub fn plan(desired: i64, strategy: &Strategy, new: &Set, old: &[Set]) -> Plan {
    let desired = desired.max(0);
    let all = || std::iter::once(new).chain(old.iter());
    // `TotalMachineSetsReplicaSum`: machines still being deleted count.
    let total: i64 = all().map(|s| s.spec.max(s.status)).sum();
    let mut new_target = new.spec;
    let mut intents: Vec<Option<i64>> = vec![None; old.len()];
    let mut new_intent = false;

    // `reconcileNewMachineSet` / `NewMSNewReplicas`.
    if new.spec > desired {
        new_target = desired;
        new_intent = true;
    } else if new.spec < desired {
        let room = match strategy {
            Strategy::RollingUpdate { .. } => desired + strategy.fenceposts(desired).0 - total,
            Strategy::OnDelete => desired - total,
        };
        if room > 0 {
            new_target = new.spec + room.min(desired - new.spec);
            new_intent = true;
        }
    }

    match strategy {
        Strategy::RollingUpdate { .. } => {
            scale_down_rolling(desired, strategy, new, old, new_target, &mut intents)
        }
        Strategy::OnDelete => scale_down_on_delete(desired, old, new_target, &mut intents),
    }

    // `reconcileDeadlockBreaker`: old sets hold unavailable machines, nothing is moving,
    // and the new set's machines are all available: remove one of the old ones.
    if matches!(strategy, Strategy::RollingUpdate { .. }) {
        let old_actual: i64 = old.iter().map(|s| s.status).sum();
        let old_available: i64 = old.iter().map(|s| s.available).sum();
        let moving =
            new_intent || intents.iter().any(Option::is_some) || all().any(|s| s.spec != s.status);
        if old_actual > 0
            && old_actual != old_available
            && !moving
            && new.available == new.status
            && let Some(i) = old
                .iter()
                .position(|s| s.available != s.status && s.spec > 0)
        {
            intents[i] = Some((old[i].spec - 1).max(0));
        }
    }

    Plan {
        new: new_target,
        old: old
            .iter()
            .zip(intents)
            .map(|(s, i)| i.unwrap_or(s.spec))
            .collect(),
    }
}

/// `reconcileOldMachineSetsRollingUpdate`.
fn scale_down_rolling(
    desired: i64,
    strategy: &Strategy,
    new: &Set,
    old: &[Set],
    new_target: i64,
    intents: &mut [Option<i64>],
) {
    if old.iter().map(|s| s.spec).sum::<i64>() == 0 {
        return;
    }
    let min_available = (desired - strategy.max_unavailable(desired)).max(0);
    let total_spec: i64 = new.spec + old.iter().map(|s| s.spec).sum::<i64>();
    let mut total_available: i64 = new.available + old.iter().map(|s| s.available).sum::<i64>();
    // Scale-downs already under way: machines being deleted, and this pass's new-set intent.
    let pending: i64 = old.iter().map(|s| (s.status - s.spec).max(0)).sum::<i64>()
        + (new.status - new.spec.min(new_target)).max(0);
    let new_unavailable = (new.spec - new.available).max(0);
    let mut to_scale_down = (total_spec - pending - min_available - new_unavailable).max(0);
    if to_scale_down == 0 {
        return;
    }
    // Unavailable replicas first, then any, never breaching availability.
    for only_unavailable in [true, false] {
        for (i, set) in old.iter().enumerate() {
            if to_scale_down <= 0 {
                break;
            }
            let replicas = intents[i].unwrap_or(set.spec);
            if replicas <= 0 {
                continue;
            }
            let max_scale_down = if only_unavailable {
                (replicas - set.available).max(0)
            } else {
                replicas
            };
            let mut scale_down = max_scale_down.min(to_scale_down);
            if scale_down == 0 {
                continue;
            }
            if set.available > 0 {
                let new_spec = (replicas - scale_down).max(0);
                let mut deleted = (set.status - new_spec).max(0);
                if deleted > 0 {
                    if total_available - min_available < deleted {
                        let can_delete = (total_available - min_available).max(0);
                        let revisited = (set.status - can_delete).min(replicas);
                        scale_down = (replicas - revisited).max(0);
                        deleted = (set.status - revisited).max(0);
                    }
                    total_available -= set.available.min(deleted);
                }
            }
            if scale_down > 0 {
                intents[i] = Some((replicas - scale_down).max(0));
                to_scale_down = (to_scale_down - scale_down).max(0);
            }
        }
    }
}

/// `reconcileOldMachineSetsOnDelete`: old sets only follow their deleted machines, and give
/// up replicas beyond the desired count.
fn scale_down_on_delete(desired: i64, old: &[Set], new_target: i64, intents: &mut [Option<i64>]) {
    let old_count: i64 = old.iter().map(|s| s.spec).sum();
    if old_count == 0 {
        return;
    }
    let mut to_scale_down = (old_count + new_target - desired).max(0);
    for (i, set) in old.iter().enumerate() {
        if to_scale_down <= 0 {
            break;
        }
        if set.spec <= 0 {
            continue;
        }
        let scale_down = set.spec.min(to_scale_down);
        intents[i] = Some(set.spec - scale_down);
        to_scale_down -= scale_down;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, spec: i64, status: i64, available: i64) -> Set {
        Set {
            name: name.into(),
            spec,
            status,
            available,
        }
    }

    /// Runs the planner with the MachineSets converging at once and a machine becoming
    /// available one pass after it is made; answers (available, machines) after each pass.
    fn roll(desired: i64, strategy: &Strategy, old_count: i64) -> Vec<(i64, i64)> {
        // (spec, pending creations this pass) per set; all old machines available.
        let (mut new, mut new_ready) = (0i64, 0i64);
        let mut old = old_count;
        let mut seen = Vec::new();
        for _ in 0..50 {
            let p = plan(
                desired,
                strategy,
                &set("new", new, new, new_ready),
                &[set("old", old, old, old)],
            );
            // New machines made this pass are not available until the next one.
            new_ready = new;
            new = p.new;
            old = p.old[0];
            seen.push((new_ready + old, new + old));
            if old == 0 && new == desired && new_ready == desired {
                break;
            }
        }
        seen
    }

    #[test]
    fn a_default_rolling_update_surges_by_one_and_never_loses_availability() {
        let seen = roll(3, &Strategy::default(), 3);
        assert_eq!(seen.last(), Some(&(3, 3)), "{seen:?}");
        for (available, machines) in &seen {
            assert!(*available >= 3, "{seen:?}");
            assert!(*machines <= 4, "{seen:?}");
        }
        // First pass: one new machine, no old one removed.
        assert_eq!(
            plan(
                3,
                &Strategy::default(),
                &set("n", 0, 0, 0),
                &[set("o", 3, 3, 3)]
            ),
            Plan {
                new: 1,
                old: vec![3]
            }
        );
        // The new machine available: one old one goes, and another new one is made once
        // the deletion is under way.
        assert_eq!(
            plan(
                3,
                &Strategy::default(),
                &set("n", 1, 1, 1),
                &[set("o", 3, 3, 3)]
            ),
            Plan {
                new: 1,
                old: vec![2]
            }
        );
        assert_eq!(
            plan(
                3,
                &Strategy::default(),
                &set("n", 1, 1, 1),
                &[set("o", 2, 3, 2)]
            ),
            Plan {
                new: 1,
                old: vec![2]
            },
            "the deleting machine still counts against the surge"
        );
        assert_eq!(
            plan(
                3,
                &Strategy::default(),
                &set("n", 1, 1, 1),
                &[set("o", 2, 2, 2)]
            ),
            Plan {
                new: 2,
                old: vec![2]
            }
        );
    }

    #[test]
    fn surge_and_unavailability_come_from_the_strategy() {
        let fast = Strategy::RollingUpdate {
            max_surge: IntOrPercent::Percent(50),
            max_unavailable: IntOrPercent::Int(1),
        };
        assert_eq!(fast.fenceposts(3), (2, 1));
        // 2 new at once and one old one removed at once.
        assert_eq!(
            plan(3, &fast, &set("n", 0, 0, 0), &[set("o", 3, 3, 3)]),
            Plan {
                new: 2,
                old: vec![2]
            }
        );
        let zero = Strategy::RollingUpdate {
            max_surge: IntOrPercent::Int(0),
            max_unavailable: IntOrPercent::Percent(10),
        };
        assert_eq!(zero.fenceposts(3), (0, 1), "never both zero");
        let seen = roll(3, &fast, 3);
        assert!(seen.iter().all(|(a, m)| *a >= 2 && *m <= 5), "{seen:?}");
        assert_eq!(seen.last(), Some(&(3, 3)));
    }

    #[test]
    fn scaling_is_all_at_once_and_prefers_nothing() {
        let s = Strategy::default();
        assert_eq!(
            plan(5, &s, &set("n", 2, 2, 2), &[]),
            Plan {
                new: 5,
                old: vec![]
            }
        );
        assert_eq!(
            plan(1, &s, &set("n", 4, 4, 4), &[]),
            Plan {
                new: 1,
                old: vec![]
            }
        );
        assert_eq!(
            plan(0, &s, &set("n", 0, 1, 0), &[]),
            Plan {
                new: 0,
                old: vec![]
            }
        );
    }

    #[test]
    fn an_unavailable_old_machine_goes_first_and_a_stuck_rollout_is_unblocked() {
        let s = Strategy::default();
        // Old set 3 machines, one never became available; new set full of available ones.
        assert_eq!(
            plan(3, &s, &set("n", 1, 1, 1), &[set("o", 3, 3, 2)]),
            Plan {
                new: 1,
                old: vec![2]
            }
        );
        // Surge used up, the old set's only unavailable machine blocks: one goes anyway.
        assert_eq!(
            plan(1, &s, &set("n", 1, 1, 1), &[set("o", 1, 1, 0)]),
            Plan {
                new: 1,
                old: vec![0]
            }
        );
    }

    #[test]
    fn on_delete_replaces_only_what_was_deleted() {
        let s = Strategy::OnDelete;
        assert_eq!(
            plan(3, &s, &set("n", 0, 0, 0), &[set("o", 3, 3, 3)]),
            Plan {
                new: 0,
                old: vec![3]
            }
        );
        // Someone deleted an old machine: its replacement is a new one.
        assert_eq!(
            plan(3, &s, &set("n", 0, 0, 0), &[set("o", 2, 2, 2)]),
            Plan {
                new: 1,
                old: vec![2]
            }
        );
        // Scaled down while old machines remain: the old ones give way.
        assert_eq!(
            plan(2, &s, &set("n", 1, 1, 1), &[set("o", 2, 2, 2)]),
            Plan {
                new: 1,
                old: vec![1]
            }
        );
    }
}
