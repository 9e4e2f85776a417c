//! Message envelopes. Every envelope carries `v` (its schema version) so old and new
//! services can coexist during a rolling upgrade.

use std::collections::BTreeMap;

use hypersaga_model::{ClusterSpec, ErrorInfo, Names, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::steps::{StepId, StepOutputs};

/// Current version of the command and event envelopes.
pub const ENVELOPE_VERSION: u32 = 1;
/// Current version of the audit event schema (documented in docs/events.md).
pub const AUDIT_VERSION: u32 = 1;

/// Whether a step creates (`do`) or removes (`undo`) what it owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Do,
    Undo,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Do => "do",
            Self::Undo => "undo",
        }
    }
}

/// Outputs of one step: resource ids and values later steps need, by name.
pub type Outputs = BTreeMap<String, Value>;

/// Everything a service needs to run a step, so services keep no state of their own.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepContext {
    pub cluster_uid: String,
    pub names: Names,
    pub spec: ClusterSpec,
    /// Outputs of the steps that have succeeded so far, by step id.
    #[serde(default)]
    pub outputs: BTreeMap<String, Outputs>,
    /// The management cluster the cluster was placed on: where its HostedCluster and
    /// NodePools are.
    #[serde(default = "default_management_cluster")]
    pub management_cluster: String,
}

fn default_management_cluster() -> String {
    hypersaga_model::record::DEFAULT_MANAGEMENT_CLUSTER.to_owned()
}

impl StepContext {
    /// The outputs of an earlier step, typed: `ctx.outputs_of::<VnetOutputs>(&StepId::Vnet)`.
    /// Missing or unreadable is the terminal `MissingStepOutput`, naming the step and the key
    /// (see [`StepOutputs::from_outputs`]).
    pub fn outputs_of<T: StepOutputs>(&self, step: &StepId) -> Result<T, StepError> {
        let empty = Outputs::new();
        let outputs = self
            .outputs
            .get(step.to_string().as_str())
            .unwrap_or(&empty);
        T::from_outputs(step, outputs)
    }

    /// One output of an earlier step, as a string, by wire id and key (the untyped view, for
    /// tools and tests; steps read [`StepContext::outputs_of`]).
    pub fn output(&self, step: &str, key: &str) -> Option<&str> {
        self.outputs
            .get(step)
            .and_then(|o| o.get(key))
            .and_then(Value::as_str)
    }
}

/// A command to one service: run `action` of `step`, attempt `attempt`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepCommand {
    pub v: u32,
    pub saga_id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub step: String,
    pub action: Action,
    pub attempt: u32,
    /// Fencing token: the step's dispatch number, raised on every dispatch (a retry, a
    /// re-check of a wait, a re-dispatch after a lost lease, an operator's resume). A worker
    /// runs a command only while the saga record names the same fence; results carry it back,
    /// so a late result of an older dispatch can never be applied.
    #[serde(default)]
    pub fence: u64,
    /// A retry waits until then; the service holds the message back (NAK with delay) rather
    /// than any process keeping a timer.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub not_before: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// How long the worker may stay silent once it runs the command: it sends a heartbeat
    /// (a progress event) well within this, or the coordinator takes the step back.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
    /// What the handler left for itself when it last answered "still waiting" (an ARM
    /// operation URL, the generation it watches), handed back on the re-check.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub memo: Value,
    /// Since when this step has been waiting, when it is a re-check.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub waiting_since: Option<OffsetDateTime>,
    /// The revision of the saga record that dispatched this command, when its publisher knew
    /// it (the coordinator always does). A worker that reads exactly that revision back knows
    /// the command is current without decoding the record; one that reads an older revision
    /// knows its read lags (a replica behind its leader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched_in: Option<u64>,
    pub context: StepContext,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn default_lease_ms() -> u64 {
    60_000
}

impl StepCommand {
    /// `Nats-Msg-Id` of this command: one per (saga, step, action, fence).
    pub fn msg_id(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.saga_id,
            self.step,
            self.action.as_str(),
            self.fence
        )
    }

    /// Whether this command re-checks a wait rather than starting the work.
    pub fn is_recheck(&self) -> bool {
        self.waiting_since.is_some()
    }

    /// The service owning the step.
    pub fn service(&self) -> &str {
        step_service(&self.step)
    }

    /// The step to run, typed. An id that names no step is [`StepCommand::unknown_step`].
    pub fn step_id(&self) -> Result<StepId, StepError> {
        self.step.parse().map_err(|_| self.unknown_step())
    }

    /// This command names a step (or action) the service receiving it does not own: terminal,
    /// since redelivering the same command cannot change that. It means the coordinator and
    /// the service disagree on the plan (a version skew during an upgrade, or a misrouted
    /// command).
    pub fn unknown_step(&self) -> StepError {
        StepError::terminal(
            "UnknownStep",
            format!(
                "service {} has no step {:?} ({})",
                self.service(),
                self.step,
                self.action.as_str()
            ),
        )
        .with_target(self.step.clone())
    }
}

/// A failure, classified: retryable ones are retried with backoff; terminal ones start
/// compensation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepError {
    #[serde(flatten)]
    pub info: ErrorInfo,
    /// Azure's `Retry-After`, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Backpressure (HTTP 429, an exhausted request budget) rather than failure: the step
    /// waits out `retry_after_ms` and runs again without spending an attempt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub throttled: bool,
}

impl StepError {
    pub fn terminal(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            info: ErrorInfo {
                code: code.into(),
                message: message.into(),
                retryable: false,
                ..Default::default()
            },
            retry_after_ms: None,
            throttled: false,
        }
    }

    pub fn retryable(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            info: ErrorInfo {
                code: code.into(),
                message: message.into(),
                retryable: true,
                ..Default::default()
            },
            retry_after_ms: None,
            throttled: false,
        }
    }

    /// Backpressure: come back after `retry_after_ms`; no attempt is spent.
    pub fn throttled(
        code: impl Into<String>,
        message: impl Into<String>,
        retry_after_ms: u64,
    ) -> Self {
        let mut e = Self::retryable(code, message);
        e.retry_after_ms = Some(retry_after_ms);
        e.throttled = true;
        e
    }

    /// An output of an earlier step that this step needs is missing. Terminal: the DAG runs
    /// that step first, so its absence is a plan bug, not something time heals.
    pub fn missing_output(step: impl std::fmt::Display, key: &str) -> Self {
        Self::terminal(
            "MissingStepOutput",
            format!("step {step} did not provide output {key:?}"),
        )
        .with_target(format!("{step}.{key}"))
    }

    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.info.target = Some(target.into());
        self
    }

    pub fn is_retryable(&self) -> bool {
        self.info.retryable
    }
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.info.code, self.info.message)?;
        if let Some(t) = &self.info.target {
            write!(f, " (target {t})")?;
        }
        Ok(())
    }
}

/// What happened to a step attempt.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Succeeded {
        #[serde(default)]
        outputs: Outputs,
    },
    Failed {
        error: StepError,
    },
    /// Still working; `message` says on what (shown to users while they wait). Also the
    /// worker's heartbeat: it renews the step's lease.
    Progress {
        message: String,
        /// Milliseconds this attempt spent waiting for (or gave back to) a budget it shares
        /// with every other step, such as its subscription's ARM requests, since its last
        /// report. Not the step's own time: the coordinator moves its deadline out by as much.
        #[serde(default, skip_serializing_if = "is_zero")]
        paced_ms: u64,
    },
    /// Not done, and nothing to do but wait (an ARM operation running, a HostedCluster not yet
    /// `Available`): the coordinator sends a re-check after `recheck_after_ms`, with `memo`,
    /// and no worker slot is held meanwhile.
    Waiting {
        message: String,
        recheck_after_ms: u64,
        #[serde(default, skip_serializing_if = "Value::is_null")]
        memo: Value,
    },
}

/// A service's report on a step attempt.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepEvent {
    pub v: u32,
    pub saga_id: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub step: String,
    pub action: Action,
    pub attempt: u32,
    /// The fence of the command this reports on.
    #[serde(default)]
    pub fence: u64,
    #[serde(flatten)]
    pub outcome: Outcome,
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
}

/// The service owning a step id (`network.vnet` → `network`).
pub fn step_service(step: &str) -> &str {
    step.split('.').next().unwrap_or(step)
}

impl StepEvent {
    /// The service owning the step this reports on.
    pub fn service(&self) -> &str {
        step_service(&self.step)
    }

    pub fn new(cmd: &StepCommand, outcome: Outcome) -> Self {
        Self {
            v: ENVELOPE_VERSION,
            saga_id: cmd.saga_id.clone(),
            tenant: cmd.tenant.clone(),
            cluster: cmd.cluster.clone(),
            step: cmd.step.clone(),
            action: cmd.action,
            attempt: cmd.attempt,
            fence: cmd.fence,
            outcome,
            time: OffsetDateTime::now_utc(),
        }
    }

    /// `Nats-Msg-Id`: one result per dispatch (fence); progress notes are not de-duplicated.
    pub fn msg_id(&self) -> String {
        let kind = match &self.outcome {
            Outcome::Succeeded { .. } | Outcome::Failed { .. } | Outcome::Waiting { .. } => {
                "result".to_owned()
            }
            Outcome::Progress { .. } => format!("progress-{}", self.time.unix_timestamp_nanos()),
        };
        format!(
            "{}:{}:{}:{}:{kind}",
            self.saga_id,
            self.step,
            self.action.as_str(),
            self.fence
        )
    }
}

/// Wake-up for the coordinator: an operation was accepted (the cluster record names it), or
/// its saga has something due.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SagaWake {
    pub v: u32,
    pub tenant: TenantId,
    pub saga_id: String,
    /// The cluster whose record names the operation. A coordinator that finds no saga for
    /// `saga_id` builds it from that record. Absent on timer wake-ups (their saga exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

/// What an operator asks of a saga that cannot go on by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorAction {
    /// Dispatch every paused step again, each with a fresh retry budget.
    Resume,
    /// Dispatch one paused step again (`step`), with a fresh retry budget.
    RetryStep,
    /// Give up on a paused create: undo what it made, in reverse dependency order.
    Compensate,
    /// Stop here for good: nothing more is sent, nothing is undone, the record is kept.
    Abandon,
}

impl OperatorAction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resume => "resume",
            Self::RetryStep => "retry_step",
            Self::Compensate => "compensate",
            Self::Abandon => "abandon",
        }
    }
}

/// An operator's call on a saga, on `<p>.<tenant>.saga.operate`; applied by the coordinator,
/// the saga's only writer, and audited with its actor.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OperatorCall {
    pub v: u32,
    pub tenant: TenantId,
    pub saga_id: String,
    pub action: OperatorAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Who asked (the authenticated caller).
    pub actor: String,
    /// Unique per call: its `Nats-Msg-Id`, so a retried RPC is applied once.
    pub call_id: String,
}

/// A public lifecycle event on `<p>.<tenant>.audit.<cluster>`; schema in docs/events.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub v: u32,
    /// Position in the operation's journal: 1, 2, 3, … in causal order.
    pub seq: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub tenant: TenantId,
    pub cluster: String,
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    pub actor: String,
    pub trace_id: String,
    #[serde(default)]
    pub detail: Value,
}

impl AuditEvent {
    /// `Nats-Msg-Id`: the journal position makes every event unique and retries idempotent.
    pub fn msg_id(&self) -> String {
        format!("{}:audit:{}", self.operation, self.seq)
    }
}
