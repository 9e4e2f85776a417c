//! GET, HEAD and lists: single resources, collections, resource groups and the `/resources`
//! inventory.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::Ctx;
use super::lookup::{check_rg, embedded, not_found, render_embedded};
use super::respond::{empty, json_response, page};
use crate::errors::{ArmError, Result};
use crate::path::ResourceRef;
use crate::store::Store;
use crate::types::{ResourceType, Storage};

pub(super) fn get_resource(ctx: &Ctx<'_>, store: &Store, r: &ResourceRef) -> Result<Response> {
    if !r.rtype.is_resource_group() {
        check_rg(store, r, false)?;
    }
    if let Storage::Embedded { array } = r.rtype.storage {
        let (parent, idx) = embedded(store, r, array).ok_or_else(|| not_found(r))?;
        return Ok(json_response(
            StatusCode::OK,
            render_embedded(store, parent, array, idx),
        ));
    }
    let res = store.get(&r.key()).ok_or_else(|| not_found(r))?;
    let mut rendered = store.render(res);
    // `$expand=instanceView` adds the VM's instance view, as the compute RP does.
    let expand = ctx.query.get("$expand").map(String::as_str);
    if let (Some(view), Some(e)) = (r.rtype.instance_view, expand)
        && e.split(',')
            .any(|e| e.trim().eq_ignore_ascii_case("instanceView"))
    {
        rendered["properties"]["instanceView"] = view(res, ctx.now);
    }
    Ok(json_response(StatusCode::OK, rendered))
}

pub(super) fn head_resource(store: &Store, r: &ResourceRef) -> Response {
    let exists = match r.rtype.storage {
        Storage::Embedded { array } => embedded(store, r, array).is_some(),
        Storage::Standalone => store.get(&r.key()).is_some(),
    };
    empty(if exists {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    })
}

/// `GET /subscriptions/{s}/resourcegroups`.
pub(super) fn list_resource_groups(ctx: &Ctx<'_>, store: &Store, sub: &str) -> Response {
    let items: Vec<Value> = store
        .all()
        .filter(|r| r.rtype.is_resource_group() && r.sub.eq_ignore_ascii_case(sub))
        .map(|r| store.render(r))
        .collect();
    page(ctx, items)
}

pub(super) fn list_collection(
    ctx: &Ctx<'_>,
    store: &Store,
    sub: &str,
    rg: Option<&str>,
    rtype: &'static ResourceType,
    parent_names: &[String],
) -> Result<Response> {
    let Some(rg) = rg else {
        // Subscription-wide list of a top-level type.
        let items = store
            .all()
            .filter(|r| std::ptr::eq(r.rtype, rtype) && r.sub.eq_ignore_ascii_case(sub))
            .map(|r| store.render(r))
            .collect();
        return Ok(page(ctx, items));
    };
    let parent = ResourceRef {
        sub: sub.to_owned(),
        rg: rg.to_owned(),
        rtype,
        names: parent_names
            .iter()
            .cloned()
            .chain([String::new()])
            .collect(),
    };
    check_rg(store, &parent, false)?;
    let parent_key = parent.parent_key();
    if let Storage::Embedded { array } = rtype.storage {
        let owner = store
            .get(&parent_key)
            .ok_or_else(|| ArmError::parent_not_found(&parent.parent_type_and_name()))?;
        let rendered = store.render(owner);
        let items = rendered
            .pointer(&format!("/properties/{array}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        return Ok(page(ctx, items));
    }
    if rtype.depth() > 1 && store.get(&parent_key).is_none() {
        return Err(ArmError::resource_not_found(
            &parent.parent_type_and_name(),
            rg,
        ));
    }
    let items = store
        .children_of(&parent_key)
        .filter(|r| std::ptr::eq(r.rtype, rtype))
        .map(|r| store.render(r))
        .collect();
    Ok(page(ctx, items))
}

/// `resourceType eq 'X'` — the only `$filter` form the inventory understands.
fn filter_type(filter: &str) -> Option<String> {
    let (lhs, rhs) = filter.split_once(" eq ")?;
    if !lhs.trim().eq_ignore_ascii_case("resourceType") {
        return None;
    }
    Some(rhs.trim().trim_matches('\'').to_owned())
}

pub(super) fn inventory(
    ctx: &Ctx<'_>,
    store: &Store,
    sub: &str,
    rg: Option<&str>,
) -> Result<Response> {
    if let Some(rg) = rg {
        let key = format!("/subscriptions/{sub}/resourcegroups/{rg}").to_ascii_lowercase();
        if store.get(&key).is_none() {
            return Err(ArmError::resource_group_not_found(rg));
        }
    }
    let filter = ctx.query.get("$filter").map(String::as_str);
    let wanted = match filter {
        None => None,
        Some(f) => Some(filter_type(f).ok_or_else(|| {
            ArmError::bad_request(
                "InvalidFilterInQueryString",
                format!("Invalid $filter '{f}' specified in the query string."),
            )
        })?),
    };
    let items = store
        .all()
        .filter(|r| r.sub.eq_ignore_ascii_case(sub) && r.rtype.in_inventory)
        .filter(|r| rg.is_none_or(|g| r.rg.eq_ignore_ascii_case(g)))
        .filter(|r| {
            wanted
                .as_deref()
                .is_none_or(|t| r.rtype.full_name().eq_ignore_ascii_case(t))
        })
        .map(|r| store.render_inventory(r))
        .collect();
    Ok(page(ctx, items))
}
