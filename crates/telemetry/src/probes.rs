//! What an orchestrator and a metrics scraper ask of every role, over plain HTTP on a port of
//! its own (`health.listen`):
//! - `GET /healthz`: the process is alive (its runtime answers);
//! - `GET /readyz`: the role is ready for work (connected to the bus, consumers open; the
//!   gateway listening) and not draining: 503 otherwise, so a rollout waits for it and traffic
//!   leaves it before it stops;
//! - `GET /metrics`: Prometheus text of the role's metrics (`hypersaga_…`).
//!
//! Readiness is one flag per process, since a process runs one role.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio_util::sync::CancellationToken;

static READY: AtomicBool = AtomicBool::new(false);

/// Says the role is ready for work (or, `false`, no longer: it is draining).
pub fn set_ready(ready: bool) {
    READY.store(ready, Ordering::SeqCst);
}

pub fn is_ready() -> bool {
    READY.load(Ordering::SeqCst)
}

/// The process's metrics recorder, installed on first use unless [`crate::init_service`]
/// installed it (with OTLP export) before; later calls return the same handle. `None` if
/// another recorder was installed first.
pub fn metrics() -> Option<&'static PrometheusHandle> {
    crate::recorder::install(None)
}

/// Serves the probes and metrics on `listen` until `shutdown`.
pub async fn serve(listen: SocketAddr, shutdown: CancellationToken) -> std::io::Result<()> {
    let handle = metrics();
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get(|| async {
                if is_ready() {
                    (StatusCode::OK, "ready\n")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
                }
            }),
        )
        .route(
            "/metrics",
            get(move || async move {
                match handle {
                    Some(h) => (StatusCode::OK, h.render()),
                    None => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "metrics recorder not installed\n".to_owned(),
                    ),
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind(listen).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
