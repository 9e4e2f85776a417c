//! The one place that decides whether an ARM failure is worth retrying.
//!
//! The saga engine retries whole steps with its own visible backoff and pauses a saga when a
//! step keeps failing, so the only question asked here is "could the same request succeed
//! later without anyone changing anything?". ARM error codes win over HTTP status because
//! ARM reuses statuses loosely: `AnotherOperationInProgress` arrives as 409 *or* 429 *or* a
//! failed async operation, `PrincipalNotFound` (Entra replication lag) as 400.

/// What the caller should do with a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Try the step again later (throttling, server errors, transient conflicts, timeouts,
    /// connection failures); honour [`crate::ArmError::retry_after`] when present.
    Retryable,
    /// Retrying the same request cannot help: validation, authorization, quota, bad input.
    Terminal,
    /// The resource (or its resource group / parent) does not exist.
    NotFound,
}

/// Codes that clear by themselves with time, whatever status they come with.
const RETRYABLE_CODES: &[&str] = &[
    "AnotherOperationInProgress",
    "Conflict",
    "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity",
    "ReferencedResourceNotProvisioned",
    // Entra replication lag after creating an identity; fixed for good by
    // `principalType: ServicePrincipal`, but still transient when it happens.
    "PrincipalNotFound",
    "ResourceGroupBeingDeleted",
    "OperationPreempted",
    "Canceled",
    "TooManyRequests",
    "SubscriptionRequestsThrottled",
    "InternalServerError",
    "InternalError",
    "ServerTimeout",
    "GatewayTimeout",
    "ServiceUnavailable",
    "NetworkingInternalOperationError",
    "RequestTimeout",
    // A subnet/NSG still referenced while its dependants are being deleted: clears once the
    // reverse DAG (or the user) removes them; bounded retries then pause the saga.
    "InUseSubnetCannotBeDeleted",
    "InUseNetworkSecurityGroupCannotBeDeleted",
    "PreconditionFailed",
];

/// Code prefixes that are retryable (`RetryableError`, `RetryableErrorDueToTooManyCalls`, …).
const RETRYABLE_PREFIXES: &[&str] = &["RetryableError", "TooManyRequests"];

/// Codes that never clear by waiting, even when ARM sends them with a "retryable" status.
const TERMINAL_CODES: &[&str] = &[
    "AuthorizationFailed",
    "LinkedAuthorizationFailed",
    "InvalidAuthenticationToken",
    "InvalidAuthenticationTokenTenant",
    "AuthenticationFailed",
    "InvalidParameter",
    "InvalidRequestContent",
    "InvalidRequestFormat",
    "InvalidResourceName",
    "InvalidResourceType",
    "InvalidApiVersionParameter",
    "NoRegisteredProviderFound",
    "MissingSubscriptionRegistration",
    "LocationNotAvailableForResourceType",
    "LocationNotAvailableForResourceGroup",
    "LocationRequired",
    "SkuNotAvailable",
    "QuotaExceeded",
    "OperationNotAllowed",
    "PublicIPCountLimitReached",
    "SubscriptionNotFound",
    "InvalidResourceNamespace",
    "RoleAssignmentExists",
    "DisallowedByPolicy",
    "RequestDisallowedByPolicy",
];

/// Classifies a failure from its HTTP status (if ARM answered) and ARM error code (if any).
///
/// ```
/// use hypersaga_azure::{classify, ErrorKind};
/// assert_eq!(classify(Some(409), Some("AnotherOperationInProgress")), ErrorKind::Retryable);
/// assert_eq!(classify(Some(429), Some("OperationNotAllowed")), ErrorKind::Terminal);
/// assert_eq!(classify(Some(403), Some("AuthorizationFailed")), ErrorKind::Terminal);
/// assert_eq!(classify(Some(400), Some("LocationNotAvailableForResourceGroup")), ErrorKind::Terminal);
/// assert_eq!(classify(Some(404), Some("ResourceGroupNotFound")), ErrorKind::NotFound);
/// assert_eq!(classify(None, None), ErrorKind::Retryable); // no answer: connection failure
/// ```
pub fn classify(status: Option<u16>, code: Option<&str>) -> ErrorKind {
    if let Some(code) = code {
        if TERMINAL_CODES.iter().any(|c| c.eq_ignore_ascii_case(code)) {
            return ErrorKind::Terminal;
        }
        if RETRYABLE_CODES.iter().any(|c| c.eq_ignore_ascii_case(code))
            || RETRYABLE_PREFIXES
                .iter()
                .any(|p| starts_with_ignore_case(code, p))
        {
            return ErrorKind::Retryable;
        }
    }
    match status {
        None => ErrorKind::Retryable,
        Some(404) | Some(410) => ErrorKind::NotFound,
        Some(408) | Some(409) | Some(412) | Some(423) | Some(429) => ErrorKind::Retryable,
        Some(s) if s >= 500 => ErrorKind::Retryable,
        Some(_) => ErrorKind::Terminal,
    }
}

/// Whether a 404 with ARM error `code` says the resource (or its parent, or its group) does
/// not exist — the only 404 a look-up may read as "absent" and a delete as "already gone".
/// `SubscriptionNotFound`, `InvalidResourceType`, `InvalidResourceNamespace` and
/// `NoRegisteredProviderFound` say the request is wrong instead: read as absent, a delete
/// against the wrong subscription would report success and leave everything behind.
///
/// ```
/// use hypersaga_azure::means_absent;
/// assert!(means_absent(None));
/// assert!(means_absent(Some("ResourceGroupNotFound")));
/// assert!(!means_absent(Some("SubscriptionNotFound")));
/// assert!(!means_absent(Some("InvalidResourceType")));
/// ```
pub fn means_absent(code: Option<&str>) -> bool {
    const NOT_ABSENCE: [&str; 2] = ["SubscriptionNotFound", "PrincipalNotFound"];
    match code {
        None => true,
        Some(c) => {
            c.len() >= "NotFound".len()
                && c.as_bytes()[c.len() - "NotFound".len()..].eq_ignore_ascii_case(b"NotFound")
                && !NOT_ABSENCE.iter().any(|n| n.eq_ignore_ascii_case(c))
        }
    }
}

/// Low-cardinality label for metrics (`arm_errors_total{reason=…}`): never an id or message.
pub(crate) fn reason_label(status: Option<u16>, code: Option<&str>) -> &'static str {
    if let Some(code) = code {
        let is = |c: &str| code.eq_ignore_ascii_case(c);
        if is("AnotherOperationInProgress") || is("Conflict") || is("OperationPreempted") {
            return "conflict";
        }
        if starts_with_ignore_case(code, "RetryableError")
            || is("TooManyRequests")
            || is("SubscriptionRequestsThrottled")
        {
            return "throttled";
        }
        if is("AuthorizationFailed")
            || is("LinkedAuthorizationFailed")
            || starts_with_ignore_case(code, "InvalidAuthenticationToken")
            || is("AuthenticationFailed")
        {
            return "authorization";
        }
        if is("QuotaExceeded")
            || is("OperationNotAllowed")
            || is("PublicIPCountLimitReached")
            || is("SkuNotAvailable")
        {
            return "quota";
        }
        if is("PrincipalNotFound") {
            return "replication_lag";
        }
        if is("RequestDisallowedByPolicy") || is("DisallowedByPolicy") {
            return "policy";
        }
    }
    match status {
        None => "transport",
        Some(404) | Some(410) => "not_found",
        Some(408) => "timeout",
        Some(409) => "conflict",
        Some(412) => "precondition_failed",
        Some(429) => "throttled",
        Some(401) | Some(403) => "authorization",
        Some(s) if s >= 500 => "server_error",
        Some(_) => "invalid_request",
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        for s in [408, 409, 429, 500, 502, 503, 504] {
            assert_eq!(classify(Some(s), None), ErrorKind::Retryable, "{s}");
        }
        for s in [400, 401, 403, 405, 422] {
            assert_eq!(classify(Some(s), None), ErrorKind::Terminal, "{s}");
        }
        assert_eq!(
            classify(Some(404), Some("ResourceNotFound")),
            ErrorKind::NotFound
        );
    }

    #[test]
    fn codes_override_status() {
        assert_eq!(
            classify(Some(429), Some("RetryableErrorDueToTooManyCalls")),
            ErrorKind::Retryable
        );
        assert_eq!(
            classify(Some(400), Some("PrincipalNotFound")),
            ErrorKind::Retryable
        );
        assert_eq!(
            classify(Some(200), Some("AnotherOperationInProgress")),
            ErrorKind::Retryable
        );
        assert_eq!(
            classify(Some(409), Some("RoleAssignmentExists")),
            ErrorKind::Terminal
        );
        assert_eq!(
            classify(Some(200), Some("QuotaExceeded")),
            ErrorKind::Terminal
        );
        assert_eq!(
            classify(Some(400), Some("invalidparameter")),
            ErrorKind::Terminal
        );
    }

    #[test]
    fn labels() {
        assert_eq!(reason_label(Some(429), None), "throttled");
        assert_eq!(
            reason_label(Some(409), Some("AnotherOperationInProgress")),
            "conflict"
        );
        assert_eq!(
            reason_label(Some(403), Some("AuthorizationFailed")),
            "authorization"
        );
        assert_eq!(reason_label(None, None), "transport");
    }
}
