//! Whether the tenant's principal — hypersaga's application in the tenant's directory, whose
//! tokens every Azure call of a step carries — holds the permissions a plan's Azure changes
//! need, read from ARM's permissions API before anything is written.
//!
//! **Actions.** Each planned Azure change needs one ARM action, from its verb and its type as
//! `Get-AzProviderOperation` names them: create and update need `{type}/write`, delete
//! `{type}/delete`, read `{type}/read`; a resource group's are ARM's own
//! `Microsoft.Resources/subscriptions/resourceGroups/{write,delete,read}`, a role assignment's
//! `Microsoft.Authorization/roleAssignments/write`. The type comes from the change's ARM id
//! (the segments after its last `providers/{namespace}`, names skipped), so an extension
//! resource on a resource (a role assignment on a VNet) is its own type, not its parent's.
//! Changes other principals make (CAPZ's VMs, made by HyperShift's node-pool identity) and
//! changes outside ARM (Kubernetes objects, blobs) are not passed here.
//!
//! **Evaluation.** ARM's `Permissions_ListForResourceGroup` answers one entry per role assigned
//! to the caller at the scope or above. An action is granted when some entry's `actions` match
//! it and none of *that entry's* `notActions` do: a `notActions` subtracts from its own role
//! only, never from what another assignment grants (`role-definitions.md` in
//! MicrosoftDocs/azure-docs). Operation strings compare ignoring case; `*` stands for any run of
//! characters, `/` included (`*`, `Microsoft.Network/*`, `*/read`).
//!
//! **Scope, and its limit.** A create's resources live in resource groups that do not exist
//! before it, and ARM has no permissions list for a subscription. The one resource group of
//! the tenant's that exists before every create is the public DNS zone's (`dns.public-zone`
//! finds it first; its outputs are in the context of every later step): its list shows every
//! grant made there or above, i.e. at the subscription, which is where onboarding grants
//! hypersaga's roles. A grant made only on some other group (the one the cluster's resources
//! will go to cannot be granted on beforehand) does not show, and one made only on the zone's
//! group shows as if it held everywhere; deny assignments and conditions are not evaluated.
//! Without the zone (its own finding refuses the create, and every other finding is wanted in
//! the same answer) the list is read at another resource group of the subscription (the one
//! of the lowest id, listed anew each time: a rare path): it shows the grants made at the
//! subscription just as well, and, like the zone's, those made on that group alone.
//!
//! **Cost.** The list of a scope is read once per tenant and kept 30 s ([`CACHE_FOR`]), shared
//! by every plan the service answers meanwhile: the ~15 step plans of one create cost one GET
//! per service that plans Azure changes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hypersaga_azure::ids::ResourceId;
use hypersaga_bus::plan::{Change, Finding, StepPlan, Target, Verb};
use hypersaga_bus::{PublicZoneOutputs, StepCommand, StepError, StepId, StepOutputs};
use serde::Deserialize;

use crate::clients::TenantArm;
use crate::errors::step_error;

/// The `Microsoft.Authorization` api-version the permissions list is read with.
pub const PERMISSIONS_API: &str = "2022-04-01";
/// How long a read permissions list is trusted.
pub const CACHE_FOR: Duration = Duration::from_secs(30);
/// The finding kind of a missing permission.
pub const PERMISSION: &str = "PERMISSION";

/// One entry of ARM's permissions list (`Permission` in `authorization-RoleDefinitionsCalls.json`):
/// one role's permissions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permission {
    /// Allowed actions (wildcards allowed).
    #[serde(default)]
    pub actions: Vec<String>,
    /// Actions taken out of this entry's `actions`.
    #[serde(default)]
    pub not_actions: Vec<String>,
    /// Allowed data actions (not evaluated: plans make no data-plane change here).
    #[serde(default)]
    pub data_actions: Vec<String>,
    /// Data actions taken out of this entry's `data_actions`.
    #[serde(default)]
    pub not_data_actions: Vec<String>,
}

/// A permissions list as read, and when.
type Read = (Instant, Arc<Vec<Permission>>);

/// The permissions lists read for one tenant's principal, by scope (lower case). Shared by the
/// clones of a tenant's [`TenantArm`]; a new client (the tenant's access changed) starts empty.
#[derive(Clone, Debug, Default)]
pub(crate) struct PermissionCache(Arc<tokio::sync::Mutex<HashMap<String, Read>>>);

/// Whether `pattern` (with `*` wildcards) matches `action`, ignoring ASCII case.
pub fn matches(pattern: &str, action: &str) -> bool {
    let (p, a) = (pattern.as_bytes(), action.as_bytes());
    let (mut pi, mut ai) = (0, 0);
    // The last `*` seen, and where in `action` its match would end.
    let mut star: Option<(usize, usize)> = None;
    while ai < a.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ai));
            pi += 1;
        } else if pi < p.len() && p[pi].eq_ignore_ascii_case(&a[ai]) {
            pi += 1;
            ai += 1;
        } else if let Some((sp, sa)) = star {
            // Let the star take one more character and try again.
            pi = sp + 1;
            ai = sa + 1;
            star = Some((sp, sa + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Whether some entry grants `action`: one of its `actions` matches and none of its own
/// `notActions` does.
pub fn granted(permissions: &[Permission], action: &str) -> bool {
    permissions.iter().any(|p| {
        p.actions.iter().any(|a| matches(a, action))
            && !p.not_actions.iter().any(|n| matches(n, action))
    })
}

/// The ARM type of an id: `{namespace}/{type}[/{child type}…]` after its last `providers`,
/// `Microsoft.Resources/resourceGroups` for a group's own id, `None` for anything else.
fn arm_type(id: &str) -> Option<String> {
    let segs: Vec<&str> = id.split('/').filter(|s| !s.is_empty()).collect();
    match segs
        .iter()
        .rposition(|s| s.eq_ignore_ascii_case("providers"))
    {
        Some(i) if i + 2 < segs.len() => {
            let types: Vec<&str> = segs[i + 2..].iter().step_by(2).copied().collect();
            Some(format!("{}/{}", segs[i + 1], types.join("/")))
        }
        Some(_) => None,
        None => (segs.len() == 4
            && segs[0].eq_ignore_ascii_case("subscriptions")
            && segs[2].eq_ignore_ascii_case("resourceGroups"))
        .then(|| "Microsoft.Resources/resourceGroups".to_owned()),
    }
}

/// The ARM action an Azure change needs, `None` for a change outside ARM.
pub fn action_of(change: &Change) -> Option<String> {
    if change.target != Some(Target::Azure) {
        return None;
    }
    let verb = match change.verb? {
        Verb::Create | Verb::Update => "write",
        Verb::Delete => "delete",
        Verb::Read => "read",
    };
    let kind = arm_type(&change.id).unwrap_or_else(|| change.kind.clone());
    if kind.is_empty() {
        return None;
    }
    if kind.eq_ignore_ascii_case("Microsoft.Resources/resourceGroups") {
        return Some(format!(
            "Microsoft.Resources/subscriptions/resourceGroups/{verb}"
        ));
    }
    Some(format!("{kind}/{verb}"))
}

/// The actions `changes` need, each once, in the order first needed.
pub fn actions_of(changes: &[Change]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for action in changes.iter().filter_map(action_of) {
        if !out.iter().any(|a| a.eq_ignore_ascii_case(&action)) {
            out.push(action);
        }
    }
    out
}

/// The least built-in role that grants `action`, for the remedy.
pub fn role_granting(action: &str) -> &'static str {
    if matches("Microsoft.Authorization/roleAssignments/*", action) {
        "Role Based Access Control Administrator"
    } else if matches("*/read", action) {
        "Reader"
    } else {
        "Contributor"
    }
}

/// The scope a plan's permissions are read at: the public DNS zone's resource group, from the
/// `dns.public-zone` step's outputs; `None` before that step has found it.
pub fn permission_scope(cmd: &StepCommand) -> Option<String> {
    let zone: PublicZoneOutputs = cmd.context.outputs_of(&StepId::PublicZone).ok()?;
    zone_scope(&zone.public_zone)
}

/// The resource group of a zone id.
pub fn zone_scope(zone_id: &str) -> Option<String> {
    ResourceId::parse(zone_id)
        .ok()
        .map(|id| id.resource_group_id())
}

/// The caller's permissions at `scope`, from the cache while fresh. A principal refused even
/// that read (`403`: no role at the scope lets it read anything) has none.
async fn permissions(arm: &TenantArm, scope: &str) -> Result<Arc<Vec<Permission>>, StepError> {
    let key = scope.to_ascii_lowercase();
    let mut cache = arm.permissions.0.lock().await;
    if let Some((at, held)) = cache.get(&key)
        && at.elapsed() < CACHE_FOR
    {
        return Ok(held.clone());
    }
    let path = format!("{scope}/providers/Microsoft.Authorization/permissions");
    let read = match arm.client.list(&path, PERMISSIONS_API).await {
        Ok(entries) => entries
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<Vec<Permission>, _>>()
            .map_err(|e| {
                StepError::retryable(
                    "InvalidResponse",
                    format!("ARM's permissions list at {scope} does not decode: {e}"),
                )
            })?,
        Err(e) if e.status() == Some(403) => Vec::new(),
        Err(e) => return Err(step_error(e)),
    };
    let read = Arc::new(read);
    cache.insert(key, (Instant::now(), read.clone()));
    Ok(read)
}

/// One finding per action of `actions` the tenant's principal does not hold at `scope`; its
/// `field` is `scope`, the resource the answer is true of (the changes' own resources do not
/// exist yet, and the fix — a role assignment — is made on a scope, not on a request field).
pub async fn missing_actions(
    arm: &TenantArm,
    scope: &str,
    actions: &[String],
) -> Result<Vec<Finding>, StepError> {
    if actions.is_empty() {
        return Ok(Vec::new());
    }
    let held = permissions(arm, scope).await?;
    Ok(actions
        .iter()
        .filter(|a| !granted(&held, a))
        .map(|action| Finding {
            field: scope.to_owned(),
            kind: PERMISSION.to_owned(),
            message: format!(
                "hypersaga's application (client id {}) in the tenant's directory may not \
                 perform '{action}' (ARM's permissions at {scope} and above do not grant it), \
                 which the operation needs",
                arm.client_id
            ),
            remedy: format!(
                "assign the application a role that grants it on subscription {}, such as the \
                 built-in {}",
                arm.subscription_id,
                role_granting(action)
            ),
        })
        .collect())
}

/// One finding per action `changes` need that the tenant's principal does not hold at
/// `scope` (see [`missing_actions`]).
pub async fn missing_permissions(
    arm: &TenantArm,
    scope: &str,
    changes: &[Change],
) -> Result<Vec<Finding>, StepError> {
    missing_actions(arm, scope, &actions_of(changes)).await
}

/// `plan`, with a finding for each permission its Azure changes need that the tenant's
/// principal lacks, checked at the public zone's group ([`permission_scope`]; for
/// `dns.public-zone` itself, the zone its plan found). The last call of a step's plan.
/// Idempotent: it only reads (at most one GET per tenant and scope in [`CACHE_FOR`]).
pub async fn permitted(
    arm: &TenantArm,
    cmd: &StepCommand,
    mut plan: StepPlan,
) -> Result<StepPlan, StepError> {
    let scope = permission_scope(cmd).or_else(|| {
        PublicZoneOutputs::from_outputs(&StepId::PublicZone, &plan.outputs)
            .ok()
            .and_then(|z| zone_scope(&z.public_zone))
    });
    let needs = actions_of(&plan.changes);
    if needs.is_empty() {
        return Ok(plan);
    }
    let scope = match scope {
        Some(scope) => Some(scope),
        None => any_group(arm).await,
    };
    if let Some(scope) = scope {
        let missing = missing_actions(arm, &scope, &needs).await?;
        plan.findings.extend(missing);
    }
    Ok(plan)
}

/// A resource group of the tenant's subscription, where grants made at the subscription show
/// as well as at the zone's: the one of the lowest id, so every plan reads the same one.
/// `None` when there is none, or the list cannot be read (a plan then checks nothing rather
/// than fail: the step itself meets a missing permission).
async fn any_group(arm: &TenantArm) -> Option<String> {
    let groups = arm
        .client
        .list(
            &format!("/subscriptions/{}/resourcegroups", arm.subscription_id),
            crate::RESOURCES_API,
        )
        .await
        .ok()?;
    groups
        .iter()
        .filter_map(|g| g["id"].as_str())
        .min()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{azure, azure_create};

    fn entry(actions: &[&str], not_actions: &[&str]) -> Permission {
        Permission {
            actions: actions.iter().map(|a| (*a).to_owned()).collect(),
            not_actions: not_actions.iter().map(|a| (*a).to_owned()).collect(),
            ..Permission::default()
        }
    }

    const RG: &str = "/subscriptions/s/resourceGroups/rg";

    #[test]
    fn wildcards_match_as_arm_matches() {
        for (pattern, action, expected) in [
            ("*", "Microsoft.Network/virtualNetworks/write", true),
            (
                "*/read",
                "Microsoft.Network/virtualNetworks/subnets/read",
                true,
            ),
            ("*/read", "Microsoft.Network/virtualNetworks/write", false),
            (
                "Microsoft.Network/*",
                "Microsoft.Network/privateDnsZones/A/write",
                true,
            ),
            (
                "Microsoft.Network/*",
                "Microsoft.Compute/disks/write",
                false,
            ),
            (
                "Microsoft.Authorization/*/Write",
                "Microsoft.Authorization/roleAssignments/write",
                true,
            ),
            (
                "Microsoft.Authorization/*/Write",
                "Microsoft.Authorization/roleAssignments/read",
                false,
            ),
            (
                "microsoft.network/virtualnetworks/READ",
                "Microsoft.Network/virtualNetworks/read",
                true,
            ),
            (
                "Microsoft.Network/virtualNetworks/read",
                "Microsoft.Network/virtualNetworks/subnets/read",
                false,
            ),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
        ] {
            assert_eq!(matches(pattern, action), expected, "{pattern} ~ {action}");
        }
    }

    #[test]
    fn not_actions_subtract_within_their_own_entry_only() {
        let contributor = entry(
            &["*"],
            &[
                "Microsoft.Authorization/*/Delete",
                "Microsoft.Authorization/*/Write",
            ],
        );
        let write = "Microsoft.Authorization/roleAssignments/write";
        assert!(granted(
            std::slice::from_ref(&contributor),
            "Microsoft.Network/virtualNetworks/write"
        ));
        assert!(!granted(std::slice::from_ref(&contributor), write));
        // Another role grants what Contributor's notActions leave out.
        let rbac_admin = entry(&[write, "*/read"], &[]);
        assert!(granted(&[contributor.clone(), rbac_admin], write));
        // A reader's entry subtracts nothing from Contributor's.
        let reader_without = entry(&["*/read"], &["Microsoft.Network/*"]);
        assert!(granted(
            &[contributor, reader_without.clone()],
            "Microsoft.Network/virtualNetworks/read"
        ));
        assert!(!granted(
            &[reader_without],
            "Microsoft.Network/virtualNetworks/read"
        ));
        assert!(!granted(&[], "Microsoft.Network/virtualNetworks/read"));
    }

    #[test]
    fn each_change_needs_the_action_of_its_verb_and_type() {
        let vnet = format!("{RG}/providers/Microsoft.Network/virtualNetworks/v");
        let record =
            format!("{RG}/providers/Microsoft.Network/privateDnsZones/z.example.com/A/api");
        let fic = format!(
            "{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/mi/federatedIdentityCredentials/f"
        );
        let on_vnet = format!("{vnet}/providers/Microsoft.Authorization/roleAssignments/g");
        let cases = [
            (
                azure(Verb::Create, RG, "2021-04-01", ""),
                "Microsoft.Resources/subscriptions/resourceGroups/write",
            ),
            (
                azure(Verb::Delete, RG, "2021-04-01", ""),
                "Microsoft.Resources/subscriptions/resourceGroups/delete",
            ),
            (
                azure(Verb::Read, &vnet, "2023-11-01", ""),
                "Microsoft.Network/virtualNetworks/read",
            ),
            (
                azure(Verb::Update, &vnet, "2023-11-01", ""),
                "Microsoft.Network/virtualNetworks/write",
            ),
            (
                azure(Verb::Create, &record, "2024-06-01", ""),
                "Microsoft.Network/privateDnsZones/A/write",
            ),
            (
                azure_create(&fic, "2023-01-31", &serde_json::json!({})),
                "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write",
            ),
            (
                azure(Verb::Create, &on_vnet, "2022-04-01", ""),
                "Microsoft.Authorization/roleAssignments/write",
            ),
        ];
        for (change, action) in cases {
            assert_eq!(action_of(&change).as_deref(), Some(action), "{}", change.id);
        }
        // What ARM does not answer for needs no ARM action.
        let kube = crate::plan::kube_create(
            Target::ManagementCluster,
            "v1",
            "Namespace",
            "",
            "clusters-demo",
        );
        assert_eq!(action_of(&kube), None);
        // Each action once, in the order first needed.
        let nsg = format!("{RG}/providers/Microsoft.Network/networkSecurityGroups/n");
        let changes = [
            azure(Verb::Create, RG, "", ""),
            azure(Verb::Create, &nsg, "", ""),
            azure(Verb::Create, &format!("{RG}2"), "", ""),
            kube,
        ];
        assert_eq!(
            actions_of(&changes),
            [
                "Microsoft.Resources/subscriptions/resourceGroups/write",
                "Microsoft.Network/networkSecurityGroups/write"
            ]
        );
    }

    #[test]
    fn the_remedy_names_a_role_that_grants_the_action() {
        assert_eq!(
            role_granting("Microsoft.Authorization/roleAssignments/write"),
            "Role Based Access Control Administrator"
        );
        assert_eq!(role_granting("Microsoft.Compute/skus/read"), "Reader");
        assert_eq!(
            role_granting("Microsoft.Network/loadBalancers/write"),
            "Contributor"
        );
        assert_eq!(
            zone_scope(&format!(
                "{RG}/providers/Microsoft.Network/dnsZones/example.com"
            ))
            .as_deref(),
            Some(RG)
        );
    }
}
