//! `hypersaga completion <shell>`: the shell's completion script, generated from the same
//! command definitions the binary parses, so it never lags behind a new flag.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

/// Writes the completion script for `shell` to stdout. A reader that stops early (`| head`)
/// is not an error.
pub fn run(shell: Shell) -> anyhow::Result<ExitCode> {
    let mut command = crate::cli::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "hypersaga", &mut script);
    match std::io::stdout().lock().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}
