//! Network resource provider hooks: the references each network type's body carries, the
//! checks NRP applies to them on PUT, NIC read-only properties and address allocation, and the
//! back-references NRP shows on NSGs and NICs.

use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use super::in_use::{Use, public_ip_taken, subnet_in_use, users_of};
use super::references::{Reference, check_all, id_of, items};
use super::{FillCtx, PutCheck};
use crate::errors::Result;
use crate::store::{Store, StoredResource};

// ---- references -----------------------------------------------------------------------------

fn subnet_refs(subnet_id: &str, p: &Value, out: &mut Vec<Reference>) {
    for key in ["networkSecurityGroup", "routeTable", "natGateway"] {
        if let Some(target) = id_of(p.get(key)) {
            out.push(Reference::strict(target, subnet_id, subnet_id));
        }
    }
}

/// A subnet PUT on its own (`…/virtualNetworks/v/subnets/s`).
pub(super) fn subnet_references(
    id: &str,
    props: &Map<String, Value>,
    _extra: &Map<String, Value>,
) -> Vec<Reference> {
    let mut out = Vec::new();
    subnet_refs(id, &Value::Object(props.clone()), &mut out);
    out
}

/// A VNet's inline subnets: their NSG, route table and NAT gateway.
pub(super) fn vnet_references(
    id: &str,
    props: &Map<String, Value>,
    _extra: &Map<String, Value>,
) -> Vec<Reference> {
    let mut out = Vec::new();
    for (name, p) in items(props, "subnets") {
        subnet_refs(&format!("{id}/subnets/{name}"), p, &mut out);
    }
    out
}

/// A NIC: the subnet and public IP of each IP configuration (NRP names the NIC itself as the
/// referrer, as in MicrosoftDocs/azure-docs#81734), and the NIC's own NSG. Backend pool and NAT
/// rule memberships must resolve but do not pin the load balancer (no public source shows NRP
/// refusing a load balancer delete over NIC members).
pub(super) fn nic_references(
    id: &str,
    props: &Map<String, Value>,
    _extra: &Map<String, Value>,
) -> Vec<Reference> {
    let mut out = Vec::new();
    for (name, p) in items(props, "ipConfigurations") {
        let holder = format!("{id}/ipConfigurations/{name}");
        for key in ["subnet", "publicIPAddress"] {
            if let Some(target) = id_of(p.get(key)) {
                out.push(Reference::strict(target, &holder, id));
            }
        }
        for key in [
            "loadBalancerBackendAddressPools",
            "loadBalancerInboundNatRules",
        ] {
            for member in p.get(key).and_then(Value::as_array).into_iter().flatten() {
                if let Some(target) = member.get("id").and_then(Value::as_str) {
                    out.push(Reference {
                        blocks_delete: false,
                        ..Reference::strict(target, &holder, id)
                    });
                }
            }
        }
    }
    if let Some(target) = id_of(props.get("networkSecurityGroup")) {
        out.push(Reference::strict(target, id, id));
    }
    out
}

/// A load balancer: frontends' public IP or subnet, and rules naming the balancer's own
/// frontends, pools and probes (NRP names the rule as referrer, openshift/openshift-azure#1933).
pub(super) fn lb_references(
    id: &str,
    props: &Map<String, Value>,
    _extra: &Map<String, Value>,
) -> Vec<Reference> {
    let mut out = Vec::new();
    for (name, p) in items(props, "frontendIPConfigurations") {
        let holder = format!("{id}/frontendIPConfigurations/{name}");
        for key in ["publicIPAddress", "subnet"] {
            if let Some(target) = id_of(p.get(key)) {
                out.push(Reference::strict(target, &holder, &holder));
            }
        }
    }
    for array in ["loadBalancingRules", "inboundNatRules", "outboundRules"] {
        for (name, p) in items(props, array) {
            let holder = format!("{id}/{array}/{name}");
            for key in ["frontendIPConfiguration", "backendAddressPool", "probe"] {
                if let Some(target) = id_of(p.get(key)) {
                    out.push(Reference::strict(target, &holder, &holder));
                }
            }
            for fe in p
                .get("frontendIPConfigurations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(target) = fe.get("id").and_then(Value::as_str) {
                    out.push(Reference::strict(target, &holder, &holder));
                }
            }
        }
    }
    out
}

// ---- PUT checks -------------------------------------------------------------------------------

fn is_public_ip(store: &Store, id: &str) -> bool {
    store
        .resolve(id)
        .is_some_and(|r| r.rtype.type_path.eq_ignore_ascii_case("publicIPAddresses"))
}

/// Every reference of the body resolves (`InvalidResourceReference` otherwise), and no public
/// IP it names is already held by another resource (`PublicIPAddressInUse`).
pub(super) fn references_valid(store: &Store, put: &PutCheck<'_>) -> Result<()> {
    let Some(refs) = put.rtype.references else {
        return Ok(());
    };
    let refs = refs(put.id, put.properties, put.extra);
    check_all(store, put, &refs)?;
    for r in refs.iter().filter(|r| is_public_ip(store, &r.target)) {
        let taken = users_of(store, &r.target.to_ascii_lowercase())
            .into_iter()
            .find(|u| u.owner_key != put.key);
        if let Some(other) = taken {
            return Err(public_ip_taken(&r.holder, &r.target, &other.holder));
        }
    }
    Ok(())
}

/// A VNet PUT: its subnets' references resolve, and a subnet still in use is not dropped (a
/// VNet PUT replaces the subnet list; NRP answers `InUseSubnetCannotBeDeleted`, as quoted in
/// Azure-Samples/jmeter-aci-terraform#69 for `VirtualNetworksClient#CreateOrUpdate`).
pub(super) fn vnet_put_valid(store: &Store, put: &PutCheck<'_>) -> Result<()> {
    references_valid(store, put)?;
    let Some(existing) = store.get(put.key) else {
        return Ok(());
    };
    let kept: Vec<&str> = items(put.properties, "subnets").map(|(n, _)| n).collect();
    for (name, _) in items(&existing.properties, "subnets") {
        if kept.iter().any(|k| k.eq_ignore_ascii_case(name)) {
            continue;
        }
        let key = format!("{}/subnets/{name}", put.key).to_ascii_lowercase();
        if let Some(u) = users_of(store, &key).first() {
            return Err(subnet_in_use(u));
        }
    }
    Ok(())
}

// ---- NIC --------------------------------------------------------------------------------------

/// NIC read-only properties as NRP returns them (the `networkInterfaces` PUT of the
/// VirtualMachineOperationsTests.canCreateVirtualMachine session in Azure/azure-sdk-for-java).
pub(super) fn fill_nic(p: &mut Map<String, Value>, ctx: &FillCtx<'_>) {
    let guid = ctx
        .previous
        .and_then(|prev| prev.get("resourceGuid"))
        .cloned()
        .unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string()));
    p.insert("resourceGuid".into(), guid);
    let sole = p
        .get("ipConfigurations")
        .and_then(Value::as_array)
        .is_some_and(|a| a.len() == 1);
    if let Some(configs) = p.get_mut("ipConfigurations").and_then(Value::as_array_mut) {
        for cfg in configs.iter_mut().filter_map(Value::as_object_mut) {
            let props = cfg
                .entry("properties")
                .or_insert_with(|| json!({}))
                .as_object_mut();
            let Some(props) = props else { continue };
            props
                .entry("privateIPAllocationMethod")
                .or_insert(json!("Dynamic"));
            props
                .entry("privateIPAddressVersion")
                .or_insert(json!("IPv4"));
            if sole {
                // Each NIC has exactly one primary IP configuration; a sole one is it.
                props.insert("primary".into(), json!(true));
            }
        }
    }
    p.entry("dnsSettings")
        .or_insert(json!({ "dnsServers": [], "appliedDnsServers": [] }));
    p.entry("enableAcceleratedNetworking")
        .or_insert(json!(false));
    p.entry("enableIPForwarding").or_insert(json!(false));
    p.entry("nicType").or_insert(json!("Standard"));
}

/// `a.b.c.d/n` → (network address, prefix length).
fn parse_prefix(cidr: &str) -> Option<(u32, u32)> {
    let (addr, len) = cidr.split_once('/')?;
    let addr: Ipv4Addr = addr.parse().ok()?;
    let len: u32 = len.parse().ok().filter(|l| *l <= 32)?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Some((u32::from(addr) & mask, len))
}

/// The address prefix of the subnet `subnet_id`, from its VNet.
fn subnet_prefix(store: &Store, subnet_id: &str) -> Option<String> {
    let vnet = store.resolve(subnet_id)?;
    let name = subnet_id.rsplit('/').next()?;
    let (_, p) = items(&vnet.properties, "subnets").find(|(n, _)| n.eq_ignore_ascii_case(name))?;
    p.get("addressPrefix")
        .and_then(Value::as_str)
        .or_else(|| {
            p.get("addressPrefixes")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
        })
        .map(str::to_owned)
}

/// Addresses other NICs already hold in `subnet_id`.
fn taken_in(store: &Store, subnet_id: &str, except: &str) -> Vec<String> {
    store
        .all()
        .filter(|r| r.rtype.type_path.eq_ignore_ascii_case("networkInterfaces"))
        .filter(|r| !r.id.eq_ignore_ascii_case(except))
        .flat_map(|r| {
            items(&r.properties, "ipConfigurations")
                .filter(|(_, p)| {
                    id_of(p.get("subnet")).is_some_and(|s| s.eq_ignore_ascii_case(subnet_id))
                })
                .filter_map(|(_, p)| p.get("privateIPAddress").and_then(Value::as_str))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Gives each dynamic IP configuration the first free address of its subnet. Azure keeps the
/// first four addresses and the last one of every subnet (learn.microsoft.com "Virtual network
/// FAQ": x.x.x.0-3 and the broadcast address), so the first NIC gets `.4`, as the recorded
/// session above shows (`10.0.0.4`).
pub(super) fn allocate_nic_addresses(store: &mut Store, key: &str) {
    let Some(nic) = store.get(key) else {
        return;
    };
    let nic_id = nic.id.clone();
    let mut assigned = Vec::new();
    for (i, (_, p)) in items(&nic.properties, "ipConfigurations").enumerate() {
        if p.get("privateIPAddress").and_then(Value::as_str).is_some() {
            continue;
        }
        let Some(subnet) = id_of(p.get("subnet")) else {
            continue;
        };
        let Some((base, len)) = subnet_prefix(store, subnet).and_then(|c| parse_prefix(&c)) else {
            continue;
        };
        let size = 1u64 << (32 - len);
        let mut taken = taken_in(store, subnet, &nic_id);
        taken.extend(assigned.iter().map(|(_, a): &(usize, String)| a.clone()));
        let free = (4..size.saturating_sub(1))
            .map(|off| Ipv4Addr::from(base.wrapping_add(off as u32)).to_string())
            .find(|a| !taken.contains(a));
        if let Some(addr) = free {
            assigned.push((i, addr));
        }
    }
    let Some(configs) = store
        .get_mut(key)
        .and_then(|n| n.properties.get_mut("ipConfigurations"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for (i, addr) in assigned {
        if let Some(p) = configs
            .get_mut(i)
            .and_then(|c| c.get_mut("properties"))
            .and_then(Value::as_object_mut)
        {
            p.insert("privateIPAddress".into(), json!(addr));
        }
    }
}

/// A NIC attached to a VM shows the VM, and a MAC address, as NRP reports them.
pub(super) fn decorate_nic(store: &Store, nic: &StoredResource, obj: &mut Map<String, Value>) {
    let vm = users_of(store, &nic.id.to_ascii_lowercase())
        .into_iter()
        .find(|u| u.holder.to_ascii_lowercase().contains("/virtualmachines/"));
    let Some(Use { holder, .. }) = vm else {
        return;
    };
    let mac = nic
        .properties
        .get("resourceGuid")
        .and_then(Value::as_str)
        .map(|g| {
            let hex: Vec<char> = g.chars().filter(char::is_ascii_hexdigit).collect();
            let byte = |i: usize| {
                hex.get(2 * i..2 * i + 2)
                    .map(|c| c.iter().collect::<String>())
            };
            let tail: Vec<String> = (0..3).filter_map(byte).collect();
            format!("00-0D-3A-{}", tail.join("-")).to_ascii_uppercase()
        });
    if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("virtualMachine".into(), json!({ "id": holder }));
        if let Some(mac) = mac {
            props.insert("macAddress".into(), json!(mac));
        }
    }
}

/// An NSG lists the subnets and NICs associated with it, as NRP returns them.
pub(super) fn decorate_nsg(store: &Store, nsg: &StoredResource, obj: &mut Map<String, Value>) {
    let users = users_of(store, &nsg.id.to_ascii_lowercase());
    let (subnets, nics): (Vec<&Use>, Vec<&Use>) = users
        .iter()
        .partition(|u| u.holder.to_ascii_lowercase().contains("/subnets/"));
    let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (key, list) in [("subnets", subnets), ("networkInterfaces", nics)] {
        if !list.is_empty() {
            let refs: Vec<Value> = list.iter().map(|u| json!({ "id": u.holder })).collect();
            props.insert(key.into(), Value::Array(refs));
        }
    }
}

/// Each subnet of a VNet lists the IP configurations placed in it (NICs' and load balancers'
/// frontends), as NRP returns them (`Subnet.properties.ipConfigurations`, read-only): how many
/// of its addresses are taken.
pub(super) fn decorate_vnet(store: &Store, vnet: &StoredResource, obj: &mut Map<String, Value>) {
    let Some(subnets) = obj
        .get_mut("properties")
        .and_then(|p| p.get_mut("subnets"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for subnet in subnets.iter_mut() {
        let Some(name) = subnet["name"].as_str().map(str::to_owned) else {
            continue;
        };
        let id = format!("{}/subnets/{name}", vnet.id);
        let configs: Vec<Value> = super::in_use::users_of(store, &id.to_ascii_lowercase())
            .into_iter()
            .filter(|u| u.holder.to_ascii_lowercase().contains("/ipconfigurations/"))
            .map(|u| json!({ "id": u.holder }))
            .collect();
        if configs.is_empty() {
            continue;
        }
        if let Some(props) = subnet.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("ipConfigurations".into(), Value::Array(configs));
        }
    }
}
