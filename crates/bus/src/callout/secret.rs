//! A tenant reader's password: made at onboarding, handed to the tenant once, and kept by
//! hypersaga only as its digest (in the tenant's record), against which a connection's
//! password is checked.
//!
//! The password is 256 random bits, so a plain SHA-256 is enough to keep it: there is no
//! dictionary to try, and a digest that leaks does not let anyone connect.

use data_encoding::{BASE64URL_NOPAD, HEXLOWER};
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};

/// A tenant reader's password (never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A new random password: 32 bytes, unpadded base64url (43 characters, safe in a URL's
    /// user info and a shell).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(BASE64URL_NOPAD.encode(&bytes))
    }

    /// A password as it was handed over (read from a file, say).
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What a tenant record keeps of it.
    pub fn digest(&self) -> SecretDigest {
        SecretDigest::of(&self.0)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The SHA-256 of a password, as a tenant record keeps it (lowercase hex).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SecretDigest([u8; 32]);

impl SecretDigest {
    pub fn of(password: &str) -> Self {
        Self(Sha256::digest(password.as_bytes()).into())
    }

    /// Whether `password` is the one this is the digest of. The comparison takes the same
    /// time wherever the digests differ.
    pub fn matches(&self, password: &str) -> bool {
        let presented = Self::of(password);
        self.0
            .iter()
            .zip(presented.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Display for SecretDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&HEXLOWER.encode(&self.0))
    }
}

/// A digest that is not 64 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("a secret digest is 64 lowercase hex digits")]
pub struct BadDigest;

impl std::str::FromStr for SecretDigest {
    type Err = BadDigest;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = HEXLOWER.decode(s.as_bytes()).map_err(|_| BadDigest)?;
        Ok(Self(bytes.try_into().map_err(|_| BadDigest)?))
    }
}

impl serde::Serialize for SecretDigest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SecretDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_matches_its_digest_and_no_other() {
        let secret = Secret::generate();
        assert_eq!(secret.expose().len(), 43);
        let digest = secret.digest();
        assert!(digest.matches(secret.expose()));
        assert!(!digest.matches(Secret::generate().expose()));
        assert!(!digest.matches(""));
        assert_ne!(Secret::generate(), Secret::generate());
    }

    #[test]
    fn a_digest_is_kept_as_hex_and_read_back() {
        let digest = SecretDigest::of("p");
        let json = serde_json::to_string(&digest).unwrap();
        assert_eq!(json.len(), 64 + 2);
        let back: SecretDigest = serde_json::from_str(&json).unwrap();
        assert_eq!(back, digest);
        assert!("abc".parse::<SecretDigest>().is_err());
        assert!("zz".repeat(32).parse::<SecretDigest>().is_err());
    }

    #[test]
    fn a_secret_is_never_printed() {
        let secret = Secret::new("hunter2");
        assert!(!format!("{secret:?}").contains("hunter2"));
    }
}
