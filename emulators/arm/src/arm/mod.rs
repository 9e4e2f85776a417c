//! The ARM front door: one fallback handler for every ARM path, split by what each part does.
//!
//! [`pipeline`] authenticates, authorises, throttles, validates the api-version and injects
//! faults, then routes to a handler that is generic over the type table (`types.rs`): [`put`],
//! [`patch`], [`read`] (GET, HEAD, lists), [`delete`], with [`lro`] for the asynchronous
//! operations they start, [`skus`] for the Resource SKUs list and [`usages`] for the Compute
//! usage list (vCPU quota).

mod api_version;
mod body;
mod delete;
mod headers;
mod lookup;
mod lro;
mod patch;
mod pipeline;
mod put;
mod rbac;
mod read;
mod respond;
mod skus;
mod usages;

use std::cell::Cell;
use std::collections::HashMap;

use time::OffsetDateTime;

use crate::Emulator;
use crate::faults::OpFailure;

pub(crate) use pipeline::{TypeTag, handle};
pub use rbac::WRITE_LATENCY as ROLE_ASSIGNMENT_WRITE_LATENCY;
pub(crate) use rbac::{find_role, render_assignment};

/// Per-request facts the handlers need.
pub(crate) struct Ctx<'a> {
    pub(super) emu: &'a Emulator,
    pub(super) base: String,
    pub(super) api_version: String,
    pub(super) now: OffsetDateTime,
    pub(super) query: &'a HashMap<String, String>,
    pub(super) path: &'a str,
    /// Object id of the authenticated caller (role assignments record it).
    pub(super) caller: String,
    /// An installed failure-after-acceptance matching this request (fault id, error); the
    /// operation the request starts, if any, ends with it.
    pub(super) fail_with: Option<(String, OpFailure)>,
    /// Set once an operation was started with `fail_with`, so the fault is used up only then.
    pub(super) fail_used: Cell<bool>,
}
