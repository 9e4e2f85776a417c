//! The exit codes of every command: scripts branch on them, so they are a contract, listed in
//! `hypersaga --help` and docs/operations.md. 2 is also what clap exits with on a usage
//! error, and 130 what a shell reports for Ctrl-C.

use std::process::ExitCode;

/// Done: the call succeeded, or `--wait` / `watch` saw the operation succeed.
pub const OK: u8 = 0;
/// Anything not below: an internal or unexpected error, or a call refused because it does
/// not apply now (`FAILED_PRECONDITION`, the reason in brackets on stderr).
pub const ERROR: u8 = 1;
/// Bad usage: an unknown flag or a missing argument, a request the API refused as invalid
/// (`INVALID_ARGUMENT`, each field on its own line), an invalid configuration (`serve`).
pub const USAGE: u8 = 2;
/// No such cluster or operation (`NOT_FOUND`; another tenant's are not found either).
pub const NOT_FOUND: u8 = 3;
/// The cluster exists already (`ALREADY_EXISTS`).
pub const ALREADY_EXISTS: u8 = 4;
/// The token was refused (`UNAUTHENTICATED`, `PERMISSION_DENIED`).
pub const UNAUTHENTICATED: u8 = 5;
/// A quota or the tenant's request rate was exceeded (`RESOURCE_EXHAUSTED`).
pub const EXHAUSTED: u8 = 6;
/// The API could not be reached (connection refused, TLS, `UNAVAILABLE`), or `--wait` /
/// `watch` lost its stream and could not get it back within the reconnect bound.
pub const UNREACHABLE: u8 = 7;
/// The preflight found something in the way: a create (or change) refused before anything
/// was made (`FAILED_PRECONDITION` with every problem on its own line), or a `--dry-run`
/// whose plan lists problems.
pub const PRECONDITION: u8 = 9;
/// `--wait` / `watch`: the operation ended, but failed (the cluster is `failed`).
pub const OPERATION_FAILED: u8 = 10;
/// Interrupted (Ctrl-C).
pub const INTERRUPTED: u8 = 130;
/// Stdout was closed by its reader (`| head -1`): the command stopped quietly, with what a
/// shell reports for a tool that SIGPIPE stopped (128 + 13), as `yes | head -1` does.
pub const CLOSED_PIPE: u8 = 141;

/// The table in `--help`.
pub const HELP: &str = "\
Exit codes:
  0    success (with --wait or watch: the operation succeeded)
  1    error, or a call that does not apply now (FAILED_PRECONDITION, reason in brackets)
  2    usage error, invalid request (each field on its own line) or invalid configuration
  3    not found
  4    already exists
  5    unauthenticated or permission denied
  6    quota or rate limit exceeded
  7    API unreachable, or --wait/watch could not reconnect in time
  9    the preflight found problems (each on its own line): nothing was made
  10   --wait/watch: the operation failed
  130  interrupted
  141  the output's reader went away (e.g. `| head -1`); nothing more printed";

/// The exit code of a gRPC failure.
pub fn for_status(status: &tonic::Status) -> u8 {
    use tonic_types::StatusExt;
    if status.code() == tonic::Code::FailedPrecondition
        && status.get_details_precondition_failure().is_some()
    {
        return PRECONDITION;
    }
    match status.code() {
        tonic::Code::InvalidArgument => USAGE,
        tonic::Code::NotFound => NOT_FOUND,
        tonic::Code::AlreadyExists => ALREADY_EXISTS,
        tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => UNAUTHENTICATED,
        tonic::Code::ResourceExhausted => EXHAUSTED,
        tonic::Code::Unavailable => UNREACHABLE,
        _ => ERROR,
    }
}

/// The exit code of an error that ended a command: an API that could not be reached (or a
/// local system that is not running: no endpoints file) and a closed stdout are told apart
/// from everything else.
pub fn for_error(e: &anyhow::Error) -> ExitCode {
    ExitCode::from(code_for_error(e))
}

/// A command used wrongly in a way clap cannot see (flags that need each other): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

fn code_for_error(e: &anyhow::Error) -> u8 {
    if crate::console::is_closed(e) {
        CLOSED_PIPE
    } else if e.chain().any(|c| c.is::<Usage>()) {
        USAGE
    } else if e.chain().any(|c| {
        c.downcast_ref::<crate::client::Unreachable>().is_some()
            || matches!(
                c.downcast_ref::<crate::endpoints::EndpointsError>(),
                Some(crate::endpoints::EndpointsError::Missing { .. })
            )
    }) {
        UNREACHABLE
    } else {
        ERROR
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_the_documented_codes() {
        let missing = anyhow::Error::new(
            crate::endpoints::Endpoints::load(std::path::Path::new(
                "/nonexistent/hypersaga/endpoints.json",
            ))
            .expect_err("no such file"),
        )
        .context("reading the endpoints");
        assert_eq!(code_for_error(&missing), UNREACHABLE, "{missing:#}");
        let closed = anyhow::Error::new(crate::console::OutputError::Closed);
        assert_eq!(code_for_error(&closed), CLOSED_PIPE);
        assert_eq!(code_for_error(&anyhow::anyhow!("anything")), ERROR);
        assert_eq!(
            code_for_error(&Usage("--server needs --token".into()).into()),
            USAGE
        );
        let status = |code| tonic::Status::new(code, "");
        assert_eq!(for_status(&status(tonic::Code::InvalidArgument)), USAGE);
        assert_eq!(for_status(&status(tonic::Code::Unavailable)), UNREACHABLE);
        assert_eq!(for_status(&status(tonic::Code::FailedPrecondition)), ERROR);
        let mut details = tonic_types::ErrorDetails::new();
        details.add_precondition_failure_violation(
            "QUOTA",
            "spec.node_pools[0].vm_size",
            "no room",
        );
        let preflight = <tonic::Status as tonic_types::StatusExt>::with_error_details(
            tonic::Code::FailedPrecondition,
            "preflight",
            details,
        );
        assert_eq!(for_status(&preflight), PRECONDITION);
    }

    /// The table in `--help` and the one in docs/operations.md list the same codes.
    #[test]
    fn the_help_and_the_docs_list_the_same_exit_codes() {
        let docs = include_str!("../../docs/operations.md");
        let table = docs
            .split("**Exit codes**")
            .nth(1)
            .expect("docs/operations.md has the exit codes");
        let documented: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.split('|').nth(1).map(str::trim))
            .filter(|c| c.parse::<u8>().is_ok())
            .collect();
        let helped: Vec<&str> = HELP
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(documented, helped);
    }
}
