//! Client commands.

pub mod audit;
pub mod bus;
pub mod cluster;
pub mod emulator;
pub mod operation;
pub mod token;

use std::process::ExitCode;

/// Prints a gRPC failure for people and turns it into the process exit code.
pub(crate) fn fail(status: tonic::Status) -> anyhow::Result<ExitCode> {
    eprintln!("error: {}", crate::output::status_text(&status));
    Ok(ExitCode::from(match status.code() {
        tonic::Code::InvalidArgument => 2,
        tonic::Code::NotFound => 3,
        tonic::Code::AlreadyExists => 4,
        tonic::Code::Unauthenticated => 5,
        _ => 1,
    }))
}
