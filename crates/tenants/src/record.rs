//! A tenant as the bus keeps it (`hcp_tenants`, key = tenant id): who it is in Azure, the
//! digests of the credentials it was issued, and whether it is suspended. Never a secret:
//! tokens are kept as digests, and Azure is reached through workload identity federation, so
//! the tenant's record holds ids only.

use hypersaga_config::TokenDigest;
use hypersaga_model::TenantId;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The record's schema version; a reader refuses a newer one rather than misread it.
pub const TENANT_RECORD_VERSION: u32 = 1;

/// One onboarded tenant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantRecord {
    pub version: u32,
    pub id: TenantId,
    pub azure: AzureAccess,
    /// Digests of the bearer tokens its API callers present; several during a rotation.
    pub api_tokens: Vec<TokenDigest>,
    /// Digests of the passwords its audit readers connect to the bus with.
    pub audit_credentials: Vec<TokenDigest>,
    /// Set while the tenant is suspended: its calls and audit connections are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<Suspension>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The admin who onboarded it.
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    pub updated_by: String,
}

/// Where the tenant's clusters are built: an application in the tenant's own Entra directory
/// that trusts hypersaga's issuer through a federated credential, and the subscription it may
/// build in.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AzureAccess {
    /// The tenant's Entra (directory) id.
    pub tenant_id: String,
    pub subscription_id: String,
    /// The application (client) id of the app registration the tenant made for hypersaga.
    pub client_id: String,
}

/// Why, since when and by whom a tenant is suspended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspension {
    pub reason: String,
    pub by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// Why a stored record cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("tenant record does not decode: {0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "tenant record version {found} is newer than this build reads ({TENANT_RECORD_VERSION})"
    )]
    Newer { found: u32 },
    #[error("tenant record under key {key:?} names tenant {id}")]
    WrongKey { key: String, id: TenantId },
}

impl TenantRecord {
    /// Reads the record stored under `key`, refusing one that names another tenant.
    pub fn decode(key: &str, bytes: &[u8]) -> Result<Self, DecodeError> {
        let record: Self = serde_json::from_slice(bytes)?;
        if record.version > TENANT_RECORD_VERSION {
            return Err(DecodeError::Newer {
                found: record.version,
            });
        }
        if record.id.as_str() != key {
            return Err(DecodeError::WrongKey {
                key: key.to_owned(),
                id: record.id,
            });
        }
        Ok(record)
    }

    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn acme() -> TenantRecord {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        TenantRecord {
            version: TENANT_RECORD_VERSION,
            id: TenantId::new("acme").unwrap(),
            azure: AzureAccess {
                tenant_id: "t".into(),
                subscription_id: "s".into(),
                client_id: "c".into(),
            },
            api_tokens: vec![TokenDigest::of("token")],
            audit_credentials: vec![TokenDigest::of("audit")],
            suspended: None,
            created_at: now,
            created_by: "admin".into(),
            updated_at: now,
            updated_by: "admin".into(),
        }
    }

    #[test]
    fn a_record_round_trips_and_holds_no_secret() {
        let r = acme();
        let bytes = r.encode().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(!text.contains("\"token\""), "{text}");
        assert!(text.contains("sha256:"), "{text}");
        assert_eq!(TenantRecord::decode("acme", &bytes).unwrap(), r);
    }

    #[test]
    fn a_record_under_another_key_or_from_a_newer_build_is_refused() {
        let r = acme();
        let err = TenantRecord::decode("globex", &r.encode().unwrap()).unwrap_err();
        assert!(matches!(err, DecodeError::WrongKey { .. }), "{err}");
        let newer = TenantRecord {
            version: TENANT_RECORD_VERSION + 1,
            ..r
        };
        let err = TenantRecord::decode("acme", &newer.encode().unwrap()).unwrap_err();
        assert!(matches!(err, DecodeError::Newer { .. }), "{err}");
    }
}
