//! An Azure Resource Manager + Entra ID emulator speaking the real protocols over HTTPS.
//!
//! Nothing here can reach Azure, so `hypersaga dev` and the tests run the product's services
//! against this crate instead: ARM URL shapes and the api-versions of every resource type the
//! services touch (others refused as ARM refuses them), asynchronous operations
//! (`Azure-AsyncOperation` / `Location` polling) with a latency model, ARM's error bodies and
//! codes, referential integrity, role assignments at any scope with the built-in role
//! definitions and Entra's replication lag, ARM's token-bucket throttling (per subscription ×
//! principal × region, plus a global per-subscription bucket) with its `x-ms-ratelimit-*` and
//! `x-ms-routing-request-id` headers, a resource inventory, a client-credentials token endpoint
//! that `azure_identity` accepts (secrets for the configured app registrations; for
//! user-assigned identities and for app registrations made through Graph, client assertions
//! matched against their federated credentials and verified with the issuer's published keys),
//! a Microsoft Graph subset (`/v1.0/applications`, their `federatedIdentityCredentials`,
//! `/v1.0/servicePrincipals`) with which each tenant's administrator (its configured principal)
//! manages its own directory ([`directory`]), RBAC that authorizes those identities and apps by
//! their role assignments alone, vCPU quota per subscription, region and VM family with the
//! Compute usage list and the compute resource provider's `409 OperationNotAllowed` for a VM
//! beyond it ([`quota`]), and a plain-HTTP admin API (faults, request counts, state dump, role
//! assignments, quota limits, app registrations, Entra directories added at runtime:
//! [`directories`]). [`tenant_admin`] is a client playing a tenant's administrator over the real
//! APIs, onboarding hypersaga's secretless identity into a directory.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use hypersaga_emulator_arm::{Config, Emulator, Principal};
//! let emu = Emulator::new(Config {
//!     principals: vec![Principal {
//!         azure_tenant_id: "00000000-0000-0000-0000-000000000001".into(),
//!         client_id: "app".into(),
//!         client_secret: "secret".into(),
//!         subscription_ids: vec!["sub1".into()],
//!     }],
//!     ..Config::default()
//! });
//! let ca = hypersaga_devca::DevCa::generate()?;
//! let cert = ca.issue_loopback_cert()?;
//! let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! hypersaga_devca::serve_tls(listener, emu.router(), &cert, std::future::pending()).await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod admin;
pub mod admin_client;
mod arm;
pub mod config;
pub mod directories;
pub mod directory;
mod entra;
pub mod errors;
pub mod faults;
mod graph;
mod path;
pub mod quota;
mod rbac;
pub mod requests;
pub mod storage;
mod store;
pub mod tenant_admin;
pub mod throttle;
pub mod types;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{any, get, post};

/// How long ARM takes to answer a role-assignment write under the realistic latency model
/// (benches compute critical paths from it).
pub use arm::ROLE_ASSIGNMENT_WRITE_LATENCY;
pub use config::{Config, LatencyModel, Principal, QuotaConfig};
pub use directories::{AddDirectoryError, DirectoryListing};
pub use errors::ArmError;
pub use faults::{AsyncFault, AsyncFaultSpec, Fault, FaultSpec};
pub use quota::QuotaLimit;
pub use requests::{RequestCount, RequestRecord, RequestStats, SubscriptionRequests};
pub use tenant_admin::{Onboarded, TenantAdmin, TenantAdminError};
pub use throttle::{BucketConfig, ThrottleConfig};

/// The emulator: shared state behind an `Arc`, cheap to clone into routers and tests.
#[derive(Clone)]
pub struct Emulator {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    /// The live Entra directories: `config.principals`, then those added at runtime.
    directories: directories::Directories,
    keys: entra::Keys,
    /// Signing keys of the external OIDC issuers federated credentials trust.
    issuers: entra::Issuers,
    state: Mutex<State_>,
}

/// Everything mutable, under one lock that is never held across an `.await`.
pub(crate) struct State_ {
    pub store: store::Store,
    pub throttle: throttle::Throttle,
    pub faults: faults::Faults,
    pub requests: requests::RequestLog,
}

impl Emulator {
    pub fn new(config: Config) -> Self {
        let state = State_ {
            store: store::Store::new(config.quota),
            throttle: throttle::Throttle::new(config.throttle),
            faults: faults::Faults::default(),
            requests: requests::RequestLog::new(config.request_log_size),
        };
        Self {
            inner: Arc::new(Inner {
                keys: entra::Keys::generate(),
                issuers: entra::Issuers::default(),
                directories: directories::Directories::new(&config.principals),
                config,
                state: Mutex::new(state),
            }),
        }
    }

    /// The configuration the emulator started with. Its `principals` are the initial
    /// directories only: see [`Emulator::directories`] for the live set.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Adds an Entra directory with its administrator and the subscriptions it owns, exactly as
    /// if it had been configured at start. `Ok(true)` when added, `Ok(false)` when this very
    /// directory (same administrator, secret and subscriptions) is there already.
    pub fn add_directory(&self, principal: Principal) -> Result<bool, AddDirectoryError> {
        let added = self.inner.directories.add(principal)?;
        Ok(added)
    }

    /// Every Entra directory, configured and added, without secrets.
    pub fn directories(&self) -> Vec<DirectoryListing> {
        self.inner.directories.list()
    }

    /// Runs `f` over the live directories' administrators (never across an `.await`).
    pub(crate) fn with_principals<R>(&self, f: impl FnOnce(&[Principal]) -> R) -> R {
        self.inner.directories.with(f)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State_> {
        // A panic while holding the lock must not take the emulator down with it.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// ARM, Entra and Graph on one router (as on `management.azure.com`,
    /// `login.microsoftonline.com` and `graph.microsoft.com` rolled into one host: Graph's paths
    /// start with `/v1.0/`, which no ARM or Entra path does). Serve it over TLS: `azure_identity`
    /// and `azure_core` refuse plain HTTP.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1.0/{*path}", any(graph::handle))
            .route("/{tenant}/oauth2/v2.0/token", post(entra::token))
            .route(
                "/{tenant}/v2.0/.well-known/openid-configuration",
                get(entra::openid_configuration),
            )
            .fallback(arm::handle)
            .layer(axum::middleware::from_fn_with_state(self.clone(), decorate))
            .with_state(self.clone())
    }

    /// The admin API (plain HTTP): faults, request counts, state dump, reset.
    pub fn admin_router(&self) -> Router {
        admin::router(self.clone())
    }

    /// Server-side duration of an operation on `rtype` whose realistic duration is `realistic`.
    pub(crate) fn latency_for(&self, rtype: &types::ResourceType, realistic: Duration) -> Duration {
        let full = rtype.full_name();
        let over = self
            .inner
            .config
            .latency_overrides
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&full));
        match over {
            Some((_, d)) => *d,
            None => self.inner.config.latency.apply(realistic),
        }
    }

    /// Realistic RG delete: 10-20 s when empty, 2-3 min with contents
    /// (docs/reference/azure-latencies.md 1b).
    pub(crate) fn rg_delete_latency(&self, contained: usize) -> Duration {
        if contained == 0 {
            Duration::from_secs(15)
        } else {
            Duration::from_secs(150)
        }
    }

    /// Clears resources, operations, faults, request counts, throttle buckets, the quota
    /// limits set through the admin API, and every directory's app registrations and service
    /// principals. The directories themselves stay, those added at runtime too: like the
    /// configured ones they are the world's shape, not its state.
    pub fn reset(&self) {
        let mut st = self.lock();
        st.store.clear();
        st.faults.clear();
        st.requests.clear();
        st.throttle.reset();
    }
}

/// Adds the headers ARM puts on every answer and records the request for the admin API.
async fn decorate(State(emu): State<Emulator>, req: Request, next: Next) -> Response {
    use axum::http::HeaderValue;
    let (correlation, client_request) = {
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let correlation = header("x-ms-correlation-request-id")
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        (correlation, header("x-ms-client-request-id"))
    };
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let api_version = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("api-version="))
            .map(str::to_owned)
    });
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    let request_id = uuid::Uuid::new_v4().to_string();
    for (name, value) in [
        ("x-ms-request-id", Some(request_id)),
        ("x-ms-correlation-request-id", Some(correlation)),
        ("x-ms-client-request-id", client_request),
    ] {
        if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            h.insert(name, v);
        }
    }
    let (resource_type, subscription) = resp.extensions().get::<arm::TypeTag>().map_or_else(
        || ("Entra".to_owned(), None),
        |t| (t.type_name.clone(), t.subscription.clone()),
    );
    emu.lock().requests.record(RequestRecord {
        method,
        path,
        api_version,
        resource_type,
        status: resp.status().as_u16(),
        time: store::rfc3339(time::OffsetDateTime::now_utc()),
        subscription,
    });
    resp
}
