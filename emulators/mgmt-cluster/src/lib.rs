//! Management-cluster emulator: a subset of the Kubernetes API server over HTTPS plus a
//! simulated HyperShift operator.
//!
//! No kube-apiserver can run on our machines, yet the controlplane and nodepool services must
//! be exercised with the real `kube` client and operators want `kubectl`. This crate serves
//! discovery, namespaces, secrets, configmaps, events and `hypershift.openshift.io/v1beta1`
//! HostedClusters and NodePools with the behaviours clients depend on — resourceVersions and
//! conflicts, the status subresource, finalizers, merge/JSON patch, list and watch — and is
//! as strict as kube-apiserver where the product could go wrong: real server-side apply with
//! `managedFields` and conflicts (structured-merge-diff semantics, module `managedfields`),
//! structural schemas that prune, default and validate (module `schema`), `fieldValidation`, and
//! `dryRun`. It moves HostedCluster/NodePool conditions the way HyperShift does, after
//! configurable delays, with injectable failures, and records core/v1 Events about what it
//! does; day 2 too — scaling, autoscaling, Replace rollouts under Cluster API's
//! MachineDeployment, control-plane upgrades, version skew (the crate's `README.md`). Unmodified `kubectl` works against it: aggregated discovery, server-side tables with
//! HyperShift's printer columns, protobuf request bodies from client-go's clientsets, and
//! OpenAPI v3 and v2 generated from the same schemas (`explain`, client-side validation of
//! older kubectl). `hypersaga dev` runs it; so do tests.
//!
//! Each hosted cluster gets a Kubernetes API of its own once its control plane is deployed —
//! another [`Emulator`] with the hosted profile, served under `/hosted/<control-plane
//! namespace>` of the same server, with `apps/v1` Deployments, RBAC and CRDs besides the core
//! kinds — and the management cluster runs a simulated Package Operator: ObjectDeployments,
//! ObjectSets and ObjectSetPhases whose `hosted-cluster` phases go through that API, with
//! PKO's conditions, probes, ordering, revisions and teardown (module `pko`; the crate's
//! `README.md`, "Package Operator and hosted clusters").
#![forbid(unsafe_code)]

mod admin;
pub mod admin_client;
mod api;
mod config;
mod defaulting;
mod duplicates;
mod error;
mod events;
mod faults;
mod fieldpath;
mod gc;
mod kinds;
mod kubeconfig;
mod label_selector;
mod managedfields;
mod meta;
mod normalize;
mod operator;
mod patch;
mod pko;
mod protobuf;
mod pruning;
mod recorder;
mod registry;
mod schema;
mod selectors;
mod store;
mod strategies;
mod typed;
mod validation;
mod workers;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use config::{AzureEndpoints, Config};
pub use error::ApiError;
pub use faults::{ApiFault, Fault, FaultKind, InstalledApiFault};
pub use kubeconfig::{CONTEXT, kubeconfig_yaml};
pub use workers::token::{TokenError, service_account_token};

use kinds::Profile;
use store::Store;

/// Where the emulator's HTTPS API is reachable, and the CA that signs its certificate: what
/// a kubeconfig for one of its hosted clusters needs.
#[derive(Debug, Clone)]
pub struct ServedAt {
    /// `https://host:port`, without a trailing slash.
    pub url: String,
    pub ca_pem: String,
}

/// The emulator: one object store, one simulated operator. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Emulator {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) store: Store,
    pub(crate) faults: Mutex<Vec<Fault>>,
    pub(crate) api_faults: Mutex<Vec<InstalledApiFault>>,
    pub(crate) requests: Mutex<BTreeMap<String, u64>>,
    /// Simulated workload of autoscaled NodePools, in nodes, by `<namespace>/<name>`.
    pub(crate) demand: Mutex<BTreeMap<String, i64>>,
    operator_started: AtomicBool,
    /// Which API this instance serves (a management cluster, or one hosted cluster's).
    pub(crate) profile: Profile,
    /// Set once, after serving ([`Emulator::set_served_at`]).
    pub(crate) served_at: OnceLock<ServedAt>,
    /// The hosted clusters' APIs, by control-plane namespace (management profile only).
    pub(crate) hosted: Mutex<BTreeMap<String, Emulator>>,
}

impl Emulator {
    /// A fresh emulator with the configured initial namespaces.
    pub fn new(config: Config) -> Self {
        let store = Store::new(config.watch_history);
        Self::with_store(config, store, Profile::Management)
    }

    /// A hosted cluster's API: its own store (waking `changed`, the management operator's
    /// signal) and token, serving only the kinds of a hosted cluster.
    pub(crate) fn hosted(config: Config, changed: Arc<tokio::sync::Notify>) -> Self {
        let store = Store::with_notify(config.watch_history, changed);
        Self::with_store(config, store, Profile::Hosted)
    }

    fn with_store(config: Config, store: Store, profile: Profile) -> Self {
        for ns in &config.initial_namespaces {
            let obj = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            // kube-apiserver's bootstrap controller creates these as manager `kube-apiserver`.
            let created = registry::prepare_create(kinds::NAMESPACES, "", obj, "kube-apiserver")
                .and_then(|obj| store.create(kinds::NAMESPACES, "", obj, false));
            if let Err(e) = created {
                tracing::warn!(namespace = %ns, error = %e, "initial namespace rejected");
            }
        }
        Self {
            shared: Arc::new(Shared {
                config,
                store,
                faults: Mutex::new(Vec::new()),
                api_faults: Mutex::new(Vec::new()),
                requests: Mutex::new(BTreeMap::new()),
                demand: Mutex::new(BTreeMap::new()),
                operator_started: AtomicBool::new(false),
                profile,
                served_at: OnceLock::new(),
                hosted: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The configuration this emulator runs with.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The Kubernetes API (serve it over TLS with `hypersaga_devca::serve_tls`). Starts the
    /// simulated operator on the current Tokio runtime if it is not running yet; it stops when
    /// the last clone of this emulator is dropped.
    pub fn router(&self) -> axum::Router {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.spawn_operator(std::future::pending::<()>());
        }
        api::router(self.clone())
    }

    /// Tells the emulator the URL its [`Emulator::router`] is served at (`https://host:port`)
    /// and the PEM of the CA that signs it, so the simulated HyperShift can write working
    /// kubeconfigs for hosted clusters. Only the first call counts; until it is made, hosted
    /// clusters' APIs exist but no kubeconfig for them is written.
    pub fn set_served_at(&self, url: impl Into<String>, ca_pem: impl Into<String>) {
        let url = url.into().trim_end_matches('/').to_owned();
        let served = ServedAt {
            url,
            ca_pem: ca_pem.into(),
        };
        if self.shared.served_at.set(served).is_err() {
            tracing::debug!("served URL already set; keeping the first");
        }
        self.shared.store.changed.notify_one();
    }

    /// The hosted clusters' APIs: control-plane namespace → URL path prefix under the served
    /// URL (`/hosted/<namespace>`), what `GET /hosted` on the admin API returns.
    pub fn hosted_apis(&self) -> BTreeMap<String, String> {
        lock(&self.shared.hosted)
            .keys()
            .map(|ns| (ns.clone(), format!("/hosted/{ns}")))
            .collect()
    }

    /// Every object stored by the hosted cluster whose control plane runs in `namespace`
    /// (what `GET /hosted/{namespace}/objects` returns); `None` when there is no such API.
    pub fn hosted_objects(&self, namespace: &str) -> Option<Vec<serde_json::Value>> {
        self.hosted_api(namespace).map(|h| h.objects())
    }

    /// The API of the hosted cluster whose control plane runs in `namespace`.
    pub(crate) fn hosted_api(&self, namespace: &str) -> Option<Emulator> {
        lock(&self.shared.hosted).get(namespace).cloned()
    }

    /// The admin API (plain HTTP): fault injection, object dump, request counts.
    pub fn admin_router(&self) -> axum::Router {
        admin::router(self.clone())
    }

    /// Starts the simulated HyperShift operator — one task for all objects — unless already
    /// running. It stops at `shutdown` or when every clone of the emulator is gone. Returns
    /// `None` when it was already started.
    pub fn spawn_operator(
        &self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Option<tokio::task::JoinHandle<()>> {
        if self.shared.operator_started.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(tokio::spawn(operator::run(
            Arc::downgrade(&self.shared),
            self.shared.store.changed.clone(),
            shutdown,
        )))
    }

    /// Every stored object (what `GET /objects` on the admin API returns).
    pub fn objects(&self) -> Vec<serde_json::Value> {
        self.shared.store.dump()
    }

    /// Request counts keyed `"<verb> <resource>"`, e.g. `"patch hostedclusters/status"`.
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        lock(&self.shared.requests).clone()
    }

    /// Adds a fault (same as `POST /faults`).
    pub fn inject_fault(&self, fault: Fault) {
        lock(&self.shared.faults).push(fault);
        self.shared.store.changed.notify_one();
    }

    /// Answers matching Kubernetes API requests with an error (same as `POST /faults/api`);
    /// refused when the status is not one kube-apiserver answers such faults with.
    pub fn add_api_fault(&self, fault: ApiFault) -> Result<InstalledApiFault, String> {
        fault.reason()?;
        let installed = InstalledApiFault {
            remaining: fault.count,
            spec: fault,
            hits: 0,
        };
        lock(&self.shared.api_faults).push(installed.clone());
        Ok(installed)
    }

    /// The API faults in force.
    pub fn api_faults(&self) -> Vec<InstalledApiFault> {
        lock(&self.shared.api_faults).clone()
    }

    /// Uses up one request of the first API fault matching it, if any.
    pub(crate) fn take_api_fault(
        &self,
        verb: &str,
        resource: &str,
        name: &str,
    ) -> Option<ApiFault> {
        let mut faults = lock(&self.shared.api_faults);
        let idx = faults
            .iter()
            .position(|f| f.spec.matches(verb, resource, name))?;
        let f = &mut faults[idx];
        f.hits += 1;
        let spec = f.spec.clone();
        if let Some(r) = f.remaining.as_mut() {
            *r = r.saturating_sub(1);
            if *r == 0 {
                faults.remove(idx);
            }
        }
        Some(spec)
    }

    /// Removes the faults (of objects and of the API) scoped by exactly this `name_contains`
    /// (same as `DELETE /faults/objects/{name_contains}`): one cluster recovers, or gets its
    /// permission back, while the other faults stay. Answers how many were removed.
    pub fn remove_faults(&self, name_contains: &str) -> usize {
        let scoped = Some(name_contains);
        let mut faults = lock(&self.shared.faults);
        let before = faults.len();
        faults.retain(|f| f.name_contains.as_deref() != scoped);
        let mut removed = before - faults.len();
        drop(faults);
        let mut api = lock(&self.shared.api_faults);
        let before = api.len();
        api.retain(|f| f.spec.name_contains.as_deref() != scoped);
        removed += before - api.len();
        drop(api);
        self.shared.store.changed.notify_one();
        removed
    }

    /// Removes every fault, of objects and of the API (same as `DELETE /faults`).
    pub fn clear_faults(&self) {
        lock(&self.shared.api_faults).clear();
        lock(&self.shared.faults).clear();
        self.shared.store.changed.notify_one();
    }

    /// The active faults.
    pub fn faults(&self) -> Vec<Fault> {
        lock(&self.shared.faults).clone()
    }

    /// Sets the simulated workload of NodePool `namespace/name` to `nodes` nodes (same as
    /// `PUT /nodepools/{namespace}/{name}/demand`): the cluster-autoscaler of an autoscaled
    /// pool sizes it to that, within `spec.autoScaling`. A pool with fixed replicas ignores it.
    pub fn set_node_pool_demand(&self, namespace: &str, name: &str, nodes: u32) {
        lock(&self.shared.demand).insert(format!("{namespace}/{name}"), i64::from(nodes));
        self.shared.store.changed.notify_one();
    }

    /// Forgets NodePool `namespace/name`'s simulated workload (same as
    /// `DELETE /nodepools/{namespace}/{name}/demand`): its autoscaler then leaves its size
    /// alone, within bounds. Answers whether there was one.
    pub fn clear_node_pool_demand(&self, namespace: &str, name: &str) -> bool {
        let removed = lock(&self.shared.demand)
            .remove(&format!("{namespace}/{name}"))
            .is_some();
        self.shared.store.changed.notify_one();
        removed
    }

    /// The simulated workloads in force, in nodes, by `<namespace>/<name>`.
    pub fn node_pool_demands(&self) -> BTreeMap<String, i64> {
        lock(&self.shared.demand).clone()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn count_request(&self, key: String) {
        *lock(&self.shared.requests).entry(key).or_default() += 1;
    }
}

/// Locks a mutex, tolerating poisoning (the guarded data stays consistent per operation).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
