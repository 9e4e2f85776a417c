//! Headers every ARM answer carries beyond the basics: the rate-limit counters of the
//! request's class and `x-ms-routing-request-id`.

use axum::http::{HeaderMap, HeaderValue};
use time::OffsetDateTime;

use crate::throttle::{OpClass, Remaining};

/// The `x-ms-ratelimit-remaining-subscription-*` values an answer carries: only the request's
/// class, as ARM does. Filled as far as the pipeline got — an unauthenticated request has no
/// principal bucket to report, a path without a subscription has no bucket at all.
#[derive(Default)]
pub(super) struct RateHeaders {
    class: Option<OpClass>,
    principal: Option<u64>,
    global: Option<u64>,
}

impl RateHeaders {
    pub(super) fn new(class: OpClass, r: Remaining) -> Self {
        Self {
            class: Some(class),
            principal: Some(r.principal),
            global: r.global,
        }
    }

    /// No verified principal, so only the subscription's shared bucket can be reported.
    pub(super) fn unauthenticated(class: OpClass, global: Option<u64>) -> Self {
        Self {
            class: Some(class),
            principal: None,
            global,
        }
    }

    pub(super) fn apply(&self, headers: &mut HeaderMap) {
        let Some(class) = self.class else {
            return;
        };
        if let Some(n) = self.principal {
            headers.insert(class.header(), HeaderValue::from(n));
        }
        if let Some(n) = self.global {
            headers.insert(class.global_header(), HeaderValue::from(n));
        }
    }
}

/// `x-ms-routing-request-id`: `<REGION>:<yyyyMMddTHHmmssZ>:<uuid>`, which ARM support asks
/// for and which tells a client which regional instance (hence which buckets) answered.
pub(super) fn routing_request_id(region: &str, now: OffsetDateTime) -> String {
    format!(
        "{}:{:04}{:02}{:02}T{:02}{:02}{:02}Z:{}",
        crate::throttle::region_key(region).to_ascii_uppercase(),
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        uuid::Uuid::new_v4()
    )
}
