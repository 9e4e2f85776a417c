//! One trace per saga: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, every role exports its spans,
//! and a create is one trace, continuing the caller's, from the gateway through the
//! coordinator into all five services and their ARM and Kubernetes calls. Spans say what
//! failed, in OpenTelemetry's conventions; the same metrics as `/metrics` go out over OTLP.
//! Every role's `/metrics` is right while and after a create.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_api::v1::cluster_service_client::ClusterServiceClient;
use hypersaga_emulator_arm::FaultSpec;

use crate::otlp::{KIND_CLIENT, KIND_SERVER, Receiver, STATUS_UNSET, Span};
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

/// A fault on the PUTs of `ty` whose resource name contains `name`.
fn fault(ty: &str, name: &str, status: u16, code: &str, count: Option<u32>) -> FaultSpec {
    FaultSpec {
        method: "PUT".into(),
        resource_type: ty.into(),
        name_contains: Some(name.into()),
        path_contains: None,
        status,
        code: code.into(),
        message: Some(format!("injected {code}")),
        retry_after_secs: (status == 429).then_some(1),
        count,
    }
}

/// A request with the bearer token of `acme` and the caller's `traceparent`.
fn traced<T>(system: &System, body: T, trace_id: &str, span_id: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(body);
    let metadata = request.metadata_mut();
    metadata.insert(
        "authorization",
        format!("Bearer {}", system.token("acme"))
            .parse()
            .expect("metadata"),
    );
    metadata.insert(
        "traceparent",
        format!("00-{trace_id}-{span_id}-01")
            .parse()
            .expect("metadata"),
    );
    request
}

fn new_trace() -> (String, String) {
    (
        hex::encode(rand::random::<[u8; 16]>()),
        hex::encode(rand::random::<[u8; 8]>()),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_create_is_one_trace_through_every_service_continuing_the_callers() {
    let receiver = Receiver::start().await;
    let system = System::start_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint),
            // Spans leave within a tenth of a second instead of the SDK's five, metrics every
            // half second instead of every minute.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
        ],
    )
    .await;
    // One throttled VNet PUT for the traced create (retried after a second); a terminal 403
    // for the private zone of another, which fails.
    let admin = system.arm_admin();
    let throttled = fault(
        "Microsoft.Network/virtualNetworks",
        "traced",
        429,
        "TooManyRequests",
        Some(1),
    );
    let denied = fault(
        "Microsoft.Network/privateDnsZones",
        "doomed",
        403,
        "AuthorizationFailed",
        None,
    );
    admin.add_fault(&throttled).await.expect("fault");
    admin.add_fault(&denied).await.expect("fault");

    // The caller's own span: the saga's trace goes on from it.
    let (trace_id, caller_span) = new_trace();
    let mut api = ClusterServiceClient::new(system.channel().await);
    let create = traced(
        &system,
        create_request("traced", 1),
        &trace_id,
        &caller_span,
    );
    let operation = api
        .create_cluster(create)
        .await
        .expect("create")
        .into_inner()
        .id;
    let doomed = system.create("acme", "doomed", 1).await.id;
    // A call for a cluster that does not exist, in a trace of its own.
    let (missing_trace, missing_span) = new_trace();
    let get = pb::GetClusterRequest {
        name: "nowhere".into(),
    };
    let missing = api
        .get_cluster(traced(&system, get, &missing_trace, &missing_span))
        .await
        .expect_err("no such cluster");
    assert_eq!(missing.code(), tonic::Code::NotFound);

    let (ready, failed) = tokio::join!(
        system.watch_to_end("acme", "traced"),
        system.watch_to_end("acme", "doomed")
    );
    assert_eq!(phase(&ready), "ready", "{ready:?}");
    assert_eq!(phase(&failed), "failed", "{failed:?}");

    // Every service has exported the spans of the trace, and each operation its own span.
    let spans = wait_for_spans(&receiver, |spans| {
        let services: BTreeSet<&str> = spans
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .map(|s| s.service.as_str())
            .collect();
        let ended = |op: &str| spans.iter().any(|s| is_operation(s, op));
        services.len() == SERVICES.len() && ended(&operation) && ended(&doomed)
    })
    .await;
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
    let by_id: BTreeMap<&str, &Span> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
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
            && s.name == "hypersaga.v1.ClusterService/CreateCluster"
            && s.kind == KIND_SERVER
            && s.attr("rpc.system") == Some("grpc")
            && s.attr("rpc.grpc.status_code") == Some("0")),
        "{roots:#?}"
    );
    let parent_service = |s: &Span| {
        by_id
            .get(s.parent_span_id.as_str())
            .map(|p| p.service.clone())
    };

    // Each service's steps carry tenant, cluster, the operation, step and attempt, and are
    // children of a coordinator transition.
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
            assert_eq!(
                step.attr("operation"),
                Some(operation.as_str()),
                "{step:#?}"
            );
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
    // The coordinator's transitions carry the operation and its tenant.
    let transitions: Vec<&&Span> = in_trace.iter().filter(|s| s.name == "saga").collect();
    assert!(!transitions.is_empty());
    assert!(
        transitions
            .iter()
            .all(|s| s.attr("tenant") == Some("acme")
                && s.attr("operation") == Some(operation.as_str())),
        "{transitions:#?}"
    );
    // One name for the operation id in every role: `operation`.
    let naming: BTreeSet<&str> = in_trace
        .iter()
        .filter(|s| s.attr("operation") == Some(operation.as_str()))
        .map(|s| s.service.as_str())
        .collect();
    assert_eq!(
        naming,
        SERVICES.into_iter().collect(),
        "roles naming the operation"
    );
    let other_names: Vec<&Span> = spans
        .iter()
        .filter(|s| s.attr("saga").is_some() || s.attr("saga_id").is_some())
        .collect();
    assert!(other_names.is_empty(), "{other_names:#?}");

    // The calls out are client spans on ARM (under the Azure-facing steps) and on the API
    // server (under the management-cluster ones).
    let client = |s: &Span| {
        s.kind == KIND_CLIENT
            && s.attr("http.request.method").is_some()
            && s.attr("server.address").is_some()
            && s.attr("server.port").is_some()
            && s.attr("url.full").is_some()
            && s.attr("http.response.status_code").is_some()
    };
    let arm = |s: &Span| client(s) && s.attr("arm.resource_type").is_some();
    let kube = |s: &Span| client(s) && s.attr("url.full").is_some_and(|u| u.contains("/api"));
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

    // What failed says so. The injected 429: its ARM span and its attempt's span are errors;
    // nothing else in a create that succeeded is (the 404s of its looks are expected), but
    // for attempts the held-back budget throttled meanwhile.
    let is_throttled_call = |s: &Span| arm(s) && s.attr("http.response.status_code") == Some("429");
    let is_throttled_step = |s: &Span| {
        s.attr("step").is_some() && s.attr("outcome") == Some("throttled") && s.is_error()
    };
    let throttled_call: Vec<&&Span> = in_trace.iter().filter(|s| is_throttled_call(s)).collect();
    assert!(
        throttled_call.len() == 1
            && throttled_call[0].is_error()
            && throttled_call[0].attr("error.type") == Some("429")
            && throttled_call[0].status_message == "TooManyRequests",
        "{throttled_call:#?}"
    );
    let throttled_step: Vec<&&Span> = in_trace
        .iter()
        .filter(|s| s.name == "network.vnet do" && is_throttled_step(s))
        .collect();
    assert!(
        throttled_step
            .iter()
            .any(|s| s.attr("error.type") == Some("TooManyRequests")
                && s.status_message.contains("injected TooManyRequests")),
        "{throttled_step:#?}"
    );
    let errors: Vec<&&Span> = in_trace
        .iter()
        .filter(|s| s.is_error() && !is_throttled_call(s) && !is_throttled_step(s))
        .collect();
    assert!(
        errors.is_empty(),
        "errors in a create that succeeded: {errors:#?}"
    );
    let ok = spans.iter().find(|s| is_operation(s, &operation));
    assert!(
        ok.is_some_and(|s| s.status_code == STATUS_UNSET && s.trace_id == trace_id),
        "{ok:#?}"
    );

    // The failed create: its operation's span (from acceptance to failure, under the call
    // that started it), its failing step's and the refused ARM call's are errors with the code.
    let op = spans
        .iter()
        .find(|s| is_operation(s, &doomed))
        .expect("the failed operation's span");
    assert!(
        op.is_error()
            && op.attr("error.type") == Some("AuthorizationFailed")
            && op.status_message.contains("injected AuthorizationFailed")
            && op.attr("state") == Some("failed")
            && parent_service(op).as_deref() == Some("hypersaga-gateway"),
        "{op:#?}"
    );
    let in_doomed: Vec<&Span> = spans.iter().filter(|s| s.trace_id == op.trace_id).collect();
    let failing: Vec<&&Span> = in_doomed
        .iter()
        .filter(|s| s.name == "dns.private-zone do" && s.attr("outcome") == Some("terminal"))
        .collect();
    assert!(
        !failing.is_empty()
            && failing.iter().all(|s| s.is_error()
                && s.attr("error.type") == Some("AuthorizationFailed")
                && s.status_message.contains("injected AuthorizationFailed")),
        "{failing:#?}"
    );
    let refused: Vec<&&Span> = in_doomed
        .iter()
        .filter(|s| arm(s) && s.attr("http.response.status_code") == Some("403"))
        .collect();
    assert!(
        !refused.is_empty()
            && refused
                .iter()
                .all(|s| s.is_error() && s.attr("error.type") == Some("403")),
        "{refused:#?}"
    );

    // The refused read: a server span with gRPC's code 5, not an error of the server's.
    let not_found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.trace_id == missing_trace && s.service == "hypersaga-gateway")
        .collect();
    assert!(
        not_found
            .iter()
            .any(|s| s.name == "hypersaga.v1.ClusterService/GetCluster"
                && s.kind == KIND_SERVER
                && s.attr("rpc.grpc.status_code") == Some("5")
                && s.status_code == STATUS_UNSET
                && s.parent_span_id == missing_span),
        "{not_found:#?}"
    );

    // Every process says which build it runs and which of the replicas it is.
    let mut instances = BTreeMap::new();
    for s in &spans {
        assert_eq!(
            s.resource.get("service.version").map(String::as_str),
            Some(env!("CARGO_PKG_VERSION")),
            "{s:#?}"
        );
        assert!(s.schema_url.ends_with("/1.37.0"), "{s:#?}");
        let id = s.resource.get("service.instance.id").expect("instance id");
        instances
            .entry(s.service.clone())
            .or_insert_with(BTreeSet::new)
            .insert(id.clone());
    }
    assert!(
        instances.values().all(|ids| ids.len() == 1),
        "{instances:#?}"
    );
    let distinct: BTreeSet<&String> = instances.values().flatten().collect();
    assert_eq!(distinct.len(), instances.len(), "{instances:#?}");

    // The same metrics went out over OTLP, histograms with the buckets `/metrics` has.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let metrics = receiver.metrics();
        let sent = |service: &str, name: &str, data: &str| {
            metrics
                .iter()
                .any(|m| m.service == service && m.name == name && m.data == data)
        };
        let steps_bucketed = metrics.iter().any(|m| {
            m.service == "hypersaga-network"
                && m.name == "hypersaga_step_attempt_seconds"
                && m.bounds.first() == Some(&0.005)
        });
        if steps_bucketed
            && sent(
                "hypersaga-gateway",
                "hypersaga_gateway_requests_total",
                "sum",
            )
            && sent(
                "hypersaga-coordinator",
                "hypersaga_operations_active",
                "gauge",
            )
            && sent(
                "hypersaga-coordinator",
                "hypersaga_operation_duration_seconds",
                "histogram",
            )
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "metrics over OTLP: {:#?}",
            metrics
                .iter()
                .map(|m| (&m.service, &m.name, m.data))
                .collect::<BTreeSet<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The span of operation `id`, which the coordinator exports when it ends.
fn is_operation(s: &Span, id: &str) -> bool {
    s.service == "hypersaga-coordinator"
        && s.name == "create cluster"
        && s.attr("operation") == Some(id)
}

/// Waits until `done` holds of the spans received, and a little longer for the last batches.
async fn wait_for_spans(receiver: &Receiver, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if done(&receiver.spans()) {
            tokio::time::sleep(Duration::from_millis(500)).await;
            return receiver.spans();
        }
        assert!(
            Instant::now() < deadline,
            "the spans did not all come; got those of {:?}",
            receiver
                .spans()
                .iter()
                .map(|s| s.service.as_str())
                .collect::<BTreeSet<_>>()
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
            // The endpoints file is written once the gateway answers; the other roles may
            // still be starting (connecting, waiting for the bus's topology): each has
            // `TIMEOUT` to answer, then must answer 200.
            let url = format!("{}/{probe}", system.endpoints.health[name]);
            let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
            let status = loop {
                match reqwest::get(&url).await {
                    Ok(r) if r.status() == 200 || std::time::Instant::now() >= deadline => {
                        break r.status();
                    }
                    Err(e) if std::time::Instant::now() >= deadline => panic!("{url}: {e}"),
                    _ => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                }
            };
            assert_eq!(status, 200, "{url}");
        }
        // Which build each process runs, by role.
        let text = scrape(&system, name).await;
        let role = name.rsplit_once('-').map_or(name.as_str(), |(r, _)| r);
        assert_eq!(
            sample(
                &text,
                "hypersaga_build_info",
                &[&format!(r#"role="{role}""#), r#"version=""#]
            ),
            1.0,
            "{name}: {text}"
        );
    }
    let mut before = BTreeMap::new();
    for name in ["coordinator-0", "network-0"] {
        before.insert(name, scrape(&system, name).await);
    }
    // Dead letters are counted from zero, before there is any.
    assert!(
        has(
            &before["coordinator-0"],
            "hypersaga_dead_letters_total",
            &[r#"role="coordinator""#]
        ),
        "{}",
        before["coordinator-0"]
    );

    system.create("acme", "metered", 1).await;
    // While it runs, the create is counted among the active operations (whichever replica
    // made its transitions, at every scrape).
    let deadline = Instant::now() + Duration::from_secs(20);
    let running = |t: &str| {
        sample(
            t,
            "hypersaga_operations_active",
            &[r#"kind="create""#, r#"state="running""#],
        )
    };
    loop {
        let coordinator = scrape(&system, "coordinator-0").await;
        if running(&coordinator) == 1.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the create is not counted as running: {coordinator}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready = system.watch_to_end("acme", "metered").await;
    assert_eq!(phase(&ready), "ready", "{ready:?}");

    // The coordinator counted the finished create, and how long it took; the network service
    // its steps and ARM calls, by step and outcome. Histograms have buckets.
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
    assert_eq!(
        sample(
            &coordinator,
            "hypersaga_operation_duration_seconds_bucket",
            &[r#"kind="create""#, r#"state="succeeded""#, r#"le="+Inf""#]
        ),
        1.0,
        "{coordinator}"
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
    assert!(
        has(
            &network,
            "hypersaga_step_attempt_seconds_bucket",
            &[r#"step="network.vnet""#, r#"le="0.005""#]
        ),
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

    // Within seconds of the last step no worker has a step in flight, and no operation is
    // active.
    let deadline = Instant::now() + Duration::from_secs(5);
    for worker in WORKERS {
        let name = format!("{worker}-0");
        loop {
            let text = scrape(&system, &name).await;
            let shown = has(&text, "hypersaga_worker_steps_in_flight", &[]);
            if shown && sample(&text, "hypersaga_worker_steps_in_flight", &[]) == 0.0 {
                break;
            }
            assert!(Instant::now() < deadline, "{name}: {text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let coordinator = scrape(&system, "coordinator-0").await;
    assert_eq!(
        sample(&coordinator, "hypersaga_operations_active", &[]),
        0.0,
        "{coordinator}"
    );

    // The gateway counts its calls by method and code, with their latency.
    let mut client = system.client("acme").await;
    let missing = client
        .get_cluster(pb::GetClusterRequest {
            name: "nowhere".into(),
        })
        .await
        .expect_err("no such cluster");
    assert_eq!(missing.code(), tonic::Code::NotFound);
    let gateway = scrape(&system, "gateway-0").await;
    for (method, code) in [
        ("CreateCluster", "OK"),
        ("WatchCluster", "OK"),
        ("GetCluster", "NOT_FOUND"),
    ] {
        let method = format!(r#"method="hypersaga.v1.ClusterService/{method}""#);
        let code = format!(r#"code="{code}""#);
        assert!(
            sample(
                &gateway,
                "hypersaga_gateway_requests_total",
                &[&method, &code]
            ) >= 1.0,
            "{method} {code}: {gateway}"
        );
        assert!(
            has(
                &gateway,
                "hypersaga_gateway_request_duration_seconds_bucket",
                &[&method, &code]
            ),
            "{gateway}"
        );
    }

    // Consumer lag from the coordinator, read every few seconds.
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
        if lag_shown {
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
        assert!(Instant::now() < deadline, "no lag gauges: {coordinator}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
