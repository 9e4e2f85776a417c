//! The harness: an emulator on a real TLS listener at 127.0.0.1:0 (and its admin API on plain
//! HTTP), a client trusting the dev CA, a token for the configured principal, and small helpers
//! to speak ARM the way a client does.

use hypersaga_emulator_arm::admin_client::AdminClient;
use hypersaga_emulator_arm::{Config, Emulator, LatencyModel, Principal};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub(crate) const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
pub(crate) const SUB: &str = "11111111-2222-3333-4444-555555555555";
pub(crate) const OTHER_SUB: &str = "99999999-2222-3333-4444-555555555555";
pub(crate) const CLIENT: &str = "0ad2e8a1-0000-4000-8000-00000000c1e7";
pub(crate) const SECRET: &str = "s3cret";
pub(crate) const NET: &str = "2023-11-01";
pub(crate) const PDNS: &str = "2024-06-01";
pub(crate) const MSI: &str = "2024-11-30";
pub(crate) const RES: &str = "2021-04-01";

pub(crate) struct TestEmu {
    pub(crate) base: String,
    pub(crate) ca_pem: String,
    pub(crate) http: reqwest::Client,
    pub(crate) admin: AdminClient,
    pub(crate) admin_url: String,
    pub(crate) token: String,
    pub(crate) _served: hypersaga_devca::Loopback,
}

pub(crate) fn principal() -> Principal {
    Principal {
        azure_tenant_id: TENANT.into(),
        client_id: CLIENT.into(),
        client_secret: SECRET.into(),
        subscription_ids: vec![SUB.into()],
    }
}

pub(crate) fn config() -> Config {
    Config {
        principals: vec![principal()],
        latency: LatencyModel::Zero,
        ..Config::default()
    }
}

pub(crate) async fn spawn(config: Config) -> TestEmu {
    hypersaga_devca::install_crypto_provider();
    let emu = Emulator::new(config);
    let ca = hypersaga_devca::DevCa::generate().expect("ca");
    let cert = ca.issue_loopback_cert().expect("cert");
    let served = hypersaga_devca::serve_loopback(
        emu.router(),
        emu.admin_router(),
        &cert,
        &tokio_util::sync::CancellationToken::new(),
    )
    .await
    .expect("serve the emulator");
    let ca_pem = ca.cert_pem().to_owned();
    let http = client(&ca_pem);
    let base = served.url.clone();
    let admin_url = format!("{}/", served.admin_url);
    let admin = AdminClient::new(admin_url.parse().expect("url"));
    let token = token(&http, &base, SECRET).await.expect("token");
    TestEmu {
        base,
        ca_pem,
        http,
        admin,
        admin_url,
        token,
        _served: served,
    }
}

pub(crate) fn client(ca_pem: &str) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("ca pem");
    reqwest::Client::builder()
        .tls_certs_only([ca])
        .build()
        .expect("client")
}

pub(crate) async fn token(
    http: &reqwest::Client,
    base: &str,
    secret: &str,
) -> Result<String, (StatusCode, Value)> {
    token_for(http, base, CLIENT, secret).await
}

pub(crate) async fn token_for(
    http: &reqwest::Client,
    base: &str,
    client: &str,
    secret: &str,
) -> Result<String, (StatusCode, Value)> {
    token_for_scope(
        http,
        base,
        TENANT,
        client,
        secret,
        "https://management.azure.com/.default",
    )
    .await
}

/// A client-secret token of `client` in `tenant` for `scope`.
pub(crate) async fn token_for_scope(
    http: &reqwest::Client,
    base: &str,
    tenant: &str,
    client: &str,
    secret: &str,
    scope: &str,
) -> Result<String, (StatusCode, Value)> {
    let resp = http
        .post(format!("{base}/{tenant}/oauth2/v2.0/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "client_credentials")
                .append_pair("client_id", client)
                .append_pair("client_secret", secret)
                .append_pair("scope", scope)
                .finish(),
        )
        .send()
        .await
        .expect("send");
    let status = resp.status();
    let body: Value = resp.json().await.expect("json");
    if status.is_success() {
        Ok(body["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned())
    } else {
        Err((status, body))
    }
}

pub(crate) struct Resp {
    pub(crate) status: StatusCode,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: Value,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub(crate) fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }
    pub(crate) fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or_default()
    }
}

impl TestEmu {
    pub(crate) async fn call(
        &self,
        method: Method,
        path_or_url: &str,
        body: Option<Value>,
    ) -> Resp {
        self.call_as(&self.token, method, path_or_url, body).await
    }
    pub(crate) async fn call_as(
        &self,
        token: &str,
        method: Method,
        path_or_url: &str,
        body: Option<Value>,
    ) -> Resp {
        let url = if path_or_url.starts_with("https://") {
            path_or_url.to_owned()
        } else {
            format!("{}{path_or_url}", self.base)
        };
        let mut req = self.http.request(method, url).bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("text");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Resp {
            status,
            headers,
            body,
        }
    }
    pub(crate) async fn put(&self, path: &str, v: &str, body: Value) -> Resp {
        self.call(Method::PUT, &format!("{path}?api-version={v}"), Some(body))
            .await
    }
    pub(crate) async fn get(&self, path: &str, v: &str) -> Resp {
        self.call(Method::GET, &format!("{path}?api-version={v}"), None)
            .await
    }
    pub(crate) async fn delete(&self, path: &str, v: &str) -> Resp {
        self.call(Method::DELETE, &format!("{path}?api-version={v}"), None)
            .await
    }
    pub(crate) async fn rg(&self, name: &str) -> String {
        let path = format!("/subscriptions/{SUB}/resourcegroups/{name}");
        let r = self.put(&path, RES, json!({ "location": "eastus" })).await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        path
    }
}

pub(crate) fn net(rg: &str, rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Network/{rest}")
}

pub(crate) fn msi(rg: &str, rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.ManagedIdentity/{rest}")
}

/// The `oid` claim of an emulator-issued token: the actor ARM names in its 429s.
pub(crate) fn object_id_of(token: &str) -> String {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).expect("jwt payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    let claims: Value = serde_json::from_slice(&bytes).expect("claims");
    claims["oid"].as_str().expect("oid").to_owned()
}
