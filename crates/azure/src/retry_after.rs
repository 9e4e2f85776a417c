//! Reading how long ARM asks us to wait.
//!
//! ARM and resource providers say it three ways: `Retry-After` as integer seconds (ARM RPC) or
//! an HTTP date (RFC 7231), and `retry-after-ms` / `x-ms-retry-after-ms` in milliseconds.
//! The same value drives both LRO poll spacing and the saga engine's next attempt.

use std::time::Duration;

use azure_core::http::headers::{HeaderName, Headers};
use time::OffsetDateTime;

const RETRY_AFTER: HeaderName = HeaderName::from_static("retry-after");
const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
const X_MS_RETRY_AFTER_MS: HeaderName = HeaderName::from_static("x-ms-retry-after-ms");

/// Longest wait we accept from a header: a buggy or hostile value must not park a step for days.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The wait requested by a response, if any (millisecond headers first, they are more precise).
pub(crate) fn from_headers(headers: &Headers) -> Option<Duration> {
    for name in [&X_MS_RETRY_AFTER_MS, &RETRY_AFTER_MS] {
        if let Some(ms) = headers
            .get_optional_str(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            return Some(Duration::from_millis(ms).min(MAX_RETRY_AFTER));
        }
    }
    headers
        .get_optional_str(&RETRY_AFTER)
        .and_then(|v| parse(v, OffsetDateTime::now_utc()))
}

/// Parses a `Retry-After` value: delta-seconds or an HTTP date (relative to `now`).
pub(crate) fn parse(value: &str, now: OffsetDateTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let at = OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    let delta = at - now;
    // A date in the past means "now"; clamp negative to zero rather than ignoring it.
    Some(
        Duration::try_from(delta)
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_AFTER),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn seconds_and_dates() {
        let now = datetime!(2015-10-21 07:27:50 UTC);
        assert_eq!(parse("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse("soon", now), None);
        assert_eq!(parse("999999", now), Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn headers_prefer_milliseconds() {
        let mut h = Headers::new();
        h.insert("retry-after", "5");
        assert_eq!(from_headers(&h), Some(Duration::from_secs(5)));
        h.insert("x-ms-retry-after-ms", "250");
        assert_eq!(from_headers(&h), Some(Duration::from_millis(250)));
    }
}
