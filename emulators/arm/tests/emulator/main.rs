//! End-to-end tests: a real TLS server on 127.0.0.1:0, clients trusting the dev CA.
//!
//! One binary for every suite: the harness in `support`, role assignments and definitions in
//! `rbac`, api-version acceptance and refusals in `api_versions`, failures after acceptance
//! and refusals of concurrent writes in `refusals`, workload identity federation in
//! `workload_identity` (with the OIDC issuer of `issuer`), managed identities' authorization
//! in `identity_rbac` (and the permissions list a principal reads of itself in `permissions`),
//! worker VMs with their NICs and disks in `workers`, references to
//! missing resources in `references`, the regions and VM sizes Azure offers (and refuses
//! beyond) with the Resource SKUs list in `offerings`, vCPU quota (the usage list and the 409
//! beyond it) in `quota`, deletes of resources in use and group cascades in `teardown`,
//! Entra's answers for tenants it does not have in `tenants`, Microsoft Graph's app
//! registrations in `app_registrations`, an app registration's client assertion reaching
//! ARM in `app_federation`, directories added at runtime in `directories`, the tenant-admin
//! client's onboarding in `tenant_admin`, everything else here.

mod api_versions;
mod app_federation;
mod app_registrations;
mod directories;
mod identity_rbac;
mod issuer;
mod offerings;
mod permissions;
mod quota;
mod rbac;
mod references;
mod refusals;
mod support;
mod teardown;
mod tenant_admin;
mod tenants;
mod workers;
mod workload_identity;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hypersaga_emulator_arm::{BucketConfig, FaultSpec, LatencyModel, Principal, ThrottleConfig};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use support::*;

#[tokio::test]
async fn azure_identity_client_secret_credential_gets_a_token_that_arm_accepts() {
    use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
    use azure_core::credentials::{Secret, TokenCredential};
    use azure_core::http::{ClientOptions, Transport};
    use azure_identity::{ClientSecretCredential, ClientSecretCredentialOptions};

    let emu = spawn(config()).await;
    let options = |secret: &str| {
        let mut cloud = CustomConfiguration::default();
        cloud.authority_host = emu.base.clone();
        let opts = ClientSecretCredentialOptions {
            client_options: ClientOptions {
                transport: Some(Transport::new(Arc::new(client(&emu.ca_pem)))),
                cloud: Some(Arc::new(CloudConfiguration::Custom(cloud))),
                ..Default::default()
            },
        };
        (secret.to_owned(), opts)
    };
    let (secret, opts) = options(SECRET);
    let cred = ClientSecretCredential::new(TENANT, CLIENT.into(), Secret::new(secret), Some(opts))
        .expect("credential");
    let access = cred
        .get_token(&["https://management.azure.com/.default"], None)
        .await
        .expect("token");
    let resp = emu
        .http
        .get(format!(
            "{}/subscriptions/{SUB}/resourcegroups?api-version={RES}",
            emu.base
        ))
        .bearer_auth(access.token.secret())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);

    let (_, opts) = options("wrong");
    let bad = ClientSecretCredential::new(
        TENANT,
        CLIENT.into(),
        Secret::new("wrong".to_owned()),
        Some(opts),
    )
    .expect("credential");
    let err = bad
        .get_token(&["https://management.azure.com/.default"], None)
        .await
        .expect_err("bad secret");
    assert!(err.to_string().contains("AADSTS7000215"), "{err}");

    let (status, body) = token(&emu.http, &emu.base, "wrong").await.expect_err("401");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"], "invalid_client");
    assert_eq!(body["error_codes"], json!([7000215]));
}

#[tokio::test]
async fn arm_requires_a_valid_token_and_rbac_on_the_subscription() {
    let emu = spawn(config()).await;
    let path = format!("/subscriptions/{SUB}/resourcegroups?api-version={RES}");
    let r = emu
        .http
        .get(format!("{}{path}", emu.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().contains_key("www-authenticate"));
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "AuthenticationFailed");

    let r = emu
        .http
        .get(format!("{}{path}", emu.base))
        .bearer_auth("garbage")
        .send()
        .await
        .expect("send");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "InvalidAuthenticationToken");

    let other = emu
        .get(&format!("/subscriptions/{OTHER_SUB}/resourcegroups"), RES)
        .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    assert_eq!(other.code(), "AuthorizationFailed");
}

#[tokio::test]
async fn every_response_carries_arm_headers() {
    // ARM's capacities, but a refill slow enough (0.01/s) that the few milliseconds between
    // requests never put a token back, so the countdown below is exact.
    let mut cfg = config();
    for bucket in [
        &mut cfg.throttle.reads,
        &mut cfg.throttle.writes,
        &mut cfg.throttle.deletes,
    ] {
        bucket.refill_per_sec = 0.01;
    }
    let emu = spawn(cfg).await;
    let resp = emu
        .http
        .get(format!(
            "{}/subscriptions/{SUB}/resourcegroups?api-version={RES}",
            emu.base
        ))
        .bearer_auth(&emu.token)
        .header("x-ms-client-request-id", "abc-123")
        .header("x-ms-correlation-request-id", "corr-1")
        .send()
        .await
        .expect("send");
    let h = resp.headers();
    assert!(h.contains_key("x-ms-request-id"));
    assert_eq!(h["x-ms-correlation-request-id"], "corr-1");
    assert_eq!(h["x-ms-client-request-id"], "abc-123");
    assert_eq!(h["x-ms-ratelimit-remaining-subscription-reads"], "249");
    // C1: `x-ms-ratelimit-remaining-subscription-global-reads: 3749` (= 15 × 250 − 1).
    assert_eq!(
        h["x-ms-ratelimit-remaining-subscription-global-reads"],
        "3749"
    );
    // Only the request's class is reported.
    assert!(!h.contains_key("x-ms-ratelimit-remaining-subscription-writes"));
    assert!(!h.contains_key("x-ms-ratelimit-remaining-subscription-global-writes"));
    let routing = h["x-ms-routing-request-id"].to_str().expect("ascii");
    assert_routing_id(routing, "EASTUS");

    // Errors carry them too, and the buckets keep counting down.
    let missing = emu.get(&net("nope", "virtualNetworks/v"), NET).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        missing.header("x-ms-ratelimit-remaining-subscription-reads"),
        Some("248")
    );
    assert_eq!(
        missing.header("x-ms-ratelimit-remaining-subscription-global-reads"),
        Some("3748")
    );
    assert!(missing.header("x-ms-routing-request-id").is_some());
    let w = emu
        .put(
            &format!("/subscriptions/{SUB}/resourcegroups/rg"),
            RES,
            json!({"location": "eastus"}),
        )
        .await;
    assert_eq!(
        w.header("x-ms-ratelimit-remaining-subscription-writes"),
        Some("199")
    );
    assert_eq!(
        w.header("x-ms-ratelimit-remaining-subscription-global-writes"),
        Some("2999")
    );
    assert!(
        w.header("x-ms-ratelimit-remaining-subscription-reads")
            .is_none()
    );
    let d = emu
        .delete(&format!("/subscriptions/{SUB}/resourcegroups/rg"), RES)
        .await;
    assert_eq!(
        d.header("x-ms-ratelimit-remaining-subscription-deletes"),
        Some("199")
    );
    assert_eq!(
        d.header("x-ms-ratelimit-remaining-subscription-global-deletes"),
        Some("2999")
    );
    // An RBAC refusal reports the buckets without taking a token.
    let denied = emu
        .get(&format!("/subscriptions/{OTHER_SUB}/resourcegroups"), RES)
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(
        denied.header("x-ms-ratelimit-remaining-subscription-reads"),
        Some("250")
    );
    assert_eq!(
        denied.header("x-ms-ratelimit-remaining-subscription-global-reads"),
        Some("3750")
    );
    // Unauthenticated: no principal bucket to speak of, the shared one still shows.
    let anon = emu
        .http
        .get(format!(
            "{}/subscriptions/{SUB}/resourcegroups?api-version={RES}",
            emu.base
        ))
        .send()
        .await
        .expect("send");
    assert_eq!(anon.status(), StatusCode::UNAUTHORIZED);
    let h = anon.headers();
    assert!(!h.contains_key("x-ms-ratelimit-remaining-subscription-reads"));
    assert!(h.contains_key("x-ms-ratelimit-remaining-subscription-global-reads"));
    assert!(h.contains_key("x-ms-routing-request-id"));

    // The token endpoint is Entra's, not ARM's.
    let tok = emu
        .http
        .post(format!("{}/{TENANT}/oauth2/v2.0/token", emu.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials")
        .send()
        .await
        .expect("send");
    assert!(
        !tok.headers()
            .keys()
            .any(|k| k.as_str().starts_with("x-ms-ratelimit") || k == "x-ms-routing-request-id")
    );
}

/// `<REGION>:<yyyyMMddTHHmmssZ>:<uuid>`, e.g. `EASTUS:20240101T120000Z:9f0c…`.
fn assert_routing_id(value: &str, region: &str) {
    let parts: Vec<&str> = value.split(':').collect();
    assert_eq!(parts.len(), 3, "{value}");
    assert_eq!(parts[0], region, "{value}");
    let ts = parts[1].as_bytes();
    assert_eq!(ts.len(), 16, "{value}");
    assert!(
        ts.iter().enumerate().all(|(i, c)| match i {
            8 => *c == b'T',
            15 => *c == b'Z',
            _ => c.is_ascii_digit(),
        }),
        "{value}"
    );
    assert!(parts[1].starts_with("20"), "{value}");
    uuid::Uuid::parse_str(parts[2]).expect("uuid");
}

#[tokio::test]
async fn routing_request_id_names_the_configured_region() {
    let mut cfg = config();
    cfg.region = "West Europe".into();
    let emu = spawn(cfg).await;
    let r = emu
        .get(&format!("/subscriptions/{SUB}/resourcegroups"), RES)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let id = r.header("x-ms-routing-request-id").expect("routing id");
    assert_routing_id(id, "WESTEUROPE");
    let again = emu
        .get(&format!("/subscriptions/{SUB}/resourcegroups"), RES)
        .await;
    assert_ne!(again.header("x-ms-routing-request-id"), Some(id));
}

#[tokio::test]
async fn resource_group_lifecycle_and_cascading_delete() {
    let emu = spawn(config()).await;
    let rg = emu.rg("MyRG").await;
    let r = emu
        .get(&format!("/subscriptions/{SUB}/resourceGroups/myrg"), RES)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["id"],
        format!("/subscriptions/{SUB}/resourceGroups/MyRG")
    );
    assert_eq!(r.body["properties"]["provisioningState"], "Succeeded");
    let again = emu
        .put(&rg, RES, json!({"location": "eastus", "tags": {"a": "b"}}))
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["tags"]["a"], "b");

    emu.put(
        &net("MyRG", "networkSecurityGroups/nsg"),
        NET,
        json!({"location": "eastus"}),
    )
    .await;
    emu.put(
        &msi("MyRG", "userAssignedIdentities/mi"),
        MSI,
        json!({"location": "eastus"}),
    )
    .await;
    emu.put(
        &msi(
            "MyRG",
            "userAssignedIdentities/mi/federatedIdentityCredentials/f",
        ),
        MSI,
        json!({"properties": {"issuer": "https://i", "subject": "s", "audiences": ["openshift"]}}),
    )
    .await;
    assert_eq!(emu.admin.resources(Some(SUB)).await.expect("dump").len(), 4);

    let del = emu.delete(&rg, RES).await;
    assert_eq!(del.status, StatusCode::ACCEPTED);
    // Azure says `Retry-After: 15`; with zero latency the emulator says nothing, so clients
    // poll again at once instead of waiting for work that is already done.
    assert_eq!(del.header("retry-after"), None);
    let location = del.header("location").expect("location").to_owned();
    assert!(location.starts_with(&emu.base));
    let done = emu.call(Method::GET, &location, None).await;
    assert_eq!(done.status, StatusCode::OK);
    assert!(
        emu.admin
            .resources(Some(SUB))
            .await
            .expect("dump")
            .is_empty()
    );
    let gone = emu.get(&rg, RES).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.code(), "ResourceGroupNotFound");
    assert_eq!(emu.delete(&rg, RES).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn writes_into_a_deleting_resource_group_conflict() {
    let mut cfg = config();
    cfg.latency_overrides = BTreeMap::from([(
        "Microsoft.Resources/resourceGroups".to_owned(),
        Duration::from_secs(60),
    )]);
    let emu = spawn(cfg).await;
    let rg = emu.rg("rg").await;
    let del = emu.delete(&rg, RES).await;
    assert_eq!(del.status, StatusCode::ACCEPTED);
    let loc = del.header("location").expect("location").to_owned();
    assert_eq!(
        emu.call(Method::GET, &loc, None).await.status,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        emu.get(&rg, RES).await.body["properties"]["provisioningState"],
        "Deleting"
    );
    let w = emu
        .put(
            &net("rg", "networkSecurityGroups/n"),
            NET,
            json!({"location": "eastus"}),
        )
        .await;
    assert_eq!(w.status, StatusCode::CONFLICT);
    assert_eq!(w.code(), "ResourceGroupBeingDeleted");
}

#[tokio::test]
async fn network_put_is_async_with_azure_asyncoperation() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let nsg_path = net("rg", "networkSecurityGroups/nsg1");
    let r = emu
        .put(
            &nsg_path,
            NET,
            json!({"location": "eastus", "properties": {}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.body["properties"]["provisioningState"], "Updating");
    let aao = r.header("azure-asyncoperation").expect("aao").to_owned();
    assert!(
        aao.starts_with(&format!(
            "{}/subscriptions/{SUB}/providers/Microsoft.Network/locations/eastus/operations/",
            emu.base
        )),
        "{aao}"
    );
    assert!(aao.contains("api-version=2023-11-01"));
    let op = emu.call(Method::GET, &aao, None).await;
    assert_eq!(op.status, StatusCode::OK);
    assert_eq!(op.body["status"], "Succeeded");
    assert!(op.body["startTime"].is_string() && op.body["endTime"].is_string());
    let g = emu.get(&nsg_path, NET).await;
    assert_eq!(g.body["properties"]["provisioningState"], "Succeeded");
    assert!(
        g.body["etag"]
            .as_str()
            .unwrap_or_default()
            .starts_with("W/\"")
    );

    // VNet with an inline subnet referencing the NSG, then the subnet as a child resource.
    let nsg_id = g.body["id"].as_str().expect("id").to_owned();
    let vnet = emu
        .put(
            &net("rg", "virtualNetworks/vnet"),
            NET,
            json!({"location": "eastus", "properties": {
                "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24", "networkSecurityGroup": {"id": nsg_id}}}]
            }}),
        )
        .await;
    assert_eq!(vnet.status, StatusCode::CREATED);
    let subnet = emu
        .get(&net("rg", "virtualNetworks/VNET/subnets/Default"), NET)
        .await;
    assert_eq!(subnet.status, StatusCode::OK, "{:?}", subnet.body);
    assert_eq!(
        subnet.body["id"],
        format!(
            "/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"
        )
    );
    assert_eq!(subnet.body["properties"]["provisioningState"], "Succeeded");

    // The NSG cannot go while the subnet uses it.
    let del = emu.delete(&nsg_path, NET).await;
    assert_eq!(del.status, StatusCode::BAD_REQUEST);
    assert_eq!(del.code(), "InUseNetworkSecurityGroupCannotBeDeleted");

    // Delete the VNet (async), then the NSG.
    let d = emu.delete(&net("rg", "virtualNetworks/vnet"), NET).await;
    assert_eq!(d.status, StatusCode::ACCEPTED);
    assert!(d.header("azure-asyncoperation").is_some());
    let loc = d.header("location").expect("location").to_owned();
    assert_eq!(
        emu.call(Method::GET, &loc, None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        emu.delete(&nsg_path, NET).await.status,
        StatusCode::ACCEPTED
    );

    // PIP + LB with inline children get ids.
    let pip = emu.put(&net("rg", "publicIPAddresses/ip"), NET, json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {"publicIPAllocationMethod": "Static"}})).await;
    assert_eq!(pip.status, StatusCode::CREATED);
    let lb = emu
        .put(
            &net("rg", "loadBalancers/lb"),
            NET,
            json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {
                "frontendIPConfigurations": [{"name": "fe", "properties": {"publicIPAddress": {"id": pip.body["id"]}}}],
                "backendAddressPools": [{"name": "be"}],
                "probes": [{"name": "p", "properties": {"protocol": "Http", "port": 30595, "requestPath": "/healthz"}}],
                "outboundRules": [{"name": "o", "properties": {"protocol": "All", "allocatedOutboundPorts": 1024}}]
            }}),
        )
        .await;
    assert_eq!(lb.status, StatusCode::CREATED);
    let lbg = emu.get(&net("rg", "loadBalancers/lb"), NET).await;
    assert_eq!(
        lbg.body["properties"]["backendAddressPools"][0]["id"],
        format!(
            "{}/backendAddressPools/be",
            lbg.body["id"].as_str().unwrap_or_default()
        )
    );
    assert_eq!(lbg.body["sku"]["name"], "Standard");
}

#[tokio::test]
async fn latency_keeps_operations_in_progress_until_due() {
    let mut cfg = config();
    cfg.latency = LatencyModel::Scaled(0.1); // NSG: 2 s * 0.1 = 200 ms
    let emu = spawn(cfg).await;
    emu.rg("rg").await;
    let r = emu
        .put(
            &net("rg", "networkSecurityGroups/n"),
            NET,
            json!({"location": "eastus"}),
        )
        .await;
    let aao = r.header("azure-asyncoperation").expect("aao").to_owned();
    assert_eq!(
        emu.call(Method::GET, &aao, None).await.body["status"],
        "InProgress"
    );
    assert_eq!(
        emu.get(&net("rg", "networkSecurityGroups/n"), NET)
            .await
            .body["properties"]["provisioningState"],
        "Updating"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        emu.call(Method::GET, &aao, None).await.body["status"],
        "Succeeded"
    );
}

#[tokio::test]
async fn private_dns_zone_link_and_records() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let zone = net("rg", "privateDnsZones/c1.example.com");
    let r = emu.put(&zone, PDNS, json!({"location": "global"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert!(r.body.is_null());
    assert!(r.header("retry-after").is_none());
    let aao = r.header("azure-asyncoperation").expect("aao").to_owned();
    let loc = r.header("location").expect("location").to_owned();
    assert_eq!(
        emu.call(Method::GET, &aao, None).await.body["status"],
        "Succeeded"
    );
    let fin = emu.call(Method::GET, &loc, None).await;
    assert_eq!(fin.status, StatusCode::OK);
    assert_eq!(fin.body["location"], "global");
    assert_eq!(fin.body["type"], "Microsoft.Network/privateDnsZones");

    // A link to a VNet that does not exist.
    let link = format!("{zone}/virtualNetworkLinks/l1");
    let missing_vnet = net("rg", "virtualNetworks/nope");
    let bad = emu
        .put(&link, PDNS, json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": missing_vnet}}}))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    let vnet = emu.put(&net("rg", "virtualNetworks/v"), NET, json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}})).await;
    let ok = emu
        .put(&link, PDNS, json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": vnet.body["id"]}}}))
        .await;
    assert_eq!(ok.status, StatusCode::ACCEPTED);
    let l = emu.get(&link, PDNS).await;
    assert_eq!(l.body["properties"]["virtualNetworkLinkState"], "Completed");

    let a = emu
        .put(
            &format!("{zone}/A/api"),
            PDNS,
            json!({"properties": {"ttl": 300, "aRecords": [{"ipv4Address": "10.0.0.4"}]}}),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    assert_eq!(a.body["properties"]["fqdn"], "api.c1.example.com.");
    assert_eq!(a.body["properties"]["provisioningState"], "Succeeded");

    // Zone with a link cannot be deleted.
    let d = emu.delete(&zone, PDNS).await;
    assert_eq!(d.status, StatusCode::CONFLICT);
    assert_eq!(d.code(), "CannotDeleteResource");
    assert_eq!(emu.delete(&link, PDNS).await.status, StatusCode::ACCEPTED);
    let d = emu.delete(&zone, PDNS).await;
    assert_eq!(d.status, StatusCode::ACCEPTED);
    assert!(d.header("location").is_some() && d.header("azure-asyncoperation").is_some());
    assert_eq!(emu.get(&zone, PDNS).await.status, StatusCode::NOT_FOUND);
    // Records went with the zone.
    assert_eq!(
        emu.get(&format!("{zone}/A/api"), PDNS).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn referential_integrity_errors() {
    let emu = spawn(config()).await;
    let r = emu
        .put(
            &net("nope", "networkSecurityGroups/n"),
            NET,
            json!({"location": "eastus"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.code(), "ResourceGroupNotFound");
    assert_eq!(r.header("x-ms-failure-cause"), Some("gateway"));

    emu.rg("rg").await;
    let r = emu
        .put(
            &msi(
                "rg",
                "userAssignedIdentities/ghost/federatedIdentityCredentials/f",
            ),
            MSI,
            json!({"properties": {"issuer": "i", "subject": "s", "audiences": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.code(), "ParentResourceNotFound");

    let r = emu.get(&net("rg", "virtualNetworks/missing"), NET).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.code(), "ResourceNotFound");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("'Microsoft.Network/virtualNetworks/missing' under resource group 'rg'")
    );

    let r = emu
        .put(&net("rg", "networkSecurityGroups/n"), NET, json!({}))
        .await;
    assert_eq!(r.code(), "LocationRequired");
    assert_eq!(
        emu.delete(&net("rg", "networkSecurityGroups/absent"), NET)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn identities_and_federated_credentials() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let mi = msi("rg", "userAssignedIdentities/c1-disk-infra");
    let first = emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let p = &first.body["properties"];
    assert_eq!(p["tenantId"], TENANT);
    assert_eq!(p["provisioningState"], "Succeeded");
    let again = emu
        .put(&mi, MSI, json!({"location": "eastus", "tags": {"x": "y"}}))
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["properties"]["principalId"], p["principalId"]);
    assert_eq!(again.body["properties"]["clientId"], p["clientId"]);

    let fic = |n: usize, subject: &str| {
        (
            format!("{mi}/federatedIdentityCredentials/fic{n}"),
            json!({"properties": {"issuer": "https://issuer", "subject": subject, "audiences": ["openshift"]}}),
        )
    };
    for n in 0..20 {
        let (path, body) = fic(n, &format!("system:serviceaccount:ns:sa{n}"));
        assert_eq!(emu.put(&path, MSI, body).await.status, StatusCode::CREATED);
    }
    let (path, body) = fic(99, "system:serviceaccount:ns:sa0");
    let dup = emu.put(&path, MSI, body).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    let (path, body) = fic(20, "system:serviceaccount:ns:other");
    let over = emu.put(&path, MSI, body).await;
    assert_eq!(over.status, StatusCode::BAD_REQUEST);
    // Re-PUT of an existing FIC is fine at the limit.
    let (path, body) = fic(3, "system:serviceaccount:ns:sa3");
    assert_eq!(emu.put(&path, MSI, body).await.status, StatusCode::OK);

    // List FICs (paged at 20 by default → all in one page).
    let list = emu
        .get(&format!("{mi}/federatedIdentityCredentials"), MSI)
        .await;
    assert_eq!(list.body["value"].as_array().map(Vec::len), Some(20));
    assert!(list.body.get("nextLink").is_none());
    assert_eq!(emu.delete(&mi, MSI).await.status, StatusCode::OK);
    assert_eq!(
        emu.get(&format!("{mi}/federatedIdentityCredentials/fic1"), MSI)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn faults_fire_count_times_and_are_counted() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    emu.admin
        .add_fault(&FaultSpec {
            method: "PUT".into(),
            resource_type: "Microsoft.Network/privateDnsZones".into(),
            name_contains: Some("example".into()),
            path_contains: None,
            status: 403,
            code: "AuthorizationFailed".into(),
            message: None,
            retry_after_secs: Some(7),
            count: Some(1),
        })
        .await
        .expect("add fault");
    assert_eq!(emu.admin.faults().await.expect("faults").len(), 1);
    let zone = net("rg", "privateDnsZones/x.example.com");
    let r = emu.put(&zone, PDNS, json!({"location": "global"})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.code(), "AuthorizationFailed");
    assert_eq!(r.header("retry-after"), Some("7"));
    assert_eq!(
        emu.put(&zone, PDNS, json!({"location": "global"}))
            .await
            .status,
        StatusCode::ACCEPTED
    );
    assert!(emu.admin.faults().await.expect("faults").is_empty());

    let stats = emu.admin.requests().await.expect("requests");
    assert_eq!(stats.count("PUT", "Microsoft.Network/privateDnsZones"), 2);
    assert!(
        stats
            .counts
            .iter()
            .any(|c| c.status == 403 && c.resource_type == "Microsoft.Network/privateDnsZones")
    );
    assert!(
        stats
            .recent
            .iter()
            .any(|r| r.path.contains("x.example.com"))
    );

    emu.admin.reset().await.expect("reset");
    assert!(emu.admin.resources(None).await.expect("dump").is_empty());
}

#[tokio::test]
async fn throttling_answers_429_with_retry_after() {
    let mut cfg = config();
    // 3 reads per principal, 45 for the subscription; refilling 0.01/s (global 0.15/s) so
    // the test's own duration never puts a token back and every number below is exact.
    cfg.throttle = ThrottleConfig {
        enabled: true,
        reads: BucketConfig {
            capacity: 3.0,
            refill_per_sec: 0.01,
        },
        ..ThrottleConfig::default()
    };
    let emu = spawn(cfg).await;
    let path = format!("/subscriptions/{SUB}/resourcegroups");
    for (left, global) in [("2", "44"), ("1", "43"), ("0", "42")] {
        let r = emu.get(&path, RES).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(
            r.header("x-ms-ratelimit-remaining-subscription-reads"),
            Some(left)
        );
        assert_eq!(
            r.header("x-ms-ratelimit-remaining-subscription-global-reads"),
            Some(global)
        );
    }
    // Refused requests take nothing: the global bucket stays at 42 however often we knock.
    for _ in 0..3 {
        let r = emu.get(&path, RES).await;
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.code(), "SubscriptionRequestsThrottled");
        // 1 token at 0.01/s.
        assert_eq!(r.header("retry-after"), Some("100"));
        assert_eq!(
            r.header("x-ms-ratelimit-remaining-subscription-reads"),
            Some("0")
        );
        assert_eq!(
            r.header("x-ms-ratelimit-remaining-subscription-global-reads"),
            Some("42")
        );
        assert!(r.header("x-ms-routing-request-id").is_some());
        let message = r.body["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(
            message,
            format!(
                "Number of 'read' requests for subscription '{SUB}' actor '{}' exceeded. Please \
                 try again after '100' seconds after the additional tokens are available. Refer to \
                 https://aka.ms/arm-throttling for additional information.",
                object_id_of(&emu.token)
            )
        );
    }
    // Writes draw from another bucket.
    assert_eq!(
        emu.put(&format!("{path}/rg"), RES, json!({"location": "eastus"}))
            .await
            .status,
        StatusCode::CREATED
    );
}

const CLIENT_B: &str = "0ad2e8a1-0000-4000-8000-0000000000b2";
const CLIENT_C: &str = "0ad2e8a1-0000-4000-8000-0000000000c3";

/// Three principals on one subscription; reads: 3 each, 6 for the subscription (multiplier
/// 2), refilling slowly enough (0.1/s, 0.2/s) that a test's own duration never adds a token.
async fn spawn_shared() -> (TestEmu, [String; 3]) {
    let mut cfg = config();
    for client in [CLIENT_B, CLIENT_C] {
        cfg.principals.push(Principal {
            client_id: client.into(),
            ..principal()
        });
    }
    cfg.throttle = ThrottleConfig {
        reads: BucketConfig {
            capacity: 3.0,
            refill_per_sec: 0.1,
        },
        global_multiplier: 2.0,
        ..ThrottleConfig::default()
    };
    let emu = spawn(cfg).await;
    let b = token_for(&emu.http, &emu.base, CLIENT_B, SECRET)
        .await
        .expect("token b");
    let c = token_for(&emu.http, &emu.base, CLIENT_C, SECRET)
        .await
        .expect("token c");
    let a = emu.token.clone();
    (emu, [a, b, c])
}

/// (status, per-principal reads left, global reads left, Retry-After).
async fn read_as(emu: &TestEmu, token: &str) -> (StatusCode, u64, u64, Option<u64>) {
    let r = emu
        .call_as(
            token,
            Method::GET,
            &format!("/subscriptions/{SUB}/resourcegroups?api-version={RES}"),
            None,
        )
        .await;
    let num = |name: &str| -> Option<u64> { r.header(name).and_then(|v| v.parse().ok()) };
    (
        r.status,
        num("x-ms-ratelimit-remaining-subscription-reads").expect("reads header"),
        num("x-ms-ratelimit-remaining-subscription-global-reads").expect("global header"),
        num("retry-after"),
    )
}

#[tokio::test]
async fn principals_have_separate_buckets_but_share_the_global_one() {
    let (emu, [a, b, _]) = spawn_shared().await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(read_as(&emu, &a).await);
    }
    assert_eq!(
        seen,
        [
            (StatusCode::OK, 2, 5, None),
            (StatusCode::OK, 1, 4, None),
            (StatusCode::OK, 0, 3, None),
        ]
    );
    // `a` ran dry on its own bucket: 1 token at 0.1/s ≈ 10 s.
    let (status, left, global, retry) = read_as(&emu, &a).await;
    assert_eq!(
        (status, left, global),
        (StatusCode::TOO_MANY_REQUESTS, 0, 3)
    );
    assert!(matches!(retry, Some(9..=10)), "{retry:?}");
    // `b` has a full bucket of its own, drawn alongside the shared one `a` drained.
    assert_eq!(read_as(&emu, &b).await, (StatusCode::OK, 2, 2, None));
    assert_eq!(read_as(&emu, &b).await, (StatusCode::OK, 1, 1, None));
    // Still throttled for `a`, whatever `b` does.
    assert_eq!(read_as(&emu, &a).await.0, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn global_bucket_throttles_principals_that_together_exceed_it() {
    let (emu, [a, b, c]) = spawn_shared().await;
    for token in [&a, &b] {
        for _ in 0..3 {
            assert_eq!(read_as(&emu, token).await.0, StatusCode::OK);
        }
    }
    // `c` never called, yet the subscription's bucket is empty: 1 token at 0.2/s ≈ 5 s.
    let (status, left, global, retry) = read_as(&emu, &c).await;
    assert_eq!(
        (status, left, global),
        (StatusCode::TOO_MANY_REQUESTS, 3, 0)
    );
    assert!(matches!(retry, Some(4..=5)), "{retry:?}");
    let r = emu
        .call_as(
            &c,
            Method::GET,
            &format!("/subscriptions/{SUB}/resourcegroups?api-version={RES}"),
            None,
        )
        .await;
    assert_eq!(r.code(), "SubscriptionRequestsThrottled");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("actor '{}'", object_id_of(&c)))
    );
    // Writes are another pair of buckets.
    let w = emu
        .call_as(
            &c,
            Method::PUT,
            &format!("/subscriptions/{SUB}/resourcegroups/rg?api-version={RES}"),
            Some(json!({"location": "eastus"})),
        )
        .await;
    assert_eq!(w.status, StatusCode::CREATED);
    assert_eq!(
        w.header("x-ms-ratelimit-remaining-subscription-global-writes"),
        Some("399")
    );
}

#[tokio::test]
async fn request_stats_count_throttled_requests_per_subscription() {
    let (emu, [a, b, _]) = spawn_shared().await;
    for _ in 0..5 {
        read_as(&emu, &a).await; // 3 OK, 2 × 429
    }
    for _ in 0..4 {
        read_as(&emu, &b).await; // 3 OK (global 6 → 0), then 429
    }
    // A 403 on another subscription is an ARM request too, just not a throttled one.
    let denied = emu
        .get(&format!("/subscriptions/{OTHER_SUB}/resourcegroups"), RES)
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);

    let stats = emu.admin.requests().await.expect("requests");
    let sub = stats.subscription(SUB);
    assert_eq!((sub.requests, sub.throttled), (9, 3));
    assert!((sub.throttled_share() - 3.0 / 9.0).abs() < 1e-9);
    let other = stats.subscription(OTHER_SUB);
    assert_eq!((other.requests, other.throttled), (1, 0));
    assert_eq!((stats.arm_requests(), stats.arm_throttled()), (10, 3));
    assert!((stats.throttled_share() - 0.3).abs() < 1e-9);
    // The per-status counters agree, and token requests are not ARM requests.
    assert_eq!(
        stats
            .counts
            .iter()
            .filter(|c| c.status == 429)
            .map(|c| c.count)
            .sum::<u64>(),
        3
    );
    assert!(stats.count("POST", "Entra") >= 3);
    assert!(
        stats
            .recent
            .iter()
            .filter(|r| r.status == 429)
            .all(|r| r.subscription.as_deref() == Some(SUB))
    );

    // The JSON names other tools read.
    let raw: Value = emu
        .http
        .get(format!("{}requests", emu.admin_url))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let row = raw["subscriptions"]
        .as_array()
        .expect("subscriptions")
        .iter()
        .find(|r| r["subscription"] == SUB)
        .expect("row");
    assert_eq!(row["requests"], 9);
    assert_eq!(row["throttled"], 3);
    assert!(raw["counts"].is_array() && raw["recent"].is_array());

    emu.admin.reset().await.expect("reset");
    let stats = emu.admin.requests().await.expect("requests");
    assert!(stats.subscriptions.is_empty());
}

#[tokio::test]
async fn inventory_pages_and_filters() {
    let mut cfg = config();
    cfg.page_size = 2;
    let emu = spawn(cfg).await;
    emu.rg("rg").await;
    for n in 0..3 {
        emu.put(
            &net("rg", &format!("networkSecurityGroups/n{n}")),
            NET,
            json!({"location": "eastus"}),
        )
        .await;
    }
    let mi = msi("rg", "userAssignedIdentities/mi");
    emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    emu.put(
        &format!("{mi}/federatedIdentityCredentials/f"),
        MSI,
        json!({"properties": {"issuer": "i", "subject": "s", "audiences": ["a"]}}),
    )
    .await;
    let vnet = emu
        .put(
            &net("rg", "virtualNetworks/v"),
            NET,
            json!({"location": "eastus"}),
        )
        .await;
    let zone = net("rg", "privateDnsZones/z.local");
    emu.put(&zone, PDNS, json!({"location": "global"})).await;
    emu.put(
        &format!("{zone}/virtualNetworkLinks/l"),
        PDNS,
        json!({"location": "global", "properties": {"virtualNetwork": {"id": vnet.body["id"]}}}),
    )
    .await;
    emu.put(
        &format!("{zone}/A/a"),
        PDNS,
        json!({"properties": {"aRecords": []}}),
    )
    .await;

    let mut url = format!("/subscriptions/{SUB}/resources?api-version={RES}");
    let mut types = Vec::new();
    let mut pages = 0;
    loop {
        let r = emu.call(Method::GET, &url, None).await;
        assert_eq!(r.status, StatusCode::OK);
        pages += 1;
        for v in r.body["value"].as_array().expect("value") {
            types.push(v["type"].as_str().expect("type").to_owned());
        }
        match r.body["nextLink"].as_str() {
            Some(next) => url = next.to_owned(),
            None => break,
        }
    }
    types.sort();
    assert_eq!(pages, 4);
    assert_eq!(
        types,
        vec![
            "Microsoft.ManagedIdentity/userAssignedIdentities",
            "Microsoft.Network/networkSecurityGroups",
            "Microsoft.Network/networkSecurityGroups",
            "Microsoft.Network/networkSecurityGroups",
            "Microsoft.Network/privateDnsZones",
            "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
            "Microsoft.Network/virtualNetworks",
        ]
    );
    let filtered = emu
        .call(Method::GET, &format!("/subscriptions/{SUB}/resources?api-version={RES}&$filter=resourceType eq 'Microsoft.Network/networkSecurityGroups'"), None)
        .await;
    assert_eq!(filtered.body["value"].as_array().map(Vec::len), Some(2));
    assert!(
        filtered.body["nextLink"]
            .as_str()
            .unwrap_or_default()
            .contains("filter")
    );

    // The admin dump includes children (FICs, record sets).
    let dump = emu.admin.resources(Some(SUB)).await.expect("dump");
    assert!(dump.iter().any(|r| r["type"]
        == "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials"));
    assert!(
        dump.iter()
            .any(|r| r["type"] == "Microsoft.Network/privateDnsZones/A")
    );
}
