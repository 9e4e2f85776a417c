//! Entra's directories (tenants) and their administrators: the configured ones
//! (`Config::principals`) and those added at runtime through the admin API (`POST
//! /directories`).
//!
//! Why runtime: each hypersaga tenant is an Entra directory of its own, and `hypersaga dev` and
//! the end-to-end tests create tenants while the emulator runs. A directory added here is
//! exactly a configured one (token endpoint, OpenID configuration, the operator's rights on its
//! subscriptions, Graph's `Application.ReadWrite.All`), so every reader goes through
//! `Directories` rather than `Config::principals`, which stays the initial set.

use std::sync::{PoisonError, RwLock};

use serde::{Deserialize, Serialize};

use crate::config::Principal;

/// A directory as the admin API lists it: its administrator and subscriptions, never the
/// secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryListing {
    pub azure_tenant_id: String,
    /// The administrator's client id (a client-secret app registration).
    pub client_id: String,
    pub subscription_ids: Vec<String>,
    /// Added through the admin API rather than configured at start.
    pub added_at_runtime: bool,
}

/// Why a directory cannot be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddDirectoryError {
    /// The tenant exists already (with any administrator).
    #[error("directory '{0}' already exists")]
    TenantExists(String),
    /// Another directory's administrator has this client id.
    #[error("client id '{client_id}' is already the administrator of directory '{tenant}'")]
    ClientIdExists { client_id: String, tenant: String },
    /// A subscription belongs to one directory only.
    #[error("subscription '{subscription}' already belongs to directory '{tenant}'")]
    SubscriptionOwned {
        subscription: String,
        tenant: String,
    },
    /// A blank field, or a tenant id that is not a GUID.
    #[error("invalid directory: {0}")]
    Invalid(String),
}

/// The live set of directories. Every lock is short and never held across an `.await`.
pub(crate) struct Directories {
    principals: RwLock<Vec<Principal>>,
    /// How many of `principals` (the first ones) were configured at start.
    configured: usize,
}

impl Directories {
    pub(crate) fn new(configured: &[Principal]) -> Self {
        Self {
            principals: RwLock::new(configured.to_vec()),
            configured: configured.len(),
        }
    }

    /// Runs `f` over the live principals, configured first, in the order they were added.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&[Principal]) -> R) -> R {
        // A panic elsewhere while holding the lock leaves the list intact: read through it.
        let guard = self
            .principals
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        f(&guard)
    }

    /// Adds a directory. Re-adding exactly the same one (a retried request) is not an error:
    /// answers `Ok(false)`; a new one `Ok(true)`.
    pub(crate) fn add(&self, p: Principal) -> Result<bool, AddDirectoryError> {
        validate(&p)?;
        let mut list = self
            .principals
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if list.iter().any(|q| same(q, &p)) {
            return Ok(false);
        }
        for q in list.iter() {
            if q.azure_tenant_id.eq_ignore_ascii_case(&p.azure_tenant_id) {
                return Err(AddDirectoryError::TenantExists(q.azure_tenant_id.clone()));
            }
            if q.client_id.eq_ignore_ascii_case(&p.client_id) {
                return Err(AddDirectoryError::ClientIdExists {
                    client_id: q.client_id.clone(),
                    tenant: q.azure_tenant_id.clone(),
                });
            }
            if let Some(s) = p
                .subscription_ids
                .iter()
                .find(|s| q.subscription_ids.iter().any(|t| t.eq_ignore_ascii_case(s)))
            {
                return Err(AddDirectoryError::SubscriptionOwned {
                    subscription: s.clone(),
                    tenant: q.azure_tenant_id.clone(),
                });
            }
        }
        list.push(p);
        Ok(true)
    }

    /// Every directory, secrets left out.
    pub(crate) fn list(&self) -> Vec<DirectoryListing> {
        self.with(|all| {
            all.iter()
                .enumerate()
                .map(|(i, p)| DirectoryListing {
                    azure_tenant_id: p.azure_tenant_id.clone(),
                    client_id: p.client_id.clone(),
                    subscription_ids: p.subscription_ids.clone(),
                    added_at_runtime: i >= self.configured,
                })
                .collect()
        })
    }
}

/// The same directory, administrator, secret and subscriptions (ids ignoring case).
fn same(a: &Principal, b: &Principal) -> bool {
    a.azure_tenant_id.eq_ignore_ascii_case(&b.azure_tenant_id)
        && a.client_id.eq_ignore_ascii_case(&b.client_id)
        && a.client_secret == b.client_secret
        && a.subscription_ids.len() == b.subscription_ids.len()
        && a.subscription_ids
            .iter()
            .zip(&b.subscription_ids)
            .all(|(x, y)| x.eq_ignore_ascii_case(y))
}

fn validate(p: &Principal) -> Result<(), AddDirectoryError> {
    if uuid::Uuid::parse_str(&p.azure_tenant_id).is_err() {
        return Err(AddDirectoryError::Invalid(format!(
            "azure_tenant_id '{}' is not a GUID",
            p.azure_tenant_id
        )));
    }
    for (name, value) in [
        ("client_id", &p.client_id),
        ("client_secret", &p.client_secret),
    ] {
        if value.trim().is_empty() {
            return Err(AddDirectoryError::Invalid(format!("{name} is blank")));
        }
    }
    if p.subscription_ids.iter().any(|s| s.trim().is_empty()) {
        return Err(AddDirectoryError::Invalid(
            "a subscription id is blank".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    const T2: &str = "4a4d599f-e69d-4cd8-a9e1-9882ea340fb5";

    fn p(tenant: &str, client: &str, sub: &str) -> Principal {
        Principal {
            azure_tenant_id: tenant.into(),
            client_id: client.into(),
            client_secret: "s".into(),
            subscription_ids: vec![sub.into()],
        }
    }

    #[test]
    fn a_directory_is_added_once_and_conflicts_are_refused() {
        let d = Directories::new(&[p(T1, "a", "s1")]);
        assert_eq!(d.add(p(T2, "b", "s2")), Ok(true));
        assert_eq!(d.add(p(T2, "b", "s2")), Ok(false), "a retry is no conflict");
        assert_eq!(
            d.add(p(&T2.to_uppercase(), "c", "s3")),
            Err(AddDirectoryError::TenantExists(T2.into()))
        );
        let t3 = "11111111-1111-1111-1111-111111111111";
        assert!(matches!(
            d.add(p(t3, "A", "s3")),
            Err(AddDirectoryError::ClientIdExists { .. })
        ));
        assert!(matches!(
            d.add(p(t3, "c", "S1")),
            Err(AddDirectoryError::SubscriptionOwned { .. })
        ));
        assert!(matches!(
            d.add(p("acme", "c", "s3")),
            Err(AddDirectoryError::Invalid(_))
        ));
        let listed = d.list();
        assert_eq!(listed.len(), 2);
        assert!(!listed[0].added_at_runtime && listed[1].added_at_runtime);
    }
}
