//! `GET {scope}/providers/Microsoft.Authorization/roleAssignments[?$filter=…]`.
//!
//! What a list returns depends on the filter (RoleAssignmentFilterParameter in
//! `authorization-RoleAssignmentsCalls.json` 2022-04-01): without one, the assignments at,
//! above and below the scope; `atScope()`, those at or above it (what HyperShift lists before
//! creating, to skip grants it inherits); `principalId eq '{id}'` (or `assignedTo('{id}')`),
//! that principal's at, above and below. Filters combine with `and`.

use axum::response::Response;
use uuid::Uuid;

use super::refusals::invalid_filter;
use super::{model::render_assignment, scope};
use crate::arm::Ctx;
use crate::arm::respond::page;
use crate::errors::Result;
use crate::path::AuthzRef;
use crate::store::{Store, StoredAssignment};

/// A parsed `$filter`.
#[derive(Debug, Default, PartialEq)]
struct Filter {
    at_scope: bool,
    principal: Option<Uuid>,
}

/// `'x'` → `x`.
fn quoted(s: &str) -> Option<&str> {
    s.trim().strip_prefix('\'')?.strip_suffix('\'')
}

fn parse_filter(raw: &str) -> Option<Filter> {
    let mut filter = Filter::default();
    for clause in raw.split(" and ") {
        let clause = clause.trim();
        if clause.eq_ignore_ascii_case("atScope()") {
            filter.at_scope = true;
            continue;
        }
        let id = if let Some((lhs, rhs)) = clause.split_once(" eq ") {
            lhs.trim()
                .eq_ignore_ascii_case("principalId")
                .then(|| quoted(rhs))
                .flatten()?
        } else {
            let open = clause.find('(')?;
            let (name, rest) = clause.split_at(open);
            if !name.eq_ignore_ascii_case("assignedTo") {
                return None;
            }
            quoted(rest.strip_prefix('(')?.strip_suffix(')')?)?
        };
        filter.principal = Some(Uuid::parse_str(id).ok()?);
    }
    Some(filter)
}

/// Whether `outer` is `inner` or one of its ancestors (ids are paths; case-insensitive).
fn at_or_above(outer: &str, inner: &str) -> bool {
    let (outer, inner) = (outer.to_ascii_lowercase(), inner.to_ascii_lowercase());
    inner == outer || inner.starts_with(&format!("{outer}/"))
}

fn keeps(filter: &Filter, scope: &str, a: &StoredAssignment) -> bool {
    let related = if filter.at_scope {
        at_or_above(&a.scope, scope)
    } else {
        at_or_above(&a.scope, scope) || at_or_above(scope, &a.scope)
    };
    related
        && filter
            .principal
            .is_none_or(|p| Uuid::parse_str(&a.principal_id).is_ok_and(|q| q == p))
}

pub(super) fn assignments(ctx: &Ctx<'_>, store: &Store, r: &AuthzRef) -> Result<Response> {
    let scope_id = scope::resolve(store, r, false)?;
    let filter = match ctx.query.get("$filter") {
        None => Filter::default(),
        Some(raw) => parse_filter(raw).ok_or_else(|| invalid_filter(raw))?,
    };
    let items = store
        .assignments()
        .filter(|a| a.sub.eq_ignore_ascii_case(&r.sub) && keeps(&filter, &scope_id, a))
        .map(render_assignment)
        .collect();
    Ok(page(ctx, items))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "ce2ce14e-85d7-4629-bdbc-454d0519d987";

    #[test]
    fn filters_the_spec_describes_parse() {
        let p = Uuid::parse_str(P).ok();
        assert_eq!(
            parse_filter("atScope()"),
            Some(Filter {
                at_scope: true,
                principal: None
            })
        );
        for raw in [
            format!("principalId eq '{P}'"),
            format!("assignedTo('{P}')"),
        ] {
            assert_eq!(parse_filter(&raw).and_then(|f| f.principal), p, "{raw}");
        }
        let both = parse_filter(&format!("atScope() and principalId eq '{P}'"));
        assert_eq!(
            both,
            Some(Filter {
                at_scope: true,
                principal: p
            })
        );
        for bad in ["roleName eq 'x'", "principalId eq 'nope'", "atScope"] {
            assert_eq!(parse_filter(bad), None, "{bad}");
        }
    }

    #[test]
    fn scopes_nest_by_path_not_by_prefix() {
        assert!(at_or_above(
            "/subscriptions/s",
            "/subscriptions/s/resourceGroups/rg"
        ));
        assert!(at_or_above(
            "/subscriptions/s/resourceGroups/RG",
            "/subscriptions/s/resourcegroups/rg"
        ));
        assert!(!at_or_above(
            "/subscriptions/s/resourceGroups/rg",
            "/subscriptions/s/resourceGroups/rg2"
        ));
    }
}
