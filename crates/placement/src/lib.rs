//! Where hosted control planes live.
//!
//! Each management cluster has a record in the bus's `hcp_management` bucket: its region and
//! capacity (from the configuration), whether it is cordoned (live, through the admin API),
//! and the clusters placed on it. A create is placed, before its cluster record is written, in
//! its region on the management cluster with the most free capacity, by compare-and-set on
//! that record, so concurrent creates on several gateway replicas never overfill one. The
//! choice is recorded on the cluster record and every later operation of the cluster follows it.
//!
//! Slots are given back lazily: a placement whose cluster was deleted (or whose create was
//! never recorded) is dropped when a management cluster looks full, so a delete needs no
//! extra write.
#![forbid(unsafe_code)]

mod record;

use std::collections::BTreeMap;

use async_nats::jetstream::kv;
use hypersaga_config::ManagementClusterConfig;
use hypersaga_model::{ClusterPhase, ClusterRecord};
use time::{Duration, OffsetDateTime};
use tracing::{info, warn};

pub use record::{Cordon, MANAGEMENT_RECORD_VERSION, ManagementRecord, Placed};

/// How long a placement may wait for its cluster record before it counts as abandoned: the
/// gateway writes the record right after placing.
const ABANDONED_AFTER: Duration = Duration::seconds(60);

/// How often a placement is tried again after losing a compare-and-set to another one.
const TRIES: usize = 32;

/// Why a placement, or a change to a management cluster, did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No management cluster in the region has room (or all that do are cordoned).
    #[error("{0}")]
    NoRoom(String),
    #[error("no management cluster {0:?}")]
    NotFound(String),
    #[error(
        "management cluster {name} is contended: {tries} placements in a row lost their compare-and-set"
    )]
    Contended { name: String, tries: usize },
    #[error("the management clusters' records cannot be read or written: {0}")]
    Store(String),
    #[error("management cluster record {key:?} does not decode: {message}")]
    Decode { key: String, message: String },
}

fn store(e: impl std::fmt::Display) -> Error {
    Error::Store(e.to_string())
}

/// One management cluster as it stands, with its record's revision.
#[derive(Clone, Debug)]
pub struct View {
    pub record: ManagementRecord,
    pub revision: u64,
}

impl View {
    /// Clusters placed on it and not (known to be) deleted.
    pub fn hosted(&self) -> usize {
        self.record.hosted.len()
    }

    /// Room left; `None` without a capacity limit.
    pub fn free(&self) -> Option<u32> {
        (self.record.capacity > 0).then(|| {
            self.record
                .capacity
                .saturating_sub(u32::try_from(self.hosted()).unwrap_or(u32::MAX))
        })
    }
}

/// The management clusters' records. Cheap to clone.
#[derive(Clone)]
pub struct Placement {
    records: kv::Store,
    clusters: kv::Store,
    /// The configured management clusters: only they take new clusters (a record left by one
    /// no longer configured keeps its clusters' placements, and takes nothing new).
    configured: std::sync::Arc<Vec<String>>,
}

impl Placement {
    /// `records` is the `hcp_management` bucket, `clusters` the cluster records (to tell a
    /// placement still in use from one whose cluster is gone); `configured` the names new
    /// clusters may go to.
    pub fn new(records: kv::Store, clusters: kv::Store, configured: Vec<String>) -> Self {
        Self {
            records,
            clusters,
            configured: std::sync::Arc::new(configured),
        }
    }

    /// Brings the records to the configured management clusters: creates missing ones, and
    /// updates region and capacity where the configuration changed them (cordons and
    /// placements are kept). A cluster no longer configured keeps its record, so its clusters'
    /// placements are not lost.
    pub async fn ensure(&self, configured: &[ManagementClusterConfig]) -> Result<(), Error> {
        for m in configured {
            for _ in 0..TRIES {
                match self.get(&m.name).await? {
                    None => {
                        let record = ManagementRecord::new(&m.name, &m.region, m.capacity);
                        match self.records.create(&m.name, encode(&record)?.into()).await {
                            Ok(_) => break,
                            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => continue,
                            Err(e) => return Err(store(e)),
                        }
                    }
                    Some(view)
                        if view.record.region == m.region && view.record.capacity == m.capacity =>
                    {
                        break;
                    }
                    Some(mut view) => {
                        view.record.region = m.region.clone();
                        view.record.capacity = m.capacity;
                        if self.put(&view).await?.is_some() {
                            info!(name = %m.name, region = %m.region, capacity = m.capacity, "management cluster reconfigured");
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Management cluster `name`, if it has a record.
    pub async fn get(&self, name: &str) -> Result<Option<View>, Error> {
        match self.records.entry(name).await.map_err(store)? {
            Some(e) if e.operation == kv::Operation::Put => {
                let record: ManagementRecord =
                    serde_json::from_slice(&e.value).map_err(|err| Error::Decode {
                        key: e.key.clone(),
                        message: err.to_string(),
                    })?;
                Ok(Some(View {
                    record,
                    revision: e.revision,
                }))
            }
            _ => Ok(None),
        }
    }

    /// Every management cluster, by name, with its placements as they stand (clusters
    /// deleted since are not counted).
    pub async fn list(&self) -> Result<Vec<View>, Error> {
        let mut views = self.all().await?;
        views.sort_by(|a, b| a.record.name.cmp(&b.record.name));
        let now = OffsetDateTime::now_utc();
        for view in &mut views {
            let gone = self.gone(&view.record.hosted, now).await?;
            view.record.hosted.retain(|k, _| !gone.contains(k));
        }
        Ok(views)
    }

    /// Places cluster `key` (`<tenant>.<name>`, of uid `uid`) in `region`: the management
    /// cluster already holding it (a retried create), else the one with the most room. When
    /// none has room, placements whose clusters are gone are given back first.
    pub async fn place(&self, key: &str, uid: &str, region: &str) -> Result<String, Error> {
        for _ in 0..TRIES {
            let views = self.all().await?;
            let best = match self.choose_from(&views, key, uid, region) {
                Choice::Holding(name) => return Ok(name),
                Choice::Best(best) => best,
                Choice::None { open, in_region } => {
                    // Full, or looks it: give back what deleted clusters hold, then look again.
                    if self.reclaim(&open).await? {
                        continue;
                    }
                    return Err(Error::NoRoom(no_room(region, &in_region)));
                }
            };
            let mut chosen = best.clone();
            if chosen.record.capacity == 0 {
                // No limit: nothing to count, and no hot record for every create to contend on.
                return Ok(chosen.record.name);
            }
            chosen.record.hosted.insert(
                key.to_owned(),
                Placed {
                    uid: uid.to_owned(),
                    at: OffsetDateTime::now_utc(),
                },
            );
            if self.put(&chosen).await?.is_some() {
                info!(cluster = key, management_cluster = %chosen.record.name, "placed");
                return Ok(chosen.record.name);
            }
        }
        Err(Error::Contended {
            name: region.to_owned(),
            tries: TRIES,
        })
    }

    /// Where [`Placement::place`] would put cluster `key` now, without placing it (a dry run,
    /// a preflight): nothing is written, and what deleted clusters hold counts as room, as
    /// `place` would give it back.
    pub async fn choose(&self, key: &str, uid: &str, region: &str) -> Result<String, Error> {
        let views = self.list().await?;
        match self.choose_from(&views, key, uid, region) {
            Choice::Holding(name) => Ok(name),
            Choice::Best(best) => Ok(best.record.name.clone()),
            Choice::None { in_region, .. } => Err(Error::NoRoom(no_room(region, &in_region))),
        }
    }

    /// The management cluster holding `key` already, else the open one in `region` with the
    /// most room.
    fn choose_from<'a>(&self, views: &'a [View], key: &str, uid: &str, region: &str) -> Choice<'a> {
        if let Some(v) = views
            .iter()
            .find(|v| v.record.hosted.get(key).is_some_and(|p| p.uid == uid))
        {
            return Choice::Holding(v.record.name.clone());
        }
        let in_region: Vec<&View> = views
            .iter()
            .filter(|v| self.configured.contains(&v.record.name))
            .filter(|v| v.record.serves(region))
            .collect();
        let open: Vec<&View> = in_region
            .iter()
            .copied()
            .filter(|v| v.record.cordoned.is_none())
            .collect();
        let best = open.iter().filter(|v| v.free() != Some(0)).max_by_key(|v| {
            (
                v.free().map_or(u64::MAX, u64::from),
                std::cmp::Reverse(v.record.name.clone()),
            )
        });
        match best {
            Some(best) => Choice::Best(best),
            None => Choice::None { open, in_region },
        }
    }

    /// Cordons (`Some`) or uncordons (`None`) management cluster `name`.
    pub async fn set_cordon(&self, name: &str, cordon: Option<Cordon>) -> Result<View, Error> {
        for _ in 0..TRIES {
            let mut view = self
                .get(name)
                .await?
                .ok_or_else(|| Error::NotFound(name.to_owned()))?;
            view.record.cordoned = cordon.clone();
            if let Some(revision) = self.put(&view).await? {
                view.revision = revision;
                return Ok(view);
            }
        }
        Err(Error::Contended {
            name: name.to_owned(),
            tries: TRIES,
        })
    }

    async fn all(&self) -> Result<Vec<View>, Error> {
        use futures::StreamExt;
        let keys: Vec<String> = self
            .records
            .keys()
            .await
            .map_err(store)?
            .filter_map(|k| async { k.ok() })
            .collect()
            .await;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(v) = self.get(&key).await? {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// Writes `view` over its revision; `None` when another write came first.
    async fn put(&self, view: &View) -> Result<Option<u64>, Error> {
        match self
            .records
            .update(
                &view.record.name,
                encode(&view.record)?.into(),
                view.revision,
            )
            .await
        {
            Ok(revision) => Ok(Some(revision)),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
            Err(e) => Err(store(e)),
        }
    }

    /// Drops, from each of `views`, placements whose cluster is deleted, was made again under
    /// another uid, or never got its record. Answers whether any was dropped.
    async fn reclaim(&self, views: &[&View]) -> Result<bool, Error> {
        let now = OffsetDateTime::now_utc();
        let mut any = false;
        for view in views {
            let gone = self.gone(&view.record.hosted, now).await?;
            if gone.is_empty() {
                continue;
            }
            let mut kept = (*view).clone();
            kept.record.hosted.retain(|k, _| !gone.contains(k));
            if self.put(&kept).await?.is_some() {
                info!(management_cluster = %kept.record.name, reclaimed = gone.len(), "placements of deleted clusters given back");
            }
            any = true;
        }
        Ok(any)
    }

    /// The placements of `hosted` whose cluster no longer needs them.
    async fn gone(
        &self,
        hosted: &BTreeMap<String, Placed>,
        now: OffsetDateTime,
    ) -> Result<Vec<String>, Error> {
        let mut gone = Vec::new();
        for (key, placed) in hosted {
            let record = match self.clusters.entry(key).await {
                Ok(Some(e)) if e.operation == kv::Operation::Put => {
                    serde_json::from_slice::<ClusterRecord>(&e.value).ok()
                }
                Ok(_) => None,
                Err(e) => {
                    warn!(cluster = %key, error = %e, "cannot read a placed cluster; its placement is kept");
                    continue;
                }
            };
            let needed = match record {
                Some(r) => r.uid == placed.uid && r.phase != ClusterPhase::Deleted,
                None => now - placed.at < ABANDONED_AFTER,
            };
            if !needed {
                gone.push(key.clone());
            }
        }
        Ok(gone)
    }
}

fn encode(record: &ManagementRecord) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(record).map_err(|e| Error::Decode {
        key: record.name.clone(),
        message: e.to_string(),
    })
}

/// Why nothing in `region` can take a cluster, naming each candidate.
/// Where a cluster would go.
enum Choice<'a> {
    /// The management cluster already holding it.
    Holding(String),
    /// The open one with the most room.
    Best(&'a View),
    /// None has room: the open ones and all of the region's, to say so.
    None {
        open: Vec<&'a View>,
        in_region: Vec<&'a View>,
    },
}

fn no_room(region: &str, in_region: &[&View]) -> String {
    if in_region.is_empty() {
        return format!("no management cluster serves region {region}");
    }
    let each: Vec<String> = in_region
        .iter()
        .map(|v| {
            let r = &v.record;
            match &r.cordoned {
                Some(c) => format!("{} cordoned ({})", r.name, c.reason),
                None => format!("{} full ({}/{})", r.name, v.hosted(), r.capacity),
            }
        })
        .collect();
    format!(
        "no management cluster in region {region} has room for another hosted control plane: {}",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &str, capacity: u32, hosted: usize, cordoned: bool) -> View {
        let mut record = ManagementRecord::new(name, "eastus", capacity);
        for i in 0..hosted {
            record.hosted.insert(
                format!("t.c{i}"),
                Placed {
                    uid: format!("u{i}"),
                    at: OffsetDateTime::now_utc(),
                },
            );
        }
        if cordoned {
            record.cordoned = Some(Cordon {
                reason: "maintenance".into(),
                by: "admin:dev".into(),
                at: OffsetDateTime::now_utc(),
            });
        }
        View {
            record,
            revision: 1,
        }
    }

    #[test]
    fn a_refusal_names_the_region_and_each_candidate() {
        let (a, b) = (view("mc-a", 3, 3, false), view("mc-b", 3, 1, true));
        let said = no_room("eastus", &[&a, &b]);
        assert!(said.contains("region eastus"), "{said}");
        assert!(said.contains("mc-a full (3/3)"), "{said}");
        assert!(said.contains("mc-b cordoned (maintenance)"), "{said}");
        assert_eq!(
            no_room("westus", &[]),
            "no management cluster serves region westus"
        );
        assert_eq!(a.free(), Some(0));
        assert_eq!(view("d", 0, 5, false).free(), None);
    }
}
