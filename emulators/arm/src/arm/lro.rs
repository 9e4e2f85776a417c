//! Long-running operations: the status (`Azure-AsyncOperation`) and result (`Location`) URLs
//! each type hands out, and the answers to polling them.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use time::OffsetDateTime;

use super::Ctx;
use super::respond::{accepted, empty, json_response};
use crate::errors::{ArmError, Result};
use crate::path::{OpView, ResourceRef};
use crate::store::{self, OpKind, Operation, Pending, Store};
use crate::types::{DeleteShape, OperationUrls, ResourceType};

/// Operation URL paths (status, result) for a type, or `None` for synchronous ones.
fn op_paths(
    rtype: &ResourceType,
    r: &ResourceRef,
    location: &str,
    op_id: &str,
) -> (Option<String>, Option<String>) {
    let loc = location.to_ascii_lowercase().replace(' ', "");
    match rtype.operation_urls {
        OperationUrls::None => (None, None),
        OperationUrls::NetworkLocation => {
            let b = format!(
                "/subscriptions/{}/providers/Microsoft.Network/locations/{loc}",
                r.sub
            );
            (
                Some(format!("{b}/operations/{op_id}")),
                Some(format!("{b}/operationResults/{op_id}")),
            )
        }
        OperationUrls::PrivateDns => {
            let b = format!(
                "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network",
                r.sub, r.rg
            );
            (
                Some(format!("{b}/privateDnsOperationStatuses/{op_id}")),
                Some(format!("{b}/privateDnsOperationResults/{op_id}")),
            )
        }
        OperationUrls::Subscription => (
            None,
            Some(format!("/subscriptions/{}/operationresults/{op_id}", r.sub)),
        ),
        // Compute answers both views on one path: the status with `?p=`, the result with
        // `&monitor=true` added (J5 of docs/reference/azure-latencies.md; the DiskRP recordings of
        // azure-sdk-for-js spell the collection `DiskOperations`).
        OperationUrls::ComputeLocation | OperationUrls::DiskLocation => {
            let collection = if rtype.operation_urls == OperationUrls::DiskLocation {
                "DiskOperations"
            } else {
                "operations"
            };
            let status = format!(
                "/subscriptions/{}/providers/Microsoft.Compute/locations/{loc}/{collection}/{op_id}?p={}",
                r.sub,
                uuid::Uuid::new_v4()
            );
            let result = format!("{status}&monitor=true");
            (Some(status), Some(result))
        }
    }
}

/// An absolute operation URL: `path` (which may carry a query already, as Compute's `?p=`
/// does) on `base`, with the caller's `api-version` appended.
pub(super) fn op_url(base: &str, path: &str, api_version: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{base}{path}{sep}api-version={api_version}")
}

/// Whether a type's operations are the compute resource provider's, whose status resource
/// carries no `id` and whose finished delete answers `200` on its `Location` URL.
fn compute_operation(rtype: &ResourceType) -> bool {
    matches!(
        rtype.operation_urls,
        OperationUrls::ComputeLocation | OperationUrls::DiskLocation
    )
}

/// Starts an operation on `resource_key` and returns (op, absolute status URL, absolute result URL).
pub(super) fn start_op(
    ctx: &Ctx<'_>,
    store: &mut Store,
    r: &ResourceRef,
    resource_key: &str,
    location: &str,
    kind: OpKind,
    duration: std::time::Duration,
) -> (Pending, Option<String>, Option<String>) {
    let op_id = uuid::Uuid::new_v4().to_string();
    let (status_path, result_path) = op_paths(r.rtype, r, location, &op_id);
    let status_url = status_path
        .as_ref()
        .map(|p| op_url(&ctx.base, p, &ctx.api_version));
    let result_url = result_path
        .as_ref()
        .map(|p| op_url(&ctx.base, p, &ctx.api_version));
    let done_at = ctx.now + duration;
    let retry_after = (r.rtype.delete == DeleteShape::ResourceGroup)
        .then(|| ctx.emu.config().latency.retry_after(15))
        .flatten();
    let failure = ctx.fail_with.as_ref().map(|(_, f)| f.clone());
    if failure.is_some() {
        ctx.fail_used.set(true);
    }
    store.add_op(Operation {
        id: op_id.clone(),
        sub: r.sub.clone(),
        resource_key: resource_key.to_owned(),
        kind,
        rtype: r.rtype,
        start: ctx.now,
        done_at,
        status_path,
        result_url: result_url.clone(),
        retry_after,
        failure,
        error: None,
    });
    (
        Pending {
            op_id,
            kind,
            done_at,
        },
        status_url,
        result_url,
    )
}

pub(super) fn operation(
    store: &Store,
    sub: &str,
    id: &str,
    view: OpView,
    now: OffsetDateTime,
) -> Result<Response> {
    let op = store
        .op(id)
        .filter(|o| o.sub.eq_ignore_ascii_case(sub))
        .ok_or_else(|| {
            ArmError::new(
                StatusCode::NOT_FOUND,
                "OperationNotFound",
                format!("The operation '{id}' could not be found."),
            )
        })?;
    let done = op.done(now);
    // A failure found as the operation ended answers as that error, its status included
    // (409 `ResourceGroupDeletionBlocked`).
    if view == OpView::Result
        && done
        && let Some(e) = &op.error
    {
        return Err(e.clone());
    }
    match view {
        // The operation resource of ARM's "Track asynchronous Azure operations" page
        // (learn.microsoft.com/azure/azure-resource-manager/management/async-operations):
        // `{"id","name","status","startTime","endTime","error":{"code","message"}}`, the error
        // present only when `status` is `Failed`.
        OpView::Status => {
            let failed = op.failure.is_some() || op.error.is_some();
            let status = match (failed, done) {
                (_, false) => "InProgress",
                (true, true) => "Failed",
                (false, true) => "Succeeded",
            };
            let mut body = json!({
                "name": op.id,
                "status": status,
                "startTime": store::rfc3339(op.start),
            });
            // Compute's status resource has no `id` (J5: `{"startTime","status","name"}`).
            if !compute_operation(op.rtype) {
                body["id"] = json!(op.status_path.clone().unwrap_or_default());
            }
            if done {
                body["endTime"] = json!(store::rfc3339(op.done_at));
            }
            if done && let Some(f) = &op.failure {
                body["error"] = json!({ "code": f.code, "message": f.message });
            } else if done && let Some(e) = &op.error {
                body["error"] = json!({ "code": e.code, "message": e.message });
            }
            Ok(json_response(StatusCode::OK, body))
        }
        OpView::Result if !done => Ok(accepted(None, op.result_url.as_deref(), op.retry_after)),
        // The `Location` URL of a failed operation answers the failure as an ARM error.
        OpView::Result if done && op.failure.is_some() => {
            let f = op.failure.as_ref();
            Err(ArmError::bad_request(
                f.map_or("", |f| &f.code),
                f.map_or_else(String::new, |f| f.message.clone()),
            ))
        }
        OpView::Result => match op.kind {
            OpKind::Delete if op.rtype.is_resource_group() => Ok(empty(StatusCode::OK)),
            // J5: the VM delete's `monitor=true` URL answers `200` with no body.
            OpKind::Delete if compute_operation(op.rtype) => Ok(empty(StatusCode::OK)),
            OpKind::Delete => Ok(empty(StatusCode::NO_CONTENT)),
            OpKind::Write => match store.get(&op.resource_key) {
                Some(res) => Ok(json_response(StatusCode::OK, store.render(res))),
                None => Ok(empty(StatusCode::NO_CONTENT)),
            },
        },
    }
}
