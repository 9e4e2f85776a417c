//! Paths of the `Microsoft.Authorization` extension resources: role assignments and role
//! definitions hang on any scope (`{scope}/providers/Microsoft.Authorization/{type}[/{name}]`,
//! the scope being a subscription, a resource group or a resource), so they cannot be parsed
//! like the resources of one resource group. The caller's permissions list (`…/providers/
//! Microsoft.Authorization/permissions`) hangs on a resource group or a resource the same way.

use super::{ResourceRef, Target, eq, not_found_path};
use crate::errors::Result;
use crate::types::{self, PERMISSION_VERSIONS, ROLE_ASSIGNMENT_VERSIONS, ROLE_DEFINITION_VERSIONS};

/// The namespace every extension path here belongs to.
pub const NAMESPACE: &str = "Microsoft.Authorization";

/// Which `Microsoft.Authorization` type a path addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthzKind {
    RoleAssignments,
    RoleDefinitions,
    /// The caller's own permissions at a scope (`Permissions_ListForResourceGroup`,
    /// `Permissions_ListForResource`): a list only, never one by name.
    Permissions,
}

impl AuthzKind {
    /// The type segment in canonical casing, as ids and `type` spell it.
    pub fn type_path(self) -> &'static str {
        match self {
            AuthzKind::RoleAssignments => "roleAssignments",
            AuthzKind::RoleDefinitions => "roleDefinitions",
            AuthzKind::Permissions => "permissions",
        }
    }

    pub fn api_versions(self) -> &'static [&'static str] {
        match self {
            AuthzKind::RoleAssignments => ROLE_ASSIGNMENT_VERSIONS,
            AuthzKind::RoleDefinitions => ROLE_DEFINITION_VERSIONS,
            AuthzKind::Permissions => PERMISSION_VERSIONS,
        }
    }

    fn from_segment(s: &str) -> Option<Self> {
        [
            AuthzKind::RoleAssignments,
            AuthzKind::RoleDefinitions,
            AuthzKind::Permissions,
        ]
        .into_iter()
        .find(|k| eq(k.type_path(), s))
    }
}

/// The scope an extension resource hangs on, with the caller's casing.
#[derive(Clone, Debug)]
pub enum AuthzScope {
    Subscription,
    ResourceGroup {
        rg: String,
    },
    /// A resource; `resource` is `None` when its type is not one the emulator serves (such a
    /// resource cannot exist here, so the scope is answered as missing).
    Resource {
        rg: String,
        resource: Option<ResourceRef>,
        /// `Namespace/type/name[/childType/childName]`, for ARM's not-found message.
        type_and_name: String,
    },
}

/// A role assignment or role definition (or a collection of them, `name` absent) at a scope.
#[derive(Clone, Debug)]
pub struct AuthzRef {
    pub sub: String,
    pub scope: AuthzScope,
    pub kind: AuthzKind,
    pub name: Option<String>,
}

/// Where the last `providers/Microsoft.Authorization` pair sits in the path's segments (which
/// start with `subscriptions/{sub}`), if anywhere.
pub(super) fn locate(segs: &[&str]) -> Option<usize> {
    (2..segs.len().saturating_sub(1))
        .rev()
        .find(|&i| eq(segs[i], "providers") && eq(segs[i + 1], NAMESPACE))
}

/// Parses `scope` (the segments between `subscriptions/{sub}` and `providers/
/// Microsoft.Authorization`) and `tail` (the segments after it).
pub(super) fn parse(sub: String, scope: &[&str], tail: &[&str], path: &str) -> Result<Target> {
    let (kind, name) = match tail {
        [t] | [t, _] => match AuthzKind::from_segment(t) {
            Some(kind) => (kind, tail.get(1).map(|n| (*n).to_owned())),
            None => {
                return Ok(Target::UnknownType {
                    sub,
                    namespace: NAMESPACE.to_owned(),
                    type_path: (*t).to_owned(),
                });
            }
        },
        _ => return Err(not_found_path(path)),
    };
    // The permissions list has no members to address by name.
    if kind == AuthzKind::Permissions && name.is_some() {
        return Err(not_found_path(path));
    }
    let scope = match scope {
        [] => AuthzScope::Subscription,
        [rgs, rg] if eq(rgs, "resourcegroups") => AuthzScope::ResourceGroup {
            rg: (*rg).to_owned(),
        },
        [rgs, rg, prov, ns, rest @ ..]
            if eq(rgs, "resourcegroups")
                && eq(prov, "providers")
                && !rest.is_empty()
                && rest.len() % 2 == 0 =>
        {
            let type_segs: Vec<&str> = rest.iter().step_by(2).copied().collect();
            let names: Vec<String> = rest
                .iter()
                .skip(1)
                .step_by(2)
                .map(|s| (*s).to_owned())
                .collect();
            let resource = types::lookup(ns, &type_segs).map(|rtype| ResourceRef {
                sub: sub.clone(),
                rg: (*rg).to_owned(),
                rtype,
                names,
            });
            AuthzScope::Resource {
                rg: (*rg).to_owned(),
                resource,
                type_and_name: std::iter::once(*ns)
                    .chain(rest.iter().copied())
                    .collect::<Vec<_>>()
                    .join("/"),
            }
        }
        _ => return Err(not_found_path(path)),
    };
    Ok(Target::Authorization(AuthzRef {
        sub,
        scope,
        kind,
        name,
    }))
}
