//! `network.vnet`: the VNet with its inline subnet `default`, the NSG attached
//! (docs/reference/hypershift-azure.md §1.1 row 6), or the user's VNet and subnet, looked up.

use hypersaga_azure::ids;
use hypersaga_bus::plan::StepPlan;
use hypersaga_bus::{
    NsgOutputs, Outputs, StepCommand, StepError, StepId, StepOutputs, VnetOutputs,
};
use hypersaga_stepkit::plan::azure_create;
use hypersaga_stepkit::{Halt, Ops, TenantArm, ensure, remove, tags};
use serde_json::{Value, json};

use crate::NETWORK_API;
use crate::user_network::{check_fit, check_location, check_room, given, look_up, plan_look_up};

/// ARM type of virtual networks.
pub(crate) const TYPE: &str = "Microsoft.Network/virtualNetworks";

/// The VNet we create: address space, and the subnet inline so VNet and subnet are one write
/// (a separate subnet PUT would be a second operation holding the VNet's lock).
pub(crate) fn body(cmd: &StepCommand, nsg_id: &str) -> Value {
    let spec = &cmd.context.spec;
    json!({
        "location": spec.location,
        "tags": tags(cmd),
        "properties": {
            "addressSpace": { "addressPrefixes": [spec.network.vnet_cidr()] },
            "subnets": [{
                "name": cmd.context.names.subnet,
                "properties": {
                    "addressPrefix": spec.network.subnet_cidr(),
                    "networkSecurityGroup": { "id": nsg_id },
                },
            }],
        },
    })
}

/// An existing VNet is ours to adopt when it has our address space and our subnet with our
/// prefix and NSG; otherwise it is rewritten to the desired state.
pub(crate) fn matches(existing: &Value, cmd: &StepCommand, nsg_id: &str) -> bool {
    let spec = &cmd.context.spec.network;
    let has_space = existing
        .pointer("/properties/addressSpace/addressPrefixes")
        .and_then(Value::as_array)
        .is_some_and(|p| p.iter().any(|p| p.as_str() == Some(spec.vnet_cidr())));
    let has_subnet = existing
        .pointer("/properties/subnets")
        .and_then(Value::as_array)
        .is_some_and(|subnets| {
            subnets.iter().any(|s| {
                s["name"].as_str() == Some(cmd.context.names.subnet.as_str())
                    && s.pointer("/properties/addressPrefix")
                        .and_then(Value::as_str)
                        == Some(spec.subnet_cidr())
                    && s.pointer("/properties/networkSecurityGroup/id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| id.eq_ignore_ascii_case(nsg_id))
            })
        });
    has_space && has_subnet
}

/// Our VNet's id.
pub(crate) fn id(arm: &TenantArm, cmd: &StepCommand) -> String {
    let n = &cmd.context.names;
    arm.resource_id(&n.vnet_rg, TYPE, &n.vnet)
}

pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let network = &cmd.context.spec.network;
    if network.is_user_brought() {
        let vnet_id = given("vnet_id", network.vnet_id.as_deref())?;
        let subnet_id = given("subnet_id", network.subnet_id.as_deref())?;
        let mut unfit = Vec::new();
        check_fit(&mut unfit, vnet_id, subnet_id, "", None);
        if let Some(f) = unfit.into_iter().next() {
            return Err(StepError::terminal("SubnetNotInVnet", f.message)
                .with_target(f.field)
                .into());
        }
        look_up(arm, "vnet_id", vnet_id).await?;
        look_up(arm, "subnet_id", subnet_id).await?;
        return Ok(VnetOutputs {
            vnet_id: vnet_id.to_owned(),
            subnet_id: subnet_id.to_owned(),
        }
        .into_outputs());
    }
    let NsgOutputs { nsg_id } = cmd.context.outputs_of(&StepId::Nsg)?;
    let nsg_id = nsg_id.as_str();
    let id = id(arm, cmd);
    ensure(
        &arm.client,
        ops,
        "virtual network",
        &id,
        NETWORK_API,
        &body(cmd, nsg_id),
        |v| matches(v, cmd, nsg_id),
    )
    .await?;
    let subnet_id = ids::child_id(&id, "subnets", &cmd.context.names.subnet);
    Ok(VnetOutputs {
        vnet_id: id,
        subnet_id,
    }
    .into_outputs())
}

/// What [`create`] would do: read the user's VNet and subnet, or make ours with the NSG the
/// step before says.
pub(crate) async fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let network = &cmd.context.spec.network;
    let mut findings = Vec::new();
    let (changes, outputs) = if network.is_user_brought() {
        let vnet_id = given("vnet_id", network.vnet_id.as_deref())?;
        let subnet_id = given("subnet_id", network.subnet_id.as_deref())?;
        let (vnet_read, vnet) = plan_look_up(arm, "vnet_id", vnet_id, &mut findings).await?;
        let (subnet_read, subnet) =
            plan_look_up(arm, "subnet_id", subnet_id, &mut findings).await?;
        if let Some(vnet) = &vnet {
            check_location(&mut findings, "vnet_id", vnet, &cmd.context.spec.location);
        }
        let nsg_id = network.nsg_id.as_deref().unwrap_or_default();
        check_fit(&mut findings, vnet_id, subnet_id, nsg_id, subnet.as_ref());
        check_room(&mut findings, subnet_id, subnet.as_ref(), &cmd.context.spec);
        let changes = vec![vnet_read, subnet_read];
        let outputs = VnetOutputs {
            vnet_id: vnet_id.to_owned(),
            subnet_id: subnet_id.to_owned(),
        };
        (changes, outputs)
    } else {
        let NsgOutputs { nsg_id } = cmd.context.outputs_of(&StepId::Nsg)?;
        let id = id(arm, cmd);
        let change = azure_create(&id, NETWORK_API, &body(cmd, &nsg_id));
        let subnet_id = ids::child_id(&id, "subnets", &cmd.context.names.subnet);
        let outputs = VnetOutputs {
            vnet_id: id,
            subnet_id,
        };
        (vec![change], outputs)
    };
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes,
        findings,
        outputs: outputs.into_outputs(),
    })
}

/// Deletes our VNet (its subnet goes with it). A user-brought VNet is left alone.
pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    if !cmd.context.spec.network.is_user_brought() {
        remove(
            &arm.client,
            ops,
            "virtual network",
            &id(arm, cmd),
            NETWORK_API,
        )
        .await?;
    }
    Ok(Outputs::new())
}
