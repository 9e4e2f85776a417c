//! An Azure NodePool's workers, made by the simulated CAPZ in a real ARM emulator (started
//! here, in process) as the cluster's node-pool-management identity: Machines and VMs rise
//! with the replicas, go with a scale-down or the NodePool's deletion (before its finalizer
//! is released), and a missing role assignment stops them with ARM's refusal on the Machine.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::*;
use axum::Json;
use axum::routing::get;
use hypersaga_emulator_arm::admin_client::AdminClient;
use hypersaga_emulator_mgmt::{AzureEndpoints, Config};
use hypersaga_hypershift::{HostedCluster, LocalObjectReference, NodePool, WorkloadIdentity};
use hypersaga_oidc::{DISCOVERY_PATH, JWKS_PATH, SigningKey, discovery_document, jwks};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions::is_deleted};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const SUB: &str = "11111111-2222-3333-4444-555555555555";
const CLIENT: &str = "0ad2e8a1-0000-4000-8000-00000000c1e7";
const SECRET: &str = "s3cret";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
const MANAGED_RG: &str = "demo-demo-abcde";
const VNET_RG: &str = "demo-vnet-demo-abcde";

/// The ARM emulator on TLS, its admin API, and the operator's (app registration's) token.
struct Arm {
    base: String,
    ca_pem: String,
    http: reqwest::Client,
    admin: AdminClient,
    token: String,
    _served: hypersaga_devca::Loopback,
}

impl Arm {
    async fn start() -> Self {
        hypersaga_devca::install_crypto_provider();
        let emu = hypersaga_emulator_arm::Emulator::new(hypersaga_emulator_arm::Config {
            principals: vec![hypersaga_emulator_arm::Principal {
                azure_tenant_id: TENANT.into(),
                client_id: CLIENT.into(),
                client_secret: SECRET.into(),
                subscription_ids: vec![SUB.into()],
            }],
            ..Default::default()
        });
        let ca = hypersaga_devca::DevCa::generate().expect("ca");
        let cert = ca.issue_loopback_cert().expect("cert");
        let served = hypersaga_devca::serve_loopback(
            emu.router(),
            emu.admin_router(),
            &cert,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("serve the ARM emulator");
        let base = served.url.clone();
        let admin_url = format!("{}/", served.admin_url);
        let ca_pem = ca.cert_pem().to_owned();
        let http = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("ca")])
            .build()
            .expect("client");
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("client_id", CLIENT)
            .append_pair("client_secret", SECRET)
            .append_pair("scope", "https://management.azure.com/.default")
            .finish();
        let resp: Value = http
            .post(format!("{base}/{TENANT}/oauth2/v2.0/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .expect("token")
            .json()
            .await
            .expect("json");
        let token = resp["access_token"].as_str().expect("token").to_owned();
        Self {
            base,
            ca_pem,
            http,
            admin: AdminClient::new(admin_url.parse().expect("url")),
            token,
            _served: served,
        }
    }

    /// A PUT as the operator; answers the body once the operation is done (zero latency).
    async fn put(&self, path: &str, api: &str, body: Value) -> Value {
        let resp = self
            .http
            .put(format!("{}{path}?api-version={api}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .expect("put");
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "PUT {path}: {status} {body}");
        body
    }

    /// `type name` of every worker resource (VMs, NICs, disks) in the managed group.
    async fn workers(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .admin
            .resources(Some(SUB))
            .await
            .expect("resources")
            .iter()
            .filter(|r| {
                r["id"]
                    .as_str()
                    .is_some_and(|id| id.contains(&format!("/resourceGroups/{MANAGED_RG}/")))
            })
            .map(|r| {
                format!(
                    "{} {}",
                    r["type"].as_str().unwrap_or("?"),
                    r["name"].as_str().unwrap_or("?")
                )
            })
            .collect();
        names.sort();
        names
    }
}

/// A published OIDC issuer (discovery document and key set) on plain HTTP at 127.0.0.1.
async fn issuer(key: &SigningKey) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind issuer");
    let url = format!(
        "http://{}/devstoreaccount1/oidc-acme",
        listener.local_addr().expect("addr")
    );
    let discovery = discovery_document(&url);
    let keys = jwks(&[key.public_key()]);
    let router = axum::Router::new()
        .route(
            &format!("/devstoreaccount1/oidc-acme/{DISCOVERY_PATH}"),
            get(move || async move { Json(discovery) }),
        )
        .route(
            &format!("/devstoreaccount1/oidc-acme/{JWKS_PATH}"),
            get(move || async move { Json(keys) }),
        );
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    (url, stop)
}

/// What the product makes before any NodePool: the groups, the VNet, the node-pool-management
/// identity with its federated credential, and its Contributor grants on both groups.
struct Cloud {
    vnet_id: String,
    client_id: String,
    /// The two role assignments' ids, and their bodies for restoring them.
    grants: Vec<(String, Value)>,
}

async fn cloud(arm: &Arm, issuer: &str) -> Cloud {
    for rg in [MANAGED_RG, VNET_RG, "ids"] {
        arm.put(
            &format!("/subscriptions/{SUB}/resourcegroups/{rg}"),
            "2021-04-01",
            json!({"location": "eastus"}),
        )
        .await;
    }
    let vnet_id = format!(
        "/subscriptions/{SUB}/resourceGroups/{VNET_RG}/providers/Microsoft.Network/virtualNetworks/demo"
    );
    arm.put(
        &vnet_id,
        "2023-11-01",
        json!({"location": "eastus", "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24"}}],
        }}),
    )
    .await;
    let mi = format!(
        "/subscriptions/{SUB}/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/demo-node-pool-mgmt"
    );
    let identity = arm
        .put(&mi, "2024-11-30", json!({"location": "eastus"}))
        .await;
    let client_id = identity["properties"]["clientId"]
        .as_str()
        .expect("clientId")
        .to_owned();
    let principal = identity["properties"]["principalId"]
        .as_str()
        .expect("principalId")
        .to_owned();
    arm.put(
        &format!("{mi}/federatedIdentityCredentials/demo-node-pool-mgmt-fed-id"),
        "2024-11-30",
        json!({"properties": {
            "issuer": issuer,
            "subject": "system:serviceaccount:kube-system:capi-provider",
            "audiences": ["openshift"],
        }}),
    )
    .await;
    let mut grants = Vec::new();
    for rg in [MANAGED_RG, VNET_RG] {
        let id = format!(
            "/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Authorization/roleAssignments/{}",
            uuid::Uuid::new_v4()
        );
        let body = json!({"properties": {
            "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}"),
            "principalId": principal,
            "principalType": "ServicePrincipal",
        }});
        arm.put(&id, "2022-04-01", body.clone()).await;
        grants.push((id, body));
    }
    Cloud {
        vnet_id,
        client_id,
        grants,
    }
}

/// The management cluster, with CAPZ pointed at `arm`.
async fn management(arm: &Arm) -> Harness {
    Harness::start(Config {
        azure: Some(AzureEndpoints {
            arm_url: arm.base.clone(),
            entra_url: arm.base.clone(),
            ca_pem: Some(arm.ca_pem.clone()),
        }),
        ..Config::fast(TOKEN, Duration::from_millis(100))
    })
    .await
}

/// The HostedCluster of the cloud, its signing key Secret named `key_secret`.
fn demo_cluster(cloud: &Cloud, issuer: &str, key_secret: &str) -> HostedCluster {
    let mut hc = hosted_cluster("demo", "clusters");
    hc.spec.infra_id = "demo-abcde".into();
    hc.spec.issuer_url = Some(issuer.into());
    hc.spec.service_account_signing_key = Some(LocalObjectReference {
        name: key_secret.into(),
    });
    let azure = hc.spec.platform.azure.as_mut().expect("azure");
    azure.subscription_id = SUB.into();
    azure.tenant_id = TENANT.into();
    azure.resource_group = MANAGED_RG.into();
    azure.vnet_id = cloud.vnet_id.clone();
    azure.subnet_id = format!("{}/subnets/default", cloud.vnet_id);
    let ids = azure
        .azure_authentication_config
        .workload_identities
        .as_mut()
        .expect("workload identities");
    ids.node_pool_management = WorkloadIdentity {
        client_id: cloud.client_id.clone(),
    };
    hc
}

fn workers_pool(cloud: &Cloud, replicas: i32) -> NodePool {
    let mut np = node_pool("demo-workers", "clusters", "demo", replicas);
    np.spec.platform.azure.as_mut().expect("azure").subnet_id =
        format!("{}/subnets/default", cloud.vnet_id);
    np
}

async fn signing_key_secret(h: &Harness, name: &str, key: &SigningKey) {
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), "clusters");
    let mut s = Secret::default();
    s.metadata.name = Some(name.into());
    s.string_data = Some(BTreeMap::from([("key".to_owned(), key.private_key_pem())]));
    secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("secret");
}

/// The Machines of the control plane's namespace.
fn machines(h: &Harness) -> Vec<Value> {
    h.emulator
        .objects()
        .into_iter()
        .filter(|o| o["kind"] == "Machine" && o["metadata"]["namespace"] == "clusters-demo")
        .collect()
}

fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

/// Waits (up to 20 s) until `pred` holds of the emulator's state; shows the Machines if not.
async fn eventually(h: &Harness, what: &str, mut pred: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !pred() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out: {what}; machines: {:#?}",
            machines(h)
                .iter()
                .map(|m| json!([
                    m["metadata"]["name"],
                    m["metadata"]["deletionTimestamp"],
                    m["status"]["phase"],
                    m["status"]["conditions"]
                ]))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn workers_rise_with_the_replicas_and_leave_before_the_finalizer() {
    let arm = Arm::start().await;
    let key = SigningKey::generate().expect("key");
    let (iss, _issuer) = issuer(&key).await;
    let cloud = cloud(&arm, &iss).await;
    let h = management(&arm).await;
    namespace(&h.client, "clusters").await;
    signing_key_secret(&h, "demosa-token-issuer-key", &key).await;
    pull_secret(&h.client, "clusters", "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.create(
        &PostParams::default(),
        &demo_cluster(&cloud, &iss, "demosa-token-issuer-key"),
    )
    .await
    .expect("hc");
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    let np_uid = nps
        .create(&PostParams::default(), &workers_pool(&cloud, 2))
        .await
        .expect("np")
        .metadata
        .uid
        .expect("uid");

    let np = within(
        "two nodes",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.is_some_and(|np| np.ready_replicas() == 2 && np.is_ready())
        }),
    )
    .await
    .expect("watch")
    .expect("np");
    for c in ["AllMachinesReady", "AllNodesHealthy"] {
        assert!(np.condition(c).expect(c).is_true(), "{c}: {np:?}");
    }

    // Two Machines named as CAPI names them, each with its VM, NIC and OS disk.
    let ms = machines(&h);
    assert_eq!(ms.len(), 2, "{ms:#?}");
    let mut expected = Vec::new();
    for m in &ms {
        let name = m["metadata"]["name"].as_str().expect("name");
        let parts: Vec<&str> = name.rsplitn(3, '-').collect();
        assert_eq!(parts[2], "demo-workers", "{name}");
        assert!(parts[0].len() == 5 && parts[1].len() == 5, "{name}");
        assert_eq!(
            m["metadata"]["annotations"]["hypershift.openshift.io/nodePool"],
            "clusters/demo-workers"
        );
        assert_eq!(m["status"]["phase"], "Running");
        assert_eq!(
            m["spec"]["providerID"],
            format!(
                "azure:///subscriptions/{SUB}/resourceGroups/{MANAGED_RG}/providers/Microsoft.Compute/virtualMachines/{name}"
            )
        );
        expected.push(format!("Microsoft.Compute/disks {name}_OSDisk"));
        expected.push(format!("Microsoft.Compute/virtualMachines {name}"));
        expected.push(format!("Microsoft.Network/networkInterfaces {name}-nic"));
    }
    expected.sort();
    assert_eq!(arm.workers().await, expected);

    // The work was done by the identity, at the versions CAPZ's SDK clients send.
    let stats = arm.admin.requests().await.expect("requests");
    let writes: Vec<_> = stats
        .recent
        .iter()
        .filter(|r| {
            r.method == "PUT"
                && (r.resource_type.starts_with("Microsoft.Compute")
                    || r.resource_type.ends_with("networkInterfaces"))
        })
        .collect();
    assert_eq!(writes.len(), 4, "{writes:#?}");
    for w in writes {
        let expected = if w.resource_type.ends_with("networkInterfaces") {
            "2023-05-01"
        } else {
            "2024-03-01"
        };
        assert_eq!(w.api_version.as_deref(), Some(expected), "{w:?}");
    }

    // A scale-down removes one worker and everything of it.
    nps.patch(
        "demo-workers",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("scale");
    eventually(&h, "one worker left", || machines(&h).len() == 1).await;
    let left = machines(&h);
    let name = left[0]["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let mut one = vec![
        format!("Microsoft.Compute/disks {name}_OSDisk"),
        format!("Microsoft.Compute/virtualMachines {name}"),
        format!("Microsoft.Network/networkInterfaces {name}-nic"),
    ];
    one.sort();
    assert_eq!(arm.workers().await, one);

    // Deleting the NodePool: its finalizer goes only after the last VM, disk and NIC.
    nps.delete("demo-workers", &DeleteParams::default())
        .await
        .expect("delete");
    within(
        "the NodePool to go",
        await_condition(nps.clone(), "demo-workers", is_deleted(&np_uid)),
    )
    .await
    .expect("watch");
    assert!(arm.workers().await.is_empty(), "{:?}", arm.workers().await);
    assert!(machines(&h).is_empty());
}

#[tokio::test]
async fn a_missing_grant_stops_the_workers_with_arms_refusal_until_it_is_back() {
    let arm = Arm::start().await;
    let key = SigningKey::generate().expect("key");
    let (iss, _issuer) = issuer(&key).await;
    let cloud = cloud(&arm, &iss).await;
    let removed = arm
        .admin
        .delete_role_assignment(&cloud.grants[0].0)
        .await
        .expect("admin")
        .expect("assignment");
    assert!(
        removed["id"]
            .as_str()
            .is_some_and(|id| id.contains(MANAGED_RG))
    );
    let h = management(&arm).await;
    namespace(&h.client, "clusters").await;
    signing_key_secret(&h, "demosa-token-issuer-key", &key).await;
    pull_secret(&h.client, "clusters", "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.create(
        &PostParams::default(),
        &demo_cluster(&cloud, &iss, "demosa-token-issuer-key"),
    )
    .await
    .expect("hc");
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    let np_uid = nps
        .create(&PostParams::default(), &workers_pool(&cloud, 1))
        .await
        .expect("np")
        .metadata
        .uid
        .expect("uid");

    // HyperShift folds the Machine's CAPZ condition into the NodePool, where an ARM refusal
    // is too long to keep: the NodePool says `Failed`, the Machine says why.
    let np = within(
        "the NodePool to report the failure",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.and_then(|np| np.condition("AllMachinesReady"))
                .is_some_and(|c| c.reason == "Failed")
        }),
    )
    .await
    .expect("watch")
    .expect("np");
    let all = np.condition("AllMachinesReady").expect("condition");
    assert_eq!(all.status, "False");
    assert_eq!(
        all.message,
        "1 of 1 machines are not ready\n... too many similar errors\n"
    );
    assert_eq!(np.ready_replicas(), 0);
    let ms = machines(&h);
    assert_eq!(ms.len(), 1);
    let infra = condition(&ms[0], "InfrastructureReady");
    assert_eq!(infra["reason"], "Failed");
    assert_eq!(infra["severity"], "Error");
    let message = infra["message"].as_str().expect("message");
    assert!(
        message.starts_with("interfaces failed to create or update. err: failed to get existing resource demo-demo-abcde/"),
        "{message}"
    );
    for needle in [
        "RESPONSE 403: 403 Forbidden",
        "ERROR CODE: AuthorizationFailed",
        "'Microsoft.Network/networkInterfaces/read'",
    ] {
        assert!(message.contains(needle), "{needle} in {message}");
    }
    assert!(arm.workers().await.is_empty(), "nothing was made");

    // Deleting the NodePool cannot remove what CAPZ may not touch: the finalizer holds.
    nps.delete("demo-workers", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(&h, "the deletion to be refused", || {
        machines(&h)
            .first()
            .is_some_and(|m| condition(m, "InfrastructureReady")["reason"] == "DeletionFailed")
    })
    .await;
    let m = &machines(&h)[0];
    let refused = condition(m, "InfrastructureReady")["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(
        refused.starts_with("virtualmachine failed to delete. err:"),
        "{refused}"
    );
    assert!(
        refused.contains("'Microsoft.Compute/virtualMachines/delete'"),
        "{refused}"
    );
    assert!(nps.get_opt("demo-workers").await.expect("get").is_some());

    // The grant back, CAPZ's retry goes through and the NodePool goes.
    let (id, body) = &cloud.grants[0];
    arm.put(id, "2022-04-01", body.clone()).await;
    within(
        "the NodePool to go",
        await_condition(nps.clone(), "demo-workers", is_deleted(&np_uid)),
    )
    .await
    .expect("watch");
    assert!(machines(&h).is_empty());
}

#[tokio::test]
async fn a_size_the_region_does_not_offer_fails_the_machine_for_good_before_any_put() {
    let arm = Arm::start().await;
    let key = SigningKey::generate().expect("key");
    let (iss, _issuer) = issuer(&key).await;
    let cloud = cloud(&arm, &iss).await;
    let h = management(&arm).await;
    namespace(&h.client, "clusters").await;
    signing_key_secret(&h, "demosa-token-issuer-key", &key).await;
    pull_secret(&h.client, "clusters", "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.create(
        &PostParams::default(),
        &demo_cluster(&cloud, &iss, "demosa-token-issuer-key"),
    )
    .await
    .expect("hc");
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    let mut pool = workers_pool(&cloud, 1);
    pool.spec.platform.azure.as_mut().expect("azure").vm_size = "Standard_Z99s_v9".into();
    let np_uid = nps
        .create(&PostParams::default(), &pool)
        .await
        .expect("np")
        .metadata
        .uid
        .expect("uid");

    // CAPZ looks the size up in the region's Resource SKUs before anything else; a miss is
    // its terminal configuration error, which CAPI copies onto the Machine.
    eventually(&h, "the Machine to fail for good", || {
        machines(&h)
            .first()
            .is_some_and(|m| m["status"]["failureReason"] == "InvalidConfiguration")
    })
    .await;
    let m = &machines(&h)[0];
    let name = m["metadata"]["name"].as_str().expect("name");
    assert_eq!(
        m["status"]["failureMessage"],
        format!(
            "Failure detected from referenced resource infrastructure.cluster.x-k8s.io/v1beta1, \
             Kind=AzureMachine with name \"{name}\": failed to get VM SKU Standard_Z99s_v9 in \
             compute api: reconcile error that cannot be recovered occurred: resource sku with \
             name 'Standard_Z99s_v9' and category 'virtualMachines' not found in location \
             'eastus'. Object will not be requeued"
        )
    );
    // The AzureMachine got no condition, so CAPI's fallback is what HyperShift aggregates.
    let infra = condition(m, "InfrastructureReady");
    assert_eq!(
        (&infra["status"], &infra["reason"], &infra["severity"]),
        (
            &json!("False"),
            &json!("WaitingForInfrastructure"),
            &json!("Info")
        )
    );
    assert_eq!(m["status"]["phase"], "Provisioning");
    let np = within(
        "AllMachinesReady",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.and_then(|np| np.condition("AllMachinesReady"))
                .is_some_and(|c| c.reason == "WaitingForInfrastructure")
        }),
    )
    .await
    .expect("watch")
    .expect("np");
    let all = np.condition("AllMachinesReady").expect("condition");
    assert_eq!(all.status, "False");
    assert_eq!(
        all.message,
        format!("1 of 1 machines are not ready\nMachine {name}: WaitingForInfrastructure: \n")
    );
    assert_eq!(np.ready_replicas(), 0);

    // ARM saw the SKU list, as CAPZ asks for it, and no write of a worker.
    let stats = arm.admin.requests().await.expect("requests");
    let lists: Vec<_> = stats
        .recent
        .iter()
        .filter(|r| r.resource_type == "Microsoft.Compute/skus")
        .collect();
    assert!(!lists.is_empty(), "{stats:#?}");
    for l in &lists {
        assert_eq!(
            (l.method.as_str(), l.status, l.api_version.as_deref()),
            ("GET", 200, Some("2021-07-01"))
        );
    }
    let listed = lists.len();
    let worker_writes: Vec<_> = stats
        .recent
        .iter()
        .filter(|r| {
            r.method == "PUT"
                && (r.path.contains("/virtualMachines/") || r.path.contains("/networkInterfaces/"))
        })
        .collect();
    assert!(worker_writes.is_empty(), "{worker_writes:#?}");
    assert!(arm.workers().await.is_empty(), "nothing was made");
    // Not retried: CAPZ stops reconciling a failed AzureMachine.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = arm.admin.requests().await.expect("requests");
    assert_eq!(
        again
            .recent
            .iter()
            .filter(|r| r.resource_type == "Microsoft.Compute/skus")
            .count(),
        listed,
        "the size is looked up once"
    );

    // The NodePool still goes: there is nothing in Azure to remove.
    nps.delete("demo-workers", &DeleteParams::default())
        .await
        .expect("delete");
    within(
        "the NodePool to go",
        await_condition(nps.clone(), "demo-workers", is_deleted(&np_uid)),
    )
    .await
    .expect("watch");
    assert!(machines(&h).is_empty());
}

#[tokio::test]
async fn a_missing_signing_key_secret_is_an_invalid_configuration() {
    let arm = Arm::start().await;
    let key = SigningKey::generate().expect("key");
    let (iss, _issuer) = issuer(&key).await;
    let cloud = cloud(&arm, &iss).await;
    let h = management(&arm).await;
    namespace(&h.client, "clusters").await;
    pull_secret(&h.client, "clusters", "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.create(
        &PostParams::default(),
        &demo_cluster(&cloud, &iss, "demosa-token-issuer-key"),
    )
    .await
    .expect("hc");
    let hc = within(
        "ValidConfiguration",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.and_then(|hc| hc.condition("ValidConfiguration"))
                .is_some()
        }),
    )
    .await
    .expect("watch")
    .expect("hc");
    let c = hc.condition("ValidConfiguration").expect("condition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "InvalidConfiguration")
    );
    assert_eq!(
        c.message,
        "invalid service account signing key: failed to get hostedcluster \
         ServiceAccountSigningKey secret demosa-token-issuer-key: secrets \
         \"demosa-token-issuer-key\" not found"
    );
    assert!(!hc.is_available());

    // The Secret made, the cluster comes up.
    signing_key_secret(&h, "demosa-token-issuer-key", &key).await;
    within(
        "Available",
        await_condition(hcs.clone(), "demo", |o: Option<&HostedCluster>| {
            o.is_some_and(HostedCluster::is_available)
        }),
    )
    .await
    .expect("watch");
}

#[tokio::test]
async fn a_resource_sku_list_arm_refuses_is_listed_again_and_the_worker_is_made_once_served() {
    let arm = Arm::start().await;
    let key = SigningKey::generate().expect("key");
    let (iss, _issuer) = issuer(&key).await;
    let cloud = cloud(&arm, &iss).await;
    // ARM refuses CAPZ's first three Resource SKUs lists, as it would a grant not yet seen.
    arm.admin
        .add_fault(&hypersaga_emulator_arm::FaultSpec {
            method: "GET".into(),
            resource_type: "Microsoft.Compute/skus".into(),
            name_contains: None,
            path_contains: None,
            status: 403,
            code: "AuthorizationFailed".into(),
            message: None,
            retry_after_secs: None,
            count: Some(3),
        })
        .await
        .expect("fault");
    let h = management(&arm).await;
    namespace(&h.client, "clusters").await;
    signing_key_secret(&h, "demosa-token-issuer-key", &key).await;
    pull_secret(&h.client, "clusters", "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.create(
        &PostParams::default(),
        &demo_cluster(&cloud, &iss, "demosa-token-issuer-key"),
    )
    .await
    .expect("hc");
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    nps.create(&PostParams::default(), &workers_pool(&cloud, 1))
        .await
        .expect("np");

    // CAPZ only logs a list it cannot read and reconciles again: once ARM serves the list, the
    // worker is made and its node joins.
    within(
        "the node",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.is_some_and(|np| np.ready_replicas() == 1 && np.is_ready())
        }),
    )
    .await
    .expect("watch");
    let name = machines(&h)[0]["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    assert_eq!(arm.workers().await.len(), 3, "VM, NIC and OS disk");
    let stats = arm.admin.requests().await.expect("requests");
    let lists: Vec<u16> = stats
        .recent
        .iter()
        .filter(|r| r.resource_type == "Microsoft.Compute/skus")
        .map(|r| r.status)
        .collect();
    assert_eq!(lists[..3], [403; 3], "{lists:?}");
    assert!(
        lists.len() > 3 && lists[3..].iter().all(|s| *s == 200),
        "{lists:?}"
    );
    // Nothing was written before the size was known.
    let first_served = stats
        .recent
        .iter()
        .position(|r| r.resource_type == "Microsoft.Compute/skus" && r.status == 200)
        .expect("a served list");
    let first_write = stats
        .recent
        .iter()
        .position(|r| r.method == "PUT" && r.path.contains(&name))
        .expect("a worker's PUT");
    assert!(first_served < first_write, "{:#?}", stats.recent);
}

/// The index in `recent` of the first request of `method` whose path ends with `tail`.
fn first(recent: &[hypersaga_emulator_arm::RequestRecord], method: &str, tail: &str) -> usize {
    recent
        .iter()
        .position(|r| r.method == method && r.path.ends_with(tail))
        .unwrap_or_else(|| panic!("no {method} …{tail} in {recent:#?}"))
}

#[tokio::test]
async fn workers_are_made_one_machine_at_a_time_and_a_replace_rollout_surges_before_it_deletes() {
    let arm = Arm::start().await;
    let key = SigningKey::generate().expect("key");
    let (iss, _issuer) = issuer(&key).await;
    let cloud = cloud(&arm, &iss).await;
    let h = management(&arm).await;
    namespace(&h.client, "clusters").await;
    signing_key_secret(&h, "demosa-token-issuer-key", &key).await;
    pull_secret(&h.client, "clusters", "demo").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "clusters");
    hcs.create(
        &PostParams::default(),
        &demo_cluster(&cloud, &iss, "demosa-token-issuer-key"),
    )
    .await
    .expect("hc");
    let nps: Api<NodePool> = Api::namespaced(h.client.clone(), "clusters");
    nps.create(&PostParams::default(), &workers_pool(&cloud, 1))
        .await
        .expect("np");
    within(
        "one node",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.is_some_and(|np| np.ready_replicas() == 1 && np.is_ready())
        }),
    )
    .await
    .expect("watch");

    // Scale up: the two new Machines are made together; CAPZ makes their NICs and VMs one
    // machine after the other.
    nps.patch(
        "demo-workers",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .expect("scale");
    within(
        "three nodes",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.is_some_and(|np| np.ready_replicas() == 3 && np.is_ready())
        }),
    )
    .await
    .expect("watch");
    let recent = arm.admin.requests().await.expect("requests").recent;
    let ms = machines(&h);
    let mut made: Vec<(usize, usize, usize)> = ms
        .iter()
        .map(|m| {
            let name = m["metadata"]["name"].as_str().expect("name");
            (
                first(&recent, "PUT", &format!("/networkInterfaces/{name}-nic")),
                first(&recent, "PUT", &format!("/virtualMachines/{name}")),
                recent
                    .iter()
                    .rposition(|r| r.path.contains(&format!("/virtualMachines/{name}")))
                    .expect("VM requests"),
            )
        })
        .collect();
    made.sort();
    for pair in made.windows(2) {
        assert!(
            pair[0].2 < pair[1].0,
            "a machine's NIC before the previous one's VM was done: {made:?}"
        );
    }
    let vms_before: Vec<String> = arm
        .workers()
        .await
        .into_iter()
        .filter(|w| w.starts_with("Microsoft.Compute/virtualMachines"))
        .collect();
    assert_eq!(vms_before.len(), 3);

    // Replace rollout to a new z-stream: a new Machine (and VM) is ready before an old one
    // is deleted, ready nodes never fall below three, and the version moves at the end.
    let watching = Arc::new(AtomicBool::new(true));
    let fewest = Arc::new(AtomicUsize::new(usize::MAX));
    let sampler = {
        let (emulator, watching, fewest) = (h.emulator.clone(), watching.clone(), fewest.clone());
        tokio::spawn(async move {
            while watching.load(Ordering::SeqCst) {
                let ready = emulator
                    .objects()
                    .into_iter()
                    .filter(|o| {
                        o["kind"] == "Machine"
                            && o["metadata"]["deletionTimestamp"].is_null()
                            && condition(o, "NodeHealthy")["status"] == "True"
                    })
                    .count();
                fewest.fetch_min(ready, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let upgraded = "quay.io/openshift-release-dev/ocp-release:4.19.3-x86_64";
    nps.patch(
        "demo-workers",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"release": {"image": upgraded}}})),
    )
    .await
    .expect("upgrade");
    let np = within(
        "the rollout",
        await_condition(nps.clone(), "demo-workers", |o: Option<&NodePool>| {
            o.and_then(|np| np.status.as_ref())
                .is_some_and(|s| s.version.as_deref() == Some("4.19.3"))
        }),
    )
    .await
    .expect("watch")
    .expect("np");
    watching.store(false, Ordering::SeqCst);
    sampler.await.expect("sampler");
    assert!(
        fewest.load(Ordering::SeqCst) >= 3,
        "ready nodes fell below 3"
    );
    assert_eq!(np.ready_replicas(), 3);
    eventually(&h, "the old machines to go", || machines(&h).len() == 3).await;
    let new: Vec<String> = machines(&h)
        .iter()
        .map(|m| m["metadata"]["name"].as_str().expect("name").to_owned())
        .collect();
    let mut expected = Vec::new();
    for name in &new {
        assert!(
            !vms_before
                .iter()
                .any(|vm| vm.ends_with(&format!(" {name}"))),
            "{name} is an old VM"
        );
        expected.push(format!("Microsoft.Compute/disks {name}_OSDisk"));
        expected.push(format!("Microsoft.Compute/virtualMachines {name}"));
        expected.push(format!("Microsoft.Network/networkInterfaces {name}-nic"));
    }
    expected.sort();
    within("the old VMs, NICs and disks to go", async {
        while arm.workers().await != expected {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // Azure saw each new VM made before the first old one was deleted.
    let recent = arm.admin.requests().await.expect("requests").recent;
    let first_delete = recent
        .iter()
        .position(|r| {
            r.method == "DELETE"
                && vms_before.iter().any(|vm| {
                    r.path.ends_with(&format!(
                        "/virtualMachines/{}",
                        vm.rsplit(' ').next().unwrap_or_default()
                    ))
                })
        })
        .expect("an old VM deleted");
    let first_new = new
        .iter()
        .map(|name| first(&recent, "PUT", &format!("/virtualMachines/{name}")))
        .min()
        .expect("a new VM");
    assert!(first_new < first_delete, "{recent:#?}");
}
