//! DELETE: synchronous, asynchronous, or the resource group's cascading delete.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::Ctx;
use super::lookup::{check_rg, embedded, ensure_not_busy};
use super::lro::{op_url, start_op};
use super::respond::{accepted, empty};
use crate::errors::{ArmError, Result};
use crate::path::ResourceRef;
use crate::store::{OpKind, Store};
use crate::types::in_use::{subnet_in_use, users_of};
use crate::types::{DeleteShape, Storage};

pub(super) fn delete_resource(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
) -> Result<Response> {
    let rtype = r.rtype;
    let key = r.key();
    if !rtype.is_resource_group() {
        check_rg(store, r, true)?;
    }
    if rtype.serialize_writes {
        let busy = match rtype.storage {
            Storage::Embedded { .. } => r.parent_key(),
            Storage::Standalone => key.clone(),
        };
        ensure_not_busy(ctx, store, &busy)?;
    }
    if let Storage::Embedded { array } = rtype.storage {
        let Some((parent, idx)) = embedded(store, r, array) else {
            return Ok(empty(StatusCode::NO_CONTENT));
        };
        if let Some(u) = users_of(store, &key).first() {
            return Err(subnet_in_use(u));
        }
        let mut updated = parent.clone();
        if let Some(items) = updated
            .properties
            .get_mut(array)
            .and_then(Value::as_array_mut)
        {
            items.remove(idx);
        }
        let duration = ctx.emu.latency_for(rtype, rtype.delete_latency);
        let loc = updated.location.clone().unwrap_or_else(|| "global".into());
        let parent_key = r.parent_key();
        let (pending, status_url, result_url) =
            start_op(ctx, store, r, &parent_key, &loc, OpKind::Write, duration);
        updated
            .properties
            .insert("provisioningState".into(), json!("Updating"));
        updated.pending = Some(pending);
        store.insert(updated);
        return Ok(accepted(status_url.as_deref(), result_url.as_deref(), None));
    }

    let Some(existing) = store.get(&key).cloned() else {
        return Ok(empty(StatusCode::NO_CONTENT));
    };
    // A delete already under way answers with the same operation.
    if let Some(p) = existing
        .pending
        .as_ref()
        .filter(|p| p.kind == OpKind::Delete)
        && let Some(op) = store.op(&p.op_id)
    {
        let status_url = op
            .status_path
            .as_ref()
            .map(|s| op_url(&ctx.base, s, &ctx.api_version));
        return Ok(accepted(
            status_url.as_deref(),
            op.result_url.as_deref(),
            op.retry_after,
        ));
    }
    if let Some(refuse) = rtype.in_use {
        let users = users_of(store, &key);
        if !users.is_empty() {
            return Err(refuse(&existing, &users));
        }
    }
    if !rtype.blocking_children.is_empty() {
        let blockers: Vec<String> = store
            .children_of(&key)
            .filter(|c| {
                rtype
                    .blocking_children
                    .iter()
                    .any(|b| c.rtype.last_segment().eq_ignore_ascii_case(b))
            })
            .map(|c| c.id.split("/providers/").nth(1).unwrap_or(&c.id).to_owned())
            .collect();
        if !blockers.is_empty() {
            return Err(ArmError::new(
                StatusCode::CONFLICT,
                "CannotDeleteResource",
                format!(
                    "Cannot delete resource while nested resources exist. Some existing nested resource IDs include: '{}'. \
                     Please delete all nested resources before deleting this resource.",
                    blockers.join("','")
                ),
            ));
        }
    }
    match rtype.delete {
        DeleteShape::Sync => {
            store.remove_tree(&key);
            Ok(empty(StatusCode::OK))
        }
        DeleteShape::Async | DeleteShape::ResourceGroup => {
            let base = if rtype.is_resource_group() {
                ctx.emu.rg_delete_latency(store.descendants(&key).count())
            } else {
                rtype.delete_latency
            };
            let duration = ctx.emu.latency_for(rtype, base);
            let loc = existing.location.clone().unwrap_or_else(|| "global".into());
            let (pending, status_url, result_url) =
                start_op(ctx, store, r, &key, &loc, OpKind::Delete, duration);
            let retry = (rtype.delete == DeleteShape::ResourceGroup)
                .then(|| ctx.emu.config().latency.retry_after(15))
                .flatten();
            if let Some(res) = store.get_mut(&key) {
                res.properties
                    .insert("provisioningState".into(), json!("Deleting"));
                res.pending = Some(pending);
            }
            Ok(accepted(
                status_url.as_deref(),
                result_url.as_deref(),
                retry,
            ))
        }
    }
}
