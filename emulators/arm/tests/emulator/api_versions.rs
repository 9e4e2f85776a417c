//! Which api-versions a client may send, and how ARM refuses the others.
//!
//! Expected values come from what ARM itself answers, as quoted in public reports, and from the
//! versions the newest SDKs send — not from the emulator's tables:
//! - `NoRegisteredProviderFound` (400) for a resource provider's regional type, naming the
//!   location and listing versions oldest first and locations: Azure/azure-cli#28496
//!   ("No registered resource provider found for location 'eastus' and API version
//!   '2023-11-01' for type 'networkInterfaces'. The supported api-versions are
//!   '2014-12-01-preview, 2015-05-01-preview, 2015-06-15, …'. The supported locations are
//!   'westus, eastus, northeurope, …'").
//! - `InvalidApiVersionParameter` (400) for resource groups, versions newest first:
//!   Azure/azure-rest-api-specs#11711, Azure/azure-cli#28038.
//! - `InvalidResourceType` (404) for Microsoft.Authorization: Azure/acs-engine#4037 (the
//!   message) and Azure/azure-rest-api-specs#14807 (the 404).
//! - Versions sent by default: azure-mgmt-network 33.1.0 `2026-03-01`, azure-mgmt-msi 7.1.0
//!   `2024-11-30`, azure-mgmt-privatedns 2.0.0 `2024-06-01`, azure-mgmt-resource 26.0.0
//!   `2025-04-01`, azure-mgmt-authorization 4.0.0 `2022-04-01`, azure-mgmt-dns 9.0.0
//!   `2018-05-01`.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::*;

const FUTURE: &str = "2099-01-01";

#[tokio::test]
async fn network_types_accept_what_the_newest_python_sdk_sends() {
    let emu = spawn(config()).await;
    emu.rg("rg1").await;
    let v = "2026-03-01";
    let nsg = net("rg1", "networkSecurityGroups/nsg");
    let vnet = net("rg1", "virtualNetworks/vnet");
    let cases = [
        (nsg.clone(), json!({"location": "eastus"})),
        (
            vnet.clone(),
            json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        ),
        (
            format!("{vnet}/subnets/default"),
            json!({"properties": {"addressPrefix": "10.0.0.0/24"}}),
        ),
        (
            net("rg1", "publicIPAddresses/pip"),
            json!({"location": "eastus", "sku": {"name": "Standard"}}),
        ),
        (
            net("rg1", "loadBalancers/lb"),
            json!({"location": "eastus", "sku": {"name": "Standard"}}),
        ),
    ];
    for (path, body) in cases {
        let put = emu.put(&path, v, body).await;
        assert_eq!(
            put.status,
            StatusCode::CREATED,
            "PUT {path}: {:?}",
            put.body
        );
        let get = emu.get(&path, v).await;
        assert_eq!(get.status, StatusCode::OK, "GET {path}: {:?}", get.body);
    }
    let list = emu.get(&net("rg1", "virtualNetworks"), v).await;
    assert_eq!(list.status, StatusCode::OK);
}

#[tokio::test]
async fn every_newest_sdk_default_is_accepted() {
    let emu = spawn(config()).await;
    let rg = format!("/subscriptions/{SUB}/resourcegroups/rg1");
    let put = emu
        .put(&rg, "2025-04-01", json!({"location": "eastus"}))
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    let identity = msi("rg1", "userAssignedIdentities/id1");
    let put = emu
        .put(&identity, "2024-11-30", json!({"location": "eastus"}))
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    let zone = net("rg1", "privateDnsZones/z.example.com");
    let put = emu
        .put(&zone, "2024-06-01", json!({"location": "global"}))
        .await;
    assert_eq!(put.status, StatusCode::ACCEPTED, "{:?}", put.body);
    let public = net("rg1", "dnsZones/example.com");
    let put = emu
        .put(&public, "2018-05-01", json!({"location": "global"}))
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    let roles = format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions");
    assert_eq!(emu.get(&roles, "2022-04-01").await.status, StatusCode::OK);
}

#[tokio::test]
async fn missing_api_version_is_refused_before_anything_else() {
    let emu = spawn(config()).await;
    emu.rg("rg1").await;
    let r = emu
        .call(
            Method::GET,
            &format!("/subscriptions/{SUB}/resourcegroups/rg1"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "MissingApiVersionParameter");
}

#[tokio::test]
async fn unknown_version_of_a_regional_type_is_no_registered_provider_found() {
    let emu = spawn(config()).await;
    emu.rg("rg1").await;
    // A GET goes to the location ARM resolves for the resource: here its group's.
    let r = emu
        .get(&net("rg1", "networkSecurityGroups/n"), FUTURE)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    let m = r.message();
    assert!(
        m.starts_with(
            "No registered resource provider found for location 'eastus' and API version \
             '2099-01-01' for type 'networkSecurityGroups'. The supported api-versions are \
             '2014-12-01-preview, 2015-05-01-preview, 2015-06-15, 2016-03-30, "
        ),
        "{m}"
    );
    assert!(m.contains(", 2023-11-01, "), "{m}");
    assert!(
        m.contains("'. The supported locations are 'westus, eastus, northeurope, westeurope, "),
        "{m}"
    );
    // Compute's 2017-03-30 is not a Network version.
    assert!(!m.contains("2017-03-30"), "{m}");

    // A PUT goes to the location its body names; a child type is named by its type path.
    let r = emu
        .put(
            &net("rg1", "virtualNetworks/v"),
            FUTURE,
            json!({"location": "West Europe"}),
        )
        .await;
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    assert!(
        r.message().contains("for location 'westeurope'"),
        "{}",
        r.message()
    );
    let r = emu
        .get(&net("rg1", "virtualNetworks/v/subnets/s"), FUTURE)
        .await;
    assert!(
        r.message().contains("for type 'virtualNetworks/subnets'"),
        "{}",
        r.message()
    );
    let r = emu
        .get(&msi("rg1", "userAssignedIdentities/i"), "2018-06-01")
        .await;
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    assert!(r.message().contains("for type 'userAssignedIdentities'"));
}

#[tokio::test]
async fn unknown_version_of_a_global_type_names_the_global_location() {
    let emu = spawn(config()).await;
    emu.rg("rg1").await;
    // A Network version is not a private DNS version: they are separate manifest entries.
    let r = emu
        .get(&net("rg1", "privateDnsZones/z.example.com"), NET)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    assert!(
        r.message().starts_with(
            "No registered resource provider found for location 'global' and API version \
             '2023-11-01' for type 'privateDnsZones'. The supported api-versions are '2018-09-01, "
        ),
        "{}",
        r.message()
    );
    assert!(
        r.message()
            .ends_with("The supported locations are 'global'."),
        "{}",
        r.message()
    );
}

#[tokio::test]
async fn unknown_version_of_a_resource_group_is_invalid_api_version_parameter() {
    let emu = spawn(config()).await;
    let r = emu
        .get(&format!("/subscriptions/{SUB}/resourcegroups/rg1"), FUTURE)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "InvalidApiVersionParameter");
    assert!(
        r.message().starts_with(
            "The api-version '2099-01-01' is invalid. The supported versions are '2025-04-01,"
        ),
        "{}",
        r.message()
    );
    assert!(r.message().ends_with(",2013-03-01'."), "{}", r.message());
    let list = emu
        .get(&format!("/subscriptions/{SUB}/resourcegroups"), FUTURE)
        .await;
    assert_eq!(list.code(), "InvalidApiVersionParameter");
}

#[tokio::test]
async fn unknown_version_of_an_authorization_type_is_invalid_resource_type() {
    let emu = spawn(config()).await;
    let name = "05c5a614-a7d6-4502-b150-c2fb455033ff";
    let path =
        format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleAssignments/{name}");
    let r = emu.get(&path, "2018-06-01").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.code(), "InvalidResourceType");
    assert!(
        r.message().starts_with(
            "The resource type 'roleAssignments' could not be found in the namespace \
             'Microsoft.Authorization' for api version '2018-06-01'. The supported api-versions \
             are '2014-04-01-preview,2014-07-01-preview,2014-10-01-preview,2015-05-01-preview,\
             2015-06-01,2015-07-01,2016-07-01,2017-05-01,2017-09-01,2017-10-01-preview,\
             2018-01-01-preview,"
        ),
        "{}",
        r.message()
    );
    assert!(r.message().contains(",2022-04-01'."), "{}", r.message());
}

#[tokio::test]
async fn unknown_types_and_namespaces_are_refused_with_their_own_codes() {
    let emu = spawn(config()).await;
    emu.rg("rg1").await;
    let r = emu.get(&net("rg1", "fooBars/x"), NET).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.code(), "InvalidResourceType");
    assert_eq!(
        r.message(),
        "The resource type 'fooBars' could not be found in the namespace 'Microsoft.Network' \
         for api version '2023-11-01'."
    );
    let r = emu
        .get(
            &format!("/subscriptions/{SUB}/resourceGroups/rg1/providers/Microsoft.Nope/things/x"),
            NET,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "InvalidResourceNamespace");
}
