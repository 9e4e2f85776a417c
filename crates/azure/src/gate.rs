//! The hooks an [`crate::ArmClient`] asks before it sends: pacing ([`Gate`], before every
//! request, told what ARM said after it) and fencing ([`MutationGuard`], before every request
//! that changes something).
//!
//! ARM throttles per subscription × principal × region with token buckets (reads 250 / 25 s⁻¹,
//! writes and deletes 200 / 10 s⁻¹), and every replica of every service draws on the same
//! buckets. A [`Gate`] lets the caller keep one shared budget in front of them — sleeping a
//! request until its slot, lowering the budget to what `x-ms-ratelimit-remaining-*` reports,
//! holding everyone back after a 429 — so throttling is avoided rather than retried. The
//! client works without one; the product's services install one backed by the bus.

use std::fmt;
use std::time::Duration;

use azure_core::http::Method;

/// ARM's three throttling buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestClass {
    /// GET and HEAD (LRO polls included).
    Read,
    /// PUT, PATCH, POST.
    Write,
    /// DELETE.
    Delete,
}

impl RequestClass {
    /// The bucket a request draws from.
    pub fn of(method: &Method) -> Self {
        match method {
            Method::Get | Method::Head => Self::Read,
            Method::Delete => Self::Delete,
            _ => Self::Write,
        }
    }

    /// The header in which ARM reports what is left of this bucket for the caller.
    pub fn remaining_header(self) -> &'static str {
        match self {
            Self::Read => "x-ms-ratelimit-remaining-subscription-reads",
            Self::Write => "x-ms-ratelimit-remaining-subscription-writes",
            Self::Delete => "x-ms-ratelimit-remaining-subscription-deletes",
        }
    }

    /// `reads`, `writes`, `deletes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "reads",
            Self::Write => "writes",
            Self::Delete => "deletes",
        }
    }
}

/// What one ARM answer said about the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feedback {
    /// The bucket the request drew from.
    pub class: RequestClass,
    /// HTTP status of the answer (429: throttled).
    pub status: u16,
    /// `x-ms-ratelimit-remaining-subscription-<class>`, when present.
    pub remaining: Option<u64>,
    /// `Retry-After`, when present.
    pub retry_after: Option<Duration>,
}

/// A shared request budget in front of ARM. A budget that cannot be consulted lets the
/// request through (ARM's own throttling remains).
#[async_trait::async_trait]
pub trait Gate: Send + Sync + fmt::Debug {
    /// Waits until a request of `class` may be sent — or, when its turn is further away than
    /// is worth waiting in place, refuses with how long that is, so the caller can give the
    /// work back and come again ([`crate::ArmError::Paced`]).
    async fn admit(&self, class: RequestClass) -> Result<(), Duration>;
    /// Learns from ARM's answer.
    async fn observe(&self, feedback: Feedback);
}

/// Asked before every request that changes something (PUT, PATCH, POST, DELETE). A refusal
/// means the request is not sent ([`crate::ArmError::Fenced`]). The product's services install
/// one that asks whether the saga still wants the step command being run, so a stale command
/// can read but never change Azure.
#[async_trait::async_trait]
pub trait MutationGuard: Send + Sync + fmt::Debug {
    /// `Err(why)` when the request must not be sent.
    async fn allow(&self) -> Result<(), String>;
}

/// What an [`crate::ArmClient`] asks before it sends; none by default.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    /// The shared request budget.
    pub gate: Option<std::sync::Arc<dyn Gate>>,
    /// The fence of the work the requests are made for.
    pub guard: Option<std::sync::Arc<dyn MutationGuard>>,
}
