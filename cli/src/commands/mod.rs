//! Client commands.

pub mod audit;
pub mod bus;
pub mod cluster;
pub mod completion;
pub mod emulator;
pub mod operation;
pub mod token;

use std::process::ExitCode;

/// Prints a gRPC failure for people and turns it into the process exit code
/// ([`crate::exit`]).
pub(crate) fn fail(status: tonic::Status) -> anyhow::Result<ExitCode> {
    eprintln!("error: {}", crate::output::status_text(&status));
    Ok(ExitCode::from(crate::exit::for_status(status.code())))
}
