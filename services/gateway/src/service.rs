//! `ClusterService` handlers.

mod operator;

use std::collections::BTreeMap;
use std::pin::Pin;

use async_nats::jetstream::kv;
use futures::{Stream, StreamExt, TryStreamExt};
use hypersaga_api::v1 as pb;
use hypersaga_api::v1::cluster_service_server::ClusterService;
use hypersaga_bus::subjects::{cluster_key, saga_key};
use hypersaga_bus::{Bus, ENVELOPE_VERSION, OperatorAction, SagaWake, StepContext};
use hypersaga_config::{Config, TenantConfig};
use hypersaga_model::names::infra_id;
use hypersaga_model::record::{CLUSTER_RECORD_VERSION, OperationKind};
use hypersaga_model::{ClusterPhase, ClusterRecord, Names, validate_create, validate_subscription};
use hypersaga_saga::{NewSaga, RetryPolicy, Saga, Timing, create_plan};
use hypersaga_telemetry::TraceParent;
use time::{Duration, OffsetDateTime};
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::{info, instrument, warn};

use self::operator::CallRequest;
use crate::convert::{cluster_to_pb, operation_to_pb, spec_from_pb};

/// The gRPC service. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    config: Config,
    bus: Bus,
    clusters: kv::Store,
    sagas: kv::Store,
}

impl Gateway {
    pub async fn new(config: Config, bus: Bus) -> Result<Self, hypersaga_bus::Error> {
        let clusters = bus.clusters().await?;
        let sagas = bus.sagas().await?;
        Ok(Self {
            config,
            bus,
            clusters,
            sagas,
        })
    }

    /// The tenant of the caller's bearer token; a missing or unknown token is UNAUTHENTICATED.
    fn tenant<T>(&self, req: &Request<T>) -> Result<TenantConfig, Status> {
        let header = req.metadata().get("authorization").ok_or_else(|| {
            Status::unauthenticated("missing `authorization: Bearer <token>` metadata")
        })?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or_else(|| {
                Status::unauthenticated("authorization metadata must be `Bearer <token>`")
            })?;
        self.config
            .tenant_by_token(token.trim())
            .cloned()
            .ok_or_else(|| Status::unauthenticated("unknown token"))
    }

    fn retry_policy(&self) -> RetryPolicy {
        let c = &self.config.coordinator;
        RetryPolicy {
            max_attempts: c.max_attempts,
            base_delay_ms: c.base_delay_ms,
            max_delay_ms: c.max_delay_ms,
        }
    }

    fn timing(&self) -> Timing {
        let c = &self.config.coordinator;
        Timing {
            lease_ms: c.lease_ms,
            start_lease_ms: c.start_lease_ms,
            step_timeout_s: c.step_timeout_s,
            recheck_min_ms: c.recheck_min_ms,
            recheck_max_ms: c.recheck_max_ms,
        }
    }

    async fn load_cluster(
        &self,
        tenant: &TenantConfig,
        name: &str,
    ) -> Result<Option<(ClusterRecord, u64)>, Status> {
        let key = cluster_key(&tenant.id, name);
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

    async fn load_saga(&self, tenant: &TenantConfig, id: &str) -> Result<Option<Saga>, Status> {
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

    /// Writes the saga (if absent) and wakes the coordinator. Both are idempotent, so a retried
    /// request repairs a gateway crash between writing the cluster record and this.
    async fn start(&self, saga: &Saga) -> Result<(), Status> {
        let key = saga_key(&saga.tenant, &saga.id);
        let bytes = serde_json::to_vec(saga).map_err(internal("encode saga"))?;
        if let Err(e) = self.sagas.create(&key, bytes.into()).await
            && e.kind() != kv::CreateErrorKind::AlreadyExists
        {
            return Err(internal("write saga")(e));
        }
        let wake = SagaWake {
            v: ENVELOPE_VERSION,
            tenant: saga.tenant.clone(),
            saga_id: saga.id.clone(),
        };
        let trace = TraceParent::with_trace_id(&saga.trace_id);
        self.bus
            .publish_json(
                &self.bus.subjects().saga_start(&saga.tenant),
                &format!("{}:wake", saga.id),
                &trace,
                &wake,
            )
            .await
            .map_err(internal("wake coordinator"))?;
        Ok(())
    }

    fn new_saga(
        &self,
        rec: &ClusterRecord,
        kind: OperationKind,
        op_id: String,
        request_id: Option<String>,
        outputs: BTreeMap<String, hypersaga_bus::Outputs>,
    ) -> Saga {
        let names = Names::new(&rec.tenant, &rec.name, &rec.infra_id, &rec.spec.base_domain);
        let timeout = match kind {
            OperationKind::Create => self.config.coordinator.create_timeout_s,
            OperationKind::Delete => self.config.coordinator.delete_timeout_s,
        };
        Saga::new(
            NewSaga {
                id: op_id,
                tenant: rec.tenant.clone(),
                cluster: rec.name.clone(),
                kind,
                plan: create_plan(&rec.spec),
                context: StepContext {
                    cluster_uid: rec.uid.clone(),
                    names,
                    spec: rec.spec.clone(),
                    outputs,
                },
                retry: self.retry_policy(),
                timing: self.timing(),
                timeout: Duration::seconds(timeout as i64),
                request_id,
                actor: format!("tenant:{}", rec.tenant),
                trace_id: TraceParent::new_root().trace_id(),
            },
            OffsetDateTime::now_utc(),
        )
    }
}

/// KV keys accept `[-/_=.a-zA-Z0-9]`; anything else cannot name a stored object.
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
        let req = req.into_inner();
        let span = tracing::Span::current();
        span.record("tenant", tenant.id.as_str());
        span.record("cluster", req.name.as_str());
        let spec = req.spec.map(spec_from_pb);
        let mut violations = validate_create(&req.name, spec.as_ref());
        if let Some(spec) = &spec {
            violations.extend(validate_subscription(spec, &tenant.azure.subscription_id));
        }
        let spec = match (spec, violations.is_empty()) {
            (Some(spec), true) => spec,
            _ => {
                let details = ErrorDetails::with_bad_request(
                    violations
                        .iter()
                        .map(|v| {
                            tonic_types::FieldViolation::new(v.field.clone(), v.description.clone())
                        })
                        .collect::<Vec<_>>(),
                );
                let summary = violations
                    .iter()
                    .map(|v| format!("{}: {}", v.field, v.description))
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(Status::with_error_details(
                    Code::InvalidArgument,
                    format!("invalid request: {summary}"),
                    details,
                ));
            }
        };
        let request_id = Some(req.request_id.trim().to_owned()).filter(|r| !r.is_empty());
        let key = cluster_key(&tenant.id, &req.name);
        let existing = self.load_cluster(&tenant, &req.name).await?;
        if let Some((rec, _)) = &existing
            && rec.phase != ClusterPhase::Deleted
        {
            if request_id.is_some()
                && rec.create_request_id == request_id
                && rec.operation.kind == OperationKind::Create
            {
                // A retried request: the same operation, and repair a half-finished accept.
                let saga = match self.load_saga(&tenant, &rec.operation.id).await? {
                    Some(s) => s,
                    None => self.new_saga(
                        rec,
                        OperationKind::Create,
                        rec.operation.id.clone(),
                        request_id.clone(),
                        BTreeMap::new(),
                    ),
                };
                self.start(&saga).await?;
                return Ok(Response::new(operation_to_pb(&saga.view())));
            }
            return Err(Status::already_exists(format!(
                "cluster {:?} already exists (phase {:?}); delete it first or choose another name",
                req.name, rec.phase
            )));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let now = OffsetDateTime::now_utc();
        let op_id = format!("op-{}", uuid::Uuid::new_v4().simple());
        let mut rec = ClusterRecord {
            v: CLUSTER_RECORD_VERSION,
            tenant: tenant.id.clone(),
            name: req.name.clone(),
            infra_id: infra_id(&req.name, &uid),
            uid,
            spec,
            created_at: now,
            create_request_id: request_id.clone(),
            delete_request_id: None,
            phase: ClusterPhase::Accepted,
            message: "accepted".into(),
            error: None,
            operation: placeholder_view(&op_id, &req.name),
            resources: BTreeMap::new(),
            saga_seq: 0,
            management_cluster: hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER.to_owned(),
        };
        let saga = self.new_saga(
            &rec,
            OperationKind::Create,
            op_id.clone(),
            request_id,
            BTreeMap::new(),
        );
        rec.operation = saga.view();
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
            if let Some((other, _)) = self.load_cluster(&tenant, &req.name).await?
                && rec.create_request_id.is_some()
                && other.create_request_id == rec.create_request_id
            {
                return Ok(Response::new(operation_to_pb(&other.operation)));
            }
            return Err(Status::already_exists(format!(
                "cluster {:?} was created concurrently",
                req.name
            )));
        }
        self.start(&saga).await?;
        tracing::Span::current().record("operation", op_id.as_str());
        info!(infra_id = %rec.infra_id, "cluster accepted");
        Ok(Response::new(operation_to_pb(&saga.view())))
    }

    async fn get_cluster(
        &self,
        req: Request<pb::GetClusterRequest>,
    ) -> Result<Response<pb::Cluster>, Status> {
        let tenant = self.tenant(&req)?;
        let name = req.into_inner().name;
        match self.load_cluster(&tenant, &name).await? {
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
        let prefix = format!("{}.", tenant.id);
        // A key written while the listing runs can be delivered twice: a set de-duplicates.
        let keys: std::collections::BTreeSet<String> = self
            .clusters
            .keys()
            .await
            .map_err(internal("list clusters"))?
            .try_collect()
            .await
            .map_err(internal("list clusters"))?;
        let mut clusters = Vec::new();
        for key in keys.into_iter().filter(|k| k.starts_with(&prefix)) {
            if let Some((rec, rev)) = self.load_cluster(&tenant, &key[prefix.len()..]).await?
                && rec.phase != ClusterPhase::Deleted
            {
                clusters.push(cluster_to_pb(&rec, rev));
            }
        }
        clusters.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Response::new(pb::ListClustersResponse { clusters }))
    }

    #[instrument(skip_all, fields(tenant, cluster))]
    async fn delete_cluster(
        &self,
        req: Request<pb::DeleteClusterRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let req = req.into_inner();
        tracing::Span::current()
            .record("tenant", tenant.id.as_str())
            .record("cluster", req.name.as_str());
        let request_id = Some(req.request_id.trim().to_owned()).filter(|r| !r.is_empty());
        for _ in 0..8 {
            let Some((mut rec, revision)) = self.load_cluster(&tenant, &req.name).await? else {
                return Err(not_found(&req.name));
            };
            if rec.phase == ClusterPhase::Deleted {
                // A retry of the delete that finished answers with that delete.
                if request_id.is_some() && rec.delete_request_id == request_id {
                    return Ok(Response::new(operation_to_pb(&rec.operation)));
                }
                return Err(not_found(&req.name));
            }
            if rec.operation.kind == OperationKind::Delete && !rec.operation.state.is_terminal() {
                // Already being deleted: the same operation (idempotent), and repair an accept
                // that wrote the record but not the saga (a crash or a timed-out write).
                if self.load_saga(&tenant, &rec.operation.id).await?.is_none() {
                    let saga = self.new_saga(
                        &rec,
                        OperationKind::Delete,
                        rec.operation.id.clone(),
                        rec.delete_request_id.clone(),
                        BTreeMap::new(),
                    );
                    self.start(&saga).await?;
                }
                return Ok(Response::new(operation_to_pb(&rec.operation)));
            }
            if !rec.operation.state.is_terminal() {
                return Err(Status::failed_precondition(format!(
                    "operation {} ({:?}) is still running on cluster {:?}; delete it once that finishes",
                    rec.operation.id, rec.operation.kind, req.name
                )));
            }
            // Undo handlers derive names deterministically; the create's outputs are carried
            // over so the record keeps showing what is kept (identities, OIDC issuer).
            let outputs = match self.load_saga(&tenant, &rec.operation.id).await? {
                Some(s) => s.context.outputs,
                None => BTreeMap::new(),
            };
            let op_id = format!("op-{}", uuid::Uuid::new_v4().simple());
            let saga = self.new_saga(
                &rec,
                OperationKind::Delete,
                op_id,
                request_id.clone(),
                outputs,
            );
            rec.operation = saga.view();
            rec.phase = ClusterPhase::Deleting;
            rec.message = "deleting".into();
            rec.error = None;
            rec.delete_request_id = request_id.clone();
            rec.saga_seq = 0;
            let bytes = serde_json::to_vec(&rec).map_err(internal("encode cluster"))?;
            if self
                .clusters
                .update(cluster_key(&tenant.id, &req.name), bytes.into(), revision)
                .await
                .is_err()
            {
                continue;
            }
            self.start(&saga).await?;
            info!(operation = %saga.id, "cluster deletion accepted");
            return Ok(Response::new(operation_to_pb(&saga.view())));
        }
        Err(Status::aborted("the cluster kept changing; retry"))
    }

    type WatchClusterStream = WatchStream;

    async fn watch_cluster(
        &self,
        req: Request<pb::WatchClusterRequest>,
    ) -> Result<Response<Self::WatchClusterStream>, Status> {
        let tenant = self.tenant(&req)?;
        let name = req.into_inner().name;
        if self.load_cluster(&tenant, &name).await?.is_none() {
            return Err(not_found(&name));
        }
        let watch = self
            .clusters
            .watch_with_history(cluster_key(&tenant.id, &name))
            .await
            .map_err(internal("watch cluster"))?;
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let mut watch = watch;
            // Every change until a terminal phase. A client that goes away ends it at once,
            // even while the cluster is quiet; a watch that breaks says so.
            loop {
                let entry = tokio::select! {
                    _ = tx.closed() => return,
                    e = watch.next() => e,
                };
                let entry = match entry {
                    Some(Ok(e)) => e,
                    Some(Err(e)) => {
                        let _ = tx
                            .send(Err(Status::unavailable(format!(
                                "watch interrupted: {e}; watch again"
                            ))))
                            .await;
                        return;
                    }
                    None => {
                        let _ = tx
                            .send(Err(Status::unavailable("watch ended early; watch again")))
                            .await;
                        return;
                    }
                };
                if entry.operation != kv::Operation::Put {
                    return;
                }
                let Ok(rec) = serde_json::from_slice::<ClusterRecord>(&entry.value) else {
                    continue;
                };
                let terminal = rec.phase.is_terminal() && rec.operation.state.is_terminal();
                if tx
                    .send(Ok(cluster_to_pb(&rec, entry.revision)))
                    .await
                    .is_err()
                    || terminal
                {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn get_operation(
        &self,
        req: Request<pb::GetOperationRequest>,
    ) -> Result<Response<pb::Operation>, Status> {
        let tenant = self.tenant(&req)?;
        let id = req.into_inner().id;
        match self.load_saga(&tenant, &id).await? {
            Some(saga) => Ok(Response::new(operation_to_pb(&saga.view()))),
            None => Err(Status::not_found(format!("operation {id:?} not found"))),
        }
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
}

/// Stands in for the operation until the saga (which needs the record's names) is built.
fn placeholder_view(op_id: &str, cluster: &str) -> hypersaga_model::record::OperationView {
    let now = OffsetDateTime::now_utc();
    hypersaga_model::record::OperationView {
        id: op_id.to_owned(),
        cluster: cluster.to_owned(),
        kind: OperationKind::Create,
        state: hypersaga_model::record::OperationState::Running,
        started_at: now,
        ended_at: None,
        deadline: now,
        error: None,
        steps: Vec::new(),
        request_id: None,
        pause: None,
    }
}
