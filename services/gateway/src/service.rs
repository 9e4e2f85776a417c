//! `ClusterService` handlers.
//!
//! Accepting an operation is one write: the cluster record, naming the new operation (with
//! who asked and its trace id), by compare-and-set. Then a start wake-up goes to the
//! coordinator, which builds the operation's saga from the record; the gateway never writes a
//! saga. A lost wake-up is repaired by the coordinator's resync, or at once by a retried
//! request.

mod addons;
mod admin;
mod clusters;
mod day2;
mod limits;
mod operator;
mod plan;
mod quota;
mod rate;
mod rollouts;
mod tenant_kv;
mod watch;

use std::collections::BTreeMap;
use std::pin::Pin;

use async_nats::jetstream::kv;
use futures::Stream;
use hypersaga_api::v1 as pb;
use hypersaga_api::v1::cluster_service_server::ClusterService;
use hypersaga_bus::subjects::{cluster_key, saga_key};
use hypersaga_bus::{Bus, ENVELOPE_VERSION, OperatorAction, SagaWake};
use hypersaga_config::{Config, TenantConfig};
use hypersaga_model::names::infra_id;
use hypersaga_model::record::{
    CLUSTER_RECORD_VERSION, OperationIntent, OperationKind, OperationState, OperationView,
};
use hypersaga_model::{
    ClusterPhase, ClusterRecord, ClusterSpec, TenantId, validate, validate_create,
    validate_subscription,
};
use hypersaga_placement::Placement;
use hypersaga_saga::StoredOperation;
use hypersaga_saga::kinds::Direction;
use hypersaga_telemetry::TraceParent;
use hypersaga_tenants::{Directory, Suspension};
use time::{Duration, OffsetDateTime};
use tonic::{Request, Response, Status};
use tonic_types::StatusExt;
use tracing::{info, instrument, warn};

pub use self::addons::Addons;
pub use self::admin::Admin;
use self::limits::Checks;
use self::operator::CallRequest;
use crate::convert::{self, cluster_to_pb, operation_to_pb, spec_from_pb};

/// The gRPC service. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    config: Config,
    bus: Bus,
    clusters: kv::Store,
    sagas: kv::Store,
    usage: std::sync::Arc<quota::UsageCache>,
    rate: Option<std::sync::Arc<rate::TenantRate>>,
    /// The tenants served, live.
    tenants: Directory,
    /// Where creates are placed.
    placement: Placement,
    /// Tenants' rollouts.
    rollouts: kv::Store,
    /// The add-on catalog.
    catalog: hypersaga_addons::Catalog,
}

impl Gateway {
    pub async fn new(
        config: Config,
        bus: Bus,
        tenants: Directory,
    ) -> Result<Self, hypersaga_bus::Error> {
        let clusters = bus.clusters().await?;
        let sagas = bus.sagas().await?;
        let configured = config
            .kube
            .management_clusters()
            .into_iter()
            .map(|m| m.name)
            .collect();
        let placement = Placement::new(bus.management().await?, clusters.clone(), configured);
        let rollouts = bus.rollouts().await?;
        let catalog = hypersaga_addons::Catalog::new(bus.addons().await?);
        Ok(Self {
            rollouts,
            catalog,
            bus,
            clusters,
            sagas,
            tenants,
            placement,
            rate: rate::TenantRate::from_config(&config.gateway).map(std::sync::Arc::new),
            usage: Default::default(),
            config,
        })
    }

    /// The tenant of the caller's bearer token; a missing or unknown token is UNAUTHENTICATED,
    /// and logged with the caller's address (never the token). A suspended tenant is
    /// PERMISSION_DENIED, naming the suspension. The web view authenticates with it too.
    pub(crate) fn tenant<T>(&self, req: &Request<T>) -> Result<TenantConfig, Status> {
        let token = bearer_token(req)?;
        let tenant = self.tenants.by_token(token).ok_or_else(|| {
            refused(
                req,
                "unknown token",
                Status::unauthenticated("unknown token"),
            )
        })?;
        if let Some(s) = &tenant.suspended {
            return Err(refused(req, "suspended", suspended(tenant.id(), s)));
        }
        if let Some(rate) = &self.rate {
            rate.admit(tenant.id())?;
        }
        Ok(tenant.config.clone())
    }

    async fn load_cluster(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<Option<(ClusterRecord, u64)>, Status> {
        let key = cluster_key(tenant, name);
        if !valid_key_part(name) {
            return Ok(None);
        }
        let entry = self
            .clusters
            .entry(key)
            .await
            .map_err(internal("read cluster"))?;
        match entry {
            Some(e) if e.operation == kv::Operation::Put => {
                let rec: ClusterRecord =
                    serde_json::from_slice(&e.value).map_err(internal("decode cluster"))?;
                Ok(Some((rec, e.revision)))
            }
            _ => Ok(None),
        }
    }

    /// Operation `id` of `tenant` as its saga stands, read through the saga's public view.
    async fn load_operation(
        &self,
        tenant: &TenantConfig,
        id: &str,
    ) -> Result<Option<StoredOperation>, Status> {
        if !valid_key_part(id) {
            return Ok(None);
        }
        match self
            .sagas
            .entry(saga_key(&tenant.id, id))
            .await
            .map_err(internal("read operation"))?
        {
            Some(e) if e.operation == kv::Operation::Put => Ok(Some(
                serde_json::from_slice(&e.value).map_err(internal("decode operation"))?,
            )),
            _ => Ok(None),
        }
    }

    /// Wakes the coordinator for the record's current operation; it builds the saga from the
    /// record if need be. Idempotent: the coordinator ignores a wake-up for a saga that exists
    /// and has nothing to do, and JetStream drops a repeat within its de-duplication window.
    async fn wake(&self, rec: &ClusterRecord) -> Result<(), Status> {
        let wake = SagaWake {
            v: ENVELOPE_VERSION,
            tenant: rec.tenant.clone(),
            saga_id: rec.operation.id.clone(),
            cluster: Some(rec.name.clone()),
        };
        let trace = match &rec.intent {
            Some(i) if i.operation == rec.operation.id => TraceParent::with_trace_id(&i.trace_id),
            _ => TraceParent::new_root(),
        };
        self.bus
            .publish_json(
                &self.bus.subjects().saga_start(&rec.tenant),
                &format!("{}:wake", rec.operation.id),
                &trace,
                &wake,
            )
            .await
            .map_err(internal("wake coordinator"))?;
        Ok(())
    }

    /// The answer to a retried request for the record's current operation: the operation as it
    /// is now. While its saga is not built, the wake-up is sent again (the first may have been
    /// lost: a gateway that died after its write, a publish that failed).
    async fn accepted(
        &self,
        tenant: &TenantConfig,
        rec: &ClusterRecord,
    ) -> Result<pb::Operation, Status> {
        if let Some(op) = self.load_operation(tenant, &rec.operation.id).await? {
            return Ok(operation_to_pb(&op.view));
        }
        if !rec.operation.state.is_terminal() {
            self.wake(rec).await?;
        }
        Ok(operation_to_pb(&rec.operation))
    }

    /// A new operation as the record shows it until the coordinator has built its saga:
    /// running, no steps yet. The deadline is the saga's too (`coordinator.*_timeout_s`).
    fn new_operation(
        &self,
        id: &str,
        cluster: &str,
        kind: OperationKind,
        request_id: Option<String>,
        now: OffsetDateTime,
    ) -> OperationView {
        // Removing things has its own bound; making or changing them the create's.
        let timeout_s = match hypersaga_saga::kinds::behaviour(kind).direction {
            Direction::Forward => self.config.coordinator.create_timeout_s,
            Direction::Backward => self.config.coordinator.delete_timeout_s,
        };
        OperationView {
            id: id.to_owned(),
            cluster: cluster.to_owned(),
            kind,
            state: OperationState::Running,
            started_at: now,
            ended_at: None,
            deadline: now.saturating_add(Duration::seconds(
                i64::try_from(timeout_s).unwrap_or(i64::MAX),
            )),
            error: None,
            steps: Vec::new(),
            request_id,
            pause: None,
            node_pool: None,
            addon: None,
        }
    }

    /// An operation that a cluster record of the tenant names but whose saga the coordinator
    /// has not built yet (one read of the tenant's records).
    async fn operation_of_record(
        &self,
        tenant: &TenantConfig,
        id: &str,
    ) -> Result<Option<OperationView>, Status> {
        if !valid_key_part(id) {
            return Ok(None);
        }
        let records = self.tenant_clusters(tenant).await?;
        Ok(records
            .into_values()
            .map(|r| r.value.operation)
            .find(|op| op.id == id))
    }
}

/// An operation as `GetOperation` answers it, and the operator calls that apply to it as it
/// stands (judged as the gateway judges a call, against its saga).
pub(crate) struct OperationNow {
    pub operation: pb::Operation,
    /// In the order resume, retry a step (one of `operation.pause.steps`), compensate,
    /// abandon; empty once it has finished, or while its saga is not built yet.
    pub calls: Vec<OperatorAction>,
}

impl Gateway {
    /// Operation `id` of `tenant` as it stands (`GetOperation`'s answer), with the operator
    /// calls that apply to it now. Read-only, so idempotent.
    pub(crate) async fn operation_now(
        &self,
        tenant: &TenantConfig,
        id: &str,
    ) -> Result<OperationNow, Status> {
        Checks::new().operation_id("id", id).done()?;
        if let Some(op) = self.load_operation(tenant, id).await? {
            let paused = op.view.pause.as_ref().and_then(|p| p.steps.first());
            let calls = [
                OperatorAction::Resume,
                OperatorAction::RetryStep,
                OperatorAction::Compensate,
                OperatorAction::Abandon,
            ]
            .into_iter()
            .filter(|&action| {
                let step = (action == OperatorAction::RetryStep)
                    .then_some(paused.map(String::as_str))
                    .flatten();
                op.check_operator(action, step).is_ok()
            })
            .collect();
            return Ok(OperationNow {
                operation: operation_to_pb(&op.view),
                calls,
            });
        }
        // Accepted, but its saga is not built yet: the cluster record says how it stands.
        match self.operation_of_record(tenant, id).await? {
            Some(op) => Ok(OperationNow {
                operation: operation_to_pb(&op),
                calls: Vec::new(),
            }),
            None => Err(Status::not_found(format!("operation {id:?} not found"))),
        }
    }

    /// `WatchCluster`'s changes of cluster `name` of `tenant`: its state now, then every
    /// change until its operation ends; the receiver's drop ends the watch. Read-only.
    pub(crate) async fn watch_record(
        &self,
        tenant: &TenantConfig,
        name: &str,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<pb::Cluster, Status>>, Status> {
        Checks::new().cluster_name("name", name).done()?;
        if self.load_cluster(&tenant.id, name).await?.is_none() {
            return Err(not_found(name));
        }
        let watch = self
            .clusters
            .watch_with_history(cluster_key(&tenant.id, name))
            .await
            .map_err(internal("watch cluster"))?;
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        // Every change until a terminal phase; a client that goes away ends it at once, even
        // while the cluster is quiet.
        tokio::spawn(watch::follow(
            self.clusters.clone(),
            cluster_key(&tenant.id, name),
            watch,
            tx,
        ));
        Ok(rx)
    }
}

impl Gateway {
    /// Checks a day-2 call's cluster name and request id, recording them on the call's span;
    /// the request id, if any.
    fn day2_ids(
        &self,
        tenant: &TenantConfig,
        (field, cluster): (&str, &str),
        request_id: &str,
    ) -> Result<Option<String>, Status> {
        Checks::new()
            .cluster_name(field, cluster)
            .request_id("request_id", request_id.trim())
            .done()?;
        tracing::Span::current()
            .record("tenant", tenant.id.as_str())
            .record("cluster", cluster);
        Ok(Some(request_id.trim().to_owned()).filter(|r| !r.is_empty()))
    }
}

/// The caller's trace context (`traceparent` metadata), if it sent a valid one.
pub(crate) fn caller_trace(headers: &http::HeaderMap) -> Option<TraceParent> {
    headers
        .get(hypersaga_telemetry::TRACEPARENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| TraceParent::parse(v).ok())
}

/// The trace a new operation's saga runs in: the call's own span's when spans are exported
/// (a child of the caller's), else the caller's, else a new one.
fn operation_trace<T>(req: &Request<T>) -> String {
    hypersaga_telemetry::otel::current()
        .or_else(|| caller_trace(req.metadata().as_ref()))
        .unwrap_or_else(TraceParent::new_root)
        .trace_id()
}

/// Who asked for a new operation, for the saga the coordinator builds.
fn intent(
    tenant: &TenantConfig,
    op_id: &str,
    previous: Option<String>,
    trace_id: String,
) -> OperationIntent {
    OperationIntent {
        operation: op_id.to_owned(),
        actor: format!("tenant:{}", tenant.id),
        trace_id,
        previous_operation: previous,
        supersedes: None,
        keep_identities: false,
    }
}

/// Largest spec a request may carry, encoded as it is recorded. A saga is built from the
/// cluster record and holds it with its steps, in one KV value that nats-server caps at 1 MiB
/// (`max_payload`); the record adds only fields of bounded size to the spec. Every field's
/// own limit keeps a spec within a few KB, so this only stops what those limits missed.
const MAX_SPEC_BYTES: usize = 32 * 1024;

/// Refuses a spec larger than [`MAX_SPEC_BYTES`], before anything is read or written.
fn fits_a_record(spec: &ClusterSpec) -> Result<(), Status> {
    let len = serde_json::to_vec(spec)
        .map_err(internal("encode spec"))?
        .len();
    if len <= MAX_SPEC_BYTES {
        return Ok(());
    }
    let mut checks = Checks::new();
    checks.push(
        "spec",
        format!("takes {len} bytes to record; at most {MAX_SPEC_BYTES} are accepted"),
    );
    checks.done()
}

/// A create retried with the same `request_id` must be the same request: one that changes the
/// spec would otherwise get the first operation back and lose its changes unseen.
fn same_request(first: &ClusterSpec, again: &ClusterSpec) -> Result<(), Status> {
    let changed = first.differences(again);
    if changed.is_empty() {
        return Ok(());
    }
    let mut checks = Checks::new();
    checks.push(
        "request_id",
        format!(
            "was used for a request that differs from this one at {}; send the same request to \
             retry it, or a new request_id for a new request",
            changed.join(", ")
        ),
    );
    checks.done()
}

/// A delete asked again (a retry with its `request_id`, or any delete while one runs) is the
/// same operation only if it asks the same thing: the same `keep_identities`. A retry that
/// asks otherwise reuses a request id for another request (`INVALID_ARGUMENT` on
/// `request_id`); another delete that asks otherwise conflicts with the one running
/// (`FAILED_PRECONDITION`, reason `DeleteRunning`).
fn same_delete(
    rec: &ClusterRecord,
    request_id: Option<&str>,
    keep_identities: bool,
) -> Result<(), Status> {
    let kept = rec
        .intent
        .as_ref()
        .filter(|i| i.operation == rec.operation.id)
        .map(|i| i.keep_identities);
    if kept.is_none_or(|kept| kept == keep_identities) {
        return Ok(());
    }
    if request_id.is_some() && rec.delete_request_id.as_deref() == request_id {
        let mut checks = Checks::new();
        checks.push(
            "request_id",
            format!(
                "was used for a delete that differs from this one at keep_identities ({}); send \
                 the same request to retry it",
                !keep_identities
            ),
        );
        return checks.done();
    }
    Err(Status::with_error_details(
        tonic::Code::FailedPrecondition,
        format!(
            "cluster {:?} is being deleted by {} with keep_identities={}; wait for it to end",
            rec.name, rec.operation.id, !keep_identities
        ),
        tonic_types::ErrorDetails::with_error_info(
            "DeleteRunning",
            operator::ERROR_DOMAIN,
            std::collections::HashMap::from([("operation".to_owned(), rec.operation.id.clone())]),
        ),
    ))
}

fn new_operation_id() -> String {
    format!("op-{}", uuid::Uuid::new_v4().simple())
}

/// KV keys accept `[-/_=.a-zA-Z0-9]`; anything else cannot name a stored object.
impl Gateway {
    /// The management cluster a new cluster goes to; `RESOURCE_EXHAUSTED` naming the region
    /// when none has room.
    async fn place(&self, key: &str, uid: &str, region: &str) -> Result<String, Status> {
        self.placement
            .place(key, uid, region)
            .await
            .map_err(|e| placement_refused(region, e))
    }

    /// Where [`Gateway::place`] would put the cluster now, placing nothing.
    async fn choose_placement(&self, key: &str, uid: &str, region: &str) -> Result<String, Status> {
        self.placement
            .choose(key, uid, region)
            .await
            .map_err(|e| placement_refused(region, e))
    }

    /// Drives the live rollouts (every replica does; compare-and-set keeps them apart) until
    /// `shutdown`.
    pub async fn drive_rollouts(self, shutdown: tokio_util::sync::CancellationToken) {
        rollouts::drive(self, shutdown).await
    }

    /// The management clusters' records, brought to the configuration (at start).
    pub async fn ensure_management_clusters(&self) -> Result<(), hypersaga_placement::Error> {
        self.placement
            .ensure(&self.config.kube.management_clusters())
            .await
    }
}

/// RESOURCE_EXHAUSTED when no management cluster in `region` has room; INTERNAL otherwise.
fn placement_refused(region: &str, e: hypersaga_placement::Error) -> Status {
    match e {
        hypersaga_placement::Error::NoRoom(why) => Status::with_error_details(
            tonic::Code::ResourceExhausted,
            why,
            tonic_types::ErrorDetails::with_error_info(
                "NoManagementClusterCapacity",
                operator::ERROR_DOMAIN,
                std::collections::HashMap::from([("region".to_owned(), region.to_owned())]),
            ),
        ),
        e => internal("place the cluster")(e),
    }
}

/// Counts and logs a refused authentication, with the caller's address (never its token).
fn refused<T>(req: &Request<T>, why: &'static str, status: Status) -> Status {
    let peer = req.remote_addr().map(|a| a.to_string()).unwrap_or_default();
    warn!(%peer, reason = why, "authentication failed");
    metrics::counter!("hypersaga_gateway_auth_failures_total", "reason" => why).increment(1);
    status
}

/// The bearer token of a call: UNAUTHENTICATED when missing or malformed.
fn bearer_token<T>(req: &Request<T>) -> Result<&str, Status> {
    let header = req.metadata().get("authorization").ok_or_else(|| {
        refused(
            req,
            "no token",
            Status::unauthenticated("missing `authorization: Bearer <token>` metadata"),
        )
    })?;
    header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            refused(
                req,
                "malformed",
                Status::unauthenticated("authorization metadata must be `Bearer <token>`"),
            )
        })
}

/// A suspended tenant's call: refused, naming why and by whom.
fn suspended(tenant: &TenantId, s: &Suspension) -> Status {
    Status::with_error_details(
        tonic::Code::PermissionDenied,
        format!(
            "tenant {tenant} is suspended since {} by {}: {}",
            s.at.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            s.by,
            s.reason
        ),
        tonic_types::ErrorDetails::with_error_info(
            "TenantSuspended",
            operator::ERROR_DOMAIN,
            std::collections::HashMap::from([("reason".to_owned(), s.reason.clone())]),
        ),
    )
}

fn valid_key_part(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn internal<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Status {
    move |e| {
        warn!(error = %e, what, "internal error");
        Status::unavailable(format!("{what} failed; retry the request"))
    }
}

fn not_found(name: &str) -> Status {
    Status::not_found(format!("cluster {name:?} not found"))
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::Cluster, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl ClusterService for Gateway {
    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn create_cluster(
        &self,
        req: Request<pb::CreateClusterRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        let req = req.into_inner();
        let span = tracing::Span::current();
        span.record("tenant", tenant.id.as_str());
        let mut converted = Vec::new();
        let requested_addons = req
            .spec
            .as_ref()
            .map(|s| s.addons.clone())
            .unwrap_or_default();
        let spec = req.spec.map(|s| spec_from_pb(s, &mut converted));
        let mut checks = Checks::new();
        checks.extend(converted);
        let (addons, unresolved) = self
            .resolve_addons(&tenant.id, "spec.addons", &requested_addons)
            .await?;
        checks.extend(unresolved);
        checks.request_id("request_id", req.request_id.trim());
        checks.extend(validate_create(&req.name, spec.as_ref()));
        let labels: BTreeMap<String, String> = req.labels.into_iter().collect();
        let mut bad_labels = Vec::new();
        validate::check_labels(&mut bad_labels, "labels", &labels);
        checks.extend(bad_labels);
        if let Some(spec) = &spec {
            checks.extend(validate_subscription(spec, &tenant.azure.subscription_id));
        }
        checks.done()?;
        // A missing spec is one of the violations above.
        let Some(mut spec) = spec else {
            return Err(Status::invalid_argument(
                "invalid request: spec: is required",
            ));
        };
        spec.addons = addons;
        // Each pool runs the control plane's release unless it says otherwise (checked as
        // sent, above, so a bad release is named once, where the caller wrote it).
        spec.pin_pool_releases();
        fits_a_record(&spec)?;
        span.record("cluster", req.name.as_str());
        let request_id = Some(req.request_id.trim().to_owned()).filter(|r| !r.is_empty());
        let key = cluster_key(&tenant.id, &req.name);
        let existing = self.load_cluster(&tenant.id, &req.name).await?;
        if let Some((rec, _)) = &existing
            && rec.phase != ClusterPhase::Deleted
        {
            if request_id.is_some()
                && rec.create_request_id == request_id
                && rec.operation.kind == OperationKind::Create
            {
                // A retried request: the same operation, if it is the same request.
                same_request(&rec.spec, &spec)?;
                return self.accepted(&tenant, rec).await.map(Response::new);
            }
            return Err(Status::already_exists(format!(
                "cluster {:?} already exists (phase {:?}); delete it first or choose another name",
                req.name, rec.phase
            )));
        }
        self.check_quotas(&tenant, true).await?;
        let uid = uuid::Uuid::new_v4().to_string();
        let infra = infra_id(&req.name, &uid);
        // The preflight, before anything is written: the services plan the create with the
        // code its steps run, and whatever they find in its way refuses it. A dry run stops
        // here with the plan.
        let chosen = self.choose_placement(&key, &uid, &spec.location).await?;
        let planned = self
            .plan_create(&tenant.id, &req.name, (&uid, &infra), &spec, &chosen)
            .await;
        if req.validate_only {
            return Ok(Response::new(pb::Operation {
                cluster: req.name.clone(),
                kind: pb::OperationKind::Create as i32,
                plan: Some(planned.to_pb(&infra, &chosen)),
                ..Default::default()
            }));
        }
        if let Some(refused) = planned.refusal() {
            return Err(refused);
        }
        let management_cluster = self.place(&key, &uid, &spec.location).await?;
        let now = OffsetDateTime::now_utc();
        let op_id = new_operation_id();
        let rec = ClusterRecord {
            v: CLUSTER_RECORD_VERSION,
            tenant: tenant.id.clone(),
            name: req.name.clone(),
            infra_id: infra,
            uid,
            spec,
            created_at: now,
            create_request_id: request_id.clone(),
            delete_request_id: None,
            phase: ClusterPhase::Accepted,
            message: "accepted".into(),
            error: None,
            operation: self.new_operation(
                &op_id,
                &req.name,
                OperationKind::Create,
                request_id.clone(),
                now,
            ),
            resources: BTreeMap::new(),
            owned: BTreeMap::new(),
            saga_seq: 0,
            management_cluster,
            intent: Some(intent(&tenant, &op_id, None, trace_id)),
            labels,
        };
        let bytes = serde_json::to_vec(&rec).map_err(internal("encode cluster"))?;
        let conflict = match existing {
            Some((_, revision)) => match self.clusters.update(&key, bytes.into(), revision).await {
                Ok(_) => false,
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => true,
                Err(e) => return Err(internal("write cluster")(e)),
            },
            None => match self.clusters.create(&key, bytes.into()).await {
                Ok(_) => false,
                Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => true,
                Err(e) => return Err(internal("write cluster")(e)),
            },
        };
        if conflict {
            // Someone else wrote first. If it was this very request (a client retry racing the
            // first call), answer with its operation; otherwise the name is taken.
            if let Some((other, _)) = self.load_cluster(&tenant.id, &req.name).await?
                && request_id.is_some()
                && other.create_request_id == request_id
                && other.operation.kind == OperationKind::Create
            {
                same_request(&other.spec, &rec.spec)?;
                return self.accepted(&tenant, &other).await.map(Response::new);
            }
            return Err(Status::already_exists(format!(
                "cluster {:?} was created concurrently",
                req.name
            )));
        }
        self.wake(&rec).await?;
        tracing::Span::current().record("operation", op_id.as_str());
        info!(infra_id = %rec.infra_id, "cluster accepted");
        Ok(Response::new(operation_to_pb(&rec.operation)))
    }

    async fn get_cluster(
        &self,
        req: Request<pb::GetClusterRequest>,
    ) -> Result<Response<pb::Cluster>, Status> {
        let tenant = self.tenant(&req)?;
        let name = req.into_inner().name;
        Checks::new().cluster_name("name", &name).done()?;
        match self.load_cluster(&tenant.id, &name).await? {
            Some((rec, rev)) if rec.phase != ClusterPhase::Deleted => {
                Ok(Response::new(cluster_to_pb(&rec, rev)))
            }
            _ => Err(not_found(&name)),
        }
    }

    async fn list_clusters(
        &self,
        req: Request<pb::ListClustersRequest>,
    ) -> Result<Response<pb::ListClustersResponse>, Status> {
        let tenant = self.tenant(&req)?;
        self.list_clusters_page(&tenant, req.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(tenant, cluster))]
    async fn delete_cluster(
        &self,
        req: Request<pb::DeleteClusterRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        let req = req.into_inner();
        Checks::new()
            .cluster_name("name", &req.name)
            .request_id("request_id", req.request_id.trim())
            .done()?;
        tracing::Span::current()
            .record("tenant", tenant.id.as_str())
            .record("cluster", req.name.as_str());
        let request_id = Some(req.request_id.trim().to_owned()).filter(|r| !r.is_empty());
        let mut within_quota = false;
        for _ in 0..8 {
            let Some((mut rec, revision)) = self.load_cluster(&tenant.id, &req.name).await? else {
                return Err(not_found(&req.name));
            };
            if rec.phase == ClusterPhase::Deleted {
                // A retry of the delete that finished answers with that delete.
                if request_id.is_some() && rec.delete_request_id == request_id {
                    same_delete(&rec, request_id.as_deref(), req.keep_identities)?;
                    // A sweep since then names itself; the delete is the operation before it.
                    if rec.operation.kind != OperationKind::Delete
                        && let Some(previous) = rec
                            .intent
                            .as_ref()
                            .and_then(|i| i.previous_operation.as_deref())
                        && let Some(delete) = self.load_operation(&tenant, previous).await?
                    {
                        return Ok(Response::new(operation_to_pb(&delete.view)));
                    }
                    return Ok(Response::new(operation_to_pb(&rec.operation)));
                }
                return Err(not_found(&req.name));
            }
            if rec.operation.kind == OperationKind::Delete && !rec.operation.state.is_terminal() {
                // Already being deleted: the same operation (idempotent), unless this request
                // asks for another delete than the one running.
                same_delete(&rec, request_id.as_deref(), req.keep_identities)?;
                return self.accepted(&tenant, &rec).await.map(Response::new);
            }
            // A create still running (or paused) is superseded: it stops at its next safe point
            // and this delete then removes everything it made.
            let supersedes = (!rec.operation.state.is_terminal()).then(|| rec.operation.id.clone());
            if !within_quota {
                self.check_quotas(&tenant, false).await?;
                within_quota = true;
            }
            // The coordinator carries the previous operation's outputs over (undo handlers
            // derive names deterministically; the record keeps showing what is kept).
            let op_id = new_operation_id();
            let previous = std::mem::take(&mut rec.operation.id);
            let mut new_intent = intent(&tenant, &op_id, Some(previous), trace_id.clone());
            new_intent.supersedes = supersedes.clone();
            new_intent.keep_identities = req.keep_identities;
            rec.intent = Some(new_intent);
            rec.operation = self.new_operation(
                &op_id,
                &req.name,
                OperationKind::Delete,
                request_id.clone(),
                OffsetDateTime::now_utc(),
            );
            rec.phase = ClusterPhase::Deleting;
            rec.message = "deleting".into();
            rec.error = None;
            rec.delete_request_id = request_id.clone();
            rec.saga_seq = 0;
            let bytes = serde_json::to_vec(&rec).map_err(internal("encode cluster"))?;
            match self
                .clusters
                .update(cluster_key(&tenant.id, &req.name), bytes.into(), revision)
                .await
            {
                Ok(_) => {}
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
                Err(e) => return Err(internal("write cluster")(e)),
            }
            self.wake(&rec).await?;
            info!(operation = %op_id, supersedes = ?supersedes, "cluster deletion accepted");
            return Ok(Response::new(operation_to_pb(&rec.operation)));
        }
        Err(Status::aborted("the cluster kept changing; retry"))
    }

    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn update_cluster(
        &self,
        req: Request<pb::UpdateClusterRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        let req = req.into_inner();
        let cluster = req.cluster.unwrap_or_default();
        let request_id =
            self.day2_ids(&tenant, ("cluster.name", &cluster.name), &req.request_id)?;
        day2::cluster_mask(req.update_mask)?;
        let image = cluster
            .spec
            .map(|s| s.release_image.trim().to_owned())
            .unwrap_or_default();
        let apply = |rec: &ClusterRecord| day2::upgraded_spec(rec, &image);
        let change = day2::Change {
            cluster: &cluster.name,
            kind: OperationKind::UpdateCluster,
            node_pool: None,
            addon: None,
            request_id,
            etag: Some(day2::Etag::Cluster(cluster.etag)),
            trace_id,
            validate_only: req.validate_only,
            apply: &apply,
        };
        self.accept_change(&tenant, change).await.map(Response::new)
    }

    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn set_cluster_addon(
        &self,
        req: Request<pb::SetClusterAddonRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        self.set_cluster_addon(&tenant, trace_id, req.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn remove_cluster_addon(
        &self,
        req: Request<pb::RemoveClusterAddonRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        self.remove_cluster_addon(&tenant, trace_id, req.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn create_node_pool(
        &self,
        req: Request<pb::CreateNodePoolRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        let req = req.into_inner();
        let request_id = self.day2_ids(&tenant, ("cluster", &req.cluster), &req.request_id)?;
        let mut converted = Vec::new();
        let pool = req
            .node_pool
            .map(|p| convert::pool_from_pb(p, "node_pool", &mut converted));
        let mut checks = Checks::new();
        checks.extend(converted);
        match &pool {
            Some(p) => checks.extend(validate::validate_node_pool("node_pool", p)),
            None => checks.push("node_pool", "is required"),
        }
        checks.done()?;
        let pool = pool.unwrap_or_default();
        let apply = |rec: &ClusterRecord| day2::with_new_pool(rec, &pool);
        let change = day2::Change {
            cluster: &req.cluster,
            kind: OperationKind::CreateNodePool,
            node_pool: Some(pool.name.clone()),
            addon: None,
            request_id,
            etag: None,
            trace_id,
            validate_only: req.validate_only,
            apply: &apply,
        };
        self.accept_change(&tenant, change).await.map(Response::new)
    }

    async fn get_node_pool(
        &self,
        req: Request<pb::GetNodePoolRequest>,
    ) -> Result<Response<pb::NodePool>, Status> {
        let tenant = self.tenant(&req)?;
        let req = req.into_inner();
        let mut checks = Checks::new();
        checks.cluster_name("cluster", &req.cluster);
        checks.extend(validate::validate_pool_name("name", &req.name));
        checks.done()?;
        match self.load_cluster(&tenant.id, &req.cluster).await? {
            Some((rec, _)) if rec.phase != ClusterPhase::Deleted => {
                day2::node_pool_of(&rec, &req.name).map(Response::new)
            }
            _ => Err(not_found(&req.cluster)),
        }
    }

    async fn list_node_pools(
        &self,
        req: Request<pb::ListNodePoolsRequest>,
    ) -> Result<Response<pb::ListNodePoolsResponse>, Status> {
        let tenant = self.tenant(&req)?;
        let req = req.into_inner();
        let mut checks = Checks::new();
        checks.cluster_name("cluster", &req.cluster);
        checks.page_token("page_token", &req.page_token);
        let page_size = operator::page_size(req.page_size, &mut checks);
        let after = operator::page_token(
            &req.page_token,
            clusters::NameCursor::decode,
            "ListNodePoolsResponse",
            &mut checks,
        );
        checks.done()?;
        let Some((rec, _)) = self
            .load_cluster(&tenant.id, &req.cluster)
            .await?
            .filter(|(r, _)| r.phase != ClusterPhase::Deleted)
        else {
            return Err(not_found(&req.cluster));
        };
        let mut pools: Vec<&hypersaga_model::NodePoolSpec> = rec
            .spec
            .node_pools
            .iter()
            .filter(|p| after.as_ref().is_none_or(|a| p.name > a.0))
            .collect();
        pools.sort_by(|a, b| a.name.cmp(&b.name));
        let more = pools.len() > page_size;
        pools.truncate(page_size);
        let next_page_token = match (more, pools.last()) {
            (true, Some(last)) => clusters::NameCursor(last.name.clone()).encode(),
            _ => String::new(),
        };
        Ok(Response::new(pb::ListNodePoolsResponse {
            node_pools: pools
                .into_iter()
                .map(|p| convert::node_pool_to_pb(&rec, p))
                .collect(),
            next_page_token,
        }))
    }

    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn update_node_pool(
        &self,
        req: Request<pb::UpdateNodePoolRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        let req = req.into_inner();
        let request_id = self.day2_ids(&tenant, ("cluster", &req.cluster), &req.request_id)?;
        let pool = req.node_pool.unwrap_or_default();
        let spec = pool.spec.unwrap_or_default();
        let name = spec.name.trim().to_owned();
        let mut checks = Checks::new();
        checks.extend(validate::validate_pool_name("node_pool.spec.name", &name));
        checks.done()?;
        let paths = day2::pool_mask(req.update_mask)?;
        let apply = |rec: &ClusterRecord| day2::with_pool_updated(rec, &name, &spec, &paths);
        let change = day2::Change {
            cluster: &req.cluster,
            kind: OperationKind::UpdateNodePool,
            node_pool: Some(name.clone()),
            addon: None,
            request_id,
            etag: Some(day2::Etag::Pool {
                name: name.clone(),
                etag: pool.etag,
            }),
            trace_id,
            validate_only: req.validate_only,
            apply: &apply,
        };
        self.accept_change(&tenant, change).await.map(Response::new)
    }

    #[instrument(skip_all, fields(tenant, cluster, operation))]
    async fn delete_node_pool(
        &self,
        req: Request<pb::DeleteNodePoolRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let trace_id = operation_trace(&req);
        let req = req.into_inner();
        let request_id = self.day2_ids(&tenant, ("cluster", &req.cluster), &req.request_id)?;
        let mut checks = Checks::new();
        checks.extend(validate::validate_pool_name("name", &req.name));
        checks.done()?;
        let apply = |rec: &ClusterRecord| day2::with_pool_deleted(rec, &req.name);
        let change = day2::Change {
            cluster: &req.cluster,
            kind: OperationKind::DeleteNodePool,
            node_pool: Some(req.name.clone()),
            addon: None,
            request_id,
            etag: Some(day2::Etag::Pool {
                name: req.name.clone(),
                etag: req.etag.clone(),
            }),
            trace_id,
            validate_only: req.validate_only,
            apply: &apply,
        };
        self.accept_change(&tenant, change).await.map(Response::new)
    }

    type WatchClusterStream = WatchStream;

    async fn watch_cluster(
        &self,
        req: Request<pb::WatchClusterRequest>,
    ) -> Result<Response<Self::WatchClusterStream>, Status> {
        let tenant = self.tenant(&req)?;
        let name = req.into_inner().name;
        let changes = self.watch_record(&tenant, &name).await?;
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(changes),
        )))
    }

    async fn get_operation(
        &self,
        req: Request<pb::GetOperationRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let id = req.into_inner().id;
        self.operation_now(&tenant, &id)
            .await
            .map(|now| Response::new(now.operation))
    }

    async fn list_operations(
        &self,
        req: Request<pb::ListOperationsRequest>,
    ) -> Result<Response<pb::ListOperationsResponse>, Status> {
        let tenant = self.tenant(&req)?;
        self.list_operations_page(&tenant, req.into_inner())
            .await
            .map(Response::new)
    }

    async fn resume_operation(
        &self,
        req: Request<pb::ResumeOperationRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let r = req.into_inner();
        let call = CallRequest {
            id: r.id,
            action: OperatorAction::Resume,
            step: None,
            request_id: r.request_id,
        };
        self.operate(&tenant, call).await.map(Response::new)
    }

    async fn retry_operation_step(
        &self,
        req: Request<pb::RetryOperationStepRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let r = req.into_inner();
        let call = CallRequest {
            id: r.id,
            action: OperatorAction::RetryStep,
            step: Some(r.step),
            request_id: r.request_id,
        };
        self.operate(&tenant, call).await.map(Response::new)
    }

    async fn compensate_operation(
        &self,
        req: Request<pb::CompensateOperationRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let r = req.into_inner();
        let call = CallRequest {
            id: r.id,
            action: OperatorAction::Compensate,
            step: None,
            request_id: r.request_id,
        };
        self.operate(&tenant, call).await.map(Response::new)
    }

    async fn abandon_operation(
        &self,
        req: Request<pb::AbandonOperationRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let r = req.into_inner();
        let call = CallRequest {
            id: r.id,
            action: OperatorAction::Abandon,
            step: None,
            request_id: r.request_id,
        };
        self.operate(&tenant, call).await.map(Response::new)
    }

    #[instrument(skip_all, fields(tenant))]
    async fn create_rollout(
        &self,
        req: Request<pb::CreateRolloutRequest>,
    ) -> Result<Response<pb::Rollout>, Status> {
        let tenant = self.tenant(&req)?;
        tracing::Span::current().record("tenant", tenant.id.as_str());
        let r = Gateway::create_rollout(self, &tenant, req.into_inner()).await?;
        info!(rollout = %r.id, clusters = r.clusters.len(), "rollout created");
        Ok(Response::new(r))
    }

    async fn get_rollout(
        &self,
        req: Request<pb::GetRolloutRequest>,
    ) -> Result<Response<pb::Rollout>, Status> {
        let tenant = self.tenant(&req)?;
        Gateway::get_rollout(self, &tenant, &req.get_ref().id)
            .await
            .map(Response::new)
    }

    async fn list_rollouts(
        &self,
        req: Request<pb::ListRolloutsRequest>,
    ) -> Result<Response<pb::ListRolloutsResponse>, Status> {
        let tenant = self.tenant(&req)?;
        let rollouts = Gateway::list_rollouts(self, &tenant).await?;
        Ok(Response::new(pb::ListRolloutsResponse { rollouts }))
    }

    async fn pause_rollout(
        &self,
        req: Request<pb::PauseRolloutRequest>,
    ) -> Result<Response<pb::Rollout>, Status> {
        let tenant = self.tenant(&req)?;
        self.steer_rollout(&tenant, &req.get_ref().id, rollouts::Steer::Pause)
            .await
            .map(Response::new)
    }

    async fn resume_rollout(
        &self,
        req: Request<pb::ResumeRolloutRequest>,
    ) -> Result<Response<pb::Rollout>, Status> {
        let tenant = self.tenant(&req)?;
        self.steer_rollout(&tenant, &req.get_ref().id, rollouts::Steer::Resume)
            .await
            .map(Response::new)
    }

    async fn cancel_rollout(
        &self,
        req: Request<pb::CancelRolloutRequest>,
    ) -> Result<Response<pb::Rollout>, Status> {
        let tenant = self.tenant(&req)?;
        self.steer_rollout(&tenant, &req.get_ref().id, rollouts::Steer::Cancel)
            .await
            .map(Response::new)
    }

    type WatchRolloutStream = rollouts::RolloutStream;

    async fn watch_rollout(
        &self,
        req: Request<pb::WatchRolloutRequest>,
    ) -> Result<Response<Self::WatchRolloutStream>, Status> {
        let tenant = self.tenant(&req)?;
        Gateway::watch_rollout(self, &tenant, &req.get_ref().id)
            .await
            .map(Response::new)
    }
}
