//! One trace per saga: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, every role exports its spans,
//! and a create is one trace, continuing the caller's, from the gateway through the
//! coordinator into all five services and their ARM and Kubernetes calls.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use hypersaga_api::v1::cluster_service_client::ClusterServiceClient;

use crate::otlp::{Receiver, Span};
use crate::support::{System, create_request, phase};

const SERVICES: [&str; 7] = [
    "hypersaga-gateway",
    "hypersaga-coordinator",
    "hypersaga-identity",
    "hypersaga-network",
    "hypersaga-dns",
    "hypersaga-controlplane",
    "hypersaga-nodepool",
];

const WORKERS: [&str; 5] = ["identity", "network", "dns", "controlplane", "nodepool"];

#[tokio::test(flavor = "multi_thread")]
async fn a_create_is_one_trace_through_every_service_continuing_the_callers() {
    let receiver = Receiver::start().await;
    let system = System::start_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint),
            // Spans leave within a tenth of a second instead of the SDK's five.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    )
    .await;

    // The caller's own span: the saga's trace goes on from it.
    let trace_id = hex::encode(rand::random::<[u8; 16]>());
    let caller_span = hex::encode(rand::random::<[u8; 8]>());
    let mut request = tonic::Request::new(create_request("traced", 1));
    let metadata = request.metadata_mut();
    metadata.insert(
        "authorization",
        format!("Bearer {}", system.token("acme"))
            .parse()
            .expect("metadata"),
    );
    metadata.insert(
        "traceparent",
        format!("00-{trace_id}-{caller_span}-01")
            .parse()
            .expect("metadata"),
    );
    ClusterServiceClient::new(system.channel().await)
        .create_cluster(request)
        .await
        .expect("create");
    let ready = system.watch_to_end("acme", "traced").await;
    assert_eq!(phase(&ready), "ready", "{ready:?}");

    // Every service has exported the spans of its last step once the nodepool's is in.
    let spans = wait_for_spans(&receiver, &trace_id).await;
    let in_trace: Vec<&Span> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    let services: BTreeSet<&str> = in_trace.iter().map(|s| s.service.as_str()).collect();
    assert_eq!(
        services,
        SERVICES.into_iter().collect(),
        "services with spans in the trace"
    );

    // One trace: no span about this cluster lies outside it.
    let strays: Vec<&Span> = spans
        .iter()
        .filter(|s| s.attr("cluster") == Some("traced") && s.trace_id != trace_id)
        .collect();
    assert!(
        strays.is_empty(),
        "spans of the cluster in other traces: {strays:#?}"
    );

    // Correctly parented: the gateway's call is the caller's child, and every other span's
    // parent is a span of the trace.
    let ids: BTreeSet<&str> = in_trace.iter().map(|s| s.span_id.as_str()).collect();
    let by_id: BTreeMap<&str, &Span> = in_trace.iter().map(|s| (s.span_id.as_str(), *s)).collect();
    let roots: Vec<&&Span> = in_trace
        .iter()
        .filter(|s| !ids.contains(s.parent_span_id.as_str()))
        .collect();
    assert!(
        !roots.is_empty() && roots.iter().all(|s| s.parent_span_id == caller_span),
        "spans whose parent is neither the caller nor in the trace: {roots:#?}"
    );
    assert!(
        roots.iter().all(|s| s.service == "hypersaga-gateway"
            && s.name == "/hypersaga.v1.ClusterService/CreateCluster"),
        "{roots:#?}"
    );
    let parent_service = |s: &Span| {
        by_id
            .get(s.parent_span_id.as_str())
            .map(|p| p.service.clone())
    };

    // Each service's steps carry tenant, cluster, step and attempt, and are children of a
    // coordinator transition.
    for worker in WORKERS {
        let service = format!("hypersaga-{worker}");
        let steps: Vec<&&Span> = in_trace
            .iter()
            .filter(|s| s.service == service && s.name.starts_with(&format!("{worker}.")))
            .collect();
        assert!(!steps.is_empty(), "no step span from {service}");
        for step in steps {
            assert_eq!(step.attr("tenant"), Some("acme"), "{step:#?}");
            assert_eq!(step.attr("cluster"), Some("traced"), "{step:#?}");
            assert!(
                step.attr("step").is_some_and(|s| step.name.starts_with(s)),
                "{step:#?}"
            );
            assert!(
                step.attr("attempt").and_then(|a| a.parse::<u32>().ok()) >= Some(1),
                "{step:#?}"
            );
            assert_eq!(
                parent_service(step).as_deref(),
                Some("hypersaga-coordinator"),
                "{step:#?}"
            );
        }
    }
    // The coordinator's transitions carry the saga and its tenant.
    let transitions: Vec<&&Span> = in_trace.iter().filter(|s| s.name == "saga").collect();
    assert!(!transitions.is_empty());
    assert!(
        transitions
            .iter()
            .all(|s| s.attr("tenant") == Some("acme") && s.attr("saga").is_some()),
        "{transitions:#?}"
    );

    // The calls out: ARM requests under the Azure-facing steps, Kubernetes requests (kube's
    // spans, named for their verb) under the management-cluster ones.
    let arm = |s: &Span| s.name == "arm.request" && s.attr("http.status").is_some();
    let kube = |s: &Span| {
        s.attr("target") == Some("kube_client::client::builder") && s.attr("http.method").is_some()
    };
    type IsCall<'a> = &'a dyn Fn(&Span) -> bool;
    let calls: [(&str, IsCall); 5] = [
        ("hypersaga-identity", &arm),
        ("hypersaga-network", &arm),
        ("hypersaga-dns", &arm),
        ("hypersaga-controlplane", &kube),
        ("hypersaga-nodepool", &kube),
    ];
    for (service, is_call) in calls {
        let of_service: Vec<&&Span> = in_trace.iter().filter(|s| s.service == service).collect();
        let made: Vec<&&&Span> = of_service.iter().filter(|s| is_call(s)).collect();
        assert!(
            !made.is_empty(),
            "no call out from {service}: {of_service:#?}"
        );
        assert!(
            made.iter().all(|c| by_id
                .get(c.parent_span_id.as_str())
                .is_some_and(|p| p.service == service && p.attr("step").is_some())),
            "calls of {service} outside its steps: {made:#?}"
        );
    }
}

/// Waits until the nodepool's successful step has been exported (the last step of a create),
/// and a little longer for the others' last batches.
async fn wait_for_spans(receiver: &Receiver, trace_id: &str) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let spans = receiver.spans();
        let services: BTreeSet<&str> = spans
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .map(|s| s.service.as_str())
            .collect();
        if services.len() == SERVICES.len() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            return receiver.spans();
        }
        assert!(
            Instant::now() < deadline,
            "not every service exported spans of the trace; got {services:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What `/metrics` of the supervised service `name` shows now (Prometheus text).
async fn scrape(system: &System, name: &str) -> String {
    let url = format!("{}/metrics", system.endpoints.health[name]);
    reqwest::get(&url)
        .await
        .and_then(|r| r.error_for_status())
        .unwrap_or_else(|e| panic!("scrape {url}: {e}"))
        .text()
        .await
        .expect("metrics text")
}

/// Whether the metric has a sample whose labels include every one of `labels`.
fn has(text: &str, metric: &str, labels: &[&str]) -> bool {
    samples(text, metric, labels).next().is_some()
}

/// The sum of a metric's samples whose labels include every one of `labels` (0 if none).
fn sample(text: &str, metric: &str, labels: &[&str]) -> f64 {
    samples(text, metric, labels).sum()
}

fn samples<'a>(
    text: &'a str,
    metric: &'a str,
    labels: &'a [&'a str],
) -> impl Iterator<Item = f64> + 'a {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(move |(series, _)| {
            let (name, rest) = series.split_once('{').unwrap_or((series, ""));
            name == metric && labels.iter().all(|label| rest.contains(label))
        })
        .filter_map(|(_, value)| value.parse::<f64>().ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_role_serves_probes_and_its_metrics_move_with_a_create() {
    let system = System::start().await;
    for name in system.endpoints.health.keys() {
        for probe in ["healthz", "readyz"] {
            let url = format!("{}/{probe}", system.endpoints.health[name]);
            let status = reqwest::get(&url).await.expect(&url).status();
            assert_eq!(status, 200, "{url}");
        }
    }
    let mut before = BTreeMap::new();
    for name in ["coordinator-0", "network-0"] {
        before.insert(name, scrape(&system, name).await);
    }

    system.create("acme", "metered", 1).await;
    let ready = system.watch_to_end("acme", "metered").await;
    assert_eq!(phase(&ready), "ready", "{ready:?}");

    // The coordinator counted the finished create; the network service its steps and ARM
    // calls, by step and outcome.
    let coordinator = scrape(&system, "coordinator-0").await;
    let finished = |t: &str| {
        sample(
            t,
            "hypersaga_operations_finished_total",
            &[r#"kind="create""#, r#"state="succeeded""#],
        )
    };
    assert_eq!(
        finished(&coordinator) - finished(&before["coordinator-0"]),
        1.0
    );
    let network = scrape(&system, "network-0").await;
    let vnet_steps = |t: &str| {
        sample(
            t,
            "hypersaga_step_attempt_seconds_count",
            &[r#"step="network.vnet""#, r#"outcome="succeeded""#],
        )
    };
    assert!(
        vnet_steps(&network) > vnet_steps(&before["network-0"]),
        "{network}"
    );
    let arm_writes = |t: &str| {
        sample(
            t,
            "hypersaga_arm_requests_total",
            &[
                r#"method="PUT""#,
                r#"type="Microsoft.Network/virtualNetworks""#,
            ],
        )
    };
    assert!(
        arm_writes(&network) > arm_writes(&before["network-0"]),
        "{network}"
    );
    assert!(
        network.contains("hypersaga_worker_steps_in_flight{"),
        "{network}"
    );

    // Consumer lag, and operations in flight by kind and state (0 now), from the coordinator:
    // both are read every few seconds.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let coordinator = scrape(&system, "coordinator-0").await;
        let lag_shown = has(
            &coordinator,
            "hypersaga_consumer_pending",
            &[r#"stream="HCP_CMD""#, r#"consumer="svc-network-acme""#],
        ) && has(
            &coordinator,
            "hypersaga_consumer_ack_pending",
            &[r#"stream="HCP_EVT""#, r#"consumer="coordinator""#],
        );
        let active_shown = has(
            &coordinator,
            "hypersaga_operations_active",
            &[r#"kind="create""#, r#"state="running""#],
        );
        if lag_shown && active_shown {
            assert_eq!(
                sample(
                    &coordinator,
                    "hypersaga_consumer_pending",
                    &[r#"consumer="svc-network-acme""#]
                ),
                0.0,
                "nothing is left for the network service once the cluster is ready"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no lag or active-operation gauges: {coordinator}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
