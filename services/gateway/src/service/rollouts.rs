//! Rollouts: a tenant's clusters chosen by labels, upgraded in waves (see `record` for the
//! rules and `driver` for who moves them). The calls here make, show, pause, resume and
//! cancel them; each change is one compare-and-set of the rollout's record.

mod driver;
mod record;

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::Stream;
use hypersaga_api::v1 as pb;
use hypersaga_config::TenantConfig;
use hypersaga_model::{ClusterPhase, ClusterRecord, TenantId};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tonic::Status;

pub use driver::run as drive;
use record::{
    Member, MemberState, ROLLOUT_RECORD_VERSION, RolloutRecord, RolloutState, Target, wave_of,
};

use super::limits::Checks;
use super::{Gateway, internal, tenant_kv};
use crate::convert::{error_to_pb, ts};

/// Most clusters one rollout takes: its record stays well within a KV value.
const MAX_MEMBERS: usize = 1000;

/// How often a watch looks at the rollout again.
const WATCH_EVERY: Duration = Duration::from_millis(500);

pub(super) type RolloutStream = Pin<Box<dyn Stream<Item = Result<pb::Rollout, Status>> + Send>>;

pub(super) async fn load_key(
    store: &kv::Store,
    key: &str,
) -> Result<Option<(RolloutRecord, u64)>, String> {
    match store.entry(key).await.map_err(|e| e.to_string())? {
        Some(e) if e.operation == kv::Operation::Put => serde_json::from_slice(&e.value)
            .map(|r| Some((r, e.revision)))
            .map_err(|e| format!("rollout {key} does not decode: {e}")),
        _ => Ok(None),
    }
}

pub(super) fn encode(r: &RolloutRecord) -> Result<Vec<u8>, String> {
    serde_json::to_vec(r).map_err(|e| e.to_string())
}

fn key_of(tenant: &TenantId, id: &str) -> String {
    format!("{tenant}.{id}")
}

/// A rollout's id: from the request id when there is one, so a retried create finds the
/// rollout the first made.
fn rollout_id(request_id: Option<&str>) -> String {
    match request_id {
        Some(r) => {
            let digest = Sha256::digest(r.as_bytes());
            format!("ro-{}", &hex_of(&digest)[..16])
        }
        None => format!("ro-{}", &uuid::Uuid::new_v4().simple().to_string()[..16]),
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Gateway {
    /// Cluster `name` of `tenant` as it stands.
    pub(super) async fn cluster_of(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<Option<ClusterRecord>, Status> {
        Ok(self.load_cluster(tenant, name).await?.map(|(rec, _)| rec))
    }

    /// Rollout `id` of `tenant`, NOT_FOUND if there is none.
    async fn rollout(
        &self,
        tenant: &TenantConfig,
        id: &str,
    ) -> Result<(RolloutRecord, u64), Status> {
        if !super::valid_key_part(id) {
            return Err(Status::not_found(format!("rollout {id:?} not found")));
        }
        load_key(&self.rollouts, &key_of(&tenant.id, id))
            .await
            .map_err(internal("read rollout"))?
            .ok_or_else(|| Status::not_found(format!("rollout {id:?} not found")))
    }

    pub(super) async fn create_rollout(
        &self,
        tenant: &TenantConfig,
        req: pb::CreateRolloutRequest,
    ) -> Result<pb::Rollout, Status> {
        let selector: BTreeMap<String, String> = req.selector.into_iter().collect();
        let image = req.release_image.trim().to_owned();
        let canary = if req.canary == 0 { 1 } else { req.canary };
        let max_parallel = if req.max_parallel == 0 {
            1
        } else {
            req.max_parallel
        };
        let mut checks = Checks::new();
        let mut v = Vec::new();
        hypersaga_model::validate::check_labels(&mut v, "selector", &selector);
        match (&req.addon, image.is_empty()) {
            (Some(_), false) => checks.push(
                "release_image",
                "a rollout moves either the release or an add-on: leave release_image empty with addon",
            ),
            (None, _) => {
                if selector.is_empty() {
                    checks.push(
                        "selector",
                        "at least one label: a release rollout never takes every cluster by accident",
                    );
                }
                hypersaga_model::validate::check_release_image(&mut v, "release_image", &image);
            }
            (Some(_), true) => {}
        }
        checks.extend(v);
        let addon = match &req.addon {
            Some(raw) => match self.resolve_addon(&tenant.id, "addon", raw).await? {
                Ok(addon) => Some(addon),
                Err(unresolved) => {
                    checks.extend(unresolved);
                    None
                }
            },
            None => None,
        };
        checks.request_id("request_id", req.request_id.trim());
        for (field, n) in [("canary", canary), ("max_parallel", max_parallel)] {
            if n as usize > MAX_MEMBERS {
                checks.push(field, format!("at most {MAX_MEMBERS}"));
            }
        }
        checks.done()?;
        let target = match &addon {
            Some(a) => Target::Addon(a),
            None => Target::Release(&image),
        };
        let request_id = Some(req.request_id.trim().to_owned()).filter(|r| !r.is_empty());
        let id = rollout_id(request_id.as_deref());
        if request_id.is_some()
            && let Ok((existing, _)) = self.rollout(tenant, &id).await
        {
            same_rollout(&existing, &selector, target, canary, max_parallel)?;
            return Ok(rollout_to_pb(&existing));
        }
        let members = self.members(tenant, &selector, target).await?;
        let now = OffsetDateTime::now_utc();
        let mut record = RolloutRecord {
            v: ROLLOUT_RECORD_VERSION,
            id: id.clone(),
            tenant: tenant.id.clone(),
            selector,
            release_image: image,
            canary,
            max_parallel,
            state: RolloutState::Running,
            message: String::new(),
            members: members
                .into_iter()
                .enumerate()
                .map(|(i, name)| Member {
                    name,
                    wave: wave_of(i, canary, max_parallel),
                    state: MemberState::Pending,
                    operation: None,
                    attempts: 0,
                    error: None,
                })
                .collect(),
            created_at: now,
            ended_at: None,
            created_by: format!("tenant:{}", tenant.id),
            request_id,
            error: None,
            addon: addon.clone(),
        };
        record.message = record.describe();
        let bytes = encode(&record).map_err(internal("encode rollout"))?;
        match self.rollouts.create(record.key(), bytes.into()).await {
            Ok(_) => Ok(rollout_to_pb(&record)),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                let (existing, _) = self.rollout(tenant, &id).await?;
                Ok(rollout_to_pb(&existing))
            }
            Err(e) => Err(internal("write rollout")(e)),
        }
    }

    /// The tenant's clusters the selector takes that `target` concerns, in name order;
    /// refused when none, or when one cannot go to it (each named with why).
    async fn members(
        &self,
        tenant: &TenantConfig,
        selector: &BTreeMap<String, String>,
        target: Target<'_>,
    ) -> Result<Vec<String>, Status> {
        let records = tenant_kv::read::<ClusterRecord>(
            &self.bus,
            &self.clusters,
            &tenant.id,
            "rollout members",
        )
        .await?;
        let chosen: Vec<&ClusterRecord> = records
            .values()
            .map(|r| &r.value)
            .filter(|r| r.phase != ClusterPhase::Deleted)
            .filter(|r| selector.iter().all(|(k, v)| r.labels.get(k) == Some(v)))
            .filter(|r| target.concerns(r))
            .collect();
        if chosen.is_empty() {
            return Err(Status::failed_precondition(match target {
                Target::Release(_) => "no cluster carries every label of the selector".to_owned(),
                Target::Addon(a) => format!(
                    "no cluster the selector takes carries add-on {} ({})",
                    a.name,
                    a.scope.as_str()
                ),
            }));
        }
        if chosen.len() > MAX_MEMBERS {
            return Err(Status::failed_precondition(format!(
                "the selector takes {} clusters; at most {MAX_MEMBERS} per rollout",
                chosen.len()
            )));
        }
        let mut checks = Checks::new();
        for rec in &chosen {
            if !matches!(rec.phase, ClusterPhase::Ready | ClusterPhase::Updating) {
                checks.push(
                    format!("clusters[{}]", rec.name),
                    format!("is {:?}: only a ready cluster can be changed (change the selector or its labels)", rec.phase),
                );
                continue;
            }
            if let Target::Release(image) = target
                && rec.spec.release_image != image
                && let Err(s) = super::day2::upgraded_spec(rec, image)
            {
                checks.push(format!("clusters[{}]", rec.name), s.message().to_owned());
            }
        }
        checks.done()?;
        Ok(chosen.iter().map(|r| r.name.clone()).collect())
    }

    pub(super) async fn get_rollout(
        &self,
        tenant: &TenantConfig,
        id: &str,
    ) -> Result<pb::Rollout, Status> {
        Ok(rollout_to_pb(&self.rollout(tenant, id).await?.0))
    }

    pub(super) async fn list_rollouts(
        &self,
        tenant: &TenantConfig,
    ) -> Result<Vec<pb::Rollout>, Status> {
        let records = tenant_kv::read::<RolloutRecord>(
            &self.bus,
            &self.rollouts,
            &tenant.id,
            "list rollouts",
        )
        .await?;
        let mut out: Vec<RolloutRecord> = records.into_values().map(|r| r.value).collect();
        out.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        Ok(out.iter().map(rollout_to_pb).collect())
    }

    /// Pauses, resumes or cancels rollout `id`: one compare-and-set, again on a lost race.
    pub(super) async fn steer_rollout(
        &self,
        tenant: &TenantConfig,
        id: &str,
        to: Steer,
    ) -> Result<pb::Rollout, Status> {
        for _ in 0..16 {
            let (mut r, revision) = self.rollout(tenant, id).await?;
            let now = OffsetDateTime::now_utc();
            match (to, r.state) {
                (Steer::Pause, RolloutState::Running) => r.state = RolloutState::Paused,
                (Steer::Resume, RolloutState::Paused) => r.state = RolloutState::Running,
                (Steer::Resume, RolloutState::Failed) => {
                    // Its failed clusters are started again; the others are as they were.
                    for m in r
                        .members
                        .iter_mut()
                        .filter(|m| m.state == MemberState::Failed)
                    {
                        m.state = MemberState::Pending;
                        m.error = None;
                    }
                    r.state = RolloutState::Running;
                    r.error = None;
                    r.ended_at = None;
                }
                (Steer::Cancel, s) if s.is_live() => {
                    r.state = RolloutState::Cancelled;
                    r.ended_at = Some(now);
                }
                (Steer::Pause, RolloutState::Paused)
                | (Steer::Resume, RolloutState::Running)
                | (Steer::Cancel, RolloutState::Cancelled) => return Ok(rollout_to_pb(&r)),
                (_, s) => {
                    return Err(Status::failed_precondition(format!(
                        "rollout {id} is {s:?}: it cannot be {}",
                        to.done()
                    )));
                }
            }
            r.message = r.describe();
            let bytes = encode(&r).map_err(internal("encode rollout"))?;
            match self.rollouts.update(r.key(), bytes.into(), revision).await {
                Ok(_) => return Ok(rollout_to_pb(&r)),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
                Err(e) => return Err(internal("write rollout")(e)),
            }
        }
        Err(Status::aborted("the rollout kept changing; retry"))
    }

    /// The rollout now, then at every change, until it ends (or the caller goes).
    pub(super) async fn watch_rollout(
        &self,
        tenant: &TenantConfig,
        id: &str,
    ) -> Result<RolloutStream, Status> {
        let (first, seen) = self.rollout(tenant, id).await?;
        let watch = Watch {
            gateway: self.clone(),
            tenant: tenant.clone(),
            id: id.to_owned(),
            seen,
            pending: Some(first),
            over: false,
        };
        Ok(Box::pin(futures::stream::unfold(
            watch,
            |mut w| async move {
                if w.over {
                    return None;
                }
                let item = match w.pending.take() {
                    Some(r) => Ok(r),
                    None => w.next().await,
                };
                w.over = item.as_ref().map_or(true, |r| !r.state.is_live());
                Some((item.map(|r| rollout_to_pb(&r)), w))
            },
        )))
    }
}

/// A watch of one rollout: the revision last sent.
struct Watch {
    gateway: Gateway,
    tenant: TenantConfig,
    id: String,
    seen: u64,
    pending: Option<RolloutRecord>,
    over: bool,
}

impl Watch {
    /// The rollout at its next change.
    async fn next(&mut self) -> Result<RolloutRecord, Status> {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let (r, revision) = self.gateway.rollout(&self.tenant, &self.id).await?;
            if revision != self.seen {
                self.seen = revision;
                return Ok(r);
            }
        }
    }
}

/// A create retried under the same request id must be the same request.
fn same_rollout(
    existing: &RolloutRecord,
    selector: &BTreeMap<String, String>,
    target: Target<'_>,
    canary: u32,
    max_parallel: u32,
) -> Result<(), Status> {
    let differs: Vec<&str> = [
        ("selector", existing.selector == *selector),
        ("target", existing.target() == target),
        ("canary", existing.canary == canary),
        ("max_parallel", existing.max_parallel == max_parallel),
    ]
    .into_iter()
    .filter(|(_, same)| !same)
    .map(|(field, _)| field)
    .collect();
    if differs.is_empty() {
        return Ok(());
    }
    let mut checks = Checks::new();
    checks.push(
        "request_id",
        format!(
            "was used for rollout {} with another {}; send the same request to retry it, or a new request_id",
            existing.id,
            differs.join(", ")
        ),
    );
    checks.done()
}

/// A change a user asks of a rollout.
#[derive(Clone, Copy, Debug)]
pub(super) enum Steer {
    Pause,
    Resume,
    Cancel,
}

impl Steer {
    fn done(self) -> &'static str {
        match self {
            Steer::Pause => "paused",
            Steer::Resume => "resumed",
            Steer::Cancel => "cancelled",
        }
    }
}

fn rollout_to_pb(r: &RolloutRecord) -> pb::Rollout {
    let state = match r.state {
        RolloutState::Running => pb::rollout::State::Running,
        RolloutState::Paused => pb::rollout::State::Paused,
        RolloutState::Succeeded => pb::rollout::State::Succeeded,
        RolloutState::Failed => pb::rollout::State::Failed,
        RolloutState::Cancelled => pb::rollout::State::Cancelled,
    };
    pb::Rollout {
        id: r.id.clone(),
        selector: r.selector.clone().into_iter().collect::<HashMap<_, _>>(),
        release_image: r.release_image.clone(),
        addon: r.addon.as_ref().map(crate::convert::addon_ref_to_pb),
        canary: r.canary,
        max_parallel: r.max_parallel,
        state: state as i32,
        message: r.message.clone(),
        clusters: r
            .members
            .iter()
            .map(|m| pb::RolloutCluster {
                name: m.name.clone(),
                wave: m.wave,
                state: match m.state {
                    MemberState::Pending => pb::rollout_cluster::State::Pending,
                    MemberState::Upgrading => pb::rollout_cluster::State::Upgrading,
                    MemberState::Succeeded => pb::rollout_cluster::State::Succeeded,
                    MemberState::Failed => pb::rollout_cluster::State::Failed,
                } as i32,
                operation: m.operation.clone().unwrap_or_default(),
                error: m.error.as_ref().map(error_to_pb),
            })
            .collect(),
        wave: r
            .current_wave()
            .unwrap_or_else(|| r.waves().saturating_sub(1)),
        waves: r.waves(),
        create_time: Some(ts(r.created_at)),
        end_time: r.ended_at.map(ts),
        created_by: r.created_by.clone(),
        error: r.error.as_ref().map(error_to_pb),
    }
}
