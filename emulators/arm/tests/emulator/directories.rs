//! Entra directories added while the emulator runs (`POST /directories` on the admin API), as
//! `hypersaga dev` adds one per tenant it creates: each is exactly a configured one — its
//! token endpoint and OpenID configuration, its administrator's operator rights on its
//! subscriptions and nowhere else, its Graph rights — and conflicts are refused.

use hypersaga_emulator_arm::Principal;
use hypersaga_emulator_arm::admin_client::Error as AdminError;
use reqwest::StatusCode;
use serde_json::json;

use crate::app_registrations::{GRAPH_SCOPE, OTHER_CLIENT, OTHER_SECRET, OTHER_TENANT};
use crate::support::*;

fn other() -> Principal {
    Principal {
        azure_tenant_id: OTHER_TENANT.into(),
        client_id: OTHER_CLIENT.into(),
        client_secret: OTHER_SECRET.into(),
        subscription_ids: vec![OTHER_SUB.into()],
    }
}

fn status_of(e: AdminError) -> u16 {
    match e {
        AdminError::Status { status, .. } => status,
        other => panic!("not a refusal: {other}"),
    }
}

#[tokio::test]
async fn a_directory_added_at_runtime_is_as_if_configured() {
    let emu = spawn(config()).await;
    let arm_scope = "https://management.azure.com/.default";
    let other_token = || {
        token_for_scope(
            &emu.http,
            &emu.base,
            OTHER_TENANT,
            OTHER_CLIENT,
            OTHER_SECRET,
            arm_scope,
        )
    };
    let (status, body) = other_token().await.expect_err("no such tenant yet");
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_codes"], json!([90002]), "{body}");

    let listed = emu.admin.add_directory(&other()).await.expect("add");
    assert_eq!(listed.azure_tenant_id, OTHER_TENANT);
    assert!(listed.added_at_runtime);

    // Entra has the tenant: discovery and the administrator's secret grant.
    let discovery = emu
        .http
        .get(format!(
            "{}/{OTHER_TENANT}/v2.0/.well-known/openid-configuration",
            emu.base
        ))
        .send()
        .await
        .expect("send");
    assert_eq!(discovery.status(), StatusCode::OK);
    let token = other_token().await.expect("the new administrator's token");

    // ARM: the operator of its subscription, a stranger to the other one.
    let rg = format!("/subscriptions/{OTHER_SUB}/resourcegroups/added");
    let r = emu
        .call_as(
            &token,
            reqwest::Method::PUT,
            &format!("{rg}?api-version={RES}"),
            Some(json!({"location": "eastus"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = emu
        .call_as(
            &token,
            reqwest::Method::GET,
            &format!("/subscriptions/{SUB}/resourcegroups?api-version={RES}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);
    assert_eq!(r.code(), "InvalidAuthenticationTokenTenant");

    // Graph: its administrator manages its directory's apps.
    let graph = token_for_scope(
        &emu.http,
        &emu.base,
        OTHER_TENANT,
        OTHER_CLIENT,
        OTHER_SECRET,
        GRAPH_SCOPE,
    )
    .await
    .expect("graph token");
    let r = emu
        .call_as(
            &graph,
            reqwest::Method::POST,
            "/v1.0/applications",
            Some(json!({"displayName": "hypersaga", "signInAudience": "AzureADMyOrg"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);

    // Listed after the configured one, without secrets.
    let all = emu.admin.directories().await.expect("list");
    let tenants: Vec<(&str, bool)> = all
        .iter()
        .map(|d| (d.azure_tenant_id.as_str(), d.added_at_runtime))
        .collect();
    assert_eq!(tenants, [(TENANT, false), (OTHER_TENANT, true)]);
    let raw = reqwest::get(format!("{}directories", emu.admin_url))
        .await
        .expect("get")
        .text()
        .await
        .expect("text");
    assert!(
        !raw.contains(SECRET) && !raw.contains(OTHER_SECRET),
        "{raw}"
    );
}

#[tokio::test]
async fn a_directory_is_refused_when_its_tenant_client_or_subscription_is_taken() {
    let emu = spawn(config()).await;
    emu.admin.add_directory(&other()).await.expect("add");
    // The very same directory again: a retry, not a conflict.
    emu.admin.add_directory(&other()).await.expect("add again");

    let fresh_tenant = uuid::Uuid::new_v4().to_string();
    let fresh_sub = uuid::Uuid::new_v4().to_string();
    let cases = [
        // The configured tenant, another administrator.
        Principal {
            azure_tenant_id: TENANT.into(),
            client_id: uuid::Uuid::new_v4().to_string(),
            client_secret: "x".into(),
            subscription_ids: vec![fresh_sub.clone()],
        },
        // The added tenant with another secret.
        Principal {
            client_secret: "changed".into(),
            ..other()
        },
        // Another tenant, the configured administrator's client id.
        Principal {
            azure_tenant_id: fresh_tenant.clone(),
            client_id: CLIENT.into(),
            client_secret: "x".into(),
            subscription_ids: vec![fresh_sub.clone()],
        },
        // Another tenant, a subscription the configured one owns.
        Principal {
            azure_tenant_id: fresh_tenant.clone(),
            client_id: uuid::Uuid::new_v4().to_string(),
            client_secret: "x".into(),
            subscription_ids: vec![SUB.to_ascii_uppercase()],
        },
    ];
    for p in &cases {
        let e = emu.admin.add_directory(p).await.expect_err("conflict");
        assert_eq!(status_of(e), 409, "{p:?}");
    }
    let not_a_guid = Principal {
        azure_tenant_id: "acme".into(),
        ..other()
    };
    let e = emu.admin.add_directory(&not_a_guid).await.expect_err("bad");
    assert_eq!(status_of(e), 400);
    assert_eq!(emu.admin.directories().await.expect("list").len(), 2);
}
