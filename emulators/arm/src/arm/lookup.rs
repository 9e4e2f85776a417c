//! Finding what a request addresses: the resource group gate ARM applies before any resource
//! provider, the not-found answers, and children kept inline in their parent (subnets).

use serde_json::Value;

use super::Ctx;
use super::lro::op_url;
use crate::errors::{ArmError, Result};
use crate::path::ResourceRef;
use crate::store::{OpKind, Store, StoredResource};

/// RG must exist (and, for writes, not be deleting).
pub(super) fn check_rg<'s>(
    store: &'s Store,
    r: &ResourceRef,
    write: bool,
) -> Result<&'s StoredResource> {
    let rg = store
        .get(&r.rg_key())
        .ok_or_else(|| ArmError::resource_group_not_found(&r.rg))?;
    if write
        && rg
            .pending
            .as_ref()
            .is_some_and(|p| p.kind == OpKind::Delete)
    {
        return Err(ArmError::resource_group_being_deleted(&rg.name));
    }
    Ok(rg)
}

/// Refuses a write to `key` while an earlier write to it is still running
/// (`AnotherOperationInProgress`). Settled operations are already gone, so any pending write
/// is still in flight.
pub(super) fn ensure_not_busy(ctx: &Ctx<'_>, store: &Store, key: &str) -> Result<()> {
    let Some(p) = store
        .get(key)
        .and_then(|res| res.pending.as_ref())
        .filter(|p| p.kind == OpKind::Write && p.done_at > ctx.now)
    else {
        return Ok(());
    };
    let status_url = store
        .op(&p.op_id)
        .and_then(|o| o.status_path.as_deref())
        .map(|s| op_url(&ctx.base, s, &ctx.api_version))
        .unwrap_or_default();
    let left = (p.done_at - ctx.now).as_seconds_f64().ceil().max(1.0) as u64;
    Err(ArmError::another_operation_in_progress(&status_url, left))
}

pub(super) fn not_found(r: &ResourceRef) -> ArmError {
    if r.rtype.is_resource_group() {
        ArmError::resource_group_not_found(&r.rg)
    } else {
        ArmError::resource_not_found(&r.type_and_name(), &r.rg)
    }
}

/// Finds an embedded child (subnet) in its parent's array.
pub(super) fn embedded<'s>(
    store: &'s Store,
    r: &ResourceRef,
    array: &str,
) -> Option<(&'s StoredResource, usize)> {
    let parent = store.get(&r.parent_key())?;
    let items = parent.properties.get(array)?.as_array()?;
    let idx = items.iter().position(|i| {
        i.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(r.name()))
    })?;
    Some((parent, idx))
}

pub(super) fn render_embedded(
    store: &Store,
    parent: &StoredResource,
    array: &str,
    idx: usize,
) -> Value {
    store
        .render(parent)
        .pointer(&format!("/properties/{array}/{idx}"))
        .cloned()
        .unwrap_or(Value::Null)
}
