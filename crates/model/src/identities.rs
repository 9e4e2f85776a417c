//! The workload identities of a self-managed Azure HostedCluster: 7 user-assigned managed
//! identities and their federated credentials (hypershift-azure.md §2.2). The subjects name
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
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_identities_twelve_credentials_as_hypershift_code() {
        assert_eq!(WORKLOAD_IDENTITIES.len(), 7);
        assert_eq!(
            WORKLOAD_IDENTITIES
                .iter()
                .map(|w| w.credentials.len())
                .sum::<usize>(),
            12
        );
    }
}
