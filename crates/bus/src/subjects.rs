//! Subject and key names. The tenant id is in every one of them, so per-tenant consumers,
//! quotas and permissions can be added later without renaming anything.

use hypersaga_model::TenantId;

/// Subject builder for one prefix (default `hcp`).
#[derive(Clone, Debug)]
pub struct Subjects {
    prefix: String,
}

impl Subjects {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Step commands for one service.
    pub fn cmd(&self, tenant: &TenantId, service: &str) -> String {
        format!("{}.{tenant}.cmd.{service}", self.prefix)
    }

    /// All tenants' commands for one service (a service's consumer filter).
    pub fn cmd_filter(&self, service: &str) -> String {
        format!("{}.*.cmd.{service}", self.prefix)
    }

    /// Plan requests to one service (core request and reply, no stream).
    pub fn plan(&self, tenant: &TenantId, service: &str) -> String {
        format!("{}.{tenant}.plan.{service}", self.prefix)
    }

    /// All tenants' plan requests to one service (what its replicas subscribe to).
    pub fn plan_filter(&self, service: &str) -> String {
        format!("{}.*.plan.{service}", self.prefix)
    }

    /// Sweep listings asked of one service (core request and reply, no stream).
    pub fn sweep(&self, tenant: &TenantId, service: &str) -> String {
        format!("{}.{tenant}.sweep.{service}", self.prefix)
    }

    /// All tenants' sweep listings asked of one service (what its replicas subscribe to).
    pub fn sweep_filter(&self, service: &str) -> String {
        format!("{}.*.sweep.{service}", self.prefix)
    }

    /// Completion events from one service.
    pub fn evt(&self, tenant: &TenantId, service: &str) -> String {
        format!("{}.{tenant}.evt.{service}", self.prefix)
    }

    /// Wake-up for a newly accepted operation.
    pub fn saga_start(&self, tenant: &TenantId) -> String {
        format!("{}.{tenant}.saga.start", self.prefix)
    }

    /// Operator calls (resume, retry a step, compensate, abandon).
    pub fn saga_operate(&self, tenant: &TenantId) -> String {
        format!("{}.{tenant}.saga.operate", self.prefix)
    }

    /// An admin's request that one of the tenant's dead letters be sent again (the tenant's
    /// token as the dead letter's subject has it, which may be `unknown`).
    pub fn saga_redrive(&self, tenant: &str) -> String {
        format!("{}.{tenant}.saga.redrive", self.prefix)
    }

    /// Timer wake-ups: a saga has something due (a lease, a deadline).
    pub fn saga_tick(&self, tenant: &TenantId) -> String {
        format!("{}.{tenant}.saga.tick", self.prefix)
    }

    /// A saga's durable timer (a JetStream schedule that fires on [`Subjects::saga_tick`]).
    pub fn saga_timer(&self, tenant: &TenantId, saga_id: &str) -> String {
        format!("{}.{tenant}.timer.{saga_id}", self.prefix)
    }

    /// What the coordinator consumes from `HCP_EVT`: events and saga inputs, not the timers
    /// waiting to fire.
    pub fn coordinator_filters(&self) -> Vec<String> {
        vec![
            format!("{}.*.evt.*", self.prefix),
            format!("{}.*.saga.*", self.prefix),
        ]
    }

    /// `(tenant, kind, rest)` of a subject under this prefix: `hcp.acme.evt.dns` →
    /// `("acme", "evt", "dns")`. Permissions are granted on subjects, so the subject is what
    /// says who may have sent a message; its body must agree.
    pub fn address<'a>(&self, subject: &'a str) -> Option<(&'a str, &'a str, &'a str)> {
        let rest = subject.strip_prefix(&self.prefix)?.strip_prefix('.')?;
        let mut parts = rest.splitn(3, '.');
        Some((parts.next()?, parts.next()?, parts.next()?))
    }

    /// Where messages refused unread go: a tenant's dead letters, by the role that refused.
    pub fn dead(&self, tenant: &str, role: &str) -> String {
        format!("{}.{tenant}.dead.{role}", self.prefix)
    }

    /// The dead letters of one tenant (its subject's token), or of every tenant.
    pub fn dead_filter(&self, tenant: Option<&str>) -> String {
        format!("{}.{}.dead.*", self.prefix, tenant.unwrap_or("*"))
    }

    /// Public lifecycle events of one cluster.
    pub fn audit(&self, tenant: &TenantId, cluster: &str) -> String {
        format!("{}.{tenant}.audit.{cluster}", self.prefix)
    }

    /// Audit events about the tenant itself (onboarded, suspended, …), not one of its
    /// clusters: `_tenant` is no cluster name.
    pub fn tenant_audit(&self, tenant: &TenantId) -> String {
        self.audit(tenant, TENANT_AUDIT_TOKEN)
    }

    /// Audit events of every cluster of one tenant, or of all tenants.
    pub fn audit_filter(&self, tenant: Option<&TenantId>) -> String {
        match tenant {
            Some(t) => format!("{}.{t}.audit.>", self.prefix),
            None => format!("{}.*.audit.>", self.prefix),
        }
    }
}

/// The durable consumer through which a service's workers take one tenant's commands (one
/// per tenant, so tenants are served in turn).
pub fn worker_consumer(service: &str, tenant: &TenantId) -> String {
    format!("svc-{service}-{tenant}")
}

/// The last token of a tenant's own audit events (`<p>.<tenant>.audit._tenant`).
pub const TENANT_AUDIT_TOKEN: &str = "_tenant";

/// KV key of a cluster record.
pub fn cluster_key(tenant: &TenantId, name: &str) -> String {
    format!("{tenant}.{name}")
}

/// KV key of a saga (an operation).
pub fn saga_key(tenant: &TenantId, saga_id: &str) -> String {
    format!("{tenant}.{saga_id}")
}
