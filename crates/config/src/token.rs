//! Bearer tokens as the configuration keeps them: a SHA-256 digest, never the token. A leaked
//! configuration then grants no access, and a tenant may have several tokens at once so one
//! can be rotated without an outage (add the new digest, move callers over, drop the old).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const SCHEME: &str = "sha256:";

/// A new bearer token, `<prefix>_<64 hex digits>`: 256 random bits.
pub fn new_token(prefix: &str) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let hex: String = (0..32)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect();
    format!("{prefix}_{hex}")
}

/// `sha256:<64 hex digits>` of a bearer token.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    /// The digest of `token`, as `hypersaga token new` prints it.
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// Whether `token` is the one this digest was made from, in time independent of where
    /// the two differ.
    pub fn matches(&self, token: &str) -> bool {
        let other = Self::of(token);
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl fmt::Display for TokenDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}", hex::encode(self.0))
    }
}

impl fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<TokenDigest> for String {
    fn from(d: TokenDigest) -> Self {
        d.to_string()
    }
}

impl TryFrom<String> for TokenDigest {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        let hexits = s.strip_prefix(SCHEME).ok_or_else(|| {
            format!(
                "a token digest is `{SCHEME}<64 hex digits>` (make one with `hypersaga token new`), not the token itself"
            )
        })?;
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hexits, &mut bytes)
            .map_err(|e| format!("{SCHEME} must be followed by 64 hex digits: {e}"))?;
        Ok(Self(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_matches_its_token_only_and_round_trips() {
        let d = TokenDigest::of("0123456789abcdef-acme");
        assert!(d.matches("0123456789abcdef-acme"));
        assert!(!d.matches("0123456789abcdef-acmf"));
        let s = d.to_string();
        assert!(s.starts_with("sha256:") && s.len() == 7 + 64, "{s}");
        assert_eq!(TokenDigest::try_from(s).unwrap(), d);
    }

    #[test]
    fn a_plain_token_is_refused_with_how_to_make_a_digest() {
        let e = TokenDigest::try_from("0123456789abcdef-acme".to_owned()).unwrap_err();
        assert!(e.contains("hypersaga token new"), "{e}");
        assert!(TokenDigest::try_from("sha256:abc".to_owned()).is_err());
    }
}
