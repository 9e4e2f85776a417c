//! Whether the role assignments in the store grant an action over a scope.
//!
//! Operation strings compare ignoring case, and `*` in a role's action stands for any run of
//! characters, `/` included (`*/read`, `Microsoft.Authorization/*/Write`); `role-definitions.md`
//! in MicrosoftDocs/azure-docs. An assignment's condition constrains the delegation of role
//! assignments only ([`super::condition`]); it does not enter any other action.

use uuid::Uuid;

use super::condition::{self, Attributes, Facts};
use crate::arm::find_role;
use crate::store::{Store, StoredAssignment};

/// The role assignment a request writes (`request`) or deletes (`resource`), which an
/// assignment's condition may compare.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Subject<'a> {
    pub request: Option<&'a Attributes>,
    pub resource: Option<&'a Attributes>,
}

/// Whether `pattern` (with `*` wildcards) matches `action`, ignoring ASCII case.
pub(super) fn matches(pattern: &str, action: &str) -> bool {
    let p = pattern.as_bytes();
    let a = action.as_bytes();
    let (mut pi, mut ai) = (0, 0);
    // Position of the last `*` seen and of the action where it started matching.
    let mut star: Option<(usize, usize)> = None;
    while ai < a.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ai));
            pi += 1;
        } else if pi < p.len() && p[pi].eq_ignore_ascii_case(&a[ai]) {
            pi += 1;
            ai += 1;
        } else if let Some((sp, sa)) = star {
            pi = sp + 1;
            ai = sa + 1;
            star = Some((sp, sa + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Whether the ids are one path or `outer` is an ancestor of `inner` (case-insensitive,
/// segment-wise: `/rg` is not an ancestor of `/rg2`).
pub(crate) fn at_or_above(outer: &str, inner: &str) -> bool {
    let outer = outer.trim_end_matches('/').to_ascii_lowercase();
    let inner = inner.trim_end_matches('/').to_ascii_lowercase();
    inner == outer || inner.starts_with(&format!("{outer}/"))
}

/// Percent-escapes decoded (record names such as `@` may arrive encoded), so a request path
/// compares with the canonical ids assignments are stored under.
fn decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the role of `a` grants `action`: one of its actions matches and none of its
/// not-actions does.
fn role_grants(a: &StoredAssignment, action: &str) -> bool {
    let role = a
        .role_definition_id
        .rsplit('/')
        .next()
        .and_then(|g| Uuid::parse_str(g).ok())
        .and_then(|g| find_role(&g));
    role.is_some_and(|r| {
        r.actions.iter().any(|p| matches(p, action))
            && !r.not_actions.iter().any(|p| matches(p, action))
    })
}

/// Whether the condition of `a`, if any, lets it grant `action` on `subject`.
fn condition_allows(a: &StoredAssignment, action: &str, subject: Subject<'_>) -> bool {
    let Some(c) = a.condition.as_deref().filter(|c| !c.trim().is_empty()) else {
        return true;
    };
    !condition::constrains(action)
        || condition::allows(
            c,
            &Facts {
                action,
                request: subject.request,
                resource: subject.resource,
            },
        )
}

/// Whether an assignment to `principal` whose scope `reaches` grants `action`.
fn granted(
    store: &Store,
    principal: &str,
    action: &str,
    subject: Subject<'_>,
    reaches: impl Fn(&str) -> bool,
) -> bool {
    let Ok(principal) = Uuid::parse_str(principal) else {
        return false;
    };
    store.assignments().any(|a| {
        Uuid::parse_str(&a.principal_id).is_ok_and(|p| p == principal)
            && reaches(&a.scope)
            && role_grants(a, action)
            && condition_allows(a, action, subject)
    })
}

/// Whether an assignment to `principal` at `scope` or above grants `action`.
pub(super) fn permits(
    store: &Store,
    principal: &str,
    action: &str,
    scope: &str,
    subject: Subject<'_>,
) -> bool {
    let scope = decoded(scope);
    granted(store, principal, action, subject, |at| {
        at_or_above(at, &scope)
    })
}

/// Whether an assignment to `principal` at `scope`, above it or anywhere below it grants
/// `action`.
pub(super) fn permits_within(
    store: &Store,
    principal: &str,
    action: &str,
    scope: &str,
    subject: Subject<'_>,
) -> bool {
    let scope = decoded(scope);
    granted(store, principal, action, subject, |at| {
        at_or_above(at, &scope) || at_or_above(&scope, at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_arm_matches() {
        assert!(matches("*", "Microsoft.Network/virtualNetworks/write"));
        assert!(matches(
            "*/read",
            "Microsoft.Network/virtualNetworks/subnets/read"
        ));
        assert!(!matches(
            "*/read",
            "Microsoft.Network/virtualNetworks/write"
        ));
        assert!(matches(
            "Microsoft.Authorization/*/Write",
            "Microsoft.Authorization/roleAssignments/write"
        ));
        assert!(!matches(
            "Microsoft.Authorization/*/Write",
            "Microsoft.Authorization/roleAssignments/read"
        ));
        assert!(matches(
            "microsoft.network/virtualnetworks/READ",
            "Microsoft.Network/virtualNetworks/read"
        ));
        assert!(!matches(
            "Microsoft.Network/virtualNetworks/read",
            "Microsoft.Network/virtualNetworks/subnets/read"
        ));
        assert!(matches(
            "Microsoft.Network/*",
            "Microsoft.Network/dnsZones/A/write"
        ));
        assert!(!matches(
            "Microsoft.Network/*",
            "Microsoft.Compute/disks/write"
        ));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
    }

    #[test]
    fn scopes_nest_by_segment() {
        let rg = "/subscriptions/s/resourceGroups/RG";
        assert!(at_or_above("/subscriptions/s", rg));
        assert!(at_or_above(rg, "/subscriptions/s/resourcegroups/rg"));
        assert!(at_or_above(
            rg,
            "/subscriptions/s/resourcegroups/rg/providers/Microsoft.Network"
        ));
        assert!(!at_or_above(rg, "/subscriptions/s/resourcegroups/rg2"));
        assert!(!at_or_above(rg, "/subscriptions/s"));
        assert_eq!(decoded("/x/A/%40"), "/x/A/@");
        assert_eq!(decoded("/x/%zz"), "/x/%zz");
    }
}
