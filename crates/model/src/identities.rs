//! The workload identities of a self-managed Azure HostedCluster: 8 user-assigned managed
//! identities and their federated credentials (docs/reference/hypershift-azure.md §2.2):
//! HyperShift's 7 for the guest cluster's components, and the control-plane operator's, which
//! `hypershift create iam azure` always makes too (it passes no topology). The subjects name
//! service accounts inside the hosted cluster; the audience is always `openshift`.
//!
//! The reference's prose says "7 MIs / 14 FICs", but its own table and HyperShift's code
//! (`GetWorkloadIdentityDefinitions`) list 12 credentials for these 7 identities (3 disk,
//! 3 file, 2 image registry, 1 each for the rest). We follow the code.

/// Audience of every federated credential.
pub const AUDIENCE: &str = "openshift";

/// One managed identity and the service accounts that may use it.
#[derive(Debug, Clone, Copy)]
pub struct WorkloadIdentity {
    /// Key in `HostedCluster.spec.platform.azure.azureAuthenticationConfig.workloadIdentities`.
    pub key: &'static str,
    /// Infix of the managed identity name: `NAME-<suffix>-INFRA`.
    pub suffix: &'static str,
    /// (federated credential suffix, `system:serviceaccount:NS:SA` subject).
    pub credentials: &'static [(&'static str, &'static str)],
}

/// The canonical set, in the order HyperShift writes them.
pub const WORKLOAD_IDENTITIES: &[WorkloadIdentity] = &[
    WorkloadIdentity {
        key: "disk",
        suffix: "disk",
        credentials: &[
            (
                "disk-fed-id-node",
                "system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-node-sa",
            ),
            (
                "disk-fed-id-operator",
                "system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-operator",
            ),
            (
                "disk-fed-id-controller",
                "system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-controller-sa",
            ),
        ],
    },
    WorkloadIdentity {
        key: "file",
        suffix: "file",
        credentials: &[
            (
                "file-fed-id-node",
                "system:serviceaccount:openshift-cluster-csi-drivers:azure-file-csi-driver-node-sa",
            ),
            (
                "file-fed-id-operator",
                "system:serviceaccount:openshift-cluster-csi-drivers:azure-file-csi-driver-operator",
            ),
            (
                "file-fed-id-controller",
                "system:serviceaccount:openshift-cluster-csi-drivers:azure-file-csi-driver-controller-sa",
            ),
        ],
    },
    WorkloadIdentity {
        key: "imageRegistry",
        suffix: "image-registry",
        credentials: &[
            (
                "image-registry-fed-id-registry",
                "system:serviceaccount:openshift-image-registry:registry",
            ),
            (
                "image-registry-fed-id-operator",
                "system:serviceaccount:openshift-image-registry:cluster-image-registry-operator",
            ),
        ],
    },
    WorkloadIdentity {
        key: "ingress",
        suffix: "ingress",
        credentials: &[(
            "ingress-fed-id",
            "system:serviceaccount:openshift-ingress-operator:ingress-operator",
        )],
    },
    WorkloadIdentity {
        key: "cloudProvider",
        suffix: "cloud-provider",
        credentials: &[(
            "cloud-provider-fed-id",
            "system:serviceaccount:kube-system:azure-cloud-provider",
        )],
    },
    WorkloadIdentity {
        key: "nodePoolManagement",
        suffix: "node-pool-mgmt",
        credentials: &[(
            "node-pool-mgmt-fed-id",
            "system:serviceaccount:kube-system:capi-provider",
        )],
    },
    WorkloadIdentity {
        key: "network",
        suffix: "network",
        credentials: &[(
            "network-fed-id",
            "system:serviceaccount:openshift-cloud-network-config-controller:cloud-network-config-controller",
        )],
    },
    WorkloadIdentity {
        key: "controlPlaneOperator",
        suffix: "control-plane-operator",
        credentials: &[(
            "cpo-fed-id",
            "system:serviceaccount:kube-system:control-plane-operator",
        )],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_identities_thirteen_credentials_as_hypershift_code() {
        assert_eq!(WORKLOAD_IDENTITIES.len(), 8);
        assert_eq!(
            WORKLOAD_IDENTITIES
                .iter()
                .map(|w| w.credentials.len())
                .sum::<usize>(),
            13
        );
    }
}

/// A resource group a role is granted on, by its part in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleScope {
    /// The managed ("main") resource group.
    Managed,
    /// The VNet's resource group (ours, or the one of a VNet the user brought).
    Vnet,
    /// The NSG's resource group (ours, or the one of an NSG the user brought).
    Nsg,
    /// The resource group of the user's public DNS zone of the base domain (HyperShift's
    /// `--dns-zone-rg-name`): the ingress operator writes `*.apps` there.
    PublicZone,
}

/// One identity's built-in role, and where it holds it (docs/reference/hypershift-azure.md §2.4,
/// from HyperShift's `cmd/infra/azure/rbac.go`).
#[derive(Debug, Clone, Copy)]
pub struct RoleGrant {
    /// The identity's key in [`WORKLOAD_IDENTITIES`].
    pub identity: &'static str,
    /// HyperShift's component string: part of the assignment's deterministic name.
    pub component: &'static str,
    /// The built-in role definition's GUID.
    pub role: &'static str,
    pub scopes: &'static [RoleScope],
}

/// The Contributor role.
pub const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// Every grant of the seven identities.
pub const ROLE_GRANTS: &[RoleGrant] = {
    use RoleScope::{Managed, Nsg, PublicZone, Vnet};
    &[
        RoleGrant {
            identity: "cloudProvider",
            component: "cloud-provider",
            role: "a1f96423-95ce-4224-ab27-4e3dc72facd4",
            scopes: &[Managed, Nsg, Vnet],
        },
        RoleGrant {
            identity: "ingress",
            component: "ingress",
            role: "0336e1d3-7a87-462b-b6db-342b63f7802c",
            scopes: &[Managed, Vnet, PublicZone],
        },
        RoleGrant {
            identity: "file",
            component: "azure-file",
            role: "0d7aedc0-15fd-4a67-a412-efad370c947e",
            scopes: &[Managed, Nsg, Vnet],
        },
        RoleGrant {
            identity: "disk",
            component: "azure-disk",
            role: "5b7237c5-45e1-49d6-bc18-a1f62f400748",
            scopes: &[Managed],
        },
        RoleGrant {
            identity: "network",
            component: "cncc",
            role: "be7a6435-15ae-4171-8f30-4a343eff9e8f",
            scopes: &[Managed, Vnet],
        },
        RoleGrant {
            identity: "imageRegistry",
            component: "ciro",
            role: "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5",
            scopes: &[Managed],
        },
        RoleGrant {
            identity: "nodePoolManagement",
            component: "capz",
            role: CONTRIBUTOR,
            scopes: &[Managed, Vnet],
        },
        RoleGrant {
            identity: "controlPlaneOperator",
            component: "cpo",
            role: CONTRIBUTOR,
            scopes: &[Managed, Nsg, Vnet],
        },
    ]
};

/// The deterministic name of an assignment: UUIDv5 (DNS namespace) of
/// `<infra id>-<component>-<scope>`, as HyperShift derives it, so a retry or a delete finds
/// it again without a look-up.
pub fn role_assignment_name(infra_id: &str, component: &str, scope: &str) -> String {
    uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_DNS,
        format!("{infra_id}-{component}-{scope}").as_bytes(),
    )
    .to_string()
}

#[cfg(test)]
mod role_tests {
    use super::*;

    #[test]
    fn every_grant_names_an_identity_and_a_guid() {
        for g in ROLE_GRANTS {
            assert!(
                WORKLOAD_IDENTITIES.iter().any(|w| w.key == g.identity),
                "{}",
                g.identity
            );
            assert!(uuid::Uuid::parse_str(g.role).is_ok(), "{}", g.role);
            assert!(g.scopes.contains(&RoleScope::Managed), "{}", g.component);
        }
        let total: usize = ROLE_GRANTS.iter().map(|g| g.scopes.len()).sum();
        assert_eq!(total, 18);
    }

    #[test]
    fn assignment_names_are_uuid_v5_of_infra_component_and_scope() {
        let scope = "/subscriptions/s/resourceGroups/demo-demo-abcde";
        let name = role_assignment_name("demo-abcde", "capz", scope);
        assert_eq!(name, role_assignment_name("demo-abcde", "capz", scope));
        assert_ne!(name, role_assignment_name("demo-abcde", "ciro", scope));
        let parsed = uuid::Uuid::parse_str(&name).unwrap();
        assert_eq!(parsed.get_version_num(), 5);
    }
}
