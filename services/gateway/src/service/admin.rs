//! `AdminService`: tenants as live data, for the platform team.
//!
//! A tenant onboarded here is a record in the `hcp_tenants` bucket, written by compare-and-set;
//! every role follows the bucket ([`hypersaga_tenants::Directory`]), so a change is served by
//! every replica within moments and nothing restarts. Credentials are answered once and kept
//! as digests. Callers are the configured admins (`gateway.admins`), each change audited with
//! the admin's name on the tenant's audit subject. Dead letters are listed, shown, redriven and
//! purged here too ([`dead_letters`]), and what leaked is swept ([`sweep`]).

mod dead_letters;
mod management;
mod onboarding;
mod sweep;

use std::collections::HashMap;

use async_nats::jetstream::kv;
use hypersaga_api::v1 as pb;
use hypersaga_api::v1::admin_service_server::AdminService;
use hypersaga_bus::AuditEvent;
use hypersaga_config::{AdminConfig, TenantAzure, TokenDigest, new_token};
use hypersaga_model::{ClusterPhase, ClusterRecord, TenantId};
use hypersaga_telemetry::TraceParent;
use hypersaga_tenants::{
    AzureAccess, Directory, Source, Suspension, TENANT_RECORD_VERSION, Tenant, TenantRecord,
};
use serde_json::json;
use time::OffsetDateTime;
use tonic::{Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::{info, instrument, warn};

use super::limits::Checks;
use super::{Gateway, bearer_token, internal, tenant_kv};
use crate::convert::ts as timestamp;

/// The `type` of the audit events the admin API publishes.
const EVENT_PREFIX: &str = "tenant.";

/// The admin API. Cheap to clone.
#[derive(Clone)]
pub struct Admin {
    gateway: Gateway,
    store: kv::Store,
    directory: Directory,
}

impl Admin {
    pub async fn new(gateway: Gateway, directory: Directory) -> Result<Self, hypersaga_bus::Error> {
        let store = gateway.bus.tenants().await?;
        Ok(Self {
            gateway,
            store,
            directory,
        })
    }

    /// The admin the caller's token belongs to. A tenant's token is refused: the admin API
    /// is never a tenant's.
    fn admin<T>(&self, req: &Request<T>) -> Result<AdminConfig, Status> {
        let token = bearer_token(req)?;
        if let Some(admin) = self.gateway.config.admin_by_token(token) {
            return Ok(admin.clone());
        }
        if self.directory.by_token(token).is_some() {
            warn!("a tenant's token called the admin API");
            return Err(Status::permission_denied(
                "a tenant's token cannot call the admin API; use an admin token (gateway.admins)",
            ));
        }
        metrics::counter!("hypersaga_gateway_auth_failures_total", "reason" => "unknown admin token")
            .increment(1);
        Err(Status::unauthenticated("unknown admin token"))
    }

    /// Tenant `id` as the directory serves it, NOT_FOUND if there is none.
    fn served(&self, id: &str) -> Result<std::sync::Arc<Tenant>, Status> {
        TenantId::new(id)
            .ok()
            .and_then(|id| self.directory.get(&id))
            .ok_or_else(|| Status::not_found(format!("tenant {id:?} not found")))
    }

    /// The stored record of onboarded tenant `id` and its revision. A configured tenant is
    /// changed only in the configuration.
    async fn load(&self, id: &str) -> Result<(TenantRecord, u64), Status> {
        let tenant_id = tenant_id("id", id)?;
        let entry = self
            .store
            .entry(tenant_id.as_str())
            .await
            .map_err(internal("read tenant"))?;
        match entry {
            Some(e) if e.operation == kv::Operation::Put => {
                let record =
                    TenantRecord::decode(&e.key, &e.value).map_err(internal("decode tenant"))?;
                Ok((record, e.revision))
            }
            _ if self
                .directory
                .get(&tenant_id)
                .is_some_and(|t| t.source == Source::Configured) =>
            {
                Err(configured(&tenant_id))
            }
            _ => Err(Status::not_found(format!("tenant {id:?} not found"))),
        }
    }

    /// Writes `record` over `revision` (compare-and-set); a lost race is ABORTED.
    async fn save(&self, record: &TenantRecord, revision: u64) -> Result<u64, Status> {
        let bytes = record.encode().map_err(internal("encode tenant"))?;
        self.store
            .update(record.id.as_str(), bytes.into(), revision)
            .await
            .map_err(|e| match e.kind() {
                kv::UpdateErrorKind::WrongLastRevision => Status::aborted(format!(
                    "tenant {} changed meanwhile; read it again and retry",
                    record.id
                )),
                _ => internal("write tenant")(e),
            })
    }

    /// Publishes `kind` (`tenant.<kind>`) on the tenant's audit subject, with the admin as
    /// its actor. The change is already written: a failure is logged, not answered.
    async fn audit(
        &self,
        kind: &str,
        tenant: &TenantId,
        actor: &AdminConfig,
        detail: serde_json::Value,
    ) {
        self.audit_event(&format!("{EVENT_PREFIX}{kind}"), tenant, actor, detail)
            .await;
    }

    /// Publishes an event of type `kind` on the tenant's audit subject, as [`Admin::audit`].
    async fn audit_event(
        &self,
        kind: &str,
        tenant: &TenantId,
        actor: &AdminConfig,
        detail: serde_json::Value,
    ) {
        let trace = hypersaga_telemetry::otel::current().unwrap_or_else(TraceParent::new_root);
        let event = AuditEvent {
            v: 1,
            seq: 1,
            kind: kind.to_owned(),
            tenant: tenant.clone(),
            cluster: String::new(),
            operation: format!("admin-{}", uuid::Uuid::new_v4().simple()),
            step: None,
            action: None,
            attempt: None,
            time: OffsetDateTime::now_utc(),
            actor: actor_of(actor),
            trace_id: trace.trace_id().to_owned(),
            detail,
        };
        let subject = self.gateway.bus.subjects().tenant_audit(tenant);
        if let Err(e) = self
            .gateway
            .bus
            .publish_json(&subject, &event.msg_id(), &trace, &event)
            .await
        {
            warn!(tenant = %tenant, kind, error = %e, "could not publish the admin's audit event");
        }
    }

    /// Every cluster record of `tenant`, deleted ones too, by name.
    async fn records(
        &self,
        tenant: &TenantId,
    ) -> Result<std::collections::BTreeMap<String, ClusterRecord>, Status> {
        let records = tenant_kv::read::<ClusterRecord>(
            &self.gateway.bus,
            &self.gateway.clusters,
            tenant,
            "list clusters",
        )
        .await?;
        Ok(records.into_iter().map(|(k, r)| (k, r.value)).collect())
    }

    /// The tenant's clusters that still exist (anything not deleted).
    async fn live_clusters(&self, tenant: &TenantId) -> Result<Vec<String>, Status> {
        Ok(self
            .records(tenant)
            .await?
            .into_iter()
            .filter(|(_, r)| r.phase != ClusterPhase::Deleted)
            .map(|(name, _)| name)
            .collect())
    }

    fn answer(&self, record: &TenantRecord, revision: u64) -> pb::Tenant {
        tenant_to_pb(&Tenant::from_record(record.clone(), revision))
    }
}

fn actor_of(admin: &AdminConfig) -> String {
    format!("admin:{}", admin.name)
}

fn tenant_id(field: &str, id: &str) -> Result<TenantId, Status> {
    TenantId::new(id).map_err(|e| {
        let mut checks = Checks::new();
        checks.push(field, e.to_string());
        checks
            .done()
            .err()
            .unwrap_or_else(|| Status::invalid_argument(e.to_string()))
    })
}

fn configured(id: &TenantId) -> Status {
    Status::failed_precondition(format!(
        "tenant {id} is declared in the configuration (tenants[]); change it there"
    ))
}

/// The Azure ids of a request, each a GUID as Azure gives them.
fn azure_access(azure: Option<&pb::TenantAzure>, checks: &mut Checks) -> AzureAccess {
    let azure = azure.cloned().unwrap_or_default();
    for (field, value) in [
        ("azure.tenant_id", &azure.tenant_id),
        ("azure.subscription_id", &azure.subscription_id),
        ("azure.client_id", &azure.client_id),
    ] {
        if value.is_empty() {
            checks.push(field, "required");
        } else if uuid::Uuid::try_parse(value).is_err() {
            checks.push(
                field,
                format!(
                    "{} is not a GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), as Azure gives it",
                    hypersaga_model::validate::clip(value)
                ),
            );
        }
    }
    AzureAccess {
        tenant_id: azure.tenant_id,
        subscription_id: azure.subscription_id,
        client_id: azure.client_id,
    }
}

fn as_config_azure(a: &AzureAccess) -> TenantAzure {
    TenantAzure {
        tenant_id: a.tenant_id.clone(),
        subscription_id: a.subscription_id.clone(),
        client_id: a.client_id.clone(),
        client_secret: None,
    }
}

/// A tenant as the API shows it: never its credentials, only how many there are.
pub(crate) fn tenant_to_pb(t: &Tenant) -> pb::Tenant {
    let azure = &t.config.azure;
    let mut out = pb::Tenant {
        id: t.id().to_string(),
        azure: Some(pb::TenantAzure {
            tenant_id: azure.tenant_id.clone(),
            subscription_id: azure.subscription_id.clone(),
            client_id: azure.client_id.clone(),
        }),
        state: if t.suspended.is_some() {
            pb::tenant::State::Suspended
        } else {
            pb::tenant::State::Active
        } as i32,
        api_tokens: t.config.tokens.len() as u32,
        audit_credentials: t.audit_credentials.len() as u32,
        audit_user: hypersaga_bus::Role::Audit(Some(t.id().clone())).name(),
        ..Default::default()
    };
    if let Some(s) = &t.suspended {
        out.suspended_reason = s.reason.clone();
        out.suspended_by = s.by.clone();
        out.suspended_at = Some(timestamp(s.at));
    }
    match &t.source {
        Source::Configured => out.source = "configuration".into(),
        Source::Onboarded { record, revision } => {
            out.source = "onboarded".into();
            out.etag = revision.to_string();
            out.created_at = Some(timestamp(record.created_at));
            out.created_by = record.created_by.clone();
            out.updated_at = Some(timestamp(record.updated_at));
            out.updated_by = record.updated_by.clone();
        }
    }
    out
}

/// Issues a credential: the secret (answered once) and its digest (kept).
fn issue(prefix: &str) -> (String, TokenDigest) {
    let secret = new_token(prefix);
    let digest = TokenDigest::of(&secret);
    (secret, digest)
}

#[tonic::async_trait]
impl AdminService for Admin {
    async fn list_management_clusters(
        &self,
        req: Request<pb::ListManagementClustersRequest>,
    ) -> Result<Response<pb::ListManagementClustersResponse>, Status> {
        self.admin(&req)?;
        Ok(Response::new(pb::ListManagementClustersResponse {
            management_clusters: self.management_clusters().await?,
        }))
    }

    async fn cordon_management_cluster(
        &self,
        req: Request<pb::CordonManagementClusterRequest>,
    ) -> Result<Response<pb::ManagementCluster>, Status> {
        let admin = self.admin(&req)?;
        let body = req.into_inner();
        self.cordon(&admin, &body.name, Some(body.reason))
            .await
            .map(Response::new)
    }

    async fn uncordon_management_cluster(
        &self,
        req: Request<pb::UncordonManagementClusterRequest>,
    ) -> Result<Response<pb::ManagementCluster>, Status> {
        let admin = self.admin(&req)?;
        self.cordon(&admin, &req.get_ref().name, None)
            .await
            .map(Response::new)
    }

    async fn list_dead_letters(
        &self,
        req: Request<pb::ListDeadLettersRequest>,
    ) -> Result<Response<pb::ListDeadLettersResponse>, Status> {
        self.admin(&req)?;
        self.dead_letter_page(req.into_inner())
            .await
            .map(Response::new)
    }

    async fn get_dead_letter(
        &self,
        req: Request<pb::GetDeadLetterRequest>,
    ) -> Result<Response<pb::DeadLetter>, Status> {
        self.admin(&req)?;
        self.dead_letter_shown(req.get_ref().sequence)
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(dead_letter = req.get_ref().sequence))]
    async fn redrive_dead_letter(
        &self,
        req: Request<pb::RedriveDeadLetterRequest>,
    ) -> Result<Response<pb::RedriveDeadLetterResponse>, Status> {
        let admin = self.admin(&req)?;
        self.redrive(&admin, req.get_ref().sequence)
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(dead_letter = req.get_ref().sequence, tenant = %req.get_ref().tenant))]
    async fn purge_dead_letters(
        &self,
        req: Request<pb::PurgeDeadLettersRequest>,
    ) -> Result<Response<pb::PurgeDeadLettersResponse>, Status> {
        let admin = self.admin(&req)?;
        self.purge(&admin, req.into_inner())
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(tenant = %req.get_ref().tenant, dry_run = req.get_ref().dry_run))]
    async fn sweep(
        &self,
        req: Request<pb::SweepRequest>,
    ) -> Result<Response<pb::SweepResponse>, Status> {
        let admin = self.admin(&req)?;
        let trace_id = super::operation_trace(&req);
        self.sweep_leftovers(&admin, req.into_inner(), trace_id)
            .await
            .map(Response::new)
    }

    #[instrument(skip_all, fields(tenant = %req.get_ref().id))]
    async fn add_tenant(
        &self,
        req: Request<pb::AddTenantRequest>,
    ) -> Result<Response<pb::AddTenantResponse>, Status> {
        let admin = self.admin(&req)?;
        let body = req.into_inner();
        let mut checks = Checks::new();
        let id = TenantId::new(body.id.clone());
        if let Err(e) = &id {
            checks.push("id", e.to_string());
        }
        let azure = azure_access(body.azure.as_ref(), &mut checks);
        checks.done()?;
        let Ok(id) = id else {
            return Err(Status::invalid_argument("id"));
        };
        if self
            .directory
            .get(&id)
            .is_some_and(|t| t.source == Source::Configured)
        {
            return Err(Status::already_exists(format!(
                "tenant {id} is declared in the configuration"
            )));
        }
        let (api_token, api_digest) = issue(&format!("hs_{id}"));
        let (audit_password, audit_digest) = issue(&format!("audit_{id}"));
        let now = OffsetDateTime::now_utc();
        let record = TenantRecord {
            version: TENANT_RECORD_VERSION,
            id: id.clone(),
            azure,
            api_tokens: vec![api_digest],
            audit_credentials: vec![audit_digest],
            suspended: None,
            created_at: now,
            created_by: actor_of(&admin),
            updated_at: now,
            updated_by: actor_of(&admin),
        };
        let bytes = record.encode().map_err(internal("encode tenant"))?;
        let revision = self
            .store
            .create(id.as_str(), bytes.into())
            .await
            .map_err(|e| match e.kind() {
                kv::CreateErrorKind::AlreadyExists => {
                    Status::already_exists(format!("tenant {id} exists"))
                }
                _ => internal("write tenant")(e),
            })?;
        info!(tenant = %id, admin = %admin.name, "tenant onboarded");
        let onboarding = onboarding::onboarding(
            &self.gateway.config.federation,
            &id,
            &as_config_azure(&record.azure),
        );
        self.audit(
            "added",
            &id,
            &admin,
            json!({"azure": {"tenant_id": record.azure.tenant_id, "subscription_id": record.azure.subscription_id, "client_id": record.azure.client_id}}),
        )
        .await;
        Ok(Response::new(pb::AddTenantResponse {
            tenant: Some(self.answer(&record, revision)),
            api_token,
            audit_password,
            onboarding: Some(onboarding),
        }))
    }

    async fn get_tenant(
        &self,
        req: Request<pb::GetTenantRequest>,
    ) -> Result<Response<pb::Tenant>, Status> {
        self.admin(&req)?;
        let tenant = self.served(&req.get_ref().id)?;
        Ok(Response::new(tenant_to_pb(&tenant)))
    }

    async fn list_tenants(
        &self,
        req: Request<pb::ListTenantsRequest>,
    ) -> Result<Response<pb::ListTenantsResponse>, Status> {
        self.admin(&req)?;
        let tenants = self
            .directory
            .all()
            .iter()
            .map(|t| tenant_to_pb(t))
            .collect();
        Ok(Response::new(pb::ListTenantsResponse { tenants }))
    }

    #[instrument(skip_all, fields(tenant = %req.get_ref().id))]
    async fn update_tenant(
        &self,
        req: Request<pb::UpdateTenantRequest>,
    ) -> Result<Response<pb::UpdateTenantResponse>, Status> {
        let admin = self.admin(&req)?;
        let body = req.into_inner();
        let (mut record, revision) = self.load(&body.id).await?;
        if !body.etag.is_empty() && body.etag != revision.to_string() {
            return Err(Status::aborted(format!(
                "etag {:?} is stale: tenant {} is at {revision}",
                body.etag, record.id
            )));
        }
        let paths: Vec<String> = match (&body.update_mask, &body.azure) {
            (Some(mask), _) => mask.paths.clone(),
            (None, Some(_)) => vec!["azure".into()],
            (None, None) => Vec::new(),
        };
        let mut checks = Checks::new();
        let given = azure_access(body.azure.as_ref(), &mut Checks::new());
        let before = record.azure.clone();
        for path in &paths {
            match path.as_str() {
                "azure" => {
                    let all = azure_access(body.azure.as_ref(), &mut checks);
                    record.azure = all;
                }
                "azure.tenant_id" => record.azure.tenant_id = given.tenant_id.clone(),
                "azure.subscription_id" => record.azure.subscription_id = given.subscription_id.clone(),
                "azure.client_id" => record.azure.client_id = given.client_id.clone(),
                other => checks.push(
                    "update_mask",
                    format!("{} cannot be changed: azure.tenant_id, azure.subscription_id and azure.client_id can", hypersaga_model::validate::clip(other)),
                ),
            }
        }
        // Check the result, with the request's field paths.
        let mut fields = Checks::new();
        azure_access(
            Some(&pb::TenantAzure {
                tenant_id: record.azure.tenant_id.clone(),
                subscription_id: record.azure.subscription_id.clone(),
                client_id: record.azure.client_id.clone(),
            }),
            &mut fields,
        );
        checks.done()?;
        fields.done()?;
        let mut answer = pb::UpdateTenantResponse::default();
        if body.issue_api_token {
            let (token, digest) = issue(&format!("hs_{}", record.id));
            record.api_tokens.push(digest);
            answer.api_token = token;
        }
        if body.issue_audit_credential {
            let (password, digest) = issue(&format!("audit_{}", record.id));
            record.audit_credentials.push(digest);
            answer.audit_password = password;
        }
        if body.revoke_older {
            keep_newest(&mut record.api_tokens);
            keep_newest(&mut record.audit_credentials);
        }
        record.updated_at = OffsetDateTime::now_utc();
        record.updated_by = actor_of(&admin);
        let revision = self.save(&record, revision).await?;
        // Asked about the Azure side (or changed it): what the tenant must have there.
        if record.azure != before || paths.iter().any(|p| p.starts_with("azure")) {
            answer.onboarding = Some(onboarding::onboarding(
                &self.gateway.config.federation,
                &record.id,
                &as_config_azure(&record.azure),
            ));
        }
        self.audit(
            "updated",
            &record.id,
            &admin,
            json!({
                "azure_changed": record.azure != before,
                "api_token_issued": body.issue_api_token,
                "audit_credential_issued": body.issue_audit_credential,
                "older_revoked": body.revoke_older,
            }),
        )
        .await;
        answer.tenant = Some(self.answer(&record, revision));
        Ok(Response::new(answer))
    }

    #[instrument(skip_all, fields(tenant = %req.get_ref().id))]
    async fn suspend_tenant(
        &self,
        req: Request<pb::SuspendTenantRequest>,
    ) -> Result<Response<pb::Tenant>, Status> {
        let admin = self.admin(&req)?;
        let body = req.into_inner();
        if body.reason.trim().is_empty() {
            let mut checks = Checks::new();
            checks.push(
                "reason",
                "required: the tenant's refused callers are shown it",
            );
            checks.done()?;
        }
        let (mut record, revision) = self.load(&body.id).await?;
        let now = OffsetDateTime::now_utc();
        record.suspended = Some(Suspension {
            reason: body.reason.clone(),
            by: actor_of(&admin),
            at: now,
        });
        record.updated_at = now;
        record.updated_by = actor_of(&admin);
        let revision = self.save(&record, revision).await?;
        info!(tenant = %record.id, admin = %admin.name, reason = %body.reason, "tenant suspended");
        self.audit(
            "suspended",
            &record.id,
            &admin,
            json!({"reason": body.reason}),
        )
        .await;
        Ok(Response::new(self.answer(&record, revision)))
    }

    #[instrument(skip_all, fields(tenant = %req.get_ref().id))]
    async fn resume_tenant(
        &self,
        req: Request<pb::ResumeTenantRequest>,
    ) -> Result<Response<pb::Tenant>, Status> {
        let admin = self.admin(&req)?;
        let (mut record, revision) = self.load(&req.get_ref().id).await?;
        if record.suspended.take().is_none() {
            return Ok(Response::new(self.answer(&record, revision)));
        }
        record.updated_at = OffsetDateTime::now_utc();
        record.updated_by = actor_of(&admin);
        let revision = self.save(&record, revision).await?;
        info!(tenant = %record.id, admin = %admin.name, "tenant resumed");
        self.audit("resumed", &record.id, &admin, json!({})).await;
        Ok(Response::new(self.answer(&record, revision)))
    }

    #[instrument(skip_all, fields(tenant = %req.get_ref().id))]
    async fn remove_tenant(
        &self,
        req: Request<pb::RemoveTenantRequest>,
    ) -> Result<Response<pb::RemoveTenantResponse>, Status> {
        let admin = self.admin(&req)?;
        let (record, revision) = self.load(&req.get_ref().id).await?;
        let clusters = self.live_clusters(&record.id).await?;
        if !clusters.is_empty() {
            let mut shown: Vec<_> = clusters.iter().take(5).cloned().collect();
            if clusters.len() > shown.len() {
                shown.push(format!("and {} more", clusters.len() - shown.len()));
            }
            return Err(Status::with_error_details(
                tonic::Code::FailedPrecondition,
                format!(
                    "tenant {} still has {} cluster(s) ({}); delete them first",
                    record.id,
                    clusters.len(),
                    shown.join(", ")
                ),
                ErrorDetails::with_error_info(
                    "TenantHasClusters",
                    super::operator::ERROR_DOMAIN,
                    HashMap::from([("clusters".to_owned(), clusters.len().to_string())]),
                ),
            ));
        }
        self.store
            .delete_expect_revision(record.id.as_str(), Some(revision))
            .await
            .map_err(|e| match e.kind() {
                kv::DeleteErrorKind::WrongLastRevision => {
                    Status::aborted(format!("tenant {} changed meanwhile; retry", record.id))
                }
                _ => internal("remove tenant")(e),
            })?;
        info!(tenant = %record.id, admin = %admin.name, "tenant removed");
        self.audit("removed", &record.id, &admin, json!({})).await;
        Ok(Response::new(pb::RemoveTenantResponse {}))
    }
}

/// Keeps the newest (last issued) credential only.
fn keep_newest(digests: &mut Vec<TokenDigest>) {
    if digests.len() > 1 {
        digests.drain(..digests.len() - 1);
    }
}
