//! `hypersaga completion <shell>`: the shell's completion script, generated from the same
//! command definitions the binary parses, so it never lags behind a new flag.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

/// Writes the completion script for `shell` to stdout. A reader that stops early (`| head`)
/// ends it quietly, as every command (exit 141).
pub fn run(shell: Shell) -> anyhow::Result<ExitCode> {
    let mut command = crate::cli::Cli::command();
    // Generated in memory: clap_complete panics on a write that fails.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "hypersaga", &mut script);
    crate::out!("{}", String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
