//! A NodePool's worker as CAPZ creates it: a NIC on the cluster subnet, a VM from a
//! marketplace image whose OS disk becomes a managed disk, and their teardown.
//!
//! Expected answers come from Azure, not from the emulator's tables:
//! - VM PUT `201`, body `provisioningState: Creating`, `Azure-AsyncOperation` at
//!   `…/providers/Microsoft.Compute/locations/{loc}/operations/{id}?p=…&api-version=…` and no
//!   `Location`; the status resource `{"startTime","status","name"}` (+`endTime`); DELETE
//!   `202` with both headers, `Location` = status URL + `monitor=true`, answering `200` empty
//!   once done; `$expand=instanceView` statuses `ProvisioningState/succeeded`,
//!   `PowerState/running` — the recorded session VirtualMachineOperationsTests
//!   .canCreateVirtualMachine of Azure/azure-sdk-for-java (J5 of docs/reference/azure-latencies.md)
//!   and the `VirtualMachine_Create_WithSshAuthentication` example (ComputeRP/stable/2024-11-01).
//! - Disks: `managedBy` and the DiskRP examples (DiskRP/stable/2025-01-02); delete `202` at
//!   `…/DiskOperations/{id}?p=…` (azure-sdk-for-js compute recordings).
//! - Refusals: `NicInUse` (hashicorp/terraform-provider-azurerm#8105), `409
//!   OperationNotAllowed` "Disk … is attached to VM …" (AKS troubleshooting page,
//!   MicrosoftDocs/azure-docs), `FailedIdentityOperation` (Azure/azure-policy#1311).
//! - Versions: azure-mgmt-compute 39.0.0 sends `2026-04-01` for VMs and `2026-03-02` for
//!   disks; a compute version is refused for disks ("… API version '2021-07-01' for type
//!   'disks'").

use hypersaga_emulator_arm::LatencyModel;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::*;

/// azure-mgmt-compute 39.0.0's default for virtual machines.
pub(crate) const VM_API: &str = "2026-04-01";
/// azure-mgmt-compute 39.0.0's default for disks.
pub(crate) const DISK_API: &str = "2026-03-02";

pub(crate) fn compute(rg: &str, rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Compute/{rest}")
}

/// A VNet `10.0.0.0/16` with subnet `default` (`10.0.0.0/24`), attached to `nsg` when given;
/// returns the subnet id.
pub(crate) async fn vnet(
    emu: &TestEmu,
    rg: &str,
    name: &str,
    location: &str,
    nsg: Option<&str>,
) -> String {
    let mut subnet = json!({"name": "default", "properties": {"addressPrefix": "10.0.0.0/24"}});
    if let Some(nsg) = nsg {
        subnet["properties"]["networkSecurityGroup"] = json!({ "id": nsg });
    }
    let path = net(rg, &format!("virtualNetworks/{name}"));
    let r = emu
        .put(
            &path,
            NET,
            json!({"location": location, "properties": {
                "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [subnet],
            }}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    format!("{path}/subnets/default")
}

/// A NIC with one dynamic IP configuration on `subnet`.
pub(crate) async fn nic(emu: &TestEmu, rg: &str, name: &str, subnet: &str) -> Resp {
    emu.put(
        &net(rg, &format!("networkInterfaces/{name}")),
        NET,
        json!({"location": "eastus", "properties": {"ipConfigurations": [
            {"name": "pipConfig", "properties": {"subnet": {"id": subnet}}}
        ]}}),
    )
    .await
}

/// The VM body CAPZ sends for a HyperShift worker (NodePool `vmSize`, marketplace image, OS
/// disk `sizeGiB`/`diskStorageAccountType`, one NIC, ignition as `customData`).
pub(crate) fn vm_body(name: &str, nic: &str, os_delete: &str) -> Value {
    json!({
        "location": "eastus",
        "zones": ["1"],
        "properties": {
            "hardwareProfile": {"vmSize": "Standard_D4s_v5"},
            "storageProfile": {
                "imageReference": {"publisher": "azureopenshift", "offer": "aro4", "sku": "419-v2", "version": "419.6.20250523"},
                "osDisk": {
                    "osType": "Linux",
                    "createOption": "FromImage",
                    "caching": "ReadWrite",
                    "diskSizeGB": 120,
                    "managedDisk": {"storageAccountType": "Premium_LRS"},
                    "deleteOption": os_delete,
                },
            },
            "osProfile": {
                "computerName": name,
                "adminUsername": "capi",
                "customData": "eyJpZ25pdGlvbiI6e319",
                "linuxConfiguration": {
                    "disablePasswordAuthentication": true,
                    "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-rsa AAAAB3Nza"}]},
                },
            },
            "networkProfile": {"networkInterfaces": [{"id": nic, "properties": {"primary": true}}]},
        },
    })
}

#[tokio::test]
async fn a_worker_vm_with_its_nic_and_os_disk_lives_and_dies_together() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;

    let nic_path = net("rg", "networkInterfaces/worker-0-nic");
    let n = nic(&emu, "rg", "worker-0-nic", &subnet).await;
    assert_eq!(n.status, StatusCode::CREATED, "{:?}", n.body);
    let nic_id = n.body["id"].as_str().expect("nic id").to_owned();
    assert_eq!(nic_id, nic_path);
    let cfg = &n.body["properties"]["ipConfigurations"][0];
    assert_eq!(cfg["id"], format!("{nic_id}/ipConfigurations/pipConfig"));
    // The first address Azure hands out in a subnet is .4 (J5: 10.0.0.4).
    assert_eq!(cfg["properties"]["privateIPAddress"], "10.0.0.4");
    assert_eq!(cfg["properties"]["privateIPAllocationMethod"], "Dynamic");
    assert_eq!(cfg["properties"]["primary"], true);

    let vm_path = compute("rg", "virtualMachines/worker-0");
    let put = emu
        .put(&vm_path, VM_API, vm_body("worker-0", &nic_id, "Delete"))
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    assert_eq!(put.body["type"], "Microsoft.Compute/virtualMachines");
    assert_eq!(put.body["properties"]["provisioningState"], "Creating");
    assert!(put.body["properties"]["vmId"].is_string());
    // customData is write-only.
    assert!(
        put.body["properties"]["osProfile"]
            .get("customData")
            .is_none()
    );
    assert_eq!(put.header("location"), None);
    let aao = put.header("azure-asyncoperation").expect("aao").to_owned();
    assert!(
        aao.starts_with(&format!(
            "{}/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus/operations/",
            emu.base
        )),
        "{aao}"
    );
    assert!(aao.contains("?p=") && aao.ends_with(&format!("&api-version={VM_API}")));

    let op = emu.call(Method::GET, &aao, None).await;
    assert_eq!(op.status, StatusCode::OK);
    assert_eq!(op.body["status"], "Succeeded");
    assert!(op.body.get("id").is_none(), "{:?}", op.body);
    assert!(op.body["name"].is_string() && op.body["endTime"].is_string());

    let vm = emu.get(&vm_path, VM_API).await;
    assert_eq!(vm.status, StatusCode::OK);
    assert_eq!(vm.body["properties"]["provisioningState"], "Succeeded");
    let os = &vm.body["properties"]["storageProfile"]["osDisk"];
    let disk_name = os["name"].as_str().expect("os disk name").to_owned();
    assert!(disk_name.starts_with("worker-0_OsDisk_1_"), "{disk_name}");
    let disk_path = compute("rg", &format!("disks/{disk_name}"));
    assert_eq!(os["managedDisk"]["id"], disk_path);

    // The implicit OS disk is a disk resource, attached to the VM.
    let disk = emu.get(&disk_path, DISK_API).await;
    assert_eq!(disk.status, StatusCode::OK, "{:?}", disk.body);
    assert_eq!(disk.body["managedBy"], vm_path);
    assert_eq!(disk.body["properties"]["diskState"], "Attached");
    assert_eq!(disk.body["properties"]["diskSizeGB"], 120);
    assert_eq!(disk.body["sku"]["name"], "Premium_LRS");
    assert_eq!(disk.body["zones"], json!(["1"]));
    assert_eq!(
        disk.body["properties"]["creationData"]["createOption"],
        "FromImage"
    );

    // The NIC shows its VM.
    let n = emu.get(&nic_path, NET).await;
    assert_eq!(n.body["properties"]["virtualMachine"]["id"], vm_path);

    let view = emu
        .call(
            Method::GET,
            &format!("{vm_path}?$expand=instanceView&api-version={VM_API}"),
            None,
        )
        .await;
    let codes: Vec<&str> = view.body["properties"]["instanceView"]["statuses"]
        .as_array()
        .expect("statuses")
        .iter()
        .filter_map(|s| s["code"].as_str())
        .collect();
    assert_eq!(codes, ["ProvisioningState/succeeded", "PowerState/running"]);

    // Neither the NIC nor the disk can go while the VM holds them.
    let d = emu.delete(&nic_path, NET).await;
    assert_eq!(d.status, StatusCode::BAD_REQUEST);
    assert_eq!(d.code(), "NicInUse");
    assert_eq!(
        d.message(),
        format!(
            "Network Interface {nic_id} is used by existing resource {vm_path}. In order to \
             delete the network interface, it must be dissociated from the resource. To learn \
             more, see aka.ms/deletenic."
        )
    );
    let d = emu.delete(&disk_path, DISK_API).await;
    assert_eq!(d.status, StatusCode::CONFLICT);
    assert_eq!(d.code(), "OperationNotAllowed");
    assert_eq!(
        d.message(),
        format!("Disk {disk_name} is attached to VM {vm_path}.")
    );

    // VM delete: 202 with both URLs; the OS disk (deleteOption Delete) goes with it, the NIC
    // (default Detach) stays and can then be deleted.
    let del = emu.delete(&vm_path, VM_API).await;
    assert_eq!(del.status, StatusCode::ACCEPTED);
    let loc = del.header("location").expect("location").to_owned();
    let aao = del.header("azure-asyncoperation").expect("aao").to_owned();
    assert!(loc.contains("&monitor=true&"), "{loc}");
    assert_eq!(loc.replace("&monitor=true", ""), aao);
    let fin = emu.call(Method::GET, &loc, None).await;
    assert_eq!(fin.status, StatusCode::OK);
    assert_eq!(fin.body, Value::Null);
    assert_eq!(emu.get(&vm_path, VM_API).await.code(), "ResourceNotFound");
    assert_eq!(
        emu.get(&disk_path, DISK_API).await.status,
        StatusCode::NOT_FOUND
    );
    let n = emu.get(&nic_path, NET).await;
    assert_eq!(n.status, StatusCode::OK);
    assert!(n.body["properties"].get("virtualMachine").is_none());
    assert_eq!(
        emu.delete(&nic_path, NET).await.status,
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn a_detached_os_disk_outlives_its_vm_and_deletes_through_disk_operations() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    let nic_id = nic(&emu, "rg", "n", &subnet).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let vm_path = compute("rg", "virtualMachines/vm");
    let mut body = vm_body("vm", &nic_id, "Detach");
    body["properties"]["networkProfile"]["networkInterfaces"][0]["properties"]["deleteOption"] =
        json!("Delete");
    let put = emu.put(&vm_path, VM_API, body).await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    let disk_path = put.body["properties"]["storageProfile"]["osDisk"]["managedDisk"]["id"]
        .as_str()
        .expect("disk id")
        .to_owned();
    assert_eq!(
        emu.delete(&vm_path, VM_API).await.status,
        StatusCode::ACCEPTED
    );
    // The NIC marked Delete went with the VM; the Detach disk stayed, unattached.
    assert_eq!(emu.get(&nic_id, NET).await.status, StatusCode::NOT_FOUND);
    let disk = emu.get(&disk_path, DISK_API).await;
    assert_eq!(disk.status, StatusCode::OK);
    assert_eq!(disk.body["properties"]["diskState"], "Unattached");
    assert!(disk.body.get("managedBy").is_none());

    let del = emu.delete(&disk_path, DISK_API).await;
    assert_eq!(del.status, StatusCode::ACCEPTED);
    let loc = del.header("location").expect("location");
    assert!(
        loc.starts_with(&format!(
            "{}/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus/DiskOperations/",
            emu.base
        )),
        "{loc}"
    );
    assert!(loc.contains("&monitor=true&api-version="), "{loc}");
    assert_eq!(
        emu.call(Method::GET, loc, None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        emu.get(&disk_path, DISK_API).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_standalone_disk_put_is_accepted_with_its_body() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let path = compute("rg", "disks/data");
    let put = emu
        .put(
            &path,
            DISK_API,
            json!({"location": "eastus", "sku": {"name": "Standard_LRS"}, "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 16}}),
        )
        .await;
    // DiskRP: 202 with the disk (`Updating`), Azure-AsyncOperation and Location.
    assert_eq!(put.status, StatusCode::ACCEPTED);
    assert_eq!(put.body["properties"]["provisioningState"], "Updating");
    assert!(put.header("azure-asyncoperation").is_some());
    let loc = put.header("location").expect("location").to_owned();
    let fin = emu.call(Method::GET, &loc, None).await;
    assert_eq!(fin.status, StatusCode::OK);
    assert_eq!(fin.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(fin.body["properties"]["diskState"], "Unattached");
}

#[tokio::test]
async fn a_vm_is_creating_until_its_operation_ends() {
    let mut cfg = config();
    cfg.latency = LatencyModel::Scaled(0.02); // 45 s → 0.9 s
    let emu = spawn(cfg).await;
    emu.rg("rg").await;
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    let n = nic(&emu, "rg", "n", &subnet).await;
    let nic_id = n.body["id"].as_str().expect("id").to_owned();
    let vm_path = compute("rg", "virtualMachines/vm");
    let put = emu
        .put(&vm_path, VM_API, vm_body("vm", &nic_id, "Delete"))
        .await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    // Compute advertises no Retry-After on the PUT.
    assert_eq!(put.header("retry-after"), None);
    let aao = put.header("azure-asyncoperation").expect("aao").to_owned();
    let op = emu.call(Method::GET, &aao, None).await;
    assert_eq!(op.body["status"], "InProgress");
    assert!(op.body.get("endTime").is_none());
    let view = emu
        .call(
            Method::GET,
            &format!("{vm_path}?$expand=instanceView&api-version={VM_API}"),
            None,
        )
        .await;
    assert_eq!(view.body["properties"]["provisioningState"], "Creating");
    assert_eq!(
        view.body["properties"]["instanceView"]["statuses"][0]["code"],
        "ProvisioningState/creating"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    assert_eq!(
        emu.call(Method::GET, &aao, None).await.body["status"],
        "Succeeded"
    );
}

#[tokio::test]
async fn a_vm_put_naming_what_does_not_exist_is_refused() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let vm_path = compute("rg", "virtualMachines/vm");
    let missing_nic = net("rg", "networkInterfaces/ghost");
    let r = emu
        .put(&vm_path, VM_API, vm_body("vm", &missing_nic, "Delete"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "InvalidResourceReference");
    assert_eq!(
        r.message(),
        format!(
            "Resource {missing_nic} referenced by resource {vm_path} was not found. Please make \
             sure that the referenced resource exists, and that both resources are in the same \
             region."
        )
    );
    // Nothing was created, not even the OS disk.
    assert!(
        emu.admin
            .resources(Some(SUB))
            .await
            .expect("dump")
            .iter()
            .all(|r| r["type"] == "Microsoft.Resources/resourceGroups")
    );

    // A NIC in another region cannot be attached.
    let west = emu
        .put(
            &net("rg", "virtualNetworks/west"),
            NET,
            json!({"location": "westus", "properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0/16"]}, "subnets": [{"name": "s", "properties": {"addressPrefix": "10.1.0.0/24"}}]}}),
        )
        .await;
    assert_eq!(west.status, StatusCode::CREATED);
    let west_nic = emu
        .put(
            &net("rg", "networkInterfaces/west-nic"),
            NET,
            json!({"location": "westus", "properties": {"ipConfigurations": [{"name": "c", "properties": {"subnet": {"id": net("rg", "virtualNetworks/west/subnets/s")}}}]}}),
        )
        .await;
    assert_eq!(west_nic.status, StatusCode::CREATED, "{:?}", west_nic.body);
    let west_nic_id = net("rg", "networkInterfaces/west-nic");
    let r = emu
        .put(&vm_path, VM_API, vm_body("vm", &west_nic_id, "Delete"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "InvalidResourceReference");
    assert!(r.message().starts_with(&format!(
        "Resource {west_nic_id} referenced by resource {vm_path} was not found."
    )));

    // A user-assigned identity that does not exist.
    let subnet = vnet(&emu, "rg", "vnet", "eastus", None).await;
    let nic_id = nic(&emu, "rg", "n", &subnet).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mi = msi("rg", "userAssignedIdentities/acr-pull");
    let mut body = vm_body("vm", &nic_id, "Delete");
    body["identity"] =
        json!({"type": "UserAssigned", "userAssignedIdentities": { mi.clone(): {} }});
    let r = emu.put(&vm_path, VM_API, body.clone()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "FailedIdentityOperation");
    assert_eq!(
        r.message(),
        format!(
            "Identity operation for resource '{vm_path}' failed with error 'Failed to perform \
             resource identity operation. Status: 'BadRequest'. Response: \
             '{{\"error\":{{\"code\":\"BadRequest\",\"message\":\"Resource '{mi}' was not \
             found.\"}}}}'.'."
        )
    );
    // Once it exists, the same body is accepted.
    let created = emu.put(&mi, MSI, json!({"location": "eastus"})).await;
    assert_eq!(created.status, StatusCode::CREATED);
    let ok = emu.put(&vm_path, VM_API, body).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.body);
    assert!(
        ok.body["identity"]["userAssignedIdentities"]
            .get(&mi)
            .is_some()
    );

    // A NIC can serve one VM only.
    let other = emu
        .put(
            &compute("rg", "virtualMachines/other"),
            VM_API,
            vm_body("other", &nic_id, "Delete"),
        )
        .await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST);
    assert_eq!(other.code(), "NicInUse");
    assert!(
        other
            .message()
            .contains(&format!("is used by existing resource {vm_path}."))
    );
}

#[tokio::test]
async fn compute_types_take_the_versions_of_their_own_resource_providers() {
    let emu = spawn(config()).await;
    emu.rg("rg").await;
    let disk = compute("rg", "disks/d");
    let body = json!({"location": "eastus", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 8}});
    // A compute version is not a disk version.
    let r = emu.put(&disk, "2021-07-01", body.clone()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    assert!(
        r.message().starts_with(
            "No registered resource provider found for location 'eastus' and API version \
             '2021-07-01' for type 'disks'."
        ),
        "{}",
        r.message()
    );
    for v in ["2023-10-02", DISK_API] {
        let put = emu.put(&disk, v, body.clone()).await;
        assert!(put.status.is_success(), "{v}: {:?}", put.body);
    }
    // HyperShift's destroy deletes VMs with 2024-03-01 (docs/reference/hypershift-azure.md §1.5).
    for v in ["2024-03-01", "2024-11-01", VM_API] {
        let get = emu.get(&compute("rg", "virtualMachines/none"), v).await;
        assert_eq!(get.code(), "ResourceNotFound", "{v}");
    }
    let r = emu
        .get(&compute("rg", "virtualMachines/none"), "2024-03-02")
        .await;
    assert_eq!(r.code(), "NoRegisteredProviderFound");
    // NICs are a network type and take the network versions.
    let r = emu
        .get(&net("rg", "networkInterfaces/none"), "2026-03-01")
        .await;
    assert_eq!(r.code(), "ResourceNotFound");
}
