//! Operator calls (resume, retry a step, compensate, abandon) and `ListOperations`, with
//! which operators find what waits for them.
//!
//! The gateway never changes a saga: the coordinator is its only writer. The gateway checks a
//! call against the saga as it is now, so a call that cannot apply is refused at once with a
//! reason a program can branch on, then hands it to the coordinator, which checks it again
//! when it applies it (the saga may have moved meanwhile), audits it with its actor and moves
//! the saga on.

use std::cmp::Ordering;
use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hypersaga_api::v1 as pb;
use hypersaga_bus::{ENVELOPE_VERSION, OperatorAction, OperatorCall};
use hypersaga_config::TenantConfig;
use hypersaga_model::record::OperationView;
use hypersaga_saga::{Refusal, StoredOperation};
use hypersaga_telemetry::TraceParent;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};
use tracing::{info, instrument};

use super::limits::{Checks, MAX_PAGE_TOKEN, bad_request};
use super::{Gateway, internal, tenant_kv, valid_key_part};
use crate::convert::{op_state_to_pb, operation_to_pb};

/// `google.rpc.ErrorInfo.domain` of refused calls.
pub(super) const ERROR_DOMAIN: &str = "hypersaga.io";
const DEFAULT_PAGE_SIZE: usize = 100;
const MAX_PAGE_SIZE: usize = 1000;

/// One operator call, as the RPCs receive it.
pub(super) struct CallRequest {
    pub id: String,
    pub action: OperatorAction,
    /// Only for [`OperatorAction::RetryStep`].
    pub step: Option<String>,
    pub request_id: String,
}

impl Gateway {
    /// Checks an operator call against the operation as it is now and sends it to the
    /// coordinator; answers with the operation as it is *before* the call takes effect.
    #[instrument(skip_all, fields(tenant = %tenant.id, operation, action = req.action.as_str()))]
    pub(super) async fn operate(
        &self,
        tenant: &TenantConfig,
        req: CallRequest,
    ) -> Result<pb::Operation, Status> {
        let action = req.action;
        let step = req.step.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let request_id = req.request_id.trim();
        let mut checks = Checks::new();
        checks
            .operation_id("id", &req.id)
            .request_id("request_id", request_id);
        if action == OperatorAction::RetryStep {
            checks.step_id("step", step.unwrap_or_default());
        }
        checks.done()?;
        tracing::Span::current().record("operation", req.id.as_str());
        let Some(op) = self.load_operation(tenant, &req.id).await? else {
            return Err(self.not_started_or_not_found(tenant, &req.id, action).await);
        };
        if action == OperatorAction::RetryStep
            && let Some(step) = step
            && !op.view.steps.iter().any(|s| s.id == step)
        {
            let steps: Vec<&str> = op.view.steps.iter().map(|s| s.id.as_str()).collect();
            let description = format!(
                "operation {} has no step {step:?}; its steps: {}",
                op.view.id,
                steps.join(", ")
            );
            return Err(bad_request(vec![FieldViolation::new("step", description)]));
        }
        let step = if action == OperatorAction::RetryStep {
            step
        } else {
            None
        };
        if let Err(refusal) = op.check_operator(action, step) {
            info!(refusal = refusal.code(), "operator call refused");
            return Err(refused(&op.view, action, &refusal));
        }
        // The request id makes a retried RPC one message (JetStream drops the duplicate).
        let call_id = if request_id.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            request_id.to_owned()
        };
        let call = OperatorCall {
            v: ENVELOPE_VERSION,
            tenant: tenant.id.clone(),
            saga_id: op.view.id.clone(),
            action,
            step: step.map(str::to_owned),
            actor: format!("tenant:{}", tenant.id),
            call_id,
        };
        let msg_id = format!("{}:operate:{}", op.view.id, call.call_id);
        let subject = self.bus.subjects().saga_operate(&tenant.id);
        let trace = TraceParent::with_trace_id(&op.trace_id);
        self.bus
            .publish_json(&subject, &msg_id, &trace, &call)
            .await
            .map_err(internal("send operator call"))?;
        info!(
            tenant = %tenant.id,
            operation = %op.view.id,
            action = action.as_str(),
            actor = %call.actor,
            step = call.step.as_deref().unwrap_or(""),
            call_id = %call.call_id,
            "operator call sent"
        );
        Ok(operation_to_pb(&op.view))
    }

    /// The answer to an operator call on an operation with no saga: one that a cluster record
    /// names, unfinished, but the coordinator has not built yet cannot be acted on *yet*
    /// (FAILED_PRECONDITION, reason `NotStarted`, so a program retries); one the record shows
    /// finished (its saga since expired) is `OperationFinished`; any other is not found.
    async fn not_started_or_not_found(
        &self,
        tenant: &TenantConfig,
        id: &str,
        action: OperatorAction,
    ) -> Status {
        match self.operation_of_record(tenant, id).await {
            Ok(Some(op)) if op.state.is_terminal() => Status::with_error_details(
                Code::FailedPrecondition,
                format!("cannot {} operation {id}: it has finished", verb(action)),
                ErrorDetails::with_error_info(
                    "OperationFinished",
                    ERROR_DOMAIN,
                    HashMap::from([
                        ("operation".to_owned(), id.to_owned()),
                        ("action".to_owned(), action.as_str().to_owned()),
                    ]),
                ),
            ),
            Ok(Some(_)) => Status::with_error_details(
                Code::FailedPrecondition,
                format!(
                    "cannot {} operation {id} yet: it is accepted but not started (the \
                     coordinator has not built it); retry in a few seconds",
                    verb(action)
                ),
                ErrorDetails::with_error_info(
                    "NotStarted",
                    ERROR_DOMAIN,
                    HashMap::from([
                        ("operation".to_owned(), id.to_owned()),
                        ("action".to_owned(), action.as_str().to_owned()),
                    ]),
                ),
            ),
            Ok(None) => Status::not_found(format!("operation {id:?} not found")),
            Err(status) => status,
        }
    }

    /// One page of the tenant's operations, newest first.
    pub(super) async fn list_operations_page(
        &self,
        tenant: &TenantConfig,
        req: pb::ListOperationsRequest,
    ) -> Result<pb::ListOperationsResponse, Status> {
        let mut checks = Checks::new();
        checks.page_token("page_token", &req.page_token);
        let cluster = req.cluster.trim();
        if !cluster.is_empty() {
            checks.cluster_name("cluster", cluster);
        }
        let state = match req.state {
            0 => None,
            s => match pb::OperationState::try_from(s) {
                Ok(s) => Some(s),
                Err(_) => {
                    checks.push("state", format!("unknown operation state {s}"));
                    None
                }
            },
        };
        let page_size = page_size(req.page_size, &mut checks);
        let cursor = page_token(
            &req.page_token,
            Cursor::decode,
            "ListOperationsResponse",
            &mut checks,
        );
        checks.done()?;
        let mut sagas: Vec<OperationView> = self
            .tenant_operations(tenant)
            .await?
            .into_iter()
            .filter(|s| state.is_none_or(|st| op_state_to_pb(s.state) == st))
            .filter(|s| cluster.is_empty() || s.cluster == cluster)
            .collect();
        sagas.sort_by(|a, b| Cursor::of(a).order(&Cursor::of(b)));
        // Everything up to and including the cursor was on earlier pages. New operations sort
        // before it (they are newer), so paging neither repeats nor skips any.
        let start = match &cursor {
            Some(c) => sagas.partition_point(|s| Cursor::of(s).order(c) != Ordering::Greater),
            None => 0,
        };
        let rest = &sagas[start..];
        let page = &rest[..rest.len().min(page_size)];
        let next_page_token = match page.last() {
            Some(last) if rest.len() > page.len() => Cursor::of(last).encode(),
            _ => String::new(),
        };
        Ok(pb::ListOperationsResponse {
            operations: page.iter().map(operation_to_pb).collect(),
            next_page_token,
        })
    }

    /// Every operation of `tenant`, and of no other tenant, as its saga last stood.
    async fn tenant_operations(&self, tenant: &TenantConfig) -> Result<Vec<OperationView>, Status> {
        let sagas = tenant_kv::read::<StoredOperation>(
            &self.bus,
            &self.sagas,
            &tenant.id,
            "list operations",
        )
        .await?;
        Ok(sagas.into_values().map(|r| r.value.view).collect())
    }
}

/// `page_size` of a list request: 0 is the default, more than the most is the most.
pub(super) fn page_size(requested: i32, checks: &mut Checks) -> usize {
    match usize::try_from(requested) {
        Ok(0) => DEFAULT_PAGE_SIZE,
        Ok(n) => n.min(MAX_PAGE_SIZE),
        Err(_) => {
            checks.push("page_size", "must not be negative");
            DEFAULT_PAGE_SIZE
        }
    }
}

/// `page_token` of a list request, decoded; empty is the first page. A token that does not
/// decode is a violation: it did not come from `<response>.next_page_token`. (Its length is
/// checked before, with the call's other fields.)
pub(super) fn page_token<C>(
    token: &str,
    decode: impl Fn(&str) -> Option<C>,
    response: &str,
    checks: &mut Checks,
) -> Option<C> {
    match token.trim() {
        "" => None,
        // Said with the call's other fields.
        token if token.chars().count() > MAX_PAGE_TOKEN => None,
        token => {
            let cursor = decode(token);
            if cursor.is_none() {
                checks.push(
                    "page_token",
                    format!("not a token from {response}.next_page_token"),
                );
            }
            cursor
        }
    }
}

/// FAILED_PRECONDITION, with the refusal's code as `google.rpc.ErrorInfo.reason` so that
/// programs branch on it rather than on the message.
fn refused(op: &OperationView, action: OperatorAction, refusal: &Refusal) -> Status {
    let mut metadata = HashMap::from([
        ("operation".to_owned(), op.id.clone()),
        ("action".to_owned(), action.as_str().to_owned()),
        (
            "state".to_owned(),
            op_state_to_pb(op.state).as_str_name().to_owned(),
        ),
    ]);
    if let Some(pause) = &op.pause {
        metadata.insert("paused_steps".to_owned(), pause.steps.join(","));
    }
    Status::with_error_details(
        Code::FailedPrecondition,
        format!("cannot {} operation {}: {refusal}", verb(action), op.id),
        ErrorDetails::with_error_info(refusal.code(), ERROR_DOMAIN, metadata),
    )
}

/// What an operator call does, as a verb taking the operation as its object.
fn verb(action: OperatorAction) -> &'static str {
    match action {
        OperatorAction::Resume => "resume",
        OperatorAction::RetryStep => "retry a step of",
        OperatorAction::Compensate => "compensate",
        OperatorAction::Abandon => "abandon",
    }
}

/// A position in the newest-first order of operations; `page_token` is its opaque encoding.
#[derive(Debug, PartialEq, Eq)]
struct Cursor {
    created_ns: i128,
    id: String,
}

impl Cursor {
    /// Token layout version, so the encoding can change without misreading old tokens.
    const VERSION: &str = "1";

    fn of(op: &OperationView) -> Self {
        Self {
            created_ns: op.started_at.unix_timestamp_nanos(),
            id: op.id.clone(),
        }
    }

    /// Newest first; operations created at the same instant by id.
    fn order(&self, other: &Self) -> Ordering {
        other
            .created_ns
            .cmp(&self.created_ns)
            .then_with(|| self.id.cmp(&other.id))
    }

    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}:{}", Self::VERSION, self.created_ns, self.id))
    }

    fn decode(token: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let rest = text.strip_prefix(Self::VERSION)?.strip_prefix(':')?;
        let (created_ns, id) = rest.split_once(':')?;
        let created_ns = created_ns.parse().ok()?;
        valid_key_part(id).then(|| Self {
            created_ns,
            id: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_survives_its_token_and_bad_tokens_are_refused() {
        let c = Cursor {
            created_ns: 1_790_000_000_123_456_789,
            id: "op-0af7".into(),
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        for bad in [
            "",
            "not base64!",
            &URL_SAFE_NO_PAD.encode("2:1:op-x"),
            &URL_SAFE_NO_PAD.encode("1:x:op-x"),
            &URL_SAFE_NO_PAD.encode("1:1:a.b"),
        ] {
            assert_eq!(Cursor::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn newest_first_then_by_id() {
        let c = |ns, id: &str| Cursor {
            created_ns: ns,
            id: id.into(),
        };
        let mut v = vec![c(1, "op-b"), c(3, "op-a"), c(1, "op-a"), c(2, "op-z")];
        v.sort_by(Cursor::order);
        assert_eq!(
            v,
            vec![c(3, "op-a"), c(2, "op-z"), c(1, "op-a"), c(1, "op-b")]
        );
    }
}
