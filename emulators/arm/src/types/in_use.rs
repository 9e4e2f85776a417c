//! What still uses a resource, and how each resource provider refuses to delete a resource in
//! use. The refusals are synchronous (`400`, `409` for disks): the SDKs report them from the
//! DELETE itself ("Failure sending request: StatusCode=400 -- Original Error: Code=…").

use axum::http::StatusCode;
use serde_json::Value;

use super::references::Reference;
use crate::errors::ArmError;
use crate::store::{Store, StoredResource};

/// One reference to a resource (or to a sub-resource of it) held by another resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    /// The id the holder names (e.g. a subnet of the VNet asked about).
    pub target: String,
    /// The sub-resource holding the reference (a subnet, an IP configuration, a VM).
    pub holder: String,
    /// Store key of the stored resource that holds it.
    pub owner_key: String,
}

fn under(key: &str, prefix: &str) -> bool {
    key == prefix
        || key
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Every delete-blocking reference to `key` or to a sub-resource under it, except those the
/// resource holds to itself (a load balancer rule naming its own frontend).
pub fn users_of(store: &Store, key: &str) -> Vec<Use> {
    let mut uses = Vec::new();
    for r in store.all() {
        let Some(refs) = r.rtype.references else {
            continue;
        };
        let owner_key = r.id.to_ascii_lowercase();
        if under(&owner_key, key) {
            continue;
        }
        for Reference {
            target,
            holder,
            blocks_delete,
            ..
        } in refs(&r.id, &r.properties, &r.extra)
        {
            if blocks_delete && under(&target.to_ascii_lowercase(), key) {
                uses.push(Use {
                    target,
                    holder,
                    owner_key: owner_key.clone(),
                });
            }
        }
    }
    uses
}

/// The uses of `key` whose holders are not in `going` (keys of resources deleted together).
pub fn surviving_users(store: &Store, key: &str, going: &[String]) -> Vec<Use> {
    users_of(store, key)
        .into_iter()
        .filter(|u| !going.iter().any(|g| under(&u.owner_key, g)))
        .collect()
}

/// `…/virtualNetworks/v/subnets/s` → `s`.
fn last_segment(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

/// NRP: an NSG associated with subnets or NICs, as quoted in Azure/sap-hana#211.
pub(super) fn nsg_in_use(nsg: &StoredResource, users: &[Use]) -> ArmError {
    let holders: Vec<&str> = users.iter().map(|u| u.holder.as_str()).collect();
    ArmError::bad_request(
        "InUseNetworkSecurityGroupCannotBeDeleted",
        format!(
            "Network security group {} cannot be deleted because it is in use by the following \
             resources: {}. In order to delete the Network security group, remove the \
             association with the resource(s). To learn how to do this, see aka.ms/deletensg.",
            nsg.id,
            holders.join(", ")
        ),
    )
    .with_details(Vec::new())
}

/// NRP: a subnet with IP configurations in it, for a subnet DELETE, a VNet DELETE or a VNet
/// PUT that drops the subnet (kubernetes-sigs/cluster-api-provider-azure#172,
/// hashicorp/packer-plugin-azure#273, Azure/bicep#13267, Azure-Samples/jmeter-aci-terraform#69).
/// The quotes all name one user; the first one is named here.
pub fn subnet_in_use(use_: &Use) -> ArmError {
    ArmError::bad_request(
        "InUseSubnetCannotBeDeleted",
        format!(
            "Subnet {} is in use by {} and cannot be deleted. In order to delete the subnet, \
             delete all the resources within the subnet. See aka.ms/deletesubnet.",
            last_segment(&use_.target),
            use_.holder
        ),
    )
    .with_details(Vec::new())
}

pub(super) fn vnet_in_use(_vnet: &StoredResource, users: &[Use]) -> ArmError {
    match users.first() {
        Some(u) => subnet_in_use(u),
        None => ArmError::bad_request("InUseSubnetCannotBeDeleted", "Subnet is in use."),
    }
}

/// NRP: a public IP still allocated to a NIC IP configuration or a load balancer frontend
/// (ernestio/ernest#514, oap-project/cloudtik#158, microsoft/AzureTRE#4355; the two spaces
/// before "To learn" are NRP's).
pub(super) fn public_ip_in_use(pip: &StoredResource, users: &[Use]) -> ArmError {
    let holder = users.first().map_or("", |u| u.holder.as_str());
    ArmError::bad_request(
        "PublicIPAddressCannotBeDeleted",
        format!(
            "Public IP address {} can not be deleted since it is still allocated to resource \
             {holder}. In order to delete the public IP, disassociate/detach the Public IP \
             address from the resource.  To learn how to do this, see aka.ms/deletepublicip.",
            pip.id
        ),
    )
    .with_details(Vec::new())
}

/// NRP: a NIC attached to a VM (hashicorp/terraform-provider-azurerm#8105,
/// hashicorp/packer-plugin-azure#273).
pub(super) fn nic_in_use(nic: &StoredResource, users: &[Use]) -> ArmError {
    let holder = users.first().map_or("", |u| u.holder.as_str());
    nic_used_by(&nic.id, holder)
}

pub fn nic_used_by(nic_id: &str, user: &str) -> ArmError {
    ArmError::bad_request(
        "NicInUse",
        format!(
            "Network Interface {nic_id} is used by existing resource {user}. In order to delete \
             the network interface, it must be dissociated from the resource. To learn more, \
             see aka.ms/deletenic."
        ),
    )
    .with_details(Vec::new())
}

/// The disk resource provider: `409 OperationNotAllowed` for a disk attached to a VM (the AKS
/// troubleshooting page in MicrosoftDocs/azure-docs quotes "Status=409
/// Code=\"OperationNotAllowed\" Message=\"Disk … is attached to VM /subscriptions/….\"").
pub(super) fn disk_in_use(disk: &StoredResource, users: &[Use]) -> ArmError {
    let vm = users.first().map_or("", |u| u.holder.as_str());
    ArmError::new(
        StatusCode::CONFLICT,
        "OperationNotAllowed",
        format!("Disk {} is attached to VM {vm}.", disk.name),
    )
}

/// NRP: a NIC or load balancer PUT naming a public IP that another resource already holds, as
/// quoted in yingeli/pod-external-ip-operator (`Code="PublicIPAddressInUse"`).
pub fn public_ip_taken(holder: &str, pip: &str, other: &str) -> ArmError {
    ArmError::bad_request(
        "PublicIPAddressInUse",
        format!(
            "Resource {holder} is referencing public IP address {pip} that is already allocated \
             to resource {other}."
        ),
    )
    .with_details(Vec::new())
}

/// The resource provider's own error body, serialised, as ARM nests it in the details of a
/// failed resource-group delete.
pub fn nested(target: &str, err: &ArmError) -> Value {
    serde_json::json!({
        "target": target,
        "message": err.body().to_string(),
    })
}
