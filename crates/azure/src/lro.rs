//! Long-running operations, as ARM RPC v1.0 defines them.
//!
//! * `Azure-AsyncOperation` (preferred): poll the operation resource until its `status` is
//!   `Succeeded`, `Failed` or `Canceled`.
//! * `Location` (DELETE/POST, some PUTs): 202 while running, then the final answer.
//! * Neither, but a 200/201 whose `provisioningState` is not terminal: GET the resource until
//!   it is.
//!
//! Each poll waits for `Retry-After` when ARM sends one, else the configured interval, and
//! logs a `tracing` event so a 60-second private-DNS wait is visible. A poll that fails
//! transiently (connection reset, 5xx, 429) is retried a few times with `backon` here — the
//! operation itself is still running on Azure's side, so failing the whole step for one lost
//! poll would only restart the wait.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use azure_core::http::Method;
use backon::{ExponentialBuilder, Retryable as _};
use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use crate::client::Inner;
use crate::error::{ArmError, ArmErrorBody, Result};
use crate::request::{log_path, Answer};

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

/// The overall time budget of one operation.
struct Deadline {
    start: Instant,
    timeout: Duration,
}

impl Deadline {
    fn new(timeout: Duration) -> Self {
        Self { start: Instant::now(), timeout }
    }

    /// Sleeps `wait` (cut to what is left); `LroTimeout` when nothing is left.
    async fn sleep(&self, wait: Duration, path: &str) -> Result<()> {
        let remaining = self.timeout.saturating_sub(self.start.elapsed());
        if remaining.is_zero() {
            return Err(ArmError::LroTimeout { path: path.to_owned(), timeout: self.timeout });
        }
        tokio::time::sleep(wait.min(remaining)).await;
        Ok(())
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// PUT and wait; returns the final resource.
pub(crate) async fn put(inner: &Inner, url: &Url, body: &Value) -> Result<Value> {
    let path = log_path(url);
    let deadline = Deadline::new(inner.lro_timeout);
    let answer = inner.send(Method::Put, url, Some(body), 1).await?;
    if !answer.is_success() {
        return Err(answer.into_error(&Method::Put, &path));
    }
    let first_wait = answer.retry_after().unwrap_or(inner.poll_interval);
    if let Some(op) = answer.header("azure-asyncoperation") {
        let op = inner.trusted_url(op)?;
        wait_operation(inner, &op, first_wait, &deadline, &path).await?;
        return wait_provisioned(inner, url, Duration::ZERO, &deadline).await;
    }
    if answer.status == 202 {
        if let Some(location) = answer.header("location") {
            let location = inner.trusted_url(location)?;
            let done = wait_location(inner, &location, first_wait, &deadline, &path).await?;
            if !done.is_success() {
                return Err(done.into_error(&Method::Get, &log_path(&location)));
            }
        }
        return wait_provisioned(inner, url, first_wait, &deadline).await;
    }
    match answer.json(&path)? {
        None => wait_provisioned(inner, url, Duration::ZERO, &deadline).await,
        Some(resource) => match provisioning_state(&resource) {
            State::Succeeded => Ok(resource),
            State::Running => wait_provisioned(inner, url, first_wait, &deadline).await,
            s => Err(provisioning_failed(&path, s, answer.request_id())),
        },
    }
}

/// DELETE and wait until gone.
pub(crate) async fn delete(inner: &Inner, url: &Url) -> Result<()> {
    let path = log_path(url);
    let deadline = Deadline::new(inner.lro_timeout);
    let answer = inner.send(Method::Delete, url, None, 1).await?;
    if matches!(answer.status, 204 | 404) {
        return Ok(());
    }
    if !answer.is_success() {
        return Err(answer.into_error(&Method::Delete, &path));
    }
    let first_wait = answer.retry_after().unwrap_or(inner.poll_interval);
    if let Some(op) = answer.header("azure-asyncoperation") {
        let op = inner.trusted_url(op)?;
        return wait_operation(inner, &op, first_wait, &deadline, &path).await;
    }
    if answer.status == 202 {
        return match answer.header("location") {
            Some(location) => {
                let location = inner.trusted_url(location)?;
                let done = wait_location(inner, &location, first_wait, &deadline, &path).await?;
                if done.is_success() || done.status == 404 {
                    Ok(())
                } else {
                    Err(done.into_error(&Method::Get, &log_path(&location)))
                }
            }
            None => wait_gone(inner, url, first_wait, &deadline).await,
        };
    }
    Ok(())
}

/// Polls an `Azure-AsyncOperation` URL until the operation's `status` is terminal.
async fn wait_operation(inner: &Inner, op: &Url, first_wait: Duration, deadline: &Deadline, subject: &str) -> Result<()> {
    let op_path = log_path(op);
    let mut wait = first_wait;
    loop {
        deadline.sleep(wait, subject).await?;
        let answer = poll(inner, op).await?;
        if !answer.is_success() {
            // 404 on an operation URL: ARM forgot it; let the step retry from the top.
            return Err(answer.into_error(&Method::Get, &op_path));
        }
        let body = answer.json(&op_path)?.unwrap_or_default();
        let Some(status) = body.get("status").and_then(Value::as_str) else {
            return Err(ArmError::InvalidResponse { path: op_path, message: "operation has no `status`".into() });
        };
        match State::parse(status) {
            State::Succeeded => {
                tracing::info!(arm.path = %subject, elapsed_ms = deadline.elapsed_ms(), "ARM operation succeeded");
                return Ok(());
            }
            state @ (State::Failed | State::Canceled) => {
                let error = body
                    .get("error")
                    .and_then(|e| serde_json::from_value::<ArmErrorBody>(e.clone()).ok())
                    .unwrap_or_default();
                return Err(ArmError::OperationFailed {
                    path: subject.to_owned(),
                    status: state.label().to_owned(),
                    error,
                    request_id: answer.request_id(),
                });
            }
            State::Running => {
                wait = answer.retry_after().unwrap_or(inner.poll_interval);
                tracing::info!(
                    arm.path = %subject,
                    arm.operation_status = status,
                    elapsed_ms = deadline.elapsed_ms(),
                    next_poll_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "ARM operation still running"
                );
            }
        }
    }
}

/// Polls a `Location` URL until it stops answering 202; returns that final answer.
async fn wait_location(inner: &Inner, location: &Url, first_wait: Duration, deadline: &Deadline, subject: &str) -> Result<Answer> {
    let mut wait = first_wait;
    loop {
        deadline.sleep(wait, subject).await?;
        let answer = poll(inner, location).await?;
        if answer.status != 202 {
            tracing::info!(arm.path = %subject, status = answer.status, elapsed_ms = deadline.elapsed_ms(), "ARM operation finished");
            return Ok(answer);
        }
        wait = answer.retry_after().unwrap_or(inner.poll_interval);
        tracing::info!(
            arm.path = %subject,
            elapsed_ms = deadline.elapsed_ms(),
            next_poll_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "ARM operation still running (202)"
        );
    }
}

/// GETs the resource until its `provisioningState` is terminal; returns it when `Succeeded`.
async fn wait_provisioned(inner: &Inner, url: &Url, first_wait: Duration, deadline: &Deadline) -> Result<Value> {
    let path = log_path(url);
    let mut wait = first_wait;
    loop {
        if !wait.is_zero() {
            deadline.sleep(wait, &path).await?;
        }
        let answer = poll(inner, url).await?;
        if answer.status == 404 {
            return Err(ArmError::InvalidResponse { path, message: "resource vanished while being created".into() });
        }
        let Some(resource) = answer.json(&path)? else {
            return Err(ArmError::InvalidResponse { path, message: "empty body for resource GET".into() });
        };
        match provisioning_state(&resource) {
            State::Succeeded => return Ok(resource),
            State::Running => {
                wait = answer.retry_after().unwrap_or(inner.poll_interval);
                let state = resource.pointer("/properties/provisioningState").and_then(|v| v.as_str()).unwrap_or("");
                tracing::info!(
                    arm.path = %path,
                    arm.provisioning_state = state,
                    elapsed_ms = deadline.elapsed_ms(),
                    "resource still provisioning"
                );
            }
            s => return Err(provisioning_failed(&path, s, answer.request_id())),
        }
    }
}

/// GETs the resource until ARM answers 404 (delete with neither polling header).
async fn wait_gone(inner: &Inner, url: &Url, first_wait: Duration, deadline: &Deadline) -> Result<()> {
    let path = log_path(url);
    let mut wait = first_wait;
    loop {
        deadline.sleep(wait, &path).await?;
        let answer = poll(inner, url).await?;
        if answer.status == 404 {
            return Ok(());
        }
        wait = answer.retry_after().unwrap_or(inner.poll_interval);
        tracing::info!(arm.path = %path, elapsed_ms = deadline.elapsed_ms(), "resource still deleting");
    }
}

/// One poll GET, retried a few times on transient failure. Returns 2xx and 404 answers;
/// any other status becomes an error.
async fn poll(inner: &Inner, url: &Url) -> Result<Answer> {
    let attempt = AtomicU32::new(0);
    let min_delay = inner.poll_interval.min(Duration::from_secs(1));
    let once = || async {
        let n = attempt.fetch_add(1, Ordering::Relaxed) + 1;
        let answer = inner.send(Method::Get, url, None, n).await?;
        if answer.is_success() || answer.status == 404 {
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
        error: ArmErrorBody { message: format!("provisioningState is {}", state.label()), ..Default::default() },
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
        assert_eq!(provisioning_state(&serde_json::json!({"properties": {}})), State::Succeeded);
        assert_eq!(
            provisioning_state(&serde_json::json!({"properties": {"provisioningState": "Updating"}})),
            State::Running
        );
    }
}
