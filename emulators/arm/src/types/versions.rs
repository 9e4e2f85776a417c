//! Every api-version ARM accepts for the types the emulator serves, oldest first.
//!
//! A client pinned to a version Azure accepts must never be refused here (the product's own
//! pins, and whatever the newest Microsoft SDKs send by default), and one Azure refuses must be
//! refused. Each table says where it was taken from: the folders of `Azure/azure-rest-api-specs`
//! (`specification/<rp>/resource-manager/...`), ARM's own refusal messages quoted in public
//! issues (they list what the live manifest registers, which is sometimes more than the specs
//! publish), and the defaults of the newest Python SDK wheels on PyPI.

/// `Microsoft.Resources/resourceGroups` (and the `/resources` inventory, which ARM serves from
/// the same manifest entry).
///
/// - ARM's `InvalidApiVersionParameter` message for resource groups, quoted in
///   Azure/azure-cli#28038 (2023): everything from `2014-04` to `2023-07-01`, previews included.
/// - `specification/resources/resource-manager/Microsoft.Resources/stable/{2024-03-01,
///   2024-07-01,2024-11-01,2025-03-01,2025-04-01}/resources.json`.
/// - azure-mgmt-resource 26.0.0 (PyPI) defaults to `2025-04-01`.
pub const RESOURCES_VERSIONS: &[&str] = &[
    "2013-03-01",
    "2014-01-01",
    "2014-02-26",
    "2014-04",
    "2014-04-01",
    "2014-04-01-preview",
    "2015-01-01",
    "2015-11-01",
    "2016-02-01",
    "2016-06-01",
    "2016-07-01",
    "2016-09-01",
    "2017-03-01",
    "2017-05-01",
    "2017-05-10",
    "2017-06-01",
    "2017-08-01",
    "2017-12-01",
    "2018-01-01",
    "2018-02-01",
    "2018-05-01",
    "2018-06-01",
    "2018-07-01",
    "2018-08-01",
    "2018-09-01",
    "2018-11-01",
    "2019-03-01",
    "2019-05-01",
    "2019-05-10",
    "2019-06-01",
    "2019-07-01",
    "2019-08-01",
    "2019-09-01",
    "2019-10-01",
    "2019-11-01",
    "2020-01-01",
    "2020-05-01",
    "2020-06-01",
    "2020-07-01",
    "2020-08-01",
    "2020-09-01",
    "2020-10-01",
    "2021-01-01",
    "2021-04-01",
    "2022-01-01",
    "2022-03-01-preview",
    "2022-05-01",
    "2022-06-01",
    "2022-09-01",
    "2022-11-01-preview",
    "2022-12-01",
    "2023-03-01-preview",
    "2023-07-01",
    "2023-07-01-preview",
    "2024-03-01",
    "2024-07-01",
    "2024-11-01",
    "2025-03-01",
    "2025-04-01",
];

/// Network resource provider types: `networkSecurityGroups`, `virtualNetworks`,
/// `virtualNetworks/subnets`, `publicIPAddresses`, `loadBalancers`, `networkInterfaces`.
///
/// - ARM's `NoRegisteredProviderFound` message for `networkInterfaces`, quoted in
///   Azure/azure-cli#28496 (2024): `2014-12-01-preview` … `2023-09-01`. It has no `2017-03-30`
///   (a Compute version this table used to carry by mistake).
/// - `specification/network/resource-manager/Microsoft.Network/stable/{2023-11-01 … 2024-10-01,
///   2025-01-01}/` and the TypeSpec project `specification/network/resource-manager/
///   Microsoft.Network/Network/` (`main.tsp` `Versions` holds `2025-03-01`; `examples/2025-05-01`).
/// - azure-mgmt-network 33.1.0 (PyPI): default `2026-03-01`; its `api_versions_list`s name
///   `2025-05-01`, `2025-07-01`, `2025-09-01`, `2026-01-01`, `2026-03-01`.
pub const NETWORK_VERSIONS: &[&str] = &[
    "2014-12-01-preview",
    "2015-05-01-preview",
    "2015-06-15",
    "2016-03-30",
    "2016-06-01",
    "2016-07-01",
    "2016-08-01",
    "2016-09-01",
    "2016-10-01",
    "2016-11-01",
    "2016-12-01",
    "2017-03-01",
    "2017-04-01",
    "2017-06-01",
    "2017-08-01",
    "2017-09-01",
    "2017-10-01",
    "2017-11-01",
    "2018-01-01",
    "2018-02-01",
    "2018-03-01",
    "2018-04-01",
    "2018-05-01",
    "2018-06-01",
    "2018-07-01",
    "2018-08-01",
    "2018-10-01",
    "2018-11-01",
    "2018-12-01",
    "2019-02-01",
    "2019-04-01",
    "2019-06-01",
    "2019-07-01",
    "2019-08-01",
    "2019-09-01",
    "2019-11-01",
    "2019-12-01",
    "2020-01-01",
    "2020-03-01",
    "2020-04-01",
    "2020-05-01",
    "2020-06-01",
    "2020-07-01",
    "2020-08-01",
    "2020-11-01",
    "2021-01-01",
    "2021-02-01",
    "2021-03-01",
    "2021-04-01",
    "2021-05-01",
    "2021-06-01",
    "2021-08-01",
    "2021-12-01",
    "2022-01-01",
    "2022-05-01",
    "2022-07-01",
    "2022-09-01",
    "2022-11-01",
    "2023-02-01",
    "2023-04-01",
    "2023-05-01",
    "2023-06-01",
    "2023-09-01",
    "2023-11-01",
    "2024-01-01",
    "2024-03-01",
    "2024-05-01",
    "2024-07-01",
    "2024-10-01",
    "2025-01-01",
    "2025-03-01",
    "2025-05-01",
    "2025-07-01",
    "2025-09-01",
    "2026-01-01",
    "2026-03-01",
];

/// `Microsoft.Compute/virtualMachines` (the compute resource provider's own version line).
///
/// - azure-mgmt-compute 33.0.0 (PyPI), the last multi-api wheel: a `VirtualMachinesOperations`
///   in every folder from `v2015_06_15` to `v2024_07_01` (listed below, `2016-04-30-preview`
///   included).
/// - ARM's `NoRegisteredProviderFound` messages for Compute's `virtualMachines/extensions`
///   (MicrosoftDocs/azure-docs#62621, 2020) and `virtualMachineScaleSets/networkInterfaces`
///   (Azure/azure-sdk-for-python#32029, 2023) both open with `2015-05-01-preview`; the first
///   also lists `2016-08-30`.
/// - `specification/compute/resource-manager/Microsoft.Compute/Compute/Compute/main.tsp`
///   `Versions`: `2024-11-01`, `2025-04-01`, `2025-11-01`.
/// - azure-mgmt-compute 39.0.0 (PyPI) defaults to `2026-04-01`; its `api_versions_list`s name
///   `2026-03-01` too.
/// - HyperShift's `destroy infra` deletes VMs by id with `2024-03-01`
///   (docs/reference/hypershift-azure.md §1.5).
pub const VIRTUAL_MACHINE_VERSIONS: &[&str] = &[
    "2015-05-01-preview",
    "2015-06-15",
    "2016-03-30",
    "2016-04-30-preview",
    "2016-08-30",
    "2017-03-30",
    "2017-12-01",
    "2018-04-01",
    "2018-06-01",
    "2018-10-01",
    "2019-03-01",
    "2019-07-01",
    "2019-12-01",
    "2020-06-01",
    "2020-12-01",
    "2021-03-01",
    "2021-04-01",
    "2021-07-01",
    "2021-11-01",
    "2022-03-01",
    "2022-08-01",
    "2022-11-01",
    "2023-03-01",
    "2023-07-01",
    "2023-09-01",
    "2024-03-01",
    "2024-07-01",
    "2024-11-01",
    "2025-04-01",
    "2025-11-01",
    "2026-03-01",
    "2026-04-01",
];

/// `Microsoft.Compute/locations/usages` (`Usage_List`): ARM registers it with the virtual
/// machines' version line, in every region (its `NoRegisteredProviderFound` for
/// `type 'locations/usages'` lists `2015-05-01-preview, 2015-06-15, 2016-03-30,
/// 2016-04-30-preview, 2016-08-30, 2017-03-30, 2017-12-01, …`, Azure/azure-sdk-for-python#21283);
/// the operation is in every ComputeRP version of azure-rest-api-specs, up to the TypeSpec's
/// `2025-11-01`.
pub const USAGE_VERSIONS: &[&str] = VIRTUAL_MACHINE_VERSIONS;

/// `Microsoft.Compute/disks`: the disk resource provider's versions, on their own line (a
/// compute version is refused for disks, as a public VM-resizing PowerShell script notes in a
/// comment: "No registered resource provider found for location 'westeurope' and API version
/// '2021-07-01' for type 'disks'").
///
/// - azure-mgmt-compute 33.0.0 (PyPI): a `DisksOperations` in every folder from
///   `v2016_04_30_preview` to `v2024_03_02` (listed below).
/// - `specification/compute/resource-manager/Microsoft.Compute/DiskRP/stable/2025-01-02/`.
/// - azure-mgmt-compute 39.0.0 (PyPI) defaults disks to `2026-03-02`.
/// - HyperShift's `destroy infra` deletes disks by id with `2023-10-02`
///   (docs/reference/hypershift-azure.md §1.5).
pub const DISK_VERSIONS: &[&str] = &[
    "2016-04-30-preview",
    "2017-03-30",
    "2018-04-01",
    "2018-06-01",
    "2018-09-30",
    "2019-03-01",
    "2019-07-01",
    "2019-11-01",
    "2020-05-01",
    "2020-06-30",
    "2020-09-30",
    "2020-12-01",
    "2021-04-01",
    "2021-08-01",
    "2021-12-01",
    "2022-03-02",
    "2022-07-02",
    "2023-01-02",
    "2023-04-02",
    "2023-10-02",
    "2024-03-02",
    "2025-01-02",
    "2026-03-02",
];

/// Private DNS zones, their virtual network links and record sets.
///
/// - `specification/privatedns/resource-manager/Microsoft.Network/stable/{2018-09-01,
///   2020-01-01,2020-06-01,2024-06-01}/privatedns.json`.
/// - `specification/privatedns/resource-manager/Microsoft.Network/PrivateDns/preview/
///   2026-06-01-preview/`.
/// - azure-mgmt-privatedns 2.0.0 (PyPI) defaults to `2024-06-01`.
pub const PRIVATE_DNS_VERSIONS: &[&str] = &[
    "2018-09-01",
    "2020-01-01",
    "2020-06-01",
    "2024-06-01",
    "2026-06-01-preview",
];

/// Public DNS zones and record sets.
///
/// - `specification/dns/resource-manager/readme.md` tags and folders:
///   `preview/2015-05-04-preview`, `stable/2016-04-01`, `stable/2017-09-01`,
///   `2017-09-15-preview`, `stable/2017-10-01`, `preview/2018-03-01-preview`, `stable/2018-05-01`,
///   `Dns/preview/2023-07-01-preview`.
/// - azure-mgmt-dns 9.0.0 (PyPI) defaults to `2018-05-01`.
pub const DNS_VERSIONS: &[&str] = &[
    "2015-05-04-preview",
    "2016-04-01",
    "2017-09-01",
    "2017-09-15-preview",
    "2017-10-01",
    "2018-03-01-preview",
    "2018-05-01",
    "2023-07-01-preview",
];

/// `Microsoft.ManagedIdentity/userAssignedIdentities`.
///
/// - `specification/msi/resource-manager/Microsoft.ManagedIdentity/`: `2015-08-31-preview`,
///   `stable/2018-11-30`, `preview/2021-09-30-preview`, `preview/2022-01-31-preview`,
///   `stable/2023-01-31`, `preview/2023-07-31-preview`, and the TypeSpec project
///   `ManagedIdentity/` (`main.tsp` `Versions`: `2024-11-30`, `2025-01-31-preview`;
///   `examples/2025-05-31-preview`, `examples/2026-04-30`, `examples/2026-05-31`).
/// - azure-mgmt-msi 7.1.0 (PyPI) defaults to `2024-11-30`.
pub const MSI_VERSIONS: &[&str] = &[
    "2015-08-31-preview",
    "2018-11-30",
    "2021-09-30-preview",
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
    "2026-04-30",
    "2026-05-31",
];

/// `userAssignedIdentities/federatedIdentityCredentials`: the same folders as
/// [`MSI_VERSIONS`], from `2022-01-31-preview` (the first with `FederatedIdentityCredentialGet`
/// examples) on.
pub const FIC_VERSIONS: &[&str] = &[
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
    "2026-04-30",
    "2026-05-31",
];

/// `Microsoft.Authorization/roleAssignments`.
///
/// - ARM's `InvalidResourceType` message for role assignments, quoted in Azure/acs-engine#4037
///   (2018): `2014-04-01-preview` … `2018-01-01-preview`, including versions never published
///   as specs (`2015-06-01`, `2016-07-01`, `2017-05-01`, `2017-09-01`).
/// - `specification/authorization/resource-manager/readme.md` tags:
///   `preview/{2018-09-01-preview,2020-03-01-preview,2020-04-01-preview,2020-08-01-preview,
///   2020-10-01-preview}/authorization-RoleAssignmentsCalls.json`,
///   `stable/2022-04-01/authorization-RoleAssignmentsCalls.json`.
/// - azure-mgmt-authorization 4.0.0 (PyPI) defaults to `2022-04-01`.
pub const ROLE_ASSIGNMENT_VERSIONS: &[&str] = &[
    "2014-04-01-preview",
    "2014-07-01-preview",
    "2014-10-01-preview",
    "2015-05-01-preview",
    "2015-06-01",
    "2015-07-01",
    "2016-07-01",
    "2017-05-01",
    "2017-09-01",
    "2017-10-01-preview",
    "2018-01-01-preview",
    "2018-09-01-preview",
    "2020-03-01-preview",
    "2020-04-01-preview",
    "2020-08-01-preview",
    "2020-10-01-preview",
    "2022-04-01",
];

/// `Microsoft.Authorization/roleDefinitions`.
///
/// - `specification/authorization/resource-manager/readme.md`:
///   `stable/2015-07-01`, `preview/2018-01-01-preview`, `stable/2022-04-01`
///   `authorization-RoleDefinitionsCalls.json`; azure-mgmt-authorization 4.0.0 also ships
///   `2022-05-01-preview` role definitions.
/// - The pre-2018 versions are the Authorization manifest's, as ARM lists them for role
///   assignments (Azure/acs-engine#4037); no refusal message for role definitions was found.
pub const ROLE_DEFINITION_VERSIONS: &[&str] = &[
    "2014-04-01-preview",
    "2014-07-01-preview",
    "2014-10-01-preview",
    "2015-05-01-preview",
    "2015-06-01",
    "2015-07-01",
    "2016-07-01",
    "2017-05-01",
    "2017-09-01",
    "2018-01-01-preview",
    "2022-04-01",
    "2022-05-01-preview",
];

/// `Microsoft.Authorization/permissions` (`Permissions_ListForResourceGroup`,
/// `Permissions_ListForResource`): the `authorization-RoleDefinitionsCalls.json` files that
/// define them in `specification/authorization/resource-manager/Microsoft.Authorization`,
/// `stable/2015-07-01`, `preview/2018-01-01-preview` and `stable/2022-04-01`, each with its
/// `examples/GetPermissions.json` (`{"value": [{"actions": [], "notActions": []}]}`).
pub const PERMISSION_VERSIONS: &[&str] = &["2015-07-01", "2018-01-01-preview", "2022-04-01"];

/// `Microsoft.Compute/skus` (`ResourceSkus_List`): the `Skus/stable/{2017-09-01,2019-04-01,
/// 2021-07-01}` folders of azure-rest-api-specs' compute specification; 2021-07-01 is still the
/// only current one (every Compute package tag lists it), and CAPZ calls it
/// (kubernetes-sigs/cluster-api-provider-azure#2785 quotes the request).
pub const RESOURCE_SKU_VERSIONS: &[&str] = &["2017-09-01", "2019-04-01", "2021-07-01"];
