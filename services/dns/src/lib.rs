//! The dns service: the hosted cluster's private DNS (docs/reference/hypershift-azure.md §1.1 rows
//! 8–9, §4.1).
//!
//! | step | do | undo |
//! |---|---|---|
//! | `dns.public-zone` | look up the user's public zone of the base domain (refused when missing) | nothing: it is the user's |
//! | `dns.private-zone` | private zone `NAME.BD` in the managed RG | delete it (links go first, by the DAG) |
//! | `dns.vnet-link` | link the zone to the cluster's VNet, no auto-registration | delete the link |
//! | `dns.records` | `api` → the control plane endpoint (A for an IPv4 address, else CNAME) | delete the record |
//!
//! The zone and its link are Azure's slowest network operations (30–60 s each, answered 202
//! with no `Retry-After`, docs/reference/azure-latencies.md rows 6a–6b), so both say so in a
//! progress note.
#![forbid(unsafe_code)]
// `StepError` is large by design: it keeps Azure's (or Kubernetes') whole error — code,
// message, target, step, Retry-After — for users and operators to act on.
#![allow(clippy::result_large_err)]

mod public_zone;
mod records;
mod vnet_link;
mod zone;

use std::sync::Arc;

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Action, Outputs, Service, StepCommand, StepError, StepId};
use hypersaga_config::Config;
use hypersaga_stepkit::{ArmClients, ArmStep, Halt, Notes, Ops, TenantArm, sweep, unknown_step};
use hypersaga_worker::{Progress, StepHandler, StepResult};
use tokio_util::sync::CancellationToken;

/// Private DNS api-version HyperShift uses for zones, links and record sets.
pub const PRIVATE_DNS_API: &str = "2024-06-01";
pub use public_zone::DNS_API;

/// Why the service could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bus, worker or configuration failure.
    #[error(transparent)]
    Stepkit(#[from] hypersaga_stepkit::Error),
}

/// Runs the dns service until `shutdown`.
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<(), Error> {
    let service = Service::Dns.as_str();
    let bus = hypersaga_stepkit::connect(config, service).await?;
    let budgets = hypersaga_stepkit::budgets(&bus, config).await?;
    let tenants = hypersaga_stepkit::tenants(&bus, config, shutdown.clone()).await?;
    let handler = Arc::new(
        DnsHandler::new(config)?
            .with_budgets(budgets)
            .with_tenants(tenants.clone()),
    );
    hypersaga_stepkit::run_service(config, service, bus, handler, shutdown).await?;
    Ok(())
}

/// What `dns.sweep` deletes of a cluster no live record owns, in this order: the private
/// zone's VNet links first (Azure refuses to delete a zone that has any), then the zone, its
/// record sets with it. The public zone is the user's and carries no tags of ours.
const SWEPT: [(&str, &str); 2] = [
    (
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        PRIVATE_DNS_API,
    ),
    (zone::TYPE, PRIVATE_DNS_API),
];

/// Runs the `dns.*` steps.
///
/// Idempotent, as every handler must be: each step looks first, adopts a zone, link or record
/// that already says the right thing, and only then creates; names are deterministic, so a
/// redelivered command finds what the first attempt made.
pub struct DnsHandler {
    arm: ArmClients,
}

impl DnsHandler {
    /// Builds the handler from the configuration (endpoints, tenants, CA bundle).
    pub fn new(config: &Config) -> Result<Self, Error> {
        Ok(Self {
            arm: ArmClients::new(config)?,
        })
    }

    /// Paces its ARM requests through the shared per-subscription budgets.
    pub fn with_budgets(mut self, budgets: Option<hypersaga_stepkit::Budgets>) -> Self {
        self.arm = self.arm.with_budgets(budgets);
        self
    }

    /// Serves the live tenants (`hypersaga_stepkit::tenants`), not only the configured ones.
    pub fn with_tenants(mut self, tenants: hypersaga_tenants::Directory) -> Self {
        self.arm = self.arm.with_tenants(tenants);
        self
    }
}

/// One pass of a step; the worker's check and the in-place run come with [`ArmStep`].
#[async_trait::async_trait]
impl ArmStep for DnsHandler {
    async fn step(&self, cmd: &StepCommand, ops: &Ops, notes: &dyn Notes) -> Result<Outputs, Halt> {
        let step = cmd.step_id()?;
        if step.service() != Service::Dns {
            return Err(unknown_step(cmd).into());
        }
        let arm = self.arm.tenant(&cmd.tenant)?;
        match (step, cmd.action) {
            (StepId::PublicZone, Action::Do) => public_zone::find(&arm, cmd).await,
            (StepId::PublicZone, Action::Undo) => Ok(Outputs::new()),
            (StepId::PrivateZone, Action::Do) => zone::create(&arm, cmd, ops, notes).await,
            (StepId::PrivateZone, Action::Undo) => zone::delete(&arm, cmd, ops, notes).await,
            (StepId::VnetLink, Action::Do) => vnet_link::create(&arm, cmd, ops, notes).await,
            (StepId::VnetLink, Action::Undo) => vnet_link::delete(&arm, cmd, ops, notes).await,
            (StepId::DnsRecords, Action::Do) => records::create(&arm, cmd, ops).await,
            (StepId::DnsRecords, Action::Undo) => records::delete(&arm, cmd, ops).await,
            (StepId::Sweep(_), Action::Do) => sweep::sweep_step(&arm, cmd, ops, &SWEPT).await,
            _ => Err(unknown_step(cmd).into()),
        }
    }
}

#[async_trait::async_trait]
impl StepHandler for DnsHandler {
    async fn defer(&self, cmd: &StepCommand) -> Option<std::time::Duration> {
        self.arm.defer(cmd).await
    }

    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError> {
        self.check(cmd, progress).await
    }

    /// The private zones and VNet links tagged for `tenant` (and `cluster`).
    async fn made(
        &self,
        tenant: &hypersaga_model::TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError> {
        let arm = self.arm.tenant(tenant)?;
        sweep::tagged(&arm, tenant, cluster, &SWEPT).await
    }

    /// The create's plan of each `dns.*` step, from the ids and bodies its run writes; a
    /// public zone that is not there is a finding, and so is each permission the tenant's
    /// principal lacks for the step's Azure changes.
    async fn plan(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        let step = cmd.step_id()?;
        if step.service() != Service::Dns || cmd.action != Action::Do {
            return Err(cmd.unknown_step());
        }
        let arm = self.arm.tenant(&cmd.tenant)?;
        let plan = match step {
            StepId::PublicZone => public_zone::plan(&arm, cmd).await?,
            StepId::PrivateZone => zone::plan(&arm, cmd),
            StepId::VnetLink => vnet_link::plan(&arm, cmd)?,
            StepId::DnsRecords => records::plan(&arm, cmd)?,
            _ => return Err(cmd.unknown_step()),
        };
        hypersaga_stepkit::plan::permitted(&arm, cmd, plan).await
    }
}

/// The cluster's private zone id (deterministic, so every step derives the same one).
pub(crate) fn zone_id(arm: &TenantArm, cmd: &StepCommand) -> String {
    let n = &cmd.context.names;
    arm.resource_id(&n.managed_rg, zone::TYPE, &n.private_zone)
}

#[cfg(test)]
mod tests {
    use hypersaga_bus::Action;
    use hypersaga_testkit::{command, spec};
    use serde_json::json;

    use super::*;

    #[test]
    fn zone_and_link_bodies() {
        let cmd = command("demo", spec(), StepId::PrivateZone, Action::Do, []);
        let tags = json!({"hypersaga.io_tenant": "acme", "hypersaga.io_cluster": "demo", "hypersaga.io_saga": "saga-demo"});
        assert_eq!(
            zone::body(&cmd),
            json!({"location": "global", "tags": tags})
        );
        let vnet =
            "/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v";
        let link = vnet_link::body(&cmd, vnet);
        assert_eq!(
            link,
            json!({"location": "global", "tags": tags, "properties": {"registrationEnabled": false, "virtualNetwork": {"id": vnet}}})
        );
        assert!(vnet_link::matches(&link, &vnet.to_uppercase()));
        assert!(!vnet_link::matches(&link, "/other"));
        let mut registering = link.clone();
        registering["properties"]["registrationEnabled"] = json!(true);
        assert!(!vnet_link::matches(&registering, vnet));
    }
}
