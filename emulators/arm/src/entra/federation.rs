//! Workload identity federation: which user-assigned managed identity a `client_id` names, and
//! which federated identity credential (of an identity, or of an app registration: see
//! [`super::apps`]) an assertion matches.
//!
//! Identities and their credentials live in the ARM store, where the product created them. Entra learns of them through
//! its own replication, so a new identity's service principal, and a new credential, are not
//! usable at once: the emulator holds both back for `principal_replication_delay` (scaled by
//! the latency model, so not at all under `LatencyModel::Zero`).
//!
//! Matching is Entra's since its August 2024 breaking change: issuer, subject and audience
//! compared case-sensitively and byte for byte (no trailing-slash folding on the issuer,
//! MicrosoftDocs/azure-docs#97699); the refusal names the first of the three that no
//! credential matches, in that order.

use serde_json::Value;
use time::OffsetDateTime;

use super::assertion::Assertion;
use super::error::EntraError;
use crate::Emulator;
use crate::store::{Store, StoredResource};

const IDENTITY_TYPE: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";
const CREDENTIAL_SEGMENT: &str = "federatedIdentityCredentials";

/// One federated identity credential, as far as matching needs it.
#[derive(Clone, Debug)]
pub(crate) struct Credential {
    pub issuer: String,
    pub subject: String,
    pub audiences: Vec<String>,
    pub created: OffsetDateTime,
}

/// A user-assigned identity as Entra knows it.
#[derive(Clone, Debug)]
pub(crate) struct FederatedIdentity {
    pub client_id: String,
    pub principal_id: String,
    pub tenant_id: String,
    pub created: OffsetDateTime,
    pub credentials: Vec<Credential>,
}

fn prop<'a>(r: &'a StoredResource, key: &str) -> Option<&'a str> {
    r.properties.get(key).and_then(Value::as_str)
}

fn credential(r: &StoredResource) -> Credential {
    Credential {
        issuer: prop(r, "issuer").unwrap_or_default().to_owned(),
        subject: prop(r, "subject").unwrap_or_default().to_owned(),
        audiences: r
            .properties
            .get("audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        created: r.created,
    }
}

/// The identity whose `clientId` is `client_id` in `tenant` (GUIDs: compared ignoring case),
/// with its credentials.
pub(crate) fn find_identity(
    store: &Store,
    tenant: &str,
    client_id: &str,
) -> Option<FederatedIdentity> {
    let identity = store.all().find(|r| {
        r.rtype.full_name().eq_ignore_ascii_case(IDENTITY_TYPE)
            && prop(r, "clientId").is_some_and(|c| c.eq_ignore_ascii_case(client_id))
            && prop(r, "tenantId").is_some_and(|t| t.eq_ignore_ascii_case(tenant))
    })?;
    let key = identity.id.to_ascii_lowercase();
    let credentials = store
        .children_of(&key)
        .filter(|c| c.rtype.last_segment() == CREDENTIAL_SEGMENT)
        .map(credential)
        .collect();
    Some(FederatedIdentity {
        client_id: prop(identity, "clientId").unwrap_or(client_id).to_owned(),
        principal_id: prop(identity, "principalId").unwrap_or_default().to_owned(),
        tenant_id: prop(identity, "tenantId").unwrap_or(tenant).to_owned(),
        created: identity.created,
        credentials,
    })
}

impl Emulator {
    /// Whether something Entra learnt about at `created` has replicated by `now`.
    pub(crate) fn replicated(&self, created: OffsetDateTime, now: OffsetDateTime) -> bool {
        let delay = self
            .config()
            .latency
            .apply(self.config().principal_replication_delay);
        now >= created + delay
    }
}

/// The credential `a` matches, or the refusal naming the first claim none matches.
pub(crate) fn matching<'c>(
    credentials: &'c [Credential],
    a: &Assertion,
) -> Result<&'c Credential, EntraError> {
    let by_issuer: Vec<&Credential> = credentials.iter().filter(|c| c.issuer == a.iss).collect();
    if by_issuer.is_empty() {
        return Err(EntraError::no_record_for_issuer(&a.iss));
    }
    let by_subject: Vec<&Credential> = by_issuer
        .iter()
        .copied()
        .filter(|c| c.subject == a.sub)
        .collect();
    if by_subject.is_empty() {
        let case_only = by_issuer
            .iter()
            .any(|c| c.subject.eq_ignore_ascii_case(&a.sub));
        return Err(if case_only {
            EntraError::subject_differs_in_case(&a.sub)
        } else {
            EntraError::no_record_for_subject(&a.sub)
        });
    }
    by_subject
        .into_iter()
        .find(|c| c.audiences.iter().any(|aud| a.aud.contains(aud)))
        .ok_or_else(|| EntraError::no_record_for_audience(&a.audience_text()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::Algorithm;

    const ISS: &str = "https://acct.blob.core.windows.net/oidc";

    fn fic(issuer: &str, subject: &str, aud: &str) -> Credential {
        Credential {
            issuer: issuer.into(),
            subject: subject.into(),
            audiences: vec![aud.into()],
            created: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn assertion(iss: &str, sub: &str, aud: &str) -> Assertion {
        Assertion {
            alg: Algorithm::RS256,
            kid: None,
            iss: iss.into(),
            sub: sub.into(),
            aud: vec!["https://kubernetes.default.svc".into(), aud.into()],
            exp: 0,
            nbf: None,
            signed: String::new(),
            signature: String::new(),
        }
    }

    fn code(r: Result<&Credential, EntraError>) -> u32 {
        r.map(|_| 0).unwrap_or_else(|e| e.code)
    }

    #[test]
    fn issuer_then_subject_then_audience_exactly() {
        let creds = [
            fic(
                ISS,
                "system:serviceaccount:kube-system:capi-provider",
                "openshift",
            ),
            fic(
                ISS,
                "system:serviceaccount:kube-system:azure-cloud-provider",
                "openshift",
            ),
        ];
        let sub = "system:serviceaccount:kube-system:capi-provider";
        assert_eq!(code(matching(&creds, &assertion(ISS, sub, "openshift"))), 0);
        // One of several audiences is enough.
        assert_eq!(
            matching(&creds, &assertion(ISS, sub, "openshift"))
                .map(|c| c.subject.clone())
                .ok(),
            Some(sub.to_owned())
        );
        assert_eq!(
            code(matching(
                &creds,
                &assertion(&format!("{ISS}/"), sub, "openshift")
            )),
            700211
        );
        assert_eq!(
            code(matching(
                &creds,
                &assertion(&ISS.to_uppercase(), sub, "openshift")
            )),
            700211
        );
        assert_eq!(
            code(matching(
                &creds,
                &assertion(ISS, "system:serviceaccount:x:y", "openshift")
            )),
            700213
        );
        assert_eq!(
            code(matching(
                &creds,
                &assertion(ISS, &sub.to_uppercase(), "openshift")
            )),
            7002138
        );
        assert_eq!(
            code(matching(&creds, &assertion(ISS, sub, "OpenShift"))),
            700212
        );
        assert_eq!(
            code(matching(&[], &assertion(ISS, sub, "openshift"))),
            700211
        );
    }
}
