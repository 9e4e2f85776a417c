//! Fault injection: answer matching requests with a chosen ARM error.
//!
//! Tests and operators use it to rehearse what real Azure does on a bad day (403 on a
//! private DNS PUT, 429 bursts, 500s) without touching the happy-path code.
//!
//! Two kinds: a [`FaultSpec`] refuses the request outright; an [`AsyncFaultSpec`] lets an
//! asynchronous PUT or DELETE be accepted (201/202 with `Azure-AsyncOperation`) and makes its
//! operation end `Failed` with the fault's error, as ARM reports a resource provider's late
//! refusal (e.g. a private DNS link to a VNet already linked to a zone of the same name).

use serde::{Deserialize, Serialize};

/// What to inject, as posted to `POST /faults`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FaultSpec {
    /// HTTP method (`PUT`, `GET`, …) or `*`.
    pub method: String,
    /// Full resource type (`Microsoft.Network/privateDnsZones`), case-insensitive, or `*`.
    pub resource_type: String,
    /// Only requests whose resource name contains this (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    /// Only requests whose URL path contains this (case-insensitive). The path holds the
    /// resource's group, parents and scope, so this scopes a fault to one cluster's resources
    /// where the name cannot: role assignments (named by GUID) at its groups' scopes, record
    /// sets (`api`) in its zone, the federated credentials of its identities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_contains: Option<String>,
    pub status: u16,
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
    /// How many requests to fail; `None` = until cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// An installed fault.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Fault {
    pub id: String,
    #[serde(flatten)]
    pub spec: FaultSpec,
    /// Requests still to fail (`None` = unlimited).
    pub remaining: Option<u32>,
    /// Requests failed so far.
    pub hits: u64,
}

/// A failure after acceptance, as posted to `POST /faults/async`: the matching PUT or DELETE
/// of an asynchronous type is accepted as usual, then its operation ends `Failed` with
/// `{"code": code, "message": message}`. Synchronous types never match (ARM has no operation
/// to fail there), so the fault waits for a request it can apply to.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AsyncFaultSpec {
    /// `PUT`, `DELETE` or `*`.
    pub method: String,
    /// Full resource type, case-insensitive, or `*`.
    pub resource_type: String,
    /// Only requests whose resource name contains this (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_contains: Option<String>,
    /// Only requests whose URL path contains this (case-insensitive). The path holds the
    /// resource's group, parents and scope, so this scopes a fault to one cluster's resources
    /// where the name cannot: role assignments (named by GUID) at its groups' scopes, record
    /// sets (`api`) in its zone, the federated credentials of its identities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_contains: Option<String>,
    /// `error.code` of the failed operation.
    pub code: String,
    /// `error.message` of the failed operation.
    pub message: String,
    /// How many operations to fail; `None` = until cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// An installed failure-after-acceptance.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AsyncFault {
    pub id: String,
    #[serde(flatten)]
    pub spec: AsyncFaultSpec,
    /// Operations still to fail (`None` = unlimited).
    pub remaining: Option<u32>,
    /// Operations failed so far.
    pub hits: u64,
}

/// The error an asynchronous operation ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpFailure {
    pub code: String,
    pub message: String,
}

/// The installed faults, first match wins.
#[derive(Default)]
pub struct Faults {
    list: Vec<Fault>,
    after_acceptance: Vec<AsyncFault>,
}

/// A request, as faults match it.
#[derive(Clone, Copy, Debug)]
pub struct FaultRequest<'a> {
    pub method: &'a str,
    /// Full resource type, e.g. `Microsoft.Network/virtualNetworks`.
    pub resource_type: &'a str,
    /// The resource's own name (last segment), empty for lists.
    pub name: &'a str,
    /// The URL path, e.g. `/subscriptions/…/resourceGroups/…/providers/…`.
    pub path: &'a str,
}

fn contains(haystack: &str, needle: Option<&str>) -> bool {
    needle.is_none_or(|n| {
        haystack
            .to_ascii_lowercase()
            .contains(&n.to_ascii_lowercase())
    })
}

fn matches(
    (s_method, s_type, s_name, s_path): (&str, &str, Option<&str>, Option<&str>),
    req: &FaultRequest<'_>,
) -> bool {
    (s_method == "*" || s_method.eq_ignore_ascii_case(req.method))
        && (s_type == "*" || s_type.eq_ignore_ascii_case(req.resource_type))
        && contains(req.name, s_name)
        && contains(req.path, s_path)
}

/// Why a fault spec was refused.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    #[error("status {0} is not an error status (400-599)")]
    NotAnError(u16),
    #[error("code must not be empty")]
    EmptyCode,
    #[error("method {0} starts no asynchronous operation (PUT, DELETE or *)")]
    NotAsyncMethod(String),
}

impl Faults {
    pub fn add(&mut self, spec: FaultSpec) -> Result<Fault, FaultError> {
        if !(400..=599).contains(&spec.status) {
            return Err(FaultError::NotAnError(spec.status));
        }
        if spec.code.trim().is_empty() {
            return Err(FaultError::EmptyCode);
        }
        let fault = Fault {
            id: uuid::Uuid::new_v4().to_string(),
            remaining: spec.count,
            spec,
            hits: 0,
        };
        self.list.push(fault.clone());
        Ok(fault)
    }

    pub fn list(&self) -> Vec<Fault> {
        self.list.clone()
    }

    pub fn clear(&mut self) {
        self.list.clear();
        self.after_acceptance.clear();
    }

    pub fn add_async(&mut self, spec: AsyncFaultSpec) -> Result<AsyncFault, FaultError> {
        if spec.code.trim().is_empty() {
            return Err(FaultError::EmptyCode);
        }
        let m = spec.method.as_str();
        if !(m == "*" || m.eq_ignore_ascii_case("PUT") || m.eq_ignore_ascii_case("DELETE")) {
            return Err(FaultError::NotAsyncMethod(spec.method));
        }
        let fault = AsyncFault {
            id: uuid::Uuid::new_v4().to_string(),
            remaining: spec.count,
            spec,
            hits: 0,
        };
        self.after_acceptance.push(fault.clone());
        Ok(fault)
    }

    pub fn list_async(&self) -> Vec<AsyncFault> {
        self.after_acceptance.clone()
    }

    /// The first failure-after-acceptance matching the request, without using it up: the
    /// request may still be refused before an operation starts.
    pub fn peek_async(&self, req: &FaultRequest<'_>) -> Option<AsyncFault> {
        self.after_acceptance
            .iter()
            .find(|f| {
                let s = &f.spec;
                matches(
                    (
                        &s.method,
                        &s.resource_type,
                        s.name_contains.as_deref(),
                        s.path_contains.as_deref(),
                    ),
                    req,
                )
            })
            .cloned()
    }

    /// Counts one use of an async fault once an operation has been started with it.
    pub fn consume_async(&mut self, id: &str) {
        let Some(idx) = self.after_acceptance.iter().position(|f| f.id == id) else {
            return;
        };
        let fault = &mut self.after_acceptance[idx];
        fault.hits += 1;
        if let Some(r) = fault.remaining.as_mut() {
            *r = r.saturating_sub(1);
            if *r == 0 {
                self.after_acceptance.remove(idx);
            }
        }
    }

    /// Consumes one use of the first fault matching the request.
    pub fn take(&mut self, req: &FaultRequest<'_>) -> Option<FaultSpec> {
        let idx = self.list.iter().position(|f| {
            let s = &f.spec;
            matches(
                (
                    &s.method,
                    &s.resource_type,
                    s.name_contains.as_deref(),
                    s.path_contains.as_deref(),
                ),
                req,
            )
        })?;
        let fault = &mut self.list[idx];
        fault.hits += 1;
        let spec = fault.spec.clone();
        if let Some(r) = fault.remaining.as_mut() {
            *r = r.saturating_sub(1);
            if *r == 0 {
                self.list.remove(idx);
            }
        }
        Some(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_role_assignment(path: &str) -> FaultRequest<'_> {
        FaultRequest {
            method: "PUT",
            resource_type: "Microsoft.Authorization/roleAssignments",
            name: "1f0e2c4a-0000-5000-8000-000000000000",
            path,
        }
    }

    #[test]
    fn a_fault_scoped_by_path_fails_only_that_scope_and_is_used_up() {
        let mut faults = Faults::default();
        faults
            .add(FaultSpec {
                method: "PUT".into(),
                resource_type: "Microsoft.Authorization/roleAssignments".into(),
                name_contains: None,
                path_contains: Some("/resourceGroups/Blue-".into()),
                status: 403,
                code: "AuthorizationFailed".into(),
                message: None,
                retry_after_secs: None,
                count: Some(1),
            })
            .expect("a valid fault");
        let other = "/subscriptions/s/resourceGroups/green-x/providers/Microsoft.Authorization/roleAssignments/1f0e2c4a-0000-5000-8000-000000000000";
        let ours = "/subscriptions/s/resourceGroups/blue-x/providers/Microsoft.Authorization/roleAssignments/1f0e2c4a-0000-5000-8000-000000000000";
        assert_eq!(faults.take(&put_role_assignment(other)), None);
        let taken = faults.take(&put_role_assignment(ours)).expect("ours fails");
        assert_eq!(
            (taken.status, taken.code.as_str()),
            (403, "AuthorizationFailed")
        );
        assert_eq!(faults.take(&put_role_assignment(ours)), None, "used up");
    }
}
