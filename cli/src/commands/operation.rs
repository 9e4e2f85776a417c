//! `hypersaga operation …`

use std::process::ExitCode;

use clap::Subcommand;
use hypersaga_api::v1 as pb;

use super::fail;
use crate::cli::ClientArgs;
use crate::output::{self, Format};

#[derive(Subcommand, Debug)]
pub enum OperationCommand {
    /// Show an operation and each of its steps.
    Get {
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub async fn run(cmd: OperationCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        OperationCommand::Get { id, client } => {
            let mut c = client.client().await?;
            match c.get_operation(pb::GetOperationRequest { id }).await {
                Ok(r) => {
                    let op = r.into_inner();
                    match client.output {
                        Format::Json => println!("{}", serde_json::to_string_pretty(&output::operation_json(&op))?),
                        Format::Text => print!("{}", output::operation_text(&op)),
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(s),
            }
        }
    }
}
