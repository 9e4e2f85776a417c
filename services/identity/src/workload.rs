//! `identity.workload`: the cluster's 8 user-assigned managed identities and their federated
//! credentials, in the tenant's persistent identity resource group
//! (docs/reference/hypershift-azure.md §2.1–2.3). Undo removes the identities (a delete can ask to
//! keep them); the resource group stays, as the tenant's other clusters keep theirs in it.

use futures::future::join_all;
use hypersaga_azure::ids;
use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{
    OidcOutputs, Outputs, StepCommand, StepError, StepId, StepOutputs, WorkloadClient,
    WorkloadIdentitiesOutputs,
};
use hypersaga_model::identities::{AUDIENCE, WORKLOAD_IDENTITIES, WorkloadIdentity};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{
    Halt, Notes, Ops, TenantArm, any, ensure as ensure_resource, remove, tags,
};
use serde_json::{Value, json};

pub use hypersaga_stepkit::RESOURCES_API;
/// `Microsoft.ManagedIdentity/userAssignedIdentities` api-version HyperShift uses.
pub const MSI_API: &str = "2024-11-30";
/// Federated identity credentials: same provider and api-version as the identities.
pub const FIC_API: &str = "2024-11-30";

pub(crate) const MSI_TYPE: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";

/// A managed identity as it ended up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Identity {
    /// Key in `workloadIdentities` (`disk`, `imageRegistry`, …).
    pub key: &'static str,
    pub id: String,
    pub client_id: String,
    pub principal_id: String,
}

/// Body of an identity: location and tags only (the identity has no settable properties).
pub(crate) fn identity_body(cmd: &StepCommand) -> Value {
    json!({ "location": cmd.context.spec.location, "tags": tags(cmd) })
}

/// Body of a federated credential. Proxy resources carry no tags.
pub(crate) fn credential_body(issuer: &str, subject: &str) -> Value {
    json!({ "properties": { "issuer": issuer, "subject": subject, "audiences": [AUDIENCE] } })
}

/// An existing credential is kept only when issuer, subject and audiences are exactly ours:
/// token exchange compares them byte for byte, so "almost" is a broken credential.
pub(crate) fn credential_matches(existing: &Value, issuer: &str, subject: &str) -> bool {
    let p = &existing["properties"];
    p["issuer"].as_str() == Some(issuer)
        && p["subject"].as_str() == Some(subject)
        && p["audiences"] == json!([AUDIENCE])
}

/// The step's outputs: `workload_identities` as HyperShift's
/// `azureAuthenticationConfig.workloadIdentities` takes it, each identity's ARM id as
/// `<key>_identity_id`, their principal (object) ids for role assignments as
/// `workload_principals` (not `_id`-suffixed: they are not ARM resources), and `identity_rg_id`.
pub(crate) fn outputs(identity_rg_id: &str, identities: &[Identity]) -> Outputs {
    let key = |i: &Identity| i.key.to_owned();
    WorkloadIdentitiesOutputs {
        workload_identities: identities
            .iter()
            .map(|i| {
                let client = WorkloadClient {
                    client_id: i.client_id.clone(),
                };
                (key(i), client)
            })
            .collect(),
        workload_principals: identities
            .iter()
            .map(|i| (key(i), i.principal_id.clone()))
            .collect(),
        identity_rg_id: identity_rg_id.to_owned(),
        identity_ids: identities.iter().map(|i| (key(i), i.id.clone())).collect(),
    }
    .into_outputs()
}

/// Creates or adopts the identity RG (GET, create only when absent, as HyperShift does), then
/// every identity in parallel, each with its credentials one after another.
pub(crate) async fn ensure(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
    notes: &dyn Notes,
) -> Result<Outputs, Halt> {
    let OidcOutputs { issuer_url, .. } = cmd.context.outputs_of(&StepId::Oidc)?;
    let issuer = issuer_url.as_str();
    let rg_id = arm.resource_group_id(&cmd.context.names.identity_rg);
    // Shared by the tenant's clusters: tagged for the tenant, not for the cluster that made it.
    let rg_body = json!({
        "location": cmd.context.spec.location,
        "tags": { hypersaga_stepkit::TENANT_TAG: cmd.tenant.as_str() },
    });
    ensure_resource(
        &arm.client,
        ops,
        "resource group",
        &rg_id,
        RESOURCES_API,
        &rg_body,
        any,
    )
    .await?;

    let credentials: usize = WORKLOAD_IDENTITIES
        .iter()
        .map(|w| w.credentials.len())
        .sum();
    notes
        .note(format!(
            "ensuring {} workload identities and {credentials} federated credentials",
            WORKLOAD_IDENTITIES.len()
        ))
        .await;
    let identities = all_of(
        join_all(
            WORKLOAD_IDENTITIES
                .iter()
                .map(|w| ensure_identity(arm, cmd, ops, w, issuer)),
        )
        .await,
    )?;
    Ok(outputs(&rg_id, &identities))
}

/// What [`ensure`] would make: the identity group (adopted where it is), each identity and its
/// federated credentials for the issuer the OIDC step says. Client and principal ids are
/// Entra's to assign: the outputs predict them empty.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let OidcOutputs { issuer_url, .. } = cmd.context.outputs_of(&StepId::Oidc)?;
    let names = &cmd.context.names;
    let rg_id = arm.resource_group_id(&names.identity_rg);
    let mut changes = vec![azure_create(&rg_id, RESOURCES_API, &identity_body(cmd))];
    let mut identities = Vec::new();
    for w in WORKLOAD_IDENTITIES {
        let id = arm.resource_id(&names.identity_rg, MSI_TYPE, &names.identity(w.suffix));
        changes.push(azure_create(&id, MSI_API, &identity_body(cmd)));
        for (suffix, subject) in w.credentials {
            let fic_id = ids::child_id(
                &id,
                "federatedIdentityCredentials",
                &names.federated_credential(suffix),
            );
            let body = credential_body(&issuer_url, subject);
            changes.push(azure_create(&fic_id, FIC_API, &body));
        }
        identities.push(Identity {
            key: w.key,
            id,
            client_id: String::new(),
            principal_id: String::new(),
        });
    }
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes,
        findings: Vec::new(),
        outputs: outputs(&rg_id, &identities),
    })
}

/// Removes every identity of the cluster, in parallel; Azure removes an identity's federated
/// credentials with it, so no token of the tenant's issuer is trusted for them any more.
/// Already gone is done, so the undo can run any number of times.
pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let names = &cmd.context.names;
    all_of(
        join_all(WORKLOAD_IDENTITIES.iter().map(|w| {
            let id = arm.resource_id(&names.identity_rg, MSI_TYPE, &names.identity(w.suffix));
            async move { remove(&arm.client, ops, "managed identity", &id, MSI_API).await }
        }))
        .await,
    )?;
    Ok(Outputs::new())
}

/// What identities that each ran to the end made, or the stop to report: a terminal failure
/// before a retryable one (since retrying cannot fix the terminal one), either before a wait
/// on Azure.
pub(crate) fn all_of<T>(results: Vec<Result<T, Halt>>) -> Result<Vec<T>, Halt> {
    let mut done = Vec::with_capacity(results.len());
    let mut first: Option<Halt> = None;
    for r in results {
        match r {
            Ok(t) => done.push(t),
            Err(h) => {
                if first
                    .as_ref()
                    .is_none_or(|prev| severity(&h) > severity(prev))
                {
                    first = Some(h);
                }
            }
        }
    }
    first.map_or(Ok(done), Err)
}

/// Which stop to report when several identities stopped: terminal > retryable > waiting.
fn severity(h: &Halt) -> u8 {
    match h {
        Halt::Failed(e) if !e.is_retryable() => 2,
        Halt::Failed(_) => 1,
        Halt::Wait { .. } => 0,
    }
}

/// One identity, then its credentials strictly one at a time: Azure refuses concurrent
/// credential writes on one identity
/// (`ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity`).
async fn ensure_identity(
    arm: &TenantArm,
    cmd: &StepCommand,
    ops: &Ops,
    w: &WorkloadIdentity,
    issuer: &str,
) -> Result<Identity, Halt> {
    let names = &cmd.context.names;
    let id = arm.resource_id(&names.identity_rg, MSI_TYPE, &names.identity(w.suffix));
    let mi = ensure_resource(
        &arm.client,
        ops,
        "managed identity",
        &id,
        MSI_API,
        &identity_body(cmd),
        any,
    )
    .await?;
    let field = |name: &str| {
        mi.resource()
            .pointer(&format!("/properties/{name}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                StepError::retryable(
                    "InvalidAzureResponse",
                    format!("managed identity {id} has no properties.{name} yet"),
                )
                .with_target(id.clone())
            })
    };
    let (client_id, principal_id) = (field("clientId")?, field("principalId")?);
    for (suffix, subject) in w.credentials {
        let fic_id = ids::child_id(
            &id,
            "federatedIdentityCredentials",
            &names.federated_credential(suffix),
        );
        ensure_resource(
            &arm.client,
            ops,
            "federated identity credential",
            &fic_id,
            FIC_API,
            &credential_body(issuer, subject),
            |v| credential_matches(v, issuer, subject),
        )
        .await?;
    }
    Ok(Identity {
        key: w.key,
        id,
        client_id,
        principal_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_body_is_hypershifts() {
        assert_eq!(
            credential_body(
                "https://x/oidc-acme",
                "system:serviceaccount:kube-system:capi-provider"
            ),
            json!({"properties": {
                "issuer": "https://x/oidc-acme",
                "subject": "system:serviceaccount:kube-system:capi-provider",
                "audiences": ["openshift"],
            }})
        );
    }

    #[test]
    fn credentials_match_exactly() {
        let mut existing = credential_body("https://x/i", "s");
        existing["properties"]["provisioningState"] = json!("Succeeded");
        assert!(credential_matches(&existing, "https://x/i", "s"));
        assert!(
            !credential_matches(&existing, "https://x/i/", "s"),
            "trailing slash is another issuer"
        );
        assert!(!credential_matches(&existing, "https://x/i", "t"));
        existing["properties"]["audiences"] = json!(["api://AzureADTokenExchange"]);
        assert!(!credential_matches(&existing, "https://x/i", "s"));
    }

    #[test]
    fn identity_body_is_location_and_tags() {
        let cmd = hypersaga_testkit::command(
            "demo",
            hypersaga_testkit::spec(),
            StepId::WorkloadIdentities,
            hypersaga_bus::Action::Do,
            [],
        );
        assert_eq!(
            identity_body(&cmd),
            json!({"location": "eastus", "tags": {
                "hypersaga.io_tenant": "acme", "hypersaga.io_cluster": "demo", "hypersaga.io_saga": "saga-demo",
            }})
        );
    }

    #[test]
    fn outputs_shape() {
        let ids = [
            Identity {
                key: "disk",
                id: "/d".into(),
                client_id: "c1".into(),
                principal_id: "p1".into(),
            },
            Identity {
                key: "imageRegistry",
                id: "/r".into(),
                client_id: "c2".into(),
                principal_id: "p2".into(),
            },
        ];
        let out = outputs("/rg", &ids);
        assert_eq!(
            out["workload_identities"],
            json!({"disk": {"clientID": "c1"}, "imageRegistry": {"clientID": "c2"}})
        );
        assert_eq!(
            out["workload_principals"],
            json!({"disk": "p1", "imageRegistry": "p2"})
        );
        assert_eq!(out["disk_identity_id"], "/d");
        assert_eq!(out["imageRegistry_identity_id"], "/r");
        assert_eq!(out["identity_rg_id"], "/rg");
        // Only ARM resource ids end in `_id`.
        assert_eq!(out.keys().filter(|k| k.ends_with("_id")).count(), 3);
    }
}
