//! [`Notes`]: what a handler tells users while it waits.

use hypersaga_worker::Progress;

/// Where a handler's progress notes go. Under the worker they are published on the bus
/// ([`Progress`]); when a handler is called directly (tests, tools) they go to the log
/// ([`LogNotes`]). Handlers take `&dyn Notes` so both work without a NATS connection.
#[async_trait::async_trait]
pub trait Notes: Send + Sync {
    /// Says what the step is waiting on (best effort; never fails the step).
    async fn note(&self, message: String);
}

#[async_trait::async_trait]
impl Notes for Progress {
    async fn note(&self, message: String) {
        Progress::note(self, message).await;
    }
}

/// Notes written to the log at `info`, for handlers run outside the worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogNotes;

#[async_trait::async_trait]
impl Notes for LogNotes {
    async fn note(&self, message: String) {
        tracing::info!(note = %message, "progress");
    }
}
