//! Tenants as live data.
//!
//! A tenant is either declared in the configuration or onboarded through the gateway's admin
//! API, which keeps its [`TenantRecord`] in the bus's `hcp_tenants` bucket. Every role follows
//! the bucket through a [`Directory`], so a tenant added, suspended or removed is served (or
//! refused) by every replica within moments, and no process restarts. A record holds no
//! secret: credentials as digests, Azure as ids reached through workload identity federation.
#![forbid(unsafe_code)]

mod directory;
mod record;

pub use directory::{Directory, Error, Source, Tenant};
pub use record::{AzureAccess, DecodeError, Suspension, TENANT_RECORD_VERSION, TenantRecord};
