//! The network service: the Azure network of a hosted cluster, as
//! `hypershift create infra azure` builds it (docs/reference/hypershift-azure.md §1.1–§1.2).
//!
//! | step | do | undo |
//! |---|---|---|
//! | `network.resource-groups` | managed RG; VNet and NSG RGs unless the network is the user's | delete managed, then VNet, then NSG RG |
//! | `network.nsg` | NSG (empty rules), or look up the user's | delete ours |
//! | `network.vnet` | VNet + inline subnet `default` with the NSG, or look up the user's | delete ours |
//! | `network.public-ip` | Standard static IPv4 public IP | delete |
//! | `network.load-balancer` | Standard egress LB, everything named `INFRA` | delete |
//!
//! Nothing the user brought (VNet, subnet, NSG, their resource groups) is ever written or
//! deleted: it is only read, to check it exists and to pass its id on.
#![forbid(unsafe_code)]
// `StepError` is large by design: it keeps Azure's (or Kubernetes') whole error — code,
// message, target, step, Retry-After — for users and operators to act on.
#![allow(clippy::result_large_err)]

mod load_balancer;
mod nsg;
mod public_ip;
mod resource_groups;
mod user_network;
mod vnet;

use std::sync::Arc;

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Action, Outputs, Service, StepCommand, StepError, StepId};
use hypersaga_config::Config;
use hypersaga_stepkit::{ArmClients, ArmStep, Halt, Notes, Ops, sweep, unknown_step};
use hypersaga_worker::{Progress, StepHandler, StepResult};
use tokio_util::sync::CancellationToken;

pub use hypersaga_stepkit::RESOURCES_API;
/// `Microsoft.Network` api-version HyperShift uses for NSG, VNet, public IP and LB.
pub const NETWORK_API: &str = "2023-11-01";

/// What `network.sweep` deletes of a cluster no live record owns, in this order, with the
/// api-version of each: the load balancer before its public IP, the VNet before its NSG, and
/// the resource groups last, with whatever else is in them (the VMs, NICs and disks CAPZ
/// made). What the user brought carries no tags of ours and is never listed.
const SWEPT: [(&str, &str); 5] = [
    (load_balancer::TYPE, NETWORK_API),
    (public_ip::TYPE, NETWORK_API),
    (vnet::TYPE, NETWORK_API),
    (nsg::TYPE, NETWORK_API),
    (sweep::RESOURCE_GROUP_TYPE, RESOURCES_API),
];

/// Why the service could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bus, worker or configuration failure.
    #[error(transparent)]
    Stepkit(#[from] hypersaga_stepkit::Error),
}

/// Runs the network service until `shutdown`.
pub async fn run(config: &Config, shutdown: CancellationToken) -> Result<(), Error> {
    let service = Service::Network.as_str();
    let bus = hypersaga_stepkit::connect(config, service).await?;
    let budgets = hypersaga_stepkit::budgets(&bus, config).await?;
    let tenants = hypersaga_stepkit::tenants(&bus, config, shutdown.clone()).await?;
    let handler = Arc::new(
        NetworkHandler::new(config)?
            .with_budgets(budgets)
            .with_tenants(tenants.clone()),
    );
    hypersaga_stepkit::run_service(config, service, bus, handler, shutdown).await?;
    Ok(())
}

/// Runs the `network.*` steps.
///
/// Idempotent, as every handler must be: each step looks first, adopts what an earlier
/// attempt (or a replica that died before acknowledging) created, and only then creates.
/// Names are deterministic, so a retry finds exactly what the first attempt made.
pub struct NetworkHandler {
    arm: ArmClients,
}

impl NetworkHandler {
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
impl ArmStep for NetworkHandler {
    async fn step(&self, cmd: &StepCommand, ops: &Ops, notes: &dyn Notes) -> Result<Outputs, Halt> {
        let step = cmd.step_id()?;
        if step.service() != Service::Network {
            return Err(unknown_step(cmd).into());
        }
        let arm = self.arm.tenant(&cmd.tenant)?;
        match (step, cmd.action) {
            (StepId::ResourceGroups, Action::Do) => resource_groups::create(&arm, cmd, ops).await,
            (StepId::ResourceGroups, Action::Undo) => {
                resource_groups::delete(&arm, cmd, ops, notes).await
            }
            (StepId::Nsg, Action::Do) => nsg::create(&arm, cmd, ops).await,
            (StepId::Nsg, Action::Undo) => nsg::delete(&arm, cmd, ops).await,
            (StepId::Vnet, Action::Do) => vnet::create(&arm, cmd, ops).await,
            (StepId::Vnet, Action::Undo) => vnet::delete(&arm, cmd, ops).await,
            (StepId::PublicIp, Action::Do) => public_ip::create(&arm, cmd, ops).await,
            (StepId::PublicIp, Action::Undo) => public_ip::delete(&arm, cmd, ops).await,
            (StepId::LoadBalancer, Action::Do) => load_balancer::create(&arm, cmd, ops).await,
            (StepId::LoadBalancer, Action::Undo) => load_balancer::delete(&arm, cmd, ops).await,
            (StepId::Sweep(_), Action::Do) => sweep::sweep_step(&arm, cmd, ops, &SWEPT).await,
            _ => Err(unknown_step(cmd).into()),
        }
    }
}

#[async_trait::async_trait]
impl StepHandler for NetworkHandler {
    async fn defer(&self, cmd: &StepCommand) -> Option<std::time::Duration> {
        self.arm.defer(cmd).await
    }

    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError> {
        self.check(cmd, progress).await
    }

    /// The network's resources and resource groups tagged for `tenant` (and `cluster`).
    async fn made(
        &self,
        tenant: &hypersaga_model::TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError> {
        let arm = self.arm.tenant(tenant)?;
        sweep::tagged(&arm, tenant, cluster, &SWEPT).await
    }

    /// The create's plan of each `network.*` step, from the ids and bodies its run writes, with
    /// the permissions the tenant's principal lacks for it as findings.
    async fn plan(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        let step = cmd.step_id()?;
        if step.service() != Service::Network || cmd.action != Action::Do {
            return Err(cmd.unknown_step());
        }
        let arm = self.arm.tenant(&cmd.tenant)?;
        let plan = match step {
            StepId::ResourceGroups => resource_groups::plan(&arm, cmd),
            StepId::Nsg => nsg::plan(&arm, cmd).await?,
            StepId::Vnet => vnet::plan(&arm, cmd).await?,
            StepId::PublicIp => public_ip::plan(&arm, cmd),
            StepId::LoadBalancer => load_balancer::plan(&arm, cmd)?,
            _ => return Err(cmd.unknown_step()),
        };
        hypersaga_stepkit::plan::permitted(&arm, cmd, plan).await
    }
}

#[cfg(test)]
mod tests {
    use hypersaga_bus::Action;
    use hypersaga_testkit::{command, spec};
    use serde_json::json;

    use super::*;

    const SUB: &str = "/subscriptions/s/resourceGroups";

    fn byo() -> hypersaga_model::ClusterSpec {
        let mut s = spec();
        s.network.vnet_id = Some("/subscriptions/s/resourceGroups/user-net/providers/Microsoft.Network/virtualNetworks/v".into());
        s.network.subnet_id = Some("/subscriptions/s/resourceGroups/user-net/providers/Microsoft.Network/virtualNetworks/v/subnets/a".into());
        s.network.nsg_id = Some("/subscriptions/s/resourceGroups/user-sec/providers/Microsoft.Network/networkSecurityGroups/n".into());
        s
    }

    fn tags() -> serde_json::Value {
        json!({"hypersaga.io_tenant": "acme", "hypersaga.io_cluster": "demo", "hypersaga.io_saga": "saga-demo"})
    }

    #[test]
    fn resource_group_body() {
        let cmd = command("demo", spec(), StepId::ResourceGroups, Action::Do, []);
        assert_eq!(
            resource_groups::body(&cmd),
            json!({"location": "eastus", "tags": tags()})
        );
    }

    #[test]
    fn nsg_body_has_empty_rules() {
        let cmd = command("demo", spec(), StepId::Nsg, Action::Do, []);
        assert_eq!(
            nsg::body(&cmd),
            json!({"location": "eastus", "tags": tags(), "properties": {"securityRules": []}})
        );
    }

    #[test]
    fn vnet_body_and_adoption() {
        let mut s = spec();
        s.network.vnet_cidr = Some("10.1.0.0/16".into());
        s.network.subnet_cidr = Some("10.1.2.0/24".into());
        let cmd = command("demo", s, StepId::Vnet, Action::Do, []);
        let nsg = format!(
            "{SUB}/demo-nsg-x/providers/Microsoft.Network/networkSecurityGroups/demo-x-nsg"
        );
        let body = vnet::body(&cmd, &nsg);
        assert_eq!(
            body,
            json!({
                "location": "eastus",
                "tags": tags(),
                "properties": {
                    "addressSpace": {"addressPrefixes": ["10.1.0.0/16"]},
                    "subnets": [{"name": "default", "properties": {
                        "addressPrefix": "10.1.2.0/24",
                        "networkSecurityGroup": {"id": nsg},
                    }}],
                },
            })
        );
        // What ARM answers (extra read-only fields, other casing of the NSG id) is adopted.
        let mut existing = body.clone();
        existing["properties"]["subnets"][0]["properties"]["networkSecurityGroup"]["id"] =
            json!(nsg.to_uppercase());
        existing["properties"]["provisioningState"] = json!("Succeeded");
        assert!(vnet::matches(&existing, &cmd, &nsg));
        // Another NSG, or another prefix, is rewritten.
        assert!(!vnet::matches(&body, &cmd, "/other"));
        let mut other = body.clone();
        other["properties"]["addressSpace"]["addressPrefixes"] = json!(["10.9.0.0/16"]);
        assert!(!vnet::matches(&other, &cmd, &nsg));
    }

    #[test]
    fn default_cidrs_follow_hypershift() {
        let cmd = command("demo", spec(), StepId::Vnet, Action::Do, []);
        let body = vnet::body(&cmd, "/nsg");
        assert_eq!(
            body["properties"]["addressSpace"]["addressPrefixes"],
            json!(["10.0.0.0/16"])
        );
        assert_eq!(
            body["properties"]["subnets"][0]["properties"]["addressPrefix"],
            "10.0.0.0/24"
        );
    }

    #[test]
    fn public_ip_body() {
        let cmd = command("demo", spec(), StepId::PublicIp, Action::Do, []);
        assert_eq!(
            public_ip::body(&cmd),
            json!({
                "location": "eastus",
                "tags": tags(),
                "sku": {"name": "Standard"},
                "properties": {
                    "publicIPAllocationMethod": "Static",
                    "publicIPAddressVersion": "IPv4",
                    "idleTimeoutInMinutes": 4,
                },
            })
        );
    }

    #[test]
    fn load_balancer_body_matches_hypershift() {
        let cmd = command("demo", spec(), StepId::LoadBalancer, Action::Do, []);
        let infra = cmd.context.names.infra_id.clone();
        let lb = format!("{SUB}/rg/providers/Microsoft.Network/loadBalancers/{infra}");
        let pip = format!("{SUB}/rg/providers/Microsoft.Network/publicIPAddresses/{infra}");
        let body = load_balancer::body(&cmd, &lb, &pip);
        assert_eq!(
            body,
            json!({
                "location": "eastus",
                "tags": tags(),
                "sku": {"name": "Standard"},
                "properties": {
                    "frontendIPConfigurations": [{"name": infra, "properties": {
                        "privateIPAllocationMethod": "Dynamic",
                        "publicIPAddress": {"id": pip},
                    }}],
                    "backendAddressPools": [{"name": infra}],
                    "probes": [{"name": infra, "properties": {
                        "protocol": "Http", "port": 30595, "requestPath": "/healthz",
                        "intervalInSeconds": 5, "probeThreshold": 2,
                    }}],
                    "outboundRules": [{"name": infra, "properties": {
                        "protocol": "All",
                        "allocatedOutboundPorts": 1024,
                        "enableTcpReset": true,
                        "idleTimeoutInMinutes": 4,
                        "frontendIPConfigurations": [{"id": format!("{lb}/frontendIPConfigurations/{infra}")}],
                        "backendAddressPool": {"id": format!("{lb}/backendAddressPools/{infra}")},
                    }}],
                },
            })
        );
        assert!(load_balancer::matches(&body, &cmd));
        // Rules the cloud provider added do not stop adoption; a missing outbound rule does.
        let mut extended = body.clone();
        extended["properties"]["loadBalancingRules"] = json!([{"name": "a1b2-TCP-443"}]);
        assert!(load_balancer::matches(&extended, &cmd));
        let mut partial = body;
        partial["properties"]["outboundRules"] = json!([]);
        assert!(!load_balancer::matches(&partial, &cmd));
    }

    #[test]
    fn user_brought_resource_groups_are_recognised() {
        let cmd = command("demo", byo(), StepId::ResourceGroups, Action::Undo, []);
        assert_eq!(
            user_network::user_resource_groups(&cmd),
            vec![
                "/subscriptions/s/resourcegroups/user-net",
                "/subscriptions/s/resourcegroups/user-net",
                "/subscriptions/s/resourcegroups/user-sec"
            ]
        );
        assert!(
            user_network::user_resource_groups(&command(
                "demo",
                spec(),
                StepId::ResourceGroups,
                Action::Undo,
                []
            ))
            .is_empty()
        );
    }

    #[test]
    fn missing_user_id_is_terminal_with_target() {
        let e = user_network::given("nsg_id", None).unwrap_err();
        assert!(!e.is_retryable());
        assert_eq!(e.info.target.as_deref(), Some("spec.network.nsg_id"));
    }
}
