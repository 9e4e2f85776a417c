//! The client-assertion grant of user-assigned managed identities (workload identity
//! federation), seen as a client sees it: `WorkloadIdentityCredential` getting a token, and
//! Entra's refusals for assertions that match no credential, are out of date, or do not verify
//! with the issuer's published keys.
//!
//! Expected codes and wording are Entra's as `src/entra/error.rs` cites them.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::issuer::*;
use crate::support::*;

/// Asserts Entra's refusal: HTTP status, OAuth `error`, the AADSTS code (in `error_codes` and
/// leading the description) and a part of the description.
pub(crate) fn assert_refused(
    r: Result<String, (StatusCode, Value)>,
    status: StatusCode,
    error: &str,
    code: u32,
    says: &str,
) {
    let (s, body) = r.expect_err("refused");
    assert_eq!(s, status, "{body}");
    assert_eq!(body["error"], error, "{body}");
    assert_eq!(body["error_codes"], json!([code]), "{body}");
    let description = body["error_description"].as_str().unwrap_or_default();
    assert!(
        description.starts_with(&format!("AADSTS{code}: ")),
        "{description}"
    );
    assert!(description.contains(says), "{description}\n  lacks: {says}");
    assert!(description.contains("Trace ID: "), "{description}");
}

#[tokio::test]
async fn workload_identity_credential_gets_a_token_for_the_identity() {
    use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
    use azure_core::credentials::TokenCredential;
    use azure_core::http::{ClientOptions, Transport};
    use azure_identity::{
        ClientAssertionCredentialOptions, WorkloadIdentityCredential,
        WorkloadIdentityCredentialOptions,
    };

    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let (client_id, principal_id) = federated_identity(&emu, "managed", "capz", &issuer.url).await;

    // The projected service-account token the pod would mount.
    let token_file = std::env::temp_dir().join(format!("sa-token-{}", uuid::Uuid::new_v4()));
    std::fs::write(&token_file, issuer.token(&key)).expect("write token file");
    let mut cloud = CustomConfiguration::default();
    cloud.authority_host = emu.base.clone();
    let cred = WorkloadIdentityCredential::new(Some(WorkloadIdentityCredentialOptions {
        credential_options: ClientAssertionCredentialOptions {
            client_options: ClientOptions {
                transport: Some(Transport::new(Arc::new(client(&emu.ca_pem)))),
                cloud: Some(Arc::new(CloudConfiguration::Custom(cloud))),
                ..Default::default()
            },
        },
        client_id: Some(client_id.clone()),
        tenant_id: Some(TENANT.into()),
        token_file_path: Some(token_file.clone()),
    }))
    .expect("credential");
    let access = cred
        .get_token(&["https://management.azure.com/.default"], None)
        .await;
    let _ = std::fs::remove_file(&token_file);
    let access = access.expect("token");

    let claims = claims_of(access.token.secret());
    assert_eq!(claims["oid"], principal_id);
    assert_eq!(claims["sub"], principal_id);
    assert_eq!(claims["appid"], client_id);
    assert_eq!(claims["tid"], TENANT);
    assert_eq!(claims["idtyp"], "app");
    assert_eq!(claims["aud"], "https://management.azure.com/");
    assert_eq!(claims["iss"], format!("https://sts.windows.net/{TENANT}/"));

    // ARM accepts the token; with no role assignment it is refused, naming the identity.
    let r = emu
        .call_as(
            access.token.secret(),
            Method::GET,
            &format!("/subscriptions/{SUB}/resourceGroups/managed?api-version={RES}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert_eq!(r.code(), "AuthorizationFailed");
    assert!(r.message().contains(&principal_id), "{}", r.message());
}

#[tokio::test]
async fn assertions_matching_no_credential_are_refused_as_entra_refuses() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let (client_id, _) = federated_identity(&emu, "managed", "capz", &issuer.url).await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = issuer.claims(SUBJECT);
        change(&mut claims);
        mint(&key, &key.kid(), &claims)
    };

    // The good one, for reference.
    assert!(
        exchange(&emu, &client_id, &issuer.token(&key))
            .await
            .is_ok()
    );

    // The issuer is compared byte for byte: a trailing slash is another issuer.
    let slash = format!("{}/", issuer.url);
    assert_refused(
        exchange(&emu, &client_id, &with(&|c| c["iss"] = json!(slash))).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700211,
        &format!(
            "No matching federated identity record found for presented assertion issuer '{slash}'."
        ),
    );
    let other_sa = "system:serviceaccount:kube-system:azure-cloud-provider";
    assert_refused(
        exchange(&emu, &client_id, &with(&|c| c["sub"] = json!(other_sa))).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700213,
        &format!(
            "No matching federated identity record found for presented assertion subject '{other_sa}'."
        ),
    );
    let shouting = SUBJECT.to_uppercase();
    assert_refused(
        exchange(&emu, &client_id, &with(&|c| c["sub"] = json!(shouting))).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7002138,
        "The subject matches with case-insensitive comparison, but not with case-sensitive comparison.",
    );
    // A token minted for the API server rather than for the federation audience.
    assert_refused(
        exchange(
            &emu,
            &client_id,
            &with(&|c| c["aud"] = json!(["https://kubernetes.default.svc"])),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700212,
        "presented assertion audience 'https://kubernetes.default.svc'.",
    );
    assert_refused(
        exchange(
            &emu,
            &client_id,
            &with(&|c| {
                c["nbf"] = json!(now - 700);
                c["exp"] = json!(now - 100);
            }),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700024,
        "Client assertion is not within its valid time range. Current time: ",
    );
    assert_refused(
        exchange(&emu, &client_id, &with(&|c| c["nbf"] = json!(now + 300))).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700024,
        "Client assertion is not within its valid time range.",
    );

    let stranger = uuid::Uuid::new_v4().to_string();
    assert_refused(
        exchange(&emu, &stranger, &issuer.token(&key)).await,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &format!(
            "Application with identifier '{stranger}' was not found in the directory '{TENANT}'."
        ),
    );
    // The operator's app registration has a secret, no federated credential.
    assert_refused(
        exchange(&emu, CLIENT, &issuer.token(&key)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        70021,
        &format!(
            "No matching federated identity record found for presented assertion. Assertion \
             Issuer: '{}'. Assertion Subject: '{SUBJECT}'. Assertion Audience: '{AUDIENCE}'.",
            issuer.url
        ),
    );
    assert_refused(
        exchange(&emu, &client_id, "not-a-jwt").await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
        50027,
        "JWT token is invalid or malformed.",
    );
    assert_refused(
        exchange_as(
            &emu,
            &client_id,
            &issuer.token(&key),
            "urn:ietf:params:oauth:client-assertion-type:saml2-bearer",
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
        90011,
        "Unexpected client assertion type.",
    );
}

#[tokio::test]
async fn assertions_are_verified_with_the_issuers_published_keys() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let (published, other) = (signing_key(), signing_key());
    let issuer = Issuer::start(&[&published]).await;
    let (client_id, _) = federated_identity(&emu, "managed", "capz", &issuer.url).await;
    let claims = issuer.claims(SUBJECT);

    // Signed by another key under the published key's id.
    assert_refused(
        exchange(&emu, &client_id, &mint(&other, &published.kid(), &claims)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700027,
        "Client assertion failed signature validation.",
    );
    // A key the issuer does not publish.
    assert_refused(
        exchange(&emu, &client_id, &issuer.token(&other)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000272,
        &format!(
            "The certificate with identifier {} used to sign the federated credential could not \
             be found in the metadata of identity provider {}.",
            other.kid(),
            issuer.url
        ),
    );
    // No `kid` at all: the identifier is empty, as Entra prints it.
    let unnamed = {
        use base64::Engine as _;
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let signed = format!("{}.{}", b64(&json!({"alg": "RS256"})), b64(&claims));
        let sig = published.sign_rs256(signed.as_bytes()).expect("sign");
        format!(
            "{signed}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig)
        )
    };
    assert_refused(
        exchange(&emu, &client_id, &unnamed).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000272,
        "The certificate with identifier  used to sign the federated credential",
    );

    // The key set is cached: a second good exchange does not fetch it again.
    assert!(
        exchange(&emu, &client_id, &issuer.token(&published))
            .await
            .is_ok()
    );
    let fetched = issuer.jwks_fetches();
    assert!(
        exchange(&emu, &client_id, &issuer.token(&published))
            .await
            .is_ok()
    );
    assert_eq!(issuer.jwks_fetches(), fetched);

    // A rotation: a `kid` not in the cached set makes the emulator fetch the set again.
    issuer.publish(&[&other, &published]);
    assert!(
        exchange(&emu, &client_id, &issuer.token(&other))
            .await
            .is_ok()
    );
    assert_eq!(issuer.jwks_fetches(), fetched + 1);
}

#[tokio::test]
async fn issuers_are_read_over_https_only_save_loopback_http() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;

    // Plain HTTP to anything but loopback is refused before any request is made.
    let remote = "http://oidc.example.com/devstoreaccount1/oidc";
    let (remote_client, _) = federated_identity(&emu, "managed", "remote", remote).await;
    let mut claims = issuer.claims(SUBJECT);
    claims["iss"] = json!(remote);
    assert_refused(
        exchange(&emu, &remote_client, &mint(&key, &key.kid(), &claims)).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
        50166,
        "Request to External OIDC endpoint failed.",
    );

    // A loopback issuer nobody serves.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}/oidc", l.local_addr().expect("addr"))
    };
    let (closed_client, _) = federated_identity(&emu, "managed", "closed", &closed).await;
    claims["iss"] = json!(closed);
    assert_refused(
        exchange(&emu, &closed_client, &mint(&key, &key.kid(), &claims)).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
        50166,
        "Request to External OIDC endpoint failed.",
    );

    // A loopback issuer path that serves no discovery document.
    let missing = format!("{}/elsewhere", issuer.url);
    let (missing_client, _) = federated_identity(&emu, "managed", "missing", &missing).await;
    claims["iss"] = json!(missing);
    assert_refused(
        exchange(&emu, &missing_client, &mint(&key, &key.kid(), &claims)).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
        50166,
        "Request to External OIDC endpoint failed.",
    );
}

#[tokio::test]
async fn new_identities_and_credentials_are_usable_once_entra_has_replicated_them() {
    use std::time::Duration;

    use hypersaga_emulator_arm::LatencyModel;

    // 5 s of replication scaled by 0.2: one second, against ~0.1-0.2 s per synchronous write.
    let mut cfg = config();
    cfg.latency = LatencyModel::Scaled(0.2);
    cfg.principal_replication_delay = Duration::from_secs(5);
    let replicated = Duration::from_millis(1100);
    let emu = spawn(cfg).await;
    emu.rg("managed").await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;

    let mi = msi("managed", "userAssignedIdentities/capz");
    let r = emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let client_id = r.body["properties"]["clientId"]
        .as_str()
        .expect("clientId")
        .to_owned();
    // Entra does not know the identity's service principal yet.
    assert_refused(
        exchange(&emu, &client_id, &issuer.token(&key)).await,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &client_id,
    );

    tokio::time::sleep(replicated).await;
    let fic = emu
        .put(
            &format!("{mi}/federatedIdentityCredentials/capz-fed-id"),
            MSI,
            json!({"properties": {"issuer": issuer.url, "subject": SUBJECT, "audiences": [AUDIENCE]}}),
        )
        .await;
    assert_eq!(fic.status, StatusCode::CREATED, "{:?}", fic.body);
    // The credential matches, but has not replicated: the generic mismatch
    // (workload-identity-federation-considerations.md).
    assert_refused(
        exchange(&emu, &client_id, &issuer.token(&key)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        70021,
        "No matching federated identity record found for presented assertion.",
    );

    tokio::time::sleep(replicated).await;
    assert!(
        exchange(&emu, &client_id, &issuer.token(&key))
            .await
            .is_ok()
    );
}
