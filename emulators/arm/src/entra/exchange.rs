//! The client-assertion grant (workload identity federation), step by step in the order Entra
//! refuses: the assertion must parse; the client must exist in the tenant and have replicated
//! (a user-assigned managed identity, or an app registration made through Graph, which also
//! needs its service principal there); the assertion must be within its lifetime; the client
//! must have a federated credential, and one must match the assertion; the issuer's keys must be
//! fetchable; and the signature must verify with the key the header names.
//!
//! Where the service-principal check sits in that order is inferred: Entra's refusals show the
//! code (AADSTS7000229), not when it is checked. It is placed right after the app is found, so
//! an admin who forgot the principal is told so whatever the assertion holds.

use jsonwebtoken::{Algorithm, DecodingKey};
use time::OffsetDateTime;

use super::Grantee;
use super::apps::{AppClient, find_app};
use super::assertion::{Assertion, JWT_BEARER};
use super::error::EntraError;
use super::federation::{Credential, FederatedIdentity, find_identity, matching};
use super::issuers::KeysError;
use crate::Emulator;

/// A client found and replicated: who its token is for and what its assertion must match.
struct Federated {
    grantee: Grantee,
    credentials: Vec<Credential>,
    /// An app registration's `(appId, displayName)`, for the refusal of an app that has no
    /// credential at all (managed identities are refused as any mismatch).
    app: Option<(String, String)>,
}

/// Verifies `assertion` for `client_id` in `tenant` and answers who the token is for.
pub(super) async fn federated(
    emu: &Emulator,
    tenant: &str,
    client_id: &str,
    assertion_type: Option<&str>,
    assertion: &str,
) -> Result<Grantee, EntraError> {
    match assertion_type {
        None => return Err(EntraError::missing_parameter("client_assertion_type")),
        Some(t) if t != JWT_BEARER => return Err(EntraError::unexpected_assertion_type()),
        Some(_) => {}
    }
    let a = Assertion::parse(assertion)?;
    let now = OffsetDateTime::now_utc();

    let (identity, app) = {
        let mut st = emu.lock();
        st.store.settle(now);
        (
            find_identity(&st.store, tenant, client_id),
            find_app(st.store.directory(), tenant, client_id),
        )
    };
    let client = resolve(emu, tenant, client_id, identity, app, &a, now)?;

    a.check_lifetime(now.unix_timestamp())?;
    if let Some((app_id, display_name)) = &client.app
        && client.credentials.is_empty()
    {
        return Err(EntraError::no_configured_credentials(app_id, display_name));
    }
    let credential = matching(&client.credentials, &a)?;
    if !emu.replicated(credential.created, now) {
        return Err(EntraError::no_federated_record(
            &a.iss,
            &a.sub,
            &a.audience_text(),
        ));
    }
    verify_signature(emu, &a).await?;
    Ok(client.grantee)
}

/// The identity or app `client_id` names, once Entra has replicated it, or Entra's refusal.
fn resolve(
    emu: &Emulator,
    tenant: &str,
    client_id: &str,
    identity: Option<FederatedIdentity>,
    app: Option<AppClient>,
    a: &Assertion,
    now: OffsetDateTime,
) -> Result<Federated, EntraError> {
    if let Some(identity) = identity.filter(|i| emu.replicated(i.created, now)) {
        return Ok(Federated {
            grantee: Grantee {
                app_id: identity.client_id,
                object_id: identity.principal_id,
                tenant_id: identity.tenant_id,
            },
            credentials: identity.credentials,
            app: None,
        });
    }
    if let Some(app) = app.filter(|a| emu.replicated(a.created, now)) {
        let Some((object_id, _)) = app
            .service_principal
            .filter(|(_, created)| emu.replicated(*created, now))
        else {
            return Err(EntraError::missing_service_principal(&app.app_id, tenant));
        };
        return Ok(Federated {
            grantee: Grantee {
                app_id: app.app_id.clone(),
                object_id,
                tenant_id: app.tenant_id,
            },
            credentials: app.credentials,
            app: Some((app.app_id, app.display_name)),
        });
    }
    // The configured app registrations authenticate with their secret; nothing can match.
    if emu.principal(tenant, client_id).is_some() {
        return Err(EntraError::no_federated_record(
            &a.iss,
            &a.sub,
            &a.audience_text(),
        ));
    }
    Err(EntraError::application_not_found(client_id, tenant))
}

/// The signature, checked with the issuer's published key the header names (RS256 only:
/// workload-identity-federation-considerations.md).
async fn verify_signature(emu: &Emulator, a: &Assertion) -> Result<(), EntraError> {
    let kid = a.kid.clone().unwrap_or_default();
    let jwk = emu
        .inner
        .issuers
        .key(&a.iss, &kid)
        .await
        .map_err(|e| match e {
            KeysError::UnknownKid(_) => EntraError::signing_key_not_found(&kid, &a.iss),
            other => {
                tracing::info!(issuer = %a.iss, error = %other, "external OIDC endpoint failed");
                EntraError::oidc_endpoint_failed()
            }
        })?;
    if a.alg != Algorithm::RS256 {
        return Err(EntraError::bad_signature());
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| EntraError::bad_signature())?;
    let valid = jsonwebtoken::crypto::verify(&a.signature, a.signed.as_bytes(), &key, a.alg)
        .unwrap_or(false);
    if !valid {
        return Err(EntraError::bad_signature());
    }
    Ok(())
}
