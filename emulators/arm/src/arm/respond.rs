//! Small response builders shared by the handlers: JSON, empty, `202 Accepted` with the
//! operation headers, and paged lists.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Ctx;

pub(super) fn json_response(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

pub(super) fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

pub(super) fn set_header(resp: &mut Response, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

pub(super) fn accepted(
    status_url: Option<&str>,
    result_url: Option<&str>,
    retry_after: Option<u64>,
) -> Response {
    let mut resp = empty(StatusCode::ACCEPTED);
    if let Some(u) = result_url {
        set_header(&mut resp, "location", u);
    }
    if let Some(u) = status_url {
        set_header(&mut resp, "azure-asyncoperation", u);
    }
    if let Some(s) = retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    resp
}

/// One page of a list, `nextLink` carrying `$skipToken` (an offset) and the other query args.
pub(super) fn page(ctx: &Ctx<'_>, items: Vec<Value>) -> Response {
    let size = ctx.emu.config().page_size.max(1);
    let skip: usize = ctx
        .query
        .get("$skipToken")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let total = items.len();
    let value: Vec<Value> = items.into_iter().skip(skip).take(size).collect();
    let mut body = json!({ "value": value });
    if skip + size < total {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in ctx.query.iter().filter(|(k, _)| k.as_str() != "$skipToken") {
            q.append_pair(k, v);
        }
        q.append_pair("$skipToken", &(skip + size).to_string());
        body["nextLink"] = json!(format!("{}{}?{}", ctx.base, ctx.path, q.finish()));
    }
    json_response(StatusCode::OK, body)
}
