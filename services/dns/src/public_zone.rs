//! `dns.public-zone`: the public DNS zone of the cluster's base domain. The user owns it and
//! has delegated it; HyperShift's `create infra azure` refuses to go on without it, and the
//! HostedCluster names it (`spec.dns.publicZoneID`) so that `*.apps` resolves publicly.
//! Looked up, never written; first in the plan, so a missing zone fails the create before
//! anything exists.

use hypersaga_bus::{Outputs, PublicZoneOutputs, StepCommand, StepError, StepOutputs};
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
