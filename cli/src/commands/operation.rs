//! `hypersaga operation …`: inspect operations, and unstick paused ones.

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hypersaga_api::v1 as pb;

use super::{fail, request_id_or_new};
use crate::cli::ClientArgs;
use crate::output::{self, Output};
use crate::{errln, out, outln};

/// What `hypersaga operation` can do; the pause semantics are in `Command::Operation`'s help.
#[derive(Subcommand, Debug)]
pub enum OperationCommand {
    /// Show an operation and each of its steps; a paused one says why and since when.
    Get {
        /// The operation (op-…), e.g. from `hypersaga operation list`.
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Follow an operation until it ends: each step as it changes, or its DAG with --tree.
    ///
    /// The watch reconnects if the stream drops (`--reconnect-timeout`). The exit code says
    /// how the operation ended: 0 succeeded, 10 failed. An operation that has already ended
    /// is shown as it ended.
    ///
    /// With --tree, every step sits under the step it waits on last (any other dependency is
    /// named on its line), with its state, attempts, when it started or how long it took,
    /// what it waits on and since when, and its error; on a terminal the tree is redrawn in
    /// place as it changes, elsewhere it is printed once and followed by a line per change.
    /// `-o json` prints the operation's document at each change.
    ///
    /// The same view, live in a browser: the live view (`hypersaga dev` prints its URL).
    Watch {
        /// The operation (op-…).
        id: String,
        /// Show the operation's DAG as an indented tree.
        #[arg(long)]
        tree: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the tenant's operations, newest first.
    ///
    /// `--state paused` lists those waiting for an operator, each with the step and the
    /// error that paused it.
    List(ListArgs),
    /// Resume a paused operation: dispatch every paused step again.
    ///
    /// Every paused step is dispatched again, each with a fresh retry budget and deadline,
    /// and the operation goes on (or goes on undoing, if it was compensating) from where it
    /// stopped. Use it once the cause is fixed: the service is back, the permission granted.
    ///
    /// Applies only to a paused operation (FAILED_PRECONDITION otherwise).
    Resume {
        /// The operation (op-…), e.g. from `hypersaga operation list --state paused`.
        id: String,
        /// Idempotency key: the same key within two minutes applies the call once
        /// [default: random].
        #[arg(long)]
        request_id: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Retry one paused step of a paused operation.
    ///
    /// Only that step is dispatched again, with a fresh retry budget and deadline; other
    /// paused steps stay paused, and the operation stays paused until none is left.
    ///
    /// Applies only to a step the operation is paused on (the "paused steps" of `operation
    /// get`); FAILED_PRECONDITION otherwise.
    RetryStep {
        /// The operation (op-…).
        id: String,
        /// The paused step, e.g. `dns.private-zone`.
        step: String,
        /// Idempotency key: the same key within two minutes applies the call once
        /// [default: random].
        #[arg(long)]
        request_id: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Give up on a paused create (of a cluster or a node pool): undo what it made.
    ///
    /// The create turns around as if it had failed: what it made is undone in reverse
    /// dependency order (workload identities are kept, as always), and the cluster ends
    /// failed; a node pool's creation removes the pool, and the cluster stays ready.
    ///
    /// Applies only to a paused create that is not already compensating; a paused delete,
    /// upgrade or node pool change can be resumed or abandoned (FAILED_PRECONDITION
    /// otherwise).
    Compensate {
        /// The operation (op-…).
        id: String,
        /// Idempotency key: the same key within two minutes applies the call once
        /// [default: random].
        #[arg(long)]
        request_id: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Stop an unfinished operation for good, leaving everything as it is.
    ///
    /// Nothing more is done or undone: what the operation made stays. The operation ends
    /// failed with error code `Abandoned`, and the cluster record is kept (phase failed) so
    /// it can be inspected, and deleted, later.
    ///
    /// Applies to any operation that has not finished, paused or not (FAILED_PRECONDITION
    /// once it has).
    Abandon {
        /// The operation (op-…).
        id: String,
        /// Idempotency key: the same key within two minutes applies the call once
        /// [default: random].
        #[arg(long)]
        request_id: Option<String>,
        #[command(flatten)]
        client: ClientArgs,
    },
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only operations in this state.
    #[arg(long, value_enum)]
    pub state: Option<StateFilter>,
    /// Only this cluster's operations.
    #[arg(long)]
    pub cluster: Option<String>,
    /// At most this many per page [default: the server's, 100].
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub page_size: Option<i32>,
    /// Fetch every page, not only the first.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StateFilter {
    Running,
    Compensating,
    /// Waiting for an operator.
    Paused,
    Succeeded,
    Failed,
}

impl StateFilter {
    fn to_pb(self) -> pb::OperationState {
        match self {
            Self::Running => pb::OperationState::Running,
            Self::Compensating => pb::OperationState::Compensating,
            Self::Paused => pb::OperationState::Paused,
            Self::Succeeded => pb::OperationState::Succeeded,
            Self::Failed => pb::OperationState::Failed,
        }
    }
}

pub async fn run(cmd: OperationCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        OperationCommand::Get { id, client } => {
            let mut c = client.client().await?;
            match c.get_operation(pb::GetOperationRequest { id }).await {
                Ok(r) => {
                    super::print_objects(&[r.into_inner()], &client, true, &super::OPERATIONS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(&client, s),
            }
        }
        OperationCommand::List(a) => list(a).await,
        OperationCommand::Watch { id, tree, client } => watch(&id, tree, client).await,
        OperationCommand::Resume {
            id,
            request_id,
            client,
        } => {
            let mut c = client.client().await?;
            let req = pb::ResumeOperationRequest {
                id,
                request_id: request_id_or_new(request_id),
            };
            let answer = c.resume_operation(req).await;
            called(answer, &client, |op| {
                format!(
                    "Resume of operation {} requested: its paused steps ({}) are dispatched again.",
                    op.id,
                    paused_steps(op)
                )
            })
        }
        OperationCommand::RetryStep {
            id,
            step,
            request_id,
            client,
        } => {
            let mut c = client.client().await?;
            let req = pb::RetryOperationStepRequest {
                id,
                step: step.clone(),
                request_id: request_id_or_new(request_id),
            };
            let answer = c.retry_operation_step(req).await;
            called(answer, &client, |op| {
                format!(
                    "Retry of step {step} of operation {} requested: it is dispatched again.",
                    op.id
                )
            })
        }
        OperationCommand::Compensate {
            id,
            request_id,
            client,
        } => {
            let mut c = client.client().await?;
            let req = pb::CompensateOperationRequest {
                id,
                request_id: request_id_or_new(request_id),
            };
            let answer = c.compensate_operation(req).await;
            called(answer, &client, |op| {
                format!(
                    "Compensation of operation {} requested: what it made is undone.",
                    op.id
                )
            })
        }
        OperationCommand::Abandon {
            id,
            request_id,
            client,
        } => {
            let mut c = client.client().await?;
            let req = pb::AbandonOperationRequest {
                id,
                request_id: request_id_or_new(request_id),
            };
            let answer = c.abandon_operation(req).await;
            called(answer, &client, |op| {
                format!(
                    "Abandon of operation {} requested: nothing more is done or undone; cluster {} is kept, failed.",
                    op.id, op.cluster
                )
            })
        }
    }
}

/// `operation watch`: follows the operation through its cluster's watch until it ends.
async fn watch(id: &str, tree: bool, client: ClientArgs) -> anyhow::Result<ExitCode> {
    use super::cluster::{Follow, View, follow};
    let mut c = client.client().await?;
    let op = match c
        .get_operation(pb::GetOperationRequest { id: id.into() })
        .await
    {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(&client, s),
    };
    let state = pb::OperationState::try_from(op.state);
    let ended = matches!(
        state,
        Ok(pb::OperationState::Succeeded | pb::OperationState::Failed)
    );
    if ended {
        if let Some(doc) = client.output.document(&output::operation_json(&op))? {
            out!("{doc}")?;
        } else if client.output == Output::Name {
            outln!("{}", output::operation_name(&op.id))?;
        } else if tree {
            out!("{}", output::operation_tree(&op))?;
        } else {
            out!("{}", output::operation_text(&op))?;
        }
        return Ok(ExitCode::from(match state {
            Ok(pb::OperationState::Failed) => crate::exit::OPERATION_FAILED,
            _ => crate::exit::OK,
        }));
    }
    let end = match (op.node_pool.as_str(), op.addon.as_str()) {
        ("", "") => Follow::cluster(&op.cluster, &op),
        ("", addon) => Follow::addon(&op.cluster, addon, &op),
        (pool, _) => Follow::pool(&op.cluster, pool, &op),
    };
    let end = if op.kind == pb::OperationKind::Delete as i32 {
        end.deleting()
    } else {
        end
    };
    follow(&client, c, &end.showing(View::Operation { tree })).await
}

async fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let mut c = a.client.client().await?;
    let mut operations = Vec::new();
    let mut page_token = String::new();
    loop {
        let req = pb::ListOperationsRequest {
            state: a.state.map_or(0, |s| s.to_pb() as i32),
            cluster: a.cluster.clone().unwrap_or_default(),
            page_size: a.page_size.unwrap_or(0),
            page_token,
        };
        let page = match c.list_operations(req).await {
            Ok(r) => r.into_inner(),
            Err(s) => return fail(&a.client, s),
        };
        operations.extend(page.operations);
        page_token = page.next_page_token;
        if page_token.is_empty() || !a.all {
            break;
        }
    }
    super::print_objects(&operations, &a.client, false, &super::OPERATIONS)?;
    // On stderr, so that `-o json` stays one document.
    if !page_token.is_empty() {
        errln!("(more operations: add --all, or a larger --page-size)");
    }
    Ok(ExitCode::SUCCESS)
}

fn paused_steps(op: &pb::Operation) -> String {
    op.pause
        .as_ref()
        .map(|p| p.steps.join(", "))
        .unwrap_or_default()
}

/// Prints the answer to an operator call. The call is applied by the coordinator just after
/// the answer, which shows the operation as it was: text says what was asked and how to
/// follow it; JSON is that operation.
fn called(
    answer: Result<tonic::Response<pb::Operation>, tonic::Status>,
    client: &ClientArgs,
    said: impl FnOnce(&pb::Operation) -> String,
) -> anyhow::Result<ExitCode> {
    let op = match answer {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(client, s),
    };
    if let Some(doc) = client.output.document(&output::operation_json(&op))? {
        out!("{doc}")?;
    } else if client.output == Output::Name {
        outln!("{}", output::operation_name(&op.id))?;
    } else {
        outln!("{}", said(&op))?;
        outln!("Follow it with: hypersaga cluster watch {}", op.cluster)?;
    }
    Ok(ExitCode::SUCCESS)
}
