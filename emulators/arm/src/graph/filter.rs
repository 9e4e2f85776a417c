//! The one `$filter` form the emulator evaluates: `{property} eq '{value}'` on a property the
//! collection supports filtering by (`appId` and `displayName` of applications and service
//! principals, `name` of credentials), compared as Graph compares them, ignoring case. Anything
//! else is Graph's `Request_UnsupportedQuery`, so no query silently matches everything.

use super::error::GraphError;

/// A parsed `$filter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Filter {
    /// The property as the collection spells it.
    pub property: &'static str,
    pub value: String,
}

impl Filter {
    /// Reads `expr` for a collection of `resource` filterable by `properties`.
    pub fn parse(
        expr: &str,
        resource: &str,
        properties: &[&'static str],
    ) -> Result<Self, GraphError> {
        let (left, right) = expr.split_once(" eq ").unwrap_or((expr, ""));
        let named = left.trim();
        let unsupported = || GraphError::unsupported_filter(named, resource);
        let property = properties
            .iter()
            .copied()
            .find(|p| p.eq_ignore_ascii_case(named))
            .ok_or_else(unsupported)?;
        let literal = right
            .trim()
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .ok_or_else(unsupported)?;
        Ok(Self {
            property,
            value: literal.replace("''", "'"),
        })
    }

    /// Whether an object whose `property` is `actual` passes.
    pub fn keeps(&self, actual: &str) -> bool {
        actual.eq_ignore_ascii_case(&self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_equality_on_supported_properties_only() {
        let f = Filter::parse("appId eq 'ABC'", "Application", &["appId", "displayName"])
            .expect("filter");
        assert_eq!(f.property, "appId");
        assert!(f.keeps("abc"));
        assert!(!f.keeps("abd"));
        let quoted = Filter::parse("displayName eq 'it''s'", "Application", &["displayName"])
            .expect("filter");
        assert!(quoted.keeps("it's"));
        for bad in [
            "appId ne 'x'",
            "startswith(displayName,'x')",
            "appId eq x",
            "owner eq 'x'",
        ] {
            assert_eq!(
                Filter::parse(bad, "Application", &["appId", "displayName"])
                    .err()
                    .map(|e| e.code),
                Some("Request_UnsupportedQuery"),
                "{bad}"
            );
        }
    }
}
