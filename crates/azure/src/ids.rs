//! Building and parsing ARM resource ids.
//!
//! Every handler addresses Azure by id, and user-brought resources (VNet, subnet, NSG) arrive
//! as ids in the cluster spec. Building them in one place keeps the casing and segment order
//! identical everywhere (deterministic ids are what make "look, then adopt or create" work),
//! and parsing them up front turns a malformed id into a validation error at the gateway
//! instead of a 400 from ARM halfway through a saga.

use std::fmt;

/// Why a string is not a usable ARM resource id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The id does not start with `/subscriptions/`.
    #[error("resource id must start with /subscriptions/: {0:?}")]
    NotSubscriptionScoped(String),
    /// A segment that must be present is missing or empty.
    #[error("resource id {id:?} is missing its {what}")]
    Missing {
        /// The id as given.
        id: String,
        /// Which part is missing (for example "resource group name").
        what: &'static str,
    },
    /// The id has a dangling type segment without a name, or a stray segment.
    #[error("resource id {0:?} has an odd number of type/name segments")]
    Malformed(String),
    /// The id is valid but names a different resource type than expected.
    #[error("resource id {id:?} is a {actual}, expected a {expected}")]
    WrongType {
        /// The id as given.
        id: String,
        /// The expected full type, for example `Microsoft.Network/virtualNetworks/subnets`.
        expected: String,
        /// The type the id actually names.
        actual: String,
    },
}

/// `/subscriptions/{sub}`.
pub fn subscription_id(subscription: &str) -> String {
    format!("/subscriptions/{subscription}")
}

/// `/subscriptions/{sub}/resourceGroups/{rg}`.
pub fn resource_group_id(subscription: &str, resource_group: &str) -> String {
    format!("/subscriptions/{subscription}/resourceGroups/{resource_group}")
}

/// A top-level resource: `resource_type` is `Namespace/type`, for example
/// `Microsoft.Network/virtualNetworks`.
///
/// ```
/// let id = hypersaga_azure::ids::resource_id("sub", "rg", "Microsoft.Network/virtualNetworks", "vnet");
/// assert_eq!(id, "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet");
/// ```
pub fn resource_id(
    subscription: &str,
    resource_group: &str,
    resource_type: &str,
    name: &str,
) -> String {
    format!(
        "{}/providers/{resource_type}/{name}",
        resource_group_id(subscription, resource_group)
    )
}

/// A child resource under `parent_id`: `child_type` is the bare type segment, for example
/// `subnets` or `federatedIdentityCredentials`.
///
/// ```
/// let vnet = hypersaga_azure::ids::resource_id("sub", "rg", "Microsoft.Network/virtualNetworks", "vnet");
/// let subnet = hypersaga_azure::ids::child_id(&vnet, "subnets", "default");
/// assert!(subnet.ends_with("/virtualNetworks/vnet/subnets/default"));
/// ```
pub fn child_id(parent_id: &str, child_type: &str, name: &str) -> String {
    format!("{}/{child_type}/{name}", parent_id.trim_end_matches('/'))
}

/// An extension resource on `scope` (a subscription, resource group or resource id), such as a
/// role assignment: `{scope}/providers/Microsoft.Authorization/roleAssignments/{name}`.
pub fn extension_id(scope: &str, resource_type: &str, name: &str) -> String {
    format!(
        "{}/providers/{resource_type}/{name}",
        scope.trim_end_matches('/')
    )
}

/// A parsed ARM id of a resource inside a resource group (the only kind users bring).
///
/// Segment names (`subscriptions`, `resourceGroups`, `providers`) are matched
/// case-insensitively, as ARM does; values keep their original casing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceId {
    subscription: String,
    resource_group: String,
    provider: Option<String>,
    /// (type, name) pairs after the provider: `[("virtualNetworks","v"),("subnets","s")]`.
    types: Vec<(String, String)>,
}

impl ResourceId {
    /// Parses a resource-group id or a (possibly nested) resource id.
    ///
    /// ```
    /// use hypersaga_azure::ids::ResourceId;
    /// let id = ResourceId::parse(
    ///     "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
    /// )?;
    /// assert_eq!(id.resource_type(), Some("Microsoft.Network/virtualNetworks/subnets".to_owned()));
    /// assert_eq!(id.name(), Some("a"));
    /// assert_eq!(id.parent().and_then(|p| p.name().map(str::to_owned)), Some("v".to_owned()));
    /// # Ok::<(), hypersaga_azure::ids::IdError>(())
    /// ```
    pub fn parse(id: &str) -> Result<Self, IdError> {
        let segments: Vec<&str> = id.trim_end_matches('/').split('/').collect();
        // A leading "/" yields an empty first segment.
        if segments.len() < 3
            || !segments[0].is_empty()
            || !segments[1].eq_ignore_ascii_case("subscriptions")
        {
            return Err(IdError::NotSubscriptionScoped(id.to_owned()));
        }
        let missing = |what| IdError::Missing {
            id: id.to_owned(),
            what,
        };
        let subscription = non_empty(segments[2]).ok_or_else(|| missing("subscription id"))?;
        match segments.get(3) {
            Some(s) if s.eq_ignore_ascii_case("resourceGroups") => {}
            _ => return Err(missing("resource group")),
        }
        let resource_group = segments
            .get(4)
            .copied()
            .and_then(non_empty)
            .ok_or_else(|| missing("resource group name"))?;
        let rest = &segments[5..];
        if rest.is_empty() {
            return Ok(Self {
                subscription: subscription.to_owned(),
                resource_group: resource_group.to_owned(),
                provider: None,
                types: Vec::new(),
            });
        }
        if !rest[0].eq_ignore_ascii_case("providers") {
            return Err(IdError::Malformed(id.to_owned()));
        }
        let provider = rest
            .get(1)
            .copied()
            .and_then(non_empty)
            .ok_or_else(|| missing("provider namespace"))?;
        let pairs = &rest[2..];
        if pairs.is_empty() {
            return Err(missing("resource type"));
        }
        if !pairs.len().is_multiple_of(2) {
            return Err(IdError::Malformed(id.to_owned()));
        }
        let mut types = Vec::with_capacity(pairs.len() / 2);
        for pair in pairs.chunks(2) {
            let (t, n) = (pair[0], pair[1]);
            if t.is_empty() || n.is_empty() {
                return Err(IdError::Malformed(id.to_owned()));
            }
            types.push((t.to_owned(), n.to_owned()));
        }
        Ok(Self {
            subscription: subscription.to_owned(),
            resource_group: resource_group.to_owned(),
            provider: Some(provider.to_owned()),
            types,
        })
    }

    /// Parses and checks the full type (case-insensitive), e.g. for a user-brought subnet
    /// `expect_type(id, "Microsoft.Network/virtualNetworks/subnets")`.
    pub fn parse_expecting(id: &str, expected_type: &str) -> Result<Self, IdError> {
        let parsed = Self::parse(id)?;
        let actual = parsed
            .resource_type()
            .unwrap_or_else(|| "resource group".to_owned());
        if !actual.eq_ignore_ascii_case(expected_type) {
            return Err(IdError::WrongType {
                id: id.to_owned(),
                expected: expected_type.to_owned(),
                actual,
            });
        }
        Ok(parsed)
    }

    /// The subscription id.
    pub fn subscription(&self) -> &str {
        &self.subscription
    }

    /// The resource group name.
    pub fn resource_group(&self) -> &str {
        &self.resource_group
    }

    /// The provider namespace (`Microsoft.Network`); `None` for a resource-group id.
    pub fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }

    /// The full type: `Microsoft.Network/virtualNetworks/subnets`; `None` for a resource group.
    pub fn resource_type(&self) -> Option<String> {
        let provider = self.provider.as_ref()?;
        let mut t = provider.clone();
        for (ty, _) in &self.types {
            t.push('/');
            t.push_str(ty);
        }
        Some(t)
    }

    /// The last name segment: the resource name (or `None` for a resource group; use
    /// [`ResourceId::resource_group`]).
    pub fn name(&self) -> Option<&str> {
        self.types.last().map(|(_, n)| n.as_str())
    }

    /// The parent resource for a child id (the VNet of a subnet); the resource group id's
    /// parse for a top-level resource; `None` for a resource group.
    pub fn parent(&self) -> Option<ResourceId> {
        self.provider.as_ref()?;
        let mut parent = self.clone();
        parent.types.pop();
        if parent.types.is_empty() {
            parent.provider = None;
        }
        Some(parent)
    }

    /// The id of this resource's resource group.
    pub fn resource_group_id(&self) -> String {
        resource_group_id(&self.subscription, &self.resource_group)
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "/subscriptions/{}/resourceGroups/{}",
            self.subscription, self.resource_group
        )?;
        if let Some(p) = &self.provider {
            write!(f, "/providers/{p}")?;
            for (t, n) in &self.types {
                write!(f, "/{t}/{n}")?;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for ResourceId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Best-effort resource type of an id or list path, for span/metric labels only (never fails:
/// `Microsoft.Network/virtualNetworks`, `resourceGroups`, or `unknown`).
pub(crate) fn type_label(path: &str) -> String {
    let path = path.split('?').next().unwrap_or(path);
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    // The last "providers" segment wins so extension resources are labelled by their own type.
    if let Some(pos) = segs
        .iter()
        .rposition(|s| s.eq_ignore_ascii_case("providers"))
    {
        let mut label = segs.get(pos + 1).copied().unwrap_or("unknown").to_owned();
        for t in segs.iter().skip(pos + 2).step_by(2) {
            label.push('/');
            label.push_str(t);
        }
        return label;
    }
    match segs.len() {
        0..=2 => "subscriptions".to_owned(),
        _ => "resourceGroups".to_owned(),
    }
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_parses_round_trip() {
        let vnet = resource_id("s", "rg", "Microsoft.Network/virtualNetworks", "v");
        let subnet = child_id(&vnet, "subnets", "a");
        let parsed = ResourceId::parse(&subnet).unwrap();
        assert_eq!(parsed.subscription(), "s");
        assert_eq!(parsed.resource_group(), "rg");
        assert_eq!(parsed.provider(), Some("Microsoft.Network"));
        assert_eq!(parsed.to_string(), subnet);
        assert_eq!(parsed.parent().unwrap().to_string(), vnet);
        assert_eq!(
            parsed.parent().unwrap().parent().unwrap().to_string(),
            resource_group_id("s", "rg")
        );
    }

    #[test]
    fn segment_names_are_case_insensitive() {
        let p = ResourceId::parse("/SUBSCRIPTIONS/s/resourcegroups/rg/Providers/Microsoft.Network/networkSecurityGroups/n")
            .unwrap();
        assert_eq!(
            p.resource_type().unwrap(),
            "Microsoft.Network/networkSecurityGroups"
        );
        assert!(
            ResourceId::parse_expecting(&p.to_string(), "microsoft.network/NETWORKSECURITYGROUPS")
                .is_ok()
        );
    }

    #[test]
    fn rejects_bad_ids() {
        for bad in [
            "",
            "subscriptions/s/resourceGroups/rg",
            "/subscriptions//resourceGroups/rg",
            "/subscriptions/s",
            "/subscriptions/s/resourceGroups/",
            "/subscriptions/s/resourceGroups/rg/foo",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets",
        ] {
            assert!(ResourceId::parse(bad).is_err(), "{bad} should fail");
        }
        let nsg = resource_id("s", "rg", "Microsoft.Network/networkSecurityGroups", "n");
        assert!(matches!(
            ResourceId::parse_expecting(&nsg, "Microsoft.Network/virtualNetworks/subnets"),
            Err(IdError::WrongType { .. })
        ));
    }

    #[test]
    fn type_labels() {
        let ra = extension_id(
            &resource_group_id("s", "rg"),
            "Microsoft.Authorization/roleAssignments",
            "x",
        );
        assert_eq!(type_label(&ra), "Microsoft.Authorization/roleAssignments");
        let fic = child_id(
            &resource_id(
                "s",
                "rg",
                "Microsoft.ManagedIdentity/userAssignedIdentities",
                "i",
            ),
            "federatedIdentityCredentials",
            "f",
        );
        assert_eq!(
            type_label(&fic),
            "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials"
        );
        assert_eq!(
            type_label("/subscriptions/s/resourceGroups/rg"),
            "resourceGroups"
        );
        assert_eq!(
            type_label("/subscriptions/s/resourcegroups?x=1"),
            "resourceGroups"
        );
        assert_eq!(type_label("/subscriptions/s"), "subscriptions");
    }
}
