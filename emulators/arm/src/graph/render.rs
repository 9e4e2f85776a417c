//! Directory objects as Graph v1.0 returns them: the properties the emulator models, plus the
//! collections Graph always sends (empty here) so clients that read them find arrays. A single
//! object carries `@odata.context`; a list carries it once, beside `value`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::directory::{Application, FederatedCredential, ServicePrincipal};
use crate::store::rfc3339;

/// Graph's JSON content type (OData minimal metadata).
const CONTENT_TYPE: &str = "application/json;odata.metadata=minimal;odata.streaming=true;\
                            IEEE754Compatible=false;charset=utf-8";

/// `{base}$metadata#{what}`, Graph's context URL.
fn context(base: &str, what: &str) -> String {
    format!("{base}$metadata#{what}")
}

pub(super) fn application(a: &Application) -> Value {
    json!({
        "id": a.id,
        "deletedDateTime": null,
        "appId": a.app_id,
        "applicationTemplateId": null,
        "createdDateTime": rfc3339(a.created),
        "description": a.description,
        "displayName": a.display_name,
        "identifierUris": [],
        "signInAudience": a.sign_in_audience,
        "tags": [],
        "keyCredentials": [],
        "passwordCredentials": [],
        "requiredResourceAccess": [],
    })
}

pub(super) fn principal(p: &ServicePrincipal) -> Value {
    json!({
        "id": p.id,
        "deletedDateTime": null,
        "accountEnabled": true,
        "appDisplayName": p.display_name,
        "appId": p.app_id,
        "appOwnerOrganizationId": p.tenant_id,
        "displayName": p.display_name,
        "servicePrincipalNames": [p.app_id],
        "servicePrincipalType": "Application",
        "tags": [],
        "keyCredentials": [],
        "passwordCredentials": [],
    })
}

pub(super) fn credential(c: &FederatedCredential) -> Value {
    json!({
        "id": c.id,
        "name": c.name,
        "issuer": c.issuer,
        "subject": c.subject,
        "description": c.description,
        "audiences": c.audiences,
    })
}

fn respond(status: StatusCode, body: Value) -> Response {
    let mut resp = (status, body.to_string()).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    resp
}

/// One object: `entity` is its JSON, `set` the context it belongs to
/// (`applications`, `applications('{id}')/federatedIdentityCredentials`, …).
pub(super) fn entity(status: StatusCode, base: &str, set: &str, mut entity: Value) -> Response {
    entity["@odata.context"] = json!(context(base, &format!("{set}/$entity")));
    respond(status, entity)
}

/// A collection (Graph pages at 100 by default; the emulator's directories stay far smaller, so
/// there is never an `@odata.nextLink`).
pub(super) fn collection(base: &str, set: &str, items: Vec<Value>) -> Response {
    respond(
        StatusCode::OK,
        json!({
            "@odata.context": context(base, set),
            "value": items,
        }),
    )
}

/// `204 No Content`, a delete's answer.
pub(super) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}
