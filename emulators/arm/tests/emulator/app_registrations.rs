//! Microsoft Graph as a tenant's administrator uses it to let hypersaga in: registering an app,
//! making its service principal, and adding a federated identity credential that trusts
//! hypersaga's OIDC issuer; and Graph's refusals on the way (its validation of credentials,
//! its eventual consistency, one directory not seeing another's objects).
//!
//! The administrator is a configured principal: its client-secret token for
//! `https://graph.microsoft.com/.default` carries `Application.ReadWrite.All`. Expected codes
//! and wording are Graph's as `src/graph/error.rs` cites them.

use hypersaga_emulator_arm::{Config, LatencyModel, Principal};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::*;

pub(crate) const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";
/// The audience Entra's federated credentials expect (Graph's recommended value).
pub(crate) const TOKEN_EXCHANGE: &str = "api://AzureADTokenExchange";
/// The subject hypersaga signs for a tenant.
pub(crate) const ACME: &str = "hypersaga:tenant:acme";
/// A second directory, with its own administrator and subscription (`OTHER_SUB`).
pub(crate) const OTHER_TENANT: &str = "4a4d599f-e69d-4cd8-a9e1-9882ea340fb5";
pub(crate) const OTHER_CLIENT: &str = "0ad2e8a1-0000-4000-8000-0000000000b2";
pub(crate) const OTHER_SECRET: &str = "other-s3cret";

/// The harness's tenant plus a second one.
pub(crate) fn two_tenants() -> Config {
    let mut cfg = config();
    cfg.principals.push(Principal {
        azure_tenant_id: OTHER_TENANT.into(),
        client_id: OTHER_CLIENT.into(),
        client_secret: OTHER_SECRET.into(),
        subscription_ids: vec![OTHER_SUB.into()],
    });
    cfg
}

/// An app registration as Graph answered its creation.
#[derive(Clone, Debug)]
pub(crate) struct App {
    /// Object id.
    pub(crate) id: String,
    /// Client id.
    pub(crate) app_id: String,
}

/// One caller's Graph session, the emulator's URL standing for `https://graph.microsoft.com`.
pub(crate) struct Graph<'e> {
    emu: &'e TestEmu,
    pub(crate) token: String,
}

impl<'e> Graph<'e> {
    /// The harness tenant's administrator.
    pub(crate) async fn admin(emu: &'e TestEmu) -> Self {
        Self::admin_of(emu, TENANT, CLIENT, SECRET).await
    }

    pub(crate) async fn admin_of(
        emu: &'e TestEmu,
        tenant: &str,
        client: &str,
        secret: &str,
    ) -> Self {
        let token = token_for_scope(&emu.http, &emu.base, tenant, client, secret, GRAPH_SCOPE)
            .await
            .expect("graph token");
        Self { emu, token }
    }

    /// A session with any token (an ARM one, an app's own).
    pub(crate) fn with_token(emu: &'e TestEmu, token: &str) -> Self {
        Self {
            emu,
            token: token.to_owned(),
        }
    }

    pub(crate) async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.emu
            .call_as(&self.token, method, &format!("/v1.0/{path}"), body)
            .await
    }

    pub(crate) async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, None).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(body)).await
    }

    pub(crate) async fn delete(&self, path: &str) -> Resp {
        self.call(Method::DELETE, path, None).await
    }

    /// `POST /applications`, single-tenant, as the portal and `az ad app create` make one.
    pub(crate) async fn register(&self, name: &str) -> App {
        let r = self
            .post(
                "applications",
                json!({"displayName": name, "signInAudience": "AzureADMyOrg"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        App {
            id: r.body["id"].as_str().expect("id").to_owned(),
            app_id: r.body["appId"].as_str().expect("appId").to_owned(),
        }
    }

    /// `POST /servicePrincipals`; answers the principal's object id.
    pub(crate) async fn service_principal(&self, app: &App) -> String {
        let r = self
            .post("servicePrincipals", json!({"appId": app.app_id}))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        r.body["id"].as_str().expect("id").to_owned()
    }

    /// `POST /applications/{id}/federatedIdentityCredentials` trusting `issuer` for `subject`.
    pub(crate) async fn trust(&self, app: &App, name: &str, issuer: &str, subject: &str) -> Resp {
        self.post(
            &format!("applications/{}/federatedIdentityCredentials", app.id),
            json!({
                "name": name,
                "issuer": issuer,
                "subject": subject,
                "description": "hypersaga provisions clusters in this subscription",
                "audiences": [TOKEN_EXCHANGE],
            }),
        )
        .await
    }
}

/// Graph's refusal: status, code, and a part of the message.
pub(crate) fn assert_graph_error(r: &Resp, status: StatusCode, code: &str, says: &str) {
    assert_eq!(r.status, status, "{:?}", r.body);
    assert_eq!(r.code(), code, "{:?}", r.body);
    assert!(
        r.message().contains(says),
        "{}\n  lacks: {says}",
        r.message()
    );
    let inner = &r.body["error"]["innerError"];
    assert!(inner["request-id"].is_string(), "{:?}", r.body);
    assert_eq!(
        inner["request-id"].as_str(),
        r.header("request-id"),
        "innerError names the answer's request-id"
    );
}

#[tokio::test]
async fn a_tenant_admin_registers_an_app_its_principal_and_a_federated_credential() {
    let emu = spawn(config()).await;
    let graph = Graph::admin(&emu).await;
    let issuer = "https://hypersagaoidc.blob.core.windows.net/oidc";

    let r = graph
        .post(
            "applications",
            json!({"displayName": "hypersaga", "signInAudience": "AzureADMyOrg"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert!(
        r.body["@odata.context"]
            .as_str()
            .is_some_and(|c| c.ends_with("/v1.0/$metadata#applications/$entity")),
        "{:?}",
        r.body
    );
    assert_eq!(r.body["displayName"], "hypersaga");
    assert_eq!(r.body["signInAudience"], "AzureADMyOrg");
    assert_eq!(r.body["passwordCredentials"], json!([]));
    let app = App {
        id: r.body["id"].as_str().expect("id").to_owned(),
        app_id: r.body["appId"].as_str().expect("appId").to_owned(),
    };
    assert_ne!(app.id, app.app_id);

    // By object id, by client id, and by filter.
    for path in [
        format!("applications/{}", app.id),
        format!("applications(appId='{}')", app.app_id),
        format!("applications(appId=%27{}%27)", app.app_id),
    ] {
        let r = graph.get(&path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {:?}", r.body);
        assert_eq!(r.body["id"], app.id);
        assert_eq!(r.body["appId"], app.app_id);
    }
    let found = graph
        .get(&format!("applications?$filter=appId eq '{}'", app.app_id))
        .await;
    assert_eq!(found.status, StatusCode::OK, "{:?}", found.body);
    assert_eq!(found.body["value"].as_array().map(Vec::len), Some(1));

    // The service principal: the object role assignments name.
    let r = graph
        .post("servicePrincipals", json!({"appId": app.app_id}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let principal = r.body["id"].as_str().expect("id").to_owned();
    assert_eq!(r.body["appId"], app.app_id);
    assert_eq!(r.body["displayName"], "hypersaga");
    assert_eq!(r.body["servicePrincipalType"], "Application");
    assert_eq!(r.body["appOwnerOrganizationId"], TENANT);
    let by_app = graph
        .get(&format!("servicePrincipals(appId='{}')", app.app_id))
        .await;
    assert_eq!(by_app.body["id"], principal);
    let filtered = graph
        .get(&format!(
            "servicePrincipals?$filter=appId%20eq%20%27{}%27",
            app.app_id
        ))
        .await;
    assert_eq!(filtered.body["value"][0]["id"], principal);
    assert_eq!(
        graph
            .get(&format!("servicePrincipals/{principal}"))
            .await
            .body["appId"],
        app.app_id
    );

    // The federated credential, readable by id and by name.
    let r = graph.trust(&app, "acme", issuer, ACME).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(
        r.body["@odata.context"]
            .as_str()
            .map(|c| c.rsplit('#').next()),
        Some(Some(
            format!(
                "applications('{}')/federatedIdentityCredentials/$entity",
                app.id
            )
            .as_str()
        ))
    );
    assert_eq!(r.body["issuer"], issuer);
    assert_eq!(r.body["subject"], ACME);
    assert_eq!(r.body["audiences"], json!([TOKEN_EXCHANGE]));
    let fic = r.body["id"].as_str().expect("id").to_owned();
    let fics = format!("applications/{}/federatedIdentityCredentials", app.id);
    let listed = graph.get(&fics).await;
    assert_eq!(listed.body["value"][0]["id"], fic);
    for path in [
        format!("{fics}/{fic}"),
        format!("{fics}/acme"),
        format!("{fics}(name='acme')"),
        format!(
            "applications(appId='{}')/federatedIdentityCredentials/acme",
            app.app_id
        ),
    ] {
        let r = graph.get(&path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {:?}", r.body);
        assert_eq!(r.body["id"], fic);
    }

    // The admin API shows the whole registration.
    let registered = emu.admin.applications(Some(TENANT)).await.expect("admin");
    assert_eq!(registered.len(), 1);
    let reg = &registered[0];
    assert_eq!(reg.application.app_id, app.app_id);
    assert_eq!(reg.application.federated_identity_credentials.len(), 1);
    assert_eq!(
        reg.application.federated_identity_credentials[0].subject,
        ACME
    );
    assert_eq!(
        reg.service_principal.as_ref().map(|p| p.id.as_str()),
        Some(principal.as_str())
    );
    assert!(
        emu.admin
            .applications(Some(OTHER_TENANT))
            .await
            .expect("admin")
            .is_empty()
    );

    // Deleting the app takes its principal and credentials with it.
    let r = graph.delete(&format!("applications/{}", app.id)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_graph_error(
        &graph.get(&format!("applications/{}", app.id)).await,
        StatusCode::NOT_FOUND,
        "Request_ResourceNotFound",
        &format!("Resource '{}' does not exist", app.id),
    );
    assert_graph_error(
        &graph.get(&format!("servicePrincipals/{principal}")).await,
        StatusCode::NOT_FOUND,
        "Request_ResourceNotFound",
        &principal,
    );
    assert!(
        emu.admin
            .applications(None)
            .await
            .expect("admin")
            .is_empty()
    );
}

#[tokio::test]
async fn graph_refuses_credentials_and_principals_as_graph_does() {
    let emu = spawn(config()).await;
    let graph = Graph::admin(&emu).await;
    let issuer = "https://hypersagaoidc.blob.core.windows.net/oidc";
    let app = graph.register("hypersaga").await;
    let fics = format!("applications/{}/federatedIdentityCredentials", app.id);
    assert_eq!(
        graph.trust(&app, "acme", issuer, ACME).await.status,
        StatusCode::CREATED
    );

    // Names are unique per app, and so is issuer + subject (Azure/azure-dev#1482,
    // Azure/azure-workload-identity#434).
    assert_graph_error(
        &graph
            .trust(&app, "acme", issuer, "hypersaga:tenant:other")
            .await,
        StatusCode::CONFLICT,
        "Request_MultipleObjectsWithSameKeyValue",
        "FederatedIdentityCredential with name acme already exists.",
    );
    assert_graph_error(
        &graph.trust(&app, "acme-again", issuer, ACME).await,
        StatusCode::BAD_REQUEST,
        "InvalidFederatedIdentityCredentialValue",
        &format!(
            "The combination of issuer and subject must be unique for the application. Issuer \
             {issuer} and Subject: {ACME} already exist."
        ),
    );
    // One audience, exactly; a URL-friendly name; nothing the emulator does not model.
    for (body, property) in [
        (
            json!({"name": "two", "issuer": issuer, "subject": "s2",
                   "audiences": [TOKEN_EXCHANGE, "api://other"]}),
            "audiences",
        ),
        (
            json!({"name": "none", "issuer": issuer, "subject": "s3", "audiences": []}),
            "audiences",
        ),
        (
            json!({"name": "has space", "issuer": issuer, "subject": "s4",
                   "audiences": [TOKEN_EXCHANGE]}),
            "name",
        ),
        (
            json!({"name": "no-issuer", "subject": "s5", "audiences": [TOKEN_EXCHANGE]}),
            "issuer",
        ),
    ] {
        assert_graph_error(
            &graph.post(&fics, body).await,
            StatusCode::BAD_REQUEST,
            "Request_BadRequest",
            &format!(
                "Invalid value specified for property '{property}' of resource \
                 'FederatedIdentityCredential'."
            ),
        );
    }
    assert_graph_error(
        &graph
            .post(
                &fics,
                json!({"name": "flex", "issuer": issuer, "audiences": [TOKEN_EXCHANGE],
                       "claimsMatchingExpression": {"value": "claims['sub'] matches 'x*'"}}),
            )
            .await,
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        "Property 'claimsMatchingExpression' does not exist",
    );

    // Twenty credentials at most.
    for i in 2..=20 {
        let r = graph
            .trust(&app, &format!("tenant-{i}"), issuer, &format!("s-{i}"))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{i}: {:?}", r.body);
    }
    assert_graph_error(
        &graph.trust(&app, "tenant-21", issuer, "s-21").await,
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        "at most 20 federated identity credentials",
    );
    assert_eq!(
        graph.get(&fics).await.body["value"]
            .as_array()
            .map(Vec::len),
        Some(20)
    );
    let named = graph
        .get(&format!("{fics}?$filter=name eq 'tenant-7'"))
        .await;
    assert_eq!(named.body["value"][0]["subject"], "s-7");

    // One service principal per app; none for an app the directory does not have.
    graph.service_principal(&app).await;
    assert_graph_error(
        &graph
            .post("servicePrincipals", json!({"appId": app.app_id}))
            .await,
        StatusCode::CONFLICT,
        "Request_MultipleObjectsWithSameKeyValue",
        &format!("service principal name {} is already in use", app.app_id),
    );
    let stranger = uuid::Uuid::new_v4().to_string();
    let r = graph
        .post("servicePrincipals", json!({"appId": stranger}))
        .await;
    assert_graph_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        &format!(
            "The appId '{stranger}' of the service principal does not reference a valid \
             application object."
        ),
    );
    assert_eq!(
        r.body["error"]["details"][0]["code"],
        "NoBackingApplicationObject"
    );

    // Applications need a display name; paths and filters Graph has no answer for.
    assert_graph_error(
        &graph
            .post("applications", json!({"description": "x"}))
            .await,
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        "Invalid value specified for property 'displayName' of resource 'Application'.",
    );
    assert_graph_error(
        &graph.get("applications/not-a-guid").await,
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        "Invalid object identifier 'not-a-guid'.",
    );
    assert_graph_error(
        &graph.get("users").await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Resource not found for the segment 'users'.",
    );
    assert_graph_error(
        &graph
            .get("applications?$filter=startswith(displayName,'hyper')")
            .await,
        StatusCode::BAD_REQUEST,
        "Request_UnsupportedQuery",
        "Unsupported or invalid query filter clause",
    );
    assert_graph_error(
        &graph
            .call(
                Method::PATCH,
                &format!("applications/{}", app.id),
                Some(json!({"displayName": "renamed"})),
            )
            .await,
        StatusCode::METHOD_NOT_ALLOWED,
        "Request_BadRequest",
        "not allowed",
    );
    let missing = uuid::Uuid::new_v4();
    assert_graph_error(
        &graph.delete(&format!("{fics}/{missing}")).await,
        StatusCode::NOT_FOUND,
        "Request_ResourceNotFound",
        &missing.to_string(),
    );
    let r = graph.delete(&format!("{fics}/tenant-7")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{:?}", r.body);
    assert_graph_error(
        &graph.get(&format!("{fics}/tenant-7")).await,
        StatusCode::NOT_FOUND,
        "Request_ResourceNotFound",
        "tenant-7",
    );
}

#[tokio::test]
async fn a_second_directory_sees_none_of_the_firsts_objects() {
    let emu = spawn(two_tenants()).await;
    let ours = Graph::admin(&emu).await;
    let theirs = Graph::admin_of(&emu, OTHER_TENANT, OTHER_CLIENT, OTHER_SECRET).await;
    let app = ours.register("hypersaga").await;
    let principal = ours.service_principal(&app).await;

    for path in [
        format!("applications/{}", app.id),
        format!("applications(appId='{}')", app.app_id),
        format!("applications/{}/federatedIdentityCredentials", app.id),
        format!("servicePrincipals/{principal}"),
        format!("servicePrincipals(appId='{}')", app.app_id),
    ] {
        let r = theirs.get(&path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {:?}", r.body);
        assert_eq!(r.code(), "Request_ResourceNotFound");
    }
    for path in ["applications", "servicePrincipals"] {
        let r = theirs.get(path).await;
        assert_eq!(r.body["value"], json!([]), "{path}");
    }
    assert_eq!(
        theirs
            .delete(&format!("applications/{}", app.id))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // Nor can it instantiate the app there: the app is single-tenant, its own directory's.
    let r = theirs
        .post("servicePrincipals", json!({"appId": app.app_id}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(
        r.body["error"]["details"][0]["code"],
        "NoBackingApplicationObject"
    );
    // The first directory still has it all.
    assert_eq!(
        ours.get(&format!("applications/{}", app.id)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn making_an_apps_principal_waits_until_graph_has_replicated_the_app() {
    use std::time::Duration;

    // 5 s of replication scaled by 0.2: one second.
    let mut cfg = config();
    cfg.latency = LatencyModel::Scaled(0.2);
    cfg.principal_replication_delay = Duration::from_secs(5);
    let emu = spawn(cfg).await;
    let graph = Graph::admin(&emu).await;
    let app = graph.register("hypersaga").await;

    // What `az ad sp create` retries on right after `az ad app create`.
    let r = graph
        .post("servicePrincipals", json!({"appId": app.app_id}))
        .await;
    assert_graph_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Request_BadRequest",
        "does not reference a valid application object",
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    graph.service_principal(&app).await;
}
