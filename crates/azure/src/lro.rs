//! Long-running operations, as ARM RPC v1.0 defines them.
//!
//! * `Azure-AsyncOperation` (preferred): poll the operation resource until its `status` is
//!   `Succeeded`, `Failed` or `Canceled`.
//! * `Location` (DELETE/POST, some PUTs): 202 while running, then the final answer.
//! * Neither, but a 200/201 whose `provisioningState` is not terminal: GET the resource until
//!   it is (or, for a 202 DELETE, until it is gone).
//!
//! An operation in flight is a value, [`Pending`]: what to poll and when. A step handler
//! starts an operation ([`begin_put`], [`begin_delete`]), and when it is still running hands
//! the `Pending` to the saga, which re-checks it later ([`poll_once`]) — so a 60-second
//! private-DNS operation holds no worker while it runs. [`put`] and [`delete`] drive the same
//! functions to the end, for callers that may wait in place. A poll that fails transiently
//! (connection reset, 5xx, 429) is retried a few times with `backon` here — the operation
//! itself is still running on Azure's side, so failing the whole step for one lost poll would
//! only restart the wait.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use azure_core::http::Method;
use backon::{ExponentialBuilder, Retryable as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use crate::client::Inner;
use crate::error::{ArmError, ArmErrorBody, Result};
use crate::request::{Answer, log_path};

/// Extra attempts for one failing poll before the error surfaces.
const POLL_RETRIES: usize = 3;

/// Where a long-running operation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Succeeded,
    Failed,
    Canceled,
}

impl State {
    /// ARM's terminal states are exactly `Succeeded`, `Failed`, `Canceled`; anything else
    /// (`InProgress`, `Creating`, `Updating`, `Deleting`, `Accepted`, RP-specific) runs on.
    fn parse(s: &str) -> Self {
        if s.eq_ignore_ascii_case("Succeeded") {
            Self::Succeeded
        } else if s.eq_ignore_ascii_case("Failed") {
            Self::Failed
        } else if s.eq_ignore_ascii_case("Canceled") || s.eq_ignore_ascii_case("Cancelled") {
            Self::Canceled
        } else {
            Self::Running
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Canceled => "Canceled",
        }
    }
}

/// `properties.provisioningState` of a resource body; resources without one are done.
fn provisioning_state(resource: &Value) -> State {
    resource
        .pointer("/properties/provisioningState")
        .and_then(Value::as_str)
        .map_or(State::Succeeded, State::parse)
}

/// How a running operation is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PollKind {
    /// Poll the `Azure-AsyncOperation` URL for its `status`.
    Operation,
    /// Poll the `Location` URL until it stops answering 202.
    Location,
    /// GET the resource until its `provisioningState` is terminal.
    Provisioning,
    /// GET the resource until it answers 404 (a 202 DELETE with no polling header).
    Gone,
}

/// A long-running operation in flight: enough to poll it again later, from any process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// `PUT` or `DELETE`.
    pub method: String,
    /// The resource's URL (with its api-version).
    pub resource: String,
    /// How to follow it.
    pub kind: PollKind,
    /// What to GET next (an operation URL, a `Location`, or the resource itself).
    pub poll: String,
    /// Azure's `Retry-After`, else the configured interval: poll no sooner.
    pub after_ms: u64,
}

impl Pending {
    fn new(method: &Method, resource: &Url, kind: PollKind, poll: &Url, after: Duration) -> Self {
        Self {
            method: method.as_ref().to_owned(),
            resource: resource.to_string(),
            kind,
            poll: poll.to_string(),
            after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// How long to wait before the next poll.
    pub fn after(&self) -> Duration {
        Duration::from_millis(self.after_ms)
    }

    /// The resource's path (no query), for logs and messages.
    pub fn resource_path(&self) -> String {
        Url::parse(&self.resource)
            .map(|u| log_path(&u))
            .unwrap_or_else(|_| self.resource.clone())
    }

    fn is_put(&self) -> bool {
        self.method.eq_ignore_ascii_case("PUT")
    }
}

/// Where an operation got to.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Finished: the resource as a final GET shows it (a PUT), or nothing (a DELETE).
    Done(Option<Value>),
    /// Still running: poll `Pending` again after `Pending::after`.
    Running(Pending),
}

/// Sends the PUT; the resource when ARM finished at once, else what to poll.
pub(crate) async fn begin_put(inner: &Inner, url: &Url, body: &Value) -> Result<Progress> {
    let path = log_path(url);
    let answer = inner.send(Method::Put, url, Some(body), 1).await?;
    if !answer.is_success() {
        return Err(answer.into_error(&Method::Put, &path));
    }
    let after = answer.retry_after().unwrap_or(inner.poll_interval);
    if let Some(pending) = accepted(inner, &Method::Put, url, &answer, after)? {
        return Ok(Progress::Running(pending));
    }
    match answer.json(&path)? {
        None => provisioned(inner, url, after).await,
        Some(resource) => match provisioning_state(&resource) {
            State::Succeeded => Ok(Progress::Done(Some(resource))),
            State::Running => Ok(Progress::Running(Pending::new(
                &Method::Put,
                url,
                PollKind::Provisioning,
                url,
                after,
            ))),
            s => Err(provisioning_failed(&path, s, answer.request_id())),
        },
    }
}

/// Sends the DELETE; done when ARM finished at once (or the resource was absent already).
pub(crate) async fn begin_delete(inner: &Inner, url: &Url) -> Result<Progress> {
    let path = log_path(url);
    // Deleting what is gone already is done already.
    let answer =
        hypersaga_telemetry::http::expecting_absence(inner.send(Method::Delete, url, None, 1))
            .await?;
    if answer.status == 204 || answer.is_absent() {
        return Ok(Progress::Done(None));
    }
    if !answer.is_success() {
        return Err(answer.into_error(&Method::Delete, &path));
    }
    let after = answer.retry_after().unwrap_or(inner.poll_interval);
    Ok(
        match accepted(inner, &Method::Delete, url, &answer, after)? {
            Some(pending) => Progress::Running(pending),
            None => Progress::Done(None),
        },
    )
}

/// What to poll when ARM took a PUT or DELETE on without finishing it: the
/// `Azure-AsyncOperation` URL; else, on a 202, the `Location` URL; else (a 202 naming neither)
/// the resource itself, until it is provisioned (PUT) or gone (DELETE). `None`: ARM answered
/// as if it had finished. Only URLs on ARM's own origin are accepted.
fn accepted(
    inner: &Inner,
    method: &Method,
    url: &Url,
    answer: &Answer,
    after: Duration,
) -> Result<Option<Pending>> {
    if let Some(op) = answer.header("azure-asyncoperation") {
        let op = inner.trusted_url(op)?;
        return Ok(Some(Pending::new(
            method,
            url,
            PollKind::Operation,
            &op,
            after,
        )));
    }
    if answer.status != 202 {
        return Ok(None);
    }
    Ok(Some(match answer.header("location") {
        Some(location) => {
            let location = inner.trusted_url(location)?;
            Pending::new(method, url, PollKind::Location, &location, after)
        }
        None if *method == Method::Delete => Pending::new(method, url, PollKind::Gone, url, after),
        None => Pending::new(method, url, PollKind::Provisioning, url, after),
    }))
}

/// Polls once. Only URLs on ARM's own origin are followed (the memo came over the bus).
pub(crate) async fn poll_once(inner: &Inner, p: &Pending) -> Result<Progress> {
    let bad = |what: &str, e: url::ParseError| ArmError::InvalidResponse {
        path: p.resource.clone(),
        message: format!("bad {what} URL: {e}"),
    };
    let resource = inner.trusted_url(
        Url::parse(&p.resource)
            .map_err(|e| bad("resource", e))?
            .as_str(),
    )?;
    let target = inner.trusted_url(Url::parse(&p.poll).map_err(|e| bad("poll", e))?.as_str())?;
    let path = log_path(&resource);
    match p.kind {
        PollKind::Operation => {
            let op_path = log_path(&target);
            let answer = poll(inner, &target).await?;
            if !answer.is_success() {
                // 404 on an operation URL: ARM forgot it; let the step retry from the top.
                return Err(answer.into_error(&Method::Get, &op_path));
            }
            let body = answer.json(&op_path)?.unwrap_or_default();
            let Some(status) = body.get("status").and_then(Value::as_str) else {
                return Err(ArmError::InvalidResponse {
                    path: op_path,
                    message: "operation has no `status`".into(),
                });
            };
            match State::parse(status) {
                State::Succeeded if p.is_put() => {
                    provisioned(inner, &resource, inner.poll_interval).await
                }
                State::Succeeded => Ok(Progress::Done(None)),
                state @ (State::Failed | State::Canceled) => {
                    let error = body
                        .get("error")
                        .and_then(|e| serde_json::from_value::<ArmErrorBody>(e.clone()).ok())
                        .unwrap_or_default();
                    Err(ArmError::OperationFailed {
                        path,
                        status: state.label().to_owned(),
                        error,
                        request_id: answer.request_id(),
                    })
                }
                State::Running => Ok(again(inner, p, &answer)),
            }
        }
        PollKind::Location => {
            // A delete's operation ends with the resource gone.
            let answer = match p.is_put() {
                true => poll(inner, &target).await?,
                false => hypersaga_telemetry::http::expecting_absence(poll(inner, &target)).await?,
            };
            if answer.status == 202 {
                return Ok(again(inner, p, &answer));
            }
            if p.is_put() {
                if !answer.is_success() {
                    return Err(answer.into_error(&Method::Get, &log_path(&target)));
                }
                provisioned(inner, &resource, inner.poll_interval).await
            } else if answer.is_success() || answer.is_absent() {
                Ok(Progress::Done(None))
            } else {
                Err(answer.into_error(&Method::Get, &log_path(&target)))
            }
        }
        PollKind::Provisioning => provisioned(inner, &resource, inner.poll_interval).await,
        PollKind::Gone => {
            let answer =
                hypersaga_telemetry::http::expecting_absence(poll(inner, &resource)).await?;
            if answer.is_absent() {
                Ok(Progress::Done(None))
            } else {
                Ok(again(inner, p, &answer))
            }
        }
    }
}

/// The same operation, to be polled again after the answer's `Retry-After`.
fn again(inner: &Inner, p: &Pending, answer: &Answer) -> Progress {
    let after = answer.retry_after().unwrap_or(inner.poll_interval);
    Progress::Running(Pending {
        after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
        ..p.clone()
    })
}

/// One GET of a resource being created: done when its `provisioningState` is `Succeeded`.
async fn provisioned(inner: &Inner, url: &Url, after: Duration) -> Result<Progress> {
    let path = log_path(url);
    let answer = poll(inner, url).await?;
    if answer.status == 404 {
        return Err(ArmError::InvalidResponse {
            path,
            message: "resource vanished while being created".into(),
        });
    }
    let Some(resource) = answer.json(&path)? else {
        return Err(ArmError::InvalidResponse {
            path,
            message: "empty body for resource GET".into(),
        });
    };
    match provisioning_state(&resource) {
        State::Succeeded => Ok(Progress::Done(Some(resource))),
        State::Running => {
            let after = answer.retry_after().unwrap_or(after);
            Ok(Progress::Running(Pending::new(
                &Method::Put,
                url,
                PollKind::Provisioning,
                url,
                after,
            )))
        }
        s => Err(provisioning_failed(&path, s, answer.request_id())),
    }
}

/// Drives an operation to its end in place, within the client's LRO timeout.
async fn finish(inner: &Inner, first: Progress) -> Result<Option<Value>> {
    let start = Instant::now();
    let mut state = first;
    loop {
        let pending = match state {
            Progress::Done(v) => return Ok(v),
            Progress::Running(p) => p,
        };
        let remaining = inner.lro_timeout.saturating_sub(start.elapsed());
        if remaining.is_zero() {
            return Err(ArmError::LroTimeout {
                path: pending.resource_path(),
                timeout: inner.lro_timeout,
            });
        }
        tracing::info!(
            arm.path = %pending.resource_path(),
            arm.poll = ?pending.kind,
            elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            next_poll_ms = pending.after_ms,
            "ARM operation still running"
        );
        tokio::time::sleep(pending.after().min(remaining)).await;
        state = poll_once(inner, &pending).await?;
    }
}

/// PUT and wait; returns the final resource.
pub(crate) async fn put(inner: &Inner, url: &Url, body: &Value) -> Result<Value> {
    let first = begin_put(inner, url, body).await?;
    finish(inner, first)
        .await?
        .ok_or_else(|| ArmError::InvalidResponse {
            path: log_path(url),
            message: "no resource after the operation".into(),
        })
}

/// DELETE and wait until gone.
pub(crate) async fn delete(inner: &Inner, url: &Url) -> Result<()> {
    let first = begin_delete(inner, url).await?;
    finish(inner, first).await.map(|_| ())
}

/// One poll GET, retried a few times on transient failure. Returns 2xx answers and 404s that
/// say the resource is absent; any other status becomes an error.
async fn poll(inner: &Inner, url: &Url) -> Result<Answer> {
    let attempt = AtomicU32::new(0);
    let min_delay = inner.poll_interval.min(Duration::from_secs(1));
    let once = || async {
        let n = attempt.fetch_add(1, Ordering::Relaxed) + 1;
        let answer = inner.send(Method::Get, url, None, n).await?;
        if answer.is_success() || answer.is_absent() {
            Ok(answer)
        } else {
            Err(answer.into_error(&Method::Get, &log_path(url)))
        }
    };
    once.retry(
        ExponentialBuilder::default()
            .with_min_delay(min_delay)
            .with_max_delay(Duration::from_secs(30))
            .with_max_times(POLL_RETRIES)
            .with_jitter(),
    )
    .sleep(tokio::time::sleep)
    .when(ArmError::is_retryable)
    .adjust(|e, backoff| backoff.map(|d| e.retry_after().unwrap_or(d)))
    .notify(|e, wait| {
        tracing::warn!(arm.path = %log_path(url), error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "ARM poll failed, retrying");
    })
    .await
}

fn provisioning_failed(path: &str, state: State, request_id: Option<String>) -> ArmError {
    ArmError::OperationFailed {
        path: path.to_owned(),
        status: state.label().to_owned(),
        error: ArmErrorBody {
            message: format!("provisioningState is {}", state.label()),
            ..Default::default()
        },
        request_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert_eq!(State::parse("succeeded"), State::Succeeded);
        assert_eq!(State::parse("InProgress"), State::Running);
        assert_eq!(State::parse("Deleting"), State::Running);
        assert_eq!(State::parse("Canceled"), State::Canceled);
        assert_eq!(
            provisioning_state(&serde_json::json!({"properties": {}})),
            State::Succeeded
        );
        assert_eq!(
            provisioning_state(
                &serde_json::json!({"properties": {"provisioningState": "Updating"}})
            ),
            State::Running
        );
    }
}
