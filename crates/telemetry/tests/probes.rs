//! The probes a role serves, as an orchestrator and a scraper see them.

use std::net::SocketAddr;
use std::time::Duration;

use hypersaga_telemetry::probes;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn liveness_readiness_and_metrics_answer_as_an_orchestrator_expects() {
    let port = hypersaga_procs::free_port().unwrap();
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let stop = CancellationToken::new();
    tokio::spawn(probes::serve(listen, stop.clone()));
    let base = format!("http://{listen}");
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move {
            for _ in 0..50 {
                if let Ok(r) = http.get(&url).send().await {
                    return (r.status().as_u16(), r.text().await.unwrap_or_default());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("{url} never answered")
        }
    };

    assert_eq!(get("/healthz").await.0, 200);
    // Not ready until the role says so, and again not while it drains.
    assert_eq!(get("/readyz").await.0, 503);
    probes::set_ready(true);
    assert_eq!(get("/readyz").await.0, 200);
    probes::set_ready(false);
    assert_eq!(get("/readyz").await.0, 503);

    metrics::counter!("hypersaga_test_events_total", "kind" => "probe").increment(3);
    metrics::histogram!("hypersaga_step_attempt_seconds", "step" => "probe").record(0.2);
    let (status, text) = get("/metrics").await;
    assert_eq!(status, 200);
    assert!(
        text.contains("hypersaga_test_events_total{kind=\"probe\"} 3"),
        "{text}"
    );
    // Histograms with buckets (which add up across replicas), not summaries.
    assert!(
        text.contains("hypersaga_step_attempt_seconds_bucket{step=\"probe\",le=\"0.25\"} 1"),
        "{text}"
    );
    assert!(!text.contains("quantile="), "{text}");
    stop.cancel();
}
