//! Compute resource provider hooks: virtual machines and managed disks.
//!
//! What a VM body may name is checked as the compute resource provider does before it accepts
//! the PUT; the OS disk of a `FromImage` VM becomes a `disks` resource of its own, attached to
//! the VM, and goes with the VM when its `deleteOption` says `Delete`. Shapes follow the
//! `VirtualMachine_Create_WithSshAuthentication` example of azure-rest-api-specs
//! (ComputeRP/stable/2024-11-01) and the recorded session
//! VirtualMachineOperationsTests.canCreateVirtualMachine of Azure/azure-sdk-for-java (J5 of
//! docs/reference/azure-latencies.md).

use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use super::in_use::{nic_used_by, users_of};
use super::references::{Reference, id_of, same_location};
use super::{FillCtx, PutCheck, vm_sizes};
use crate::errors::{ArmError, Result};
use crate::quota;
use crate::store::{self, Store, StoredResource};

// ---- references -----------------------------------------------------------------------------

fn nic_ids(props: &Map<String, Value>) -> impl Iterator<Item = (&str, &Value)> {
    props
        .get("networkProfile")
        .and_then(|n| n.get("networkInterfaces"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n.get("id").and_then(Value::as_str)?, n)))
}

fn os_disk(props: &Map<String, Value>) -> Option<&Value> {
    props.get("storageProfile").and_then(|s| s.get("osDisk"))
}

fn data_disks(props: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    props
        .get("storageProfile")
        .and_then(|s| s.get("dataDisks"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn managed_disk_id(disk: &Value) -> Option<&str> {
    id_of(disk.get("managedDisk"))
}

/// The identities of `identity.userAssignedIdentities` (keys are the identity ids).
fn identity_ids(extra: &Map<String, Value>) -> Vec<&str> {
    extra
        .get("identity")
        .and_then(|i| i.get("userAssignedIdentities"))
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// A VM holds its NICs and managed disks (neither can be deleted while it stands) and names its
/// user-assigned identities (which can: Azure leaves the VM with a dangling identity).
pub(super) fn vm_references(
    id: &str,
    props: &Map<String, Value>,
    extra: &Map<String, Value>,
) -> Vec<Reference> {
    let mut out: Vec<Reference> = nic_ids(props)
        .map(|(nic, _)| Reference::strict(nic, id, id))
        .collect();
    for disk in os_disk(props).into_iter().chain(data_disks(props)) {
        if let Some(d) = managed_disk_id(disk) {
            out.push(Reference::strict(d, id, id));
        }
    }
    for mi in identity_ids(extra) {
        out.push(Reference {
            same_region: false,
            blocks_delete: false,
            ..Reference::strict(mi, id, id)
        });
    }
    out
}

// ---- PUT checks -------------------------------------------------------------------------------

/// The compute resource provider's identity failure for a user-assigned identity that does not
/// exist, as quoted in Azure/azure-policy#1311 (2024; `FailedIdentityOperation`, the code
/// Azure's own AMA onboarding scripts map to "user-assigned managed identity does not exist").
fn identity_missing(vm_id: &str, identity: &str) -> ArmError {
    ArmError::bad_request(
        "FailedIdentityOperation",
        format!(
            "Identity operation for resource '{vm_id}' failed with error 'Failed to perform \
             resource identity operation. Status: 'BadRequest'. Response: \
             '{{\"error\":{{\"code\":\"BadRequest\",\"message\":\"Resource '{identity}' was not \
             found.\"}}}}'.'."
        ),
    )
}

fn is_type(r: &StoredResource, type_path: &str) -> bool {
    r.rtype.type_path.eq_ignore_ascii_case(type_path)
}

/// The VM's `hardwareProfile.vmSize`, when it is one the region offers. A body without one is
/// left to the other checks (and holds no quota): what Azure answers then was not found.
fn vm_size_valid(props: &Map<String, Value>) -> Result<Option<&'static vm_sizes::VmSize>> {
    let Some(size) = props
        .get("hardwareProfile")
        .and_then(|h| h.get("vmSize"))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    match vm_sizes::find(size) {
        Some(s) => Ok(Some(s)),
        None => Err(ArmError::invalid_vm_size(size, &vm_sizes::names())),
    }
}

/// Before accepting a VM PUT: its size is offered (checked first, as the request's own
/// parameters are before what they name); every NIC exists, in the VM's region, and is not
/// another VM's; every user-assigned identity exists; and last, once the request is known to be
/// valid, its vCPUs fit the family's and the region's quota ([`crate::quota`]; where Azure puts
/// the quota check among the others was not found (~)).
///
/// No public quote of the compute resource provider's own words for a missing or out-of-region
/// NIC was found; the refusal reuses NRP's `InvalidResourceReference`, whose message covers both
/// cases, and a NIC held by another VM reuses NRP's `NicInUse` wording.
pub(super) fn vm_put_valid(store: &Store, put: &PutCheck<'_>) -> Result<()> {
    let size = vm_size_valid(put.properties)?;
    for (nic, _) in nic_ids(put.properties) {
        let found = store
            .get(&nic.to_ascii_lowercase())
            .filter(|r| is_type(r, "networkInterfaces"));
        let Some(found) = found else {
            return Err(ArmError::invalid_resource_reference(nic, put.id));
        };
        if let (Some(a), Some(b)) = (found.location.as_deref(), put.location)
            && !same_location(a, b)
        {
            return Err(ArmError::invalid_resource_reference(nic, put.id));
        }
        let other = users_of(store, &nic.to_ascii_lowercase())
            .into_iter()
            .find(|u| u.owner_key != put.key);
        if let Some(other) = other {
            return Err(nic_used_by(&found.id, &other.holder));
        }
    }
    for mi in identity_ids(put.extra) {
        let exists = store
            .get(&mi.to_ascii_lowercase())
            .is_some_and(|r| is_type(r, "userAssignedIdentities"));
        if !exists {
            return Err(identity_missing(put.id, mi));
        }
    }
    if let (Some(size), Some(location)) = (size, put.location) {
        quota::check_vm_put(store, put.sub, put.key, location, size)?;
    }
    Ok(())
}

// ---- read-only properties -----------------------------------------------------------------------

fn keep_or(ctx: &FillCtx<'_>, key: &str, fresh: impl FnOnce() -> Value) -> Value {
    ctx.previous
        .and_then(|p| p.get(key))
        .cloned()
        .unwrap_or_else(fresh)
}

/// `…/virtualMachines/{vm}` → `…/disks/{disk}` in the same group.
fn disk_id(vm_id: &str, disk: &str) -> String {
    let rg_end = vm_id
        .to_ascii_lowercase()
        .find("/providers/")
        .unwrap_or(vm_id.len());
    format!(
        "{}/providers/Microsoft.Compute/disks/{disk}",
        &vm_id[..rg_end]
    )
}

fn short_guid() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// What a FromImage OS disk or an Empty data disk becomes: a name (Azure's default
/// `{vm}_OsDisk_1_{32 hex}` when none is given), its managed disk id and a delete option.
fn fill_disk_slot(disk: &mut Map<String, Value>, vm_id: &str, default_name: String) {
    let name = disk
        .get("name")
        .and_then(Value::as_str)
        .map_or(default_name, str::to_owned);
    disk.insert("name".into(), json!(name));
    let managed = disk
        .entry("managedDisk")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(managed) = managed {
        managed
            .entry("id")
            .or_insert_with(|| json!(disk_id(vm_id, &name)));
    }
    disk.entry("deleteOption").or_insert(json!("Detach"));
}

/// A disk slot's `createOption`, lower-cased (`FromImage`, `Empty`, `Attach`).
fn create_option(disk: &Value) -> String {
    option_of(disk.get("createOption"))
}

fn option_of(v: Option<&Value>) -> String {
    v.and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// VM read-only properties: `vmId` and `timeCreated` (kept across re-PUTs), the OS disk's
/// name, type and managed disk id, and the write-only secrets removed (a VM GET never returns
/// `adminPassword` or `customData`).
pub(super) fn fill_vm(p: &mut Map<String, Value>, ctx: &FillCtx<'_>) {
    p.insert(
        "vmId".into(),
        keep_or(ctx, "vmId", || json!(uuid::Uuid::new_v4().to_string())),
    );
    p.insert(
        "timeCreated".into(),
        keep_or(ctx, "timeCreated", || {
            json!(store::rfc3339(OffsetDateTime::now_utc()))
        }),
    );
    if let Some(os) = p.get_mut("osProfile").and_then(Value::as_object_mut) {
        os.remove("adminPassword");
        os.remove("customData");
        os.entry("secrets").or_insert(json!([]));
    }
    p.remove("userData");
    let vm = ctx.name.to_owned();
    let previous_os = ctx
        .previous
        .and_then(os_disk)
        .and_then(Value::as_object)
        .cloned();
    let Some(storage) = p
        .entry("storageProfile")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return;
    };
    if let Some(os) = storage.get_mut("osDisk").and_then(Value::as_object_mut) {
        if option_of(os.get("createOption")) == "fromimage" {
            // A re-PUT keeps the disk the first PUT created.
            let default = previous_os
                .as_ref()
                .and_then(|o| o.get("name"))
                .and_then(Value::as_str)
                .map_or_else(|| format!("{vm}_OsDisk_1_{}", short_guid()), str::to_owned);
            fill_disk_slot(os, ctx.id, default);
        }
        os.entry("osType").or_insert(json!("Linux"));
        os.entry("deleteOption").or_insert(json!("Detach"));
    }
    let disks = storage
        .entry("dataDisks")
        .or_insert_with(|| json!([]))
        .as_array_mut();
    for d in disks.into_iter().flatten() {
        let empty = create_option(d) == "empty";
        let Some(d) = d.as_object_mut() else { continue };
        if empty {
            let lun = d.get("lun").and_then(Value::as_u64).unwrap_or(0);
            fill_disk_slot(d, ctx.id, format!("{vm}_disk{lun}_{}", short_guid()));
        }
    }
}

/// Disk read-only properties (the `Disk_Get` example of DiskRP/stable/2025-01-02).
pub(super) fn fill_disk(p: &mut Map<String, Value>, ctx: &FillCtx<'_>) {
    p.insert(
        "uniqueId".into(),
        keep_or(ctx, "uniqueId", || json!(uuid::Uuid::new_v4().to_string())),
    );
    p.insert(
        "timeCreated".into(),
        keep_or(ctx, "timeCreated", || {
            json!(store::rfc3339(OffsetDateTime::now_utc()))
        }),
    );
    p.entry("encryption")
        .or_insert(json!({ "type": "EncryptionAtRestWithPlatformKey" }));
    p.entry("networkAccessPolicy").or_insert(json!("AllowAll"));
    p.entry("publicNetworkAccess").or_insert(json!("Enabled"));
}

// ---- implicit disks -------------------------------------------------------------------------------

/// The platform image a FromImage disk records as its source.
fn image_source(vm: &StoredResource) -> Value {
    let image = vm
        .properties
        .get("storageProfile")
        .and_then(|s| s.get("imageReference"));
    if let Some(id) = id_of(image) {
        return json!({ "createOption": "FromImage", "galleryImageReference": { "id": id } });
    }
    let field = |k: &str| {
        image
            .and_then(|i| i.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let loc = vm.location.clone().unwrap_or_default();
    json!({
        "createOption": "FromImage",
        "imageReference": { "id": format!(
            "/Subscriptions/{}/Providers/Microsoft.Compute/Locations/{loc}/Publishers/{}/ArtifactTypes/VMImage/Offers/{}/Skus/{}/Versions/{}",
            vm.sub, field("publisher"), field("offer"), field("sku"), field("version")
        )},
    })
}

/// Creates the disks a VM PUT implies (its FromImage OS disk, its Empty data disks) that do not
/// exist yet, in the VM's group and region, as the compute resource provider does.
pub(super) fn create_vm_disks(store: &mut Store, key: &str) {
    let Some(vm) = store.get(key).cloned() else {
        return;
    };
    let Some(disk_type) = super::lookup("Microsoft.Compute", &["disks"]) else {
        return;
    };
    let mut wanted = Vec::new();
    if let Some(os) = os_disk(&vm.properties).filter(|d| create_option(d) == "fromimage") {
        let os_type = os.get("osType").cloned().unwrap_or(json!("Linux"));
        let mut props = Map::new();
        props.insert("osType".into(), os_type);
        props.insert("creationData".into(), image_source(&vm));
        wanted.push((os.clone(), props));
    }
    for d in data_disks(&vm.properties).filter(|d| create_option(d) == "empty") {
        let mut props = Map::new();
        props.insert("creationData".into(), json!({ "createOption": "Empty" }));
        wanted.push((d.clone(), props));
    }
    for (slot, mut props) in wanted {
        let Some(id) = managed_disk_id(&slot).map(str::to_owned) else {
            continue;
        };
        if store.get(&id.to_ascii_lowercase()).is_some() {
            continue;
        }
        let name = id.rsplit('/').next().unwrap_or_default().to_owned();
        if let Some(size) = slot.get("diskSizeGB") {
            props.insert("diskSizeGB".into(), size.clone());
        }
        props.insert("provisioningState".into(), json!("Succeeded"));
        fill_disk(
            &mut props,
            &FillCtx {
                id: &id,
                previous: None,
                tenant_id: "",
                name: &name,
            },
        );
        let sku = slot
            .pointer("/managedDisk/storageAccountType")
            .and_then(Value::as_str)
            .unwrap_or("Standard_LRS");
        let mut extra = Map::new();
        extra.insert("sku".into(), json!({ "name": sku }));
        if let Some(zones) = vm.extra.get("zones") {
            extra.insert("zones".into(), zones.clone());
        }
        store.insert(StoredResource {
            id: id.clone(),
            parent_key: vm.parent_key.clone(),
            rtype: disk_type,
            name,
            sub: vm.sub.clone(),
            rg: vm.rg.clone(),
            location: vm.location.clone(),
            tags: None,
            properties: props,
            extra,
            etag: None,
            pending: None,
            created: vm.created,
        });
    }
}

fn deletes(v: &Value) -> bool {
    v.get("deleteOption")
        .and_then(Value::as_str)
        .is_some_and(|o| o.eq_ignore_ascii_case("Delete"))
}

/// What goes with a deleted VM: NICs and disks whose `deleteOption` is `Delete` (the default
/// being `Detach`).
pub(super) fn vm_delete_with(vm: &StoredResource) -> Vec<String> {
    let mut out: Vec<String> = nic_ids(&vm.properties)
        .filter(|(_, n)| n.get("properties").is_some_and(deletes))
        .map(|(id, _)| id.to_ascii_lowercase())
        .collect();
    for d in os_disk(&vm.properties)
        .into_iter()
        .chain(data_disks(&vm.properties))
        .filter(|d| deletes(d))
    {
        if let Some(id) = managed_disk_id(d) {
            out.push(id.to_ascii_lowercase());
        }
    }
    out
}

// ---- rendering --------------------------------------------------------------------------------------

/// A disk shows the VM it is attached to (`managedBy`) and its `diskState`.
pub(super) fn decorate_disk(store: &Store, disk: &StoredResource, obj: &mut Map<String, Value>) {
    let vm = users_of(store, &disk.id.to_ascii_lowercase())
        .into_iter()
        .next()
        .map(|u| u.holder);
    let state = if vm.is_some() {
        "Attached"
    } else {
        "Unattached"
    };
    if let Some(vm) = vm {
        obj.insert("managedBy".into(), json!(vm));
    }
    if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("diskState".into(), json!(state));
    }
}

fn status(code: &str, level: &str, display: &str, time: Option<&str>) -> Value {
    let mut s = json!({ "code": code, "level": level, "displayStatus": display });
    if let Some(t) = time {
        s["time"] = json!(t);
    }
    s
}

/// `properties.instanceView` for `GET …?$expand=instanceView`: the provisioning and power state
/// as J5 recorded them for a running VM (`ProvisioningState/succeeded`, `PowerState/running`,
/// the VM agent not yet reporting); the in-flight states map `provisioningState` the same way.
pub(super) fn vm_instance_view(vm: &StoredResource, now: OffsetDateTime) -> Value {
    let state = vm
        .properties
        .get("provisioningState")
        .and_then(Value::as_str)
        .unwrap_or("Succeeded");
    let time = store::rfc3339(now);
    let created = vm
        .properties
        .get("timeCreated")
        .and_then(Value::as_str)
        .unwrap_or(&time)
        .to_owned();
    let (provisioning, power) = match state {
        "Creating" => (
            status("ProvisioningState/creating", "Info", "Creating", None),
            status("PowerState/starting", "Info", "VM starting", None),
        ),
        "Failed" => (
            status(
                "ProvisioningState/failed/InternalOperationError",
                "Error",
                "Provisioning failed",
                Some(&time),
            ),
            status("PowerState/stopped", "Info", "VM stopped", None),
        ),
        "Deleting" => (
            status("ProvisioningState/deleting", "Info", "Deleting", None),
            status("PowerState/running", "Info", "VM running", None),
        ),
        "Updating" => (
            status("ProvisioningState/updating", "Info", "Updating", None),
            status("PowerState/running", "Info", "VM running", None),
        ),
        _ => (
            status(
                "ProvisioningState/succeeded",
                "Info",
                "Provisioning succeeded",
                Some(&time),
            ),
            status("PowerState/running", "Info", "VM running", None),
        ),
    };
    let disks: Vec<Value> = os_disk(&vm.properties)
        .into_iter()
        .chain(data_disks(&vm.properties))
        .filter_map(|d| d.get("name").and_then(Value::as_str))
        .map(|name| {
            json!({
                "name": name,
                "statuses": [status("ProvisioningState/succeeded", "Info", "Provisioning succeeded", Some(&created))],
            })
        })
        .collect();
    let mut view = json!({
        "vmAgent": {
            "vmAgentVersion": "Unknown",
            "statuses": [{
                "code": "ProvisioningState/Unavailable",
                "level": "Warning",
                "displayStatus": "Not Ready",
                "message": "VM status blob is found but not yet populated.",
                "time": time,
            }],
        },
        "disks": disks,
        "statuses": [provisioning, power],
    });
    if let Some(name) = vm
        .properties
        .get("osProfile")
        .and_then(|o| o.get("computerName"))
        .and_then(Value::as_str)
    {
        view["computerName"] = json!(name);
    }
    view
}
