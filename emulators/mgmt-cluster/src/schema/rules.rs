//! The `x-kubernetes-validations` (CEL) rules of HyperShift's CRDs the emulator enforces,
//! written as Rust predicates — no CEL interpreter runs here.
//!
//! Which ones: those that guard fields the product sets or may change on day 2
//! (discriminated unions it must fill in correctly, fields it must never change after
//! creation, formats of the IDs it passes). Each keeps the rule's exact `message`, since
//! that is what kube-apiserver reports (`<path>: Invalid value: "<type>": <message>`); a
//! rule without one is reported as `failed rule: <rule>`. A rule whose evaluation fails
//! (CEL's `no such key: x`, `index '4' out of range in list size '3'`) is reported as
//! kube-apiserver reports it: `<error> evaluating rule: <message>`.
//!
//! CEL's `matches` is RE2's unanchored search, so a pattern without `^…$` holds when any
//! part of the string matches: the predicates here use `Regex::is_match`, which searches
//! the same way.

use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

/// What evaluating a rule gives: whether it holds, or CEL's runtime error.
pub type Outcome = Result<bool, String>;

type Check = dyn Fn(&Value, Option<&Value>) -> Outcome + Send + Sync;

/// One rule: holds for the node's value (`self`) given the stored value (`oldSelf`, only
/// on updates).
#[derive(Clone)]
pub struct Rule {
    pub message: &'static str,
    check: Arc<Check>,
}

impl Rule {
    /// Evaluates the rule.
    pub fn eval(&self, value: &Value, old: Option<&Value>) -> Outcome {
        (self.check)(value, old)
    }

    fn new(
        message: &'static str,
        check: impl Fn(&Value, Option<&Value>) -> Outcome + Send + Sync + 'static,
    ) -> Self {
        Self {
            message,
            check: Arc::new(check),
        }
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("message", &self.message)
            .finish()
    }
}

/// CEL's error for a field `self.<name>` that is not set.
fn no_such_key(name: &str) -> String {
    format!("no such key: {name}")
}

/// `self.<name>` of an object, or CEL's error when it is not set.
pub fn field<'a>(obj: &'a Value, name: &str) -> Result<&'a Value, String> {
    obj.get(name).ok_or_else(|| no_such_key(name))
}

/// A transition rule `self == oldSelf`: only checked when the field exists before and after.
pub fn immutable(message: &'static str) -> Rule {
    Rule::new(message, |new, old| Ok(old.is_none_or(|old| old == new)))
}

/// A transition rule `!has(oldSelf.<name>) || has(self.<name>)`: once set, never removed.
pub fn kept_once_set(name: &'static str, message: &'static str) -> Rule {
    Rule::new(message, move |new, old| {
        Ok(old.is_none_or(|old| old.get(name).is_none() || new.get(name).is_some()))
    })
}

/// `member` is set exactly when `discriminator == value` (HyperShift's union rules, e.g.
/// `has(self.workloadIdentities) == (self.azureAuthenticationConfigType == 'WorkloadIdentities')`).
pub fn required_iff(
    discriminator: &'static str,
    value: &'static str,
    member: &'static str,
    message: &'static str,
) -> Rule {
    Rule::new(message, move |obj, _| {
        let selected = obj.get(discriminator).and_then(Value::as_str) == Some(value);
        Ok(selected == obj.get(member).is_some())
    })
}

/// At most one of `a` and `b` is set.
pub fn not_both(a: &'static str, b: &'static str, message: &'static str) -> Rule {
    Rule::new(message, move |obj, _| {
        Ok(!(obj.get(a).is_some() && obj.get(b).is_some()))
    })
}

/// `member` is not set unless `discriminator == value`.
pub fn forbidden_unless(
    discriminator: &'static str,
    value: &'static str,
    member: &'static str,
    message: &'static str,
) -> Rule {
    Rule::new(message, move |obj, _| {
        Ok(obj.get(member).is_none()
            || obj.get(discriminator).and_then(Value::as_str) == Some(value))
    })
}

/// `!has(self.<member>) || self.<discriminator> == '<value>'`: unlike
/// [`forbidden_unless`], an unset discriminator is CEL's `no such key` error when the
/// member is set.
pub fn only_with(
    member: &'static str,
    discriminator: &'static str,
    value: &'static str,
    message: &'static str,
) -> Rule {
    Rule::new(message, move |obj, _| {
        if obj.get(member).is_none() {
            return Ok(true);
        }
        Ok(field(obj, discriminator)?.as_str() == Some(value))
    })
}

/// A free-form predicate on the value alone.
pub fn holds(message: &'static str, f: fn(&Value) -> bool) -> Rule {
    Rule::new(message, move |v, _| Ok(f(v)))
}

/// A free-form predicate on the value alone that may fail as CEL fails.
pub fn evaluates(message: &'static str, f: fn(&Value) -> Outcome) -> Rule {
    Rule::new(message, move |v, _| f(v))
}

/// Compiles one of this crate's constant patterns; a pattern that does not compile is a bug
/// the schema tests catch, logged and treated as matching nothing.
pub fn regex(pattern: &'static str) -> Option<Regex> {
    Regex::new(pattern)
        .inspect_err(|e| tracing::error!(pattern, error = %e, "rule pattern does not compile"))
        .ok()
}

/// `self.matches('<pattern>')` of a string (RE2's unanchored search).
pub fn matches(pattern: &'static str, message: &'static str) -> Rule {
    let re = regex(pattern);
    Rule::new(message, move |v, _| {
        let s = v.as_str().unwrap_or_default();
        Ok(re.as_ref().is_some_and(|re| re.is_match(s)))
    })
}

/// `self.split('/')[index]` of a string, or CEL's error when there is no such part.
pub fn split_part(value: &Value, index: usize) -> Result<&str, String> {
    let s = value.as_str().unwrap_or_default();
    let parts: Vec<&str> = s.split('/').collect();
    parts.get(index).copied().ok_or_else(|| {
        format!(
            "index '{index}' out of range in list size '{}'",
            parts.len()
        )
    })
}

/// `self.split('/')[index].matches('<pattern>')`.
pub fn part_matches(index: usize, pattern: &'static str, message: &'static str) -> Rule {
    let re = regex(pattern);
    Rule::new(message, move |v, _| {
        let part = split_part(v, index)?;
        Ok(re.as_ref().is_some_and(|re| re.is_match(part)))
    })
}

/// `!self.split('/')[index].endsWith(c)` for each of `chars`.
pub fn part_not_ending(index: usize, chars: &'static [char], message: &'static str) -> Rule {
    Rule::new(message, move |v, _| {
        let part = split_part(v, index)?;
        Ok(!chars.iter().any(|c| part.ends_with(*c)))
    })
}

/// `size(self.split('/')) == parts && self.matches('<pattern>')`: an ARM ID's shape.
pub fn id_shape(parts: usize, pattern: &'static str, message: &'static str) -> Rule {
    let re = regex(pattern);
    Rule::new(message, move |v, _| {
        let s = v.as_str().unwrap_or_default();
        Ok(s.split('/').count() == parts && re.as_ref().is_some_and(|re| re.is_match(s)))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parts_fail_as_cel_fails() {
        let rule = part_matches(4, "[a-z]{1,90}", "m");
        assert_eq!(rule.eval(&json!("/a/b/c/d"), None), Ok(true));
        assert_eq!(rule.eval(&json!("/a/b/c/9"), None), Ok(false));
        assert_eq!(
            rule.eval(&json!("/a/b"), None),
            Err("index '4' out of range in list size '3'".into())
        );
        let rule = only_with("rollingUpdate", "strategy", "RollingUpdate", "m");
        assert_eq!(
            rule.eval(&json!({"rollingUpdate": {}}), None),
            Err("no such key: strategy".into())
        );
        assert_eq!(rule.eval(&json!({}), None), Ok(true));
    }
}
