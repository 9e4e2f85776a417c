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
/// `--wait` / `watch`: the operation ended, but failed (the cluster is `failed`).
pub const OPERATION_FAILED: u8 = 10;
/// Interrupted (Ctrl-C).
pub const INTERRUPTED: u8 = 130;

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
  10   --wait/watch: the operation failed
  130  interrupted";

/// The exit code of a gRPC failure.
pub fn for_status(code: tonic::Code) -> u8 {
    match code {
        tonic::Code::InvalidArgument => USAGE,
        tonic::Code::NotFound => NOT_FOUND,
        tonic::Code::AlreadyExists => ALREADY_EXISTS,
        tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => UNAUTHENTICATED,
        tonic::Code::ResourceExhausted => EXHAUSTED,
        tonic::Code::Unavailable => UNREACHABLE,
        _ => ERROR,
    }
}

/// The exit code of an error that ended a command: an API that could not be reached is
/// told apart from everything else.
pub fn for_error(e: &anyhow::Error) -> ExitCode {
    if e.chain()
        .any(|c| c.downcast_ref::<crate::client::Unreachable>().is_some())
    {
        ExitCode::from(UNREACHABLE)
    } else {
        ExitCode::from(ERROR)
    }
}
