//! The few `x-kubernetes-validations` (CEL) rules of HyperShift's CRDs the emulator enforces,
//! written as Rust predicates — no CEL interpreter runs here.
//!
//! Which ones: those that guard fields the product sets (discriminated unions it must fill
//! in correctly, fields it must never change after creation). Each keeps the rule's exact
//! `message`, since that is what kube-apiserver reports
//! (`<path>: Invalid value: "<type>": <message>`).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

type Check = dyn Fn(&Value, Option<&Value>) -> bool + Send + Sync;

/// One rule: holds for the node's value (`self`) given the stored value (`oldSelf`, only
/// on updates).
#[derive(Clone)]
pub struct Rule {
    pub message: &'static str,
    check: Arc<Check>,
}

impl Rule {
    /// Whether the rule holds.
    pub fn holds(&self, value: &Value, old: Option<&Value>) -> bool {
        (self.check)(value, old)
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("message", &self.message)
            .finish()
    }
}

/// A transition rule `self == oldSelf`: only checked when the field exists before and after.
pub fn immutable(message: &'static str) -> Rule {
    Rule {
        message,
        check: Arc::new(|new, old| old.is_none_or(|old| old == new)),
    }
}

/// `member` is set exactly when `discriminator == value` (HyperShift's union rules, e.g.
/// `has(self.workloadIdentities) == (self.azureAuthenticationConfigType == 'WorkloadIdentities')`).
pub fn required_iff(
    discriminator: &'static str,
    value: &'static str,
    member: &'static str,
    message: &'static str,
) -> Rule {
    Rule {
        message,
        check: Arc::new(move |obj, _| {
            let selected = obj.get(discriminator).and_then(Value::as_str) == Some(value);
            selected == obj.get(member).is_some()
        }),
    }
}

/// At most one of `a` and `b` is set.
pub fn not_both(a: &'static str, b: &'static str, message: &'static str) -> Rule {
    Rule {
        message,
        check: Arc::new(move |obj, _| !(obj.get(a).is_some() && obj.get(b).is_some())),
    }
}

/// `member` is not set unless `discriminator == value`.
pub fn forbidden_unless(
    discriminator: &'static str,
    value: &'static str,
    member: &'static str,
    message: &'static str,
) -> Rule {
    Rule {
        message,
        check: Arc::new(move |obj, _| {
            obj.get(member).is_none()
                || obj.get(discriminator).and_then(Value::as_str) == Some(value)
        }),
    }
}

/// A free-form predicate on the value alone.
pub fn holds(message: &'static str, f: fn(&Value) -> bool) -> Rule {
    Rule {
        message,
        check: Arc::new(move |v, _| f(v)),
    }
}
