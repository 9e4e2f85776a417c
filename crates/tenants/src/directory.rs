//! The tenants every role serves, live: the configured ones, and the onboarded ones followed
//! from the `hcp_tenants` bucket. A change made through the admin API reaches every replica of
//! every role within the bus's delivery time, with no restart.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use hypersaga_config::{Config, TenantAzure, TenantConfig, TokenDigest};
use hypersaga_model::TenantId;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::record::{Suspension, TenantRecord};

/// Where a tenant comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Declared in the configuration: changed only by editing it (and restarting).
    Configured,
    /// Onboarded through the admin API; `revision` is its record's, for compare-and-set.
    Onboarded {
        record: Box<TenantRecord>,
        revision: u64,
    },
}

/// A tenant as the roles use it.
#[derive(Clone, Debug)]
pub struct Tenant {
    /// Its id, API token digests and Azure access, in the configuration's shape.
    pub config: TenantConfig,
    pub audit_credentials: Vec<TokenDigest>,
    pub suspended: Option<Suspension>,
    pub source: Source,
}

impl Tenant {
    pub fn id(&self) -> &TenantId {
        &self.config.id
    }

    fn configured(config: &TenantConfig) -> Self {
        Self {
            config: config.clone(),
            audit_credentials: config.audit_credentials.clone(),
            suspended: None,
            source: Source::Configured,
        }
    }

    /// Onboarded tenant `record`, stored at `revision`.
    pub fn from_record(record: TenantRecord, revision: u64) -> Self {
        Self {
            config: TenantConfig {
                id: record.id.clone(),
                tokens: record.api_tokens.clone(),
                audit_credentials: record.audit_credentials.clone(),
                azure: TenantAzure {
                    tenant_id: record.azure.tenant_id.clone(),
                    subscription_id: record.azure.subscription_id.clone(),
                    client_id: record.azure.client_id.clone(),
                    client_secret: None,
                },
            },
            audit_credentials: record.audit_credentials.clone(),
            suspended: record.suspended.clone(),
            source: Source::Onboarded {
                record: Box::new(record),
                revision,
            },
        }
    }
}

/// Why the directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bus(#[from] hypersaga_bus::Error),
    #[error("reading the tenants bucket failed: {0}")]
    Read(String),
}

/// The live set of tenants. Cheap to clone; every clone sees the same set.
#[derive(Clone)]
pub struct Directory {
    inner: Arc<Inner>,
}

struct Inner {
    configured: HashMap<TenantId, Arc<Tenant>>,
    onboarded: RwLock<HashMap<TenantId, Arc<Tenant>>>,
    /// Bumped on every change, for those who act on one (the workers open new queues).
    changed: watch::Sender<u64>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("configured", &self.inner.configured.len())
            .field("onboarded", &self.read().len())
            .finish()
    }
}

/// How long to wait before following the bucket again after its watch ended.
const REWATCH_AFTER: Duration = Duration::from_secs(1);

impl Directory {
    /// The configured tenants only, for a process that does not follow the bus.
    pub fn configured(config: &Config) -> Self {
        let configured = config
            .tenants
            .iter()
            .map(|t| (t.id.clone(), Arc::new(Tenant::configured(t))))
            .collect();
        Self {
            inner: Arc::new(Inner {
                configured,
                onboarded: RwLock::new(HashMap::new()),
                changed: watch::channel(0).0,
            }),
        }
    }

    /// The configured tenants and every onboarded one, read now from `tenants` (the
    /// `hcp_tenants` bucket) and then followed until `shutdown`.
    pub async fn follow(
        config: &Config,
        tenants: kv::Store,
        shutdown: CancellationToken,
    ) -> Result<Self, Error> {
        let directory = Self::configured(config);
        let from = directory.load(&tenants).await?;
        let follower = directory.clone();
        tokio::spawn(async move { follower.watch(tenants, from, shutdown).await });
        Ok(directory)
    }

    /// Reads every record; answers the revision to follow from.
    async fn load(&self, store: &kv::Store) -> Result<u64, Error> {
        let read = |e: &dyn std::fmt::Display| Error::Read(e.to_string());
        let last = store
            .status()
            .await
            .map_err(|e| read(&e))?
            .info
            .state
            .last_sequence;
        let keys: Vec<String> = match store.keys().await {
            Ok(keys) => keys.filter_map(|k| async { k.ok() }).collect().await,
            Err(e) => return Err(read(&e)),
        };
        for key in keys {
            if let Some(entry) = store.entry(&key).await.map_err(|e| read(&e))? {
                self.apply(&entry);
            }
        }
        Ok(last + 1)
    }

    /// Follows the bucket from revision `from`; a watch that ends is opened again from the
    /// last revision seen.
    async fn watch(&self, store: kv::Store, mut from: u64, shutdown: CancellationToken) {
        loop {
            match store.watch_all_from_revision(from).await {
                Ok(mut watch) => loop {
                    let next = tokio::select! {
                        () = shutdown.cancelled() => return,
                        next = watch.next() => next,
                    };
                    match next {
                        Some(Ok(entry)) => {
                            from = from.max(entry.revision + 1);
                            self.apply(&entry);
                        }
                        Some(Err(e)) => {
                            warn!(error = %e, "following the tenants bucket failed; again shortly");
                            break;
                        }
                        None => break,
                    }
                },
                Err(e) => warn!(error = %e, "cannot follow the tenants bucket; again shortly"),
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(REWATCH_AFTER) => {}
            }
        }
    }

    /// Takes one entry of the bucket: a record put, or a tenant removed. An older revision
    /// than the one held (a re-delivery) changes nothing.
    fn apply(&self, entry: &kv::Entry) {
        let Ok(id) = TenantId::new(entry.key.clone()) else {
            warn!(key = %entry.key, "a key of the tenants bucket is no tenant id; ignored");
            return;
        };
        let mut onboarded = self
            .inner
            .onboarded
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let held = onboarded.get(&id).map(|t| match &t.source {
            Source::Onboarded { revision, .. } => *revision,
            Source::Configured => 0,
        });
        if held.is_some_and(|r| r >= entry.revision) {
            return;
        }
        match entry.operation {
            kv::Operation::Put => match TenantRecord::decode(&entry.key, &entry.value) {
                Ok(record) => {
                    if self.inner.configured.contains_key(&id) {
                        warn!(tenant = %id, "an onboarded tenant has a configured one's id; the configuration's is served");
                    }
                    info!(tenant = %id, revision = entry.revision, suspended = record.suspended.is_some(), "tenant record changed");
                    onboarded.insert(id, Arc::new(Tenant::from_record(record, entry.revision)));
                }
                Err(e) => {
                    warn!(tenant = %id, error = %e, "a tenant record cannot be read; the tenant is not served");
                    onboarded.remove(&id);
                }
            },
            kv::Operation::Delete | kv::Operation::Purge => {
                info!(tenant = %id, "tenant removed");
                onboarded.remove(&id);
            }
        }
        drop(onboarded);
        self.inner.changed.send_modify(|n| *n += 1);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<TenantId, Arc<Tenant>>> {
        self.inner
            .onboarded
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Tenant `id`, suspended or not.
    pub fn get(&self, id: &TenantId) -> Option<Arc<Tenant>> {
        self.inner
            .configured
            .get(id)
            .cloned()
            .or_else(|| self.read().get(id).cloned())
    }

    /// Every tenant, in id order.
    pub fn all(&self) -> Vec<Arc<Tenant>> {
        let onboarded = self.read();
        let mut all: Vec<_> = self
            .inner
            .configured
            .values()
            .cloned()
            .chain(
                onboarded
                    .values()
                    .filter(|t| !self.inner.configured.contains_key(t.id()))
                    .cloned(),
            )
            .collect();
        all.sort_by(|a, b| a.id().cmp(b.id()));
        all
    }

    /// Every tenant's id, in order.
    pub fn ids(&self) -> Vec<TenantId> {
        self.all().iter().map(|t| t.id().clone()).collect()
    }

    /// The tenant an API bearer token belongs to. The token is hashed once and its digest
    /// compared with the kept ones: what the comparison's time could tell is about a digest,
    /// never about a token.
    pub fn by_token(&self, token: &str) -> Option<Arc<Tenant>> {
        self.find(token, |t| &t.config.tokens)
    }

    /// The tenant an audit reader's password belongs to.
    pub fn by_audit_credential(&self, password: &str) -> Option<Arc<Tenant>> {
        self.find(password, |t| &t.audit_credentials)
    }

    fn find(
        &self,
        secret: &str,
        digests: impl Fn(&Tenant) -> &Vec<TokenDigest>,
    ) -> Option<Arc<Tenant>> {
        let digest = TokenDigest::of(secret);
        if let Some(t) = self
            .inner
            .configured
            .values()
            .find(|t| digests(t).contains(&digest))
        {
            return Some(t.clone());
        }
        self.read()
            .values()
            .filter(|t| !self.inner.configured.contains_key(t.id()))
            .find(|t| digests(t).contains(&digest))
            .cloned()
    }

    /// Says when the set changes (a counter, bumped per change).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_with(ids: &[&str]) -> Config {
        let tenants = ids
            .iter()
            .map(|id| TenantConfig {
                id: TenantId::new(*id).unwrap(),
                tokens: vec![TokenDigest::of(&format!("token-{id}"))],
                audit_credentials: Vec::new(),
                azure: TenantAzure {
                    tenant_id: "t".into(),
                    subscription_id: "s".into(),
                    client_id: "c".into(),
                    client_secret: None,
                },
            })
            .collect();
        Config {
            tenants,
            ..Config::default()
        }
    }

    #[test]
    fn configured_tenants_are_found_by_id_and_token() {
        let d = Directory::configured(&config_with(&["globex", "acme"]));
        assert_eq!(
            d.ids().iter().map(TenantId::as_str).collect::<Vec<_>>(),
            ["acme", "globex"]
        );
        assert_eq!(d.by_token("token-acme").unwrap().id().as_str(), "acme");
        assert!(d.by_token("token-nobody").is_none());
        assert!(d.by_audit_credential("token-acme").is_none());
        assert!(d.get(&TenantId::new("acme").unwrap()).is_some());
    }
}
