//! What each step outputs, one struct per step. Field names are the output keys: an ARM (or
//! Kubernetes) resource a step made or adopted is `<role>_id`, which is how the saga lists a
//! cluster's resources; anything else must not end in `_id`.
//!
//! When a step's outputs are missing altogether, the first field missing is the one an error
//! names, so each struct lists first what its readers need most.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{StepId, StepOutputs};

macro_rules! outputs_of {
    ($($ty:ty => $step:pat),* $(,)?) => {
        $(
            impl StepOutputs for $ty {
                fn belongs_to(step: &StepId) -> bool {
                    matches!(step, $step)
                }
            }
        )*
    };
}

outputs_of! {
    PublicZoneOutputs => StepId::PublicZone,
    OidcOutputs => StepId::Oidc,
    WorkloadIdentitiesOutputs => StepId::WorkloadIdentities,
    ResourceGroupsOutputs => StepId::ResourceGroups,
    RoleAssignmentsOutputs => StepId::RoleAssignments,
    NsgOutputs => StepId::Nsg,
    VnetOutputs => StepId::Vnet,
    PublicIpOutputs => StepId::PublicIp,
    LoadBalancerOutputs => StepId::LoadBalancer,
    PrivateZoneOutputs => StepId::PrivateZone,
    VnetLinkOutputs => StepId::VnetLink,
    HostedClusterOutputs => StepId::HostedCluster,
    DnsRecordsOutputs => StepId::DnsRecords,
    NodePoolOutputs => StepId::NodePool(_),
    RolloutOutputs => StepId::Rollout,
    AddonOutputs => StepId::Addon(_),
}

/// `identity.oidc`: the tenant's issuer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidcOutputs {
    /// What every federated credential's `issuer` and the HostedCluster's `issuerURL` must
    /// equal byte for byte.
    pub issuer_url: String,
    /// The signing key's id in the published JWKS.
    pub kid: String,
}

/// One workload identity as HyperShift's `azureAuthenticationConfig.workloadIdentities` takes
/// it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadClient {
    #[serde(rename = "clientID")]
    pub client_id: String,
}

/// `identity.workload`: the cluster's managed identities, by their key in HyperShift's
/// `workloadIdentities` (`disk`, `imageRegistry`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadIdentitiesOutputs {
    /// `workload_identities`: HyperShift's `workloadIdentities` object, put into the
    /// HostedCluster as is. (Also read when it arrives as a string holding that object.)
    #[serde(deserialize_with = "object_or_json_string")]
    pub workload_identities: BTreeMap<String, WorkloadClient>,
    /// `workload_principals`: each identity's principal (object) id, for role assignments —
    /// not `_id`-suffixed, as they are not ARM resources.
    pub workload_principals: BTreeMap<String, String>,
    /// `identity_rg_id`: the tenant's persistent identity resource group.
    pub identity_rg_id: String,
    /// `<key>_identity_id`: each identity's ARM id, by key (`disk` → `disk_identity_id`).
    #[serde(flatten, with = "identity_ids")]
    pub identity_ids: BTreeMap<String, String>,
}

/// Reads a JSON object, or a string holding one.
fn object_or_json_string<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(s) => serde_json::from_str(&s),
        other => serde_json::from_value(other),
    }
    .map_err(serde::de::Error::custom)
}

/// `{key: id}` ↔ `{"<key>_identity_id": id}`, flattened into the step's outputs.
mod identity_ids {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    const SUFFIX: &str = "_identity_id";

    pub(super) fn serialize<S: Serializer>(
        ids: &BTreeMap<String, String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_map(ids.iter().map(|(key, id)| (format!("{key}{SUFFIX}"), id)))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        // The other outputs land here too (whatever the struct does not name): keep ours.
        let rest = BTreeMap::<String, Value>::deserialize(deserializer)?;
        rest.into_iter()
            .filter_map(|(k, v)| {
                let key = k.strip_suffix(SUFFIX)?.to_owned();
                Some(match v {
                    Value::String(id) => Ok((key, id)),
                    other => Err(serde::de::Error::custom(format!(
                        "{k} is not a string: {other}"
                    ))),
                })
            })
            .collect()
    }
}

/// `network.resource-groups`: the groups this cluster owns. With a network the user brought,
/// only the managed one (the VNet and NSG live in the user's groups).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceGroupsOutputs {
    pub managed_rg_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnet_rg_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsg_rg_id: Option<String>,
}

/// `identity.role-assignments`: the role assignments made, as ARM ids (not `_id`-suffixed:
/// they are permissions on the cluster's resources, not resources of it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleAssignmentsOutputs {
    pub role_assignments: Vec<String>,
}

/// `network.nsg`: ours, or the user's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NsgOutputs {
    pub nsg_id: String,
}

/// `network.vnet`: ours with its subnet `default`, or the user's VNet and subnet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VnetOutputs {
    pub vnet_id: String,
    pub subnet_id: String,
}

/// `network.public-ip`: the egress load balancer's public IP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicIpOutputs {
    pub public_ip_id: String,
}

/// `network.load-balancer`: the egress load balancer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancerOutputs {
    pub load_balancer_id: String,
}

/// `dns.public-zone`: the user's public zone of the base domain (`*.apps` resolves through
/// it). Not `_id`-suffixed: the cluster uses it but did not make it, and never removes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicZoneOutputs {
    pub public_zone: String,
}

/// `dns.private-zone`: the cluster's private DNS zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateZoneOutputs {
    pub private_zone_id: String,
}

/// `dns.vnet-link`: the zone's link to the VNet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VnetLinkOutputs {
    pub vnet_link_id: String,
}

/// `controlplane.hostedcluster`: the HostedCluster and where its API server listens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostedClusterOutputs {
    /// The endpoint `dns.records` points `api` at: an IPv4 address or a host name.
    pub control_plane_host: String,
    pub control_plane_port: i32,
    /// `hostedclusters.hypershift.openshift.io/<namespace>/<name>`.
    pub hosted_cluster_id: String,
    /// `namespaces/<namespace>`.
    pub namespace_id: String,
}

/// `dns.records`: the `api` record set (A or CNAME).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsRecordsOutputs {
    pub api_record_id: String,
}

/// `nodepool.<pool>`: the NodePool and how many of its nodes were ready.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePoolOutputs {
    /// `nodepools.hypershift.openshift.io/<namespace>/<name>`.
    pub node_pool_id: String,
    pub ready_replicas: i32,
    /// The release every node runs (`status.version`), once a rollout has completed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// `controlplane.addon.<name>`: the add-on's `ObjectDeployment`, available at a version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddonOutputs {
    /// `objectdeployments.package-operator.run/<namespace>/<name>`.
    pub object_deployment_id: String,
    /// The add-on version the cluster runs.
    pub version: String,
    /// Package Operator's revision of the template that is available.
    #[serde(default)]
    pub revision: i64,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{Outputs, StepContext};

    /// The outputs as JSON, as the saga record stores them.
    fn json_of(o: impl StepOutputs) -> Value {
        serde_json::to_value(o.into_outputs()).unwrap()
    }

    /// Producing gives exactly `expected`; reading `expected` back gives the struct.
    fn contract<T: StepOutputs + PartialEq + std::fmt::Debug + Clone>(
        step: StepId,
        outputs: T,
        expected: Value,
    ) {
        assert!(T::belongs_to(&step));
        assert_eq!(json_of(outputs.clone()), expected, "{step}");
        let stored: Outputs = serde_json::from_value(expected).unwrap();
        assert_eq!(T::from_outputs(&step, &stored).unwrap(), outputs, "{step}");
    }

    #[test]
    fn each_step_produces_its_keys() {
        contract(
            StepId::Oidc,
            OidcOutputs {
                issuer_url: "https://i/oidc-acme".into(),
                kid: "k1".into(),
            },
            json!({"issuer_url": "https://i/oidc-acme", "kid": "k1"}),
        );
        contract(
            StepId::ResourceGroups,
            ResourceGroupsOutputs {
                managed_rg_id: "/m".into(),
                vnet_rg_id: Some("/v".into()),
                nsg_rg_id: Some("/n".into()),
            },
            json!({"managed_rg_id": "/m", "vnet_rg_id": "/v", "nsg_rg_id": "/n"}),
        );
        contract(
            StepId::ResourceGroups,
            ResourceGroupsOutputs {
                managed_rg_id: "/m".into(),
                vnet_rg_id: None,
                nsg_rg_id: None,
            },
            json!({"managed_rg_id": "/m"}),
        );
        contract(
            StepId::Nsg,
            NsgOutputs {
                nsg_id: "/nsg".into(),
            },
            json!({"nsg_id": "/nsg"}),
        );
        contract(
            StepId::Vnet,
            VnetOutputs {
                vnet_id: "/v".into(),
                subnet_id: "/v/subnets/default".into(),
            },
            json!({"vnet_id": "/v", "subnet_id": "/v/subnets/default"}),
        );
        contract(
            StepId::PublicIp,
            PublicIpOutputs {
                public_ip_id: "/pip".into(),
            },
            json!({"public_ip_id": "/pip"}),
        );
        contract(
            StepId::LoadBalancer,
            LoadBalancerOutputs {
                load_balancer_id: "/lb".into(),
            },
            json!({"load_balancer_id": "/lb"}),
        );
        contract(
            StepId::PrivateZone,
            PrivateZoneOutputs {
                private_zone_id: "/z".into(),
            },
            json!({"private_zone_id": "/z"}),
        );
        contract(
            StepId::VnetLink,
            VnetLinkOutputs {
                vnet_link_id: "/z/l".into(),
            },
            json!({"vnet_link_id": "/z/l"}),
        );
        contract(
            StepId::HostedCluster,
            HostedClusterOutputs {
                control_plane_host: "20.1.2.3".into(),
                control_plane_port: 443,
                hosted_cluster_id: "hostedclusters.hypershift.openshift.io/ns/demo".into(),
                namespace_id: "namespaces/ns".into(),
            },
            json!({
                "hosted_cluster_id": "hostedclusters.hypershift.openshift.io/ns/demo",
                "namespace_id": "namespaces/ns",
                "control_plane_host": "20.1.2.3",
                "control_plane_port": 443,
            }),
        );
        contract(
            StepId::DnsRecords,
            DnsRecordsOutputs {
                api_record_id: "/z/A/api".into(),
            },
            json!({"api_record_id": "/z/A/api"}),
        );
        contract(
            StepId::node_pool("workers"),
            NodePoolOutputs {
                node_pool_id: "nodepools.hypershift.openshift.io/ns/demo-workers".into(),
                ready_replicas: 3,
                version: String::new(),
            },
            json!({
                "node_pool_id": "nodepools.hypershift.openshift.io/ns/demo-workers",
                "ready_replicas": 3,
            }),
        );
    }

    fn workload() -> WorkloadIdentitiesOutputs {
        let client = |c: &str| WorkloadClient {
            client_id: c.into(),
        };
        WorkloadIdentitiesOutputs {
            workload_identities: BTreeMap::from([
                ("disk".into(), client("c1")),
                ("imageRegistry".into(), client("c2")),
            ]),
            workload_principals: BTreeMap::from([
                ("disk".into(), "p1".into()),
                ("imageRegistry".into(), "p2".into()),
            ]),
            identity_rg_id: "/rg".into(),
            identity_ids: BTreeMap::from([
                ("disk".into(), "/d".into()),
                ("imageRegistry".into(), "/r".into()),
            ]),
        }
    }

    #[test]
    fn workload_identities_keep_their_keys() {
        let expected = json!({
            "workload_identities": {"disk": {"clientID": "c1"}, "imageRegistry": {"clientID": "c2"}},
            "workload_principals": {"disk": "p1", "imageRegistry": "p2"},
            "disk_identity_id": "/d",
            "imageRegistry_identity_id": "/r",
            "identity_rg_id": "/rg",
        });
        contract(StepId::WorkloadIdentities, workload(), expected.clone());
        // Only ARM resource ids end in `_id`.
        let out = workload().into_outputs();
        assert_eq!(out.keys().filter(|k| k.ends_with("_id")).count(), 3);
        // Byte for byte what the step always wrote (both are sorted maps).
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        // HyperShift's object may also arrive as a string holding it.
        let mut stored: Outputs = serde_json::from_value(expected).unwrap();
        let object = stored["workload_identities"].to_string();
        stored.insert("workload_identities".into(), Value::String(object));
        assert_eq!(
            WorkloadIdentitiesOutputs::from_outputs(&StepId::WorkloadIdentities, &stored).unwrap(),
            workload()
        );
    }

    fn context(outputs: &[(StepId, Value)]) -> StepContext {
        let spec = hypersaga_model::ClusterSpec {
            location: "eastus".into(),
            base_domain: "example.com".into(),
            release_image: "x".into(),
            node_pools: Vec::new(),
            network: Default::default(),
            addons: Vec::new(),
        };
        let tenant = hypersaga_model::TenantId::new("acme").unwrap();
        StepContext {
            cluster_uid: "uid".into(),
            names: hypersaga_model::Names::new(&tenant, "demo", "demo-x", "example.com"),
            spec,
            outputs: outputs
                .iter()
                .map(|(s, o)| (s.to_string(), serde_json::from_value(o.clone()).unwrap()))
                .collect(),
            management_cluster: "default".into(),
        }
    }

    #[test]
    fn reading_names_what_is_missing() {
        let ctx = context(&[
            (StepId::Nsg, json!({"nsg_id": "/nsg"})),
            (StepId::Vnet, json!({"vnet_id": "/v"})),
            (
                StepId::HostedCluster,
                json!({"control_plane_host": "h", "control_plane_port": "443",
                       "hosted_cluster_id": "x", "namespace_id": "y"}),
            ),
        ]);
        assert_eq!(
            ctx.outputs_of::<NsgOutputs>(&StepId::Nsg).unwrap().nsg_id,
            "/nsg"
        );

        // The step never reported: the first key is named.
        let e = ctx.outputs_of::<OidcOutputs>(&StepId::Oidc).unwrap_err();
        assert_eq!(e.info.code, "MissingStepOutput");
        assert!(!e.is_retryable());
        assert_eq!(e.info.target.as_deref(), Some("identity.oidc.issuer_url"));
        // A key of the wrong type.
        let e = ctx
            .outputs_of::<HostedClusterOutputs>(&StepId::HostedCluster)
            .unwrap_err();
        assert_eq!(e.info.code, "MissingStepOutput");
        assert_eq!(
            e.info.target.as_deref(),
            Some("controlplane.hostedcluster.control_plane_port")
        );

        // One key missing.
        let e = ctx.outputs_of::<VnetOutputs>(&StepId::Vnet).unwrap_err();
        assert_eq!(e.info.code, "MissingStepOutput");
        assert_eq!(e.info.target.as_deref(), Some("network.vnet.subnet_id"));
        assert!(e.info.message.contains("subnet_id"), "{e}");

        // The wrong struct for the step.
        let e = ctx.outputs_of::<VnetOutputs>(&StepId::Nsg).unwrap_err();
        assert_eq!(e.info.code, "MissingStepOutput");
    }

    #[test]
    fn missing_endpoint_is_named_first() {
        let e = context(&[])
            .outputs_of::<HostedClusterOutputs>(&StepId::HostedCluster)
            .unwrap_err();
        assert_eq!(
            e.info.target.as_deref(),
            Some("controlplane.hostedcluster.control_plane_host")
        );
    }
}

/// `controlplane.rollout`: the release now running, as the version history says (empty when
/// the cluster has no nodes to roll it out on).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutOutputs {
    pub version: String,
    /// The HostedCluster's version history when the rollout completed, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<hypersaga_model::record::VersionEntry>,
}
