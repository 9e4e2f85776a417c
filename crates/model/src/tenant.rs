//! Tenant identifiers: they appear in every subject, KV key and span, so their alphabet is
//! restricted to what NATS subjects and KV keys accept.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A tenant id, matching `[a-z0-9-]{1,40}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

#[derive(Debug, thiserror::Error)]
#[error("tenant id {0:?} must match [a-z0-9-]{{1,40}}")]
pub struct InvalidTenantId(pub String);

impl TenantId {
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidTenantId> {
        let id = id.into();
        let ok = !id.is_empty()
            && id.len() <= 40
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(Self(id))
        } else {
            Err(InvalidTenantId(id))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TenantId {
    type Error = InvalidTenantId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<TenantId> for String {
    fn from(t: TenantId) -> String {
        t.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet_only() {
        assert!(TenantId::new("team-a1").is_ok());
        assert!(TenantId::new("").is_err());
        assert!(TenantId::new("Team").is_err());
        assert!(TenantId::new("a.b").is_err());
        assert!(TenantId::new("x".repeat(41)).is_err());
    }
}
