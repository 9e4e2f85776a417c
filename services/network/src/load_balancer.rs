//! `network.load-balancer`: the guest egress load balancer (docs/reference/hypershift-azure.md
//! §1.2). Every sub-object is named after the infra id, as the HyperShift operator and the
//! in-cluster cloud provider expect (`loadBalancerName=INFRA`, backend pool `INFRA`).

use hypersaga_azure::ids;
use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{
    LoadBalancerOutputs, Outputs, PublicIpOutputs, StepCommand, StepError, StepId, StepOutputs,
};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{Halt, Ops, TenantArm, ensure, remove, tags};
use serde_json::{Value, json};

use crate::NETWORK_API;

/// ARM type of load balancers.
pub(crate) const TYPE: &str = "Microsoft.Network/loadBalancers";

/// Standard LB: frontend on the public IP, empty backend pool (CAPZ adds the NICs), HTTP probe
/// on 30595 `/healthz`, and an outbound rule (all protocols, 1024 ports per instance, TCP
/// reset, 4 min idle). No load-balancing rules: the cloud provider adds them for Services.
/// Sub-resource references are full ids, as ARM requires inside one PUT.
pub(crate) fn body(cmd: &StepCommand, lb_id: &str, public_ip_id: &str) -> Value {
    let infra = cmd.context.names.infra_id.as_str();
    json!({
        "location": cmd.context.spec.location,
        "tags": tags(cmd),
        "sku": { "name": "Standard" },
        "properties": {
            "frontendIPConfigurations": [{
                "name": infra,
                "properties": {
                    "privateIPAllocationMethod": "Dynamic",
                    "publicIPAddress": { "id": public_ip_id },
                },
            }],
            "backendAddressPools": [{ "name": infra }],
            "probes": [{
                "name": infra,
                "properties": {
                    "protocol": "Http",
                    "port": 30595,
                    "requestPath": "/healthz",
                    "intervalInSeconds": 5,
                    "probeThreshold": 2,
                },
            }],
            "outboundRules": [{
                "name": infra,
                "properties": {
                    "protocol": "All",
                    "allocatedOutboundPorts": 1024,
                    "enableTcpReset": true,
                    "idleTimeoutInMinutes": 4,
                    "frontendIPConfigurations": [{ "id": ids::child_id(lb_id, "frontendIPConfigurations", infra) }],
                    "backendAddressPool": { "id": ids::child_id(lb_id, "backendAddressPools", infra) },
                },
            }],
        },
    })
}

/// An existing LB is adopted when it still has our frontend, pool, probe and outbound rule;
/// anything the cloud provider added (frontends, rules for Services) is kept by not writing.
pub(crate) fn matches(existing: &Value, cmd: &StepCommand) -> bool {
    let infra = cmd.context.names.infra_id.as_str();
    let has = |array: &str| {
        existing
            .pointer(&format!("/properties/{array}"))
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|i| i["name"].as_str() == Some(infra)))
    };
    [
        "frontendIPConfigurations",
        "backendAddressPools",
        "probes",
        "outboundRules",
    ]
    .into_iter()
    .all(has)
}

/// Our load balancer's id.
pub(crate) fn id(arm: &TenantArm, cmd: &StepCommand) -> String {
    let n = &cmd.context.names;
    arm.resource_id(&n.managed_rg, TYPE, &n.load_balancer)
}

pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let PublicIpOutputs { public_ip_id } = cmd.context.outputs_of(&StepId::PublicIp)?;
    let id = id(arm, cmd);
    ensure(
        &arm.client,
        ops,
        "load balancer",
        &id,
        NETWORK_API,
        &body(cmd, &id, &public_ip_id),
        |v| matches(v, cmd),
    )
    .await?;
    Ok(LoadBalancerOutputs {
        load_balancer_id: id,
    }
    .into_outputs())
}

/// What [`create`] would make, on the public IP the step before says.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let PublicIpOutputs { public_ip_id } = cmd.context.outputs_of(&StepId::PublicIp)?;
    let id = id(arm, cmd);
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes: vec![azure_create(
            &id,
            NETWORK_API,
            &body(cmd, &id, &public_ip_id),
        )],
        findings: Vec::new(),
        outputs: LoadBalancerOutputs {
            load_balancer_id: id,
        }
        .into_outputs(),
    })
}

pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    remove(
        &arm.client,
        ops,
        "load balancer",
        &id(arm, cmd),
        NETWORK_API,
    )
    .await?;
    Ok(Outputs::new())
}
