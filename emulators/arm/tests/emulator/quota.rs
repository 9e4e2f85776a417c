//! vCPU quota: the Compute usage list, and the compute resource provider's refusal of a VM
//! beyond its family's or its region's limit.
//!
//! Expected answers come from Azure, not from the emulator's code:
//! - the refusal, `409 OperationNotAllowed`, synchronous on the VM PUT, worded as Azure answered
//!   in 2024-25: "Operation could not be completed as it results in exceeding approved
//!   standardFSv2Family Cores quota. Additional details - Deployment Model: Resource Manager,
//!   Location: eastus, Current Limit: 50, Current Usage: 48, Additional Required: 4, (Minimum)
//!   New Limit Required: 52. Setup Alerts …" (scylladb/scylla-cluster-tests#12948, #9010), and
//!   "… exceeding approved Total Regional Cores quota …", `resourceName` `cores`,
//!   `regional-quota-requests` (cloud-barista/cb-spider#1558); New Limit = Usage + Additional;
//! - the list's shape: `ListUsagesResult` of azure-rest-api-specs (the `Usage_List` examples of
//!   ComputeRP/stable/2025-04-01), `cores` = "Total Regional vCPUs" (Azure/ARO-HCP), family rows
//!   named by the SKU's `family`;
//! - its refusals: `NoRegisteredProviderFound … for type 'locations/usages'` with the virtual
//!   machines' versions (Azure/azure-sdk-for-python#21283); its authorization, a read over the
//!   subscription as for `locations/vmSizes` (confidential-containers/cloud-api-adaptor#1453).

use std::sync::Arc;

use hypersaga_emulator_arm::{QuotaConfig, QuotaLimit};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::identity_rbac::{CONTRIBUTOR, READER, assert_forbidden, grant, identity_token};
use crate::offerings::all_pages;
use crate::support::*;
use crate::workers::{VM_API, compute, nic, vm_body, vnet};

const USAGES_API: &str = "2025-04-01";
const DSV5: &str = "standardDSv5Family";

fn usages_path(location: &str) -> String {
    format!(
        "/subscriptions/{SUB}/providers/Microsoft.Compute/locations/{location}/usages?api-version={USAGES_API}"
    )
}

async fn set_limit(emu: &TestEmu, location: &str, name: &str, limit: u64) -> QuotaLimit {
    emu.admin
        .set_quota_limit(&QuotaLimit {
            subscription: SUB.into(),
            location: location.into(),
            name: name.into(),
            limit,
        })
        .await
        .expect("set the limit")
}

/// A NIC in eastus on `subnet`, for a worker.
async fn worker_nic(emu: &TestEmu, rg: &str, name: &str, subnet: &str) -> String {
    let n = nic(emu, rg, &format!("{name}-nic"), subnet).await;
    assert_eq!(n.status, StatusCode::CREATED, "{:?}", n.body);
    n.body["id"].as_str().expect("nic id").to_owned()
}

fn worker_body(name: &str, nic_id: &str, size: &str) -> Value {
    let mut body = vm_body(name, nic_id, "Delete");
    body["properties"]["hardwareProfile"]["vmSize"] = json!(size);
    body
}

/// A worker VM of `size` in `rg` (eastus), with its NIC; answers the VM PUT.
async fn worker(emu: &TestEmu, rg: &str, name: &str, subnet: &str, size: &str) -> Resp {
    let nic_id = worker_nic(emu, rg, name, subnet).await;
    let vm = compute(rg, &format!("virtualMachines/{name}"));
    emu.put(&vm, VM_API, worker_body(name, &nic_id, size)).await
}

/// Every usage row of a region.
async fn usages(emu: &TestEmu, location: &str) -> Vec<Value> {
    all_pages(emu, &emu.token, &usages_path(location)).await
}

/// `(currentValue, limit)` of the row named `name`.
fn row(rows: &[Value], name: &str) -> (u64, u64) {
    let r = rows
        .iter()
        .find(|r| r["name"]["value"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {rows:#?}"));
    (
        r["currentValue"].as_u64().expect("currentValue"),
        r["limit"].as_u64().expect("limit"),
    )
}

/// The resources of a type in the subscription, from the admin dump.
async fn count_of(emu: &TestEmu, type_name: &str) -> usize {
    let all: Vec<Value> = emu.admin.resources(Some(SUB)).await.expect("dump");
    all.iter().filter(|r| r["type"] == type_name).count()
}

#[tokio::test]
async fn a_vm_beyond_its_family_quota_is_refused_with_azures_409_and_nothing_is_made() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    let stored = set_limit(&emu, "East US", "STANDARDDSV5FAMILY", 10).await;
    assert_eq!(
        (stored.location.as_str(), stored.name.as_str()),
        ("eastus", DSV5)
    );

    for name in ["w-0", "w-1"] {
        let r = worker(&emu, "rg", name, &subnet, "Standard_D4s_v5").await;
        assert_eq!(r.status, StatusCode::CREATED, "{name}: {:?}", r.body);
    }
    let r = worker(&emu, "rg", "w-2", &subnet, "Standard_D4s_v5").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);
    assert_eq!(r.code(), "OperationNotAllowed");
    assert_eq!(
        r.message(),
        "Operation could not be completed as it results in exceeding approved \
         standardDSv5Family Cores quota. Additional details - Deployment Model: Resource \
         Manager, Location: eastus, Current Limit: 10, Current Usage: 8, Additional Required: 4, \
         (Minimum) New Limit Required: 12. Setup Alerts when Quota reaches threshold. Learn more \
         at https://aka.ms/quotamonitoringalerting . Submit a request for Quota increase at \
         https://aka.ms/ProdportalCRP/#blade/Microsoft_Azure_Capacity/UsageAndQuota.ReactView/\
         Parameters/%7B%22subscriptionId%22:%2211111111-2222-3333-4444-555555555555%22,\
         %22command%22:%22openQuotaApprovalBlade%22,%22quotas%22:[%7B%22location%22:%22eastus\
         %22,%22providerId%22:%22Microsoft.Compute%22,%22resourceName%22:%22standardDSv5Family\
         %22,%22quotaRequest%22:%7B%22properties%22:%7B%22limit%22:12,%22unit%22:%22Count%22,\
         %22name%22:%7B%22value%22:%22standardDSv5Family%22%7D%7D%7D%7D]%7D by specifying \
         parameters listed in the \u{2018}Details\u{2019} section for deployment to succeed. \
         Please read more about quota limits at \
         https://docs.microsoft.com/en-us/azure/azure-supportability/per-vm-quota-requests"
    );
    // Refused before anything was made: no VM, no OS disk; what the others hold is unchanged.
    let vm = compute("rg", "virtualMachines/w-2");
    assert_eq!(emu.get(&vm, VM_API).await.status, StatusCode::NOT_FOUND);
    assert_eq!(count_of(&emu, "Microsoft.Compute/virtualMachines").await, 2);
    assert_eq!(count_of(&emu, "Microsoft.Compute/disks").await, 2);
    let rows = usages(&emu, "eastus").await;
    assert_eq!(row(&rows, DSV5), (8, 10));
    assert_eq!(row(&rows, "cores").0, 8);

    // Another family still has room: the limit is the family's.
    let r = worker(&emu, "rg", "e-0", &subnet, "Standard_E4s_v5").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn the_regional_total_binds_across_families_and_the_family_is_reported_first() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    set_limit(&emu, "eastus", "cores", 12).await;

    let r = worker(&emu, "rg", "d-0", &subnet, "Standard_D8s_v5").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // 8 + 8 > 12 although the E family holds nothing.
    let r = worker(&emu, "rg", "e-0", &subnet, "Standard_E8s_v5").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);
    assert_eq!(r.code(), "OperationNotAllowed");
    let message = r.message();
    assert!(
        message.starts_with(
            "Operation could not be completed as it results in exceeding approved Total Regional \
             Cores quota. Additional details - Deployment Model: Resource Manager, Location: \
             eastus, Current Limit: 12, Current Usage: 8, Additional Required: 8, (Minimum) New \
             Limit Required: 16. Setup Alerts when Quota reaches threshold."
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "%22resourceName%22:%22cores%22,%22quotaRequest%22:%7B%22properties%22:%7B%22limit%22:16,"
        ),
        "{message}"
    );
    assert!(
        message.ends_with(
            "Please read more about quota limits at \
             https://docs.microsoft.com/en-us/azure/azure-supportability/regional-quota-requests"
        ),
        "{message}"
    );
    // An exact fit is taken.
    let r = worker(&emu, "rg", "e-1", &subnet, "Standard_E4s_v5").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let rows = usages(&emu, "eastus").await;
    assert_eq!(row(&rows, "cores"), (12, 12));

    // Both exceeded: the family is the one reported.
    set_limit(&emu, "eastus", DSV5, 8).await;
    let r = worker(&emu, "rg", "d-1", &subnet, "Standard_D2s_v5").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);
    assert!(
        r.message().contains(
            "exceeding approved standardDSv5Family Cores quota. Additional details - Deployment \
             Model: Resource Manager, Location: eastus, Current Limit: 8, Current Usage: 8, \
             Additional Required: 2, (Minimum) New Limit Required: 10."
        ),
        "{}",
        r.message()
    );
}

#[tokio::test]
async fn a_re_put_adds_nothing_a_resize_adds_the_difference_and_a_delete_frees_its_vcpus() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    set_limit(&emu, "eastus", DSV5, 8).await;
    let a_nic = worker_nic(&emu, "rg", "a", &subnet).await;
    let a = compute("rg", "virtualMachines/a");
    let r = emu
        .put(&a, VM_API, worker_body("a", &a_nic, "Standard_D4s_v5"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = worker(&emu, "rg", "b", &subnet, "Standard_D4s_v5").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);

    // The family is full; the same VM again asks for nothing, even below a lowered limit.
    let r = emu
        .put(&a, VM_API, worker_body("a", &a_nic, "Standard_D4s_v5"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // A resize within the family asks for the difference.
    let r = emu
        .put(&a, VM_API, worker_body("a", &a_nic, "Standard_D8s_v5"))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);
    assert!(
        r.message().contains(
            "Current Limit: 8, Current Usage: 8, Additional Required: 4, (Minimum) New Limit \
             Required: 12."
        ),
        "{}",
        r.message()
    );
    let stored = emu.get(&a, VM_API).await;
    assert_eq!(
        stored.body["properties"]["hardwareProfile"]["vmSize"], "Standard_D4s_v5",
        "a refused resize leaves the VM as it was"
    );
    // Into another family: all of it there, nothing more for the region.
    set_limit(&emu, "eastus", "cores", 8).await;
    let r = emu
        .put(&a, VM_API, worker_body("a", &a_nic, "Standard_E4s_v5"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rows = usages(&emu, "eastus").await;
    assert_eq!(row(&rows, DSV5), (4, 8));
    assert_eq!(row(&rows, "standardESv5Family").0, 4);
    assert_eq!(row(&rows, "cores"), (8, 8));

    // The region is full until a VM is deleted; its vCPUs are free once the delete is done.
    let r = worker(&emu, "rg", "c", &subnet, "Standard_D2s_v5").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);
    assert!(
        r.message().contains("Total Regional Cores"),
        "{}",
        r.message()
    );
    let d = emu
        .delete(&compute("rg", "virtualMachines/b"), VM_API)
        .await;
    assert_eq!(d.status, StatusCode::ACCEPTED, "{:?}", d.body);
    let rows = usages(&emu, "eastus").await;
    assert_eq!(row(&rows, DSV5), (0, 8));
    assert_eq!(row(&rows, "cores"), (4, 8));
    let c_nic = format!(
        "/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/c-nic"
    );
    let r = emu
        .put(
            &compute("rg", "virtualMachines/c"),
            VM_API,
            worker_body("c", &c_nic, "Standard_D2s_v5"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn a_vm_still_creating_or_being_deleted_holds_its_vcpus() {
    let mut cfg = config();
    cfg.latency = hypersaga_emulator_arm::LatencyModel::Scaled(0.001);
    for (rtype, secs) in [
        ("Microsoft.Compute/virtualMachines", 600),
        ("Microsoft.Network/networkInterfaces", 0),
        ("Microsoft.Network/virtualNetworks", 0),
    ] {
        cfg.latency_overrides
            .insert(rtype.into(), std::time::Duration::from_secs(secs));
    }
    let emu = spawn(cfg).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    set_limit(&emu, "eastus", DSV5, 4).await;
    let r = worker(&emu, "rg", "a", &subnet, "Standard_D4s_v5").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["properties"]["provisioningState"], "Creating");
    let rows = usages(&emu, "eastus").await;
    assert_eq!(
        row(&rows, DSV5),
        (4, 4),
        "a VM still creating holds its vCPUs"
    );
    let b_nic = worker_nic(&emu, "rg", "b", &subnet).await;
    let b = compute("rg", "virtualMachines/b");
    let r = emu
        .put(&b, VM_API, worker_body("b", &b_nic, "Standard_D2s_v5"))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);

    let d = emu
        .delete(&compute("rg", "virtualMachines/a"), VM_API)
        .await;
    assert_eq!(d.status, StatusCode::ACCEPTED, "{:?}", d.body);
    let rows = usages(&emu, "eastus").await;
    assert_eq!(
        row(&rows, DSV5),
        (4, 4),
        "a VM being deleted holds its vCPUs"
    );
    let r = emu
        .put(&b, VM_API, worker_body("b", &b_nic, "Standard_D2s_v5"))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{:?}", r.body);
}

#[tokio::test]
async fn concurrent_creates_never_take_more_than_the_limit() {
    let emu = Arc::new(spawn(config()).await);
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    set_limit(&emu, "eastus", DSV5, 16).await;
    let mut nics = Vec::new();
    for i in 0..8 {
        nics.push(worker_nic(&emu, "rg", &format!("w-{i}"), &subnet).await);
    }
    let mut puts = tokio::task::JoinSet::new();
    for (i, nic_id) in nics.into_iter().enumerate() {
        let emu = emu.clone();
        puts.spawn(async move {
            let name = format!("w-{i}");
            let vm = compute("rg", &format!("virtualMachines/{name}"));
            emu.put(&vm, VM_API, worker_body(&name, &nic_id, "Standard_D4s_v5"))
                .await
                .status
        });
    }
    let mut created = 0;
    let mut refused = 0;
    while let Some(status) = puts.join_next().await {
        match status.expect("task") {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => refused += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((created, refused), (4, 4));
    assert_eq!(row(&usages(&emu, "eastus").await, DSV5), (16, 16));
    assert_eq!(count_of(&emu, "Microsoft.Compute/virtualMachines").await, 4);
}

#[tokio::test]
async fn the_usage_list_counts_the_vms_of_the_subscription_and_region_against_its_limits() {
    let mut cfg = config();
    cfg.quota = QuotaConfig {
        regional_vcpus: 350,
        family_vcpus: 100,
    };
    cfg.page_size = 3;
    let emu = spawn(cfg).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    let r = worker(&emu, "rg", "d", &subnet, "Standard_D4s_v5").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let r = worker(&emu, "rg", "f", &subnet, "Standard_F8s_v2").await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A VM in another region counts there only.
    let west = vnet(&emu, "rg", "west", "westus", None).await;
    let n = emu
        .put(
            &net("rg", "networkInterfaces/west-nic"),
            NET,
            json!({"location": "westus", "properties": {"ipConfigurations": [
                {"name": "ip", "properties": {"subnet": {"id": west}}}
            ]}}),
        )
        .await;
    assert_eq!(n.status, StatusCode::CREATED, "{:?}", n.body);
    let mut body = worker_body(
        "west",
        n.body["id"].as_str().expect("id"),
        "Standard_D16s_v5",
    );
    body["location"] = json!("westus");
    let r = emu
        .put(&compute("rg", "virtualMachines/west"), VM_API, body)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    // A limit set for another subscription changes nothing here.
    emu.admin
        .set_quota_limit(&QuotaLimit {
            subscription: OTHER_SUB.into(),
            location: "eastus".into(),
            name: "cores".into(),
            limit: 1,
        })
        .await
        .expect("set");

    // The first page is paged like every list (three rows, then a nextLink).
    let first = emu.call(Method::GET, &usages_path("eastus"), None).await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    assert_eq!(first.body["value"].as_array().map(Vec::len), Some(3));
    assert!(first.body["nextLink"].is_string(), "{:?}", first.body);

    let rows = usages(&emu, "eastus").await;
    assert_eq!(
        rows[0],
        json!({"unit": "Count", "currentValue": 12, "limit": 350,
               "name": {"value": "cores", "localizedValue": "Total Regional vCPUs"}})
    );
    assert!(
        rows.contains(&json!({"unit": "Count", "currentValue": 4, "limit": 100,
        "name": {"value": "standardDSv5Family", "localizedValue": "Standard DSv5 Family vCPUs"}}))
    );
    assert!(
        rows.contains(&json!({"unit": "Count", "currentValue": 8, "limit": 100,
        "name": {"value": "standardFSv2Family", "localizedValue": "Standard FSv2 Family vCPUs"}}))
    );
    // Every family of the region is listed, held or not, once.
    let names: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["name"]["value"].as_str())
        .collect();
    for family in [
        "standardDSv3Family",
        "standardDSv4Family",
        "standardDv5Family",
        "standardDASv5Family",
        "standardDDSv5Family",
        "standardESv5Family",
    ] {
        assert_eq!(
            names.iter().filter(|n| **n == family).count(),
            1,
            "{names:?}"
        );
        assert_eq!(row(&rows, family), (0, 100));
    }
    let west_rows = usages(&emu, "westus").await;
    assert_eq!(row(&west_rows, "cores"), (16, 350));
    assert_eq!(row(&west_rows, DSV5), (16, 100));
}

#[tokio::test]
async fn the_usage_list_takes_compute_api_versions_and_refuses_what_arm_refuses() {
    let emu = spawn(config()).await;
    let path = |location: &str, v: &str| {
        format!(
            "/subscriptions/{SUB}/providers/Microsoft.Compute/locations/{location}/usages?api-version={v}"
        )
    };
    for v in ["2015-06-15", "2024-11-01", "2025-04-01", "2025-11-01"] {
        let r = emu.call(Method::GET, &path("eastus", v), None).await;
        assert_eq!(r.status, StatusCode::OK, "{v}: {:?}", r.body);
        assert_eq!(r.body["value"][0]["name"]["value"], "cores");
    }
    // A display name is a location too.
    let r = emu
        .call(Method::GET, &path("East%20US", USAGES_API), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    let r = emu
        .call(Method::GET, &path("eastus", "2099-01-01"), None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    assert!(
        r.message().starts_with(
            "No registered resource provider found for location 'eastus' and API version \
             '2099-01-01' for type 'locations/usages'. The supported api-versions are \
             '2015-05-01-preview, 2015-06-15, 2016-03-30,"
        ),
        "{}",
        r.message()
    );
    let r = emu
        .call(Method::GET, &path("marsnorth", USAGES_API), None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    assert!(
        r.message().starts_with(
            "No registered resource provider found for location 'marsnorth' and API version \
             '2025-04-01' for type 'locations/usages'."
        ),
        "{}",
        r.message()
    );
    // Only GET.
    let r = emu
        .call(Method::PUT, &path("eastus", USAGES_API), Some(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{:?}", r.body);
}

#[tokio::test]
async fn reading_usages_needs_a_read_over_the_subscription() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let (token, me, _issuer) = identity_token(&emu).await;
    let action = "Microsoft.Compute/locations/usages/read";
    let subscription = format!("/subscriptions/{SUB}");
    let r = emu
        .call_as(&token, Method::GET, &usages_path("eastus"), None)
        .await;
    assert_forbidden(&r, &me, action, &subscription);

    // Contributor on a group, as CAPZ's identity holds it, is not enough.
    grant(
        &emu,
        &format!("/subscriptions/{SUB}/resourceGroups/managed"),
        CONTRIBUTOR,
        &me,
    )
    .await;
    let r = emu
        .call_as(&token, Method::GET, &usages_path("eastus"), None)
        .await;
    assert_forbidden(&r, &me, action, &subscription);

    grant(&emu, &subscription, READER, &me).await;
    let rows = all_pages(&emu, &token, &usages_path("eastus")).await;
    assert_eq!(rows[0]["name"]["value"], "cores");
}

#[tokio::test]
async fn quota_limits_are_set_listed_refused_and_cleared_through_the_admin_api() {
    let emu = spawn(config()).await;
    let defaults = QuotaConfig::default();
    let rows = usages(&emu, "eastus").await;
    assert_eq!(row(&rows, "cores"), (0, defaults.regional_vcpus));
    assert_eq!(row(&rows, DSV5), (0, defaults.family_vcpus));

    set_limit(&emu, "West Europe", "Cores", 20).await;
    set_limit(&emu, "eastus", DSV5, 10).await;
    let listed = emu.admin.quota_limits(Some(SUB)).await.expect("list");
    assert_eq!(
        listed
            .iter()
            .map(|l| (l.location.as_str(), l.name.as_str(), l.limit))
            .collect::<Vec<_>>(),
        vec![("eastus", DSV5, 10), ("westeurope", "cores", 20)]
    );
    assert_eq!(row(&usages(&emu, "westeurope").await, "cores"), (0, 20));

    for (location, name) in [("marsnorth", "cores"), ("eastus", "lowPriorityCores")] {
        let err = emu
            .admin
            .set_quota_limit(&QuotaLimit {
                subscription: SUB.into(),
                location: location.into(),
                name: name.into(),
                limit: 1,
            })
            .await
            .expect_err("refused");
        assert!(
            matches!(
                err,
                hypersaga_emulator_arm::admin_client::Error::Status { status: 400, .. }
            ),
            "{err}"
        );
    }

    emu.admin.clear_quota_limits().await.expect("clear");
    assert!(emu.admin.quota_limits(None).await.expect("list").is_empty());
    assert_eq!(
        row(&usages(&emu, "eastus").await, DSV5).1,
        defaults.family_vcpus
    );

    set_limit(&emu, "eastus", DSV5, 10).await;
    emu.admin.reset().await.expect("reset");
    assert!(emu.admin.quota_limits(None).await.expect("list").is_empty());
}
