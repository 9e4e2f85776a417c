//! The step contract shared by the saga engine and the step services: which steps there are
//! ([`StepId`]), which service owns each ([`Service`]), and what each one outputs for the steps
//! after it (one struct per step, see [`StepOutputs`]).
//!
//! On the wire (step commands and events, the saga record, subjects and `Nats-Msg-Id`s) a step
//! id stays the string it always was — `network.vnet`, `nodepool.<pool>` — and outputs stay a
//! JSON object per step with the same keys: [`StepId`] displays, parses and (de)serializes as
//! that string, and every outputs struct serializes to exactly the object its step has always
//! produced. Producers build the struct ([`StepOutputs::into_outputs`]); consumers read it back
//! with [`StepContext::outputs_of`](crate::StepContext::outputs_of).

mod outputs;

use std::fmt;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{Outputs, StepError};

pub use outputs::*;

/// The services that own steps: commands for a step go to `<p>.<tenant>.cmd.<service>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Service {
    Identity,
    Network,
    Dns,
    ControlPlane,
    NodePool,
}

impl Service {
    /// Every step service.
    pub const ALL: [Self; 5] = [
        Self::Identity,
        Self::Network,
        Self::Dns,
        Self::ControlPlane,
        Self::NodePool,
    ];

    /// The service's name: the first segment of its step ids, and its command subject's last.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Network => "network",
            Self::Dns => "dns",
            Self::ControlPlane => "controlplane",
            Self::NodePool => "nodepool",
        }
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step of the create plan, owned by one [`Service`].
///
/// Displayed, parsed and (de)serialized as its wire id (`identity.oidc`, `nodepool.workers`),
/// and comparable with a string holding one (`record.id == StepId::Vnet`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepId {
    /// `dns.public-zone`: the public DNS zone of the base domain, which the user owns (looked
    /// up, never written).
    PublicZone,
    /// `identity.oidc`: the tenant's OIDC issuer, shared by all its clusters.
    Oidc,
    /// `identity.workload`: the cluster's workload identities and federated credentials.
    WorkloadIdentities,
    /// `identity.role-assignments`: what each workload identity may do, and where.
    RoleAssignments,
    /// `network.resource-groups`: the managed RG, and the VNet and NSG RGs unless brought.
    ResourceGroups,
    /// `network.nsg`: the network security group.
    Nsg,
    /// `network.vnet`: the virtual network and its subnet.
    Vnet,
    /// `network.public-ip`: the egress load balancer's public IP.
    PublicIp,
    /// `network.load-balancer`: the egress load balancer.
    LoadBalancer,
    /// `dns.private-zone`: the private DNS zone.
    PrivateZone,
    /// `dns.vnet-link`: the private zone's link to the VNet.
    VnetLink,
    /// `controlplane.hostedcluster`: the HostedCluster on the management cluster.
    HostedCluster,
    /// `dns.records`: the `api` record pointing at the control plane.
    DnsRecords,
    /// `nodepool.<pool>`: one node pool of the cluster spec, by name.
    NodePool(String),
    /// `controlplane.rollout`: the release's rollout completed on the cluster's nodes (what
    /// `hypershift create cluster --wait` waits for).
    Rollout,
    /// `controlplane.addon.<name>`: one add-on of the cluster spec, by name: its
    /// `ObjectDeployment` in the control-plane namespace, rolled out by Package Operator.
    Addon(String),
    /// `<service>._sweep`: everything the service tagged or labelled for a cluster no live
    /// record owns, deleted (a `sweep` operation). No pool or add-on can be named `_sweep`
    /// (their names are DNS labels), so `nodepool._sweep` is never a pool's step.
    Sweep(Service),
}

/// Wire ids start with this for node pool steps: `nodepool.<pool>`.
const NODE_POOL_PREFIX: &str = "nodepool.";
/// Wire ids start with this for add-on steps: `controlplane.addon.<name>`.
const ADDON_PREFIX: &str = "controlplane.addon.";

impl StepId {
    /// Every step that is not a node pool or an add-on, in create-plan order.
    pub const FIXED: [Self; 14] = [
        Self::PublicZone,
        Self::Oidc,
        Self::WorkloadIdentities,
        Self::ResourceGroups,
        Self::RoleAssignments,
        Self::Nsg,
        Self::Vnet,
        Self::PublicIp,
        Self::LoadBalancer,
        Self::PrivateZone,
        Self::VnetLink,
        Self::HostedCluster,
        Self::DnsRecords,
        Self::Rollout,
    ];

    /// The step of node pool `pool`.
    pub fn node_pool(pool: impl Into<String>) -> Self {
        Self::NodePool(pool.into())
    }

    /// The step of add-on `name`.
    pub fn addon(name: impl Into<String>) -> Self {
        Self::Addon(name.into())
    }

    /// The service that runs this step.
    pub fn service(&self) -> Service {
        match self {
            Self::Oidc | Self::WorkloadIdentities | Self::RoleAssignments => Service::Identity,
            Self::ResourceGroups | Self::Nsg | Self::Vnet | Self::PublicIp | Self::LoadBalancer => {
                Service::Network
            }
            Self::PublicZone | Self::PrivateZone | Self::VnetLink | Self::DnsRecords => {
                Service::Dns
            }
            Self::HostedCluster | Self::Rollout | Self::Addon(_) => Service::ControlPlane,
            Self::NodePool(_) => Service::NodePool,
            Self::Sweep(service) => *service,
        }
    }

    /// The pool name of a node pool step.
    pub fn pool(&self) -> Option<&str> {
        match self {
            Self::NodePool(pool) => Some(pool),
            _ => None,
        }
    }

    /// The add-on name of an add-on step.
    pub fn addon_name(&self) -> Option<&str> {
        match self {
            Self::Addon(name) => Some(name),
            _ => None,
        }
    }

    /// The wire id as a fixed head and, for a node pool or an add-on, its name after it.
    fn parts(&self) -> (&'static str, Option<&str>) {
        let head = match self {
            Self::PublicZone => "dns.public-zone",
            Self::Oidc => "identity.oidc",
            Self::WorkloadIdentities => "identity.workload",
            Self::RoleAssignments => "identity.role-assignments",
            Self::ResourceGroups => "network.resource-groups",
            Self::Nsg => "network.nsg",
            Self::Vnet => "network.vnet",
            Self::PublicIp => "network.public-ip",
            Self::LoadBalancer => "network.load-balancer",
            Self::PrivateZone => "dns.private-zone",
            Self::VnetLink => "dns.vnet-link",
            Self::HostedCluster => "controlplane.hostedcluster",
            Self::DnsRecords => "dns.records",
            Self::Rollout => "controlplane.rollout",
            Self::Sweep(service) => sweep_id(*service),
            Self::NodePool(pool) => return (NODE_POOL_PREFIX, Some(pool)),
            Self::Addon(name) => return (ADDON_PREFIX, Some(name)),
        };
        (head, None)
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (head, pool) = self.parts();
        f.write_str(head)?;
        if let Some(pool) = pool {
            f.write_str(pool)?;
        }
        Ok(())
    }
}

/// The wire id of a service's sweep step (`_` keeps it apart from every pool's and add-on's).
const fn sweep_id(service: Service) -> &'static str {
    match service {
        Service::Identity => "identity._sweep",
        Service::Network => "network._sweep",
        Service::Dns => "dns._sweep",
        Service::ControlPlane => "controlplane._sweep",
        Service::NodePool => "nodepool._sweep",
    }
}

/// A string that names no step of the plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown step id {0:?}")]
pub struct UnknownStepId(pub String);

impl FromStr for StepId {
    type Err = UnknownStepId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(service) = Service::ALL.into_iter().find(|v| sweep_id(*v) == s) {
            return Ok(Self::Sweep(service));
        }
        for (prefix, make) in [
            (NODE_POOL_PREFIX, Self::NodePool as fn(String) -> Self),
            (ADDON_PREFIX, Self::Addon),
        ] {
            if let Some(name) = s.strip_prefix(prefix) {
                return if name.is_empty() {
                    Err(UnknownStepId(s.to_owned()))
                } else {
                    Ok(make(name.to_owned()))
                };
            }
        }
        Self::FIXED
            .into_iter()
            .find(|id| id.parts().0 == s)
            .ok_or_else(|| UnknownStepId(s.to_owned()))
    }
}

impl Serialize for StepId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StepId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl PartialEq<str> for StepId {
    fn eq(&self, other: &str) -> bool {
        match self.parts() {
            (head, None) => other == head,
            (head, Some(pool)) => other.strip_prefix(head) == Some(pool),
        }
    }
}

impl PartialEq<&str> for StepId {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl PartialEq<String> for StepId {
    fn eq(&self, other: &String) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<StepId> for str {
    fn eq(&self, other: &StepId) -> bool {
        other == self
    }
}

impl PartialEq<StepId> for &str {
    fn eq(&self, other: &StepId) -> bool {
        other == *self
    }
}

impl PartialEq<StepId> for String {
    fn eq(&self, other: &StepId) -> bool {
        other == self.as_str()
    }
}

impl From<StepId> for String {
    fn from(id: StepId) -> Self {
        id.to_string()
    }
}

/// What one step outputs for the steps after it: a struct whose JSON object is exactly the
/// step's [`Outputs`] (same keys, same values), so the saga record, the events on the bus and
/// the saga's list of a cluster's resources (every `*_id` output) see what they always saw.
/// Implementors must serialize to a JSON object (a struct, not a scalar or sequence).
pub trait StepOutputs: Serialize + DeserializeOwned {
    /// Whether these are the outputs of `step` (for node pools: of any `nodepool.<pool>`).
    fn belongs_to(step: &StepId) -> bool;

    /// These outputs, as a step's result carries them.
    fn into_outputs(self) -> Outputs {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map.into_iter().collect(),
            // Every implementor is a struct of strings, numbers and string-keyed maps.
            other => unreachable!("step outputs must serialize to a JSON object, not {other:?}"),
        }
    }

    /// Reads them from the outputs `step` produced. Anything missing or unreadable is the
    /// terminal `MissingStepOutput`, naming the step and the key: the DAG runs `step` first, so
    /// it is a plan bug (or a version skew), not something retrying heals.
    fn from_outputs(step: &StepId, outputs: &Outputs) -> Result<Self, StepError> {
        if !Self::belongs_to(step) {
            return Err(StepError::terminal(
                "MissingStepOutput",
                format!(
                    "step {step} has no {} outputs",
                    std::any::type_name::<Self>()
                ),
            )
            .with_target(step.to_string()));
        }
        let object: Map<String, Value> = outputs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
            let key = e.path().iter().find_map(|s| match s {
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                _ => None,
            });
            let message = e.inner().to_string();
            match key {
                Some(key) => StepError::terminal(
                    "MissingStepOutput",
                    format!("output {key:?} of step {step} cannot be read: {message}"),
                )
                .with_target(format!("{step}.{key}")),
                None => match missing_field(&message) {
                    Some(key) => StepError::missing_output(step, key),
                    None => StepError::terminal(
                        "MissingStepOutput",
                        format!("the outputs of step {step} cannot be read: {message}"),
                    )
                    .with_target(step.to_string()),
                },
            }
        })
    }
}

/// The field serde's "missing field `x`" names.
fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(key, _)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_ids_round_trip() {
        let wire = [
            (StepId::Oidc, "identity.oidc", Service::Identity),
            (
                StepId::WorkloadIdentities,
                "identity.workload",
                Service::Identity,
            ),
            (
                StepId::ResourceGroups,
                "network.resource-groups",
                Service::Network,
            ),
            (StepId::PublicZone, "dns.public-zone", Service::Dns),
            (
                StepId::RoleAssignments,
                "identity.role-assignments",
                Service::Identity,
            ),
            (StepId::Nsg, "network.nsg", Service::Network),
            (StepId::Vnet, "network.vnet", Service::Network),
            (StepId::PublicIp, "network.public-ip", Service::Network),
            (
                StepId::LoadBalancer,
                "network.load-balancer",
                Service::Network,
            ),
            (StepId::PrivateZone, "dns.private-zone", Service::Dns),
            (StepId::VnetLink, "dns.vnet-link", Service::Dns),
            (
                StepId::HostedCluster,
                "controlplane.hostedcluster",
                Service::ControlPlane,
            ),
            (StepId::DnsRecords, "dns.records", Service::Dns),
            (
                StepId::Rollout,
                "controlplane.rollout",
                Service::ControlPlane,
            ),
            (
                StepId::node_pool("workers"),
                "nodepool.workers",
                Service::NodePool,
            ),
            (StepId::node_pool("a.b"), "nodepool.a.b", Service::NodePool),
        ];
        for service in Service::ALL {
            let id = StepId::Sweep(service);
            assert_eq!(id.to_string(), format!("{service}._sweep"));
            assert_eq!(id.to_string().parse::<StepId>(), Ok(id.clone()));
            assert_eq!(id.service(), service);
        }
        assert_eq!(
            "nodepool.sweep".parse::<StepId>(),
            Ok(StepId::node_pool("sweep")),
            "a pool may be named sweep"
        );
        assert_eq!(
            wire.iter().filter(|(id, _, _)| id.pool().is_none()).count(),
            StepId::FIXED.len(),
            "every fixed step is listed"
        );
        for (id, s, service) in wire {
            assert_eq!(id.to_string(), s);
            assert_eq!(s.parse::<StepId>(), Ok(id.clone()));
            assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{s}\""));
            assert_eq!(
                serde_json::from_str::<StepId>(&format!("\"{s}\"")).unwrap(),
                id
            );
            assert_eq!(id.service(), service);
            assert!(s.starts_with(&format!("{}.", service.as_str())));
            let owned = s.to_owned();
            assert_eq!(id, s);
            assert_eq!(s, id);
            assert_eq!(id, owned);
            assert_eq!(owned, id);
            assert_eq!(id, *s);
            assert_eq!(*s, id);
        }
    }

    #[test]
    fn unknown_ids_are_refused() {
        for s in [
            "",
            "network",
            "network.bogus",
            "identity.roles",
            "dns.public-zones",
            "nodepool.",
            "nodepool",
            "bench.step-1",
            "NETWORK.VNET",
        ] {
            assert_eq!(s.parse::<StepId>(), Err(UnknownStepId(s.to_owned())), "{s}");
            assert!(serde_json::from_str::<StepId>(&format!("\"{s}\"")).is_err());
        }
        assert!(StepId::Vnet != "network.vnet2");
        assert!(StepId::node_pool("a") != "nodepool.ab");
        assert!(StepId::node_pool("a") != "network.a");
    }

    #[test]
    fn service_names() {
        let names: Vec<_> = Service::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            ["identity", "network", "dns", "controlplane", "nodepool"]
        );
        for id in StepId::FIXED {
            assert!(Service::ALL.contains(&id.service()));
        }
    }
}
