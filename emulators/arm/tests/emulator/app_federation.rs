//! hypersaga reaching a tenant's subscription with no secret: the tenant's administrator
//! registers an app, its service principal and a federated credential trusting hypersaga's
//! issuer, and grants the principal a role on the subscription; hypersaga then signs a client
//! assertion (`iss` its issuer, `sub` `hypersaga:tenant:acme`, `aud`
//! `api://AzureADTokenExchange`), exchanges it at the tenant's token endpoint, and calls ARM
//! with what the role allows, and nothing more.
//!
//! Entra's refusals are checked as `workload_identity` checks a managed identity's, codes and
//! wording from `src/entra/error.rs`.

use std::sync::Arc;
use std::time::Duration;

use hypersaga_emulator_arm::LatencyModel;
use hypersaga_oidc::SigningKey;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_registrations::*;
use crate::identity_rbac::{CONTRIBUTOR, READER, assert_forbidden, grant};
use crate::issuer::*;
use crate::support::*;
use crate::workload_identity::assert_refused;

const ARM_SCOPE: &str = "https://management.azure.com/.default";
const AUTHZ: &str = "2022-04-01";
const RBAC_ADMINISTRATOR: &str = "f58310d9-a9f6-439a-9e8d-f62e7b41a168";
const USER_ACCESS_ADMINISTRATOR: &str = "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9";
const OWNER: &str = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";

/// The app an administrator made for hypersaga: its ids and its principal's object id.
struct Onboarded {
    app: App,
    principal: String,
}

/// The administrator's session: app, principal, a credential trusting `issuer` for ACME.
async fn onboard(graph: &Graph<'_>, issuer: &str) -> Onboarded {
    let app = graph.register("hypersaga").await;
    let principal = graph.service_principal(&app).await;
    let r = graph.trust(&app, "acme", issuer, ACME).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    Onboarded { app, principal }
}

/// What hypersaga signs: ten minutes, its issuer, the tenant's subject, Entra's audience.
fn claims(issuer: &str, subject: &str) -> Value {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    json!({
        "iss": issuer,
        "sub": subject,
        "aud": TOKEN_EXCHANGE,
        "iat": now,
        "nbf": now,
        "exp": now + 600,
        "jti": uuid::Uuid::new_v4().to_string(),
    })
}

fn assertion(key: &SigningKey, issuer: &str, subject: &str) -> String {
    mint(key, &key.kid(), &claims(issuer, subject))
}

/// The token request `ClientAssertionCredential` sends, for `scope`, in `tenant`.
async fn exchange_in(
    emu: &TestEmu,
    tenant: &str,
    client_id: &str,
    assertion: &str,
    scope: &str,
) -> Result<String, (StatusCode, Value)> {
    let resp = emu
        .http
        .post(format!("{}/{tenant}/oauth2/v2.0/token", emu.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "client_credentials")
                .append_pair("client_id", client_id)
                .append_pair("client_assertion_type", JWT_BEARER)
                .append_pair("client_assertion", assertion)
                .append_pair("scope", scope)
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

async fn arm_token(
    emu: &TestEmu,
    client_id: &str,
    assertion: &str,
) -> Result<String, (StatusCode, Value)> {
    exchange_in(emu, TENANT, client_id, assertion, ARM_SCOPE).await
}

fn sub_scope() -> String {
    format!("/subscriptions/{SUB}")
}

/// hypersaga's assertion source: a fresh JWT on every call, as a signer holding the key would.
#[derive(Debug)]
struct Signer {
    key: Arc<SigningKey>,
    issuer: String,
    subject: String,
}

#[async_trait::async_trait]
impl azure_identity::ClientAssertion for Signer {
    async fn secret(
        &self,
        _: Option<azure_core::http::ClientMethodOptions<'_>>,
    ) -> azure_core::Result<String> {
        Ok(assertion(&self.key, &self.issuer, &self.subject))
    }
}

#[tokio::test]
async fn a_client_assertion_for_the_tenants_app_creates_a_resource_group_its_role_allows() {
    use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
    use azure_core::credentials::TokenCredential;
    use azure_core::http::{ClientOptions, Transport};
    use azure_identity::{ClientAssertionCredential, ClientAssertionCredentialOptions};

    let emu = spawn(config()).await;
    let key = Arc::new(signing_key());
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    // The administrator grants Contributor on the subscription to the app's principal.
    grant(&emu, &sub_scope(), CONTRIBUTOR, &onboarded.principal).await;

    // hypersaga, through Microsoft's own credential.
    let mut cloud = CustomConfiguration::default();
    cloud.authority_host = emu.base.clone();
    let credential = ClientAssertionCredential::new(
        TENANT.to_owned(),
        onboarded.app.app_id.clone(),
        Signer {
            key: key.clone(),
            issuer: issuer.url.clone(),
            subject: ACME.to_owned(),
        },
        Some(ClientAssertionCredentialOptions {
            client_options: ClientOptions {
                transport: Some(Transport::new(Arc::new(client(&emu.ca_pem)))),
                cloud: Some(Arc::new(CloudConfiguration::Custom(cloud))),
                ..Default::default()
            },
        }),
    )
    .expect("credential");
    let access = credential
        .get_token(&[ARM_SCOPE], None)
        .await
        .expect("token");
    let token = access.token.secret().to_owned();
    let claims = claims_of(&token);
    assert_eq!(claims["appid"], onboarded.app.app_id);
    assert_eq!(claims["oid"], onboarded.principal);
    assert_eq!(claims["tid"], TENANT);
    assert_eq!(claims["aud"], "https://management.azure.com/");
    assert!(claims.get("roles").is_none(), "{claims}");

    // Contributor: a resource group, and what is in it.
    let rg = format!("/subscriptions/{SUB}/resourcegroups/acme-cluster");
    let r = emu
        .call_as(
            &token,
            Method::PUT,
            &format!("{rg}?api-version={RES}"),
            Some(json!({"location": "eastus"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = emu
        .call_as(
            &token,
            Method::GET,
            &format!("{rg}?api-version={RES}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    // Not what Contributor leaves out: granting roles.
    let assignment = format!(
        "{rg}/providers/Microsoft.Authorization/roleAssignments/{}",
        uuid::Uuid::new_v4()
    );
    let r = emu
        .call_as(
            &token,
            Method::PUT,
            &format!("{assignment}?api-version={AUTHZ}"),
            Some(json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{READER}"),
                "principalId": onboarded.principal,
                "principalType": "ServicePrincipal",
            }})),
        )
        .await;
    assert_forbidden(
        &r,
        &onboarded.principal,
        "Microsoft.Authorization/roleAssignments/write",
        &assignment,
    );
}

#[tokio::test]
async fn the_app_is_authorized_by_its_role_assignments_alone() {
    let emu = spawn(config()).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    let me = onboarded.principal.clone();
    let token = arm_token(
        &emu,
        &onboarded.app.app_id,
        &assertion(&key, &issuer.url, ACME),
    )
    .await
    .expect("token");
    let rg = |name: &str| format!("/subscriptions/{SUB}/resourcegroups/{name}");
    let put_rg = |name: String| {
        let token = token.clone();
        let emu = &emu;
        async move {
            emu.call_as(
                &token,
                Method::PUT,
                &format!("{name}?api-version={RES}"),
                Some(json!({"location": "eastus"})),
            )
            .await
        }
    };
    let assign = |role: &'static str| {
        let token = token.clone();
        let emu = &emu;
        let path = format!(
            "/subscriptions/{SUB}/providers/Microsoft.Authorization/roleAssignments/{}",
            uuid::Uuid::new_v4()
        );
        async move {
            let r = emu
                .call_as(
                    &token,
                    Method::PUT,
                    &format!("{path}?api-version={AUTHZ}"),
                    Some(json!({"properties": {
                        "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{role}"),
                        // The administrator's own principal, which the directory knows.
                        "principalId": object_id_of(&emu.token),
                    }})),
                )
                .await;
            (path, r)
        }
    };

    // No role: not even as the operator whose subscription it is.
    assert_forbidden(
        &put_rg(rg("first")).await,
        &me,
        "Microsoft.Resources/subscriptions/resourceGroups/write",
        &rg("first"),
    );
    // Reader reads, and writes nothing.
    emu.rg("existing").await;
    grant(&emu, &sub_scope(), READER, &me).await;
    let r = emu
        .call_as(
            &token,
            Method::GET,
            &format!("{}?api-version={RES}", rg("existing")),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(put_rg(rg("first")).await.status, StatusCode::FORBIDDEN);
    let (path, r) = assign(READER).await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Authorization/roleAssignments/write",
        &path,
    );

    // Role Based Access Control Administrator grants roles, and still creates nothing.
    grant(&emu, &sub_scope(), RBAC_ADMINISTRATOR, &me).await;
    let (_, r) = assign(READER).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(put_rg(rg("first")).await.status, StatusCode::FORBIDDEN);

    // Contributor creates.
    grant(&emu, &sub_scope(), CONTRIBUTOR, &me).await;
    assert_eq!(put_rg(rg("first")).await.status, StatusCode::CREATED);

    // The delegation roles are Azure's, readable by id.
    let defs = format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions");
    for (guid, name, action) in [
        (
            RBAC_ADMINISTRATOR,
            "Role Based Access Control Administrator",
            "Microsoft.Authorization/roleAssignments/write",
        ),
        (
            USER_ACCESS_ADMINISTRATOR,
            "User Access Administrator",
            "Microsoft.Authorization/*",
        ),
        (OWNER, "Owner", "*"),
        (CONTRIBUTOR, "Contributor", "*"),
    ] {
        let r = emu
            .call_as(
                &token,
                Method::GET,
                &format!("{defs}/{guid}?api-version={AUTHZ}"),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{guid}: {:?}", r.body);
        assert_eq!(r.body["properties"]["roleName"], name);
        let actions = &r.body["properties"]["permissions"][0]["actions"];
        assert!(
            actions
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == action)),
            "{guid}: {actions}"
        );
    }
}

#[tokio::test]
async fn assertions_for_an_app_are_refused_as_entra_refuses_them() {
    let emu = spawn(config()).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    let app_id = onboarded.app.app_id.as_str();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = claims(&issuer.url, ACME);
        change(&mut c);
        mint(&key, &key.kid(), &c)
    };
    assert!(
        arm_token(&emu, app_id, &assertion(&key, &issuer.url, ACME))
            .await
            .is_ok()
    );

    // Another tenant's subject: no credential names it.
    let other = "hypersaga:tenant:globex";
    assert_refused(
        arm_token(&emu, app_id, &assertion(&key, &issuer.url, other)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700213,
        &format!(
            "No matching federated identity record found for presented assertion subject '{other}'."
        ),
    );
    assert_refused(
        arm_token(
            &emu,
            app_id,
            &assertion(&key, &issuer.url, &ACME.to_uppercase()),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7002138,
        "The subject matches with case-insensitive comparison, but not with case-sensitive comparison.",
    );
    let slash = format!("{}/", issuer.url);
    assert_refused(
        arm_token(&emu, app_id, &with(&|c| c["iss"] = json!(slash))).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700211,
        &format!("presented assertion issuer '{slash}'."),
    );
    assert_refused(
        arm_token(
            &emu,
            app_id,
            &with(&|c| c["aud"] = json!("api://AzureADTokenExchange/")),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700212,
        "presented assertion audience 'api://AzureADTokenExchange/'.",
    );
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    assert_refused(
        arm_token(
            &emu,
            app_id,
            &with(&|c| {
                c["nbf"] = json!(now - 700);
                c["exp"] = json!(now - 100);
            }),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700024,
        "Client assertion is not within its valid time range.",
    );
    // Signed by a key the issuer does not publish.
    let stray = signing_key();
    assert_refused(
        arm_token(&emu, app_id, &assertion(&stray, &issuer.url, ACME)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000272,
        &format!(
            "The certificate with identifier {} used to sign",
            stray.kid()
        ),
    );

    // A client id the tenant has no app for.
    let stranger = uuid::Uuid::new_v4().to_string();
    assert_refused(
        arm_token(&emu, &stranger, &assertion(&key, &issuer.url, ACME)).await,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &format!(
            "Application with identifier '{stranger}' was not found in the directory '{TENANT}'."
        ),
    );
    // An app with no service principal in the tenant: no identity to give a token to.
    let bare = graph.register("no-principal").await;
    assert_eq!(
        graph.trust(&bare, "acme", &issuer.url, ACME).await.status,
        StatusCode::CREATED
    );
    assert_refused(
        arm_token(&emu, &bare.app_id, &assertion(&key, &issuer.url, ACME)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000229,
        &format!(
            "The client application {} is missing service principal in the tenant {TENANT}.",
            bare.app_id
        ),
    );
    // An app with its principal and no credential.
    let untrusting = graph.register("untrusting").await;
    graph.service_principal(&untrusting).await;
    assert_refused(
        arm_token(
            &emu,
            &untrusting.app_id,
            &assertion(&key, &issuer.url, ACME),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        70025,
        &format!(
            "The client '{}'(untrusting) has no configured federated identity credentials.",
            untrusting.app_id
        ),
    );
    // The app has no secret: any is wrong.
    let secret = token_for_scope(&emu.http, &emu.base, TENANT, app_id, "guess", ARM_SCOPE).await;
    assert_refused(
        secret,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000215,
        "Invalid client secret provided.",
    );
}

#[tokio::test]
async fn deleting_a_credential_principal_or_app_refuses_the_next_exchange() {
    let emu = spawn(config()).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    let app = &onboarded.app;
    let globex = "hypersaga:tenant:globex";
    assert_eq!(
        graph.trust(app, "globex", &issuer.url, globex).await.status,
        StatusCode::CREATED
    );
    let acme = || assertion(&key, &issuer.url, ACME);
    assert!(arm_token(&emu, &app.app_id, &acme()).await.is_ok());

    // The credential goes: the next assertion for its subject matches nothing.
    let fics = format!("applications/{}/federatedIdentityCredentials", app.id);
    let r = graph.delete(&format!("{fics}/acme")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_refused(
        arm_token(&emu, &app.app_id, &acme()).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700213,
        &format!("presented assertion subject '{ACME}'."),
    );
    // The other credential still works; with it gone too, the app trusts no one.
    let globex_assertion = || assertion(&key, &issuer.url, globex);
    assert!(
        arm_token(&emu, &app.app_id, &globex_assertion())
            .await
            .is_ok()
    );
    assert_eq!(
        graph.delete(&format!("{fics}/globex")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_refused(
        arm_token(&emu, &app.app_id, &globex_assertion()).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        70025,
        "has no configured federated identity credentials.",
    );

    // Trusted again, then its principal deleted: no identity in the tenant.
    assert_eq!(
        graph.trust(app, "acme", &issuer.url, ACME).await.status,
        StatusCode::CREATED
    );
    assert!(arm_token(&emu, &app.app_id, &acme()).await.is_ok());
    let r = graph
        .delete(&format!("servicePrincipals/{}", onboarded.principal))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_refused(
        arm_token(&emu, &app.app_id, &acme()).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000229,
        "is missing service principal in the tenant",
    );
    // The app itself deleted: the tenant has no such app.
    assert_eq!(
        graph
            .delete(&format!("applications/{}", app.id))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_refused(
        arm_token(&emu, &app.app_id, &acme()).await,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &app.app_id,
    );
}

#[tokio::test]
async fn graph_and_arm_each_refuse_the_others_tokens() {
    let emu = spawn(config()).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    grant(&emu, &sub_scope(), CONTRIBUTOR, &onboarded.principal).await;
    let groups = format!("/subscriptions/{SUB}/resourcegroups?api-version={RES}");

    // The administrator's Graph token carries its Graph permission, and Graph's audience.
    let claims = claims_of(&graph.token);
    assert_eq!(claims["aud"], "https://graph.microsoft.com");
    assert_eq!(claims["roles"], json!(["Application.ReadWrite.All"]));

    // ARM refuses a Graph token.
    let r = emu.call_as(&graph.token, Method::GET, &groups, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);
    assert_eq!(r.code(), "InvalidAuthenticationTokenAudience");
    assert!(
        r.message()
            .contains("wrong audience or resource 'https://graph.microsoft.com'"),
        "{}",
        r.message()
    );
    // Graph refuses an ARM token, even the administrator's.
    let with_arm = Graph::with_token(&emu, &emu.token);
    assert_graph_error(
        &with_arm.get("applications").await,
        StatusCode::UNAUTHORIZED,
        "InvalidAuthenticationToken",
        "Access token validation failure. Invalid audience.",
    );
    let r = with_arm.get("applications").await;
    assert!(
        r.header("www-authenticate")
            .is_some_and(|h| h.contains("00000003-0000-0000-c000-000000000000")),
        "{:?}",
        r.headers
    );
    // No token, or not one of Entra's.
    let r = emu
        .http
        .get(format!("{}/v1.0/applications", emu.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["message"], "Access token is empty.");
    assert_graph_error(
        &Graph::with_token(&emu, "not.a.token")
            .get("applications")
            .await,
        StatusCode::UNAUTHORIZED,
        "InvalidAuthenticationToken",
        "Access token validation failure.",
    );

    // The app's own assertion gets a Graph token, with no Graph permission: Graph refuses it.
    let app_graph = exchange_in(
        &emu,
        TENANT,
        &onboarded.app.app_id,
        &assertion(&key, &issuer.url, ACME),
        GRAPH_SCOPE,
    )
    .await
    .expect("graph token");
    assert!(claims_of(&app_graph).get("roles").is_none());
    assert_graph_error(
        &Graph::with_token(&emu, &app_graph)
            .get("applications")
            .await,
        StatusCode::FORBIDDEN,
        "Authorization_RequestDenied",
        "Insufficient privileges to complete the operation.",
    );
    // …and ARM refuses it too, while the app's ARM token works.
    let r = emu.call_as(&app_graph, Method::GET, &groups, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);
    let app_arm = arm_token(
        &emu,
        &onboarded.app.app_id,
        &assertion(&key, &issuer.url, ACME),
    )
    .await
    .expect("arm token");
    let r = emu.call_as(&app_arm, Method::GET, &groups, None).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
}

#[tokio::test]
async fn a_second_directory_can_neither_use_nor_authorize_the_firsts_app() {
    let emu = spawn(two_tenants()).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    grant(&emu, &sub_scope(), CONTRIBUTOR, &onboarded.principal).await;
    let acme = || assertion(&key, &issuer.url, ACME);

    // The other tenant's token endpoint has no such app.
    assert_refused(
        exchange_in(
            &emu,
            OTHER_TENANT,
            &onboarded.app.app_id,
            &acme(),
            ARM_SCOPE,
        )
        .await,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &format!(
            "Application with identifier '{}' was not found in the directory '{OTHER_TENANT}'.",
            onboarded.app.app_id
        ),
    );
    // Its ARM does not find the principal for a role assignment, typed or not.
    let other_admin = token_for_scope(
        &emu.http,
        &emu.base,
        OTHER_TENANT,
        OTHER_CLIENT,
        OTHER_SECRET,
        ARM_SCOPE,
    )
    .await
    .expect("token");
    for principal_type in [None, Some("ServicePrincipal")] {
        let assignment = format!(
            "/subscriptions/{OTHER_SUB}/providers/Microsoft.Authorization/roleAssignments/{}",
            uuid::Uuid::new_v4()
        );
        let mut props = json!({
            "roleDefinitionId": format!("/subscriptions/{OTHER_SUB}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}"),
            "principalId": onboarded.principal,
        });
        if let Some(t) = principal_type {
            props["principalType"] = json!(t);
        }
        let r = emu
            .call_as(
                &other_admin,
                Method::PUT,
                &format!("{assignment}?api-version={AUTHZ}"),
                Some(json!({ "properties": props })),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
        assert_eq!(r.code(), "PrincipalNotFound");
        assert!(r.message().contains(OTHER_TENANT), "{}", r.message());
    }

    // A token of the first tenant is refused on the second's subscription before any role
    // assignment is read.
    let token = arm_token(&emu, &onboarded.app.app_id, &acme())
        .await
        .expect("token");
    let r = emu
        .call_as(
            &token,
            Method::PUT,
            &format!("/subscriptions/{OTHER_SUB}/resourcegroups/intruder?api-version={RES}"),
            Some(json!({"location": "eastus"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);
    assert_eq!(r.code(), "InvalidAuthenticationTokenTenant");
    assert!(
        r.message().starts_with(&format!(
            "The access token is from the wrong issuer 'https://sts.windows.net/{TENANT}/'. It \
             must match the tenant 'https://sts.windows.net/{OTHER_TENANT}/' associated with \
             this subscription."
        )),
        "{}",
        r.message()
    );
    // At home it works.
    let r = emu
        .call_as(
            &token,
            Method::PUT,
            &format!("/subscriptions/{SUB}/resourcegroups/home?api-version={RES}"),
            Some(json!({"location": "eastus"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn new_principals_and_credentials_are_usable_once_entra_has_replicated_them() {
    // 5 s of replication scaled by 0.2: one second, against ~0.1-0.3 s per write.
    let mut cfg = config();
    cfg.latency = LatencyModel::Scaled(0.2);
    cfg.principal_replication_delay = Duration::from_secs(5);
    let replicated = Duration::from_millis(1100);
    let emu = spawn(cfg).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let acme = || assertion(&key, &issuer.url, ACME);

    let app = graph.register("hypersaga").await;
    // Entra does not know the app yet.
    assert_refused(
        arm_token(&emu, &app.app_id, &acme()).await,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700016,
        &app.app_id,
    );
    tokio::time::sleep(replicated).await;

    let principal = graph.service_principal(&app).await;
    let r = graph.trust(&app, "acme", &issuer.url, ACME).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // The principal has not replicated: neither the token endpoint nor ARM's lookup sees it.
    assert_refused(
        arm_token(&emu, &app.app_id, &acme()).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7000229,
        "is missing service principal in the tenant",
    );
    let path = format!(
        "{}/providers/Microsoft.Authorization/roleAssignments/{}",
        sub_scope(),
        uuid::Uuid::new_v4()
    );
    let body = |with_type: bool| {
        let mut props = json!({
            "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}"),
            "principalId": principal,
        });
        if with_type {
            props["principalType"] = json!("ServicePrincipal");
        }
        json!({"properties": props})
    };
    let r = emu.put(&path, AUTHZ, body(false)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), "PrincipalNotFound");
    // `principalType` skips the lookup, as deployments do.
    let r = emu.put(&path, AUTHZ, body(true)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);

    tokio::time::sleep(replicated).await;
    let token = arm_token(&emu, &app.app_id, &acme()).await.expect("token");
    assert_eq!(claims_of(&token)["oid"], principal);

    // A second credential, matched before it has replicated: the generic mismatch.
    let globex = "hypersaga:tenant:globex";
    assert_eq!(
        graph
            .trust(&app, "globex", &issuer.url, globex)
            .await
            .status,
        StatusCode::CREATED
    );
    assert_refused(
        arm_token(&emu, &app.app_id, &assertion(&key, &issuer.url, globex)).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        70021,
        &format!("Assertion Subject: '{globex}'. Assertion Audience: '{TOKEN_EXCHANGE}'."),
    );
    tokio::time::sleep(replicated).await;
    assert!(
        arm_token(&emu, &app.app_id, &assertion(&key, &issuer.url, globex))
            .await
            .is_ok()
    );
}

/// `delegate-role-assignments-examples.md`'s "constrain roles" condition: Reader or
/// Contributor, to service principals, and delete only those.
fn constrain_roles_condition() -> String {
    format!(
        "((!(ActionMatches{{'Microsoft.Authorization/roleAssignments/write'}})) OR \
         (@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] \
         ForAnyOfAnyValues:GuidEquals {{{READER}, {CONTRIBUTOR}}} AND \
         @Request[Microsoft.Authorization/roleAssignments:PrincipalType] \
         ForAnyOfAnyValues:StringEqualsIgnoreCase {{'ServicePrincipal'}})) AND \
         ((!(ActionMatches{{'Microsoft.Authorization/roleAssignments/delete'}})) OR \
         (@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] \
         ForAnyOfAnyValues:GuidEquals {{{READER}, {CONTRIBUTOR}}}))"
    )
}

#[tokio::test]
async fn a_constrained_rbac_administrator_assigns_and_removes_only_what_its_condition_allows() {
    let emu = spawn(config()).await;
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let graph = Graph::admin(&emu).await;
    let onboarded = onboard(&graph, &issuer.url).await;
    // A workload whose principal hypersaga will grant roles to.
    let workload = graph.register("workload").await;
    let workload_principal = graph.service_principal(&workload).await;

    // The administrator delegates: RBAC Administrator, constrained.
    let delegation = format!(
        "{}/providers/Microsoft.Authorization/roleAssignments/{}",
        sub_scope(),
        uuid::Uuid::new_v4()
    );
    let r = emu
        .put(
            &delegation,
            AUTHZ,
            json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{RBAC_ADMINISTRATOR}"),
                "principalId": onboarded.principal,
                "principalType": "ServicePrincipal",
                "condition": constrain_roles_condition(),
                "conditionVersion": "2.0",
            }}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let token = arm_token(
        &emu,
        &onboarded.app.app_id,
        &assertion(&key, &issuer.url, ACME),
    )
    .await
    .expect("token");
    let assign = |role: &str, principal_type: Option<&str>| {
        let mut props = json!({
            "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{role}"),
            "principalId": workload_principal,
        });
        if let Some(t) = principal_type {
            props["principalType"] = json!(t);
        }
        let path = format!(
            "{}/providers/Microsoft.Authorization/roleAssignments/{}",
            sub_scope(),
            uuid::Uuid::new_v4()
        );
        let token = token.clone();
        let emu = &emu;
        async move {
            let r = emu
                .call_as(
                    &token,
                    Method::PUT,
                    &format!("{path}?api-version={AUTHZ}"),
                    Some(json!({ "properties": props })),
                )
                .await;
            (path, r)
        }
    };
    let write = "Microsoft.Authorization/roleAssignments/write";

    // Within the condition.
    let (granted, r) = assign(CONTRIBUTOR, Some("ServicePrincipal")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A role the condition does not list; a principal type it does not; none at all.
    let (path, r) = assign(OWNER, Some("ServicePrincipal")).await;
    assert_forbidden(&r, &onboarded.principal, write, &path);
    let (path, r) = assign(READER, Some("User")).await;
    assert_forbidden(&r, &onboarded.principal, write, &path);
    let (path, r) = assign(READER, None).await;
    assert_forbidden(&r, &onboarded.principal, write, &path);

    // Deleting: an assignment of a listed role, yes; the administrator's Owner grant, no.
    let owner = grant(&emu, &sub_scope(), OWNER, &workload_principal).await;
    let r = emu
        .call_as(
            &token,
            Method::DELETE,
            &format!("{owner}?api-version={AUTHZ}"),
            None,
        )
        .await;
    assert_forbidden(
        &r,
        &onboarded.principal,
        "Microsoft.Authorization/roleAssignments/delete",
        &owner,
    );
    let r = emu
        .call_as(
            &token,
            Method::DELETE,
            &format!("{granted}?api-version={AUTHZ}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // The condition constrains delegation only: reads are the role's.
    let r = emu
        .call_as(
            &token,
            Method::GET,
            &format!("/subscriptions/{SUB}/resourcegroups?api-version={RES}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
}
