//! The built-in role definitions: the general Owner/Contributor/Reader, the two privileged roles
//! that delegate access (User Access Administrator, Role Based Access Control Administrator:
//! what a tenant grants an app that must assign roles itself), and the roles HyperShift and ARO
//! hosted control planes assign (docs/reference/hypershift-azure.md §2.4).
//!
//! Names, descriptions and actions are Azure's as its role JSON publishes them: Owner,
//! Contributor, Reader, the two access roles and the six roles the product grants
//! (`ROLE_GRANTS`) as the generated `built-in-roles/privileged.md`, `general.md` and
//! `containers.md` of MicrosoftDocs/azure-docs list them (the access roles' JSON as
//! azure-rbac-catalog.org and azadvertizer copy it); the two hosted-control-plane roles, which those pages do not list, as the
//! azure-rbac-catalog.org and azadvertizer copies had them (possibly partial). The RBAC check
//! (`crate::rbac`) evaluates managed identities' requests against these permissions, so a
//! missing action is a refusal, never a grant. `7d8bb4e4…` is not built in: HyperShift
//! names it as the custom role its `--assign-custom-hcp-roles` uses, so it is served as a
//! `CustomRole` whose permissions are whatever its owner defined (unknown here).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use uuid::Uuid;

use super::refusals::{invalid_filter, role_definition_does_not_exist};
use super::scope;
use crate::arm::Ctx;
use crate::arm::respond::{json_response, page};
use crate::errors::Result;
use crate::path::AuthzRef;
use crate::store::Store;

/// One built-in role.
pub(crate) struct BuiltIn {
    pub guid: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    /// `BuiltInRole`, or `CustomRole` for the one HyperShift defines itself.
    pub kind: &'static str,
    pub actions: &'static [&'static str],
    pub not_actions: &'static [&'static str],
}

/// `createdOn`/`updatedOn` of every role here: the ARO roles' publication (2024-02-01); Azure's
/// own dates differ per role and nothing reads them.
const PUBLISHED_ON: &str = "2024-02-01T16:31:41.816Z";

/// The table, by GUID.
pub(super) static BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        guid: "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
        name: "Owner",
        description: "Grants full access to manage all resources, including the ability to assign roles in Azure RBAC.",
        kind: "BuiltInRole",
        actions: &["*"],
        not_actions: &[],
    },
    BuiltIn {
        guid: "b24988ac-6180-42a0-ab88-20f7382dd24c",
        name: "Contributor",
        description: "Grants full access to manage all resources, but does not allow you to assign roles in Azure RBAC, manage assignments in Azure Blueprints, or share image galleries.",
        kind: "BuiltInRole",
        actions: &["*"],
        not_actions: &[
            "Microsoft.Authorization/*/Delete",
            "Microsoft.Authorization/*/Write",
            "Microsoft.Authorization/elevateAccess/Action",
            "Microsoft.Blueprint/blueprintAssignments/write",
            "Microsoft.Blueprint/blueprintAssignments/delete",
            "Microsoft.Compute/galleries/share/action",
            "Microsoft.Purview/consents/write",
            "Microsoft.Purview/consents/delete",
            "Microsoft.Resources/deploymentStacks/manageDenySetting/action",
            "Microsoft.Subscription/cancel/action",
            "Microsoft.Subscription/enable/action",
        ],
    },
    BuiltIn {
        guid: "acdd72a7-3385-48ef-bd42-f606fba81ae7",
        name: "Reader",
        description: "View all resources, but does not allow you to make any changes.",
        kind: "BuiltInRole",
        actions: &["*/read"],
        not_actions: &[],
    },
    BuiltIn {
        guid: "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
        name: "User Access Administrator",
        description: "Lets you manage user access to Azure resources.",
        kind: "BuiltInRole",
        actions: &["*/read", "Microsoft.Authorization/*", "Microsoft.Support/*"],
        not_actions: &[],
    },
    BuiltIn {
        guid: "f58310d9-a9f6-439a-9e8d-f62e7b41a168",
        name: "Role Based Access Control Administrator",
        description: "Manage access to Azure resources by assigning roles using Azure RBAC. This role does not allow you to manage access using other ways, such as Azure Policy.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Authorization/roleAssignments/write",
            "Microsoft.Authorization/roleAssignments/delete",
            "*/read",
            "Microsoft.Support/*",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "a1f96423-95ce-4224-ab27-4e3dc72facd4",
        name: "Azure Red Hat OpenShift Cloud Controller Manager",
        description: "Manage and update the cloud controller manager deployed on top of OpenShift.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Compute/virtualMachines/read",
            "Microsoft.Network/loadBalancers/backendAddressPools/join/action",
            "Microsoft.Network/loadBalancers/read",
            "Microsoft.Network/loadBalancers/write",
            "Microsoft.Network/networkInterfaces/read",
            "Microsoft.Network/networkInterfaces/write",
            "Microsoft.Network/networkSecurityGroups/read",
            "Microsoft.Network/networkSecurityGroups/write",
            "Microsoft.Network/publicIPAddresses/join/action",
            "Microsoft.Network/publicIPAddresses/read",
            "Microsoft.Network/publicIPAddresses/write",
            "Microsoft.Network/virtualNetworks/subnets/join/action",
            "Microsoft.Network/virtualNetworks/subnets/read",
            "Microsoft.Network/loadBalancers/inboundNatRules/join/action",
            "Microsoft.Network/networkSecurityGroups/join/action",
            "Microsoft.Network/publicIPPrefixes/join/action",
            "Microsoft.Network/applicationSecurityGroups/joinNetworkSecurityRule/action",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "0336e1d3-7a87-462b-b6db-342b63f7802c",
        name: "Azure Red Hat OpenShift Cluster Ingress Operator",
        description: "Manage and configure the OpenShift router.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Network/dnsZones/A/delete",
            "Microsoft.Network/dnsZones/A/write",
            "Microsoft.Network/privateDnsZones/A/delete",
            "Microsoft.Network/privateDnsZones/A/write",
            "Microsoft.Network/virtualNetworks/subnets/read",
            "Microsoft.Network/virtualNetworks/subnets/join/action",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "0d7aedc0-15fd-4a67-a412-efad370c947e",
        name: "Azure Red Hat OpenShift File Storage Operator",
        description: "Install Container Storage Interface (CSI) drivers that enable your cluster to use Azure Files. Set OpenShift cluster-wide storage defaults to ensure a default storageclass exists for clusters.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Storage/storageAccounts/delete",
            "Microsoft.Storage/storageAccounts/fileServices/read",
            "Microsoft.Storage/storageAccounts/fileServices/shares/delete",
            "Microsoft.Storage/storageAccounts/fileServices/shares/read",
            "Microsoft.Storage/storageAccounts/fileServices/shares/write",
            "Microsoft.Storage/storageAccounts/listKeys/action",
            "Microsoft.Storage/storageAccounts/read",
            "Microsoft.Storage/storageAccounts/write",
            "Microsoft.Network/networkSecurityGroups/join/action",
            "Microsoft.Network/virtualNetworks/subnets/read",
            "Microsoft.Network/virtualNetworks/subnets/write",
            "Microsoft.Network/routeTables/join/action",
            "Microsoft.Network/natGateways/join/action",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "5b7237c5-45e1-49d6-bc18-a1f62f400748",
        name: "Azure Red Hat OpenShift Disk Storage Operator",
        description: "Install Container Storage Interface (CSI) drivers that enable your cluster to use Azure Disks. Set OpenShift cluster-wide storage defaults to ensure a default storageclass exists for clusters.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Compute/virtualMachines/write",
            "Microsoft.Compute/virtualMachines/read",
            "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/write",
            "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
            "Microsoft.Compute/virtualMachineScaleSets/read",
            "Microsoft.Compute/snapshots/write",
            "Microsoft.Compute/snapshots/read",
            "Microsoft.Compute/snapshots/delete",
            "Microsoft.Compute/locations/operations/read",
            "Microsoft.Compute/locations/DiskOperations/read",
            "Microsoft.Compute/disks/write",
            "Microsoft.Compute/disks/read",
            "Microsoft.Compute/disks/delete",
            "Microsoft.Compute/disks/beginGetAccess/action",
            "Microsoft.Compute/diskEncryptionSets/read",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "be7a6435-15ae-4171-8f30-4a343eff9e8f",
        name: "Azure Red Hat OpenShift Network Operator",
        description: "Install and upgrade the networking components on an OpenShift cluster.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Network/networkInterfaces/read",
            "Microsoft.Network/networkInterfaces/write",
            "Microsoft.Network/virtualNetworks/read",
            "Microsoft.Network/virtualNetworks/subnets/join/action",
            "Microsoft.Network/loadBalancers/backendAddressPools/join/action",
            "Microsoft.Network/loadBalancers/backendAddressPools/read",
            "Microsoft.Compute/virtualMachines/read",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5",
        name: "Azure Red Hat OpenShift Image Registry Operator",
        description: "Enables permissions for the operator to manage a singleton instance of the OpenShift image registry. It manages all configuration of the registry, including creating storage.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Storage/storageAccounts/blobServices/read",
            "Microsoft.Storage/storageAccounts/blobServices/containers/read",
            "Microsoft.Storage/storageAccounts/blobServices/containers/write",
            "Microsoft.Storage/storageAccounts/blobServices/containers/delete",
            "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
            "Microsoft.Storage/storageAccounts/read",
            "Microsoft.Storage/storageAccounts/write",
            "Microsoft.Storage/storageAccounts/delete",
            "Microsoft.Storage/storageAccounts/listKeys/action",
            "Microsoft.Resources/tags/write",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "88366f10-ed47-4cc0-9fab-c8a06148393e",
        name: "Azure Red Hat OpenShift Hosted Control Planes Cluster API Provider",
        description: "Enables permissions to allow cluster API to manage nodes, networks and disks for OpenShift cluster.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Compute/disks/delete",
            "Microsoft.Compute/disks/read",
            "Microsoft.Compute/disks/write",
            "Microsoft.Compute/diskEncryptionSets/read",
            "Microsoft.Compute/availabilitySets/delete",
            "Microsoft.Compute/availabilitySets/read",
            "Microsoft.Compute/availabilitySets/write",
            "Microsoft.Compute/virtualMachines/delete",
            "Microsoft.Compute/virtualMachines/read",
            "Microsoft.Compute/virtualMachines/write",
            "Microsoft.Network/loadBalancers/backendAddressPools/join/action",
            "Microsoft.Network/networkInterfaces/delete",
            "Microsoft.Network/networkInterfaces/join/action",
            "Microsoft.Network/networkInterfaces/read",
            "Microsoft.Network/networkInterfaces/write",
            "Microsoft.Network/virtualNetworks/subnets/join/action",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "fc0c873f-45e9-4d0d-a7d1-585aab30c6ed",
        name: "Azure Red Hat OpenShift Hosted Control Planes Control Plane Operator",
        description: "Enables the control plane operator to read resources necessary for OpenShift cluster.",
        kind: "BuiltInRole",
        actions: &[
            "Microsoft.Resources/subscriptions/resourceGroups/read",
            "Microsoft.Network/virtualNetworks/read",
            "Microsoft.Network/networkSecurityGroups/read",
        ],
        not_actions: &[],
    },
    BuiltIn {
        guid: "7d8bb4e4-6fa7-4545-96cf-20fce11b705d",
        name: "HyperShift Control Plane Operator (custom)",
        description: "The custom role HyperShift's --assign-custom-hcp-roles assigns to the control plane operator (CPOCustomRoleDefinitionID).",
        kind: "CustomRole",
        actions: &[],
        not_actions: &[],
    },
];

/// The role a GUID names, if any.
pub(crate) fn find(guid: &Uuid) -> Option<&'static BuiltIn> {
    BUILT_IN
        .iter()
        .find(|b| Uuid::parse_str(b.guid).is_ok_and(|g| &g == guid))
}

/// The role as `GET …/roleDefinitions/{id}` answers it (GetRoleDefinitionById.json): the id at
/// the caller's subscription.
fn render(b: &BuiltIn, sub: &str) -> Value {
    json!({
        "id": format!("/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{}", b.guid),
        "type": "Microsoft.Authorization/roleDefinitions",
        "name": b.guid,
        "properties": {
            "roleName": b.name,
            "type": b.kind,
            "description": b.description,
            "assignableScopes": ["/"],
            "permissions": [{
                "actions": b.actions,
                "notActions": b.not_actions,
                "dataActions": [],
                "notDataActions": [],
            }],
            "createdOn": PUBLISHED_ON,
            "updatedOn": PUBLISHED_ON,
            "createdBy": null,
            "updatedBy": null,
        },
    })
}

/// `GET {scope}/providers/Microsoft.Authorization/roleDefinitions/{id}`.
pub(super) fn get(store: &Store, r: &AuthzRef, name: &str) -> Result<Response> {
    scope::resolve(store, r, false)?;
    let guid = Uuid::parse_str(name).unwrap_or(Uuid::nil());
    let role = find(&guid).ok_or_else(|| role_definition_does_not_exist(&guid))?;
    Ok(json_response(StatusCode::OK, render(role, &r.sub)))
}

/// `GET {scope}/providers/Microsoft.Authorization/roleDefinitions[?$filter=roleName eq '…' |
/// type eq 'BuiltInRole']`.
pub(super) fn list(ctx: &Ctx<'_>, store: &Store, r: &AuthzRef) -> Result<Response> {
    scope::resolve(store, r, false)?;
    let filter = ctx.query.get("$filter").map(String::as_str);
    let keep: Box<dyn Fn(&BuiltIn) -> bool> = match filter {
        None => Box::new(|_| true),
        Some(f) => {
            let (field, value) = f
                .split_once(" eq ")
                .map(|(l, r)| (l.trim(), r.trim().trim_matches('\'').to_owned()))
                .ok_or_else(|| invalid_filter(f))?;
            if field.eq_ignore_ascii_case("roleName") {
                Box::new(move |b| b.name.eq_ignore_ascii_case(&value))
            } else if field.eq_ignore_ascii_case("type") {
                Box::new(move |b| b.kind.eq_ignore_ascii_case(&value))
            } else {
                return Err(invalid_filter(f));
            }
        }
    };
    let items = BUILT_IN
        .iter()
        .filter(|b| keep(b))
        .map(|b| render(b, &r.sub))
        .collect();
    Ok(page(ctx, items))
}
