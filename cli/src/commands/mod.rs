//! Client commands.

pub mod audit;
pub mod bus;
pub mod cluster;
pub mod completion;
pub mod emulator;
pub mod operation;
pub mod token;

use std::process::ExitCode;

/// Prints a failed call for people and turns it into the process exit code
/// ([`crate::exit`]). A failure of the connection rather than an answer of the API (tonic
/// reports both as a status) says what to do about the connection, and exits 7.
pub(crate) fn fail(
    client: &crate::cli::ClientArgs,
    status: tonic::Status,
) -> anyhow::Result<ExitCode> {
    let (text, code) = failure(client, &status);
    crate::errln!("error: {text}");
    Ok(ExitCode::from(code))
}

/// What [`fail`] prints, and the exit code.
fn failure(client: &crate::cli::ClientArgs, status: &tonic::Status) -> (String, u8) {
    let transport = client
        .target()
        .ok()
        .and_then(|t| crate::client::Unreachable::of_status(&t.server, t.ca.as_deref(), status));
    match transport {
        Some(u) => (u.to_string(), crate::exit::UNREACHABLE),
        None => (
            crate::output::status_text(status),
            crate::exit::for_status(status.code()),
        ),
    }
}
