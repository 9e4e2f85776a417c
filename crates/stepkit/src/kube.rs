//! Management-cluster plumbing of the controlplane and nodepool handlers: server-side apply,
//! one-shot checks of what the handler waits for, delete-and-check, and the mapping of `kube`
//! errors to [`StepError`]s.

use std::fmt::Debug;
use std::time::Duration;

use hypersaga_bus::StepError;
use hypersaga_hypershift::client::{classify, is_not_found};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::{debug, info};

/// The labels every object hypersaga makes on a management cluster carries: whose it is, and
/// which operation made it. The sweeper finds what no live cluster owns by them.
pub const LABEL_TENANT: &str = "hypersaga.io/tenant";
/// See [`LABEL_TENANT`].
pub const LABEL_CLUSTER: &str = "hypersaga.io/cluster";
/// See [`LABEL_TENANT`].
pub const LABEL_SAGA: &str = "hypersaga.io/saga";

/// The field manager of every server-side apply hypersaga makes.
pub const FIELD_MANAGER: &str = "hypersaga";

/// How long a step waiting on the management cluster (a HostedCluster becoming available, a
/// NodePool's nodes joining) waits before looking again, unless configured otherwise.
pub const DEFAULT_RECHECK_INTERVAL: Duration = Duration::from_secs(10);

pub use crate::notes::{LogNotes, Notes};

/// A `kube` error as a step error: classified retryable/terminal by
/// [`hypersaga_hypershift::client::classify`], keeping the Status reason as the code and its
/// message and field causes as the message; `target` names the object (`Kind/ns/name`).
pub fn step_error(err: &kube::Error, target: &str) -> StepError {
    let c = classify(err);
    let mut e = if c.retryable {
        StepError::retryable(c.code, c.message)
    } else {
        StepError::terminal(c.code, c.message)
    };
    e.retry_after_ms = c.retry_after_s.map(|s| u64::from(s) * 1000);
    e.with_target(target)
}

/// `Kind/<ns>/<name>` (or `Kind/<name>` for cluster-scoped objects), for error targets.
pub fn target(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Server-side applies `obj` as [`FIELD_MANAGER`] with `force`: creates it, or converges the
/// fields we own to `obj` — the same request whether it is the first attempt or the tenth,
/// and a no-op (no new resourceVersion) when nothing differs.
pub async fn apply<K>(api: &Api<K>, name: &str, obj: &K, target: &str) -> Result<K, StepError>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
{
    crate::fenced(target).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let applied = api
        .patch(name, &params, &Patch::Apply(obj))
        .await
        .map_err(|e| step_error(&e, target))?;
    info!(object = %target, resource_version = applied.meta().resource_version.as_deref().unwrap_or(""), "applied");
    Ok(applied)
}

/// What a check decided about the current state of an object.
#[derive(Debug)]
pub enum Check<T> {
    /// The wait is over.
    Done(T),
    /// The wait can never succeed.
    Fail(StepError),
    /// Not yet; the text says why (published as a progress note when it changes).
    Wait(String),
}

/// Reads `name` once (`None`: it does not exist) and lets `check` decide. A wait is never
/// spent inside a worker: a handler answers "wait" and the saga re-checks later, so a
/// thousand clusters waiting on their control planes hold no worker slot.
pub async fn observe<K, T>(
    api: &Api<K>,
    name: &str,
    what: &str,
    check: impl FnOnce(Option<&K>) -> Check<T>,
) -> Result<Check<T>, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let obj = get_opt(api, name).await.map_err(|e| step_error(&e, what))?;
    Ok(check(obj.as_ref()))
}

/// `name` as it is now, or `None` when it does not exist (one read).
pub async fn look<K>(api: &Api<K>, name: &str, what: &str) -> Result<Option<K>, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    get_opt(api, name).await.map_err(|e| step_error(&e, what))
}

/// `name`, or `None` when it does not exist: a 404 this code asks for (the look before a
/// create or a delete), which the request's span does not count as a failure.
async fn get_opt<K>(api: &Api<K>, name: &str) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    hypersaga_telemetry::http::expecting_absence(api.get_opt(name)).await
}

/// Deletes `name` unless it is already going (404 is success) and says whether it is gone:
/// `Done` when it is, `Wait` (naming the finalizers holding it) while it is not.
pub async fn delete_check<K>(api: &Api<K>, name: &str, what: &str) -> Result<Check<()>, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    delete_check_with(api, name, what, &DeleteParams::default()).await
}

/// [`delete_check`] with `params`: `DeleteParams::foreground()` keeps the object until the
/// garbage collector has removed what it owns, so "gone" means its dependents are gone too.
pub async fn delete_check_with<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    params: &DeleteParams,
) -> Result<Check<()>, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let Some(obj) = get_opt(api, name).await.map_err(|e| step_error(&e, what))? else {
        return Ok(Check::Done(()));
    };
    if obj.meta().deletion_timestamp.is_none() && !delete_with(api, name, what, params).await? {
        return Ok(Check::Done(()));
    }
    let finalizers = obj.meta().finalizers.clone().unwrap_or_default();
    Ok(Check::Wait(if finalizers.is_empty() {
        format!("waiting for {what} to be deleted")
    } else {
        format!(
            "waiting for {what} to be deleted (finalizers: {})",
            finalizers.join(", ")
        )
    }))
}

/// A wait that has lasted past `timeout` (since the command's `waiting_since`) becomes the
/// retryable `code` error: the retry budget, then a pause, take it from there.
pub fn overdue(
    cmd: &hypersaga_bus::StepCommand,
    timeout: Duration,
    code: &str,
    what: &str,
    last: &str,
) -> Option<StepError> {
    let since = cmd.waiting_since?;
    let waited = time::OffsetDateTime::now_utc() - since;
    (waited >= timeout).then(|| {
        StepError::retryable(
            code,
            format!(
                "{what}: still not done after {} s: {last}",
                waited.whole_seconds()
            ),
        )
        .with_target(what)
    })
}

/// How long a handler waits on the management cluster, and how soon it looks again: the one
/// place the "overdue, else wait" rule lives.
#[derive(Clone, Copy, Debug)]
pub struct Waits {
    /// How long one wait may last (since the step's first "wait") before it fails.
    pub timeout: std::time::Duration,
    /// When to look again.
    pub recheck: std::time::Duration,
}

impl Waits {
    /// `kube.available_timeout_s` (else `default_timeout`) and `kube.recheck_interval_ms`
    /// (else [`DEFAULT_RECHECK_INTERVAL`]).
    pub fn from_config(config: &hypersaga_config::Config, default_timeout: Duration) -> Self {
        Self {
            timeout: config
                .kube
                .available_timeout_s
                .map(Duration::from_secs)
                .unwrap_or(default_timeout),
            recheck: config
                .kube
                .recheck_interval_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_RECHECK_INTERVAL),
        }
    }

    /// "Wait, and look again", carrying `memo` to the next look; unless the wait has lasted
    /// its timeout: then the retryable `code`, saying what it last saw (`why`).
    pub fn wait(
        &self,
        cmd: &hypersaga_bus::StepCommand,
        code: &str,
        what: &str,
        why: String,
        memo: serde_json::Value,
    ) -> Result<hypersaga_worker::StepResult, StepError> {
        match overdue(cmd, self.timeout, code, what, &why) {
            Some(e) => Err(e),
            None => Ok(hypersaga_worker::StepResult::Wait {
                message: why,
                recheck_after: self.recheck,
                memo,
            }),
        }
    }
}

/// Deletes `name`; `Ok(false)` when it did not exist (404 is success).
pub async fn delete<K>(api: &Api<K>, name: &str, what: &str) -> Result<bool, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    delete_with(api, name, what, &DeleteParams::default()).await
}

/// [`delete`] with `params` (a propagation policy).
async fn delete_with<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    params: &DeleteParams,
) -> Result<bool, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    crate::fenced(what).await?;
    // Deleting what is gone already is done already: its 404 is no failure.
    let deleted = hypersaga_telemetry::http::expecting_absence(api.delete(name, params)).await;
    match deleted {
        Ok(_) => {
            info!(object = %what, "delete requested");
            Ok(true)
        }
        Err(e) if is_not_found(&e) => {
            debug!(object = %what, "already gone");
            Ok(false)
        }
        Err(e) => Err(step_error(&e, what)),
    }
}

/// A client per management cluster, by name: a step acts on the one its cluster was placed on
/// (`StepContext::management_cluster`).
#[derive(Clone)]
pub struct ManagementClients {
    by_name: std::collections::HashMap<String, kube::Client>,
}

impl std::fmt::Debug for ManagementClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<_> = self.by_name.keys().collect();
        names.sort();
        f.debug_struct("ManagementClients")
            .field("names", &names)
            .finish()
    }
}

impl ManagementClients {
    /// A client for each of `config.kube`'s management clusters (the implicit `default` when
    /// none are listed), built once at start.
    pub async fn from_config(
        config: &hypersaga_config::Config,
    ) -> Result<Self, hypersaga_hypershift::client::Error> {
        let mut by_name = std::collections::HashMap::new();
        for m in config.kube.management_clusters() {
            let client = hypersaga_hypershift::client::client(m.kubeconfig.as_deref()).await?;
            by_name.insert(m.name, client);
        }
        Ok(Self { by_name })
    }

    /// One client, for every name: tests with a single management cluster.
    pub fn single(client: kube::Client) -> Self {
        Self {
            by_name: std::collections::HashMap::from([(
                hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER.to_owned(),
                client,
            )]),
        }
    }

    /// Every management cluster's client, by name (sorted): the sweeper looks on all of them.
    pub fn all(&self) -> Vec<(&str, kube::Client)> {
        let mut all: Vec<_> = self
            .by_name
            .iter()
            .map(|(n, c)| (n.as_str(), c.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all
    }

    /// Every `K` labelled for `tenant` (and `cluster`), on every management cluster.
    pub async fn labelled<K>(
        &self,
        tenant: &hypersaga_model::TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        let mut found = Vec::new();
        for (name, client) in self.all() {
            found.extend(labelled::<K>(client, name, tenant, cluster).await?);
        }
        Ok(found)
    }

    /// The client of the management cluster `made` is on (its `location`).
    pub fn on(&self, made: &hypersaga_bus::sweep::Made) -> Result<kube::Client, StepError> {
        self.by_name.get(&made.location).cloned().ok_or_else(|| {
            StepError::terminal(
                "UnknownManagementCluster",
                format!(
                    "management cluster {:?} is not configured for this service (kube.management_clusters)",
                    made.location
                ),
            )
            .with_target("kube.management_clusters")
        })
    }

    /// The client of the management cluster `cmd`'s cluster lives on. One this service does
    /// not know is terminal: retrying cannot configure it.
    pub fn of(&self, cmd: &hypersaga_bus::StepCommand) -> Result<kube::Client, StepError> {
        let name = &cmd.context.management_cluster;
        self.by_name.get(name).cloned().ok_or_else(|| {
            StepError::terminal(
                "UnknownManagementCluster",
                format!("management cluster {name:?} is not configured for this service (kube.management_clusters)"),
            )
            .with_target("kube.management_clusters")
        })
    }
}

/// The label selector of what hypersaga made for `tenant` (and `cluster`).
pub fn selector(tenant: &hypersaga_model::TenantId, cluster: Option<&str>) -> String {
    match cluster {
        Some(c) => format!("{LABEL_TENANT}={tenant},{LABEL_CLUSTER}={c}"),
        None => format!("{LABEL_TENANT}={tenant},{LABEL_CLUSTER}"),
    }
}

/// Every `K` on management cluster `on` (its `client`) labelled for `tenant` (and `cluster`),
/// in every namespace, as what hypersaga made.
pub async fn labelled<K>(
    client: kube::Client,
    on: &str,
    tenant: &hypersaga_model::TenantId,
    cluster: Option<&str>,
) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let api: Api<K> = Api::all(client);
    let params = kube::api::ListParams::default().labels(&selector(tenant, cluster));
    let kind = K::kind(&());
    let listed = api.list(&params).await.map_err(|e| {
        step_error(
            &e,
            &format!("{kind} labelled {}", selector(tenant, cluster)),
        )
    })?;
    Ok(listed
        .items
        .iter()
        .filter_map(|o| {
            let meta = o.meta();
            let name = meta.name.clone()?;
            let label = |k: &str| meta.labels.as_ref().and_then(|l| l.get(k)).cloned();
            Some(hypersaga_bus::sweep::Made {
                cluster: label(LABEL_CLUSTER)?,
                target: Some(hypersaga_bus::plan::Target::ManagementCluster),
                kind: format!("{}/{kind}", K::api_version(&())),
                id: match &meta.namespace {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name.clone(),
                },
                name,
                api_version: K::api_version(&()).into_owned(),
                location: on.to_owned(),
                operation: label(LABEL_SAGA).unwrap_or_default(),
                of: String::new(),
            })
        })
        .collect())
}

/// Deletes what [`labelled`] found (a namespaced `K`) and says whether it is gone: `Done`
/// when it is, `Wait` (naming the finalizers holding it) while it is not.
pub async fn delete_made<K>(
    client: kube::Client,
    made: &hypersaga_bus::sweep::Made,
) -> Result<Check<()>, StepError>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let what = format!("{} {} on {}", made.kind, made.id, made.location);
    let Some((ns, name)) = made.id.split_once('/') else {
        return Err(StepError::terminal(
            "InvalidInput",
            format!("{what}: a namespaced object's id is namespace/name"),
        ));
    };
    delete_check(&Api::<K>::namespaced(client, ns), name, &what).await
}

/// [`delete_made`] of a cluster-scoped `K` (a Namespace).
pub async fn delete_made_cluster_scoped<K>(
    client: kube::Client,
    made: &hypersaga_bus::sweep::Made,
) -> Result<Check<()>, StepError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let what = format!("{} {} on {}", made.kind, made.id, made.location);
    delete_check(&Api::<K>::all(client), &made.id, &what).await
}
