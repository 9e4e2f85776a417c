//! Microsoft's own Python clients, unmodified, against the ARM + Entra emulator: after two
//! creates, `azure-identity`'s `ClientSecretCredential` and the newest `azure-mgmt-resource`,
//! `-network`, `-msi`, `-privatedns`, `-authorization` and `-compute` (`tests/python/azure_sdk_reads.py`,
//! installed into `.venv` by `scripts/setup.sh`) list and read exactly what ARM holds.
//!
//! Two clusters rather than one: their 36 role assignments overflow the emulator's page of 20,
//! so the authorization client follows a `nextLink`.

use std::collections::{BTreeMap, BTreeSet};

use hypersaga_model::identities::{ROLE_GRANTS, WORKLOAD_IDENTITIES};
use serde_json::Value;

use crate::support::*;

const CLUSTERS: [&str; 2] = ["alpha", "beta"];

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn items<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("no {pointer}"))
}

fn ids(v: &[Value]) -> BTreeSet<String> {
    v.iter().map(|x| s(&x["id"])).collect()
}

/// What the SDKs report as `{id: value}`, and what the inventory holds.
fn by_id(v: &[Value], f: impl Fn(&Value) -> Value) -> BTreeMap<String, Value> {
    v.iter().map(|x| (s(&x["id"]), f(x))).collect()
}

#[tokio::test]
async fn microsofts_python_sdks_read_what_a_create_made() {
    let system = System::start().await;
    let sub = system.subscription("acme");
    for name in CLUSTERS {
        system.create("acme", name, 1).await;
    }
    let mut infra = BTreeMap::new();
    for name in CLUSTERS {
        let done = system.watch_to_end("acme", name).await;
        assert_eq!(phase(&done), "ready", "{done:#?}");
        infra.insert(name, done.status.expect("status").infra_id);
    }

    let found = azure_sdk_reads(&system, "acme").await;
    assert_eq!(found["subscriptionId"], sub.as_str());
    let inventory = system.inventory("acme").await;
    let of_type = |t: &str| -> Vec<Value> {
        inventory
            .iter()
            .filter(|r| r["type"].as_str() == Some(t))
            .cloned()
            .collect()
    };

    // Resource groups and the network, by id as ARM spells them.
    assert_eq!(
        ids(items(&found, "/resourceGroups")),
        ids(&of_type("Microsoft.Resources/resourceGroups"))
    );
    for (key, rtype) in [
        ("virtualNetworks", "Microsoft.Network/virtualNetworks"),
        (
            "networkSecurityGroups",
            "Microsoft.Network/networkSecurityGroups",
        ),
        ("publicIPAddresses", "Microsoft.Network/publicIPAddresses"),
        ("loadBalancers", "Microsoft.Network/loadBalancers"),
    ] {
        let sdk = ids(items(&found, &format!("/network/{key}")));
        assert_eq!(sdk, ids(&of_type(rtype)), "{key}");
        assert_eq!(sdk.len(), CLUSTERS.len(), "{key}: one per cluster");
    }
    let vnets = of_type("Microsoft.Network/virtualNetworks");
    let subnets: BTreeSet<String> = vnets
        .iter()
        .flat_map(|v| ids(items(v, "/properties/subnets")))
        .collect();
    assert_eq!(ids(items(&found, "/network/subnets")), subnets);
    assert_eq!(
        by_id(items(&found, "/network/virtualNetworks"), |v| v["subnets"]
            .clone()),
        by_id(&vnets, |v| Value::from(
            ids(items(v, "/properties/subnets"))
                .into_iter()
                .collect::<Vec<_>>()
        )),
        "each VNet's subnets"
    );
    assert_eq!(
        by_id(items(&found, "/network/subnets"), |v| {
            v["networkSecurityGroup"].clone()
        }),
        vnets
            .iter()
            .flat_map(|v| items(v, "/properties/subnets").to_vec())
            .map(|sn| (
                s(&sn["id"]),
                sn["properties"]["networkSecurityGroup"]["id"].clone()
            ))
            .collect(),
        "each subnet's NSG"
    );
    assert_eq!(
        by_id(items(&found, "/network/loadBalancers"), |v| {
            v["frontendIPConfigurations"][0]["publicIPAddress"].clone()
        }),
        by_id(&of_type("Microsoft.Network/loadBalancers"), |v| v
            .pointer("/properties/frontendIPConfigurations/0/properties/publicIPAddress/id")
            .cloned()
            .unwrap_or_default()),
        "each load balancer's public IP"
    );

    // Identities and their federated credentials.
    let identities = items(&found, "/identities");
    assert_eq!(
        by_id(identities, |v| serde_json::json!([
            v["clientId"],
            v["principalId"],
            v["tenantId"]
        ])),
        by_id(
            &of_type("Microsoft.ManagedIdentity/userAssignedIdentities"),
            |v| serde_json::json!([
                v["properties"]["clientId"],
                v["properties"]["principalId"],
                v["properties"]["tenantId"]
            ])
        ),
        "identities: client, principal and tenant ids"
    );
    assert_eq!(identities.len(), CLUSTERS.len() * WORKLOAD_IDENTITIES.len());
    let fics: Vec<Value> = identities
        .iter()
        .flat_map(|i| items(i, "/federatedIdentityCredentials").to_vec())
        .collect();
    let stored_fics =
        of_type("Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials");
    assert_eq!(
        by_id(&fics, |v| serde_json::json!([
            v["issuer"],
            v["subject"],
            v["audiences"]
        ])),
        by_id(&stored_fics, |v| serde_json::json!([
            v["properties"]["issuer"],
            v["properties"]["subject"],
            v["properties"]["audiences"]
        ])),
        "federated credentials: issuer, subject, audiences"
    );
    for i in identities {
        let id = s(&i["id"]).to_ascii_lowercase();
        for fic in items(i, "/federatedIdentityCredentials") {
            assert!(
                s(&fic["id"])
                    .to_ascii_lowercase()
                    .starts_with(&format!("{id}/federatedidentitycredentials/")),
                "{fic} listed under {id}"
            );
        }
    }
    let per_cluster: usize = WORKLOAD_IDENTITIES
        .iter()
        .map(|w| w.credentials.len())
        .sum();
    assert_eq!(fics.len(), CLUSTERS.len() * per_cluster);

    // The private zones and their links.
    let zones = items(&found, "/privateDnsZones");
    assert_eq!(
        ids(zones),
        ids(&of_type("Microsoft.Network/privateDnsZones"))
    );
    let links: Vec<Value> = zones
        .iter()
        .flat_map(|z| items(z, "/virtualNetworkLinks").to_vec())
        .collect();
    assert_eq!(
        by_id(&links, |v| serde_json::json!([
            v["virtualNetwork"],
            v["registrationEnabled"]
        ])),
        by_id(
            &of_type("Microsoft.Network/privateDnsZones/virtualNetworkLinks"),
            |v| serde_json::json!([
                v["properties"]["virtualNetwork"]["id"],
                v["properties"]["registrationEnabled"]
            ])
        ),
        "VNet links: the VNet and registration"
    );
    assert_eq!(links.len(), CLUSTERS.len(), "one link per zone");
    for name in CLUSTERS {
        assert!(
            zones
                .iter()
                .any(|z| z["name"] == format!("{name}.example.com")),
            "{name}'s zone in {zones:#?}"
        );
    }

    // Role assignments: every one ARM holds, through a nextLink, and each RG's at its scope.
    let stored = system
        .arm_admin()
        .role_assignments(Some(&sub))
        .await
        .expect("role assignments");
    let assignment = |v: &Value| {
        serde_json::json!([
            v["roleDefinitionId"],
            v["principalId"],
            v["principalType"],
            v["scope"]
        ])
    };
    let at_sub = items(&found, "/roleAssignments/subscription");
    assert_eq!(
        by_id(at_sub, assignment),
        by_id(&stored, |v| assignment(&v["properties"])),
        "role assignments at the subscription's scope"
    );
    let grants: usize = ROLE_GRANTS.iter().map(|g| g.scopes.len()).sum();
    // And the two the tenant's administrator gave hypersaga's application at onboarding
    // (Contributor and Role Based Access Control Administrator on the subscription).
    assert_eq!(at_sub.len(), CLUSTERS.len() * grants + 2);
    assert!(
        found["roleAssignments"]["subscriptionPages"].as_u64() >= Some(2),
        "the list followed a nextLink: {}",
        found["roleAssignments"]["subscriptionPages"]
    );
    for g in items(&found, "/resourceGroups") {
        let rg_id = s(&g["id"]).to_ascii_lowercase();
        let sub_scope = format!("/subscriptions/{sub}").to_ascii_lowercase();
        // The group's own, and those it inherits from the subscription (hypersaga's, given at
        // onboarding), as ARM lists a group's role assignments.
        let expected: BTreeSet<String> = stored
            .iter()
            .filter(|a| {
                let scope = s(&a["properties"]["scope"]).to_ascii_lowercase();
                scope == rg_id || scope == sub_scope
            })
            .map(|a| s(&a["id"]))
            .collect();
        let listed = ids(items(
            &found,
            &format!("/roleAssignments/resourceGroups/{}", s(&g["name"])),
        ));
        assert_eq!(listed, expected, "role assignments at {rg_id}");
    }

    // Each identity holds its roles at as many scopes as the product grants them.
    let principal_of: BTreeMap<String, String> = identities
        .iter()
        .map(|i| (s(&i["name"]), s(&i["principalId"])))
        .collect();
    for (name, infra) in &infra {
        for g in ROLE_GRANTS {
            let w = WORKLOAD_IDENTITIES
                .iter()
                .find(|w| w.key == g.identity)
                .expect("identity");
            let identity = format!("{name}-{}-{infra}", w.suffix);
            let principal = principal_of.get(&identity).expect(&identity);
            let held = at_sub
                .iter()
                .filter(|a| {
                    s(&a["principalId"]) == *principal
                        && s(&a["roleDefinitionId"]).ends_with(&format!("/{}", g.role))
                })
                .count();
            assert_eq!(held, g.scopes.len(), "{identity} holds {}", g.component);
        }
    }

    // The role definitions the assignments reference, read by id.
    let definitions = items(&found, "/roleAssignments/roleDefinitions");
    let referenced: BTreeSet<String> = at_sub.iter().map(|a| s(&a["roleDefinitionId"])).collect();
    assert_eq!(ids(definitions), referenced);
    // The workload identities' roles, and the two hypersaga's application holds (Contributor
    // and Role Based Access Control Administrator, given at onboarding).
    let roles: BTreeSet<String> = ROLE_GRANTS
        .iter()
        .map(|g| g.role.to_owned())
        .chain([
            hypersaga_emulator_arm::tenant_admin::CONTRIBUTOR.to_owned(),
            hypersaga_emulator_arm::tenant_admin::RBAC_ADMINISTRATOR.to_owned(),
        ])
        .collect();
    assert_eq!(
        definitions
            .iter()
            .map(|d| s(&d["name"]))
            .collect::<BTreeSet<_>>(),
        roles
    );
    for d in definitions {
        assert_eq!(d["roleType"], "BuiltInRole", "{d}");
        assert!(!s(&d["roleName"]).is_empty(), "{d}");
    }
}
