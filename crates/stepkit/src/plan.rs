//! Building a step's plan ([`hypersaga_bus::plan`]) from the same ids and bodies its run
//! writes, and turning what stands in its way into findings — among them the permissions the
//! tenant's principal lacks for the plan's Azure changes ([`permitted`]).

mod permissions;

pub(crate) use permissions::PermissionCache;
pub use permissions::{
    CACHE_FOR, PERMISSION, PERMISSIONS_API, Permission, action_of, actions_of, granted, matches,
    missing_actions, missing_permissions, permission_scope, permitted, role_granting, zone_scope,
};

use hypersaga_azure::ids::ResourceId;
use hypersaga_bus::StepError;
use hypersaga_bus::plan::{Change, Finding, Target, Verb};
use serde_json::Value;

/// An Azure resource a step makes (or adopts) by PUTting `body` at `id`.
pub fn azure_create(id: &str, api_version: &str, body: &Value) -> Change {
    let location = body["location"].as_str().unwrap_or_default();
    azure(Verb::Create, id, api_version, location)
}

/// An Azure resource a step touches with `verb`.
pub fn azure(verb: Verb, id: &str, api_version: &str, location: &str) -> Change {
    let (kind, name) = kind_and_name(id);
    Change {
        target: Some(Target::Azure),
        verb: Some(verb),
        kind,
        name,
        id: id.to_owned(),
        api_version: api_version.to_owned(),
        location: location.to_owned(),
        note: String::new(),
    }
}

/// A Kubernetes object a step applies (`namespace` empty for a cluster-scoped one).
pub fn kube_create(
    target: Target,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Change {
    Change {
        target: Some(target),
        verb: Some(Verb::Create),
        kind: format!("{api_version}/{kind}"),
        name: name.to_owned(),
        id: if namespace.is_empty() {
            name.to_owned()
        } else {
            format!("{namespace}/{name}")
        },
        ..Change::default()
    }
}

/// An ARM id's type and name; a resource group's are `Microsoft.Resources/resourceGroups`
/// and its name. An id that does not parse is shown as it is.
fn kind_and_name(id: &str) -> (String, String) {
    match ResourceId::parse(id) {
        Ok(rid) => match (rid.resource_type(), rid.name()) {
            (Some(kind), Some(name)) => (kind, name.to_owned()),
            _ => (
                "Microsoft.Resources/resourceGroups".to_owned(),
                rid.resource_group().to_owned(),
            ),
        },
        Err(_) => (String::new(), id.to_owned()),
    }
}

/// A failure met while planning that the user can act on — a terminal error naming a field
/// of the request (`spec.…`: a resource of theirs that is missing, a size the region does not
/// have) — as a finding of `kind`; anything else (Azure unreachable, a throttle, a refusal of
/// the tenant's principal) is an error of the plan itself, and the step then says it could
/// not be planned.
pub fn finding_of(e: StepError, kind: &str, remedy: &str) -> Result<Finding, StepError> {
    match &e.info.target {
        Some(field) if !e.is_retryable() && field.starts_with("spec.") => Ok(Finding {
            field: field.clone(),
            kind: kind.to_owned(),
            message: e.info.message.clone(),
            remedy: remedy.to_owned(),
        }),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_change_names_the_resource_as_arm_does() {
        let id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v";
        let c = azure_create(id, "2023-11-01", &json!({ "location": "eastus" }));
        assert_eq!(
            (c.kind.as_str(), c.name.as_str(), c.location.as_str()),
            ("Microsoft.Network/virtualNetworks", "v", "eastus")
        );
        let rg = azure(
            Verb::Create,
            "/subscriptions/s/resourceGroups/rg",
            "2021-04-01",
            "",
        );
        assert_eq!(
            (rg.kind.as_str(), rg.name.as_str()),
            ("Microsoft.Resources/resourceGroups", "rg")
        );
    }

    #[test]
    fn only_what_the_user_can_fix_is_a_finding() {
        let missing = StepError::terminal("UserNetworkNotFound", "no such VNet")
            .with_target("spec.network.vnet_id");
        let f = finding_of(missing, "NETWORK", "bring a VNet that exists").unwrap();
        assert_eq!(f.field, "spec.network.vnet_id");
        let down = StepError::retryable("ServiceUnavailable", "try later");
        assert!(finding_of(down, "NETWORK", "").is_err());
        let refused = StepError::terminal("AuthorizationFailed", "no")
            .with_target("/subscriptions/s/providers/Microsoft.Network/dnszones");
        assert!(
            finding_of(refused, "DNS_ZONE", "").is_err(),
            "not a field of the request"
        );
    }
}
