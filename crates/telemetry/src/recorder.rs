//! The process's one `metrics` recorder: Prometheus text for `/metrics`, and, when an OTLP
//! endpoint is set, the same metrics over OTLP ([`crate::otel::meter_provider`]), through
//! one fan-out so that every `metrics::counter!`/`gauge!`/`histogram!` reaches both.
//!
//! Every histogram has buckets (never the exporter's default summary, whose quantiles cannot
//! be added up across replicas), the same on both paths: [`buckets`].

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Seconds, for calls answered at once (the semantic conventions' buckets for request
/// durations): the gateway's requests, and the default for any other histogram.
const REQUEST: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// Seconds, for one attempt of a step: a few ARM or Kubernetes calls, up to the long polls of
/// a wait.
const STEP: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Seconds, for a whole operation: about 20 s against the emulators, 10 to 20 minutes for a
/// real hosted control plane and its nodes, up to its deadline.
const OPERATION: &[f64] = &[
    1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0,
    3600.0, 7200.0,
];

/// Seconds a request waits in place for its slot of the ARM budget (at most the deferral
/// threshold: a longer wait gives the step back instead).
const BUDGET: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The buckets of each histogram that does not use [`REQUEST`].
const BY_METRIC: &[(&str, &[f64])] = &[
    ("hypersaga_step_attempt_seconds", STEP),
    ("hypersaga_operation_duration_seconds", OPERATION),
    ("hypersaga_arm_budget_wait_seconds", BUDGET),
];

/// The bucket bounds of the histogram `name`.
pub(crate) fn buckets(name: &str) -> &'static [f64] {
    BY_METRIC
        .iter()
        .find(|(metric, _)| *metric == name)
        .map_or(REQUEST, |(_, b)| b)
}

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process's recorder once: Prometheus, fanned out to `otlp` when given. Later
/// calls return the same handle (and drop their `otlp`). `None` if another recorder was
/// installed first.
pub(crate) fn install(
    otlp: Option<metrics_exporter_opentelemetry::Recorder>,
) -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let prometheus = prometheus();
            let handle = prometheus.handle();
            let installed = match otlp {
                Some(otlp) => metrics::set_global_recorder(
                    metrics_util::layers::FanoutBuilder::default()
                        .add_recorder(prometheus)
                        .add_recorder(otlp)
                        .build(),
                )
                .is_ok(),
                None => metrics::set_global_recorder(prometheus).is_ok(),
            };
            installed.then(|| {
                upkeep(handle.clone());
                handle
            })
        })
        .as_ref()
}

/// How often the recorder's histograms are drained into their buckets.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Drains the histograms' samples every [`UPKEEP_EVERY`]: the Prometheus recorder keeps each
/// sample until a scrape (or an upkeep) folds it into the buckets, so a process nobody
/// scrapes would otherwise pile them up without end. A thread of its own, since the recorder
/// may be installed before, or outside, any runtime.
fn upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_EVERY);
                handle.run_upkeep();
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot drain histograms between scrapes");
    }
}

/// The Prometheus recorder, with buckets for every histogram.
fn prometheus() -> metrics_exporter_prometheus::PrometheusRecorder {
    // Only an empty list is refused, and none of ours is.
    let builder = BY_METRIC.iter().fold(
        PrometheusBuilder::new()
            .set_buckets(REQUEST)
            .expect("non-empty buckets"),
        |builder, (name, buckets)| {
            builder
                .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
                .expect("non-empty buckets")
        },
    );
    builder.build_recorder()
}

/// The revision the binary was built from: `HYPERSAGA_REVISION` at build time (the image
/// build passes the commit: `--build-arg HYPERSAGA_REVISION=…`), else `unknown`.
const REVISION: &str = match option_env!("HYPERSAGA_REVISION") {
    Some(r) if !r.is_empty() => r,
    _ => "unknown",
};

/// `hypersaga_build_info{version, revision, role}`, always 1: which build each process of each
/// role runs (and, by its absence, which role has no process scraped).
pub(crate) fn build_info(role: &str) {
    metrics::gauge!(
        "hypersaga_build_info",
        "version" => env!("CARGO_PKG_VERSION"),
        "revision" => REVISION,
        "role" => role.to_owned(),
    )
    .set(1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_histogram_has_increasing_buckets() {
        for list in [REQUEST, STEP, OPERATION, BUDGET] {
            assert!(!list.is_empty());
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
        assert_eq!(buckets("hypersaga_step_attempt_seconds"), STEP);
        assert_eq!(
            buckets("hypersaga_gateway_request_duration_seconds"),
            REQUEST
        );
    }
}
