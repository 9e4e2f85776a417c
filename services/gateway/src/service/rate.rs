//! Per-tenant request rate: one tenant's burst of calls cannot take the gateway from the
//! others. A token bucket per tenant (GCRA, from `governor`), refused as `RESOURCE_EXHAUSTED`
//! naming the limit.

use std::num::NonZeroU32;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use hypersaga_config::GatewayConfig;
use hypersaga_model::TenantId;
use tonic::Status;

pub(crate) struct TenantRate {
    limiter: DefaultKeyedRateLimiter<TenantId>,
    per_sec: u32,
    burst: u32,
}

impl TenantRate {
    /// `None` when the configuration sets no limit.
    pub(crate) fn from_config(config: &GatewayConfig) -> Option<Self> {
        let per_sec = NonZeroU32::new(config.requests_per_sec_per_tenant)?;
        let burst = NonZeroU32::new(config.request_burst_per_tenant.max(per_sec.get()))?;
        Some(Self {
            limiter: RateLimiter::keyed(Quota::per_second(per_sec).allow_burst(burst)),
            per_sec: per_sec.get(),
            burst: burst.get(),
        })
    }

    /// Takes one request from `tenant`'s bucket, or says why not.
    pub(crate) fn admit(&self, tenant: &TenantId) -> Result<(), Status> {
        self.limiter.check_key(tenant).map_err(|_| {
            metrics::counter!("hypersaga_gateway_rate_limited_total", "tenant" => tenant.to_string())
                .increment(1);
            Status::resource_exhausted(format!(
                "request rate: tenant {tenant} may make {} requests per second (bursts of {}); retry shortly",
                self.per_sec, self.burst
            ))
        })
    }
}
