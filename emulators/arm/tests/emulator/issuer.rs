//! An OIDC issuer for the federation tests, published the way the product publishes its own:
//! `hypersaga_oidc`'s discovery document and key set (ccoctl's layout), served over plain HTTP
//! on 127.0.0.1 under an Azurite-style path, and service-account tokens signed like
//! kube-apiserver signs them (RS256, `kid` = the key's SPKI hash).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
use aws_lc_rs::rsa::{KeyPair, KeySize};
use axum::Json;
use axum::extract::State;
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hypersaga_oidc::{DISCOVERY_PATH, JWKS_PATH, PublicKey, SigningKey, discovery_document, jwks};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::support::*;

/// RFC 7523's client assertion type, what `WorkloadIdentityCredential` sends.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The audience HyperShift's federated credentials trust (docs/reference/hypershift-azure.md §2.1).
pub(crate) const AUDIENCE: &str = "openshift";
/// The subject of CAPZ's credential (docs/reference/hypershift-azure.md §2.2).
pub(crate) const SUBJECT: &str = "system:serviceaccount:kube-system:capi-provider";

/// A signing key. RSA 2048 rather than ccoctl's 4096 so each test makes its keys in
/// milliseconds; `hypersaga_oidc` reads any size and derives the `kid` the same way.
pub(crate) fn signing_key() -> SigningKey {
    let pair = KeyPair::generate(KeySize::Rsa2048).expect("generate");
    let der: Pkcs8V1Der<'static> = pair.as_der().expect("pkcs8");
    let body = STANDARD.encode(der.as_ref());
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("ascii"));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    SigningKey::from_private_key_pem(&pem).expect("load key")
}

#[derive(Clone)]
struct Published {
    issuer: String,
    keys: Arc<Mutex<Vec<PublicKey>>>,
    jwks_fetches: Arc<AtomicUsize>,
}

/// A running issuer.
pub(crate) struct Issuer {
    /// `http://127.0.0.1:{port}/devstoreaccount1/oidc`, no trailing slash, as published.
    pub(crate) url: String,
    published: Published,
    _stop: oneshot::Sender<()>,
}

async fn discovery(State(p): State<Published>) -> Json<Value> {
    Json(discovery_document(&p.issuer))
}

async fn key_set(State(p): State<Published>) -> Json<Value> {
    p.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys = p.keys.lock().expect("keys").clone();
    Json(jwks(&keys))
}

impl Issuer {
    /// Serves the documents for `keys`.
    pub(crate) async fn start(keys: &[&SigningKey]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind issuer");
        let addr = listener.local_addr().expect("addr");
        let prefix = "/devstoreaccount1/oidc";
        let url = format!("http://{addr}{prefix}");
        let published = Published {
            issuer: url.clone(),
            keys: Arc::new(Mutex::new(keys.iter().map(|k| k.public_key()).collect())),
            jwks_fetches: Arc::new(AtomicUsize::new(0)),
        };
        let router = axum::Router::new()
            .route(&format!("{prefix}/{DISCOVERY_PATH}"), get(discovery))
            .route(&format!("{prefix}/{JWKS_PATH}"), get(key_set))
            .with_state(published.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            url,
            published,
            _stop: stop,
        }
    }

    /// Replaces the published key set (a rotation).
    pub(crate) fn publish(&self, keys: &[&SigningKey]) {
        *self.published.keys.lock().expect("keys") = keys.iter().map(|k| k.public_key()).collect();
    }

    /// How many times the key set was fetched.
    pub(crate) fn jwks_fetches(&self) -> usize {
        self.published.jwks_fetches.load(Ordering::SeqCst)
    }

    /// A token for `SUBJECT`, audience `AUDIENCE`, valid for ten minutes, signed by `key`.
    pub(crate) fn token(&self, key: &SigningKey) -> String {
        mint(key, &key.kid(), &self.claims(SUBJECT))
    }

    /// The claims kube-apiserver puts in a projected service-account token.
    pub(crate) fn claims(&self, subject: &str) -> Value {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        json!({
            "aud": [AUDIENCE],
            "exp": now + 600,
            "iat": now,
            "nbf": now,
            "iss": self.url,
            "sub": subject,
            "kubernetes.io": {"namespace": "kube-system", "serviceaccount": {"name": "capi-provider"}},
        })
    }
}

/// An RS256 JWS over `claims`, header naming `kid`, signed by `key`.
pub(crate) fn mint(key: &SigningKey, kid: &str, claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": kid}).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{payload}");
    let signature = key.sign_rs256(signed.as_bytes()).expect("sign");
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// A user-assigned identity in `rg` trusting `issuer` for `SUBJECT`; answers (clientId,
/// principalId).
pub(crate) async fn federated_identity(
    emu: &TestEmu,
    rg: &str,
    name: &str,
    issuer: &str,
) -> (String, String) {
    let mi = msi(rg, &format!("userAssignedIdentities/{name}"));
    let r = emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let client = r.body["properties"]["clientId"].as_str().expect("clientId");
    let principal = r.body["properties"]["principalId"]
        .as_str()
        .expect("principalId");
    let fic = emu
        .put(
            &format!("{mi}/federatedIdentityCredentials/{name}-fed-id"),
            MSI,
            json!({"properties": {"issuer": issuer, "subject": SUBJECT, "audiences": [AUDIENCE]}}),
        )
        .await;
    assert_eq!(fic.status, StatusCode::CREATED, "{:?}", fic.body);
    (client.to_owned(), principal.to_owned())
}

/// What a client sees of a client-assertion token request.
pub(crate) async fn exchange(
    emu: &TestEmu,
    client_id: &str,
    assertion: &str,
) -> Result<String, (StatusCode, Value)> {
    exchange_as(emu, client_id, assertion, JWT_BEARER).await
}

pub(crate) async fn exchange_as(
    emu: &TestEmu,
    client_id: &str,
    assertion: &str,
    assertion_type: &str,
) -> Result<String, (StatusCode, Value)> {
    let resp = emu
        .http
        .post(format!("{}/{TENANT}/oauth2/v2.0/token", emu.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("client_assertion", assertion)
                .append_pair("client_assertion_type", assertion_type)
                .append_pair("client_id", client_id)
                .append_pair("grant_type", "client_credentials")
                .append_pair("scope", "https://management.azure.com/.default")
                .finish(),
        )
        .send()
        .await
        .expect("send");
    let status = resp.status();
    let body: Value = resp.json().await.expect("json");
    if status.is_success() {
        Ok(body["access_token"].as_str().expect("token").to_owned())
    } else {
        Err((status, body))
    }
}

/// The claims of an emulator-issued token.
pub(crate) fn claims_of(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("jwt payload");
    let bytes = URL_SAFE_NO_PAD.decode(payload).expect("base64url");
    serde_json::from_slice(&bytes).expect("claims")
}
