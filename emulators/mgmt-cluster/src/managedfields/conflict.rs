//! The 409 an apply conflict becomes (`managedfields/internal/conflict.go`,
//! `NewConflictError` and `getConflictMessage`; `errors.NewApplyConflict`).

use std::collections::BTreeMap;

use super::updater::Conflicts;
use crate::error::{ApiError, Cause};
use crate::fieldpath::path_string;

pub fn error(conflicts: Conflicts) -> ApiError {
    let mut list = conflicts.0;
    list.sort();
    let causes: Vec<Cause> = list
        .iter()
        .map(|(id, path)| Cause {
            reason: "FieldManagerConflict",
            field: path_string(path),
            message: format!("conflict with {}", id.describe()),
        })
        .collect();
    let message = if let [(id, path)] = list.as_slice() {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            id.describe(),
            path_string(path)
        )
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, path) in &list {
            by_manager
                .entry(id.describe())
                .or_default()
                .push(path_string(path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            list.len(),
            lines.join("\n")
        )
    };
    ApiError::apply_conflict(message, causes)
}
