//! The tenant-admin client (`hypersaga_emulator_arm::tenant_admin`) onboarding hypersaga into a
//! directory added at runtime, as `hypersaga dev` does: over the emulator's real APIs only, it
//! waits out Entra's replication, so hypersaga's client assertion (signed by its issuer for the
//! tenant's subject) gets an ARM token at once, and that token creates a resource group in the
//! subscription; onboarding again adopts what is there; deleting the app's credentials cuts
//! hypersaga off (AADSTS70025).

use std::time::Duration;

use hypersaga_emulator_arm::tenant_admin::{
    CONTRIBUTOR, Polling, RBAC_ADMINISTRATOR, TOKEN_EXCHANGE_AUDIENCE, TenantAdmin,
};
use hypersaga_emulator_arm::{Config, Emulator, LatencyModel, Principal};
use hypersaga_oidc::SigningKey;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::app_registrations::ACME;
use crate::issuer::*;
use crate::support::*;

const NEW_TENANT: &str = "5b0c1f0e-7d7e-4c4e-9a55-0b2f6c3a1d01";
const NEW_CLIENT: &str = "0ad2e8a1-0000-4000-8000-0000000000d3";
const NEW_SECRET: &str = "new-s3cret";
const NEW_SUB: &str = "77777777-2222-3333-4444-555555555555";

fn new_directory() -> Principal {
    Principal {
        azure_tenant_id: NEW_TENANT.into(),
        client_id: NEW_CLIENT.into(),
        client_secret: NEW_SECRET.into(),
        subscription_ids: vec![NEW_SUB.into()],
    }
}

/// hypersaga's client assertion for `subject`, signed by `key`.
fn assertion(key: &SigningKey, issuer: &str, subject: &str) -> String {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let claims = json!({
        "iss": issuer, "sub": subject, "aud": TOKEN_EXCHANGE_AUDIENCE,
        "iat": now, "nbf": now, "exp": now + 600,
        "jti": uuid::Uuid::new_v4().to_string(),
    });
    mint(key, &key.kid(), &claims)
}

/// The token request `ClientAssertionCredential` sends, for ARM, in the new directory.
async fn arm_token(
    http: &reqwest::Client,
    base: &str,
    client_id: &str,
    assertion: &str,
) -> Result<String, (StatusCode, Value)> {
    let resp = http
        .post(format!("{base}/{NEW_TENANT}/oauth2/v2.0/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "client_credentials")
                .append_pair("client_id", client_id)
                .append_pair("client_assertion_type", JWT_BEARER)
                .append_pair("client_assertion", assertion)
                .append_pair("scope", "https://management.azure.com/.default")
                .finish(),
        )
        .send()
        .await
        .expect("send");
    let status = resp.status();
    let body: Value = resp.json().await.expect("json");
    match body["access_token"].as_str() {
        Some(t) if status.is_success() => Ok(t.to_owned()),
        _ => Err((status, body)),
    }
}

async fn create_rg(http: &reqwest::Client, base: &str, token: &str, name: &str) -> StatusCode {
    http.put(format!(
        "{base}/subscriptions/{NEW_SUB}/resourcegroups/{name}?api-version={RES}"
    ))
    .bearer_auth(token)
    .json(&json!({"location": "eastus"}))
    .send()
    .await
    .expect("send")
    .status()
}

#[tokio::test]
async fn onboarding_lets_hypersagas_assertion_create_a_resource_group_at_once() {
    // Replication of 5 s scaled by 0.2: one second that onboarding must wait out.
    let mut cfg = config();
    cfg.latency = LatencyModel::Scaled(0.2);
    cfg.principal_replication_delay = Duration::from_secs(5);
    let emu = spawn(cfg).await;
    emu.admin
        .add_directory(&new_directory())
        .await
        .expect("add the tenant's directory");
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;

    let admin = TenantAdmin::new(
        &emu.base,
        Some(&emu.ca_pem),
        NEW_TENANT,
        NEW_CLIENT,
        NEW_SECRET,
    )
    .expect("tenant admin")
    .with_polling(Polling {
        interval: Duration::from_millis(100),
        timeout: Duration::from_secs(30),
    });
    let roles = [CONTRIBUTOR, RBAC_ADMINISTRATOR];
    let onboarded = admin
        .onboard(
            "hypersaga",
            &issuer.url,
            ACME,
            TOKEN_EXCHANGE_AUDIENCE,
            NEW_SUB,
            &roles,
        )
        .await
        .expect("onboard");
    assert!(!onboarded.adopted_existing_app);
    assert_eq!(onboarded.federated_credential_name, "hypersaga-tenant-acme");
    assert_eq!(onboarded.role_assignment_ids.len(), 2);

    // hypersaga, right away: a token for the app's principal, and a resource group.
    let token = arm_token(
        &emu.http,
        &emu.base,
        &onboarded.app_id,
        &assertion(&key, &issuer.url, ACME),
    )
    .await
    .expect("hypersaga's token");
    let claims = claims_of(&token);
    assert_eq!(claims["appid"], onboarded.app_id);
    assert_eq!(claims["oid"], onboarded.service_principal_id);
    assert_eq!(claims["tid"], NEW_TENANT);
    assert_eq!(
        create_rg(&emu.http, &emu.base, &token, "acme-cluster").await,
        StatusCode::CREATED
    );
    let assigned = emu
        .admin
        .role_assignments(Some(NEW_SUB))
        .await
        .expect("list");
    for (id, role) in onboarded.role_assignment_ids.iter().zip(roles) {
        let a = assigned
            .iter()
            .find(|a| a["id"].as_str() == Some(id.as_str()))
            .expect("assignment listed");
        assert!(
            a["properties"]["roleDefinitionId"]
                .as_str()
                .is_some_and(|r| r.ends_with(role)),
            "{a}"
        );
        assert_eq!(
            a["properties"]["principalId"],
            onboarded.service_principal_id
        );
    }

    // Again: everything adopted, nothing doubled.
    let again = admin
        .onboard(
            "hypersaga",
            &issuer.url,
            ACME,
            TOKEN_EXCHANGE_AUDIENCE,
            NEW_SUB,
            &roles,
        )
        .await
        .expect("onboard again");
    assert!(again.adopted_existing_app);
    assert_eq!(
        (
            &again.app_id,
            &again.service_principal_id,
            &again.federated_credential_id
        ),
        (
            &onboarded.app_id,
            &onboarded.service_principal_id,
            &onboarded.federated_credential_id
        )
    );
    assert_eq!(again.role_assignment_ids, onboarded.role_assignment_ids);
    assert_eq!(
        emu.admin
            .applications(Some(NEW_TENANT))
            .await
            .expect("apps")
            .len(),
        1
    );

    // The tenant cuts hypersaga off.
    assert_eq!(
        admin
            .delete_federated_credentials(&onboarded.app_id)
            .await
            .expect("delete"),
        1
    );
    let (status, body) = arm_token(
        &emu.http,
        &emu.base,
        &onboarded.app_id,
        &assertion(&key, &issuer.url, ACME),
    )
    .await
    .expect_err("refused");
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error_codes"], json!([70025]), "{body}");
}

#[tokio::test]
async fn onboarding_works_over_plain_http_and_reports_entras_refusals() {
    let emu = Emulator::new(Config {
        principals: vec![new_directory()],
        latency: LatencyModel::Zero,
        ..Config::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let router = emu.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;

    let wrong = TenantAdmin::new(&base, None, NEW_TENANT, NEW_CLIENT, "wrong").expect("admin");
    let e = wrong
        .onboard(
            "hypersaga",
            &issuer.url,
            ACME,
            TOKEN_EXCHANGE_AUDIENCE,
            NEW_SUB,
            &[CONTRIBUTOR],
        )
        .await
        .expect_err("wrong secret");
    assert_eq!(e.aadsts(), Some(7000215), "{e}");

    let admin = TenantAdmin::new(&base, None, NEW_TENANT, NEW_CLIENT, NEW_SECRET).expect("admin");
    let onboarded = admin
        .onboard(
            "hypersaga",
            &issuer.url,
            ACME,
            TOKEN_EXCHANGE_AUDIENCE,
            NEW_SUB,
            &[CONTRIBUTOR],
        )
        .await
        .expect("onboard");
    let http = reqwest::Client::new();
    let token = arm_token(
        &http,
        &base,
        &onboarded.app_id,
        &assertion(&key, &issuer.url, ACME),
    )
    .await
    .expect("token");
    assert_eq!(
        create_rg(&http, &base, &token, "plain").await,
        StatusCode::CREATED
    );

    // Another issuer under the same credential name is left alone, not replaced.
    let e = admin
        .onboard(
            "hypersaga",
            "http://127.0.0.1:1/elsewhere",
            ACME,
            TOKEN_EXCHANGE_AUDIENCE,
            NEW_SUB,
            &[CONTRIBUTOR],
        )
        .await
        .expect_err("mismatch");
    assert!(
        matches!(
            e,
            hypersaga_emulator_arm::TenantAdminError::CredentialMismatch { .. }
        ),
        "{e}"
    );
}
