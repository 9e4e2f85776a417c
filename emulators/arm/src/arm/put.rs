//! PUT: full-replace create or update, synchronous or asynchronous as the type's resource
//! provider answers, with the referential checks and read-only properties of the type table.

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::Ctx;
use super::body::{parse_body, take_properties};
use super::lookup::{check_rg, embedded, ensure_not_busy, not_found, render_embedded};
use super::lro::start_op;
use super::respond::{empty, json_response, set_header};
use crate::errors::{ArmError, Result};
use crate::path::ResourceRef;
use crate::store::{self, OpKind, Store, StoredResource};
use crate::types::{
    FillCtx, LocationRule, PutCheck, PutShape, REGIONS, ResourceType, Storage, regions,
};

/// `Retry-After` (seconds) of the network resource provider's 201/200 + `Azure-AsyncOperation`
/// answer to a PUT, as recorded in Azure/azure-powershell#7406 (a VNet PUT answered
/// `Created` with `Retry-After: 3`). Scaled by the latency model like every advertised wait.
const NETWORK_PUT_RETRY_AFTER_SECS: u64 = 3;

fn set_network_retry_after(ctx: &Ctx<'_>, resp: &mut Response) {
    if let Some(secs) = ctx
        .emu
        .config()
        .latency
        .retry_after(NETWORK_PUT_RETRY_AFTER_SECS)
    {
        set_header(resp, "retry-after", &secs.to_string());
    }
}

/// Gives inline sub-resources (LB frontends, NSG rules, subnets) their ids and types.
fn fill_inline(props: &mut Map<String, Value>, rtype: &ResourceType, id: &str, etag: Option<&str>) {
    for array in rtype.inline_children {
        let Some(items) = props.get_mut(*array).and_then(Value::as_array_mut) else {
            continue;
        };
        for item in items {
            let Some(obj) = item.as_object_mut() else {
                continue;
            };
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            obj.insert("id".into(), json!(format!("{id}/{array}/{name}")));
            obj.insert(
                "type".into(),
                json!(format!("{}/{array}", rtype.full_name())),
            );
            if let Some(e) = etag {
                obj.insert("etag".into(), json!(e));
            }
            if !obj.get("properties").is_some_and(Value::is_object) {
                obj.insert("properties".into(), json!({}));
            }
        }
    }
}

/// ARM's location check, made before the resource provider sees the body (so before the VM
/// size or any reference is looked at): a tracked resource must be in a region its type is
/// registered in, which for every type served here is every public region.
fn check_region(rtype: &ResourceType, location: &str) -> Result<()> {
    if regions::is_region(location) {
        return Ok(());
    }
    Err(if rtype.is_resource_group() {
        ArmError::location_not_available_for_resource_group(location, REGIONS)
    } else {
        ArmError::location_not_available_for_resource_type(location, &rtype.full_name(), REGIONS)
    })
}

pub(super) fn put_resource(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
    body: &Bytes,
) -> Result<Response> {
    let mut body = parse_body(body)?;
    let rtype = r.rtype;
    let key = r.key();
    let parent_key = r.parent_key();

    // Where it hangs: the subscription (RG), the RG, or a parent resource.
    let parent_id = if rtype.is_resource_group() {
        format!("/subscriptions/{}", r.sub)
    } else {
        let rg = check_rg(store, r, true)?;
        if rtype.depth() == 1 {
            format!("{}/providers/{}", rg.id, rtype.namespace)
        } else {
            let parent = store
                .get(&parent_key)
                .ok_or_else(|| ArmError::parent_not_found(&r.parent_type_and_name()))?;
            if parent
                .pending
                .as_ref()
                .is_some_and(|p| p.kind == OpKind::Delete)
            {
                return Err(ArmError::new(
                    StatusCode::CONFLICT,
                    "AnotherOperationInProgress",
                    format!(
                        "Another operation on this or dependent resource is in progress: the parent '{}' is being deleted.",
                        parent.id
                    ),
                ));
            }
            parent.id.clone()
        }
    };

    if rtype.serialize_writes {
        let busy = match rtype.storage {
            Storage::Embedded { .. } => &parent_key,
            Storage::Standalone => &key,
        };
        ensure_not_busy(ctx, store, busy)?;
    }

    if let Storage::Embedded { array } = rtype.storage {
        return put_embedded(ctx, store, r, body, array);
    }

    let existing = store.get(&key).cloned();
    if existing
        .as_ref()
        .is_some_and(|e| e.pending.as_ref().is_some_and(|p| p.kind == OpKind::Delete))
    {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "AnotherOperationInProgress",
            format!(
                "Another operation on this or dependent resource is in progress. The resource '{}' is being deleted.",
                r.id()
            ),
        ));
    }
    let name = existing
        .as_ref()
        .map_or_else(|| r.name().to_owned(), |e| e.name.clone());
    let id = if rtype.is_resource_group() {
        format!("{parent_id}/resourceGroups/{name}")
    } else if rtype.depth() == 1 {
        format!("{parent_id}/{}/{name}", rtype.type_path)
    } else {
        format!("{parent_id}/{}/{name}", rtype.last_segment())
    };

    let location = match rtype.location {
        LocationRule::Required => {
            let loc = body
                .remove("location")
                .and_then(|l| l.as_str().map(str::to_owned))
                .filter(|l| !l.is_empty());
            let loc = loc.ok_or_else(|| {
                ArmError::bad_request(
                    "LocationRequired",
                    "The location property is required for this definition.",
                )
            })?;
            check_region(rtype, &loc)?;
            if rtype.is_resource_group()
                && let Some(prev) = existing.as_ref().and_then(|e| e.location.as_deref())
                && !prev.eq_ignore_ascii_case(&loc)
            {
                return Err(ArmError::new(
                    StatusCode::CONFLICT,
                    "InvalidResourceGroupLocation",
                    format!(
                        "Invalid resource group location '{loc}'. The Resource group already exists in location '{prev}'."
                    ),
                ));
            }
            Some(loc)
        }
        LocationRule::Global => {
            body.remove("location");
            Some("global".to_owned())
        }
        LocationRule::None => {
            body.remove("location");
            None
        }
    };
    let tags = match body.remove("tags") {
        None | Some(Value::Null) => None,
        Some(Value::Object(t)) => Some(Value::Object(t)),
        Some(_) => {
            return Err(ArmError::bad_request(
                "InvalidTag",
                "The tags must be an object of string values.",
            ));
        }
    };
    let mut properties = take_properties(&mut body)?;
    for k in ["id", "name", "type", "etag"] {
        body.remove(k);
    }
    properties.remove("provisioningState");

    if let Some(check) = rtype.check_put {
        check(
            store,
            &PutCheck {
                rtype,
                sub: &r.sub,
                key: &key,
                parent_key: &parent_key,
                id: &id,
                location: location.as_deref(),
                properties: &properties,
                extra: &body,
            },
        )?;
    }
    if let Some((max, code, msg)) = rtype.max_per_parent {
        let siblings = store
            .children_of(&parent_key)
            .filter(|c| std::ptr::eq(c.rtype, rtype) && c.id.to_ascii_lowercase() != key)
            .count();
        if existing.is_none() && siblings >= max {
            return Err(ArmError::bad_request(code, msg));
        }
    }

    let tenant = ctx.emu.tenant_of(&r.sub);
    if let Some(fill) = rtype.fill {
        fill(
            &mut properties,
            &FillCtx {
                id: &id,
                previous: existing.as_ref().map(|e| &e.properties),
                tenant_id: &tenant,
                name: &name,
            },
        );
    }
    let etag = store::new_etag(rtype.etag);
    fill_inline(&mut properties, rtype, &id, etag.as_deref());

    let created = existing.is_none();
    let mut resource = StoredResource {
        id: id.clone(),
        parent_key: parent_key.clone(),
        rtype,
        name,
        sub: r.sub.clone(),
        rg: r.rg.clone(),
        location: location.clone(),
        tags,
        properties,
        extra: body,
        etag,
        pending: None,
        created: existing.as_ref().map_or(ctx.now, |e| e.created),
    };

    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    match rtype.put {
        PutShape::Sync => {
            resource
                .properties
                .insert("provisioningState".into(), json!("Succeeded"));
            store.insert(resource);
            if let Some(after) = rtype.after_put {
                after(store, &key);
            }
            let rendered = store
                .get(&key)
                .map(|res| store.render(res))
                .unwrap_or(Value::Null);
            Ok(json_response(status, rendered))
        }
        shape => {
            let duration = ctx.emu.latency_for(rtype, rtype.create_latency);
            let loc = location.as_deref().unwrap_or("global");
            let (pending, status_url, result_url) =
                start_op(ctx, store, r, &key, loc, OpKind::Write, duration);
            let creating =
                created && matches!(shape, PutShape::Accepted | PutShape::CreatingInBody);
            let state = if creating { "Creating" } else { "Updating" };
            resource
                .properties
                .insert("provisioningState".into(), json!(state));
            resource.pending = Some(pending);
            store.insert(resource);
            if let Some(after) = rtype.after_put {
                after(store, &key);
            }
            let rendered = || {
                store
                    .get(&key)
                    .map(|res| store.render(res))
                    .unwrap_or(Value::Null)
            };
            let mut resp = match shape {
                PutShape::Accepted => empty(StatusCode::ACCEPTED),
                PutShape::AcceptedWithBody => json_response(StatusCode::ACCEPTED, rendered()),
                _ => {
                    let mut resp = json_response(status, rendered());
                    set_header(&mut resp, "azure-asyncnotification", "Enabled");
                    if shape == PutShape::AsyncInBody {
                        set_network_retry_after(ctx, &mut resp);
                    }
                    resp
                }
            };
            if matches!(shape, PutShape::Accepted | PutShape::AcceptedWithBody)
                && let Some(u) = &result_url
            {
                set_header(&mut resp, "location", u);
            }
            if let Some(u) = &status_url {
                set_header(&mut resp, "azure-asyncoperation", u);
            }
            Ok(resp)
        }
    }
}

/// PUT of a child kept inline in its parent (subnet): rewrites the parent's array.
fn put_embedded(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
    mut body: Map<String, Value>,
    array: &str,
) -> Result<Response> {
    let parent_key = r.parent_key();
    let Some(parent) = store.get(&parent_key).cloned() else {
        return Err(ArmError::parent_not_found(&r.parent_type_and_name()));
    };
    let mut properties = take_properties(&mut body)?;
    properties.remove("provisioningState");
    if let Some(check) = r.rtype.check_put {
        check(
            store,
            &PutCheck {
                rtype: r.rtype,
                sub: &r.sub,
                key: &r.key(),
                parent_key: &parent_key,
                id: &format!("{}/{array}/{}", parent.id, r.name()),
                location: parent.location.as_deref(),
                properties: &properties,
                extra: &body,
            },
        )?;
    }
    let mut items = parent
        .properties
        .get(array)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let pos = items.iter().position(|i| {
        i.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.eq_ignore_ascii_case(r.name()))
    });
    let name = pos
        .and_then(|p| {
            items[p]
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| r.name().to_owned());
    let element = json!({ "name": name, "properties": properties });
    let created = pos.is_none();
    match pos {
        Some(p) => items[p] = element,
        None => items.push(element),
    }
    let mut updated = parent;
    updated.properties.insert(array.into(), Value::Array(items));
    updated.etag = store::new_etag(updated.rtype.etag);
    let (id, prtype, etag) = (updated.id.clone(), updated.rtype, updated.etag.clone());
    fill_inline(&mut updated.properties, prtype, &id, etag.as_deref());
    let duration = ctx.emu.latency_for(r.rtype, r.rtype.create_latency);
    let loc = updated.location.clone().unwrap_or_else(|| "global".into());
    let (pending, status_url, _) =
        start_op(ctx, store, r, &parent_key, &loc, OpKind::Write, duration);
    updated
        .properties
        .insert("provisioningState".into(), json!("Updating"));
    updated.pending = Some(pending);
    store.insert(updated);
    let (parent, idx) = embedded(store, r, array).ok_or_else(|| not_found(r))?;
    let rendered = render_embedded(store, parent, array, idx);
    let mut resp = json_response(
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        rendered,
    );
    if let Some(u) = &status_url {
        set_header(&mut resp, "azure-asyncoperation", u);
    }
    set_network_retry_after(ctx, &mut resp);
    Ok(resp)
}
