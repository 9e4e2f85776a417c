//! One pass of Cluster API for a NodePool: the MachineDeployment controller plans how many
//! Machines each MachineSet should have ([`rollout::plan`]), each MachineSet creates or
//! deletes Machines to get there, and what changes in place is written on the Machines
//! that stay.

use serde_json::Value;

use super::capi::{self, NewMachine, SET_NAME_LABEL};
use super::deployment::MachineDeployment;
use super::machine_set;
use super::rollout::{self, Set};
use crate::meta::{is_deleting, meta_str};
use crate::store::Store;

/// Whose Machines these are.
pub struct Pool<'a> {
    /// The control plane's namespace, where the Machines live.
    pub namespace: &'a str,
    /// `<namespace>/<name>` of the NodePool.
    pub np_key: &'a str,
    pub np_name: &'a str,
    /// The CAPI cluster (the infra id).
    pub cluster: &'a str,
    /// `spec.platform.type` of the NodePool.
    pub platform: &'a str,
}

/// The MachineSet a Machine belongs to.
pub fn set_of(machine: &Value) -> &str {
    machine
        .pointer("/metadata/labels")
        .and_then(|l| l.get(SET_NAME_LABEL))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether a Machine's node has joined (`NodeHealthy=True`).
pub fn node_ready(machine: &Value) -> bool {
    machine
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "NodeHealthy" && c["status"] == "True")
        })
}

/// A MachineSet's counts from its Machines.
pub fn counts(name: &str, machines: &[Value]) -> Set {
    let mine: Vec<&Value> = machines.iter().filter(|m| set_of(m) == name).collect();
    let live: Vec<&&Value> = mine.iter().filter(|m| !is_deleting(m)).collect();
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Set {
        name: name.to_owned(),
        spec: count(live.len()),
        status: count(mine.len()),
        available: count(live.iter().filter(|m| node_ready(m)).count()),
    }
}

/// The old MachineSets of `md` (earlier templates, and Machines of sets it no longer
/// knows), oldest first.
pub fn old_sets(md: &MachineDeployment, machines: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for m in machines {
        let set = set_of(m);
        if md.set(set).is_none() && !names.iter().any(|n| n == set) {
            names.push(set.to_owned());
        }
    }
    names.extend(
        md.sets
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| *n != md.current),
    );
    names
}

/// Runs the MachineDeployment and its MachineSets once; answers whether a Machine was
/// created or deleted.
pub fn machine_sets(
    store: &Store,
    pool: &Pool<'_>,
    md: &MachineDeployment,
    machines: &[Value],
) -> bool {
    let new = counts(&md.current, machines);
    let old_names = old_sets(md, machines);
    let old: Vec<Set> = old_names.iter().map(|n| counts(n, machines)).collect();
    let plan = rollout::plan(md.replicas, &md.strategy, &new, &old);
    let mut changed = false;
    let targets = std::iter::once((&new, plan.new)).chain(old.iter().zip(plan.old));
    for (set, target) in targets {
        let live: Vec<&Value> = machines
            .iter()
            .filter(|m| set_of(m) == set.name && !is_deleting(m))
            .collect();
        if set.spec > target {
            let extra = usize::try_from(set.spec - target).unwrap_or(0);
            for name in machine_set::to_delete(&live, extra) {
                if let Some(m) = live.iter().find(|m| meta_str(m, "name") == Some(&name)) {
                    capi::delete(store, m);
                    changed = true;
                }
            }
        } else if set.spec < target
            && let Some(template) = md.set(&set.name)
        {
            for _ in set.spec..target {
                let new = NewMachine {
                    namespace: pool.namespace,
                    np_key: pool.np_key,
                    np_name: pool.np_name,
                    machine_set: &set.name,
                    cluster: pool.cluster,
                    template_hash: template.hash(),
                    version: &template.version,
                    platform: pool.platform,
                    in_place: &md.in_place,
                };
                match capi::create(store, &new) {
                    Ok(_) => changed = true,
                    Err(e) => tracing::debug!(error = %e, "machine not created"),
                }
            }
        }
    }
    for m in machines.iter().filter(|m| !is_deleting(m)) {
        capi::propagate(store, m, pool.platform, &md.in_place);
    }
    changed
}
