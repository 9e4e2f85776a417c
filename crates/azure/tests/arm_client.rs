//! ArmClient against a scripted ARM + Entra test double served over TLS with the dev CA.
//!
//! The double lives here, in the test, on purpose: it answers exactly the shapes each case
//! needs (ARM RPC status codes, headers and bodies) and counts requests, so the tests can
//! assert both what the client returns and what it sent (no hidden retries, polls honoured).

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hypersaga_azure::{
    ArmClient, ArmConfig, ArmError, CredentialConfig, ErrorKind, Hooks, MutationGuard, Secret,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const API: &str = "2024-01-01";
const TOKEN: &str = "test-access-token";
const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000001";
/// A subscription ARM does not know.
const GONE_SUB: &str = "/subscriptions/00000000-0000-0000-0000-00000000dead";

struct Double {
    base: String,
    /// "METHOD /path" → how many times seen.
    hits: Mutex<HashMap<String, u32>>,
    /// Scopes asked of the token endpoint.
    scopes: Mutex<Vec<String>>,
}

impl Double {
    fn hit(&self, method: &Method, path: &str) -> u32 {
        let mut hits = self.hits.lock().unwrap();
        let n = hits.entry(format!("{method} {path}")).or_default();
        *n += 1;
        *n
    }

    fn count(&self, key: &str) -> u32 {
        self.hits.lock().unwrap().get(key).copied().unwrap_or(0)
    }
}

fn arm_error(status: StatusCode, code: &str, message: &str, target: Option<&str>) -> Response {
    let mut error = json!({"code": code, "message": message});
    if let Some(t) = target {
        error["target"] = json!(t);
    }
    (
        status,
        [("x-ms-request-id", "req-123")],
        axum::Json(json!({ "error": error })),
    )
        .into_response()
}

fn resource(id: &str, state: &str) -> Value {
    json!({"id": id, "name": id.rsplit('/').next().unwrap(), "location": "eastus",
           "properties": {"provisioningState": state}})
}

async fn handle(
    State(d): State<Arc<Double>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let query = uri.query().unwrap_or("");
    let n = d.hit(&method, &path);

    if method == Method::POST && path.ends_with("/oauth2/v2.0/token") {
        let form = String::from_utf8_lossy(&body).to_string();
        let scope = form
            .split('&')
            .find_map(|kv| kv.strip_prefix("scope="))
            .map(urlencode_decode)
            .unwrap_or_default();
        d.scopes.lock().unwrap().push(scope);
        return axum::Json(
            json!({"token_type": "Bearer", "expires_in": 3599, "access_token": TOKEN}),
        )
        .into_response();
    }
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {TOKEN}"))
    {
        return arm_error(
            StatusCode::UNAUTHORIZED,
            "AuthenticationFailed",
            "no token",
            None,
        );
    }
    if !query.contains("api-version=") {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "MissingApiVersionParameter",
            "api-version missing",
            None,
        );
    }
    let base = &d.base;
    let rg = format!("{SUB}/resourceGroups/rg");
    let vnet = format!("{rg}/providers/Microsoft.Network/virtualNetworks/vnet");
    let bad = format!("{rg}/providers/Microsoft.Network/virtualNetworks/bad");
    let zone = format!("{rg}/providers/Microsoft.Network/privateDnsZones/zone");
    let flaky = format!("{rg}/providers/Microsoft.Network/publicIPAddresses/flaky");
    let slow = format!("{rg}/providers/Microsoft.Network/publicIPAddresses/slow");
    let op = |name: &str| {
        format!("{SUB}/providers/Microsoft.Network/locations/eastus/operations/{name}")
    };

    match (method.as_str(), path.as_str()) {
        // Sync PUT (resource group).
        ("PUT", p) if p == rg => (StatusCode::CREATED, axum::Json(resource(&rg, "Succeeded"))).into_response(),
        // Async PUT with Azure-AsyncOperation: InProgress, then Succeeded.
        ("PUT", p) if p == vnet => (
            StatusCode::CREATED,
            [("azure-asyncoperation", format!("{base}{}?api-version={API}", op("op1"))), ("retry-after", "0".to_owned())],
            axum::Json(resource(&vnet, "Updating")),
        )
            .into_response(),
        ("GET", p) if p == op("op1") => {
            let status = if n < 2 { "InProgress" } else { "Succeeded" };
            axum::Json(json!({"id": p, "name": "op1", "status": status})).into_response()
        }
        ("GET", p) if p == vnet => axum::Json(resource(&vnet, "Succeeded")).into_response(),
        // Failed operation.
        ("PUT", p) if p == bad => (
            StatusCode::CREATED,
            [("azure-asyncoperation", format!("{base}{}?api-version={API}", op("op2")))],
            axum::Json(resource(&bad, "Updating")),
        )
            .into_response(),
        ("GET", p) if p == op("op2") => axum::Json(json!({
            "id": p, "name": "op2", "status": "Failed",
            "error": {"code": "InvalidAddressPrefixFormat", "message": "Address prefix 10.0.0.0/33 is invalid.", "target": "addressSpace"}
        }))
        .into_response(),
        // 202 + Location delete: 202 once more, then 204.
        ("DELETE", p) if p == vnet => (
            StatusCode::ACCEPTED,
            [("location", format!("{base}{}?api-version={API}", op("op3"))), ("retry-after", "0".to_owned())],
        )
            .into_response(),
        ("GET", p) if p == op("op3") => {
            if n < 2 { StatusCode::ACCEPTED.into_response() } else { StatusCode::NO_CONTENT.into_response() }
        }
        // 201 with a non-terminal provisioningState and no header: poll the resource.
        ("PUT", p) if p == zone => (StatusCode::CREATED, axum::Json(resource(&zone, "Creating"))).into_response(),
        ("GET", p) if p == zone => {
            let state = if n < 3 { "Creating" } else { "Succeeded" };
            axum::Json(resource(&zone, state)).into_response()
        }
        // Async PUT whose operation poll fails transiently once.
        ("PUT", p) if p == flaky => (
            StatusCode::CREATED,
            [("azure-asyncoperation", format!("{base}{}?api-version={API}", op("op4")))],
            axum::Json(resource(&flaky, "Updating")),
        )
            .into_response(),
        ("GET", p) if p == op("op4") => {
            if n == 1 {
                arm_error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", "try later", None)
            } else {
                axum::Json(json!({"status": "Succeeded"})).into_response()
            }
        }
        ("GET", p) if p == flaky => axum::Json(resource(&flaky, "Succeeded")).into_response(),
        // Never finishes: LRO timeout.
        ("PUT", p) if p == slow => (
            StatusCode::CREATED,
            [("azure-asyncoperation", format!("{base}{}?api-version={API}", op("op5")))],
            axum::Json(resource(&slow, "Updating")),
        )
            .into_response(),
        ("GET", p) if p == op("op5") => axum::Json(json!({"status": "InProgress"})).into_response(),
        // Operation URL on another origin: must not be followed.
        ("PUT", p) if p.ends_with("/publicIPAddresses/foreign") => (
            StatusCode::CREATED,
            [("azure-asyncoperation", "https://evil.example/op?api-version=1".to_owned())],
            axum::Json(resource(p, "Updating")),
        )
            .into_response(),
        // Throttled.
        ("GET", p) if p.ends_with("/throttled") => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "7"), ("x-ms-request-id", "req-429")],
            axum::Json(json!({"error": {"code": "TooManyRequests", "message": "slow down"}})),
        )
            .into_response(),
        // Forbidden.
        ("PUT", p) if p.ends_with("/forbidden") => arm_error(
            StatusCode::FORBIDDEN,
            "AuthorizationFailed",
            "The client does not have authorization to perform action 'Microsoft.Network/virtualNetworks/write'.",
            Some(p),
        ),
        ("PUT", p) if p.ends_with("/busy") => arm_error(StatusCode::CONFLICT, "AnotherOperationInProgress", "busy", None),
        // Paged list.
        ("GET", p) if p == format!("{SUB}/resourcegroups") => {
            if query.contains("$skipToken=2") {
                axum::Json(json!({"value": [{"name": "c"}]})).into_response()
            } else {
                axum::Json(json!({
                    "value": [{"name": "a"}, {"name": "b"}],
                    "nextLink": format!("{base}{SUB}/resourcegroups?api-version={API}&$skipToken=2")
                }))
                .into_response()
            }
        }
        // ARM's answers for a subscription it does not know and a type no provider serves.
        (_, p) if p.starts_with(GONE_SUB) => arm_error(
            StatusCode::NOT_FOUND,
            "SubscriptionNotFound",
            &format!("The subscription '{}' could not be found.", &GONE_SUB[15..]),
            None,
        ),
        (_, p) if p.contains("/providers/Microsoft.Network/virtualNetworkz/") => arm_error(
            StatusCode::NOT_FOUND,
            "InvalidResourceType",
            "The resource type 'virtualNetworkz' could not be found in the namespace 'Microsoft.Network' for api version '2023-11-01'.",
            None,
        ),
        ("DELETE", _) => StatusCode::NO_CONTENT.into_response(),
        _ => arm_error(StatusCode::NOT_FOUND, "ResourceNotFound", &format!("The Resource '{path}' was not found."), None),
    }
}

fn urlencode_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

struct Harness {
    arm: ArmClient,
    double: Arc<Double>,
    _stop: oneshot::Sender<()>,
}

async fn harness(lro_timeout: Duration) -> Harness {
    harness_with(lro_timeout, Hooks::default()).await
}

async fn harness_with(lro_timeout: Duration, hooks: Hooks) -> Harness {
    hypersaga_devca::install_crypto_provider();
    let ca = hypersaga_devca::DevCa::generate().unwrap();
    let cert = ca.issue_loopback_cert().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!(
        "https://127.0.0.1:{}",
        listener.local_addr().unwrap().port()
    );
    let double = Arc::new(Double {
        base: base.clone(),
        hits: Mutex::default(),
        scopes: Mutex::default(),
    });
    let router = Router::new().fallback(handle).with_state(double.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        hypersaga_devca::serve_tls(listener, router, &cert, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let arm = ArmClient::with_hooks(
        ArmConfig {
            resource_manager_url: base.parse().unwrap(),
            authority_host: base.parse().unwrap(),
            ca_bundle_pem: Some(ca.cert_pem().to_owned()),
            credential: CredentialConfig::ClientSecret {
                tenant_id: "00000000-0000-0000-0000-0000000000aa".into(),
                client_id: "app".into(),
                client_secret: Secret::new("s3cret"),
            },
            lro_poll_interval: Duration::from_millis(50),
            lro_timeout,
        },
        hooks,
    )
    .unwrap();
    Harness {
        arm,
        double,
        _stop: stop,
    }
}

fn rg() -> String {
    format!("{SUB}/resourceGroups/rg")
}

fn net(kind: &str, name: &str) -> String {
    format!("{}/providers/Microsoft.Network/{kind}/{name}", rg())
}

#[tokio::test]
async fn sync_put_returns_resource_and_fetches_token_once() {
    let h = harness(Duration::from_secs(10)).await;
    let v = h
        .arm
        .put(&rg(), API, &json!({"location": "eastus"}))
        .await
        .unwrap();
    assert_eq!(v["properties"]["provisioningState"], "Succeeded");
    let again = h
        .arm
        .put(&rg(), API, &json!({"location": "eastus"}))
        .await
        .unwrap();
    assert_eq!(again["id"], rg());
    assert_eq!(h.double.count(&format!("PUT {}", rg())), 2);
    // No GET needed for a sync PUT; one token for both calls, scoped to this ARM's origin.
    assert_eq!(h.double.count(&format!("GET {}", rg())), 0);
    let scopes = h.double.scopes.lock().unwrap().clone();
    assert_eq!(scopes, vec![format!("{}/.default", h.double.base)]);
}

/// A guard that refuses every call it is asked about, counting them.
#[derive(Debug, Default)]
struct Refusing(Mutex<u32>);

#[async_trait::async_trait]
impl MutationGuard for Refusing {
    async fn allow(&self) -> Result<(), String> {
        *self.0.lock().unwrap() += 1;
        Err("the saga moved on".into())
    }
}

#[tokio::test]
async fn a_refused_write_or_delete_is_never_sent_and_reads_are_not_asked_about() {
    let guard = Arc::new(Refusing::default());
    let hooks = Hooks {
        gate: None,
        guard: Some(guard.clone()),
    };
    let h = harness_with(Duration::from_secs(10), hooks).await;
    let vnet = net("virtualNetworks", "vnet");
    let err = h
        .arm
        .put(&vnet, API, &json!({"location": "eastus"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ArmError::Fenced { .. }), "{err:?}");
    assert!(err.to_string().contains("the saga moved on"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Retryable);
    let err = h.arm.delete(&vnet, API).await.unwrap_err();
    assert!(matches!(err, ArmError::Fenced { .. }), "{err:?}");
    assert_eq!(h.double.count(&format!("PUT {vnet}")), 0);
    assert_eq!(h.double.count(&format!("DELETE {vnet}")), 0);
    assert_eq!(*guard.0.lock().unwrap(), 2);
    // A read goes out without asking.
    assert!(h.arm.get(&vnet, API).await.unwrap().is_some());
    assert_eq!(h.double.count(&format!("GET {vnet}")), 1);
    assert_eq!(*guard.0.lock().unwrap(), 2);
}

#[tokio::test]
async fn async_put_polls_operation_then_gets_resource() {
    let h = harness(Duration::from_secs(10)).await;
    let vnet = net("virtualNetworks", "vnet");
    let v = h
        .arm
        .put(&vnet, API, &json!({"location": "eastus"}))
        .await
        .unwrap();
    assert_eq!(v["properties"]["provisioningState"], "Succeeded");
    let op = format!("GET {SUB}/providers/Microsoft.Network/locations/eastus/operations/op1");
    assert_eq!(h.double.count(&op), 2, "InProgress then Succeeded");
    assert_eq!(h.double.count(&format!("GET {vnet}")), 1, "final GET");
}

#[tokio::test]
async fn failed_operation_is_terminal_with_code() {
    let h = harness(Duration::from_secs(10)).await;
    let err = h
        .arm
        .put(&net("virtualNetworks", "bad"), API, &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, ArmError::OperationFailed { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Terminal);
    assert_eq!(err.code(), Some("InvalidAddressPrefixFormat"));
    assert_eq!(err.target(), Some("addressSpace"));
    assert!(err.message().contains("10.0.0.0/33"));
    assert_eq!(err.metric_label(), "operation_failed");
}

#[tokio::test]
async fn delete_follows_location_until_done() {
    let h = harness(Duration::from_secs(10)).await;
    h.arm
        .delete(&net("virtualNetworks", "vnet"), API)
        .await
        .unwrap();
    let op = format!("GET {SUB}/providers/Microsoft.Network/locations/eastus/operations/op3");
    assert_eq!(h.double.count(&op), 2, "202 then 204");
    // Absent resources (204 / 404) are fine too.
    h.arm
        .delete(&net("virtualNetworks", "gone"), API)
        .await
        .unwrap();
}

#[tokio::test]
async fn get_missing_is_none() {
    let h = harness(Duration::from_secs(10)).await;
    assert_eq!(
        h.arm
            .get(&net("virtualNetworks", "missing"), API)
            .await
            .unwrap(),
        None
    );
    assert!(
        h.arm
            .get(&net("virtualNetworks", "vnet"), API)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn only_a_missing_resource_is_absent_not_a_wrong_request() {
    let h = harness(Duration::from_secs(10)).await;
    let elsewhere =
        format!("{GONE_SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet");
    let err = h.arm.get(&elsewhere, API).await.expect_err("not absent");
    assert_eq!(err.code(), Some("SubscriptionNotFound"), "{err}");
    assert!(!err.is_retryable() && !err.is_not_found(), "{err}");
    // A delete there is not "already gone": the cluster's resources would be left behind.
    let err = h.arm.delete(&elsewhere, API).await.expect_err("not gone");
    assert_eq!(err.code(), Some("SubscriptionNotFound"), "{err}");
    let typo = net("virtualNetworkz", "vnet");
    let err = h.arm.get(&typo, API).await.expect_err("not absent");
    assert_eq!(err.code(), Some("InvalidResourceType"), "{err}");
    assert!(h.arm.begin_delete(&typo, API).await.is_err());
}

#[tokio::test]
async fn throttling_is_retryable_with_retry_after_and_not_retried_silently() {
    let h = harness(Duration::from_secs(10)).await;
    let id = net("virtualNetworks", "throttled");
    let err = h.arm.get(&id, API).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Retryable);
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(err.request_id(), Some("req-429"));
    assert_eq!(err.metric_label(), "throttled");
    assert_eq!(
        h.double.count(&format!("GET {id}")),
        1,
        "the pipeline must not retry on its own"
    );
}

#[tokio::test]
async fn forbidden_is_terminal_with_code_and_target() {
    let h = harness(Duration::from_secs(10)).await;
    let id = net("virtualNetworks", "forbidden");
    let err = h.arm.put(&id, API, &json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Terminal);
    assert_eq!(err.status(), Some(403));
    assert_eq!(err.code(), Some("AuthorizationFailed"));
    assert_eq!(err.target(), Some(id.as_str()));
    assert_eq!(err.request_id(), Some("req-123"));
    assert!(err.to_string().contains("AuthorizationFailed"), "{err}");

    let busy = h
        .arm
        .put(&net("virtualNetworks", "busy"), API, &json!({}))
        .await
        .unwrap_err();
    assert_eq!(busy.kind(), ErrorKind::Retryable);
    assert!(busy.has_code("anotheroperationinprogress"));
}

#[tokio::test]
async fn list_follows_next_link() {
    let h = harness(Duration::from_secs(10)).await;
    let items = h
        .arm
        .list(&format!("{SUB}/resourcegroups"), API)
        .await
        .unwrap();
    let names: Vec<_> = items.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[tokio::test]
async fn put_without_headers_polls_provisioning_state() {
    let h = harness(Duration::from_secs(10)).await;
    let zone = net("privateDnsZones", "zone");
    let v = h
        .arm
        .put(&zone, API, &json!({"location": "global"}))
        .await
        .unwrap();
    assert_eq!(v["properties"]["provisioningState"], "Succeeded");
    assert_eq!(h.double.count(&format!("GET {zone}")), 3);
}

#[tokio::test]
async fn transient_poll_failure_is_retried_inside_the_lro() {
    let h = harness(Duration::from_secs(10)).await;
    let v = h
        .arm
        .put(&net("publicIPAddresses", "flaky"), API, &json!({}))
        .await
        .unwrap();
    assert_eq!(v["properties"]["provisioningState"], "Succeeded");
    let op = format!("GET {SUB}/providers/Microsoft.Network/locations/eastus/operations/op4");
    assert_eq!(h.double.count(&op), 2);
}

#[tokio::test]
async fn lro_timeout_is_retryable() {
    let h = harness(Duration::from_millis(300)).await;
    let err = h
        .arm
        .put(&net("publicIPAddresses", "slow"), API, &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, ArmError::LroTimeout { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Retryable);
}

#[tokio::test]
async fn poll_url_on_another_origin_is_refused() {
    let h = harness(Duration::from_secs(10)).await;
    let err = h
        .arm
        .put(&net("publicIPAddresses", "foreign"), API, &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, ArmError::InvalidResponse { .. }), "{err:?}");
}

#[tokio::test]
async fn connection_refused_is_retryable_transport_error() {
    hypersaga_devca::install_crypto_provider();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url: url::Url = format!("https://127.0.0.1:{port}").parse().unwrap();
    let arm = ArmClient::new(ArmConfig {
        resource_manager_url: url.clone(),
        authority_host: url,
        ca_bundle_pem: None,
        credential: CredentialConfig::ClientSecret {
            tenant_id: "00000000-0000-0000-0000-0000000000aa".into(),
            client_id: "app".into(),
            client_secret: Secret::new("s3cret"),
        },
        lro_poll_interval: Duration::from_millis(50),
        lro_timeout: Duration::from_secs(1),
    })
    .unwrap();
    let err = arm.get(&rg(), API).await.unwrap_err();
    // The token request is the first thing that fails to connect.
    assert_eq!(err.kind(), ErrorKind::Retryable, "{err:?}");
}

#[tokio::test]
async fn plain_http_arm_is_rejected_up_front() {
    let err = ArmClient::new(ArmConfig {
        resource_manager_url: "http://127.0.0.1:1".parse().unwrap(),
        authority_host: "https://127.0.0.1:1".parse().unwrap(),
        ca_bundle_pem: None,
        credential: CredentialConfig::ClientSecret {
            tenant_id: "t".into(),
            client_id: "c".into(),
            client_secret: Secret::new("s"),
        },
        lro_poll_interval: Duration::from_millis(50),
        lro_timeout: Duration::from_secs(1),
    })
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Terminal);
}
