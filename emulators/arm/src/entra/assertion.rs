//! The client assertion of a federated token exchange: a compact JWS read without trusting
//! it, so the credential it claims to match can be found before any key is fetched.
//!
//! Entra needs `iss`, `sub`, `aud` and `exp` to pick the federated credential and bound the
//! assertion's life; a token without them, or that is not three base64url parts, is refused as
//! malformed before anything else is looked at.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use serde_json::Value;

use super::error::EntraError;

/// `client_assertion_type` of RFC 7523 §2.2, the only one Entra takes for federation.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// An assertion, parsed but not verified.
#[derive(Clone, Debug)]
pub(crate) struct Assertion {
    pub alg: Algorithm,
    pub kid: Option<String>,
    pub iss: String,
    pub sub: String,
    /// `aud` as one string or an array of them (RFC 7519 §4.1.3).
    pub aud: Vec<String>,
    pub exp: i64,
    pub nbf: Option<i64>,
    /// `header.payload`, the signed bytes.
    pub signed: String,
    /// The third part, base64url.
    pub signature: String,
}

/// A NumericDate claim (RFC 7519 §2): seconds, possibly fractional.
fn numeric_date(claims: &Value, name: &str) -> Result<Option<i64>, EntraError> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_f64().map(|f| f.floor() as i64))
            .map(Some)
            .ok_or_else(EntraError::malformed_assertion),
    }
}

fn string_claim(claims: &Value, name: &str) -> Result<String, EntraError> {
    claims
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(EntraError::malformed_assertion)
}

impl Assertion {
    /// Splits and decodes `token`; any part that does not decode is a malformed assertion.
    pub fn parse(token: &str) -> Result<Self, EntraError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(EntraError::malformed_assertion());
        };
        if signature.is_empty() {
            return Err(EntraError::malformed_assertion());
        }
        let head =
            jsonwebtoken::decode_header(token).map_err(|_| EntraError::malformed_assertion())?;
        let claims: Value = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .filter(Value::is_object)
            .ok_or_else(EntraError::malformed_assertion)?;
        let aud = match claims.get("aud") {
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|a| a.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(EntraError::malformed_assertion)?,
            _ => return Err(EntraError::malformed_assertion()),
        };
        Ok(Self {
            alg: head.alg,
            kid: head.kid,
            iss: string_claim(&claims, "iss")?,
            sub: string_claim(&claims, "sub")?,
            aud,
            exp: numeric_date(&claims, "exp")?.ok_or_else(EntraError::malformed_assertion)?,
            nbf: numeric_date(&claims, "nbf")?,
            signed: format!("{header}.{payload}"),
            signature: signature.to_owned(),
        })
    }

    /// Entra gives an assertion no clock-skew allowance here: one that is not yet valid or
    /// has expired is refused (700024).
    pub fn check_lifetime(&self, now: i64) -> Result<(), EntraError> {
        let early = self.nbf.is_some_and(|nbf| now < nbf);
        if early || now >= self.exp {
            return Err(EntraError::assertion_time_range(now, self.nbf, self.exp));
        }
        Ok(())
    }

    /// The audiences as the 70021/700212 messages print them.
    pub fn audience_text(&self) -> String {
        self.aud.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(v.to_string())
    }

    fn token(header: Value, claims: Value) -> String {
        format!("{}.{}.c2ln", b64(&header), b64(&claims))
    }

    #[test]
    fn reads_a_kubernetes_service_account_token() {
        let t = token(
            serde_json::json!({"alg": "RS256", "kid": "k1"}),
            serde_json::json!({
                "iss": "https://issuer.example/x", "sub": "system:serviceaccount:ns:sa",
                "aud": ["openshift"], "exp": 2000, "nbf": 1000, "iat": 1000,
            }),
        );
        let a = Assertion::parse(&t).expect("parses");
        assert_eq!(a.alg, Algorithm::RS256);
        assert_eq!(a.kid.as_deref(), Some("k1"));
        assert_eq!(a.aud, vec!["openshift".to_owned()]);
        assert!(a.check_lifetime(1500).is_ok());
        assert_eq!(a.check_lifetime(999).map_err(|e| e.code), Err(700024));
        assert_eq!(a.check_lifetime(2000).map_err(|e| e.code), Err(700024));
    }

    #[test]
    fn refuses_what_is_not_a_usable_jwt() {
        let good_header = serde_json::json!({"alg": "RS256"});
        for bad in [
            "not-a-jwt".to_owned(),
            "a.b".to_owned(),
            "a.b.c.d".to_owned(),
            token(
                good_header.clone(),
                serde_json::json!({"sub": "s", "aud": "a", "exp": 1}),
            ),
            token(
                good_header.clone(),
                serde_json::json!({"iss": "i", "aud": "a", "exp": 1}),
            ),
            token(
                good_header.clone(),
                serde_json::json!({"iss": "i", "sub": "s", "exp": 1}),
            ),
            token(
                good_header.clone(),
                serde_json::json!({"iss": "i", "sub": "s", "aud": "a"}),
            ),
            token(
                good_header,
                serde_json::json!({"iss": "i", "sub": "s", "aud": [1], "exp": 1}),
            ),
        ] {
            assert_eq!(
                Assertion::parse(&bad).map(|_| ()).map_err(|e| e.code),
                Err(50027),
                "{bad}"
            );
        }
    }
}
