//! Tenants as live data: an admin onboards, suspends, resumes and removes a tenant through the
//! admin API while every process keeps running, and the tenant's API token and audit
//! credentials follow within seconds.

use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_api::v1::admin_service_client::AdminServiceClient;
use hypersaga_bus::{Access, Role};
use hypersaga_model::TenantId;
use tonic::service::interceptor::InterceptedService;

use hypersaga::endpoints::DevTenant;

use crate::support::*;

/// `authorization: Bearer <token>` on every call.
#[derive(Clone)]
struct Bearer(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

type Admin = AdminServiceClient<InterceptedService<tonic::transport::Channel, Bearer>>;

async fn admin_as(system: &System, token: &str) -> Admin {
    let value = format!("Bearer {token}").parse().expect("metadata");
    AdminServiceClient::with_interceptor(system.channel().await, Bearer(value))
}

/// The admin API as the platform's admin (the token `hypersaga dev` wrote).
async fn admin(system: &System) -> Admin {
    let token = system
        .endpoints
        .admin_token
        .clone()
        .expect("the endpoints file names the admin token");
    admin_as(system, &token).await
}

/// Polls `check` until it holds, for at most `within`; panics naming `what` otherwise.
async fn within<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What listing clusters with `token` answers now.
async fn list_with(system: &System, token: &str) -> Result<usize, tonic::Status> {
    let mut client = hypersaga::client::connect(
        &system.endpoints.grpc,
        token,
        Some(&system.endpoints.ca_bundle),
    )
    .await
    .expect("connect");
    client
        .list_clusters(pb::ListClustersRequest::default())
        .await
        .map(|r| r.into_inner().clusters.len())
}

/// A connection to the bus as the tenant's audit reader, with its password.
async fn audit_reader(system: &System, tenant: &TenantId) -> Result<async_nats::Client, String> {
    let e = &system.endpoints;
    let access = Access::for_role(
        e.nats_credentials_dir.as_deref(),
        &Role::Audit(Some(tenant.clone())),
        Some(&e.ca_bundle),
    )
    .map_err(|e| e.to_string())?;
    let mut options = async_nats::ConnectOptions::new()
        .user_and_password(
            Role::Audit(Some(tenant.clone())).name(),
            access.password.clone().unwrap_or_default(),
        )
        .add_root_certificates(e.ca_bundle.clone())
        .require_tls(true)
        .custom_inbox_prefix(Role::Audit(Some(tenant.clone())).inbox_prefix())
        .connection_timeout(Duration::from_secs(3));
    options = options.max_reconnects(None);
    options
        .connect(&e.nats_url)
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_onboarded_live_is_served_and_cut_off_within_seconds_when_suspended_or_removed() {
    let system = System::start().await;
    let mut admin = admin(&system).await;
    let id = TenantId::new("initech").unwrap();

    // Onboarding: no process restarts; the answer carries the credentials once, and what the
    // tenant must create in its directory.
    let added = admin
        .add_tenant(pb::AddTenantRequest {
            id: id.to_string(),
            azure: Some(pb::TenantAzure {
                tenant_id: uuid::Uuid::new_v4().to_string(),
                subscription_id: uuid::Uuid::new_v4().to_string(),
                client_id: uuid::Uuid::new_v4().to_string(),
            }),
        })
        .await
        .expect("add tenant")
        .into_inner();
    assert!(
        added.api_token.starts_with("hs_initech_"),
        "{}",
        added.api_token
    );
    let onboarding = added.onboarding.expect("onboarding");
    assert_eq!(onboarding.subject, "hypersaga:tenant:initech");
    assert!(
        onboarding.issuer.starts_with("http"),
        "{}",
        onboarding.issuer
    );
    let again = admin
        .add_tenant(pb::AddTenantRequest {
            id: id.to_string(),
            azure: added.tenant.as_ref().and_then(|t| t.azure.clone()),
        })
        .await
        .expect_err("the id is taken");
    assert_eq!(again.code(), tonic::Code::AlreadyExists);
    let token = added.api_token.clone();
    within(
        Duration::from_secs(10),
        "the new tenant's token is served",
        || async { matches!(list_with(&system, &token).await, Ok(0)) },
    )
    .await;

    // Its audit reader: the password it was given, kept where `audit tail` looks for it.
    let dir = system
        .endpoints
        .nats_credentials_dir
        .clone()
        .expect("closed bus");
    std::fs::write(dir.join("audit-initech.secret"), &added.audit_password).expect("write");
    let events = system.audit_events("initech", "_tenant").await;
    let added_event = events.first().expect("the onboarding is audited");
    assert_eq!(added_event["type"], "tenant.added");
    assert_eq!(added_event["actor"], "admin:dev");
    let reader = audit_reader(&system, &id)
        .await
        .expect("the reader connects");
    let js = async_nats::jetstream::new(reader.clone());
    let foreign = js
        .get_stream("HCP_AUDIT")
        .await
        .expect("audit stream")
        .create_consumer(async_nats::jetstream::consumer::push::OrderedConfig {
            deliver_subject: format!("{}.x", Role::Audit(Some(id.clone())).inbox_prefix()),
            filter_subject: "hcp.acme.audit.>".into(),
            ..Default::default()
        })
        .await;
    assert!(foreign.is_err(), "initech's reader opened acme's audit");

    // Suspension: calls refused naming it, the reader cut off, a new connection refused.
    admin
        .suspend_tenant(pb::SuspendTenantRequest {
            id: id.to_string(),
            reason: "unpaid invoice".into(),
        })
        .await
        .expect("suspend");
    within(Duration::from_secs(10), "the suspended tenant's calls are refused", || async {
        matches!(list_with(&system, &token).await, Err(s) if s.code() == tonic::Code::PermissionDenied && s.message().contains("unpaid invoice"))
    })
    .await;
    within(
        Duration::from_secs(10),
        "the reader's connection is closed",
        || async { reader.connection_state() != async_nats::connection::State::Connected },
    )
    .await;
    assert!(
        audit_reader(&system, &id).await.is_err(),
        "a suspended tenant's reader got in"
    );
    let shown = admin
        .get_tenant(pb::GetTenantRequest { id: id.to_string() })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(shown.state, pb::tenant::State::Suspended as i32);
    assert_eq!(shown.suspended_by, "admin:dev");

    // Resumed, then removed: the token works again, then not at all.
    admin
        .resume_tenant(pb::ResumeTenantRequest { id: id.to_string() })
        .await
        .expect("resume");
    within(
        Duration::from_secs(10),
        "the resumed tenant is served",
        || async { matches!(list_with(&system, &token).await, Ok(0)) },
    )
    .await;
    admin
        .remove_tenant(pb::RemoveTenantRequest { id: id.to_string() })
        .await
        .expect("remove");
    within(Duration::from_secs(10), "the removed tenant's token is refused", || async {
        matches!(list_with(&system, &token).await, Err(s) if s.code() == tonic::Code::Unauthenticated)
    })
    .await;
    assert!(
        audit_reader(&system, &id).await.is_err(),
        "a removed tenant's reader got in"
    );
    let listed = admin
        .list_tenants(pb::ListTenantsRequest {})
        .await
        .expect("list")
        .into_inner();
    assert!(listed.tenants.iter().all(|t| t.id != "initech"));
    assert!(
        listed
            .tenants
            .iter()
            .any(|t| t.id == "acme" && t.source == "configuration")
    );

    // A tenant's token is no admin's.
    let mut as_tenant = admin_as(&system, &system.token("acme")).await;
    let refused = as_tenant
        .list_tenants(pb::ListTenantsRequest {})
        .await
        .expect_err("a tenant's token");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
}

/// A new Azure customer: its own Entra directory, subscription and administrator.
fn new_customer() -> hypersaga_emulator_arm::Principal {
    hypersaga_emulator_arm::Principal {
        azure_tenant_id: uuid::Uuid::new_v4().to_string(),
        client_id: uuid::Uuid::new_v4().to_string(),
        client_secret: format!("secret-{}", uuid::Uuid::new_v4().simple()),
        subscription_ids: vec![uuid::Uuid::new_v4().to_string()],
    }
}

/// The customer's administrator, in the portal.
fn tenant_admin(
    system: &System,
    customer: &hypersaga_emulator_arm::Principal,
) -> hypersaga_emulator_arm::TenantAdmin {
    let ca = std::fs::read_to_string(&system.endpoints.ca_bundle).expect("ca");
    hypersaga_emulator_arm::TenantAdmin::new(
        &system.endpoints.arm_url,
        Some(&ca),
        &customer.azure_tenant_id,
        &customer.client_id,
        &customer.client_secret,
    )
    .expect("tenant admin")
}

/// Every file of the running system's state but the user's own endpoints file, as bytes.
fn state_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.file_name().is_some_and(|n| n != "endpoints.json")
                && let Ok(bytes) = std::fs::read(&path)
            {
                out.push((path, bytes));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_onboarded_live_builds_clusters_through_federation_and_holds_no_secret() {
    let system = System::start().await;
    let mut admin = admin(&system).await;
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(system.state_dir().join("config.json")).expect("config"),
    )
    .expect("json");
    let issuer = config["federation"]["issuer"]
        .as_str()
        .expect("issuer")
        .to_owned();

    // A customer with its own directory and subscription registers hypersaga's application,
    // then the platform's admin onboards it: nothing restarts.
    let customer = new_customer();
    system
        .arm_admin()
        .add_directory(&customer)
        .await
        .expect("a new directory");
    let subscription = customer.subscription_ids[0].clone();
    let portal = tenant_admin(&system, &customer);
    let app = portal
        .onboard(
            "hypersaga",
            &issuer,
            "hypersaga:tenant:initech",
            "api://AzureADTokenExchange",
            &subscription,
            &[
                hypersaga_emulator_arm::tenant_admin::CONTRIBUTOR,
                hypersaga_emulator_arm::tenant_admin::RBAC_ADMINISTRATOR,
            ],
        )
        .await
        .expect("the customer registers hypersaga's application");
    let added = admin
        .add_tenant(pb::AddTenantRequest {
            id: "initech".into(),
            azure: Some(pb::TenantAzure {
                tenant_id: customer.azure_tenant_id.clone(),
                subscription_id: subscription.clone(),
                client_id: app.app_id.clone(),
            }),
        })
        .await
        .expect("add")
        .into_inner();
    let onboarding = added.onboarding.expect("onboarding");
    assert_eq!(
        onboarding.issuer, issuer,
        "the instructions name the issuer the services sign as"
    );
    let user = DevTenant {
        name: "initech".into(),
        token: added.api_token.clone(),
        hypersaga_client_id: app.app_id.clone(),
        azure_tenant_id: customer.azure_tenant_id.clone(),
        subscription_id: subscription.clone(),
        client_id: customer.client_id.clone(),
        client_secret: customer.client_secret.clone(),
    };
    system.make_public_zone(&user).await;

    // Before its first call, the customer deletes the federated credential: the create fails at
    // its first Azure step with Entra's code and what to fix, having made nothing.
    portal
        .delete_federated_credentials(&app.app_id)
        .await
        .expect("delete the credential");
    let mut client = hypersaga::client::connect(
        &system.endpoints.grpc,
        &added.api_token,
        Some(&system.endpoints.ca_bundle),
    )
    .await
    .expect("connect");
    let op = client
        .create_cluster(create_request("spark", 0))
        .await
        .expect("create")
        .into_inner();
    let deadline = Instant::now() + Duration::from_secs(60);
    let stuck = loop {
        let now = client
            .get_operation(pb::GetOperationRequest { id: op.id.clone() })
            .await
            .expect("get")
            .into_inner();
        let failed_first = now
            .steps
            .iter()
            .find(|s| s.id == "dns.public-zone")
            .and_then(|s| s.last_error.as_ref())
            .is_some_and(|e| e.code.starts_with("AADSTS"));
        let stopped = now.state == pb::OperationState::Paused as i32
            || now.state == pb::OperationState::Failed as i32;
        if failed_first && stopped {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "the first Azure step did not stop on Entra's refusal: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let error = stuck.steps[0].last_error.clone().expect("error");
    assert_eq!(error.code, "AADSTS70025", "{error:?}");
    assert!(
        error.message.contains("federated identity credential"),
        "{}",
        error.message
    );
    assert_eq!(stuck.state, pb::OperationState::Failed as i32, "{stuck:?}");
    assert!(
        stuck
            .steps
            .iter()
            .filter(|s| s.id != "dns.public-zone")
            .all(|s| s.attempts == 0),
        "nothing else ran: {stuck:?}"
    );

    // Fixed in the portal, the next create is built, by client assertion.
    portal
        .onboard(
            "hypersaga",
            &issuer,
            "hypersaga:tenant:initech",
            "api://AzureADTokenExchange",
            &subscription,
            &[
                hypersaga_emulator_arm::tenant_admin::CONTRIBUTOR,
                hypersaga_emulator_arm::tenant_admin::RBAC_ADMINISTRATOR,
            ],
        )
        .await
        .expect("the credential again");
    client
        .create_cluster(create_request("ember", 0))
        .await
        .expect("create again");
    let ready = system.watch_to_end_with(&added.api_token, "ember").await;
    assert_eq!(phase(&ready), "ready", "{ready:?}");

    // No secret of any tenant's anywhere in what hypersaga keeps.
    let secrets: Vec<&str> = system
        .endpoints
        .tenants
        .iter()
        .map(|t| t.client_secret.as_str())
        .chain([customer.client_secret.as_str()])
        .collect();
    for (path, bytes) in state_files(&system.state_dir()) {
        for secret in &secrets {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds a tenant's secret",
                path.display()
            );
        }
    }
    assert!(
        config["tenants"]
            .as_array()
            .expect("tenants")
            .iter()
            .all(|t| t["azure"].get("client_secret").is_none()),
        "{config}"
    );
}
