//! PATCH: ARM's "update tags".

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;

use super::body::parse_body;
use super::lookup::{check_rg, not_found};
use super::respond::json_response;
use crate::errors::Result;
use crate::path::ResourceRef;
use crate::store::Store;

/// PATCH: ARM's "update tags" (replaces the whole `tags` map).
pub(super) fn patch_resource(store: &mut Store, r: &ResourceRef, body: &Bytes) -> Result<Response> {
    if !r.rtype.is_resource_group() {
        check_rg(store, r, true)?;
    }
    let body = parse_body(body)?;
    let key = r.key();
    let res = store.get_mut(&key).ok_or_else(|| not_found(r))?;
    if let Some(tags) = body.get("tags") {
        res.tags = if tags.is_null() {
            None
        } else {
            Some(tags.clone())
        };
    }
    let res = store.get(&key).ok_or_else(|| not_found(r))?;
    Ok(json_response(StatusCode::OK, store.render(res)))
}
