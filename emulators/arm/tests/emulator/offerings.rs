//! What Azure offers and refuses beyond it: tracked resources only in public regions, VMs only
//! of sizes the compute resource provider has, and the Resource SKUs list that tells clients
//! which sizes those are.
//!
//! Expected answers come from Azure, not from the emulator's tables:
//! - `400 LocationNotAvailableForResourceGroup`, "The provided location '…' is not available for
//!   resource group. List of available regions is '…'." (Azure/k8s-infra
//!   `template_client_test.go`); `400 LocationNotAvailableForResourceType`, "… is not available
//!   for resource type '…'. List of available regions for the resource type is '…'."
//!   (Azure/azure-rest-api-specs#8347).
//! - `400 InvalidParameter`, `target: vmSize`, "The value … provided for the VM size is not
//!   valid. The valid sizes in the current region are: …" (ContainerSolutions/terraform-examples#62,
//!   DataBiosphere/terra-workspace-manager#1220, PaloAltoNetworks/azure-applicationgateway#1).
//! - The order: the api-version, then the location, then the size (the brief of
//!   docs/reference/azure-compute-and-otel.md §8).
//! - The SKU list's shape: `ListAvailableResourceSkusForARegion` of azure-rest-api-specs
//!   `Skus/stable/2021-07-01`; its request as CAPZ sends it
//!   (kubernetes-sigs/cluster-api-provider-azure#2785).

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::identity_rbac::{CONTRIBUTOR, grant, identity_token};
use crate::support::*;
use crate::workers::{VM_API, compute, nic, vm_body, vnet};

const SKUS: &str = "2021-07-01";

fn group(name: &str) -> String {
    format!("/subscriptions/{SUB}/resourcegroups/{name}")
}

fn skus_path(filter: Option<&str>) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair("api-version", SKUS);
    if let Some(f) = filter {
        q.append_pair("$filter", f);
    }
    format!(
        "/subscriptions/{SUB}/providers/Microsoft.Compute/skus?{}",
        q.finish()
    )
}

/// Every page of a list, following `nextLink`.
pub(crate) async fn all_pages(emu: &TestEmu, token: &str, first: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut next = Some(first.to_owned());
    while let Some(url) = next.take() {
        let r = emu.call_as(token, Method::GET, &url, None).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        items.extend(r.body["value"].as_array().cloned().unwrap_or_default());
        next = r.body["nextLink"].as_str().map(str::to_owned);
    }
    items
}

#[tokio::test]
async fn a_resource_group_in_a_made_up_region_is_refused_and_not_created() {
    let emu = spawn(config()).await;
    let r = emu
        .put(&group("mars"), RES, json!({"location": "marsnorth"}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), "LocationNotAvailableForResourceGroup");
    let message = r.message();
    assert!(
        message.starts_with(
            "The provided location 'marsnorth' is not available for resource group. List of \
             available regions is 'westus,eastus,northeurope,westeurope,eastasia,"
        ),
        "{message}"
    );
    assert!(message.ends_with("'."), "{message}");
    for region in ["eastus2", "westus2", "swedencentral", "uksouth"] {
        assert!(
            message.contains(&format!(",{region},")),
            "{region}: {message}"
        );
    }
    let list = message
        .split("List of available regions is '")
        .nth(1)
        .and_then(|l| l.strip_suffix("'."))
        .expect("the list");
    assert!(!list.contains(' '), "names, not display names: {list}");
    assert!(!list.split(',').any(|r| r == "marsnorth"));
    assert_eq!(
        emu.get(&group("mars"), RES).await.status,
        StatusCode::NOT_FOUND
    );

    // A region by its display name is a region.
    let ok = emu
        .put(&group("west"), RES, json!({"location": "West Europe"}))
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.body);
}

#[tokio::test]
async fn a_resource_in_a_made_up_region_is_refused_naming_its_type() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    for (path, version, type_name) in [
        (
            net("rg", "virtualNetworks/v"),
            NET,
            "Microsoft.Network/virtualNetworks",
        ),
        (
            msi("rg", "userAssignedIdentities/i"),
            MSI,
            "Microsoft.ManagedIdentity/userAssignedIdentities",
        ),
    ] {
        let r = emu
            .put(&path, version, json!({"location": "marsnorth"}))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
        assert_eq!(r.code(), "LocationNotAvailableForResourceType");
        assert!(
            r.message().starts_with(&format!(
                "The provided location 'marsnorth' is not available for resource type \
                 '{type_name}'. List of available regions for the resource type is \
                 'westus,eastus,"
            )),
            "{}",
            r.message()
        );
        assert_eq!(emu.get(&path, version).await.status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn a_vm_of_a_size_azure_does_not_have_is_refused_after_the_version_and_the_location() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "v", "eastus", None).await;
    let nic_id = nic(&emu, "rg", "w-nic", &subnet).await.body["id"]
        .as_str()
        .expect("nic id")
        .to_owned();
    let vm = compute("rg", "virtualMachines/w");
    let mut body = vm_body("w", &nic_id, "Delete");
    body["properties"]["hardwareProfile"]["vmSize"] = json!("Standard_Z99s_v9");

    // The size alone: the compute resource provider's refusal, naming what it has.
    let r = emu.put(&vm, VM_API, body.clone()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), "InvalidParameter");
    assert_eq!(r.body["error"]["target"], "vmSize");
    let message = r.message();
    assert!(
        message.starts_with(
            "The value Standard_Z99s_v9 provided for the VM size is not valid. The valid sizes \
             in the current region are: Standard_D2s_v3,Standard_D4s_v3,"
        ),
        "{message}"
    );
    assert!(message.contains(",Standard_D4s_v5,"), "{message}");
    assert!(
        message.ends_with(
            ". Find out more on the valid VM sizes in each region at \
             https://aka.ms/azure-regionservices."
        ),
        "{message}"
    );
    // Nothing was made: no VM, no OS disk.
    assert_eq!(emu.get(&vm, VM_API).await.status, StatusCode::NOT_FOUND);
    let made: Vec<Value> = emu.admin.resources(Some(SUB)).await.expect("dump");
    assert!(
        made.iter().all(|r| r["type"] != "Microsoft.Compute/disks"
            && r["type"] != "Microsoft.Compute/virtualMachines"),
        "{made:#?}"
    );

    // The location is checked before the size, the api-version before both.
    body["location"] = json!("marsnorth");
    let r = emu.put(&vm, VM_API, body.clone()).await;
    assert_eq!(
        r.code(),
        "LocationNotAvailableForResourceType",
        "{:?}",
        r.body
    );
    assert!(r.message().contains("'Microsoft.Compute/virtualMachines'"));
    let r = emu.put(&vm, "2099-01-01", body).await;
    assert_eq!(r.code(), "NoRegisteredProviderFound", "{:?}", r.body);
    assert!(
        r.message().contains("for location 'marsnorth'"),
        "{}",
        r.message()
    );

    // A size Azure has, in any case, is taken.
    let mut ok = vm_body("w", &nic_id, "Delete");
    ok["properties"]["hardwareProfile"]["vmSize"] = json!("standard_d2s_v3");
    let r = emu.put(&vm, VM_API, ok).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
}

#[tokio::test]
async fn the_resource_skus_list_names_every_size_of_a_region_with_its_vcpus_and_family() {
    let emu = spawn(config()).await;
    let eastus = all_pages(&emu, &emu.token, &skus_path(Some("location eq 'eastus'"))).await;
    let names: Vec<&str> = eastus.iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.contains(&"Standard_D4s_v5"), "{names:?}");
    assert!(!names.contains(&"Standard_Z99s_v9"));
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "one entry per size: {names:?}");
    for sku in &eastus {
        assert_eq!(sku["resourceType"], "virtualMachines");
        assert_eq!(sku["locations"], json!(["eastus"]));
        assert_eq!(sku["restrictions"], json!([]));
    }
    let d4 = eastus
        .iter()
        .find(|s| s["name"] == "Standard_D4s_v5")
        .expect("D4s_v5");
    assert_eq!(d4["tier"], "Standard");
    assert_eq!(d4["size"], "D4s_v5");
    assert_eq!(d4["family"], "standardDSv5Family");
    let capability = |name: &str| {
        d4["capabilities"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .map(|c| c["value"].clone())
    };
    assert_eq!(capability("vCPUs"), Some(json!("4")));
    assert_eq!(capability("MemoryGB"), Some(json!("16")));
    assert_eq!(capability("PremiumIO"), Some(json!("True")));

    // A region Azure does not have lists nothing; a filter on anything else is refused.
    let mars = emu
        .call(
            Method::GET,
            &skus_path(Some("location eq 'marsnorth'")),
            None,
        )
        .await;
    assert_eq!(mars.status, StatusCode::OK);
    assert_eq!(mars.body["value"], json!([]));
    let bad = emu
        .call(
            Method::GET,
            &skus_path(Some("name eq 'Standard_D4s_v5'")),
            None,
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{:?}", bad.body);
}

#[tokio::test]
async fn an_identity_granted_on_a_group_reads_the_resource_skus_and_one_granted_nothing_does_not() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let (token, me, _issuer) = identity_token(&emu).await;
    let r = emu
        .call_as(
            &token,
            Method::GET,
            &skus_path(Some("location eq 'eastus'")),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert_eq!(r.code(), "AuthorizationFailed");
    assert!(
        r.message().contains(&format!(
            "does not have authorization to perform action 'Microsoft.Compute/skus/read' over \
             scope '/subscriptions/{SUB}'"
        )),
        "{}",
        r.message()
    );

    // Contributor on one group, as HyperShift grants CAPZ's identity: the list is readable.
    grant(
        &emu,
        &format!("/subscriptions/{SUB}/resourceGroups/managed"),
        CONTRIBUTOR,
        &me,
    )
    .await;
    let listed = all_pages(&emu, &token, &skus_path(Some("location eq 'eastus'"))).await;
    assert!(listed.iter().any(|s| s["name"] == "Standard_D4s_v5"));
}
