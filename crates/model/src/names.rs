//! Deterministic names for everything a cluster creates. A retried step re-derives the same
//! names, finds what an earlier attempt created, and adopts it instead of creating twice.
//! Names follow `hypershift create infra/iam azure` (docs/reference/hypershift-azure.md §1–§2).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tenant::TenantId;

/// Longest name part of an infra id before its 6-character suffix (HyperShift keeps
/// `base-xxxxx` within 27 characters).
const INFRA_BASE_MAX: usize = 21;

/// Longest cluster name and infra id together. A subnet's id holds both twice
/// (`…/resourceGroups/NAME-vnet-INFRA/…/virtualNetworks/NAME-INFRA/subnets/default`) and
/// HyperShift's CRD caps it (and the VNet's and NSG's) at 255 characters: with a
/// subscription id that leaves 60. A long name so gets a shorter infra id base.
const MAX_NAME_AND_INFRA: usize = 60;

/// Derives the infra id from the cluster name and its uid: stable for one cluster, different
/// for a re-created cluster of the same name (so a stale resource is never mistaken for ours).
pub fn infra_id(name: &str, uid: &str) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while base.contains("--") {
        base = base.replace("--", "-");
    }
    let base = base.trim_matches('-');
    let base_max = INFRA_BASE_MAX.min(MAX_NAME_AND_INFRA.saturating_sub(name.len() + 6));
    let base: String = base.chars().take(base_max.max(1)).collect();
    format!("{}-{}", base.trim_end_matches('-'), digest36(uid, 5))
}

/// The first `n` characters (at most 32) of `input`'s digest, in lower-case letters and digits.
fn digest36(input: &str, n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    Sha256::digest(input.as_bytes())
        .iter()
        .take(n)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// Kubernetes' limit on a namespace name (an RFC 1123 label).
pub const MAX_NAMESPACE: usize = 63;
/// Characters of the digest that names a cluster's management-cluster namespace.
const NAMESPACE_DIGEST: usize = 10;
/// Length of a cluster's management-cluster namespace (`hcp-` and the digest).
pub const NAMESPACE_LEN: usize = 4 + NAMESPACE_DIGEST;

/// Every name of one cluster, derived once from (tenant, name, infra id, base domain).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Names {
    pub cluster: String,
    pub infra_id: String,
    /// The managed ("main") resource group: private DNS zone, public IP, load balancer.
    pub managed_rg: String,
    pub vnet_rg: String,
    pub nsg_rg: String,
    pub nsg: String,
    pub vnet: String,
    pub subnet: String,
    pub private_zone: String,
    pub vnet_link: String,
    pub public_ip: String,
    pub load_balancer: String,
    /// Persistent resource group of the tenant's workload identities (survives clusters).
    pub identity_rg: String,
    /// Management-cluster namespace holding the HostedCluster, NodePools and secrets.
    pub namespace: String,
    pub pull_secret: String,
    pub signing_key_secret: String,
    pub cloud_credentials_secret: String,
}

impl Names {
    pub fn new(tenant: &TenantId, cluster: &str, infra_id: &str, base_domain: &str) -> Self {
        let n = cluster;
        let i = infra_id;
        Self {
            cluster: n.to_owned(),
            infra_id: i.to_owned(),
            managed_rg: format!("{n}-{i}"),
            vnet_rg: format!("{n}-vnet-{i}"),
            nsg_rg: format!("{n}-nsg-{i}"),
            nsg: format!("{n}-{i}-nsg"),
            vnet: format!("{n}-{i}"),
            subnet: "default".to_owned(),
            private_zone: format!("{n}.{base_domain}"),
            vnet_link: format!("{n}-{i}"),
            public_ip: i.to_owned(),
            load_balancer: i.to_owned(),
            identity_rg: identity_resource_group(tenant),
            // HyperShift runs the control plane in the namespace `<namespace>-<name>`, which
            // must fit Kubernetes' 63 characters with a 40-character name: a short digest,
            // unique per tenant and infra id (the management cluster is shared by tenants).
            namespace: format!(
                "hcp-{}",
                digest36(&format!("{tenant}/{i}"), NAMESPACE_DIGEST)
            ),
            pull_secret: format!("{n}-pull-secret"),
            // HyperShift's own naming: no hyphen between the name and the suffix.
            signing_key_secret: format!("{n}sa-token-issuer-key"),
            cloud_credentials_secret: format!("{n}-cloud-credentials"),
        }
    }

    /// The namespace HyperShift creates for the hosted control plane (its
    /// `HostedControlPlaneNamespace`: the HostedCluster's namespace and name).
    pub fn control_plane_namespace(&self) -> String {
        format!("{}-{}", self.namespace, self.cluster).replace('.', "-")
    }

    /// The NodePool object name for a pool of this cluster.
    pub fn node_pool(&self, pool: &str) -> String {
        format!("{}-{pool}", self.cluster)
    }

    /// The user-assigned managed identity of a workload-identity component.
    pub fn identity(&self, suffix: &str) -> String {
        format!("{}-{suffix}-{}", self.cluster, self.infra_id)
    }

    /// A federated identity credential name (`NAME-disk-fed-id-node`, …).
    pub fn federated_credential(&self, fic_suffix: &str) -> String {
        format!("{}-{fic_suffix}", self.cluster)
    }
}

/// The tenant's persistent resource group for workload identities.
pub fn identity_resource_group(tenant: &TenantId) -> String {
    format!("hcp-{tenant}-identities")
}

/// The blob container that serves the tenant's OIDC issuer documents. Azure container names
/// allow no consecutive or trailing hyphens.
pub fn oidc_container(tenant: &TenantId) -> String {
    let mut s = format!("oidc-{tenant}");
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_end_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infra_id_is_stable_and_bounded() {
        let a = infra_id("demo", "uid-1");
        assert_eq!(a, infra_id("demo", "uid-1"));
        assert_ne!(a, infra_id("demo", "uid-2"));
        assert!(a.starts_with("demo-") && a.len() == 10, "{a}");
        let long = infra_id(&"x".repeat(40), "u");
        assert!(long.len() <= 27, "{long}");
    }

    #[test]
    fn names_follow_hypershift() {
        let t = TenantId::new("acme").unwrap();
        let n = Names::new(&t, "demo", "demo-abcde", "example.com");
        assert_eq!(n.managed_rg, "demo-demo-abcde");
        assert_eq!(n.vnet_rg, "demo-vnet-demo-abcde");
        assert_eq!(n.nsg_rg, "demo-nsg-demo-abcde");
        assert_eq!(n.nsg, "demo-demo-abcde-nsg");
        assert_eq!(n.private_zone, "demo.example.com");
        assert_eq!(n.public_ip, "demo-abcde");
        assert_eq!(n.identity("disk"), "demo-disk-demo-abcde");
        assert_eq!(
            n.federated_credential("disk-fed-id-node"),
            "demo-disk-fed-id-node"
        );
        assert_eq!(oidc_container(&TenantId::new("a--b-").unwrap()), "oidc-a-b");
    }

    #[test]
    fn the_ids_hypershift_caps_at_255_fit_for_the_longest_name() {
        let t = TenantId::new("acme").unwrap();
        let name = "c".repeat(crate::validate::MAX_CLUSTER_NAME);
        let n = Names::new(&t, &name, &infra_id(&name, "uid"), "example.com");
        let sub = "/subscriptions/00000000-0000-0000-0000-000000000000";
        let subnet = format!(
            "{sub}/resourceGroups/{}/providers/Microsoft.Network/virtualNetworks/{}/subnets/{}",
            n.vnet_rg, n.vnet, n.subnet
        );
        let nsg = format!(
            "{sub}/resourceGroups/{}/providers/Microsoft.Network/networkSecurityGroups/{}",
            n.nsg_rg, n.nsg
        );
        for id in [subnet, nsg] {
            assert!(id.len() <= 255, "{} characters: {id}", id.len());
        }
        // Short names keep HyperShift's infra id.
        assert_eq!(infra_id("demo", "u").len(), 10);
        assert!(infra_id(&"x".repeat(30), "u").len() == 27);
    }

    #[test]
    fn the_control_plane_namespace_of_the_longest_name_fits_kubernetes() {
        let t = TenantId::new("acme").unwrap();
        let name = "c".repeat(crate::validate::MAX_CLUSTER_NAME);
        let n = Names::new(&t, &name, &infra_id(&name, "uid"), "example.com");
        assert_eq!(n.namespace.len(), NAMESPACE_LEN);
        let cp = n.control_plane_namespace();
        assert!(cp.len() <= MAX_NAMESPACE, "{cp} is {} characters", cp.len());
        assert!(cp.ends_with(&name), "{cp}");
        // The management cluster is shared: the same infra id in two tenants is two namespaces.
        let other = Names::new(
            &TenantId::new("globex").unwrap(),
            &name,
            &n.infra_id,
            "x.com",
        );
        assert_ne!(other.namespace, n.namespace);
    }
}
