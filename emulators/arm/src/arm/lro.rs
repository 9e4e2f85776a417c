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
    }
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
    let q = format!("?api-version={}", ctx.api_version);
    let status_url = status_path.as_ref().map(|p| format!("{}{p}{q}", ctx.base));
    let result_url = result_path.as_ref().map(|p| format!("{}{p}{q}", ctx.base));
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
    match view {
        // The operation resource of ARM's "Track asynchronous Azure operations" page
        // (learn.microsoft.com/azure/azure-resource-manager/management/async-operations):
        // `{"id","name","status","startTime","endTime","error":{"code","message"}}`, the error
        // present only when `status` is `Failed`.
        OpView::Status => {
            let status = match (&op.failure, done) {
                (_, false) => "InProgress",
                (Some(_), true) => "Failed",
                (None, true) => "Succeeded",
            };
            let mut body = json!({
                "id": op.status_path.clone().unwrap_or_default(),
                "name": op.id,
                "status": status,
                "startTime": store::rfc3339(op.start),
            });
            if done {
                body["endTime"] = json!(store::rfc3339(op.done_at));
            }
            if done && let Some(f) = &op.failure {
                body["error"] = json!({ "code": f.code, "message": f.message });
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
            OpKind::Delete => Ok(empty(StatusCode::NO_CONTENT)),
            OpKind::Write => match store.get(&op.resource_key) {
                Some(res) => Ok(json_response(StatusCode::OK, store.render(res))),
                None => Ok(empty(StatusCode::NO_CONTENT)),
            },
        },
    }
}
