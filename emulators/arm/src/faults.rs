//! Fault injection: answer matching requests with a chosen ARM error.
//!
//! Tests and operators use it to rehearse what real Azure does on a bad day (403 on a
//! private DNS PUT, 429 bursts, 500s) without touching the happy-path code.

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

/// The installed faults, first match wins.
#[derive(Default)]
pub struct Faults {
    list: Vec<Fault>,
}

/// Why a fault spec was refused.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    #[error("status {0} is not an error status (400-599)")]
    NotAnError(u16),
    #[error("code must not be empty")]
    EmptyCode,
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
    }

    /// Consumes one use of the first fault matching the request.
    pub fn take(&mut self, method: &str, resource_type: &str, name: &str) -> Option<FaultSpec> {
        let name = name.to_ascii_lowercase();
        let idx = self.list.iter().position(|f| {
            let s = &f.spec;
            (s.method == "*" || s.method.eq_ignore_ascii_case(method))
                && (s.resource_type == "*" || s.resource_type.eq_ignore_ascii_case(resource_type))
                && s.name_contains
                    .as_deref()
                    .is_none_or(|n| name.contains(&n.to_ascii_lowercase()))
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
