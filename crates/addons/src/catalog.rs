//! The add-on catalog: every version of every add-on, in the bus's `hcp_addons` bucket under
//! `<owner>.<name>.<version>`, where the owner is a tenant's id or `_platform` for the add-ons
//! an administrator offers every tenant.
//!
//! A version, once put, never changes: clusters pin the version they run, so a step retried
//! tomorrow applies what was asked for today. Putting the same definition again is a no-op;
//! putting another under a version that exists is refused ([`CatalogError::VersionExists`]).

use async_nats::jetstream::kv;
use hypersaga_model::{AddonScope, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::definition::Addon;

/// The record's schema version; a reader refuses a newer one rather than misread it.
pub const ADDON_RECORD_VERSION: u32 = 1;
/// The owner token of the platform's add-ons (a tenant id never starts with `_`).
const PLATFORM_OWNER: &str = "_platform";

/// Whose catalog an add-on is in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    Tenant(TenantId),
    Platform,
}

impl Owner {
    /// The first token of the owner's keys.
    pub fn token(&self) -> &str {
        match self {
            Self::Tenant(t) => t.as_str(),
            Self::Platform => PLATFORM_OWNER,
        }
    }

    pub fn scope(&self) -> AddonScope {
        match self {
            Self::Tenant(_) => AddonScope::Tenant,
            Self::Platform => AddonScope::Platform,
        }
    }

    /// The owner a cluster of `tenant` means by `scope`.
    pub fn of(scope: AddonScope, tenant: &TenantId) -> Self {
        match scope {
            AddonScope::Tenant => Self::Tenant(tenant.clone()),
            AddonScope::Platform => Self::Platform,
        }
    }
}

/// The key of `name` at `version` in `owner`'s catalog.
pub fn catalog_key(owner: &Owner, name: &str, version: &str) -> String {
    format!("{}.{name}.{version}", owner.token())
}

/// One version of one add-on, as the catalog keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddonRecord {
    pub v: u32,
    pub scope: AddonScope,
    pub addon: Addon,
    /// [`Addon::digest`]: tells a repeated put from a different definition.
    pub digest: String,
    #[serde(with = "time::serde::rfc3339")]
    pub put_at: OffsetDateTime,
    /// Who put it (`tenant:<id>` or `admin:<name>`).
    pub put_by: String,
}

impl AddonRecord {
    pub fn new(scope: AddonScope, addon: Addon, put_by: impl Into<String>) -> Self {
        Self {
            v: ADDON_RECORD_VERSION,
            scope,
            digest: addon.digest(),
            addon,
            put_at: OffsetDateTime::now_utc(),
            put_by: put_by.into(),
        }
    }

    /// Reads a stored record, refusing one of a newer schema.
    pub fn decode(bytes: &[u8]) -> Result<Self, CatalogError> {
        let rec: Self =
            serde_json::from_slice(bytes).map_err(|e| CatalogError::Decode(e.to_string()))?;
        if rec.v > ADDON_RECORD_VERSION {
            return Err(CatalogError::Decode(format!(
                "record version {} is newer than this build's {ADDON_RECORD_VERSION}",
                rec.v
            )));
        }
        Ok(rec)
    }
}

/// What went wrong with the catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error(
        "add-on {name} version {version} exists with another definition; versions never change: put it as a new version"
    )]
    VersionExists { name: String, version: String },
    #[error("add-on record does not decode: {0}")]
    Decode(String),
    #[error("add-on record does not encode: {0}")]
    Encode(String),
    #[error("the add-on catalog cannot be reached: {0}")]
    Kv(String),
}

/// What a put did.
#[derive(Clone, Debug, PartialEq)]
pub enum Put {
    /// The version is new: stored as given.
    Created(AddonRecord),
    /// The same definition was there already: the stored record, unchanged.
    Unchanged(AddonRecord),
}

/// The catalog in `hcp_addons`.
#[derive(Clone)]
pub struct Catalog {
    kv: kv::Store,
}

impl Catalog {
    pub fn new(kv: kv::Store) -> Self {
        Self { kv }
    }

    /// The bucket, for listing an owner's records.
    pub fn store(&self) -> &kv::Store {
        &self.kv
    }

    /// `name` at `version` in `owner`'s catalog, if it was put and not deleted.
    pub async fn get(
        &self,
        owner: &Owner,
        name: &str,
        version: &str,
    ) -> Result<Option<AddonRecord>, CatalogError> {
        let bytes = self
            .kv
            .get(catalog_key(owner, name, version))
            .await
            .map_err(|e| CatalogError::Kv(e.to_string()))?;
        bytes.map(|b| AddonRecord::decode(&b)).transpose()
    }

    /// Stores `record` under its owner, name and version unless that version exists: the
    /// same definition again is [`Put::Unchanged`], another one [`CatalogError::VersionExists`].
    pub async fn put(&self, owner: &Owner, record: AddonRecord) -> Result<Put, CatalogError> {
        let key = catalog_key(owner, &record.addon.name, &record.addon.version);
        let bytes = serde_json::to_vec(&record).map_err(|e| CatalogError::Encode(e.to_string()))?;
        // Twice at most: a create that loses to a concurrent put of the same version reads it.
        for _ in 0..2 {
            if let Some(existing) = self
                .get(owner, &record.addon.name, &record.addon.version)
                .await?
            {
                return if existing.digest == record.digest {
                    Ok(Put::Unchanged(existing))
                } else {
                    Err(CatalogError::VersionExists {
                        name: record.addon.name.clone(),
                        version: record.addon.version.clone(),
                    })
                };
            }
            match self.kv.create(&key, bytes.clone().into()).await {
                Ok(_) => return Ok(Put::Created(record)),
                Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => continue,
                Err(e) => return Err(CatalogError::Kv(e.to_string())),
            }
        }
        Err(CatalogError::Kv(format!("{key} kept changing")))
    }

    /// Removes `name` at `version` from `owner`'s catalog.
    pub async fn delete(
        &self,
        owner: &Owner,
        name: &str,
        version: &str,
    ) -> Result<(), CatalogError> {
        self.kv
            .purge(catalog_key(owner, name, version))
            .await
            .map_err(|e| CatalogError::Kv(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_owner_the_add_on_and_its_version() {
        let acme = Owner::Tenant(TenantId::new("acme").unwrap());
        assert_eq!(catalog_key(&acme, "logging", "1.4.0"), "acme.logging.1.4.0");
        assert_eq!(
            catalog_key(&Owner::Platform, "logging", "2"),
            "_platform.logging.2"
        );
        assert_eq!(
            Owner::of(AddonScope::Platform, &TenantId::new("acme").unwrap()),
            Owner::Platform
        );
    }

    #[test]
    fn a_record_of_a_newer_schema_is_refused() {
        let addon = Addon::parse("name: a\nversion: '1'\nphases: [{name: p}]\n").unwrap();
        let mut rec = AddonRecord::new(AddonScope::Tenant, addon, "tenant:acme");
        rec.v = ADDON_RECORD_VERSION + 1;
        let bytes = serde_json::to_vec(&rec).unwrap();
        assert!(matches!(
            AddonRecord::decode(&bytes),
            Err(CatalogError::Decode(_))
        ));
    }
}
