//! Emulator configuration: who may call, how slow Azure is, how hard ARM throttles.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::throttle::ThrottleConfig;

/// Everything the emulator needs to start. `Config::default()` is a usable zero-latency setup
/// with no principals (every ARM call then answers 401).
#[derive(Clone, Debug)]
pub struct Config {
    /// Service principals the Entra endpoint knows, and the subscriptions each may call. Their
    /// tenants are the only ones Entra has at start; each is its tenant's administrator in
    /// Graph. More are added while running with [`crate::Emulator::add_directory`] (admin API
    /// `POST /directories`); this stays the initial set.
    pub principals: Vec<Principal>,
    /// How long asynchronous operations take server-side.
    pub latency: LatencyModel,
    /// Fixed server-side durations per resource type (full type name, case-insensitive, e.g.
    /// `Microsoft.Network/privateDnsZones`), overriding `latency` for create and delete.
    pub latency_overrides: BTreeMap<String, Duration>,
    /// ARM gateway token buckets.
    pub throttle: ThrottleConfig,
    /// Region of the ARM instance this emulator plays (e.g. `eastus`). ARM throttles per
    /// regional instance — not per resource location — so buckets are keyed on it, and it
    /// leads `x-ms-routing-request-id` (`EASTUS:20240101T000000Z:<uuid>`).
    pub region: String,
    /// Page size of every list, kept small so clients' `nextLink` handling is exercised.
    pub page_size: usize,
    /// How many recent requests the admin API remembers.
    pub request_log_size: usize,
    /// `expires_in` of issued tokens (Entra answers 3599).
    pub token_lifetime_secs: u64,
    /// How long a new object takes to replicate through Entra (scaled by `latency`, so zero
    /// under `LatencyModel::Zero`): a managed identity's or a Graph-made service principal,
    /// before ARM's role-assignment check can find it (meanwhile a role assignment naming it
    /// without `principalType` answers `400 PrincipalNotFound`; `principalType` makes ARM skip
    /// the lookup) or the token endpoint can give it a token; a Graph-made app, before the
    /// token endpoint knows it or Graph can make its service principal; a federated identity
    /// credential, before it matches an assertion.
    pub principal_replication_delay: Duration,
    /// Least time a write to a type with `exclusive_parent_writes` (federated identity
    /// credentials) stays in flight. The window is otherwise the type's synchronous latency
    /// under `latency`, hence none under `LatencyModel::Zero`; raise this to rehearse
    /// `ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity` in fast tests.
    pub min_exclusive_write_window: Duration,
    /// vCPU quota every subscription starts with in every region, until the admin API sets a
    /// limit of its own (see [`crate::quota`]).
    pub quota: QuotaConfig,
}

/// Default vCPU limits: per subscription and region, the regional total (`cores`) and each VM
/// family's.
///
/// The defaults are far above anything the tests or a `hypersaga dev` demo create, so only a
/// test that sets a limit through the admin API (`PUT /quotas`) meets the refusal. Real
/// subscriptions start far lower: a pay-as-you-go subscription has tens of vCPUs per region and
/// per family, a free trial 4 per region, and some families 0 until a quota request is approved
/// (MicrosoftDocs/azure-docs#24803). Rehearse those numbers by setting them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaConfig {
    /// Limit of `cores` ("Total Regional vCPUs").
    pub regional_vcpus: u64,
    /// Limit of every VM family's vCPUs (`standardDSv5Family`, …).
    pub family_vcpus: u64,
}

/// `QuotaConfig::default()`'s regional limit: 100,000 vCPUs. The largest run, `hypersaga bench
/// fleet --clusters 999` with the CLI's default pool (2 × `Standard_D4s_v5`), holds 7,992 in one
/// subscription and region.
pub const DEFAULT_REGIONAL_VCPU_LIMIT: u64 = 100_000;
/// `QuotaConfig::default()`'s per-family limit: 50,000 vCPUs, six times that fleet.
pub const DEFAULT_FAMILY_VCPU_LIMIT: u64 = 50_000;

impl Default for QuotaConfig {
    fn default() -> Self {
        Self {
            regional_vcpus: DEFAULT_REGIONAL_VCPU_LIMIT,
            family_vcpus: DEFAULT_FAMILY_VCPU_LIMIT,
        }
    }
}

/// The region `Config::default()` answers from.
pub const DEFAULT_REGION: &str = "eastus";

/// `Config::default()`'s Entra replication delay. Azure has been seen taking 40-55 s
/// (docs/reference/azure-latencies.md §10); 10 s keeps the failure visible without slowing every
/// run.
pub const DEFAULT_PRINCIPAL_REPLICATION_DELAY: Duration = Duration::from_secs(10);

impl Default for Config {
    fn default() -> Self {
        Self {
            principals: Vec::new(),
            latency: LatencyModel::Zero,
            latency_overrides: BTreeMap::new(),
            throttle: ThrottleConfig::default(),
            region: DEFAULT_REGION.to_owned(),
            page_size: 20,
            request_log_size: 500,
            token_lifetime_secs: 3599,
            principal_replication_delay: DEFAULT_PRINCIPAL_REPLICATION_DELAY,
            min_exclusive_write_window: Duration::ZERO,
            quota: QuotaConfig::default(),
        }
    }
}

/// A service principal (app registration + secret) and the subscriptions it has RBAC on: the
/// operator there (it may do anything in them), and its tenant's administrator in Graph (its
/// Graph tokens carry `Application.ReadWrite.All`).
#[derive(Clone, Serialize, Deserialize)]
pub struct Principal {
    pub azure_tenant_id: String,
    pub client_id: String,
    pub client_secret: String,
    pub subscription_ids: Vec<String>,
}

impl fmt::Debug for Principal {
    // The secret never reaches logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("azure_tenant_id", &self.azure_tenant_id)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("subscription_ids", &self.subscription_ids)
            .finish()
    }
}

/// Server-side duration of asynchronous operations.
///
/// `Zero` still answers with the asynchronous shapes (`Updating`, `Azure-AsyncOperation`,
/// 202 + `Location`), the operation is simply complete by the first poll.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatencyModel {
    Zero,
    /// The realistic p50 durations of `docs/reference/azure-latencies.md` multiplied by this
    /// factor.
    Scaled(f64),
}

impl LatencyModel {
    /// The `Retry-After` (whole seconds) to advertise where Azure advertises `realistic_secs`:
    /// none when operations complete at once, so fast tests are not told to wait 15 s.
    pub fn retry_after(&self, realistic_secs: u64) -> Option<u64> {
        match self {
            LatencyModel::Zero => None,
            LatencyModel::Scaled(f) => Some(((realistic_secs as f64 * f).ceil() as u64).max(1)),
        }
    }

    /// Applies the model to a realistic base duration.
    pub fn apply(&self, realistic: Duration) -> Duration {
        match *self {
            LatencyModel::Zero => Duration::ZERO,
            LatencyModel::Scaled(f) if f.is_finite() && f > 0.0 => realistic.mul_f64(f),
            LatencyModel::Scaled(_) => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_scales_with_latency_and_is_never_zero() {
        assert_eq!(LatencyModel::Zero.retry_after(15), None);
        assert_eq!(LatencyModel::Scaled(1.0).retry_after(15), Some(15));
        assert_eq!(LatencyModel::Scaled(0.05).retry_after(15), Some(1));
    }
}
