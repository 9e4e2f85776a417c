//! `/servicePrincipals`: make, list, read and delete the service principal of an app in the
//! caller's directory.
//!
//! `POST` needs the app's `appId`. Graph is eventually consistent here as Entra is: right after
//! an app is registered, making its principal fails as if the app did not exist
//! (`NoBackingApplicationObject`) until the app has replicated, so callers retry as
//! `az ad sp create` does. A second principal for one app is a 409. Only principals made here
//! are listed: the emulator's directories hold none of Microsoft's own.

use axum::http::StatusCode;
use axum::response::Response;
use uuid::Uuid;

use super::Ctx;
use super::body::Body;
use super::error::GraphError;
use super::filter::Filter;
use super::path::PrincipalKey;
use super::render;
use crate::directory::{PrincipalError, ServicePrincipal};
use crate::store::Store;

const RESOURCE: &str = "ServicePrincipal";

fn key_text(key: PrincipalKey) -> String {
    match key {
        PrincipalKey::ObjectId(id) | PrincipalKey::AppId(id) => id.to_string(),
    }
}

fn find<'s>(ctx: &Ctx<'_>, store: &'s Store, key: PrincipalKey) -> Option<&'s ServicePrincipal> {
    let directory = store.directory();
    match key {
        PrincipalKey::ObjectId(id) => directory.principal(ctx.tenant, &id),
        PrincipalKey::AppId(id) => directory.principal_of_app(ctx.tenant, &id),
    }
}

/// `POST /servicePrincipals` with `{"appId": "…"}`.
pub(super) fn create(
    ctx: &Ctx<'_>,
    store: &mut Store,
    bytes: &[u8],
) -> Result<Response, GraphError> {
    let body = Body::parse(bytes, RESOURCE, &["appId"])?;
    let given = body.required("appId", 36)?;
    let app_id = Uuid::parse_str(&given).map_err(|_| body.refuse("appId"))?;
    let emu = ctx.emu;
    let now = ctx.now;
    let principal = store
        .directory_mut()
        .create_principal(ctx.tenant, &app_id, now, |created| {
            emu.replicated(created, now)
        })
        .map_err(|e| match e {
            PrincipalError::Exists(_) => GraphError::service_principal_exists(&given),
            PrincipalError::NoBackingApplication(_) => GraphError::no_backing_application(&given),
        })?;
    Ok(render::entity(
        StatusCode::CREATED,
        &ctx.base,
        "servicePrincipals",
        render::principal(&principal),
    ))
}

/// `GET /servicePrincipals[?$filter=appId eq '…']` (HyperShift resolves a client id to its
/// principal exactly so).
pub(super) fn list(ctx: &Ctx<'_>, store: &Store) -> Result<Response, GraphError> {
    let filter = ctx
        .filter
        .map(|f| Filter::parse(f, RESOURCE, &["appId", "displayName"]))
        .transpose()?;
    let items = store
        .directory()
        .principals(ctx.tenant)
        .filter(|p| match &filter {
            None => true,
            Some(f) if f.property == "appId" => f.keeps(&p.app_id),
            Some(f) => f.keeps(&p.display_name),
        })
        .map(render::principal)
        .collect();
    Ok(render::collection(&ctx.base, "servicePrincipals", items))
}

/// `GET /servicePrincipals/{id}` or `/servicePrincipals(appId='…')`.
pub(super) fn get(ctx: &Ctx<'_>, store: &Store, key: PrincipalKey) -> Result<Response, GraphError> {
    let principal = find(ctx, store, key).ok_or_else(|| GraphError::not_found(&key_text(key)))?;
    Ok(render::entity(
        StatusCode::OK,
        &ctx.base,
        "servicePrincipals",
        render::principal(principal),
    ))
}

/// `DELETE /servicePrincipals/{id}` or `/servicePrincipals(appId='…')`: the app stays, and can
/// get no token in this directory until it has a principal again.
pub(super) fn delete(
    ctx: &Ctx<'_>,
    store: &mut Store,
    key: PrincipalKey,
) -> Result<Response, GraphError> {
    let id = find(ctx, store, key)
        .and_then(|p| Uuid::parse_str(&p.id).ok())
        .ok_or_else(|| GraphError::not_found(&key_text(key)))?;
    store.directory_mut().delete_principal(ctx.tenant, &id);
    Ok(render::no_content())
}
