//! Client assertions: the short-lived JWTs hypersaga signs with its own issuer's key and
//! presents to a tenant's Entra (RFC 7523 §2.2, `client_assertion_type=…jwt-bearer`), which
//! checks them against the federated credential the tenant put on its application. No secret
//! of the tenant's is involved: Entra trusts hypersaga's issuer for one subject per tenant.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use time::OffsetDateTime;

use crate::error::Result;
use crate::key::SigningKey;

/// How long an assertion is valid. Entra accepts up to an hour past `nbf` for federation; a
/// credential asks for a new one whenever its token expires, so ten minutes is ample.
const LIFETIME_S: i64 = 600;

/// Signs assertions as one issuer, for one audience.
#[derive(Debug)]
pub struct AssertionSigner {
    key: SigningKey,
    issuer: String,
    audience: String,
}

impl AssertionSigner {
    /// `issuer` must be byte for byte the URL the discovery document names as `issuer` and
    /// every tenant's federated credential trusts.
    pub fn new(key: SigningKey, issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            key,
            issuer: issuer.into(),
            audience: audience.into(),
        }
    }

    /// The issuer the assertions name.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The key, for publishing its public half in the issuer's key set.
    pub fn key(&self) -> &SigningKey {
        &self.key
    }

    /// A fresh assertion for `subject`, valid from now for [`LIFETIME_S`] seconds.
    pub fn assertion(&self, subject: &str) -> Result<String> {
        self.assertion_at(subject, OffsetDateTime::now_utc())
    }

    fn assertion_at(&self, subject: &str, now: OffsetDateTime) -> Result<String> {
        let now = now.unix_timestamp();
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": self.key.kid()});
        let claims = json!({
            "iss": self.issuer,
            "sub": subject,
            "aud": self.audience,
            "iat": now,
            "nbf": now,
            "exp": now + LIFETIME_S,
            "jti": uuid_v4(),
        });
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.key.sign_rs256(signed.as_bytes())?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// A random `jti`, so no two assertions are the same token.
fn uuid_v4() -> String {
    let mut bytes = [0u8; 16];
    // aws-lc-rs's system random cannot fail on a supported platform; an all-zero id is still
    // a valid (if less unique) jti.
    let _ = aws_lc_rs::rand::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{Algorithm, DecodingKey, Validation};

    #[test]
    fn an_assertion_verifies_with_the_published_key_and_names_issuer_subject_audience() {
        let key = SigningKey::generate().unwrap();
        let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(key.public_key().jwk()).unwrap();
        let signer = AssertionSigner::new(
            key,
            "https://issuer.example/hs",
            "api://AzureADTokenExchange",
        );
        let token = signer.assertion("hypersaga:tenant:acme").unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.kid.as_deref(), Some(signer.key().kid().as_str()));
        let mut v = Validation::new(Algorithm::RS256);
        v.set_audience(&["api://AzureADTokenExchange"]);
        v.set_issuer(&["https://issuer.example/hs"]);
        let data = jsonwebtoken::decode::<serde_json::Value>(
            &token,
            &DecodingKey::from_jwk(&jwk).unwrap(),
            &v,
        )
        .unwrap();
        assert_eq!(data.claims["sub"], "hypersaga:tenant:acme");
        assert_eq!(
            data.claims["exp"].as_i64().unwrap() - data.claims["iat"].as_i64().unwrap(),
            LIFETIME_S
        );
        assert_ne!(signer.assertion("hypersaga:tenant:acme").unwrap(), token);
    }
}
