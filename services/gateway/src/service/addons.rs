//! Add-ons through the gateway: the catalog API (`AddonService`), the references of a
//! cluster's spec resolved against the catalog, and the day-2 calls that put an add-on on a
//! cluster, move it to another version or take it off (each one operation, accepted as every
//! day-2 change is: `day2::accept_change`).
//!
//! A tenant's token reads its own add-ons and the platform's, and writes its own; an
//! administrator's token (`gateway.admins`) writes the platform's, offered to every tenant.

use std::collections::HashMap;

use hypersaga_addons::{Addon, AddonRecord, CatalogError, Owner, Put, validate};
use hypersaga_api::v1 as pb;
use hypersaga_api::v1::addon_service_server::AddonService;
use hypersaga_bus::AuditEvent;
use hypersaga_config::{AdminConfig, TenantConfig};
use hypersaga_model::addon::{check_addon_name, check_addon_version, check_cluster_addons};
use hypersaga_model::record::OperationKind;
use hypersaga_model::validate::{FieldViolation, clip};
use hypersaga_model::{AddonRef, AddonScope, ClusterRecord, ClusterSpec, TenantId};
use hypersaga_telemetry::TraceParent;
use serde_json::json;
use time::OffsetDateTime;
use tonic::{Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::{info, instrument, warn};

use super::limits::Checks;
use super::operator::ERROR_DOMAIN;
use super::{Gateway, bearer_token, day2, internal, tenant_kv};
use crate::convert::{scope_from_pb, scope_to_pb, ts};

/// Who calls the catalog.
enum Caller {
    Tenant(TenantConfig),
    Admin(AdminConfig),
}

impl Caller {
    fn actor(&self) -> String {
        match self {
            Self::Tenant(t) => format!("tenant:{}", t.id),
            Self::Admin(a) => format!("admin:{}", a.name),
        }
    }

    /// The catalog a write of `scope` (unspecified: the caller's own) goes to, if the caller
    /// may write it.
    fn writable(&self, scope: Option<AddonScope>) -> Result<Owner, Status> {
        match (self, scope) {
            (Self::Tenant(t), None | Some(AddonScope::Tenant)) => Ok(Owner::Tenant(t.id.clone())),
            (Self::Tenant(_), Some(AddonScope::Platform)) => Err(Status::permission_denied(
                "the platform's add-ons are written with an administrator's token (gateway.admins)",
            )),
            (Self::Admin(_), None | Some(AddonScope::Platform)) => Ok(Owner::Platform),
            (Self::Admin(_), Some(AddonScope::Tenant)) => Err(Status::permission_denied(
                "an administrator writes the platform's add-ons; a tenant's are its own",
            )),
        }
    }

    /// The catalogs a read of `scope` looks in, in order (unspecified: the tenant's, then
    /// the platform's).
    fn readable(&self, scope: Option<AddonScope>) -> Vec<Owner> {
        match (self, scope) {
            (Self::Tenant(t), None) => vec![Owner::Tenant(t.id.clone()), Owner::Platform],
            (Self::Tenant(t), Some(AddonScope::Tenant)) => vec![Owner::Tenant(t.id.clone())],
            (_, Some(AddonScope::Platform)) | (Self::Admin(_), _) => vec![Owner::Platform],
        }
    }
}

/// The catalog API. Cheap to clone.
#[derive(Clone)]
pub struct Addons {
    gateway: Gateway,
}

impl Addons {
    pub fn new(gateway: Gateway) -> Self {
        Self { gateway }
    }

    /// The caller: an administrator by one of `gateway.admins`' tokens, else a tenant as
    /// every other call authenticates one.
    fn caller<T>(&self, req: &Request<T>) -> Result<Caller, Status> {
        let token = bearer_token(req)?;
        if let Some(admin) = self.gateway.config.admin_by_token(token) {
            return Ok(Caller::Admin(admin.clone()));
        }
        self.gateway.tenant(req).map(Caller::Tenant)
    }

    /// Publishes a catalog change of a tenant's add-on on the tenant's own audit subject.
    async fn audit(&self, kind: &str, owner: &Owner, actor: String, detail: serde_json::Value) {
        let Owner::Tenant(tenant) = owner else {
            // The platform's catalog has no tenant's audit stream; the log keeps it.
            info!(kind, actor, %detail, "platform add-on catalog changed");
            return;
        };
        let trace = hypersaga_telemetry::otel::current().unwrap_or_else(TraceParent::new_root);
        let event = AuditEvent {
            v: 1,
            seq: 1,
            kind: kind.to_owned(),
            tenant: tenant.clone(),
            cluster: String::new(),
            operation: format!("addon-{}", uuid::Uuid::new_v4().simple()),
            step: None,
            action: None,
            attempt: None,
            time: OffsetDateTime::now_utc(),
            actor,
            trace_id: trace.trace_id().to_owned(),
            detail,
        };
        let bus = &self.gateway.bus;
        let subject = bus.subjects().tenant_audit(tenant);
        if let Err(e) = bus
            .publish_json(&subject, &event.msg_id(), &trace, &event)
            .await
        {
            warn!(tenant = %tenant, kind, error = %e, "could not publish the add-on audit event");
        }
    }
}

#[tonic::async_trait]
impl AddonService for Addons {
    #[instrument(skip_all, fields(addon))]
    async fn put_addon(
        &self,
        req: Request<pb::PutAddonRequest>,
    ) -> Result<Response<pb::Addon>, Status> {
        let caller = self.caller(&req)?;
        let req = req.into_inner();
        let owner = caller.writable(scope_from_pb(req.scope))?;
        let addon = Addon::parse(&req.document).map_err(|e| {
            let field = if e.field.is_empty() {
                "document".to_owned()
            } else {
                e.field
            };
            invalid(vec![FieldViolation::new(field, e.message)])
        })?;
        let violations = validate(&addon);
        if !violations.is_empty() {
            return Err(invalid(violations));
        }
        tracing::Span::current().record("addon", addon.name.as_str());
        let record = AddonRecord::new(owner.scope(), addon, caller.actor());
        let put = self
            .gateway
            .catalog
            .put(&owner, record)
            .await
            .map_err(catalog_status)?;
        let stored = match put {
            Put::Created(rec) => {
                let detail = json!({"addon": rec.addon.name, "version": rec.addon.version,
                    "scope": rec.scope.as_str(), "digest": rec.digest});
                self.audit("addon.put", &owner, caller.actor(), detail)
                    .await;
                info!(version = %rec.addon.version, "add-on version put");
                rec
            }
            Put::Unchanged(rec) => rec,
        };
        Ok(Response::new(addon_to_pb(&stored, true)))
    }

    async fn get_addon(
        &self,
        req: Request<pb::GetAddonRequest>,
    ) -> Result<Response<pb::Addon>, Status> {
        let caller = self.caller(&req)?;
        let req = req.into_inner();
        check_name_and_version(&req.name, &req.version)?;
        let owners = caller.readable(scope_from_pb(req.scope));
        let found = self
            .gateway
            .find_addon(&owners, &req.name, &req.version)
            .await?;
        found
            .map(|rec| Response::new(addon_to_pb(&rec, true)))
            .ok_or_else(|| Status::not_found(not_found_message(&req.name, &req.version)))
    }

    async fn list_addons(
        &self,
        req: Request<pb::ListAddonsRequest>,
    ) -> Result<Response<pb::ListAddonsResponse>, Status> {
        let caller = self.caller(&req)?;
        let req = req.into_inner();
        let mut v = Vec::new();
        if !req.name.is_empty() {
            check_addon_name(&mut v, "name", &req.name);
        }
        if !v.is_empty() {
            return Err(invalid(v));
        }
        let name = Some(req.name.as_str()).filter(|n| !n.is_empty());
        let mut addons = Vec::new();
        for owner in caller.readable(scope_from_pb(req.scope)) {
            let records = self.gateway.addon_versions(&owner, name).await?;
            addons.extend(records.iter().map(|r| addon_to_pb(r, false)));
        }
        Ok(Response::new(pb::ListAddonsResponse { addons }))
    }

    #[instrument(skip_all, fields(addon))]
    async fn delete_addon(
        &self,
        req: Request<pb::DeleteAddonRequest>,
    ) -> Result<Response<pb::DeleteAddonResponse>, Status> {
        let caller = self.caller(&req)?;
        let req = req.into_inner();
        let owner = caller.writable(scope_from_pb(req.scope))?;
        check_name_and_version(&req.name, &req.version)?;
        tracing::Span::current().record("addon", req.name.as_str());
        let versions: Vec<String> = self
            .gateway
            .addon_versions(&owner, Some(&req.name))
            .await?
            .into_iter()
            .map(|r| r.addon.version)
            .filter(|v| req.version.is_empty() || *v == req.version)
            .collect();
        if versions.is_empty() {
            return Err(Status::not_found(not_found_message(
                &req.name,
                &req.version,
            )));
        }
        let users = self
            .gateway
            .clusters_running(&owner, &req.name, &versions)
            .await?;
        if !users.is_empty() {
            return Err(in_use(&req.name, &users));
        }
        for version in &versions {
            self.gateway
                .catalog
                .delete(&owner, &req.name, version)
                .await
                .map_err(catalog_status)?;
        }
        let detail =
            json!({"addon": req.name, "versions": versions, "scope": owner.scope().as_str()});
        self.audit("addon.deleted", &owner, caller.actor(), detail)
            .await;
        Ok(Response::new(pb::DeleteAddonResponse { versions }))
    }
}

impl Gateway {
    /// Every version of `owner`'s add-on `name` (or of all its add-ons), newest first within
    /// a name, names in order.
    pub(super) async fn addon_versions(
        &self,
        owner: &Owner,
        name: Option<&str>,
    ) -> Result<Vec<AddonRecord>, Status> {
        let prefix = match name {
            Some(n) => format!("{}.{n}.", owner.token()),
            None => format!("{}.", owner.token()),
        };
        let records = tenant_kv::read_under::<AddonRecord>(
            &self.bus,
            self.catalog.store(),
            &prefix,
            ">",
            "list add-ons",
        )
        .await?;
        let mut out: Vec<(u64, AddonRecord)> = records
            .into_values()
            .map(|r| (r.revision, r.value))
            .collect();
        out.sort_by(|(ra, a), (rb, b)| a.addon.name.cmp(&b.addon.name).then(rb.cmp(ra)));
        Ok(out.into_iter().map(|(_, r)| r).collect())
    }

    /// `name` at `version` (empty: the newest) in the first of `owners` that has it.
    pub(super) async fn find_addon(
        &self,
        owners: &[Owner],
        name: &str,
        version: &str,
    ) -> Result<Option<AddonRecord>, Status> {
        for owner in owners {
            let found = if version.is_empty() {
                self.addon_versions(owner, Some(name))
                    .await?
                    .into_iter()
                    .next()
            } else {
                self.catalog
                    .get(owner, name, version)
                    .await
                    .map_err(catalog_status)?
            };
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The add-ons a request names (`at` is where: `spec.addons`), each resolved to a version
    /// in the tenant's catalog or the platform's; every violation at once.
    pub(super) async fn resolve_addons(
        &self,
        tenant: &TenantId,
        at: &str,
        requested: &[pb::ClusterAddon],
    ) -> Result<(Vec<AddonRef>, Vec<FieldViolation>), Status> {
        let wanted: Vec<AddonRef> = requested
            .iter()
            .map(|a| {
                AddonRef::new(
                    a.name.trim(),
                    a.version.trim(),
                    scope_from_pb(a.scope).unwrap_or_default(),
                )
            })
            .collect();
        let mut v = Vec::new();
        check_cluster_addons(&mut v, at, &wanted);
        if !v.is_empty() {
            return Ok((Vec::new(), v));
        }
        let mut resolved = Vec::new();
        for (i, (want, raw)) in wanted.iter().zip(requested).enumerate() {
            let owners = match scope_from_pb(raw.scope) {
                Some(scope) => vec![Owner::of(scope, tenant)],
                None => vec![Owner::Tenant(tenant.clone()), Owner::Platform],
            };
            match self.find_addon(&owners, &want.name, &want.version).await? {
                Some(rec) => {
                    resolved.push(AddonRef::new(rec.addon.name, rec.addon.version, rec.scope))
                }
                None => v.push(FieldViolation::new(
                    format!("{at}[{i}].name"),
                    format!(
                        "{}; put it first (hypersaga addon put)",
                        not_found_message(&want.name, &want.version)
                    ),
                )),
            }
        }
        Ok((resolved, v))
    }

    /// One add-on a request names at `at` (`addon`), resolved as [`Gateway::resolve_addons`]
    /// resolves a list; its violations named at `at` itself.
    pub(super) async fn resolve_addon(
        &self,
        tenant: &TenantId,
        at: &str,
        requested: &pb::ClusterAddon,
    ) -> Result<Result<AddonRef, Vec<FieldViolation>>, Status> {
        let (mut resolved, violations) = self
            .resolve_addons(tenant, at, std::slice::from_ref(requested))
            .await?;
        if violations.is_empty() && !resolved.is_empty() {
            return Ok(Ok(resolved.remove(0)));
        }
        let list_item = format!("{at}[0]");
        Ok(Err(violations
            .into_iter()
            .map(|f| FieldViolation::new(f.field.replacen(&list_item, at, 1), f.description))
            .collect()))
    }

    /// The clusters (`tenant/name`) that run one of `versions` of `owner`'s add-on `name`.
    async fn clusters_running(
        &self,
        owner: &Owner,
        name: &str,
        versions: &[String],
    ) -> Result<Vec<String>, Status> {
        let tenants = match owner {
            Owner::Tenant(t) => vec![t.clone()],
            Owner::Platform => self.tenants.ids(),
        };
        let mut users = Vec::new();
        for tenant in tenants {
            let records = tenant_kv::read::<ClusterRecord>(
                &self.bus,
                &self.clusters,
                &tenant,
                "list clusters",
            )
            .await?;
            users.extend(
                records
                    .values()
                    .map(|r| &r.value)
                    .filter(|c| c.phase != hypersaga_model::ClusterPhase::Deleted)
                    .filter(|c| {
                        c.spec.addons.iter().any(|a| {
                            a.name == name
                                && a.scope == owner.scope()
                                && versions.contains(&a.version)
                        })
                    })
                    .map(|c| format!("{}/{}", c.tenant, c.name)),
            );
        }
        Ok(users)
    }

    /// `SetClusterAddon`: the add-on put on the cluster, or moved to the version asked for.
    pub(super) async fn set_cluster_addon(
        &self,
        tenant: &TenantConfig,
        trace_id: String,
        req: pb::SetClusterAddonRequest,
    ) -> Result<pb::Operation, Status> {
        let request_id = self.day2_ids(tenant, ("cluster", &req.cluster), &req.request_id)?;
        let Some(raw) = req.addon else {
            return Err(invalid(vec![FieldViolation::new("addon", "is required")]));
        };
        let want = match self.resolve_addon(&tenant.id, "addon", &raw).await? {
            Ok(want) => want,
            Err(violations) => return Err(invalid(violations)),
        };
        // Which kind: whether the cluster carries it now. Judged again on the record the
        // change is written against (`apply`), so a concurrent change is caught.
        let carried = self
            .load_cluster(&tenant.id, &req.cluster)
            .await?
            .is_some_and(|(rec, _)| rec.spec.addon(&want.name).is_some());
        let kind = if carried {
            OperationKind::UpdateAddon
        } else {
            OperationKind::AddAddon
        };
        let apply = |rec: &ClusterRecord| with_addon_set(rec, kind, &want);
        let change = day2::Change {
            cluster: &req.cluster,
            kind,
            node_pool: None,
            addon: Some(want.name.clone()),
            request_id,
            etag: cluster_etag(req.etag),
            trace_id,
            validate_only: req.validate_only,
            apply: &apply,
        };
        self.accept_change(tenant, change).await
    }

    /// `RemoveClusterAddon`: the add-on taken off the cluster (the spec names it until its
    /// removal has succeeded).
    pub(super) async fn remove_cluster_addon(
        &self,
        tenant: &TenantConfig,
        trace_id: String,
        req: pb::RemoveClusterAddonRequest,
    ) -> Result<pb::Operation, Status> {
        let request_id = self.day2_ids(tenant, ("cluster", &req.cluster), &req.request_id)?;
        let name = req.addon.trim().to_owned();
        let mut checks = Checks::new();
        let mut v = Vec::new();
        check_addon_name(&mut v, "addon", &name);
        checks.extend(v);
        checks.done()?;
        let apply = |rec: &ClusterRecord| {
            rec.spec
                .addon(&name)
                .map(|_| rec.spec.clone())
                .ok_or_else(|| not_carried(&rec.name, &name))
        };
        let change = day2::Change {
            cluster: &req.cluster,
            kind: OperationKind::RemoveAddon,
            node_pool: None,
            addon: Some(name.clone()),
            request_id,
            etag: cluster_etag(req.etag),
            trace_id,
            validate_only: req.validate_only,
            apply: &apply,
        };
        self.accept_change(tenant, change).await
    }
}

/// The spec with `want` added (`AddAddon`) or replacing the version carried
/// (`UpdateAddon`); refused when the cluster no longer fits the call.
pub(super) fn with_addon_set(
    rec: &ClusterRecord,
    kind: OperationKind,
    want: &AddonRef,
) -> Result<ClusterSpec, Status> {
    let mut spec = rec.spec.clone();
    let current = spec.addons.iter_mut().find(|a| a.name == want.name);
    match (kind, current) {
        (OperationKind::AddAddon, None) => {
            let mut v = Vec::new();
            spec.addons.push(want.clone());
            check_cluster_addons(&mut v, "spec.addons", &spec.addons);
            if !v.is_empty() {
                return Err(invalid(v));
            }
            Ok(spec)
        }
        (OperationKind::UpdateAddon, Some(current)) if current == want => {
            Err(Status::with_error_details(
                tonic::Code::FailedPrecondition,
                format!(
                    "cluster {:?} already runs add-on {} version {}",
                    rec.name, want.name, want.version
                ),
                ErrorDetails::with_error_info(
                    "AddonAlreadyAtVersion",
                    ERROR_DOMAIN,
                    HashMap::from([
                        ("addon".to_owned(), want.name.clone()),
                        ("version".to_owned(), want.version.clone()),
                    ]),
                ),
            ))
        }
        (OperationKind::UpdateAddon, Some(current)) => {
            *current = want.clone();
            Ok(spec)
        }
        _ => Err(Status::aborted(
            "the cluster's add-ons changed while the call was made; retry",
        )),
    }
}

/// A request's `name` and (optional) `version` of an add-on, as the catalog keys them.
fn check_name_and_version(name: &str, version: &str) -> Result<(), Status> {
    let mut v = Vec::new();
    check_addon_name(&mut v, "name", name);
    if !version.is_empty() {
        check_addon_version(&mut v, "version", version);
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(invalid(v))
    }
}

/// INVALID_ARGUMENT with a `google.rpc.BadRequest` naming every violation.
fn invalid(violations: Vec<FieldViolation>) -> Status {
    let mut checks = Checks::new();
    checks.extend(violations);
    checks
        .done()
        .err()
        .unwrap_or_else(|| Status::invalid_argument("invalid request"))
}

fn cluster_etag(etag: String) -> Option<day2::Etag> {
    Some(etag)
        .filter(|e| !e.trim().is_empty())
        .map(day2::Etag::Cluster)
}

fn not_carried(cluster: &str, addon: &str) -> Status {
    Status::not_found(format!(
        "cluster {cluster:?} carries no add-on {}",
        clip(addon)
    ))
}

fn not_found_message(name: &str, version: &str) -> String {
    if version.is_empty() {
        format!("no add-on {} in the catalog", clip(name))
    } else {
        format!(
            "no add-on {} version {} in the catalog",
            clip(name),
            clip(version)
        )
    }
}

/// A version clusters still run cannot be deleted.
fn in_use(name: &str, clusters: &[String]) -> Status {
    Status::with_error_details(
        tonic::Code::FailedPrecondition,
        format!(
            "add-on {name} is run by {} cluster(s): {}; remove it from them or move them to another version first",
            clusters.len(),
            clusters.join(", ")
        ),
        ErrorDetails::with_error_info(
            "AddonInUse",
            ERROR_DOMAIN,
            HashMap::from([("addon".to_owned(), name.to_owned())]),
        ),
    )
}

fn catalog_status(e: CatalogError) -> Status {
    match e {
        CatalogError::VersionExists { .. } => Status::already_exists(e.to_string()),
        other => internal("add-on catalog")(other),
    }
}

/// An add-on as the API shows it; its definition only where asked (`with_document`).
fn addon_to_pb(rec: &AddonRecord, with_document: bool) -> pb::Addon {
    let a = &rec.addon;
    pb::Addon {
        name: a.name.clone(),
        version: a.version.clone(),
        scope: scope_to_pb(rec.scope) as i32,
        description: a.description.clone(),
        document: if with_document {
            String::from_utf8(a.to_json()).unwrap_or_default()
        } else {
            String::new()
        },
        digest: rec.digest.clone(),
        put_time: Some(ts(rec.put_at)),
        put_by: rec.put_by.clone(),
        phases: a
            .phases
            .iter()
            .map(|p| match &p.class {
                Some(class) => format!("{} ({class})", p.name),
                None => p.name.clone(),
            })
            .collect(),
    }
}
