//! What a tenant must create in its own Entra directory for hypersaga to reach its
//! subscription: a federated identity credential on the application it registered, trusting
//! hypersaga's issuer for exactly this tenant's subject, and the roles that application needs.

use hypersaga_api::v1 as pb;
use hypersaga_config::{FederationConfig, TenantAzure};
use hypersaga_model::TenantId;

/// A built-in Azure role the application needs on the subscription, and why.
struct Role {
    name: &'static str,
    id: &'static str,
    why: &'static str,
}

/// The steps create resource groups, networks, DNS zones and managed identities
/// (Contributor), and give the clusters' workload identities their roles
/// (role assignments, which Contributor cannot write).
const ROLES: [Role; 2] = [
    Role {
        name: "Contributor",
        id: "b24988ac-6180-42a0-ab88-20f7382dd24c",
        why: "to create the clusters' resource groups, networks, DNS zones, identities and VMs",
    },
    Role {
        name: "Role Based Access Control Administrator",
        id: "f58310d9-a9f6-439a-9e8d-f62e7b41a168",
        why: "to give the clusters' workload identities their roles (a condition may restrict it to the roles hypersaga assigns)",
    },
];

/// The onboarding instructions for `tenant` with `azure`.
pub(super) fn onboarding(
    federation: &FederationConfig,
    tenant: &TenantId,
    azure: &TenantAzure,
) -> pb::Onboarding {
    let subject = FederationConfig::subject(tenant);
    let scope = format!("/subscriptions/{}", azure.subscription_id);
    let issuer = if federation.issuer.is_empty() {
        "(no issuer configured: set federation.issuer)".to_owned()
    } else {
        federation.issuer.clone()
    };
    let mut steps = vec![
        format!(
            "In Entra directory {}, on the application {} (client id), add a federated identity credential: issuer {issuer}, subject {subject}, audience {}.",
            azure.tenant_id, azure.client_id, federation.audience
        ),
        format!(
            "Make sure the application has a service principal in directory {} (an enterprise application).",
            azure.tenant_id
        ),
    ];
    steps.extend(ROLES.iter().map(|r| {
        format!(
            "Assign the role {} ({}) to that service principal at scope {scope}: {}.",
            r.name, r.id, r.why
        )
    }));
    pb::Onboarding {
        issuer,
        subject,
        audience: federation.audience.clone(),
        roles: ROLES
            .iter()
            .map(|r| pb::RoleGrant {
                role: r.name.to_owned(),
                role_definition_id: r.id.to_owned(),
                scope: scope.clone(),
            })
            .collect(),
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_name_the_issuer_subject_audience_and_roles() {
        let federation = FederationConfig {
            issuer: "https://issuer.example/hypersaga".into(),
            ..FederationConfig::default()
        };
        let azure = TenantAzure {
            tenant_id: "tid".into(),
            subscription_id: "sub".into(),
            client_id: "app".into(),
            client_secret: None,
        };
        let o = onboarding(&federation, &TenantId::new("acme").unwrap(), &azure);
        assert_eq!(o.issuer, "https://issuer.example/hypersaga");
        assert_eq!(o.subject, "hypersaga:tenant:acme");
        assert_eq!(o.audience, "api://AzureADTokenExchange");
        assert_eq!(o.roles.len(), 2);
        assert!(o.roles.iter().all(|r| r.scope == "/subscriptions/sub"));
        assert!(
            o.steps[0].contains("app") && o.steps[0].contains("tid"),
            "{:?}",
            o.steps
        );
    }
}
