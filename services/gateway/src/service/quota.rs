//! Per-tenant quotas (`[quotas]`): how many clusters a tenant may have, and how many of its
//! operations may be unfinished at once. A request beyond one is refused `RESOURCE_EXHAUSTED`
//! with a `google.rpc.QuotaFailure` (and an `ErrorInfo` with reason `QuotaExceeded`) naming
//! the quota, its limit and the current usage.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hypersaga_config::TenantConfig;
use hypersaga_model::{ClusterPhase, TenantId};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, QuotaViolation, StatusExt};
use tracing::info;

use super::Gateway;
use super::operator::ERROR_DOMAIN;

/// How long one read of a tenant's records answers its quota checks. Reading them is
/// O(the tenant's clusters), so a burst of requests shares one read instead of each making
/// its own.
const USAGE_FRESH_FOR: Duration = Duration::from_secs(1);

/// What a tenant uses now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Usage {
    /// Clusters in any phase but deleted.
    clusters: u32,
    /// Clusters whose current operation has not finished (paused ones included). A cluster
    /// has one operation at a time, so this counts the tenant's unfinished operations.
    operations_in_flight: u32,
}

/// Each tenant's usage as last read by this gateway, plus what it has let through since.
#[derive(Default)]
pub(super) struct UsageCache {
    tenants: Mutex<HashMap<TenantId, Arc<tokio::sync::Mutex<Option<Read>>>>>,
}

/// One read of a tenant's usage, and when it was made.
struct Read {
    at: Instant,
    usage: Usage,
}

impl UsageCache {
    fn slot(&self, tenant: &TenantId) -> Arc<tokio::sync::Mutex<Option<Read>>> {
        self.tenants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tenant.clone())
            .or_default()
            .clone()
    }
}

impl Gateway {
    /// Refuses a new operation (and, when `new_cluster`, a new cluster) beyond the tenant's
    /// quotas; otherwise counts it against them.
    ///
    /// Usage is read from the tenant's own cluster records (never another tenant's) at most
    /// once per [`USAGE_FRESH_FOR`] per gateway replica; requests this replica lets through
    /// meanwhile are added to it, and its checks for one tenant run one at a time. So it is
    /// exact for one replica, but racy across replicas: each may let through the last free
    /// slot within the same second, overshooting a quota by up to the number of replicas.
    /// A request let through whose write then fails (a conflict) counts until the next read.
    /// Quotas bound load; they are not exact.
    pub(super) async fn check_quotas(
        &self,
        tenant: &TenantConfig,
        new_cluster: bool,
    ) -> Result<(), Status> {
        let quotas = self.config.quotas.for_tenant(&tenant.id);
        let slot = self.usage.slot(&tenant.id);
        let mut last = slot.lock().await;
        let usage = match &mut *last {
            Some(read) if read.at.elapsed() < USAGE_FRESH_FOR => &mut read.usage,
            stale => {
                let at = Instant::now();
                let usage = self.read_usage(tenant).await?;
                &mut stale.insert(Read { at, usage }).usage
            }
        };
        if new_cluster && usage.clusters >= quotas.max_clusters {
            return Err(exceeded(
                tenant,
                "max_clusters",
                "clusters",
                quotas.max_clusters,
                usage.clusters,
                "delete a cluster first",
            ));
        }
        if usage.operations_in_flight >= quotas.max_operations_in_flight {
            return Err(exceeded(
                tenant,
                "max_operations_in_flight",
                "unfinished operations",
                quotas.max_operations_in_flight,
                usage.operations_in_flight,
                "retry once some have finished",
            ));
        }
        usage.clusters += u32::from(new_cluster);
        usage.operations_in_flight += 1;
        Ok(())
    }

    /// One read of the tenant's cluster records: clusters not deleted, and those whose current
    /// operation has not finished.
    async fn read_usage(&self, tenant: &TenantConfig) -> Result<Usage, Status> {
        let records = self.tenant_clusters(tenant).await?;
        let mut usage = Usage::default();
        for r in records.values() {
            if r.value.phase != ClusterPhase::Deleted {
                usage.clusters += 1;
            }
            if !r.value.operation.state.is_terminal() {
                usage.operations_in_flight += 1;
            }
        }
        Ok(usage)
    }
}

fn exceeded(
    tenant: &TenantConfig,
    quota: &str,
    what: &str,
    limit: u32,
    usage: u32,
    hint: &str,
) -> Status {
    info!(tenant = %tenant.id, quota, limit, usage, "request refused by quota");
    let subject = format!("tenant:{}", tenant.id);
    let description =
        format!("quota {quota}: at most {limit} {what} per tenant; tenant has {usage}");
    let mut details = ErrorDetails::new();
    details.set_quota_failure(vec![QuotaViolation::new(subject, description)]);
    details.set_error_info(
        "QuotaExceeded",
        ERROR_DOMAIN,
        HashMap::from([
            ("quota".to_owned(), quota.to_owned()),
            ("limit".to_owned(), limit.to_string()),
            ("usage".to_owned(), usage.to_string()),
        ]),
    );
    Status::with_error_details(
        Code::ResourceExhausted,
        format!(
            "quota {quota} exceeded: tenant {} may have at most {limit} {what} and has {usage}; {hint}",
            tenant.id
        ),
        details,
    )
}
