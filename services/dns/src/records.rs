//! `dns.records`: the `api` record in the private zone, pointing at the control plane
//! endpoint the HostedCluster reports — an `A` record for an IPv4 address, a `CNAME` for a
//! host name. Record sets are not tracked resources and take no tags; they go with the zone.

use std::net::Ipv4Addr;

use hypersaga_azure::ids;
use hypersaga_bus::plan::{StepPlan, Verb};
use hypersaga_bus::{
    DnsRecordsOutputs, HostedClusterOutputs, Outputs, StepCommand, StepError, StepId, StepOutputs,
};
use hypersaga_stepkit::plan::azure;
use hypersaga_stepkit::{Halt, Ops, TenantArm, ensure, remove, step_error};
use serde_json::{Value, json};

use crate::{PRIVATE_DNS_API, zone_id};

/// Record set name.
pub(crate) const NAME: &str = "api";
/// TTL of the record, seconds.
pub(crate) const TTL: u32 = 300;

/// What `api` points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    A(Ipv4Addr),
    Cname(String),
}

impl Target {
    pub(crate) fn parse(host: &str) -> Self {
        match host.parse::<Ipv4Addr>() {
            Ok(ip) => Self::A(ip),
            Err(_) => Self::Cname(host.to_owned()),
        }
    }

    /// The record type segment of the record set id.
    pub(crate) fn record_type(&self) -> &'static str {
        match self {
            Self::A(_) => "A",
            Self::Cname(_) => "CNAME",
        }
    }

    /// The other type: a DNS name holding a CNAME may hold nothing else.
    fn other_type(&self) -> &'static str {
        match self {
            Self::A(_) => "CNAME",
            Self::Cname(_) => "A",
        }
    }

    pub(crate) fn body(&self) -> Value {
        match self {
            Self::A(ip) => {
                json!({ "properties": { "ttl": TTL, "aRecords": [{ "ipv4Address": ip.to_string() }] } })
            }
            Self::Cname(host) => {
                json!({ "properties": { "ttl": TTL, "cnameRecord": { "cname": host } } })
            }
        }
    }

    /// An existing record set is adopted when TTL and data are exactly ours.
    pub(crate) fn matches(&self, existing: &Value) -> bool {
        let p = &existing["properties"];
        let data = match self {
            Self::A(ip) => p["aRecords"] == json!([{ "ipv4Address": ip.to_string() }]),
            Self::Cname(host) => {
                p.pointer("/cnameRecord/cname").and_then(Value::as_str) == Some(host.as_str())
            }
        };
        p["ttl"] == json!(TTL) && data
    }
}

fn record_id(arm: &TenantArm, cmd: &StepCommand, record_type: &str) -> String {
    ids::child_id(&zone_id(arm, cmd), record_type, NAME)
}

pub(crate) async fn create(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    let HostedClusterOutputs {
        control_plane_host, ..
    } = cmd.context.outputs_of(&StepId::HostedCluster)?;
    let target = Target::parse(&control_plane_host);
    // The endpoint may have changed kind since an earlier attempt (IP → host name): the old
    // record set must go first, or the CNAME would be refused.
    let other = record_id(arm, cmd, target.other_type());
    if arm
        .client
        .get(&other, PRIVATE_DNS_API)
        .await
        .map_err(step_error)?
        .is_some()
    {
        remove(&arm.client, ops, "DNS record set", &other, PRIVATE_DNS_API).await?;
    }
    let id = record_id(arm, cmd, target.record_type());
    ensure(
        &arm.client,
        ops,
        "DNS record set",
        &id,
        PRIVATE_DNS_API,
        &target.body(),
        |v| target.matches(v),
    )
    .await?;
    Ok(DnsRecordsOutputs { api_record_id: id }.into_outputs())
}

/// What [`create`] would make: the `api` record set of the type the control plane's endpoint
/// calls for. Before HyperShift has reported it (a plan), its type is not known: an `A`
/// record is listed, with a note.
pub(crate) fn plan(arm: &TenantArm, cmd: &StepCommand) -> Result<StepPlan, StepError> {
    let HostedClusterOutputs {
        control_plane_host, ..
    } = cmd.context.outputs_of(&StepId::HostedCluster)?;
    let known = !control_plane_host.is_empty();
    let target = if known {
        Target::parse(&control_plane_host)
    } else {
        Target::A(Ipv4Addr::UNSPECIFIED)
    };
    let id = record_id(arm, cmd, target.record_type());
    let mut change = azure(Verb::Create, &id, PRIVATE_DNS_API, "");
    if !known {
        change.note = "A for the address HyperShift reports for the control plane, CNAME (same name) for a host name".into();
    }
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes: vec![change],
        findings: Vec::new(),
        outputs: DnsRecordsOutputs { api_record_id: id }.into_outputs(),
    })
}

/// Deletes the `api` record set, A or CNAME, whichever exists (absent is success).
pub(crate) async fn delete(arm: &TenantArm, cmd: &StepCommand, ops: &Ops) -> Result<Outputs, Halt> {
    for record_type in ["A", "CNAME"] {
        remove(
            &arm.client,
            ops,
            "DNS record set",
            &record_id(arm, cmd, record_type),
            PRIVATE_DNS_API,
        )
        .await?;
    }
    Ok(Outputs::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_an_a_record() {
        let t = Target::parse("20.1.2.3");
        assert_eq!(t, Target::A(Ipv4Addr::new(20, 1, 2, 3)));
        assert_eq!(t.record_type(), "A");
        assert_eq!(
            t.body(),
            json!({"properties": {"ttl": 300, "aRecords": [{"ipv4Address": "20.1.2.3"}]}})
        );
        assert!(t.matches(&t.body()));
        assert!(!t.matches(&Target::parse("20.1.2.4").body()));
    }

    #[test]
    fn host_name_or_ipv6_is_a_cname() {
        let t = Target::parse("a1b2.eastus.cloudapp.azure.com");
        assert_eq!(t.record_type(), "CNAME");
        assert_eq!(
            t.body(),
            json!({"properties": {"ttl": 300, "cnameRecord": {"cname": "a1b2.eastus.cloudapp.azure.com"}}})
        );
        assert!(t.matches(&t.body()));
        let mut longer = t.body();
        longer["properties"]["ttl"] = json!(3600);
        assert!(!t.matches(&longer));
        assert_eq!(Target::parse("::1").record_type(), "CNAME");
    }
}
