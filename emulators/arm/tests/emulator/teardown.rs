//! Deleting what something else still uses: direct DELETEs refused at once, resource groups
//! whose operation fails, and a whole cluster group that empties cleanly.
//!
//! Expected answers:
//! - `InUseNetworkSecurityGroupCannotBeDeleted` (Azure/sap-hana#211),
//!   `InUseSubnetCannotBeDeleted` for a subnet, a VNet, or a VNet PUT dropping the subnet
//!   (kubernetes-sigs/cluster-api-provider-azure#172, hashicorp/packer-plugin-azure#273,
//!   Azure-Samples/jmeter-aci-terraform#69), `PublicIPAddressCannotBeDeleted`
//!   (oap-project/cloudtik#158, microsoft/AzureTRE#4355), all `400` with `"details": []`.
//! - A resource group some of whose resources are held from outside: the DELETE is accepted,
//!   its `Location` answers `409 ResourceGroupDeletionBlocked` ("Deletion of resource group
//!   '…' failed as resources with identifiers '…' could not be deleted. The provisioning state
//!   of the resource group will be rolled back. …"), each detail the refused resource's id as
//!   `target` and the resource provider's error body as `message` (Azure/azure-sdk-for-go#2645,
//!   Azure/bicep-registry-modules#1607); the rest of the group is deleted (the "91 → 6"
//!   resources report of a public azd deployment guide).
//! - A group holding VMs, NICs, disks, VNet, NSG, public IP and load balancer deletes cleanly:
//!   ARM orders the deletes (learn.microsoft.com "Azure Resource Manager resource group and
//!   resource deletion").

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::*;
use crate::workers::{DISK_API, VM_API, compute, nic, vm_body, vnet};

#[track_caller]
fn assert_refused(r: &Resp, code: &str, message: &str) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.code(), code);
    assert_eq!(r.message(), message);
    assert_eq!(r.body["error"]["details"], json!([]));
}

#[tokio::test]
async fn resources_in_use_refuse_a_direct_delete() {
    let emu = spawn(config()).await;
    emu.rg("nsg-rg").await;
    emu.rg("vnet-rg").await;
    let nsg = net("nsg-rg", "networkSecurityGroups/nsg");
    assert_eq!(
        emu.put(&nsg, NET, json!({"location": "eastus"}))
            .await
            .status,
        StatusCode::CREATED
    );
    let subnet = vnet(&emu, "vnet-rg", "vnet", "eastus", Some(&nsg)).await;
    let vnet_path = net("vnet-rg", "virtualNetworks/vnet");

    // The NSG, held by a subnet in another group.
    let r = emu.delete(&nsg, NET).await;
    assert_refused(
        &r,
        "InUseNetworkSecurityGroupCannotBeDeleted",
        &format!(
            "Network security group {nsg} cannot be deleted because it is in use by the \
             following resources: {subnet}. In order to delete the Network security group, \
             remove the association with the resource(s). To learn how to do this, see \
             aka.ms/deletensg."
        ),
    );
    // The NSG lists the subnet it serves.
    assert_eq!(
        emu.get(&nsg, NET).await.body["properties"]["subnets"],
        json!([{ "id": subnet }])
    );

    // A subnet with a NIC in it: as a subnet, as its VNet, or dropped from a VNet PUT.
    let n = nic(&emu, "vnet-rg", "n", &subnet).await;
    assert_eq!(n.status, StatusCode::CREATED);
    let ipconfig = format!(
        "{}/ipConfigurations/pipConfig",
        net("vnet-rg", "networkInterfaces/n")
    );
    let in_use = format!(
        "Subnet default is in use by {ipconfig} and cannot be deleted. In order to delete the \
         subnet, delete all the resources within the subnet. See aka.ms/deletesubnet."
    );
    assert_refused(
        &emu.delete(&subnet, NET).await,
        "InUseSubnetCannotBeDeleted",
        &in_use,
    );
    assert_refused(
        &emu.delete(&vnet_path, NET).await,
        "InUseSubnetCannotBeDeleted",
        &in_use,
    );
    let dropped = emu
        .put(
            &vnet_path,
            NET,
            json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}, "subnets": []}}),
        )
        .await;
    assert_refused(&dropped, "InUseSubnetCannotBeDeleted", &in_use);

    // A public IP held by a load balancer frontend.
    let pip = net("vnet-rg", "publicIPAddresses/pip");
    assert_eq!(
        emu.put(
            &pip,
            NET,
            json!({"location": "eastus", "sku": {"name": "Standard"}})
        )
        .await
        .status,
        StatusCode::CREATED
    );
    let lb = net("vnet-rg", "loadBalancers/lb");
    let l = emu
        .put(
            &lb,
            NET,
            json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {
                "frontendIPConfigurations": [{"name": "fe", "properties": {"publicIPAddress": {"id": pip}}}],
            }}),
        )
        .await;
    assert_eq!(l.status, StatusCode::CREATED, "{:?}", l.body);
    assert_refused(
        &emu.delete(&pip, NET).await,
        "PublicIPAddressCannotBeDeleted",
        &format!(
            "Public IP address {pip} can not be deleted since it is still allocated to resource \
             {lb}/frontendIPConfigurations/fe. In order to delete the public IP, disassociate/\
             detach the Public IP address from the resource.  To learn how to do this, see \
             aka.ms/deletepublicip."
        ),
    );

    // Users gone, every delete goes through.
    for path in [
        &lb,
        &pip,
        &net("vnet-rg", "networkInterfaces/n"),
        &vnet_path,
        &nsg,
    ] {
        assert_eq!(
            emu.delete(path, NET).await.status,
            StatusCode::ACCEPTED,
            "{path}"
        );
    }
}

/// Polls a resource group delete's `Location` URL once (latency zero: it is done).
async fn finish(emu: &TestEmu, rg_path: &str) -> Resp {
    let del = emu.delete(rg_path, RES).await;
    assert_eq!(del.status, StatusCode::ACCEPTED, "{:?}", del.body);
    let loc = del.header("location").expect("location").to_owned();
    emu.call(Method::GET, &loc, None).await
}

#[tokio::test]
async fn a_group_whose_nsg_another_group_still_uses_is_not_deleted() {
    let emu = spawn(config()).await;
    let nsg_rg = emu.rg("nsg-rg").await;
    let vnet_rg = emu.rg("vnet-rg").await;
    let nsg = net("nsg-rg", "networkSecurityGroups/nsg");
    emu.put(&nsg, NET, json!({"location": "eastus"})).await;
    // Something else in the NSG group, which nothing holds.
    let mi = msi("nsg-rg", "userAssignedIdentities/spare");
    emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    let subnet = vnet(&emu, "vnet-rg", "vnet", "eastus", Some(&nsg)).await;

    // The NSG group first: the operation fails; what could go went.
    let fin = finish(&emu, &nsg_rg).await;
    assert_eq!(fin.status, StatusCode::CONFLICT, "{:?}", fin.body);
    assert_eq!(fin.code(), "ResourceGroupDeletionBlocked");
    let message = fin.message();
    assert!(
        message.starts_with(
            "Deletion of resource group 'nsg-rg' failed as resources with identifiers \
             'Microsoft.Network/networkSecurityGroups/nsg' could not be deleted. The \
             provisioning state of the resource group will be rolled back. The tracking Id is '"
        ),
        "{message}"
    );
    assert!(message.ends_with("'. Please check audit logs for more details."));
    let details = fin.body["error"]["details"].as_array().expect("details");
    assert_eq!(details.len(), 1);
    assert_eq!(details[0]["target"], nsg);
    let inner: Value =
        serde_json::from_str(details[0]["message"].as_str().expect("message")).expect("json");
    assert_eq!(
        inner["error"]["code"],
        "InUseNetworkSecurityGroupCannotBeDeleted"
    );
    assert!(
        inner["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("in use by the following resources: {subnet}.")))
    );

    let rg = emu.get(&nsg_rg, RES).await;
    assert_eq!(rg.status, StatusCode::OK);
    assert_eq!(rg.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(emu.get(&nsg, NET).await.status, StatusCode::OK);
    assert_eq!(emu.get(&mi, MSI).await.status, StatusCode::NOT_FOUND);

    // In HyperShift's order (docs/reference/hypershift-azure.md §1.5): the VNet group, then the NSG
    // group.
    assert_eq!(finish(&emu, &vnet_rg).await.status, StatusCode::OK);
    assert_eq!(finish(&emu, &nsg_rg).await.status, StatusCode::OK);
    assert!(
        emu.admin
            .resources(Some(SUB))
            .await
            .expect("dump")
            .is_empty()
    );
}

#[tokio::test]
async fn a_group_whose_vnet_serves_nics_elsewhere_is_not_deleted() {
    let emu = spawn(config()).await;
    let vnet_rg = emu.rg("vnet-rg").await;
    emu.rg("managed-rg").await;
    let subnet = vnet(&emu, "vnet-rg", "vnet", "eastus", None).await;
    assert_eq!(
        nic(&emu, "managed-rg", "n", &subnet).await.status,
        StatusCode::CREATED
    );
    let fin = finish(&emu, &vnet_rg).await;
    assert_eq!(fin.status, StatusCode::CONFLICT);
    assert_eq!(fin.code(), "ResourceGroupDeletionBlocked");
    let detail = &fin.body["error"]["details"][0];
    assert_eq!(detail["target"], net("vnet-rg", "virtualNetworks/vnet"));
    let inner: Value =
        serde_json::from_str(detail["message"].as_str().expect("message")).expect("json");
    assert_eq!(inner["error"]["code"], "InUseSubnetCannotBeDeleted");
}

#[tokio::test]
async fn a_cluster_group_with_worker_vms_deletes_cleanly() {
    let emu = spawn(config()).await;
    let rg = emu.rg("managed").await;
    let nsg = net("managed", "networkSecurityGroups/nsg");
    emu.put(&nsg, NET, json!({"location": "eastus"})).await;
    let subnet = vnet(&emu, "managed", "vnet", "eastus", Some(&nsg)).await;
    let pip = net("managed", "publicIPAddresses/pip");
    emu.put(&pip, NET, json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {"publicIPAllocationMethod": "Static"}})).await;
    let lb = net("managed", "loadBalancers/lb");
    let l = emu
        .put(
            &lb,
            NET,
            json!({"location": "eastus", "sku": {"name": "Standard"}, "properties": {
                "frontendIPConfigurations": [{"name": "fe", "properties": {"publicIPAddress": {"id": pip}}}],
                "backendAddressPools": [{"name": "be"}],
                "outboundRules": [{"name": "out", "properties": {
                    "protocol": "All",
                    "frontendIPConfigurations": [{"id": format!("{lb}/frontendIPConfigurations/fe")}],
                    "backendAddressPool": {"id": format!("{lb}/backendAddressPools/be")},
                }}],
            }}),
        )
        .await;
    assert_eq!(l.status, StatusCode::CREATED, "{:?}", l.body);
    let mi = msi("managed", "userAssignedIdentities/acr");
    emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    for i in 0..2 {
        let name = format!("worker-{i}");
        let nic_path = net("managed", &format!("networkInterfaces/{name}-nic"));
        let n = emu
            .put(
                &nic_path,
                NET,
                json!({"location": "eastus", "properties": {"ipConfigurations": [{"name": "c", "properties": {
                    "subnet": {"id": subnet},
                    "loadBalancerBackendAddressPools": [{"id": format!("{lb}/backendAddressPools/be")}],
                }}]}}),
            )
            .await;
        assert_eq!(n.status, StatusCode::CREATED, "{:?}", n.body);
        assert_eq!(
            n.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"],
            format!("10.0.0.{}", 4 + i)
        );
        // Default delete options: the OS disk and the NIC outlive the VM unless the group goes.
        let mut body = vm_body(&name, &nic_path, "Detach");
        body["identity"] =
            json!({"type": "UserAssigned", "userAssignedIdentities": { mi.clone(): {} }});
        let vm = emu
            .put(
                &compute("managed", &format!("virtualMachines/{name}")),
                VM_API,
                body,
            )
            .await;
        assert_eq!(vm.status, StatusCode::CREATED, "{:?}", vm.body);
    }
    let before = emu.admin.resources(Some(SUB)).await.expect("dump");
    let disks = before
        .iter()
        .filter(|r| r["type"] == "Microsoft.Compute/disks")
        .count();
    assert_eq!(disks, 2);
    // The disks show in the group's inventory, attached.
    let inv = emu
        .call(
            Method::GET,
            &format!(
                "{rg}/resources?api-version={RES}&$filter=resourceType eq 'Microsoft.Compute/disks'"
            ),
            None,
        )
        .await;
    let listed = inv.body["value"].as_array().expect("value");
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|d| {
        d["managedBy"]
            .as_str()
            .is_some_and(|m| m.contains("/virtualMachines/worker-"))
    }));
    assert_eq!(
        emu.get(
            &compute(
                "managed",
                &format!("disks/{}", listed[0]["name"].as_str().unwrap_or_default())
            ),
            DISK_API
        )
        .await
        .body["properties"]["diskState"],
        "Attached"
    );

    let fin = finish(&emu, &rg).await;
    assert_eq!(fin.status, StatusCode::OK, "{:?}", fin.body);
    assert!(
        emu.admin
            .resources(Some(SUB))
            .await
            .expect("dump")
            .is_empty()
    );
    assert_eq!(emu.get(&rg, RES).await.code(), "ResourceGroupNotFound");
}
