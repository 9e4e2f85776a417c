//! `network.public-ip`: the egress load balancer's public IP in the managed RG
//! (docs/reference/hypershift-azure.md §1.1 row 10). HyperShift wraps this PUT in a 409 retry loop;
//! here a 409 is a retryable step failure and the saga's backoff does the same job, visibly.

use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{Outputs, PublicIpOutputs, StepCommand, StepOutputs};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{Halt, Ops, TenantArm, any, ensure, remove, tags};
use serde_json::{Value, json};

use crate::NETWORK_API;

/// ARM type of public IPs.
pub(crate) const TYPE: &str = "Microsoft.Network/publicIPAddresses";

/// Standard SKU, static, IPv4, 4 minutes idle timeout.
pub(crate) fn body(cmd: &StepCommand) -> Value {
    json!({
        "location": cmd.context.spec.location,
        "tags": tags(cmd),
        "sku": { "name": "Standard" },
        "properties": {
            "publicIPAllocationMethod": "Static",
            "publicIPAddressVersion": "IPv4",
            "idleTimeoutInMinutes": 4,
        },
    })
}

/// Our public IP's id.
pub(crate) fn id(arm: &TenantArm, cmd: &StepCommand) -> String {
    let n = &cmd.context.names;
    arm.resource_id(&n.managed_rg, TYPE, &n.public_ip)
}

/// Creates or adopts it. An existing one is adopted: its address may already be in use by the
/// load balancer, and nothing in it is ours to change.
pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let id = id(arm, cmd);
    ensure(
        &arm.client,
        ops,
        "public IP",
        &id,
        NETWORK_API,
        &body(cmd),
        any,
    )
    .await?;
    Ok(PublicIpOutputs { public_ip_id: id }.into_outputs())
}

/// What [`create`] would make.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> StepPlan {
    let id = id(arm, cmd);
    StepPlan {
        step: cmd.step.clone(),
        changes: vec![azure_create(&id, NETWORK_API, &body(cmd))],
        findings: Vec::new(),
        outputs: PublicIpOutputs { public_ip_id: id }.into_outputs(),
    }
}

pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    remove(&arm.client, ops, "public IP", &id(arm, cmd), NETWORK_API).await?;
    Ok(Outputs::new())
}
