//! `dns.public-zone`: the public DNS zone of the cluster's base domain. The user owns it and
//! has delegated it; HyperShift's `create infra azure` refuses to go on without it, and the
//! HostedCluster names it (`spec.dns.publicZoneID`) so that `*.apps` resolves publicly.
//! Looked up, never written; first in the plan, so a missing zone fails the create before
//! anything exists.

use hypersaga_bus::plan::{StepPlan, Verb};
use hypersaga_bus::{Outputs, PublicZoneOutputs, StepCommand, StepError, StepId, StepOutputs};
use hypersaga_stepkit::plan::{azure, finding_of};
use hypersaga_stepkit::{Halt, TenantArm, step_error};

/// Public DNS (`Microsoft.Network/dnsZones`) api-version.
pub const DNS_API: &str = "2018-05-01";

/// Finds the zone named as the base domain among the subscription's public zones.
pub(crate) async fn find(arm: &TenantArm, cmd: &StepCommand) -> Result<Outputs, Halt> {
    let domain = cmd.context.spec.base_domain.trim_end_matches('.');
    let zones = arm
        .client
        .list(
            &format!(
                "/subscriptions/{}/providers/Microsoft.Network/dnszones",
                arm.subscription_id
            ),
            DNS_API,
        )
        .await
        .map_err(step_error)?;
    let found = zones.iter().find_map(|z| {
        let name = z["name"].as_str()?.trim_end_matches('.');
        name.eq_ignore_ascii_case(domain)
            .then(|| z["id"].as_str().map(str::to_owned))
            .flatten()
    });
    let Some(public_zone) = found else {
        return Err(StepError::terminal(
            "PublicZoneNotFound",
            format!(
                "subscription {} has no public DNS zone {domain:?}: create it (and delegate it \
                 from its parent domain) before creating clusters under it, or choose another \
                 spec.base_domain",
                arm.subscription_id
            ),
        )
        .with_target("spec.base_domain")
        .into());
    };
    Ok(PublicZoneOutputs { public_zone }.into_outputs())
}

/// What [`find`] would read: the zone, or a finding on `spec.base_domain` when the
/// subscription has none of that name.
pub(crate) async fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let mut plan = StepPlan {
        step: cmd.step.clone(),
        ..StepPlan::default()
    };
    match find(arm, cmd).await {
        Ok(outputs) => {
            let zone = PublicZoneOutputs::from_outputs(&StepId::PublicZone, &outputs)?;
            plan.changes
                .push(azure(Verb::Read, &zone.public_zone, DNS_API, "global"));
            plan.outputs = outputs;
        }
        Err(Halt::Failed(e)) => plan.findings.push(finding_of(
            e,
            "DNS_ZONE",
            "create the zone in the tenant's subscription and delegate it, or choose another base domain",
        )?),
        Err(Halt::Wait { id, .. }) => {
            return Err(StepError::retryable(
                "Unexpected",
                format!("looking the zone up waits on {id}"),
            ));
        }
    }
    Ok(plan)
}
