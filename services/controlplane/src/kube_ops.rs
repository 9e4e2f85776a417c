//! Management-cluster plumbing shared by the controlplane and nodepool handlers: server-side
//! apply, watch-based waits, delete-and-wait, and the mapping of `kube` errors to
//! [`StepError`]s. The nodepool service re-uses this module rather than copying it.

use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use hypersaga_bus::StepError;
use hypersaga_hypershift::client::{classify, is_not_found};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::{debug, info, warn};

/// The field manager of every server-side apply hypersaga makes.
pub const FIELD_MANAGER: &str = "hypersaga";

/// Where a handler reports what it is waiting on: stepkit's trait, shared by every step
/// service (the worker's `Progress` under the bus, `LogNotes` or a collector elsewhere).
pub use hypersaga_stepkit::{LogNotes, Notes};

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
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let applied = api.patch(name, &params, &Patch::Apply(obj)).await.map_err(|e| step_error(&e, target))?;
    info!(object = %target, resource_version = applied.meta().resource_version.as_deref().unwrap_or(""), "applied");
    Ok(applied)
}

/// What a wait check decided about the current state of the watched object.
pub enum Check<T> {
    /// The wait is over.
    Done(T),
    /// The wait can never succeed.
    Fail(StepError),
    /// Not yet; the text says why (published as a progress note when it changes).
    Wait(String),
}

/// Why a wait ended without [`Check::Done`].
#[derive(Debug)]
pub enum WaitError {
    /// The timeout elapsed; `last` is the last reason for waiting.
    TimedOut { last: String },
    /// The check failed, or the watch failed terminally.
    Failed(StepError),
}

/// Watches the object `name` (a kube watch, resumed with backoff on transient errors;
/// `what` names it in errors, `Kind/ns/name`) and calls `check` with its current state (`None`: it does not exist) on every change, until
/// `check` decides or `timeout` elapses. Progress notes are published when the reason for
/// waiting changes.
pub async fn wait_for<K, T>(
    api: Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    notes: &dyn Notes,
    mut check: impl FnMut(Option<&K>) -> Check<T> + Send,
) -> Result<T, WaitError>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let target = what.to_owned();
    let mut last = String::from("no state observed yet");
    let mut stream = std::pin::pin!(watcher::watch_object(api, name).default_backoff());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let next = tokio::time::timeout_at(deadline, stream.next()).await;
        let item = match next {
            Err(_) => return Err(WaitError::TimedOut { last }),
            Ok(None) => {
                return Err(WaitError::Failed(StepError::retryable("WatchEnded", format!("watch of {target} ended"))));
            }
            Ok(Some(item)) => item,
        };
        let obj = match item {
            Ok(obj) => obj,
            Err(e) => {
                if let Some(kube_err) = watch_kube_error(&e) {
                    let se = step_error(kube_err, &target);
                    if !se.is_retryable() {
                        return Err(WaitError::Failed(se));
                    }
                }
                warn!(object = %target, error = %e, "watch failed; resuming with backoff");
                continue;
            }
        };
        match check(obj.as_ref()) {
            Check::Done(t) => return Ok(t),
            Check::Fail(e) => return Err(WaitError::Failed(e)),
            Check::Wait(why) => {
                if why != last {
                    debug!(object = %target, %why, "waiting");
                    notes.note(why.clone()).await;
                    last = why;
                }
            }
        }
    }
}

fn watch_kube_error(e: &watcher::Error) -> Option<&kube::Error> {
    match e {
        watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k) | watcher::Error::WatchFailed(k) => {
            Some(k)
        }
        _ => None,
    }
}

/// Deletes `name` (404 is success) and waits, by watch, until it is gone — finalizers
/// included. `what` names the object in progress notes and errors (`Kind/ns/name`).
pub async fn delete_and_wait<K>(
    api: Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    notes: &dyn Notes,
) -> Result<(), WaitError>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    if !delete(&api, name, what).await.map_err(WaitError::Failed)? {
        return Ok(());
    }
    wait_for(api, name, what, timeout, notes, |obj| match obj {
        None => Check::Done(()),
        Some(o) => {
            let finalizers = o.meta().finalizers.clone().unwrap_or_default();
            if finalizers.is_empty() {
                Check::Wait(format!("waiting for {what} to be deleted"))
            } else {
                Check::Wait(format!("waiting for {what} to be deleted (finalizers: {})", finalizers.join(", ")))
            }
        }
    })
    .await?;
    info!(object = %what, "deleted");
    Ok(())
}

/// Deletes `name`; `Ok(false)` when it did not exist (404 is success).
pub async fn delete<K>(api: &Api<K>, name: &str, what: &str) -> Result<bool, StepError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
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
