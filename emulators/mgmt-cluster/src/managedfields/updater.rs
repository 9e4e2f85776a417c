//! Ownership bookkeeping and apply, as `structured-merge-diff/v6` `merge/update.go` does it:
//! who owns what after an update, the merged object and ownership after an apply, and the
//! conflicts that stop an apply.

use serde_json::Value;

use super::entries::{Entry, Managed, ManagerId};
use crate::fieldpath::{Path, Set};
use crate::schema::Node;
use crate::typed::{
    Comparison, MergeError, compare, ensure_named_fields_are_members, merge, remove_items,
    to_field_set,
};

/// The schema and the fields this endpoint may not change (the strategy's reset fields:
/// `status` on the main resource, `spec` on `/status`).
pub struct Scope<'a> {
    pub schema: &'a Node,
    pub ignored: &'a Set,
    pub api_version: &'a str,
}

/// Fields another manager owns that the write would change.
#[derive(Debug, Default)]
pub struct Conflicts(pub Vec<(ManagerId, Path)>);

/// Why an apply did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("apply conflicts")]
    Conflicts(Conflicts),
    #[error("failed to merge config: {0}")]
    Merge(#[from] MergeError),
}

/// `Updater.update`: strips fields the write changed from every other manager (a conflict
/// unless `force`) and removed fields from everyone.
fn update_owners(
    scope: &Scope<'_>,
    old: &Value,
    new: &Value,
    managed: &mut Managed,
    workflow: &ManagerId,
    force: bool,
) -> Result<Comparison, Conflicts> {
    let cmp = compare(scope.schema, old, new).exclude(scope.ignored);
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts: Vec<(ManagerId, Set)> = Vec::new();
    for (id, entry) in managed.iter() {
        if id == workflow {
            continue;
        }
        let taken = entry.set.intersection(&changed);
        if !taken.is_empty() {
            conflicts.push((id.clone(), taken));
        }
    }
    if !force && !conflicts.is_empty() {
        let mut list = Vec::new();
        for (id, set) in conflicts {
            list.extend(set.paths().into_iter().map(|p| (id.clone(), p)));
        }
        return Err(Conflicts(list));
    }
    for (id, taken) in conflicts {
        if let Some(entry) = managed.get_mut(&id) {
            entry.set = entry.set.difference(&taken);
        }
    }
    for (id, entry) in managed.iter_mut() {
        if id != workflow {
            entry.set = entry.set.difference(&cmp.removed);
        }
    }
    managed.retain(|_, e| !e.set.is_empty());
    Ok(cmp)
}

/// `Updater.Update`: `manager` now owns what it added or changed, everyone loses what it
/// removed.
pub fn update(
    scope: &Scope<'_>,
    live: &Value,
    new: &Value,
    managed: &mut Managed,
    manager: &ManagerId,
) {
    let Ok(cmp) = update_owners(scope, live, new, managed, manager, true) else {
        return; // unreachable: forced updates do not conflict
    };
    let previous = managed
        .get(manager)
        .map(|e| e.set.clone())
        .unwrap_or_default();
    let set = previous
        .difference(&cmp.removed)
        .union(&cmp.modified)
        .union(&cmp.added)
        .recursive_difference(scope.ignored);
    if set.is_empty() {
        managed.remove(manager);
    } else {
        managed.insert(
            manager.clone(),
            Entry {
                set,
                api_version: scope.api_version.to_owned(),
                time: None,
            },
        );
    }
}

/// `Updater.Apply`: merges `config` into `live`, makes `manager` own exactly the fields of
/// `config`, removes fields it applied last time and no longer does (unless someone else
/// owns them), and fails on conflicts unless `force`. Returns the new object, or `None`
/// when nothing changed.
pub fn apply(
    scope: &Scope<'_>,
    live: &Value,
    config: &Value,
    managed: &mut Managed,
    manager: &ManagerId,
    force: bool,
) -> Result<Option<Value>, ApplyError> {
    let merged = merge(scope.schema, live, config)?;
    let last = managed.get(manager).map(|e| e.set.clone());
    let set = to_field_set(scope.schema, config).recursive_difference(scope.ignored);
    managed.insert(
        manager.clone(),
        Entry {
            set,
            api_version: scope.api_version.to_owned(),
            time: managed.get(manager).and_then(|e| e.time.clone()),
        },
    );
    let new = match last.filter(|s| !s.is_empty()) {
        Some(last) => prune(scope.schema, &merged, managed, &last),
        None => merged,
    };
    update_owners(scope, live, &new, managed, manager, force).map_err(ApplyError::Conflicts)?;
    Ok((new != *live).then_some(new))
}

/// Removes what the applier owned last time and no longer applies, then puts back what
/// another manager (or the new configuration) owns and what the applier never owned.
fn prune(schema: &Node, merged: &Value, managed: &Managed, last: &Set) -> Value {
    let ensure = |s: &Set| ensure_named_fields_are_members(s, schema);
    let pruned = remove_items(schema, merged, &ensure(last));
    // addBackOwnedItems
    let owned = managed
        .values()
        .fold(Set::new(), |acc, e| acc.union(&e.set));
    let merged_set = ensure(&to_field_set(schema, merged));
    let pruned_set = ensure(&to_field_set(schema, &pruned));
    let pruned = remove_items(
        schema,
        merged,
        &merged_set.difference(&pruned_set.union(&ensure(&owned))),
    );
    // addBackDanglingItems
    let pruned_set = ensure(&to_field_set(schema, &pruned));
    remove_items(
        schema,
        merged,
        &merged_set
            .difference(&pruned_set)
            .intersection(&ensure(last)),
    )
}
