//! Service-account tokens as the hosted cluster's kube-apiserver signs them.
//!
//! In a self-managed Azure cluster CAPZ authenticates as the `nodePoolManagement` workload
//! identity with a projected token of the hosted cluster's `kube-system/capi-provider` service
//! account (audience `openshift`), signed with the key of the HostedCluster's
//! `serviceAccountSigningKey` Secret. Entra trusts it only if it is a JWS Entra can verify
//! against the issuer's published key set: RS256, a `kid` equal to the published key's (the
//! SHA-256 of its SPKI, kube-apiserver's `keyIDFromPublicKey`), and `iss`/`sub`/`aud`
//! matching a federated credential byte for byte. The claims are those of a bound token
//! (`k8s.io/kubernetes/pkg/serviceaccount/claims.go`): `iss`, `sub`, `aud` as a list, `exp`,
//! `iat`, `nbf`, `jti` and the private `kubernetes.io` claim.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hypersaga_oidc::SigningKey;
use serde_json::json;

/// The audience of every federated credential HyperShift makes (`openshift`).
pub const AUDIENCE: &str = "openshift";

/// The subject of CAPZ's federated credential (the `node-pool-mgmt` identity's).
pub const CAPZ_SUBJECT: &str = "system:serviceaccount:kube-system:capi-provider";

/// How long a minted token lives: the hour kube-apiserver gives a projected token by default.
pub const LIFETIME: Duration = Duration::from_secs(3600);

/// Why no token could be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The key is not an RSA private key PEM (PKCS#1 or PKCS#8).
    #[error("cannot decode private key: {0}")]
    Key(String),
    /// The subject is not `system:serviceaccount:<namespace>:<name>`.
    #[error("subject {0:?} is not a service account's")]
    Subject(String),
    /// RSA signing failed.
    #[error("signing failed: {0}")]
    Sign(String),
}

/// Loads a signing key from the PEM a `serviceAccountSigningKey` Secret holds under `key`.
pub fn signing_key(pem: &str) -> Result<SigningKey, TokenError> {
    SigningKey::from_private_key_pem(pem).map_err(|e| TokenError::Key(e.to_string()))
}

/// A token for the service account `subject`, issued by `issuer` for `audience`, valid from
/// now for `lifetime`, signed with `key` (RS256).
pub fn mint(
    key: &SigningKey,
    issuer: &str,
    subject: &str,
    audience: &str,
    lifetime: Duration,
) -> Result<String, TokenError> {
    let (namespace, name) = subject
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, n)| !ns.is_empty() && !n.is_empty() && !n.contains(':'))
        .ok_or_else(|| TokenError::Subject(subject.to_owned()))?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let exp = now + i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX / 2);
    // A stable uid per service account, as kube-apiserver has one per object.
    let sa_uid = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, subject.as_bytes());
    let header = json!({"alg": "RS256", "kid": key.kid()});
    let claims = json!({
        "aud": [audience],
        "exp": exp,
        "iat": now,
        "iss": issuer,
        "jti": uuid::Uuid::new_v4().to_string(),
        "kubernetes.io": {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": sa_uid.to_string()},
        },
        "nbf": now,
        "sub": subject,
    });
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key
        .sign_rs256(signed.as_bytes())
        .map_err(|e| TokenError::Sign(e.to_string()))?;
    Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// Mints a service-account token from a private key PEM: what a test needs to act as one of
/// the hosted cluster's service accounts (see [`mint`]).
pub fn service_account_token(
    key_pem: &str,
    issuer: &str,
    subject: &str,
    audience: &str,
    lifetime: Duration,
) -> Result<String, TokenError> {
    mint(&signing_key(key_pem)?, issuer, subject, audience, lifetime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn part(token: &str, i: usize) -> Value {
        let bytes = URL_SAFE_NO_PAD
            .decode(token.split('.').nth(i).expect("part"))
            .expect("base64url");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[test]
    fn a_token_is_what_kube_apiserver_signs_and_verifies_with_the_published_key() {
        let key = SigningKey::generate().expect("key");
        let pem = key.private_key_pem();
        let iss = "http://127.0.0.1:10000/devstoreaccount1/oidc-acme";
        let token =
            service_account_token(&pem, iss, CAPZ_SUBJECT, AUDIENCE, LIFETIME).expect("token");
        let header = part(&token, 0);
        assert_eq!(header, json!({"alg": "RS256", "kid": key.kid()}));
        let claims = part(&token, 1);
        assert_eq!(claims["iss"], iss);
        assert_eq!(claims["sub"], CAPZ_SUBJECT);
        assert_eq!(claims["aud"], json!(["openshift"]));
        assert_eq!(claims["kubernetes.io"]["namespace"], "kube-system");
        assert_eq!(
            claims["kubernetes.io"]["serviceaccount"]["name"],
            "capi-provider"
        );
        let (iat, exp) = (
            claims["iat"].as_i64().unwrap(),
            claims["exp"].as_i64().unwrap(),
        );
        assert_eq!(exp - iat, 3600);
        assert_eq!(claims["nbf"], claims["iat"]);

        // The signature verifies with the issuer's public key (what Entra does with the JWKS).
        let public = jsonwebtoken::DecodingKey::from_rsa_pem(key.public_key_pem().as_bytes())
            .expect("public key");
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        validation.set_audience(&[AUDIENCE]);
        validation.set_issuer(&[iss]);
        let verified = jsonwebtoken::decode::<Value>(&token, &public, &validation);
        assert!(verified.is_ok(), "{verified:?}");
    }

    #[test]
    fn only_service_accounts_get_tokens_and_only_rsa_keys_sign() {
        let key = SigningKey::generate().expect("key");
        for bad in [
            "capi-provider",
            "system:serviceaccount:kube-system",
            "system:serviceaccount::x",
            "system:serviceaccount:a:b:c",
        ] {
            assert!(
                matches!(
                    mint(&key, "https://i", bad, AUDIENCE, LIFETIME),
                    Err(TokenError::Subject(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            signing_key("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
            Err(TokenError::Key(_))
        ));
    }
}
