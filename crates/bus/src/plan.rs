//! Asking the services what an operation would do, before it does anything: the dry run and
//! the preflight, answered by the code the steps run.
//!
//! The gateway sends a [`PlanRequest`] on `<p>.<tenant>.plan.<service>` (core NATS request and
//! reply, no stream: nothing is kept, and an unanswered request is simply retried or reported)
//! for the steps that service owns, level by level of the operation's DAG, and each service
//! answers a [`PlanReply`]: per step, the Azure resources and Kubernetes objects it would
//! create, change, delete or only read, what it found in the way (a missing zone, a quota, a
//! permission, a network that does not fit) and the outputs it predicts for the steps after it.
//! A plan changes nothing: the services run it with every mutating call refused.

use hypersaga_model::{ErrorInfo, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::envelope::{Action, ENVELOPE_VERSION, Outputs, StepCommand, StepContext};

/// The operation id plan commands carry: no saga runs them.
pub const PLAN_OPERATION: &str = "plan";

/// What the gateway asks one service: the plans of `steps`, in the order given, against
/// `context` (whose outputs are the ones the steps before predicted).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlanRequest {
    pub v: u32,
    pub tenant: TenantId,
    pub cluster: String,
    pub steps: Vec<PlannedStep>,
    pub context: StepContext,
}

/// One step to plan, and which of its actions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedStep {
    pub step: String,
    pub action: Action,
}

impl PlanRequest {
    pub fn new(
        tenant: TenantId,
        cluster: &str,
        steps: Vec<PlannedStep>,
        context: StepContext,
    ) -> Self {
        Self {
            v: ENVELOPE_VERSION,
            tenant,
            cluster: cluster.to_owned(),
            steps,
            context,
        }
    }

    /// The command a step's code is handed to plan `step`: the request's context, no saga,
    /// no fence (every mutating call is refused while a plan runs).
    pub fn command(&self, step: &PlannedStep) -> StepCommand {
        StepCommand {
            v: self.v,
            saga_id: PLAN_OPERATION.to_owned(),
            tenant: self.tenant.clone(),
            cluster: self.cluster.clone(),
            step: step.step.clone(),
            action: step.action,
            attempt: 1,
            fence: 0,
            not_before: None,
            deadline: OffsetDateTime::now_utc(),
            lease_ms: 0,
            memo: serde_json::Value::Null,
            waiting_since: None,
            dispatched_in: None,
            context: self.context.clone(),
        }
    }
}

/// A service's answer: one plan per step asked, in order, or why it could not plan.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PlanReply {
    pub v: u32,
    #[serde(default)]
    pub steps: Vec<StepPlan>,
    /// The service could not plan at all (a step it does not own, a tenant it does not know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

/// What one step would do.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepPlan {
    pub step: String,
    pub changes: Vec<Change>,
    /// What stands in the step's way; an operation with any is refused before it starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The outputs the step would report, for the plans of the steps after it.
    #[serde(default, skip_serializing_if = "Outputs::is_empty")]
    pub outputs: Outputs,
}

/// Where a change is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Azure Resource Manager (and Entra): a resource by its id.
    Azure,
    /// Azure Storage's data plane (the tenant's issuer documents).
    Storage,
    /// The management cluster's Kubernetes API.
    ManagementCluster,
    /// The hosted cluster's own Kubernetes API.
    HostedCluster,
}

/// What a step does to one resource or object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    /// Made if missing (adopted if it is there: every step is idempotent).
    Create,
    /// Changed in place.
    Update,
    /// Removed.
    Delete,
    /// Read and used, never written (the user's network, the public zone).
    Read,
}

/// One resource or object a step would touch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub target: Option<Target>,
    pub verb: Option<Verb>,
    /// ARM resource type (`Microsoft.Network/virtualNetworks`) or Kubernetes
    /// `apiVersion/Kind` (`hypershift.openshift.io/v1beta1/HostedCluster`).
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// ARM id, Kubernetes `namespace/name`, or blob path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub location: String,
    /// What the plan cannot know yet (a name or type that depends on what Azure or
    /// HyperShift will answer).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Something in an operation's way, found before anything is written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The request's field it is about (`spec.node_pools[0].vm_size`).
    pub field: String,
    /// What kind of precondition (`QUOTA`, `PERMISSION`, `NETWORK`, `DNS_ZONE`, `RELEASE`).
    pub kind: String,
    /// What is wrong, in Azure's (or HyperShift's) words where it has some.
    pub message: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub remedy: String,
}
