//! Day 2: changes to a living cluster (an upgrade of its control plane; a node pool created,
//! changed or deleted), each accepted as one operation with one compare-and-set of the
//! cluster record, as a create or a delete is.
//!
//! Every rule is checked before anything is written, and answered as Google's API
//! Improvement Proposals say: bad input `INVALID_ARGUMENT` with field paths; another operation
//! running, or a cluster not ready, `FAILED_PRECONDITION` naming it; a stale `etag`
//! `ABORTED`. The record's spec then says what the cluster is to be, and the coordinator
//! plans the operation from it (`hypersaga_saga::kinds`).

use std::collections::HashMap;

use async_nats::jetstream::kv;
use hypersaga_api::v1 as pb;
use hypersaga_bus::subjects::cluster_key;
use hypersaga_config::TenantConfig;
use hypersaga_model::record::{ClusterPhase, ClusterRecord, OperationKind};
use hypersaga_model::validate::{self, FieldViolation};
use hypersaga_model::version::{
    check_control_plane_move, check_pool_move, check_pool_skew, check_pools_after_upgrade,
};
use hypersaga_model::{ClusterSpec, NodePoolSpec, ReleaseVersion};
use time::OffsetDateTime;
use tonic::Status;
use tonic_types::{ErrorDetails, StatusExt};
use tracing::info;

use super::limits::Checks;
use super::operator::ERROR_DOMAIN;
use super::{Gateway, fits_a_record, intent, internal, new_operation_id, not_found};
use crate::convert::{node_pool_to_pb, pool_etag, pool_from_pb};

/// What `UpdateCluster` may change.
const CLUSTER_MUTABLE: [&str; 1] = ["spec.release_image"];
/// What `UpdateNodePool` may change.
const POOL_MUTABLE: [&str; 6] = [
    "spec.replicas",
    "spec.autoscaling",
    "spec.release_image",
    "spec.labels",
    "spec.taints",
    "spec.node_drain_timeout_minutes",
];

/// The etag a request was made against, when it sent one.
pub(super) enum Etag {
    Cluster(String),
    Pool { name: String, etag: String },
}

/// A day-2 request, ready to be accepted.
pub(super) struct Change<'a> {
    pub cluster: &'a str,
    pub kind: OperationKind,
    pub node_pool: Option<String>,
    pub addon: Option<String>,
    pub request_id: Option<String>,
    pub etag: Option<Etag>,
    pub trace_id: String,
    /// Plan only: answer what the change would do, write nothing.
    pub validate_only: bool,
    /// The cluster's spec with the request applied, or why it cannot be: a function of the
    /// record, so a retry computes the same spec and a concurrent change is judged again.
    pub apply: &'a (dyn Fn(&ClusterRecord) -> Result<ClusterSpec, Status> + Send + Sync),
}

/// What the request of `change` calls the spec's `field` (a plan's findings name the cluster's
/// spec): a node pool's fields are under `node_pool` (`node_pool.spec` in an update), the
/// cluster's under `cluster.spec`. `None`: the same.
fn request_field(change: &Change<'_>, field: &str) -> Option<String> {
    let pool_field = || {
        let pool = change.node_pool.as_deref()?;
        field.strip_prefix(&format!("spec.node_pools.{pool}."))
    };
    match change.kind {
        OperationKind::CreateNodePool => pool_field().map(|rest| format!("node_pool.{rest}")),
        OperationKind::UpdateNodePool => pool_field().map(|rest| format!("node_pool.spec.{rest}")),
        OperationKind::UpdateCluster => field
            .strip_prefix("spec.")
            .map(|rest| format!("cluster.spec.{rest}")),
        _ => None,
    }
}

impl Gateway {
    /// Accepts `change`: one compare-and-set of the cluster record naming the new operation
    /// and the spec it leads to, then the coordinator's wake-up. A retry with the same
    /// `request_id` answers the same operation.
    pub(super) async fn accept_change(
        &self,
        tenant: &TenantConfig,
        change: Change<'_>,
    ) -> Result<pb::Operation, Status> {
        let mut within_quota = false;
        for _ in 0..8 {
            let Some((mut rec, revision)) = self.load_cluster(&tenant.id, change.cluster).await?
            else {
                return Err(not_found(change.cluster));
            };
            if rec.phase == ClusterPhase::Deleted {
                return Err(not_found(change.cluster));
            }
            // A dry run plans the change as asked, whatever ran under its request id.
            if !change.validate_only
                && let Some(retry) = self.retried(tenant, &rec, &change).await?
            {
                return Ok(retry);
            }
            if !rec.operation.state.is_terminal() {
                return Err(running(&rec));
            }
            if rec.phase != ClusterPhase::Ready {
                return Err(not_ready(&rec));
            }
            check_etag(&rec, revision, change.etag.as_ref())?;
            let mut spec = (change.apply)(&rec)?;
            spec.pin_pool_releases();
            fits_a_record(&spec)?;
            if !within_quota {
                self.check_quotas(tenant, false).await?;
                within_quota = true;
            }
            // The preflight, as a create's: the services plan the change with the code its
            // steps run; a dry run stops here with the plan.
            let mut planned = self.plan_change(&rec, &spec, &change).await?;
            planned.rename_fields(|field| request_field(&change, field));
            if change.validate_only {
                return Ok(pb::Operation {
                    cluster: change.cluster.to_owned(),
                    kind: crate::convert::kind_to_pb(change.kind) as i32,
                    node_pool: change.node_pool.clone().unwrap_or_default(),
                    addon: change.addon.clone().unwrap_or_default(),
                    plan: Some(planned.to_pb(&rec.infra_id, &rec.management_cluster)),
                    ..Default::default()
                });
            }
            if let Some(refused) = planned.refusal() {
                return Err(refused);
            }
            let op_id = new_operation_id();
            let now = OffsetDateTime::now_utc();
            let previous = Some(rec.operation.id.clone());
            rec.intent = Some(intent(tenant, &op_id, previous, change.trace_id.clone()));
            rec.operation = self.new_operation(
                &op_id,
                change.cluster,
                change.kind,
                change.request_id.clone(),
                now,
            );
            rec.operation.node_pool = change.node_pool.clone();
            rec.operation.addon = change.addon.clone();
            rec.spec = spec;
            rec.phase = ClusterPhase::Updating;
            rec.message = "updating".into();
            rec.error = None;
            rec.saga_seq = 0;
            let bytes = serde_json::to_vec(&rec).map_err(internal("encode cluster"))?;
            match self
                .clusters
                .update(
                    cluster_key(&tenant.id, change.cluster),
                    bytes.into(),
                    revision,
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
                Err(e) => return Err(internal("write cluster")(e)),
            }
            self.wake(&rec).await?;
            tracing::Span::current().record("operation", op_id.as_str());
            info!(kind = change.kind.as_str(), node_pool = ?change.node_pool, addon = ?change.addon, "change accepted");
            return Ok(crate::convert::operation_to_pb(&rec.operation));
        }
        Err(Status::aborted("the cluster kept changing; retry"))
    }

    /// The answer to a retry of the operation the record names (same `request_id`, same kind
    /// and pool): that operation, if the request is the same one — it leads to the spec the
    /// record already has. A request id reused for another request is refused on it.
    async fn retried(
        &self,
        tenant: &TenantConfig,
        rec: &ClusterRecord,
        change: &Change<'_>,
    ) -> Result<Option<pb::Operation>, Status> {
        let op = &rec.operation;
        let same_id = change.request_id.is_some() && op.request_id == change.request_id;
        if !same_id {
            return Ok(None);
        }
        let same_call =
            op.kind == change.kind && op.node_pool == change.node_pool && op.addon == change.addon;
        let same_spec = same_call
            && (change.apply)(rec).is_ok_and(|mut spec| {
                spec.pin_pool_releases();
                spec == rec.spec
            });
        if !same_spec {
            let mut checks = Checks::new();
            checks.push(
                "request_id",
                format!(
                    "was used for another request ({} {}); send the same request to retry it, or a new request_id for a new request",
                    op.kind.as_str(),
                    op.id
                ),
            );
            checks.done()?;
        }
        self.accepted(tenant, rec).await.map(Some)
    }
}

/// Another operation runs on the cluster: one mutating operation at a time.
fn running(rec: &ClusterRecord) -> Status {
    let op = &rec.operation;
    Status::with_error_details(
        tonic::Code::FailedPrecondition,
        format!(
            "cluster {:?} is busy with {} operation {} ({:?}); wait for it to end (a delete supersedes it)",
            rec.name,
            op.kind.as_str(),
            op.id,
            op.state
        ),
        ErrorDetails::with_error_info(
            "OperationRunning",
            ERROR_DOMAIN,
            HashMap::from([
                ("operation".to_owned(), op.id.clone()),
                ("kind".to_owned(), op.kind.as_str().to_owned()),
            ]),
        ),
    )
}

/// A cluster that is not ready (still being made, failed, being deleted) takes no change but
/// a delete.
fn not_ready(rec: &ClusterRecord) -> Status {
    Status::with_error_details(
        tonic::Code::FailedPrecondition,
        format!(
            "cluster {:?} is {:?}, not ready: only a ready cluster can be changed",
            rec.name, rec.phase
        ),
        ErrorDetails::with_error_info(
            "ClusterNotReady",
            ERROR_DOMAIN,
            HashMap::from([("phase".to_owned(), format!("{:?}", rec.phase))]),
        ),
    )
}

/// `ABORTED` when the caller's etag is not the resource's current one (AIP-154).
fn check_etag(rec: &ClusterRecord, revision: u64, etag: Option<&Etag>) -> Result<(), Status> {
    let (sent, current, what) = match etag {
        None => return Ok(()),
        Some(Etag::Cluster(sent)) => (sent, format!("\"{revision}\""), "cluster"),
        Some(Etag::Pool { name, etag }) => {
            let pool = rec
                .spec
                .pool(name)
                .ok_or_else(|| pool_not_found(rec, name))?;
            (etag, pool_etag(pool), "node pool")
        }
    };
    if sent.is_empty() || *sent == current {
        return Ok(());
    }
    let sent: String = sent.chars().take(64).collect();
    Err(Status::aborted(format!(
        "etag {sent} is stale: the {what} has changed since (now {current}); read it again and retry"
    )))
}

fn pool_not_found(rec: &ClusterRecord, name: &str) -> Status {
    Status::not_found(format!(
        "node pool {} not found in cluster {:?}",
        validate::clip(name),
        rec.name
    ))
}

/// The version a spec's release states; a record from before versions were checked may hold
/// an image without one, which no version rule can be judged against.
fn version_at(v: &mut Vec<FieldViolation>, field: &str, image: &str) -> Option<ReleaseVersion> {
    validate::release_version(v, field, image)
}

/// Refuses `v`, if any, as `INVALID_ARGUMENT`.
fn refuse_violations(v: Vec<FieldViolation>) -> Result<(), Status> {
    let mut checks = Checks::new();
    checks.extend(v);
    checks.done()
}

/// The mask's paths, each known; at least one. `fixed` are paths that exist but cannot be
/// changed here, each with why.
fn mask_paths(
    mask: Option<prost_types::FieldMask>,
    mutable: &[&str],
    fixed: &[(&str, &str)],
) -> Result<Vec<String>, Status> {
    let paths = mask.map(|m| m.paths).unwrap_or_default();
    let mut checks = Checks::new();
    if paths.is_empty() {
        checks.push(
            "update_mask",
            format!("name the fields to change, among {}", mutable.join(", ")),
        );
    }
    for p in &paths {
        if mutable.contains(&p.as_str()) {
            continue;
        }
        let why = if let Some((_, why)) = fixed.iter().find(|(f, _)| f == p) {
            format!("{} {why}", validate::clip(p))
        } else {
            format!(
                "{} is not a field that can be changed; these can: {}",
                validate::clip(p),
                mutable.join(", ")
            )
        };
        checks.push("update_mask", why);
    }
    checks.done()?;
    Ok(paths)
}

/// `UpdateCluster`: today, a new release for the control plane.
pub(super) fn upgraded_spec(rec: &ClusterRecord, new_image: &str) -> Result<ClusterSpec, Status> {
    let mut v = Vec::new();
    validate::check_release_image(&mut v, "cluster.spec.release_image", new_image);
    refuse_violations(std::mem::take(&mut v))?;
    let mut spec = rec.spec.clone();
    spec.pin_pool_releases();
    let (Some(from), Some(to)) = (
        version_at(
            &mut v,
            "cluster.spec.release_image",
            &rec.spec.release_image,
        ),
        version_at(&mut v, "cluster.spec.release_image", new_image),
    ) else {
        return refuse_violations(v).map(|()| spec);
    };
    if let Err(e) = check_control_plane_move(&from, &to) {
        v.push(FieldViolation::new(
            "cluster.spec.release_image",
            e.to_string(),
        ));
    }
    let pools: Vec<(String, ReleaseVersion)> = spec
        .node_pools
        .iter()
        .filter_map(|p| {
            Some((
                p.name.clone(),
                ReleaseVersion::of_image(&p.release_image).ok()?,
            ))
        })
        .collect();
    for e in check_pools_after_upgrade(&to, pools.iter().map(|(n, v)| (n.as_str(), v))) {
        v.push(FieldViolation::new(
            "cluster.spec.release_image",
            e.to_string(),
        ));
    }
    refuse_violations(v)?;
    spec.release_image = new_image.to_owned();
    Ok(spec)
}

/// `CreateNodePool`: the spec with `pool` added (its release defaulting to the control
/// plane's). A retry of the same create finds it there, the same, and changes nothing.
pub(super) fn with_new_pool(
    rec: &ClusterRecord,
    pool: &NodePoolSpec,
) -> Result<ClusterSpec, Status> {
    let mut pool = pool.clone();
    if pool.release_image.is_empty() {
        pool.release_image.clone_from(&rec.spec.release_image);
    }
    let mut spec = rec.spec.clone();
    spec.pin_pool_releases();
    if let Some(existing) = spec.pool(&pool.name) {
        if *existing == pool {
            return Ok(spec);
        }
        return Err(Status::already_exists(format!(
            "node pool {:?} already exists in cluster {:?}; update it, or choose another name",
            pool.name, rec.name
        )));
    }
    let mut v = Vec::new();
    validate::check_node_pool(&mut v, "node_pool", &pool);
    if spec.node_pools.len() >= validate::MAX_NODE_POOLS {
        v.push(FieldViolation::new(
            "node_pool",
            format!(
                "cluster {:?} has {} node pools, the most a cluster may have",
                rec.name,
                spec.node_pools.len()
            ),
        ));
    }
    check_subnet_in_vnet(&mut v, rec, &pool);
    if let (Some(cp), Some(pv)) = (
        ReleaseVersion::of_image(&rec.spec.release_image).ok(),
        ReleaseVersion::of_image(&pool.release_image).ok(),
    ) && let Err(e) = check_pool_skew(&cp, &pv)
    {
        v.push(FieldViolation::new(
            "node_pool.release_image",
            e.to_string(),
        ));
    }
    spec.node_pools.push(pool);
    validate::check_cluster_nodes(&mut v, "node_pool", spec.node_pools.iter());
    refuse_violations(v)?;
    Ok(spec)
}

/// A pool's own subnet must be one of the cluster's VNet (HyperShift: "must be in the
/// HostedCluster's VNet").
fn check_subnet_in_vnet(v: &mut Vec<FieldViolation>, rec: &ClusterRecord, pool: &NodePoolSpec) {
    let Some(subnet) = &pool.subnet_id else {
        return;
    };
    let vnet = rec
        .resources
        .get("vnet")
        .or(rec.spec.network.vnet_id.as_ref());
    let inside = vnet.is_some_and(|vnet| {
        subnet
            .to_ascii_lowercase()
            .starts_with(&format!("{}/subnets/", vnet.to_ascii_lowercase()))
    });
    if !inside {
        v.push(FieldViolation::new(
            "node_pool.subnet_id",
            format!(
                "{} is not a subnet of the cluster's VNet {}",
                validate::clip(subnet),
                vnet.map_or_else(|| "(not made yet)".to_owned(), |v| validate::clip(v))
            ),
        ));
    }
}

/// `UpdateNodePool`: the spec with the masked fields of pool `name` replaced by `update`'s.
pub(super) fn with_pool_updated(
    rec: &ClusterRecord,
    name: &str,
    update: &pb::NodePoolSpec,
    paths: &[String],
) -> Result<ClusterSpec, Status> {
    let mut spec = rec.spec.clone();
    spec.pin_pool_releases();
    let old = spec
        .pool(name)
        .ok_or_else(|| pool_not_found(rec, name))?
        .clone();
    let mut v = Vec::new();
    let given = pool_from_pb(update.clone(), "node_pool.spec", &mut v);
    let mut new = old.clone();
    let has = |p: &str| paths.iter().any(|x| x == p);
    if has("spec.replicas") {
        new.replicas = given.replicas;
        new.autoscaling = None;
    }
    if has("spec.autoscaling") {
        new.autoscaling = given.autoscaling;
        if new.autoscaling.is_some() {
            new.replicas = 0;
        } else if !has("spec.replicas") {
            v.push(FieldViolation::new(
                "node_pool.spec.replicas",
                "set replicas (and name it in update_mask) when autoscaling is removed",
            ));
        }
    }
    if has("spec.release_image") {
        new.release_image = if given.release_image.is_empty() {
            rec.spec.release_image.clone()
        } else {
            given.release_image.clone()
        };
    }
    if has("spec.labels") {
        new.labels = given.labels.clone();
    }
    if has("spec.taints") {
        new.taints = given.taints.clone();
    }
    if has("spec.node_drain_timeout_minutes") {
        new.node_drain_timeout_minutes = given.node_drain_timeout_minutes;
    }
    validate::check_pool_update(&mut v, "node_pool.spec", &old, &new);
    if new.release_image != old.release_image
        && let (Some(cp), Some(from), Some(to)) = (
            ReleaseVersion::of_image(&rec.spec.release_image).ok(),
            ReleaseVersion::of_image(&old.release_image).ok(),
            ReleaseVersion::of_image(&new.release_image).ok(),
        )
        && let Err(e) = check_pool_move(&cp, &from, &to)
    {
        v.push(FieldViolation::new(
            "node_pool.spec.release_image",
            e.to_string(),
        ));
    }
    if let Some(slot) = spec.node_pools.iter_mut().find(|p| p.name == name) {
        *slot = new;
    }
    validate::check_cluster_nodes(&mut v, "node_pool.spec", spec.node_pools.iter());
    refuse_violations(v)?;
    Ok(spec)
}

/// `DeleteNodePool`: the spec as it is (the pool leaves it once its deletion has finished).
pub(super) fn with_pool_deleted(rec: &ClusterRecord, name: &str) -> Result<ClusterSpec, Status> {
    rec.spec
        .pool(name)
        .ok_or_else(|| pool_not_found(rec, name))?;
    let mut spec = rec.spec.clone();
    spec.pin_pool_releases();
    Ok(spec)
}

/// The paths `UpdateCluster` accepts, checked.
pub(super) fn cluster_mask(mask: Option<prost_types::FieldMask>) -> Result<Vec<String>, Status> {
    const FIXED: &str = "cannot change once the cluster exists";
    mask_paths(
        mask,
        &CLUSTER_MUTABLE,
        &[
            ("name", FIXED),
            ("spec.location", FIXED),
            ("spec.base_domain", FIXED),
            ("spec.network", FIXED),
            (
                "spec.node_pools",
                "are changed with CreateNodePool, UpdateNodePool and DeleteNodePool",
            ),
        ],
    )
}

/// The paths `UpdateNodePool` accepts, checked.
pub(super) fn pool_mask(mask: Option<prost_types::FieldMask>) -> Result<Vec<String>, Status> {
    const FIXED: &str = "cannot change once the pool exists: create a new pool instead";
    mask_paths(
        mask,
        &POOL_MUTABLE,
        &[
            ("spec.name", FIXED),
            ("spec.vm_size", FIXED),
            ("spec.os_disk", FIXED),
            ("spec.availability_zone", FIXED),
            ("spec.subnet_id", FIXED),
            ("spec.upgrade_type", FIXED),
        ],
    )
}

/// A pool of `rec`, as users see it.
pub(super) fn node_pool_of(rec: &ClusterRecord, name: &str) -> Result<pb::NodePool, Status> {
    let pool = rec
        .spec
        .pool(name)
        .ok_or_else(|| pool_not_found(rec, name))?;
    Ok(node_pool_to_pb(rec, pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypersaga_model::NodePoolSpec;

    #[test]
    fn a_day_two_calls_findings_name_the_requests_fields() {
        let apply = |_: &ClusterRecord| Err(Status::internal("not applied here"));
        let change = |kind, node_pool: Option<&str>| Change {
            cluster: "demo",
            kind,
            node_pool: node_pool.map(str::to_owned),
            addon: None,
            request_id: None,
            etag: None,
            trace_id: String::new(),
            validate_only: true,
            apply: &apply,
        };
        let create = change(OperationKind::CreateNodePool, Some("gpu"));
        assert_eq!(
            request_field(&create, "spec.node_pools.gpu.replicas").as_deref(),
            Some("node_pool.replicas")
        );
        assert_eq!(
            request_field(&create, "spec.node_pools.workers.replicas"),
            None
        );
        let scale = change(OperationKind::UpdateNodePool, Some("gpu"));
        assert_eq!(
            request_field(&scale, "spec.node_pools.gpu.replicas").as_deref(),
            Some("node_pool.spec.replicas")
        );
        let upgrade = change(OperationKind::UpdateCluster, None);
        assert_eq!(
            request_field(&upgrade, "spec.release_image").as_deref(),
            Some("cluster.spec.release_image")
        );
        assert_eq!(
            request_field(&upgrade, "/subscriptions/s/resourceGroups/dns"),
            None
        );
    }

    fn record(release: &str, pools: &[(&str, &str)]) -> ClusterRecord {
        let json = serde_json::json!({
            "v": 1, "tenant": "acme", "name": "demo", "uid": "u", "infra_id": "demo-x",
            "spec": {"location": "eastus", "base_domain": "example.com", "release_image": release},
            "created_at": "2026-11-01T00:00:00Z", "phase": "ready",
            "operation": {"id": "op-1", "cluster": "demo", "kind": "create", "state": "succeeded",
                "started_at": "2026-11-01T00:00:00Z", "deadline": "2026-11-01T01:00:00Z", "steps": []},
        });
        let mut rec: ClusterRecord = serde_json::from_value(json).unwrap();
        for (name, image) in pools {
            let mut p = NodePoolSpec::new(*name, 2, "Standard_D4s_v5");
            p.release_image = (*image).to_owned();
            rec.spec.node_pools.push(p);
        }
        rec
    }

    const R: &str = "quay.io/openshift-release-dev/ocp-release:";

    fn fields(s: &Status) -> String {
        s.message().to_owned()
    }

    #[test]
    fn the_control_plane_moves_one_minor_and_never_leaves_a_pool_four_behind() {
        let rec = record(
            &format!("{R}4.21.3-multi"),
            &[("workers", &format!("{R}4.21.3-multi"))],
        );
        let spec = upgraded_spec(&rec, &format!("{R}4.22.0-multi")).unwrap();
        assert_eq!(spec.release_image, format!("{R}4.22.0-multi"));
        assert_eq!(
            spec.node_pools[0].release_image,
            format!("{R}4.21.3-multi"),
            "pools stay"
        );
        let skip = upgraded_spec(&rec, &format!("{R}4.23.0-multi")).unwrap_err();
        assert!(
            fields(&skip).contains("cluster.spec.release_image"),
            "{skip:?}"
        );
        assert!(
            fields(&skip).contains("4.21.3") && fields(&skip).contains("4.23.0"),
            "{skip:?}"
        );
        let down = upgraded_spec(&rec, &format!("{R}4.21.2-multi")).unwrap_err();
        assert!(fields(&down).contains("downgrade"), "{down:?}");
        let old = record(&format!("{R}4.21.0"), &[("legacy", &format!("{R}4.18.0"))]);
        let behind = upgraded_spec(&old, &format!("{R}4.22.0")).unwrap_err();
        assert!(
            fields(&behind).contains("node pool legacy on 4.18.0"),
            "{behind:?}"
        );
    }

    #[test]
    fn a_new_pool_takes_the_control_planes_release_and_is_never_newer() {
        let rec = record(&format!("{R}4.21.0"), &[]);
        let spec = with_new_pool(&rec, &NodePoolSpec::new("gpu", 3, "Standard_D8s_v5")).unwrap();
        assert_eq!(spec.node_pools[0].release_image, format!("{R}4.21.0"));
        let mut newer = NodePoolSpec::new("gpu", 3, "Standard_D8s_v5");
        newer.release_image = format!("{R}4.22.0");
        let refused = with_new_pool(&rec, &newer).unwrap_err();
        assert!(
            fields(&refused).contains("node_pool.release_image"),
            "{refused:?}"
        );
        assert!(
            fields(&refused).contains("newer than the control plane"),
            "{refused:?}"
        );
        // The same create again is no change; another pool of that name is.
        let rec2 = ClusterRecord { spec, ..rec };
        assert!(with_new_pool(&rec2, &NodePoolSpec::new("gpu", 3, "Standard_D8s_v5")).is_ok());
        let other = with_new_pool(&rec2, &NodePoolSpec::new("gpu", 4, "Standard_D8s_v5"));
        assert_eq!(other.unwrap_err().code(), tonic::Code::AlreadyExists);
    }

    #[test]
    fn an_update_changes_only_masked_mutable_fields() {
        let rec = record(&format!("{R}4.22.0"), &[("workers", &format!("{R}4.21.0"))]);
        let update = pb::NodePoolSpec {
            replicas: Some(5),
            vm_size: "Standard_D16s_v5".into(),
            ..Default::default()
        };
        let spec = with_pool_updated(&rec, "workers", &update, &["spec.replicas".into()]).unwrap();
        assert_eq!(spec.node_pools[0].replicas, 5);
        assert_eq!(
            spec.node_pools[0].vm_size, "Standard_D4s_v5",
            "not in the mask"
        );
        let refused = pool_mask(Some(prost_types::FieldMask {
            paths: vec!["spec.vm_size".into()],
        }))
        .unwrap_err();
        assert!(
            fields(&refused).contains("cannot change once the pool exists"),
            "{refused:?}"
        );
        let auto = pb::NodePoolSpec {
            autoscaling: Some(pb::Autoscaling { min: 2, max: 4 }),
            ..Default::default()
        };
        let spec = with_pool_updated(&rec, "workers", &auto, &["spec.autoscaling".into()]).unwrap();
        assert_eq!(spec.node_pools[0].replicas, 0);
        assert_eq!(spec.node_pools[0].max_nodes(), 4);
        let both = pb::NodePoolSpec {
            replicas: Some(3),
            autoscaling: Some(pb::Autoscaling { min: 2, max: 4 }),
            ..Default::default()
        };
        let paths = ["spec.replicas".to_owned(), "spec.autoscaling".to_owned()];
        let refused = with_pool_updated(&rec, "workers", &both, &paths).unwrap_err();
        assert!(
            fields(&refused).contains("node_pool.spec.replicas"),
            "{refused:?}"
        );
    }

    #[test]
    fn a_pool_upgrade_is_never_newer_than_the_control_plane_nor_a_minor_down() {
        let rec = record(&format!("{R}4.22.0"), &[("workers", &format!("{R}4.21.0"))]);
        let upgrade = |image: &str| {
            let u = pb::NodePoolSpec {
                release_image: image.to_owned(),
                ..Default::default()
            };
            with_pool_updated(&rec, "workers", &u, &["spec.release_image".into()])
        };
        assert!(upgrade(&format!("{R}4.22.0")).is_ok());
        let newer = upgrade(&format!("{R}4.23.0")).unwrap_err();
        assert!(
            fields(&newer).contains("newer than the control plane's 4.22.0"),
            "{newer:?}"
        );
        let down = upgrade(&format!("{R}4.20.0")).unwrap_err();
        assert!(fields(&down).contains("minor cannot go down"), "{down:?}");
    }

    #[test]
    fn a_pools_state_says_what_its_last_operation_did_to_it() {
        let state =
            |rec: &ClusterRecord| node_pool_of(rec, "workers").unwrap().status.unwrap().state;
        let mut rec = record(&format!("{R}4.22.0"), &[("workers", &format!("{R}4.22.0"))]);
        assert_eq!(
            state(&rec),
            "Pending",
            "nothing made of it, nothing running"
        );
        rec.owned
            .insert("nodepool.workers".into(), Default::default());
        assert_eq!(state(&rec), "Ready");
        rec.operation.kind = OperationKind::UpdateNodePool;
        rec.operation.node_pool = Some("workers".into());
        rec.operation.state = hypersaga_model::record::OperationState::Running;
        assert_eq!(state(&rec), "Updating");
        rec.operation.state = hypersaga_model::record::OperationState::Failed;
        assert_eq!(state(&rec), "Failed");
        rec.operation.kind = OperationKind::Delete;
        rec.operation.node_pool = None;
        rec.operation.state = hypersaga_model::record::OperationState::Running;
        rec.operation.steps = serde_json::from_value(serde_json::json!([{
            "id": "nodepool.workers", "service": "nodepool", "state": "compensated", "attempts": 1
        }]))
        .unwrap();
        assert_eq!(state(&rec), "Deleting");
        rec.operation.state = hypersaga_model::record::OperationState::Succeeded;
        rec.owned.clear();
        assert_eq!(state(&rec), "Deleted");
    }

    #[test]
    fn a_stale_etag_is_aborted() {
        let rec = record(&format!("{R}4.22.0"), &[("workers", &format!("{R}4.22.0"))]);
        assert!(check_etag(&rec, 7, Some(&Etag::Cluster("\"7\"".into()))).is_ok());
        let stale = check_etag(&rec, 8, Some(&Etag::Cluster("\"7\"".into()))).unwrap_err();
        assert_eq!(stale.code(), tonic::Code::Aborted);
        let pool = node_pool_of(&rec, "workers").unwrap();
        let current = Etag::Pool {
            name: "workers".into(),
            etag: pool.etag.clone(),
        };
        assert!(check_etag(&rec, 8, Some(&current)).is_ok());
        let mut changed = rec.clone();
        changed.spec.node_pools[0].replicas = 3;
        assert_eq!(
            check_etag(&changed, 8, Some(&current)).unwrap_err().code(),
            tonic::Code::Aborted
        );
    }
}
