//! One worker's Azure resources as CAPZ makes and removes them for a HyperShift NodePool
//! (kubernetes-sigs/cluster-api-provider-azure, the v1.26 HyperShift vendors).
//!
//! Before any service, CAPZ looks the NodePool's `vmSize` up in the region's Resource SKUs
//! (`MachineScope.InitMachineCache`): a size the list lacks is a terminal configuration error
//! (the AzureMachine's `failureReason: InvalidConfiguration`, no condition, never retried), so
//! ARM never sees a VM of that size; a list that cannot be read is a reconcile error CAPZ only
//! logs, and it tries again. The SKU also says whether the NIC gets accelerated networking.
//!
//! Making (`azureMachineService.reconcile`, services in order): the NIC `<machine>-nic`
//! (`GenerateNICName`) with one dynamic `pipConfig` on the cluster subnet, then the VM named
//! as the machine, its OS disk `<machine>_OSDisk` (`GenerateOSDiskName`) made `FromImage`.
//! Each service first GETs its resource (`async.CreateOrUpdateResource`): one that exists is
//! adopted as it is, so a retry after a partial failure makes nothing twice. CAPZ sets no
//! `deleteOption`, so the NIC and disk would outlive a VM deleted by anyone else; removal
//! (`azureMachineService.delete`, services in reverse) deletes the VM, then the OS disk, then
//! the NIC, each treating "not found" as done.
//!
//! A failure is worded as CAPZ writes it into the AzureMachine's condition (`UpdatePutStatus`:
//! `<service> failed to create or update. err: <error>`; `UpdateDeleteStatus`: `<service>
//! failed to delete. err: <error>`), the error wrapped as `async.Service` wraps it.
//!
//! Not emulated: the `SKUNotFound` Warning event CAPZ records on the AzureMachine (the
//! emulator keeps no AzureMachines), CAPZ's other checks of the SKU (at least 2 vCPUs and
//! 2 GiB, which every size the ARM emulator offers has; ephemeral OS disks, which HyperShift's
//! NodePools here do not ask for) and the `CAPZ.Linux.Bootstrapping` VM extension, which the
//! ARM emulator does not serve.

use serde_json::{Value, json};

use super::arm_client::{CallError, Session};

/// `armnetwork/v4` v4.3.0 (the spec's 2023-05-01), CAPZ's network client.
pub const NETWORK_API: &str = "2023-05-01";
/// `armcompute/v5` v5.7.0, CAPZ's (and HyperShift's) compute client: VMs …
pub const COMPUTE_API: &str = "2024-03-01";
/// … and disks.
pub const DISK_API: &str = "2023-10-02";

/// CAPZ's default admin user (`azure.DefaultUserName`).
const ADMIN_USER: &str = "capi";

/// Where and what a NodePool's workers are, from the HostedCluster and the NodePool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub subscription: String,
    /// The managed resource group (`HostedCluster.spec.platform.azure.resourceGroup`).
    pub resource_group: String,
    pub location: String,
    /// The subnet the NIC joins: the HostedCluster's VNet, the NodePool's subnet name.
    pub subnet_id: String,
    /// The CAPI cluster name (the infra id), in CAPZ's ownership tag.
    pub cluster: String,
    pub vm_size: String,
    pub image: Value,
    pub os_disk_gib: i64,
    pub os_disk_type: String,
    pub zone: Option<String>,
}

/// How a make or removal ended badly: the AzureMachine condition's reason and message (for a
/// terminal error, its `failureReason` and `failureMessage`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub reason: &'static str,
    pub message: String,
}

/// Why making a worker stopped, and where CAPZ says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// A service failed: written into the AzureMachine's `VMRunning` condition; requeued.
    Condition(Failure),
    /// CAPZ's terminal refusal of the machine's configuration: the AzureMachine's
    /// `failureReason`/`failureMessage`; never tried again.
    Terminal(Failure),
    /// A reconcile error before any service ran, which CAPZ only logs; requeued.
    Logged(String),
}

impl From<Failure> for CreateError {
    fn from(f: Failure) -> Self {
        Self::Condition(f)
    }
}

/// CAPZ's `FailureReason` for a configuration Azure cannot serve (`azure.InvalidConfiguration`).
pub const INVALID_CONFIGURATION: &str = "InvalidConfiguration";

/// The SKU category CAPZ looks a machine's size up in (`resourceskus.VirtualMachines`).
const VIRTUAL_MACHINES_CATEGORY: &str = "virtualMachines";

/// A VM that runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provisioned {
    /// `azure:///subscriptions/…/virtualMachines/<name>`, the Machine's `providerID`.
    pub provider_id: String,
    /// The NIC's private address, the Machine's `InternalIP`.
    pub address: Option<String>,
}

/// CAPZ's service names, as its messages print them.
pub const INTERFACES: &str = "interfaces";
pub const VIRTUAL_MACHINE: &str = "virtualmachine";
pub const DISKS: &str = "disks";

impl Template {
    fn group_id(&self) -> String {
        format!(
            "/subscriptions/{}/resourceGroups/{}",
            self.subscription, self.resource_group
        )
    }

    pub fn nic_name(machine: &str) -> String {
        format!("{machine}-nic")
    }

    pub fn os_disk_name(machine: &str) -> String {
        format!("{machine}_OSDisk")
    }

    pub fn nic_id(&self, machine: &str) -> String {
        format!(
            "{}/providers/Microsoft.Network/networkInterfaces/{}",
            self.group_id(),
            Self::nic_name(machine)
        )
    }

    pub fn vm_id(&self, machine: &str) -> String {
        format!(
            "{}/providers/Microsoft.Compute/virtualMachines/{machine}",
            self.group_id()
        )
    }

    pub fn os_disk_id(&self, machine: &str) -> String {
        format!(
            "{}/providers/Microsoft.Compute/disks/{}",
            self.group_id(),
            Self::os_disk_name(machine)
        )
    }

    /// CAPZ's tags (`infrav1.Build`): owned by the cluster, named, and for a VM its role.
    fn tags(&self, name: &str, role: Option<&str>) -> Value {
        let mut tags = json!({
            format!("sigs.k8s.io_cluster-api-provider-azure_cluster_{}", self.cluster): "owned",
            "Name": name,
        });
        if let Some(role) = role {
            tags["sigs.k8s.io_cluster-api-provider-azure_role"] = json!(role);
        }
        tags
    }

    /// `networkinterfaces.NICSpec.Parameters`; `accelerated` is what the VM's SKU says.
    pub fn nic_body(&self, machine: &str, accelerated: bool) -> Value {
        json!({
            "location": self.location,
            "tags": self.tags(&Self::nic_name(machine), None),
            "properties": {
                "enableAcceleratedNetworking": accelerated,
                "enableIPForwarding": false,
                "dnsSettings": {},
                "ipConfigurations": [{
                    "name": "pipConfig",
                    "properties": {
                        "primary": true,
                        "privateIPAllocationMethod": "Dynamic",
                        "subnet": {"id": self.subnet_id},
                        "loadBalancerBackendAddressPools": [],
                    },
                }],
            },
        })
    }

    /// `virtualmachines.VMSpec.Parameters`: no identity, no plan (HyperShift's marketplace
    /// images are not third-party), the OS disk `FromImage` without a `deleteOption`.
    pub fn vm_body(&self, machine: &str) -> Value {
        let mut body = json!({
            "location": self.location,
            "tags": self.tags(machine, Some("node")),
            "properties": {
                "hardwareProfile": {"vmSize": self.vm_size},
                "storageProfile": {
                    "imageReference": self.image,
                    "osDisk": {
                        "name": Self::os_disk_name(machine),
                        "osType": "Linux",
                        "createOption": "FromImage",
                        "caching": "None",
                        "diskSizeGB": self.os_disk_gib,
                        "managedDisk": {"storageAccountType": self.os_disk_type},
                    },
                    "dataDisks": [],
                },
                "osProfile": {
                    "computerName": machine,
                    "adminUsername": ADMIN_USER,
                    "customData": bootstrap_data(machine),
                    "allowExtensionOperations": true,
                    "linuxConfiguration": {
                        "disablePasswordAuthentication": true,
                        "ssh": {"publicKeys": [{
                            "path": format!("/home/{ADMIN_USER}/.ssh/authorized_keys"),
                            "keyData": PLACEHOLDER_SSH_KEY,
                        }]},
                    },
                },
                "networkProfile": {"networkInterfaces": [{
                    "id": self.nic_id(machine),
                    "properties": {"primary": true},
                }]},
            },
        });
        if let Some(zone) = &self.zone {
            body["zones"] = json!([zone]);
        }
        body
    }
}

/// HyperShift gives CAPZ a placeholder key (its `AzureMachineTemplate` requires one; nodes get
/// their real keys from ignition). Any well-formed public key does: this one is made up.
const PLACEHOLDER_SSH_KEY: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDHc3NhZ2EtcGxhY2Vob2xkZXIta2V5LW5vdC11c2VkLWZvci1sb2dpbg== hypersaga-placeholder";

/// The ignition pointer HyperShift's bootstrap secret holds, base64 as `customData` wants.
fn bootstrap_data(machine: &str) -> String {
    use base64::Engine as _;
    let ignition = json!({"ignition": {"version": "3.2.0", "config": {"merge": [{
        "source": format!("https://ignition-server/ignition?machine={machine}"),
    }]}}});
    base64::engine::general_purpose::STANDARD.encode(ignition.to_string())
}

/// A capability of a Resource SKU (`capabilities[].value`, always a string).
fn capability<'a>(sku: &'a Value, name: &str) -> Option<&'a str> {
    sku.get("capabilities")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))?
        .get("value")?
        .as_str()
}

/// Whether the SKU supports accelerated networking (`resourceskus.AcceleratedNetworking`, the
/// capability CAPZ's NIC spec reads when the AzureMachine does not say).
fn accelerated_networking(sku: &Value) -> bool {
    capability(sku, "AcceleratedNetworkingEnabled").is_some_and(|v| v.eq_ignore_ascii_case("True"))
}

/// CAPZ's SKU step of `InitMachineCache`: the region's Resource SKUs (listed once per
/// session) and the one named exactly as the NodePool's `vmSize` (`Cache.Get` compares names
/// as they are). Its words are CAPZ's: the wrap of `InitMachineCache`, and for a miss the
/// terminal `ReconcileError` of `Cache.Get`, which the controller puts in `failureMessage`.
async fn vm_sku(session: &mut Session, template: &Template) -> Result<Value, CreateError> {
    let size = template.vm_size.as_str();
    let skus = session
        .resource_skus(&template.subscription, &template.location)
        .await
        .map_err(|e| {
            CreateError::Logged(format!(
                "failed to init machine scope cache: failed to get VM SKU {size} in compute api: \
                 failed to refresh resource sku cache: could not iterate resource skus: {e}"
            ))
        })?;
    skus.iter()
        .find(|sku| sku.get("name").and_then(Value::as_str) == Some(size))
        .cloned()
        .ok_or_else(|| {
            CreateError::Terminal(Failure {
                reason: INVALID_CONFIGURATION,
                message: format!(
                    "failed to get VM SKU {size} in compute api: reconcile error that cannot be \
                     recovered occurred: resource sku with name '{size}' and category \
                     '{VIRTUAL_MACHINES_CATEGORY}' not found in location '{}'. Object will not \
                     be requeued",
                    template.location
                ),
            })
        })
}

fn resource_name(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

fn put_failed(service: &str, rg: &str, id: &str, e: &CallError) -> Failure {
    Failure {
        reason: "Failed",
        message: format!(
            "{service} failed to create or update. err: failed to create or update resource \
             {rg}/{} (service: {service}): {e}",
            resource_name(id)
        ),
    }
}

fn get_failed(service: &str, rg: &str, id: &str, e: &CallError) -> Failure {
    Failure {
        reason: "Failed",
        message: format!(
            "{service} failed to create or update. err: failed to get existing resource \
             {rg}/{} (service: {service}): {e}",
            resource_name(id)
        ),
    }
}

fn delete_failed(service: &str, rg: &str, id: &str, e: &CallError) -> Failure {
    Failure {
        reason: "DeletionFailed",
        message: format!(
            "{service} failed to delete. err: failed to delete resource {rg}/{} (service: \
             {service}): {e}",
            resource_name(id)
        ),
    }
}

fn provisioning_state(resource: &Value) -> &str {
    resource
        .pointer("/properties/provisioningState")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Makes (or adopts) the NIC and the VM of `machine`, once its size is known to the region;
/// `progress` hears which service is at work.
pub async fn create(
    session: &mut Session,
    template: &Template,
    machine: &str,
    mut progress: impl FnMut(&'static str),
) -> Result<Provisioned, CreateError> {
    let sku = vm_sku(session, template).await?;
    let rg = template.resource_group.as_str();
    progress(INTERFACES);
    let nic_id = template.nic_id(machine);
    let nic = match session.get(&nic_id, NETWORK_API).await {
        Err(e) => return Err(get_failed(INTERFACES, rg, &nic_id, &e).into()),
        // An existing NIC is kept unless its provisioning failed (`NICSpec.Parameters`).
        Ok(Some(nic)) if provisioning_state(&nic) != "Failed" => nic,
        Ok(_) => session
            .put(
                &nic_id,
                NETWORK_API,
                &template.nic_body(machine, accelerated_networking(&sku)),
            )
            .await
            .map_err(|e| put_failed(INTERFACES, rg, &nic_id, &e))?,
    };
    progress(VIRTUAL_MACHINE);
    let vm_id = template.vm_id(machine);
    let vm = match session.get(&vm_id, COMPUTE_API).await {
        Err(e) => return Err(get_failed(VIRTUAL_MACHINE, rg, &vm_id, &e).into()),
        // A VM that exists is never updated: Machines are immutable (`VMSpec.Parameters`).
        Ok(Some(vm)) => vm,
        Ok(None) => session
            .put(&vm_id, COMPUTE_API, &template.vm_body(machine))
            .await
            .map_err(|e| put_failed(VIRTUAL_MACHINE, rg, &vm_id, &e))?,
    };
    if provisioning_state(&vm) == "Failed" {
        return Err(CreateError::Condition(Failure {
            reason: "VMProvisionFailed",
            message: format!("VM is in provisioning state {}", provisioning_state(&vm)),
        }));
    }
    let address = nic
        .pointer("/properties/ipConfigurations/0/properties/privateIPAddress")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Provisioned {
        provider_id: format!("azure://{vm_id}"),
        address,
    })
}

/// Deletes the VM of `machine`, then its OS disk, then its NIC.
pub async fn delete(
    session: &mut Session,
    template: &Template,
    machine: &str,
) -> Result<(), Failure> {
    let rg = template.resource_group.as_str();
    let vm_id = template.vm_id(machine);
    session
        .delete(&vm_id, COMPUTE_API)
        .await
        .map_err(|e| delete_failed(VIRTUAL_MACHINE, rg, &vm_id, &e))?;
    let disk_id = template.os_disk_id(machine);
    session
        .delete(&disk_id, DISK_API)
        .await
        .map_err(|e| delete_failed(DISKS, rg, &disk_id, &e))?;
    let nic_id = template.nic_id(machine);
    session
        .delete(&nic_id, NETWORK_API)
        .await
        .map_err(|e| delete_failed(INTERFACES, rg, &nic_id, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Template {
        Template {
            subscription: "s".into(),
            resource_group: "demo-demo-abcde".into(),
            location: "eastus".into(),
            subnet_id: "/subscriptions/s/resourceGroups/v/providers/Microsoft.Network/virtualNetworks/n/subnets/default".into(),
            cluster: "demo-abcde".into(),
            vm_size: "Standard_D4s_v5".into(),
            image: json!({"publisher": "azureopenshift", "offer": "aro4", "sku": "aro_421", "version": "latest"}),
            os_disk_gib: 120,
            os_disk_type: "Premium_LRS".into(),
            zone: None,
        }
    }

    #[test]
    fn names_and_bodies_are_capzs() {
        let t = template();
        assert!(
            t.nic_id("w-abcde-fghij")
                .ends_with("/networkInterfaces/w-abcde-fghij-nic")
        );
        assert!(
            t.os_disk_id("w-abcde-fghij")
                .ends_with("/disks/w-abcde-fghij_OSDisk")
        );
        let vm = t.vm_body("w-abcde-fghij");
        let os = &vm["properties"]["storageProfile"]["osDisk"];
        assert_eq!(os["createOption"], "FromImage");
        assert_eq!(os["name"], "w-abcde-fghij_OSDisk");
        assert!(
            os.get("deleteOption").is_none(),
            "CAPZ deletes the disk itself"
        );
        assert!(vm.get("identity").is_none());
        assert_eq!(
            vm["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_demo-abcde"],
            "owned"
        );
        assert_eq!(
            vm["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "node"
        );
        let nic = t.nic_body("w-abcde-fghij", true);
        assert_eq!(
            nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"],
            t.subnet_id
        );
        assert_eq!(nic["properties"]["enableAcceleratedNetworking"], true);
    }

    #[test]
    fn accelerated_networking_is_what_the_sku_says() {
        let sku = |value: &str| {
            json!({"name": "Standard_D4s_v5", "capabilities": [
                {"name": "vCPUs", "value": "4"},
                {"name": "AcceleratedNetworkingEnabled", "value": value},
            ]})
        };
        assert!(accelerated_networking(&sku("True")));
        assert!(!accelerated_networking(&sku("False")));
        assert!(!accelerated_networking(&json!({"name": "Standard_B1s"})));
    }
}
