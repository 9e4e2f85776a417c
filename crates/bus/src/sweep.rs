//! Finding what hypersaga made that no live cluster owns: the sweeper's inventory, answered
//! by the code the sweep's steps run.
//!
//! The gateway sends a [`SweepRequest`] on `<p>.<tenant>.sweep.<service>` (core NATS request
//! and reply, like a plan request: nothing is kept) and each service answers a
//! [`SweepReply`]: every Azure resource it tagged (`hypersaga.io_tenant`,
//! `hypersaga.io_cluster`) and every Kubernetes object it labelled (`hypersaga.io/tenant`,
//! `hypersaga.io/cluster`) of the kinds it owns, for the tenant or one of its clusters. Which of
//! them no live cluster owns is the gateway's to judge, from the cluster records; removing them
//! is an operation (`sweep`) whose steps list again and delete, so a sweep cannot remove other
//! than what its listing showed. A listing changes nothing: the services run it with every
//! mutating call refused.

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
