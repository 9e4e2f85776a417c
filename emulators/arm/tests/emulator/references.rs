//! PUTs naming resources that do not exist, or exist in another region, refused as the
//! resource providers refuse them.
//!
//! The network resource provider's words, `400 InvalidResourceReference`, "Resource {id}
//! referenced by resource {id} was not found. Please make sure that the referenced resource
//! exists, and that both resources are in the same region." with `"details": []`: for a NIC's
//! subnet MicrosoftDocs/azure-docs#81734 and microsoft/MCW-Building-a-resilient-IaaS-
//! architecture#35 (the NIC is the referrer), for a load balancer rule's frontend
//! openshift/openshift-azure#1933 (the rule is the referrer), for a NIC's backend pool
//! Azure/acs-engine#3114. A public IP already held elsewhere: `PublicIPAddressInUse`
//! (yingeli/pod-external-ip-operator). The private DNS resource provider answers a link to a
//! missing VNet with its own `BadRequest` (Azure/azure-cli#23351).

use reqwest::StatusCode;
use serde_json::json;

use crate::support::*;
use crate::workers::{nic, vnet};

fn invalid_reference(referenced: &str, referrer: &str) -> String {
    format!(
        "Resource {referenced} referenced by resource {referrer} was not found. Please make sure \
         that the referenced resource exists, and that both resources are in the same region."
    )
}

#[track_caller]
fn assert_invalid_reference(r: &Resp, referenced: &str, referrer: &str) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), "InvalidResourceReference");
    assert_eq!(r.message(), invalid_reference(referenced, referrer));
    assert_eq!(r.body["error"]["details"], json!([]));
}

#[tokio::test]
async fn subnets_must_name_an_existing_nsg_in_their_region() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let nsg = net("rg", "networkSecurityGroups/missing");
    let vnet_path = net("rg", "virtualNetworks/vnet");
    let body = |nsg: &str| {
        json!({"location": "eastus", "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24", "networkSecurityGroup": {"id": nsg}}}],
        }})
    };
    // Inline in the VNet PUT: the subnet is the referrer; nothing is created.
    let r = emu.put(&vnet_path, NET, body(&nsg)).await;
    assert_invalid_reference(&r, &nsg, &format!("{vnet_path}/subnets/default"));
    assert_eq!(emu.get(&vnet_path, NET).await.status, StatusCode::NOT_FOUND);

    // An NSG in another region is no better.
    let west = net("rg", "networkSecurityGroups/west");
    let w = emu.put(&west, NET, json!({"location": "westus"})).await;
    assert_eq!(w.status, StatusCode::CREATED);
    let r = emu.put(&vnet_path, NET, body(&west)).await;
    assert_invalid_reference(&r, &west, &format!("{vnet_path}/subnets/default"));

    // The subnet as a child resource.
    let east = net("rg", "networkSecurityGroups/east");
    assert_eq!(
        emu.put(&east, NET, json!({"location": "eastus"}))
            .await
            .status,
        StatusCode::CREATED
    );
    let ok = emu.put(&vnet_path, NET, body(&east)).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.body);
    let subnet = format!("{vnet_path}/subnets/second");
    let r = emu
        .put(
            &subnet,
            NET,
            json!({"properties": {"addressPrefix": "10.0.1.0/24", "networkSecurityGroup": {"id": nsg}}}),
        )
        .await;
    assert_invalid_reference(&r, &nsg, &subnet);
    assert_eq!(emu.get(&subnet, NET).await.status, StatusCode::NOT_FOUND);
    let ok = emu
        .put(
            &subnet,
            NET,
            json!({"properties": {"addressPrefix": "10.0.1.0/24", "networkSecurityGroup": {"id": east}}}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.body);
}

#[tokio::test]
async fn nics_must_name_an_existing_subnet_nsg_and_public_ip() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let nic_path = net("rg", "networkInterfaces/n");
    let missing_subnet = net("rg", "virtualNetworks/vnet/subnets/default");
    let r = nic(&emu, "rg", "n", &missing_subnet).await;
    assert_invalid_reference(&r, &missing_subnet, &nic_path);

    // The VNet exists but not that subnet.
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    let other = net("rg", "virtualNetworks/vnet/subnets/other");
    let r = nic(&emu, "rg", "n", &other).await;
    assert_invalid_reference(&r, &other, &nic_path);

    // A subnet of a VNet in another region.
    let west_subnet = vnet(&emu, "rg", "west", "westus", None).await;
    let r = nic(&emu, "rg", "n", &west_subnet).await;
    assert_invalid_reference(&r, &west_subnet, &nic_path);

    // Public IP and NSG.
    let pip = net("rg", "publicIPAddresses/missing");
    let nsg = net("rg", "networkSecurityGroups/missing");
    let with = |extra: serde_json::Value| {
        let mut b = json!({"location": "eastus", "properties": {"ipConfigurations": [
            {"name": "c", "properties": {"subnet": {"id": subnet}}}
        ]}});
        if let Some(p) = extra.get("pip") {
            b["properties"]["ipConfigurations"][0]["properties"]["publicIPAddress"] =
                json!({"id": p});
        }
        if let Some(n) = extra.get("nsg") {
            b["properties"]["networkSecurityGroup"] = json!({"id": n});
        }
        b
    };
    let r = emu.put(&nic_path, NET, with(json!({"pip": pip}))).await;
    assert_invalid_reference(&r, &pip, &nic_path);
    let r = emu.put(&nic_path, NET, with(json!({"nsg": nsg}))).await;
    assert_invalid_reference(&r, &nsg, &nic_path);
    // A missing backend pool is refused too (Azure/acs-engine#3114).
    let pool = net("rg", "loadBalancers/lb/backendAddressPools/missing");
    let mut b = with(json!({}));
    b["properties"]["ipConfigurations"][0]["properties"]["loadBalancerBackendAddressPools"] =
        json!([{"id": pool}]);
    let r = emu.put(&nic_path, NET, b).await;
    assert_invalid_reference(&r, &pool, &nic_path);

    assert_eq!(emu.get(&nic_path, NET).await.status, StatusCode::NOT_FOUND);
    let ok = nic(&emu, "rg", "n", &subnet).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.body);
}

#[tokio::test]
async fn load_balancers_must_name_their_public_ip_and_their_own_frontends() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let lb = net("rg", "loadBalancers/lb");
    let pip = net("rg", "publicIPAddresses/pip");
    let body = |fe_name: &str, rule_fe: &str| {
        json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {
            "frontendIPConfigurations": [{"name": fe_name, "properties": {"publicIPAddress": {"id": pip}}}],
            "backendAddressPools": [{"name": "be"}],
            "outboundRules": [{"name": "out", "properties": {
                "protocol": "All", "allocatedOutboundPorts": 1024,
                "frontendIPConfigurations": [{"id": format!("{lb}/frontendIPConfigurations/{rule_fe}")}],
                "backendAddressPool": {"id": format!("{lb}/backendAddressPools/be")},
            }}],
        }})
    };
    // The public IP does not exist yet: the frontend is the referrer.
    let r = emu.put(&lb, NET, body("fe", "fe")).await;
    assert_invalid_reference(&r, &pip, &format!("{lb}/frontendIPConfigurations/fe"));

    let p = emu
        .put(&pip, NET, json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {"publicIPAllocationMethod": "Static"}}))
        .await;
    assert_eq!(p.status, StatusCode::CREATED);
    // A rule naming a frontend the body does not define: the rule is the referrer.
    let r = emu.put(&lb, NET, body("fe", "nope")).await;
    assert_invalid_reference(
        &r,
        &format!("{lb}/frontendIPConfigurations/nope"),
        &format!("{lb}/outboundRules/out"),
    );
    let ok = emu.put(&lb, NET, body("fe", "fe")).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.body);
    // Re-PUT of the same body: the balancer's own hold on its public IP is no conflict.
    let again = emu.put(&lb, NET, body("fe", "fe")).await;
    assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);

    // A second balancer cannot take the same public IP.
    let lb2 = net("rg", "loadBalancers/lb2");
    let r = emu
        .put(
            &lb2,
            NET,
            json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {
                "frontendIPConfigurations": [{"name": "fe2", "properties": {"publicIPAddress": {"id": pip}}}],
            }}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "PublicIPAddressInUse");
    assert_eq!(
        r.message(),
        format!(
            "Resource {lb2}/frontendIPConfigurations/fe2 is referencing public IP address {pip} \
             that is already allocated to resource {lb}/frontendIPConfigurations/fe."
        )
    );
}

#[tokio::test]
async fn a_private_dns_link_to_a_missing_vnet_is_the_private_dns_rps_bad_request() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let zone = net("rg", "privateDnsZones/example.internal");
    assert_eq!(
        emu.put(&zone, PDNS, json!({"location": "global"}))
            .await
            .status,
        StatusCode::ACCEPTED
    );
    let missing = net("rg", "virtualNetworks/ghost");
    let r = emu
        .put(
            &format!("{zone}/virtualNetworkLinks/l"),
            PDNS,
            json!({"location": "global", "properties": {"registrationEnabled": false, "virtualNetwork": {"id": missing}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "BadRequest");
    assert_eq!(
        r.message(),
        format!("Virtual network resource not found for '{missing}'")
    );
}
