//! Injected failures: what the simulated operator should make go wrong.

use serde::{Deserialize, Serialize};

/// Which kind a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultKind {
    HostedCluster,
    NodePool,
}

/// A failure to simulate: matching objects report it in their conditions and never become
/// ready until the fault is cleared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    /// Only objects whose name contains this; all objects of `kind` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    /// Condition reason, e.g. `AzureError`, `InvalidAzureCredentials`, `QuotaExceeded`.
    pub reason: String,
    pub message: String,
    /// HostedCluster: the condition the operator sets `False` with the reason and message
    /// (default `ValidConfiguration`, HyperShift's refusal of the cluster's input). NodePool
    /// faults show on `Ready` and `AllMachinesReady`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

impl Fault {
    /// The condition a HostedCluster fault sets `False`.
    pub fn condition(&self) -> &str {
        self.condition.as_deref().unwrap_or("ValidConfiguration")
    }

    /// Whether this fault applies to the object `kind`/`name`.
    pub fn matches(&self, kind: FaultKind, name: &str) -> bool {
        self.kind == kind
            && self
                .name_contains
                .as_deref()
                .is_none_or(|s| name.contains(s))
    }
}

/// An error the Kubernetes API answers instead of serving matching requests, as
/// kube-apiserver answers when it sheds load (429 with `Retry-After`), fails (500, 503, 504)
/// or when RBAC forbids the caller (403). Posted to the admin API's `/faults/api`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiFault {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection` or `*`.
    pub verb: String,
    /// Resource plural, with its subresource if any (`hostedclusters`,
    /// `hostedclusters/status`), or `*`.
    pub resource: String,
    /// Only requests for an object whose name contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    /// 403, 429, 500, 503 or 504.
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `Retry-After` (and `details.retryAfterSeconds`) of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
    /// How many requests to fail; `None` = until cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// An installed [`ApiFault`] and what it has done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledApiFault {
    #[serde(flatten)]
    pub spec: ApiFault,
    /// Requests still to fail (`None` = until cleared).
    pub remaining: Option<u32>,
    /// Requests failed so far.
    pub hits: u64,
}

impl ApiFault {
    /// kube-apiserver's `StatusReason` for the status, or why the status is not one the
    /// emulator answers with.
    pub fn reason(&self) -> Result<&'static str, String> {
        Ok(match self.status {
            403 => "Forbidden",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            s => return Err(format!("status {s} is not one of 403, 429, 500, 503, 504")),
        })
    }

    /// Whether the fault applies to a request.
    pub fn matches(&self, verb: &str, resource: &str, name: &str) -> bool {
        (self.verb == "*" || self.verb.eq_ignore_ascii_case(verb))
            && (self.resource == "*" || self.resource.eq_ignore_ascii_case(resource))
            && self
                .name_contains
                .as_deref()
                .is_none_or(|s| name.contains(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_fault_matches_by_verb_resource_and_name() {
        let f = ApiFault {
            verb: "get".into(),
            resource: "hostedclusters".into(),
            name_contains: Some("blue".into()),
            status: 429,
            message: None,
            retry_after_secs: Some(1),
            count: Some(1),
        };
        assert_eq!(f.reason(), Ok("TooManyRequests"));
        assert!(f.matches("GET", "hostedclusters", "blue"));
        assert!(!f.matches("get", "hostedclusters", "green"));
        assert!(!f.matches("patch", "hostedclusters", "blue"));
        assert!(!f.matches("get", "hostedclusters/status", "blue"));
        let teapot = ApiFault { status: 418, ..f };
        assert!(teapot.reason().is_err());
    }
}
