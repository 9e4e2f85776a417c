//! Entra's tenants as MSAL meets them: Python's `azure-identity` reads the tenant's OpenID
//! configuration (`GET {authority}/{tenant}/v2.0/.well-known/openid-configuration`) before its
//! first token request, and Entra answers a tenant it does not have, there and at the token
//! endpoint, with `400 invalid_tenant` / AADSTS90002 (the sources are in `src/entra/error.rs`).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::*;

async fn discovery(emu: &TestEmu, tenant: &str) -> (StatusCode, Value) {
    let resp = emu
        .http
        .get(format!(
            "{}/{tenant}/v2.0/.well-known/openid-configuration",
            emu.base
        ))
        .send()
        .await
        .expect("send");
    (resp.status(), resp.json().await.expect("json"))
}

async fn client_credentials(emu: &TestEmu, tenant: &str, client: &str) -> (StatusCode, Value) {
    let resp = emu
        .http
        .post(format!("{}/{tenant}/oauth2/v2.0/token", emu.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "client_credentials")
                .append_pair("client_id", client)
                .append_pair("client_secret", SECRET)
                .append_pair("scope", "https://management.azure.com/.default")
                .finish(),
        )
        .send()
        .await
        .expect("send");
    (resp.status(), resp.json().await.expect("json"))
}

fn assert_tenant_not_found((status, body): (StatusCode, Value), tenant: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"], "invalid_tenant", "{body}");
    assert_eq!(body["error_codes"], json!([90002]), "{body}");
    let description = body["error_description"].as_str().unwrap_or_default();
    assert!(
        description.starts_with(&format!("AADSTS90002: Tenant '{tenant}' not found. ")),
        "{description}"
    );
}

#[tokio::test]
async fn a_known_tenants_openid_configuration_names_its_token_endpoint() {
    let emu = spawn(config()).await;
    // Entra matches tenant ids ignoring case and answers with the tenant's own.
    for asked in [TENANT.to_owned(), TENANT.to_ascii_uppercase()] {
        let (status, doc) = discovery(&emu, &asked).await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        assert_eq!(
            doc["token_endpoint"],
            format!("{}/{TENANT}/oauth2/v2.0/token", emu.base)
        );
        assert_eq!(
            doc["issuer"],
            format!("https://login.microsoftonline.com/{TENANT}/v2.0")
        );
    }
}

#[tokio::test]
async fn a_tenant_entra_does_not_have_is_refused_at_discovery_and_at_the_token_endpoint() {
    let emu = spawn(config()).await;
    let stranger = uuid::Uuid::new_v4().to_string();
    assert_tenant_not_found(discovery(&emu, &stranger).await, &stranger);
    // The app and its secret are right; the tenant is not, and Entra looks at it first.
    assert_tenant_not_found(client_credentials(&emu, &stranger, CLIENT).await, &stranger);

    // In a tenant Entra has, an unknown app is still the app's refusal.
    let unknown_app = uuid::Uuid::new_v4().to_string();
    let (status, body) = client_credentials(&emu, TENANT, &unknown_app).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_codes"], json!([700016]), "{body}");
    assert!(
        client_credentials(&emu, TENANT, CLIENT)
            .await
            .0
            .is_success()
    );
}
