//! The resource-type table: one entry per ARM type the emulator serves.
//!
//! Everything type-specific lives here as data (namespace, type path, api-versions, response
//! shapes, latencies) plus a few small hooks for read-only properties and referential checks.
//! The request pipeline (`arm/`) is generic over these entries, so adding a type is adding
//! a row, not a branch.
//!
//! The hooks live by resource provider: `hooks` (DNS, Managed Identity), `network` (NRP's
//! references, NIC addresses, back-references), `compute` (VMs and their disks). Across
//! providers, `references` checks the ids a body names, `in_use` finds who still holds a
//! resource and words each provider's refusal, and `cascade` completes deletes, resource
//! groups included. `regions` and `vm_sizes` are the public regions and VM sizes Azure offers,
//! which a PUT's location and a VM's size must be among.

pub mod cascade;
mod compute;
mod hooks;
pub mod in_use;
mod network;
pub mod references;
pub mod regions;
mod versions;
pub mod vm_sizes;

use std::time::Duration;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::errors::{ArmError, Result};
use crate::store::{Store, StoredResource};
use compute::{
    create_vm_disks, decorate_disk, fill_disk, fill_vm, vm_delete_with, vm_instance_view,
    vm_put_valid, vm_references,
};
use hooks::{
    fic_issuer_subject_unique, fill_identity, fill_private_zone, fill_public_zone, fill_record_set,
    fill_vnet_link, vnet_link_target_exists,
};
use in_use::{Use, disk_in_use, nic_in_use, nsg_in_use, public_ip_in_use, vnet_in_use};
use network::{
    allocate_nic_addresses, decorate_nic, decorate_nsg, decorate_vnet, fill_nic, lb_references,
    nic_references, references_valid, subnet_references, vnet_put_valid, vnet_references,
};
use references::Reference;
pub use regions::REGIONS;
pub use versions::*;

/// How a PUT answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutShape {
    /// `201`/`200`, `provisioningState: Succeeded` at once (RGs, identities, FICs, records).
    Sync,
    /// Network RP: `201`/`200` with `provisioningState: Updating` and `Azure-AsyncOperation`.
    AsyncInBody,
    /// Private DNS: `202`, empty body, `Azure-AsyncOperation` + `Location`, no `Retry-After`.
    Accepted,
    /// Compute VMs: `201`/`200` with the resource, `provisioningState: Creating` on create
    /// (`Updating` on update), `Azure-AsyncOperation` only, no `Retry-After` (J5 of
    /// docs/reference/azure-latencies.md; the example responses of ComputeRP/stable/2024-11-01).
    CreatingInBody,
    /// Disks: `202` with the resource (`provisioningState: Updating`), `Azure-AsyncOperation`
    /// + `Location` (the `Disks_CreateOrUpdate` examples of DiskRP/stable/2025-01-02).
    AcceptedWithBody,
}

/// How a DELETE answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteShape {
    /// `200` when deleted, `204` when absent.
    Sync,
    /// `202` + `Location` + `Azure-AsyncOperation`; `Deleting` meanwhile.
    Async,
    /// Resource groups: `202` + `Location` (ARM `operationresults`) + `Retry-After: 15`.
    ResourceGroup,
}

/// Where the operation-status URLs of a type live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationUrls {
    /// None: synchronous type.
    None,
    /// `/subscriptions/{s}/providers/Microsoft.Network/locations/{loc}/operations|operationResults/{id}`
    NetworkLocation,
    /// `/subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/privateDnsOperationStatuses|privateDnsOperationResults/{id}`
    PrivateDns,
    /// `/subscriptions/{s}/operationresults/{id}` (resource-group delete).
    Subscription,
    /// `/subscriptions/{s}/providers/Microsoft.Compute/locations/{loc}/operations/{id}?p={guid}`,
    /// the `Location` view the same with `&monitor=true` (J5 of docs/reference/azure-latencies.md).
    ComputeLocation,
    /// The disk resource provider's `…/locations/{loc}/DiskOperations/{id}?p={guid}`, the
    /// `Location` view with `&monitor=true` (azure-sdk-for-js compute recordings, 2022).
    DiskLocation,
}

/// The `location` rule of a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocationRule {
    /// Tracked resource: `location` required.
    Required,
    /// Always `global` (private/public DNS zones and links).
    Global,
    /// Proxy/child resource: no location.
    None,
}

/// Where instances are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Its own entry in the store.
    Standalone,
    /// An element of an array under the parent's `properties` (subnets of a VNet): Azure
    /// shows them inline in the parent and as child resources, so one copy serves both.
    Embedded { array: &'static str },
}

/// Where the resource provider registered a type, which decides how ARM refuses an
/// api-version it does not know: a regional type answers `NoRegisteredProviderFound` naming
/// the location and listing the supported locations, a global one names `global`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Registered per region (Network, Managed Identity).
    Regions,
    /// Registered in `global` only (public and private DNS).
    Global,
    /// Registered without locations (Microsoft.Authorization): ARM answers an unknown
    /// api-version with `InvalidResourceType`, listing the supported versions.
    Locationless,
}

/// The `etag` a type carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Etag {
    None,
    /// Network RP style `W/"<guid>"`.
    Weak,
    /// DNS style `<guid>`.
    Plain,
}

/// Context for filling read-only properties on PUT.
pub struct FillCtx<'a> {
    /// Canonical id of the resource being written.
    pub id: &'a str,
    /// Properties stored before this PUT (identity GUIDs must survive a re-PUT).
    pub previous: Option<&'a Map<String, Value>>,
    /// Tenant of the subscription (identities report it).
    pub tenant_id: &'a str,
    /// The resource name.
    pub name: &'a str,
}

/// Context for referential checks on PUT.
pub struct PutCheck<'a> {
    pub rtype: &'static ResourceType,
    /// The subscription, as the request path gives it.
    pub sub: &'a str,
    pub key: &'a str,
    pub parent_key: &'a str,
    /// Canonical id of the resource being written (the writer, in refusal messages).
    pub id: &'a str,
    /// Its region (a subnet's is its VNet's), for the same-region rule of references.
    pub location: Option<&'a str>,
    pub properties: &'a Map<String, Value>,
    /// Top-level members other than `properties` (`identity`, `sku`, `zones`, …).
    pub extra: &'a Map<String, Value>,
}

/// Fills read-only properties of a PUT body.
pub type FillFn = fn(&mut Map<String, Value>, &FillCtx<'_>);

/// The ids a body names: `(id, properties, other top-level members)`.
pub type ReferencesFn = fn(&str, &Map<String, Value>, &Map<String, Value>) -> Vec<Reference>;

/// A resource provider's refusal to delete a resource that `uses` still hold.
pub type InUseFn = fn(&StoredResource, &[Use]) -> ArmError;

/// Adds what the resource provider derives from other resources to a rendered resource.
pub type DecorateFn = fn(&Store, &StoredResource, &mut Map<String, Value>);

/// One row of the table.
pub struct ResourceType {
    /// e.g. `Microsoft.Network`.
    pub namespace: &'static str,
    /// e.g. `privateDnsZones/virtualNetworkLinks`; the parent type is this minus the last segment.
    pub type_path: &'static str,
    /// Every api-version ARM accepts for the type (stable and preview), oldest first.
    pub api_versions: &'static [&'static str],
    /// Regional or global registration (how an unknown api-version is refused).
    pub registration: Registration,
    pub put: PutShape,
    pub delete: DeleteShape,
    pub operation_urls: OperationUrls,
    pub location: LocationRule,
    pub storage: Storage,
    pub etag: Etag,
    /// Listed by `GET /subscriptions/{s}/resources` (ARM lists tracked resources and a few
    /// nested ones such as virtual network links; not FICs, subnets or record sets).
    pub in_inventory: bool,
    /// Realistic server-side duration of create/update and of delete
    /// (docs/reference/azure-latencies.md §5).
    pub create_latency: Duration,
    pub delete_latency: Duration,
    /// Synchronous types still take a moment; applied before answering under `Scaled`.
    pub sync_latency: Duration,
    /// Child types (last segment) that must be deleted first (`CannotDeleteResource`).
    pub blocking_children: &'static [&'static str],
    /// Arrays under `properties` holding inline sub-resources (ids and state filled in).
    pub inline_children: &'static [&'static str],
    /// A write (PUT or DELETE) while an earlier write is still running answers
    /// `409 AnotherOperationInProgress`; for an embedded child (subnet) the parent's running
    /// write counts, since the network RP updates the VNet for it.
    pub serialize_writes: bool,
    /// Only one write (PUT or DELETE) among the children of one parent may be in flight at a
    /// time; another answers `409 ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity`
    /// (federated credentials of one identity).
    pub exclusive_parent_writes: bool,
    /// Limit of instances per parent, with the error to answer beyond it.
    pub max_per_parent: Option<(usize, &'static str, &'static str)>,
    /// Fills read-only properties.
    pub fill: Option<FillFn>,
    /// Referential checks before a PUT is accepted.
    pub check_put: Option<fn(&Store, &PutCheck<'_>) -> Result<()>>,
    /// The ids the body names, for referential checks, in-use refusals and cascade order.
    pub references: Option<ReferencesFn>,
    /// Refusal of a DELETE while other resources still reference the resource.
    pub in_use: Option<InUseFn>,
    /// Work the resource provider does once a PUT is accepted (implicit disks, addresses),
    /// given the stored resource's key.
    pub after_put: Option<fn(&mut Store, &str)>,
    /// Keys of resources that go when this one is deleted (`deleteOption: Delete`).
    pub delete_with: Option<fn(&StoredResource) -> Vec<String>>,
    /// Read-time properties derived from other resources (back-references, attach state).
    pub decorate: Option<DecorateFn>,
    /// `properties.instanceView` for `GET …?$expand=instanceView`.
    pub instance_view: Option<fn(&StoredResource, OffsetDateTime) -> Value>,
}

impl std::fmt::Debug for ResourceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.full_name())
    }
}

impl ResourceType {
    /// `Namespace/typePath`, the value of a resource's `type`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.namespace, self.type_path)
    }

    pub fn segments(&self) -> impl Iterator<Item = &'static str> {
        self.type_path.split('/')
    }

    pub fn depth(&self) -> usize {
        self.type_path.split('/').count()
    }

    pub fn last_segment(&self) -> &'static str {
        self.type_path.rsplit('/').next().unwrap_or(self.type_path)
    }

    pub fn is_resource_group(&self) -> bool {
        std::ptr::eq(self, &TYPES[0])
    }

    pub fn supports(&self, api_version: &str) -> bool {
        self.api_versions
            .iter()
            .any(|v| v.eq_ignore_ascii_case(api_version))
    }
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
const fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

const NET: ResourceType = ResourceType {
    namespace: "Microsoft.Network",
    type_path: "",
    api_versions: NETWORK_VERSIONS,
    registration: Registration::Regions,
    put: PutShape::AsyncInBody,
    delete: DeleteShape::Async,
    operation_urls: OperationUrls::NetworkLocation,
    location: LocationRule::Required,
    storage: Storage::Standalone,
    etag: Etag::Weak,
    in_inventory: true,
    create_latency: secs(2),
    delete_latency: secs(10),
    sync_latency: Duration::ZERO,
    blocking_children: &[],
    inline_children: &[],
    serialize_writes: false,
    exclusive_parent_writes: false,
    max_per_parent: None,
    fill: None,
    check_put: None,
    references: None,
    in_use: None,
    after_put: None,
    delete_with: None,
    decorate: None,
    instance_view: None,
};

const PDNS: ResourceType = ResourceType {
    namespace: "Microsoft.Network",
    type_path: "",
    api_versions: PRIVATE_DNS_VERSIONS,
    registration: Registration::Global,
    put: PutShape::Accepted,
    delete: DeleteShape::Async,
    operation_urls: OperationUrls::PrivateDns,
    location: LocationRule::Global,
    storage: Storage::Standalone,
    etag: Etag::Plain,
    in_inventory: true,
    create_latency: secs(20),
    delete_latency: secs(30),
    sync_latency: Duration::ZERO,
    blocking_children: &[],
    inline_children: &[],
    serialize_writes: false,
    exclusive_parent_writes: false,
    max_per_parent: None,
    fill: None,
    check_put: None,
    references: None,
    in_use: None,
    after_put: None,
    delete_with: None,
    decorate: None,
    instance_view: None,
};

const SYNC: ResourceType = ResourceType {
    namespace: "",
    type_path: "",
    api_versions: &[],
    registration: Registration::Regions,
    put: PutShape::Sync,
    delete: DeleteShape::Sync,
    operation_urls: OperationUrls::None,
    location: LocationRule::None,
    storage: Storage::Standalone,
    etag: Etag::None,
    in_inventory: false,
    create_latency: Duration::ZERO,
    delete_latency: Duration::ZERO,
    sync_latency: ms(500),
    blocking_children: &[],
    inline_children: &[],
    serialize_writes: false,
    exclusive_parent_writes: false,
    max_per_parent: None,
    fill: None,
    check_put: None,
    references: None,
    in_use: None,
    after_put: None,
    delete_with: None,
    decorate: None,
    instance_view: None,
};

const COMPUTE: ResourceType = ResourceType {
    namespace: "Microsoft.Compute",
    type_path: "",
    api_versions: VIRTUAL_MACHINE_VERSIONS,
    registration: Registration::Regions,
    put: PutShape::CreatingInBody,
    delete: DeleteShape::Async,
    operation_urls: OperationUrls::ComputeLocation,
    location: LocationRule::Required,
    storage: Storage::Standalone,
    etag: Etag::None,
    in_inventory: true,
    create_latency: secs(45),
    delete_latency: secs(30),
    sync_latency: Duration::ZERO,
    ..NET
};

/// The table. Index 0 must stay the resource group.
pub static TYPES: &[ResourceType] = &[
    ResourceType {
        namespace: "Microsoft.Resources",
        type_path: "resourceGroups",
        api_versions: RESOURCES_VERSIONS,
        delete: DeleteShape::ResourceGroup,
        operation_urls: OperationUrls::Subscription,
        location: LocationRule::Required,
        // 10-20 s empty, 2-3 min with contents: see `store::rg_delete_latency`.
        delete_latency: secs(15),
        ..SYNC
    },
    ResourceType {
        type_path: "networkSecurityGroups",
        inline_children: &["securityRules"],
        serialize_writes: true,
        create_latency: secs(2),
        in_use: Some(nsg_in_use),
        decorate: Some(decorate_nsg),
        ..NET
    },
    ResourceType {
        type_path: "virtualNetworks",
        inline_children: &["subnets"],
        serialize_writes: true,
        create_latency: ms(2500),
        references: Some(vnet_references),
        check_put: Some(vnet_put_valid),
        in_use: Some(vnet_in_use),
        decorate: Some(decorate_vnet),
        ..NET
    },
    ResourceType {
        type_path: "virtualNetworks/subnets",
        location: LocationRule::None,
        storage: Storage::Embedded { array: "subnets" },
        serialize_writes: true,
        in_inventory: false,
        create_latency: secs(2),
        delete_latency: secs(2),
        references: Some(subnet_references),
        check_put: Some(references_valid),
        ..NET
    },
    ResourceType {
        type_path: "publicIPAddresses",
        create_latency: secs(2),
        in_use: Some(public_ip_in_use),
        ..NET
    },
    ResourceType {
        type_path: "loadBalancers",
        inline_children: &[
            "frontendIPConfigurations",
            "backendAddressPools",
            "probes",
            "loadBalancingRules",
            "outboundRules",
            "inboundNatRules",
        ],
        create_latency: ms(1500),
        references: Some(lb_references),
        check_put: Some(references_valid),
        ..NET
    },
    ResourceType {
        type_path: "privateDnsZones",
        blocking_children: &["virtualNetworkLinks"],
        fill: Some(fill_private_zone),
        ..PDNS
    },
    ResourceType {
        type_path: "privateDnsZones/virtualNetworkLinks",
        create_latency: secs(45),
        fill: Some(fill_vnet_link),
        check_put: Some(vnet_link_target_exists),
        ..PDNS
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "privateDnsZones/A",
        api_versions: PRIVATE_DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "privateDnsZones/CNAME",
        api_versions: PRIVATE_DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "privateDnsZones/TXT",
        api_versions: PRIVATE_DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "dnsZones",
        api_versions: DNS_VERSIONS,
        registration: Registration::Global,
        location: LocationRule::Global,
        etag: Etag::Plain,
        in_inventory: true,
        fill: Some(fill_public_zone),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "dnsZones/A",
        api_versions: DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "dnsZones/CNAME",
        api_versions: DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "dnsZones/NS",
        api_versions: DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.Network",
        type_path: "dnsZones/TXT",
        api_versions: DNS_VERSIONS,
        registration: Registration::Global,
        etag: Etag::Plain,
        fill: Some(fill_record_set),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.ManagedIdentity",
        type_path: "userAssignedIdentities",
        api_versions: MSI_VERSIONS,
        location: LocationRule::Required,
        in_inventory: true,
        sync_latency: secs(1),
        fill: Some(fill_identity),
        ..SYNC
    },
    ResourceType {
        namespace: "Microsoft.ManagedIdentity",
        type_path: "userAssignedIdentities/federatedIdentityCredentials",
        api_versions: FIC_VERSIONS,
        sync_latency: secs(1),
        max_per_parent: Some((
            20,
            "BadRequest",
            "Too many Federated Identity Credentials are written to this Managed Identity. \
             A Managed Identity can have at most 20 Federated Identity Credentials.",
        )),
        check_put: Some(fic_issuer_subject_unique),
        exclusive_parent_writes: true,
        ..SYNC
    },
    // What a NodePool's CAPZ machine creates per worker: a NIC, a VM, its OS disk.
    ResourceType {
        type_path: "networkInterfaces",
        inline_children: &["ipConfigurations"],
        serialize_writes: true,
        // J5 of docs/reference/azure-latencies.md: the NIC PUT's 201 already reports Succeeded.
        create_latency: secs(1),
        references: Some(nic_references),
        check_put: Some(references_valid),
        in_use: Some(nic_in_use),
        fill: Some(fill_nic),
        after_put: Some(allocate_nic_addresses),
        decorate: Some(decorate_nic),
        ..NET
    },
    ResourceType {
        type_path: "virtualMachines",
        // docs/reference/azure-latencies.md 13f: 44.5 s server-side create (J5); J5's delete ran
        // 29.8 s.
        create_latency: secs(45),
        delete_latency: secs(30),
        references: Some(vm_references),
        check_put: Some(vm_put_valid),
        fill: Some(fill_vm),
        after_put: Some(create_vm_disks),
        delete_with: Some(vm_delete_with),
        instance_view: Some(vm_instance_view),
        ..COMPUTE
    },
    ResourceType {
        type_path: "disks",
        api_versions: DISK_VERSIONS,
        put: PutShape::AcceptedWithBody,
        operation_urls: OperationUrls::DiskLocation,
        // Not measured (docs/reference/azure-latencies.md has no disk row); a few seconds,
        // estimated.
        create_latency: secs(2),
        delete_latency: secs(2),
        fill: Some(fill_disk),
        in_use: Some(disk_in_use),
        decorate: Some(decorate_disk),
        ..COMPUTE
    },
];

/// Looks a type up by namespace and type segments, case-insensitively.
pub fn lookup(namespace: &str, segments: &[&str]) -> Option<&'static ResourceType> {
    TYPES.iter().find(|t| {
        t.namespace.eq_ignore_ascii_case(namespace)
            && t.depth() == segments.len()
            && t.segments()
                .zip(segments)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    })
}

/// Looks a type up by its full name (`Microsoft.Network/virtualNetworks`).
pub fn lookup_full(full: &str) -> Option<&'static ResourceType> {
    let (ns, path) = full.split_once('/')?;
    let segs: Vec<&str> = path.split('/').collect();
    lookup(ns, &segs)
}

/// Whether a namespace is served at all (unknown namespaces answer differently).
pub fn namespace_known(namespace: &str) -> bool {
    TYPES
        .iter()
        .any(|t| t.namespace.eq_ignore_ascii_case(namespace))
}
