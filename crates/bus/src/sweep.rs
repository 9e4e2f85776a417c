//! Finding what hypersaga made that no live cluster owns: the sweeper's inventory, answered
//! by the code the sweep's steps run.
//!
//! The gateway sends a [`SweepRequest`] on `<p>.<tenant>.sweep.<service>` (core NATS request
//! and reply, like a plan request: nothing is kept) and each service answers a
//! [`SweepReply`]: every Azure resource it tagged (`hypersaga.io_tenant`,
//! `hypersaga.io_cluster`) and every Kubernetes object it labelled (`hypersaga.io/tenant`,
//! `hypersaga.io/cluster`) of the kinds it owns, for the tenant or one of its clusters. Which of
//! them no live cluster owns is the gateway's to judge, from the cluster records; removing them
//! is an operation (`sweep`) whose steps list again, keep what the record's own cluster made
//! (its infra id, its namespace: not an earlier cluster's of the same name, nor another
//! installation's) and delete it; a resource group goes with whatever is in it. A listing
//! changes nothing: the services run it with every mutating call refused.

use hypersaga_model::{ErrorInfo, TenantId};
use serde::{Deserialize, Serialize};

use crate::envelope::ENVELOPE_VERSION;
use crate::plan::Target;

/// What the gateway asks one service: what it made for `tenant` (for one of its clusters, or
/// for any).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepRequest {
    pub v: u32,
    pub tenant: TenantId,
    /// One cluster's, or every cluster's when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

impl SweepRequest {
    pub fn new(tenant: TenantId, cluster: Option<String>) -> Self {
        Self {
            v: ENVELOPE_VERSION,
            tenant,
            cluster,
        }
    }
}

/// A service's answer: what it found, or why it could not look.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SweepReply {
    pub v: u32,
    #[serde(default)]
    pub found: Vec<Made>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

/// One resource or object hypersaga made, as its tags or labels say.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Made {
    /// The cluster its tags or labels name.
    pub cluster: String,
    pub target: Option<Target>,
    /// ARM resource type, or Kubernetes `apiVersion/Kind`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// ARM id, or Kubernetes `namespace/name` (`name` for a cluster-scoped object).
    pub id: String,
    /// The api-version it is deleted with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Its region, or the management cluster it is on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub location: String,
    /// The operation that made it (its saga tag or label), when it says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operation: String,
    /// What it was found through, when it carries no tags of its own (a role assignment: its
    /// identity's id).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub of: String,
}

impl Made {
    /// Whether it was made by the cluster `names` names, not by another of the same name (an
    /// earlier one, or another installation's): an Azure resource whose id (or, found through
    /// another, that one's) carries the cluster's infra id, as every name hypersaga gives a
    /// cluster's resources or their groups does; a management-cluster object in, or being,
    /// the cluster's namespace (named after its tenant and infra id).
    pub fn is_of(&self, names: &hypersaga_model::Names) -> bool {
        let id = if self.of.is_empty() {
            &self.id
        } else {
            &self.of
        };
        match self.target {
            Some(Target::Azure) => id
                .to_ascii_lowercase()
                .contains(&names.infra_id.to_ascii_lowercase()),
            Some(Target::ManagementCluster) => {
                id == &names.namespace || id.starts_with(&format!("{}/", names.namespace))
            }
            _ => false,
        }
    }
}

impl SweepReply {
    pub fn found(found: Vec<Made>) -> Self {
        Self {
            v: ENVELOPE_VERSION,
            found,
            error: None,
        }
    }

    pub fn refused(error: ErrorInfo) -> Self {
        Self {
            v: ENVELOPE_VERSION,
            found: Vec::new(),
            error: Some(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use hypersaga_model::{Names, TenantId};

    use super::*;

    #[test]
    fn only_what_the_clusters_own_infra_id_and_namespace_name_is_its() {
        let acme = TenantId::new("acme").unwrap();
        let names = Names::new(&acme, "demo", "demo-abc12", "example.com");
        let other = Names::new(&acme, "demo", "demo-zzz99", "example.com");
        let azure = |id: &str, of: &str| Made {
            target: Some(Target::Azure),
            id: id.into(),
            of: of.into(),
            ..Made::default()
        };
        let vnet = azure(
            "/subscriptions/s/resourceGroups/demo-vnet-demo-abc12/providers/Microsoft.Network/virtualNetworks/demo-demo-abc12",
            "",
        );
        assert!(vnet.is_of(&names) && !vnet.is_of(&other));
        let assignment = azure(
            "/subscriptions/s/resourceGroups/dns/providers/Microsoft.Authorization/roleAssignments/1",
            "/subscriptions/s/resourceGroups/hcp-acme-identities/providers/Microsoft.ManagedIdentity/userAssignedIdentities/demo-disk-demo-abc12",
        );
        assert!(assignment.is_of(&names) && !assignment.is_of(&other));
        let kube = |id: &str| Made {
            target: Some(Target::ManagementCluster),
            id: id.into(),
            ..Made::default()
        };
        assert!(kube(&names.namespace).is_of(&names));
        assert!(kube(&format!("{}/demo", names.namespace)).is_of(&names));
        assert!(!kube(&format!("{}/demo", other.namespace)).is_of(&names));
        assert!(!kube(&format!("{}x/demo", names.namespace)).is_of(&names));
    }
}
