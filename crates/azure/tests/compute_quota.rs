//! The compute readers and the quota check against the ARM emulator, which keeps vCPU quota as
//! Azure does: set a limit, read the usage list and the VM size, get the shortfall the check
//! predicts, and see the emulator refuse that very VM PUT with `409 OperationNotAllowed`.

use std::time::Duration;

use hypersaga_azure::compute::{QuotaScope, VmDemand, check_vcpu_quota};
use hypersaga_azure::{
    ArmClient, ArmConfig, ComputeError, CredentialConfig, ErrorKind, Secret, ids,
};
use hypersaga_emulator_arm::admin_client::AdminClient;
use hypersaga_emulator_arm::{Config, Emulator, LatencyModel, Principal, QuotaLimit};
use serde_json::{Value, json};

const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const SUB: &str = "11111111-2222-3333-4444-555555555555";
const CLIENT: &str = "0ad2e8a1-0000-4000-8000-00000000c1e7";
const SECRET: &str = "s3cret";
const NET_API: &str = "2024-05-01";
const VM_API: &str = "2024-11-01";
const RG_API: &str = "2024-03-01";
const D4: &str = "Standard_D4s_v5";
const DSV5: &str = "standardDSv5Family";

struct World {
    arm: ArmClient,
    admin: AdminClient,
    _served: hypersaga_devca::Loopback,
}

/// The emulator over TLS (lists paged by 4, so every read follows `nextLink`) and a client
/// signed in as the subscription's operator.
async fn world() -> World {
    hypersaga_devca::install_crypto_provider();
    let emulator = Emulator::new(Config {
        principals: vec![Principal {
            azure_tenant_id: TENANT.into(),
            client_id: CLIENT.into(),
            client_secret: SECRET.into(),
            subscription_ids: vec![SUB.into()],
        }],
        latency: LatencyModel::Zero,
        page_size: 4,
        ..Config::default()
    });
    let ca = hypersaga_devca::DevCa::generate().expect("dev CA");
    let cert = ca.issue_loopback_cert().expect("cert");
    let served = hypersaga_devca::serve_loopback(
        emulator.router(),
        emulator.admin_router(),
        &cert,
        &tokio_util::sync::CancellationToken::new(),
    )
    .await
    .expect("serve the emulator");
    let arm = ArmClient::new(ArmConfig {
        resource_manager_url: served.url.parse().expect("url"),
        authority_host: served.url.parse().expect("url"),
        ca_bundle_pem: Some(ca.cert_pem().to_owned()),
        credential: CredentialConfig::ClientSecret {
            tenant_id: TENANT.into(),
            client_id: CLIENT.into(),
            client_secret: Secret::new(SECRET),
        },
        lro_poll_interval: Duration::from_millis(20),
        lro_timeout: Duration::from_secs(30),
    })
    .expect("client");
    let admin = AdminClient::new(format!("{}/", served.admin_url).parse().expect("url"));
    World {
        arm,
        admin,
        _served: served,
    }
}

fn network(kind: &str, name: &str) -> String {
    ids::resource_id(SUB, "rg", &format!("Microsoft.Network/{kind}"), name)
}

fn vm(name: &str) -> String {
    ids::resource_id(SUB, "rg", "Microsoft.Compute/virtualMachines", name)
}

/// A resource group with a VNet, and a NIC per worker name.
async fn network_for(arm: &ArmClient, workers: &[&str]) {
    arm.put(
        &ids::resource_group_id(SUB, "rg"),
        RG_API,
        &json!({"location": "eastus"}),
    )
    .await
    .expect("group");
    let vnet = network("virtualNetworks", "vnet");
    arm.put(
        &vnet,
        NET_API,
        &json!({"location": "eastus", "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24"}}],
        }}),
    )
    .await
    .expect("vnet");
    for w in workers {
        arm.put(
            &network("networkInterfaces", &format!("{w}-nic")),
            NET_API,
            &json!({"location": "eastus", "properties": {"ipConfigurations": [
                {"name": "ip", "properties": {"subnet": {"id": format!("{vnet}/subnets/default")}}}
            ]}}),
        )
        .await
        .expect("nic");
    }
}

/// The body CAPZ sends for a worker of `size`.
fn worker(name: &str, size: &str) -> Value {
    json!({
        "location": "eastus",
        "properties": {
            "hardwareProfile": {"vmSize": size},
            "storageProfile": {
                "imageReference": {"publisher": "azureopenshift", "offer": "aro4", "sku": "419-v2", "version": "419.6.20250523"},
                "osDisk": {"osType": "Linux", "createOption": "FromImage", "diskSizeGB": 120,
                           "managedDisk": {"storageAccountType": "Premium_LRS"}, "deleteOption": "Delete"},
            },
            "osProfile": {"computerName": name, "adminUsername": "capi"},
            "networkProfile": {"networkInterfaces": [
                {"id": network("networkInterfaces", &format!("{name}-nic")), "properties": {"primary": true}}
            ]},
        },
    })
}

#[tokio::test]
async fn the_check_predicts_the_emulators_refusal_of_a_vm_beyond_the_family_quota() {
    let w = world().await;
    w.admin
        .set_quota_limit(&QuotaLimit {
            subscription: SUB.into(),
            location: "eastus".into(),
            name: DSV5.into(),
            limit: 10,
        })
        .await
        .expect("limit");
    network_for(&w.arm, &["w-0", "w-1", "w-2"]).await;
    w.arm
        .put(&vm("w-0"), VM_API, &worker("w-0", D4))
        .await
        .expect("first worker");

    // The usage list, every page, read by its display name too.
    let usages = w.arm.usages(SUB, "East US").await.expect("usages");
    assert_eq!(usages.location, "eastus");
    let family = usages.get(DSV5).expect("family row");
    assert_eq!(
        (family.current_value, family.limit, family.remaining()),
        (4, 10, 6)
    );
    assert_eq!(family.display_name(), "Standard DSv5 Family vCPUs");
    assert_eq!(usages.regional().expect("cores").current_value, 4);
    assert!(usages.rows.len() > 4, "more than one page: {usages:?}");

    // The size, from the Resource SKUs list (more than one page too).
    let d4 = w.arm.vm_size(SUB, "eastus", D4).await.expect("size");
    assert_eq!((d4.family.as_str(), d4.vcpus), (DSV5, 4));
    let unknown = w
        .arm
        .vm_size(SUB, "eastus", "Standard_Z99s_v9")
        .await
        .expect_err("no such size");
    assert!(matches!(unknown, ComputeError::Size(_)), "{unknown}");
    assert_eq!(unknown.kind(), ErrorKind::Terminal);

    // Two more do not fit; one does.
    let sizes = [d4];
    let err = check_vcpu_quota(&[VmDemand::new(D4, 2)], &sizes, &usages).expect_err("8 > 6");
    assert_eq!(
        err.to_string(),
        "insufficient quota for VM size \"Standard_D4s_v5\" family \"standardDSv5Family\": \
         need 8 vCPUs, have 6 remaining for \"Standard DSv5 Family vCPUs\" (current 4, limit 10)"
    );
    assert_eq!(err.shortfalls()[0].scope, QuotaScope::Family(DSV5.into()));
    assert_eq!(
        check_vcpu_quota(&[VmDemand::new(D4, 1)], &sizes, &usages),
        Ok(())
    );
    w.arm
        .put(&vm("w-1"), VM_API, &worker("w-1", D4))
        .await
        .expect("second worker fits");

    // Now the check says no to the third, and so does the emulator, with Azure's numbers.
    let usages = w.arm.usages(SUB, "eastus").await.expect("usages");
    let err = check_vcpu_quota(&[VmDemand::new(D4, 1)], &sizes, &usages).expect_err("4 > 2");
    assert_eq!(
        (err.shortfalls()[0].needed, err.shortfalls()[0].remaining),
        (4, 2)
    );
    let refused = w
        .arm
        .put(&vm("w-2"), VM_API, &worker("w-2", D4))
        .await
        .expect_err("refused");
    assert_eq!(refused.status(), Some(409));
    assert_eq!(refused.code(), Some("OperationNotAllowed"));
    assert_eq!(refused.kind(), ErrorKind::Terminal);
    assert!(
        refused.message().contains(
            "exceeding approved standardDSv5Family Cores quota. Additional details - Deployment \
             Model: Resource Manager, Location: eastus, Current Limit: 10, Current Usage: 8, \
             Additional Required: 4, (Minimum) New Limit Required: 12."
        ),
        "{refused}"
    );

    // A deleted worker gives its vCPUs back, and the check sees it.
    w.arm.delete(&vm("w-0"), VM_API).await.expect("delete");
    let usages = w.arm.usages(SUB, "eastus").await.expect("usages");
    assert_eq!(usages.get(DSV5).map(|u| u.current_value), Some(4));
    assert_eq!(
        check_vcpu_quota(&[VmDemand::new(D4, 1)], &sizes, &usages),
        Ok(())
    );
    w.arm
        .put(&vm("w-2"), VM_API, &worker("w-2", D4))
        .await
        .expect("fits now");
}

#[tokio::test]
async fn the_regional_total_is_read_and_checked_across_families() {
    let w = world().await;
    w.admin
        .set_quota_limit(&QuotaLimit {
            subscription: SUB.into(),
            location: "eastus".into(),
            name: "cores".into(),
            limit: 12,
        })
        .await
        .expect("limit");
    network_for(&w.arm, &["d-0", "e-0"]).await;
    w.arm
        .put(&vm("d-0"), VM_API, &worker("d-0", "Standard_D8s_v5"))
        .await
        .expect("worker");
    let usages = w.arm.usages(SUB, "eastus").await.expect("usages");
    let e8 = w
        .arm
        .vm_size(SUB, "eastus", "Standard_E8s_v5")
        .await
        .expect("size");
    assert_eq!(e8.family, "standardESv5Family");
    let err = check_vcpu_quota(&[VmDemand::new("Standard_E8s_v5", 1)], &[e8], &usages)
        .expect_err("8 + 8 > 12");
    assert_eq!(
        err.to_string(),
        "insufficient total regional vCPU quota for VM size \"Standard_E8s_v5\": need 8 vCPUs, \
         have 4 remaining for \"Total Regional vCPUs\" (current 8, limit 12)"
    );
    let refused = w
        .arm
        .put(&vm("e-0"), VM_API, &worker("e-0", "Standard_E8s_v5"))
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Some("OperationNotAllowed"));
    assert!(
        refused
            .message()
            .contains("exceeding approved Total Regional Cores quota"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_bad_subscription_or_location_is_refused_before_anything_is_sent() {
    let w = world().await;
    let err = w.arm.usages("a/b", "eastus").await.expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::Terminal, "{err}");
    let err = w
        .arm
        .vm_size(SUB, "east?us", D4)
        .await
        .expect_err("refused");
    assert!(matches!(err, ComputeError::Arm(_)), "{err}");
    // A location Azure does not have is ARM's own refusal, kept whole.
    let err = w.arm.usages(SUB, "marsnorth").await.expect_err("refused");
    assert_eq!(err.code(), Some("NoRegisteredProviderFound"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Terminal);
}
