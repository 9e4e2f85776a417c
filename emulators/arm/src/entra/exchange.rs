//! The client-assertion grant of a user-assigned managed identity, step by step in the order
//! Entra refuses: the assertion must parse, the identity must exist (and have replicated), the
//! assertion must be within its lifetime, a federated credential must match it, the issuer's
//! keys must be fetchable, and the signature must verify with the key the header names.

use jsonwebtoken::{Algorithm, DecodingKey};
use time::OffsetDateTime;

use super::Grantee;
use super::assertion::{Assertion, JWT_BEARER};
use super::error::EntraError;
use super::federation::{find_identity, matching};
use super::issuers::KeysError;
use crate::Emulator;

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

    let identity = {
        let mut st = emu.lock();
        st.store.settle(now);
        find_identity(&st.store, tenant, client_id)
    };
    let Some(identity) = identity.filter(|i| emu.replicated(i.created, now)) else {
        // An app registration has no federated credentials here, so nothing can match.
        if emu.principal(tenant, client_id).is_some() {
            return Err(EntraError::no_federated_record(
                &a.iss,
                &a.sub,
                &a.audience_text(),
            ));
        }
        return Err(EntraError::application_not_found(client_id, tenant));
    };

    a.check_lifetime(now.unix_timestamp())?;
    let credential = matching(&identity.credentials, &a)?;
    if !emu.replicated(credential.created, now) {
        return Err(EntraError::no_federated_record(
            &a.iss,
            &a.sub,
            &a.audience_text(),
        ));
    }

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
    // Only RS256 is supported for federation (workload-identity-federation-considerations.md).
    if a.alg != Algorithm::RS256 {
        return Err(EntraError::bad_signature());
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| EntraError::bad_signature())?;
    let valid = jsonwebtoken::crypto::verify(&a.signature, a.signed.as_bytes(), &key, a.alg)
        .unwrap_or(false);
    if !valid {
        return Err(EntraError::bad_signature());
    }
    Ok(Grantee {
        app_id: identity.client_id,
        object_id: identity.principal_id,
        tenant_id: identity.tenant_id,
    })
}
