//! The running command's fence in front of every call a step makes that changes something:
//! ARM writes through [`WorkerGuard`] (installed in every tenant's client), management-cluster
//! writes and OIDC blob writes through [`fenced`]. See `hypersaga_worker::before_mutation`.

use hypersaga_azure::MutationGuard;
use hypersaga_bus::StepError;

/// Asks the worker whether the command being run may still change something (outside a
/// worker, always yes). The refusal is a retryable error the worker does not report: it drops
/// the command, or hands it back for a moment when the saga record read lags.
pub async fn fenced(target: &str) -> Result<(), StepError> {
    hypersaga_worker::before_mutation()
        .await
        .map_err(|e| StepError::retryable("Fenced", e.to_string()).with_target(target))
}

/// [`MutationGuard`] asking the worker's fence before every ARM write or delete.
#[derive(Debug)]
pub(crate) struct WorkerGuard;

#[async_trait::async_trait]
impl MutationGuard for WorkerGuard {
    async fn allow(&self) -> Result<(), String> {
        hypersaga_worker::before_mutation()
            .await
            .map_err(|e| e.to_string())
    }
}
