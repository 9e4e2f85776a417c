//! `/applications/{id}/federatedIdentityCredentials`: add, list, read and delete an app's
//! federated identity credentials.
//!
//! Graph's rules (`federatedIdentityCredential` resource and its create page): `name`,
//! `issuer`, `subject` and `audiences` are required; `name` is at most 120 characters and
//! "URL friendly", immutable, unique per app; `issuer`, `subject`, each audience and
//! `description` at most 600 characters; `audiences` holds exactly one value; issuer + subject
//! are unique per app; an app holds at most 20 credentials. "URL friendly" is read strictly:
//! 3 to 120 letters, digits, `-` or `_`, starting with a letter or digit (the rule the portal
//! and ARM apply to a managed identity's credential names). An issuer must be an `http(s)`
//! URL with no surrounding whitespace (Entra blocks the exchange of one that has any).

use axum::http::StatusCode;
use axum::response::Response;

use super::Ctx;
use super::applications::key_text;
use super::body::Body;
use super::error::GraphError;
use super::filter::Filter;
use super::render;
use crate::directory::{AppKey, CredentialError, NewCredential};
use crate::store::Store;

const RESOURCE: &str = "FederatedIdentityCredential";
const PROPERTIES: &[&str] = &["name", "issuer", "subject", "audiences", "description"];
const MAX_NAME: usize = 120;
const MIN_NAME: usize = 3;
const MAX_VALUE: usize = 600;

/// `applications('{id}')/federatedIdentityCredentials`, the context of an app's credentials.
fn set(app_object_id: &str) -> String {
    format!("applications('{app_object_id}')/federatedIdentityCredentials")
}

fn name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let len = name.chars().count();
    first_ok
        && (MIN_NAME..=MAX_NAME).contains(&len)
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn issuer_ok(issuer: &str) -> bool {
    issuer.trim() == issuer
        && url::Url::parse(issuer)
            .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some())
}

/// The body of a `POST`, validated.
fn parse(bytes: &[u8]) -> Result<NewCredential, GraphError> {
    let body = Body::parse(bytes, RESOURCE, PROPERTIES)?;
    let name = body.required("name", MAX_NAME)?;
    if !name_ok(&name) {
        return Err(body.refuse("name"));
    }
    let issuer = body.required("issuer", MAX_VALUE)?;
    if !issuer_ok(&issuer) {
        return Err(body.refuse("issuer"));
    }
    let subject = body.required("subject", MAX_VALUE)?;
    let audiences = body.strings("audiences", MAX_VALUE)?;
    if audiences.len() != 1 {
        return Err(body.refuse("audiences"));
    }
    Ok(NewCredential {
        name,
        issuer,
        subject,
        audiences,
        description: body.string("description", MAX_VALUE)?,
    })
}

/// The object id of the app `key` names, or Graph's 404.
fn app_object_id(ctx: &Ctx<'_>, store: &Store, key: AppKey) -> Result<String, GraphError> {
    store
        .directory()
        .app(ctx.tenant, key)
        .map(|a| a.id.clone())
        .ok_or_else(|| GraphError::not_found(&key_text(key)))
}

/// `POST …/federatedIdentityCredentials`.
pub(super) fn create(
    ctx: &Ctx<'_>,
    store: &mut Store,
    key: AppKey,
    bytes: &[u8],
) -> Result<Response, GraphError> {
    let app = app_object_id(ctx, store, key)?;
    let new = parse(bytes)?;
    let credential = store
        .directory_mut()
        .add_credential(ctx.tenant, key, new, ctx.now)
        .ok_or_else(|| GraphError::not_found(&key_text(key)))?
        .map_err(|e| match e {
            CredentialError::TooMany(n) => GraphError::too_many_credentials(n),
            CredentialError::DuplicateName(name) => GraphError::credential_name_exists(&name),
            CredentialError::DuplicateIssuerSubject { issuer, subject } => {
                GraphError::issuer_subject_exists(&issuer, &subject)
            }
        })?;
    Ok(render::entity(
        StatusCode::CREATED,
        &ctx.base,
        &set(&app),
        render::credential(&credential),
    ))
}

/// `GET …/federatedIdentityCredentials[?$filter=name eq '…']`.
pub(super) fn list(ctx: &Ctx<'_>, store: &Store, key: AppKey) -> Result<Response, GraphError> {
    let filter = ctx
        .filter
        .map(|f| Filter::parse(f, RESOURCE, &["name"]))
        .transpose()?;
    let app = store
        .directory()
        .app(ctx.tenant, key)
        .ok_or_else(|| GraphError::not_found(&key_text(key)))?;
    let items = app
        .federated_identity_credentials
        .iter()
        .filter(|c| filter.as_ref().is_none_or(|f| f.keeps(&c.name)))
        .map(render::credential)
        .collect();
    Ok(render::collection(&ctx.base, &set(&app.id), items))
}

/// `GET …/federatedIdentityCredentials/{id-or-name}`.
pub(super) fn get(
    ctx: &Ctx<'_>,
    store: &Store,
    key: AppKey,
    id_or_name: &str,
) -> Result<Response, GraphError> {
    let app = app_object_id(ctx, store, key)?;
    let credential = store
        .directory()
        .credential(ctx.tenant, key, id_or_name)
        .ok_or_else(|| GraphError::not_found(id_or_name))?;
    Ok(render::entity(
        StatusCode::OK,
        &ctx.base,
        &set(&app),
        render::credential(credential),
    ))
}

/// `DELETE …/federatedIdentityCredentials/{id-or-name}`: the credential stops matching
/// assertions at once.
pub(super) fn delete(
    ctx: &Ctx<'_>,
    store: &mut Store,
    key: AppKey,
    id_or_name: &str,
) -> Result<Response, GraphError> {
    app_object_id(ctx, store, key)?;
    store
        .directory_mut()
        .delete_credential(ctx.tenant, key, id_or_name)
        .ok_or_else(|| GraphError::not_found(id_or_name))?;
    Ok(render::no_content())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: serde_json::Value) -> Vec<u8> {
        v.to_string().into_bytes()
    }

    fn refused(v: serde_json::Value) -> Option<String> {
        parse(&body(v)).err().map(|e| e.message)
    }

    #[test]
    fn a_credential_needs_graphs_four_properties_within_their_limits() {
        let good = serde_json::json!({
            "name": "hypersaga-acme",
            "issuer": "https://acct.blob.core.windows.net/oidc",
            "subject": "hypersaga:tenant:acme",
            "audiences": ["api://AzureADTokenExchange"],
        });
        assert!(parse(&body(good.clone())).is_ok());
        let with = |k: &str, v: serde_json::Value| {
            let mut b = good.clone();
            b[k] = v;
            b
        };
        let without = |k: &str| {
            let mut b = good.clone();
            b.as_object_mut().map(|m| m.remove(k));
            b
        };
        for k in ["name", "issuer", "subject", "audiences"] {
            let says = refused(without(k)).expect(k);
            assert!(says.contains(&format!("'{k}'")), "{says}");
        }
        for bad_name in ["ab", "-lead", "has space", "dot.ted", &"n".repeat(121)] {
            assert!(
                refused(with("name", bad_name.into())).is_some(),
                "{bad_name}"
            );
        }
        assert!(parse(&body(with("name", "n".repeat(120).into()))).is_ok());
        for bad_issuer in [" https://x.example", "not a url", "ftp://x.example/oidc"] {
            assert!(
                refused(with("issuer", bad_issuer.into())).is_some(),
                "{bad_issuer}"
            );
        }
        assert!(refused(with("subject", "s".repeat(601).into())).is_some());
        assert!(refused(with("audiences", serde_json::json!([]))).is_some());
        assert!(refused(with("audiences", serde_json::json!(["a", "b"]))).is_some());
        assert!(refused(with("audiences", "api://AzureADTokenExchange".into())).is_some());
        assert!(refused(with("claimsMatchingExpression", serde_json::json!({}))).is_some());
    }
}
