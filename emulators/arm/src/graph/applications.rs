//! `/applications`: register, list, read and delete app registrations.
//!
//! `POST` needs `displayName` (Graph's one required property). `signInAudience` defaults as
//! Graph defaults it on this endpoint, to `AzureADandPersonalMicrosoftAccount` (the portal and
//! `az ad app create` send `AzureADMyOrg`; send it). Deleting an app takes its service
//! principal with it; Graph keeps deleted apps restorable for 30 days, the emulator forgets them.

use axum::http::StatusCode;
use axum::response::Response;

use super::Ctx;
use super::body::Body;
use super::error::GraphError;
use super::filter::Filter;
use super::render;
use crate::directory::{AppKey, NewApplication};
use crate::store::Store;

const RESOURCE: &str = "Application";
const PROPERTIES: &[&str] = &["displayName", "description", "signInAudience"];
const SIGN_IN_AUDIENCES: &[&str] = &[
    "AzureADMyOrg",
    "AzureADMultipleOrgs",
    "AzureADandPersonalMicrosoftAccount",
    "PersonalMicrosoftAccount",
];
const DEFAULT_SIGN_IN_AUDIENCE: &str = "AzureADandPersonalMicrosoftAccount";
/// Graph's limits: display name 256 characters, description 1024.
const MAX_DISPLAY_NAME: usize = 256;
const MAX_DESCRIPTION: usize = 1024;

/// The key as the caller wrote it, for a 404.
pub(super) fn key_text(key: AppKey) -> String {
    match key {
        AppKey::ObjectId(id) | AppKey::AppId(id) => id.to_string(),
    }
}

/// `POST /applications`.
pub(super) fn create(
    ctx: &Ctx<'_>,
    store: &mut Store,
    bytes: &[u8],
) -> Result<Response, GraphError> {
    let body = Body::parse(bytes, RESOURCE, PROPERTIES)?;
    let display_name = body.required("displayName", MAX_DISPLAY_NAME)?;
    let description = body.string("description", MAX_DESCRIPTION)?;
    let sign_in_audience = match body.string("signInAudience", 64)? {
        None => DEFAULT_SIGN_IN_AUDIENCE,
        Some(given) => SIGN_IN_AUDIENCES
            .iter()
            .copied()
            .find(|a| a.eq_ignore_ascii_case(&given))
            .ok_or_else(|| body.refuse("signInAudience"))?,
    };
    let app = store.directory_mut().create_app(
        ctx.tenant,
        NewApplication {
            display_name,
            description,
            sign_in_audience: sign_in_audience.to_owned(),
        },
        ctx.now,
    );
    Ok(render::entity(
        StatusCode::CREATED,
        &ctx.base,
        "applications",
        render::application(&app),
    ))
}

/// `GET /applications[?$filter=appId eq '…']`.
pub(super) fn list(ctx: &Ctx<'_>, store: &Store) -> Result<Response, GraphError> {
    let filter = ctx
        .filter
        .map(|f| Filter::parse(f, RESOURCE, &["appId", "displayName"]))
        .transpose()?;
    let items = store
        .directory()
        .apps(ctx.tenant)
        .filter(|a| match &filter {
            None => true,
            Some(f) if f.property == "appId" => f.keeps(&a.app_id),
            Some(f) => f.keeps(&a.display_name),
        })
        .map(render::application)
        .collect();
    Ok(render::collection(&ctx.base, "applications", items))
}

/// `GET /applications/{id}` or `/applications(appId='…')`.
pub(super) fn get(ctx: &Ctx<'_>, store: &Store, key: AppKey) -> Result<Response, GraphError> {
    let app = store
        .directory()
        .app(ctx.tenant, key)
        .ok_or_else(|| GraphError::not_found(&key_text(key)))?;
    Ok(render::entity(
        StatusCode::OK,
        &ctx.base,
        "applications",
        render::application(app),
    ))
}

/// `DELETE /applications/{id}` or `/applications(appId='…')`.
pub(super) fn delete(
    ctx: &Ctx<'_>,
    store: &mut Store,
    key: AppKey,
) -> Result<Response, GraphError> {
    store
        .directory_mut()
        .delete_app(ctx.tenant, key)
        .ok_or_else(|| GraphError::not_found(&key_text(key)))?;
    Ok(render::no_content())
}
