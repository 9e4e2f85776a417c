//! A cluster's whole life: create → Ready → delete → Deleted, checked against what Azure
//! (the ARM emulator), the management cluster and the audit stream show.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use hypersaga_api::v1 as pb;
use hypersaga_azure::ArmClient;
use serde_json::Value;

use crate::support::*;

/// `type name` of every resource ARM's inventory lists for the subscription.
async fn inventory(arm: &ArmClient, sub: &str) -> BTreeSet<String> {
    arm.list(&format!("/subscriptions/{sub}/resources"), "2021-04-01")
        .await
        .expect("inventory")
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["type"].as_str().unwrap_or("?"),
                r["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

async fn resource_groups(arm: &ArmClient, sub: &str) -> BTreeSet<String> {
    arm.list(
        &format!("/subscriptions/{sub}/resourcegroups"),
        "2021-04-01",
    )
    .await
    .expect("resource groups")
    .iter()
    .map(|r| r["name"].as_str().unwrap_or("?").to_owned())
    .collect()
}

const IDENTITY_SUFFIXES: [&str; 8] = [
    "disk",
    "file",
    "image-registry",
    "ingress",
    "cloud-provider",
    "node-pool-mgmt",
    "network",
    "control-plane-operator",
];

fn identities(name: &str, infra: &str) -> BTreeSet<String> {
    IDENTITY_SUFFIXES
        .iter()
        .map(|s| format!("Microsoft.ManagedIdentity/userAssignedIdentities {name}-{s}-{infra}"))
        .collect()
}

#[tokio::test]
async fn create_ready_delete_with_exact_resources_and_a_causal_audit_trail() {
    let system = System::start().await;
    let sub = system.subscription("acme");
    let arm = system.arm("acme");

    let op = system.create("acme", "demo", 2).await;
    assert_eq!(hypersaga::output::op_kind(op.kind), "create");
    let ready = system.watch_to_end("acme", "demo").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let status = ready.status.clone().expect("status");
    let infra = status.infra_id.clone();
    assert!(
        steps(&ready).values().all(|(s, _)| s == "succeeded"),
        "{:?}",
        steps(&ready)
    );

    // Azure holds exactly what `hypershift create iam/infra azure` would create.
    let mut expected: BTreeSet<String> = [
        format!("Microsoft.Network/networkSecurityGroups demo-{infra}-nsg"),
        format!("Microsoft.Network/virtualNetworks demo-{infra}"),
        format!("Microsoft.Network/publicIPAddresses {infra}"),
        format!("Microsoft.Network/loadBalancers {infra}"),
        "Microsoft.Network/privateDnsZones demo.example.com".to_string(),
        // The user's own public zone, which the cluster only looks up.
        "Microsoft.Network/dnsZones example.com".to_string(),
    ]
    .into_iter()
    .collect();
    expected.extend(identities("demo", &infra));
    let inv = inventory(&arm, &sub).await;
    let links: Vec<&String> = inv
        .iter()
        .filter(|r| r.starts_with("Microsoft.Network/privateDnsZones/virtualNetworkLinks"))
        .collect();
    assert_eq!(links.len(), 1, "one VNet link: {inv:#?}");
    assert!(links[0].ends_with(&format!("demo-{infra}")), "{links:?}");
    // The NodePool's two workers, as CAPZ makes them (the `workers` e2e test checks them).
    let is_worker = |r: &String| {
        ["virtualMachines ", "disks ", "networkInterfaces "]
            .iter()
            .any(|t| r.contains(t))
    };
    assert_eq!(inv.iter().filter(|r| is_worker(r)).count(), 6, "{inv:#?}");
    let without_links: BTreeSet<String> = inv
        .iter()
        .filter(|r| !r.contains("virtualNetworkLinks") && !is_worker(r))
        .cloned()
        .collect();
    assert_eq!(without_links, expected);
    assert_eq!(
        resource_groups(&arm, &sub).await,
        [
            format!("demo-{infra}"),
            format!("demo-vnet-{infra}"),
            format!("demo-nsg-{infra}"),
            "hcp-acme-identities".to_string(),
            "dns".to_string(),
        ]
        .into_iter()
        .collect()
    );

    // Each identity holds its roles on the cluster's groups and the ingress operator on the
    // public zone's (docs/reference/hypershift-azure.md §2.4: 18 grants of 8 identities), each
    // granted to it as a service principal.
    // (Beside the two the tenant's administrator gave hypersaga's application on the whole
    // subscription at onboarding.)
    let grants: Vec<_> = system
        .arm_admin()
        .role_assignments(Some(&sub))
        .await
        .expect("role assignments")
        .into_iter()
        .filter(|g| g["properties"]["scope"] != format!("/subscriptions/{sub}").as_str())
        .collect();
    assert_eq!(grants.len(), 18, "{grants:#?}");
    assert!(
        grants
            .iter()
            .all(|g| g["properties"]["principalType"] == "ServicePrincipal"),
        "{grants:#?}"
    );

    // Every write used the api-version of the reference (docs/reference/hypershift-azure.md §1–§2).
    let stats = system.arm_admin().requests().await.expect("requests");
    let puts: Vec<_> = stats.recent.iter().filter(|r| r.method == "PUT").collect();
    assert!(puts.len() >= 20, "{puts:#?}");
    for r in puts {
        let ty = r.resource_type.as_str();
        let expected = if ty.ends_with("resourceGroups") {
            "2021-04-01"
        } else if ty == "Microsoft.Network/dnsZones" {
            // The user's public zone, made by `hypersaga dev` before any cluster.
            "2018-05-01"
        } else if ty.starts_with("Microsoft.Network/privateDnsZones") {
            "2024-06-01"
        } else if ty == "Microsoft.Network/networkInterfaces" {
            // CAPZ's, for the workers: armnetwork/v4 and armcompute/v5.
            "2023-05-01"
        } else if ty == "Microsoft.Compute/virtualMachines" {
            "2024-03-01"
        } else if ty.starts_with("Microsoft.Network/") {
            "2023-11-01"
        } else if ty.starts_with("Microsoft.ManagedIdentity/") {
            "2024-11-30"
        } else if ty == "Microsoft.Authorization/roleAssignments" {
            "2022-04-01"
        } else {
            panic!("unexpected write of {ty}: {r:?}")
        };
        assert_eq!(r.api_version.as_deref(), Some(expected), "{r:?}");
    }

    // Properties, as the reference gives them.
    let rg =
        format!("/subscriptions/{sub}/resourceGroups/demo-{infra}/providers/Microsoft.Network");
    let lb = arm
        .get(&format!("{rg}/loadBalancers/{infra}"), "2023-11-01")
        .await
        .unwrap()
        .expect("lb");
    assert_eq!(lb["sku"]["name"], "Standard");
    let probe = &lb["properties"]["probes"][0]["properties"];
    assert_eq!(
        (
            probe["protocol"].as_str(),
            probe["port"].as_i64(),
            probe["requestPath"].as_str()
        ),
        (Some("Http"), Some(30595), Some("/healthz"))
    );
    assert_eq!(probe["intervalInSeconds"], 5);
    let outbound = &lb["properties"]["outboundRules"][0]["properties"];
    assert_eq!(outbound["allocatedOutboundPorts"], 1024);
    assert_eq!(outbound["enableTcpReset"], true);
    let pip = arm
        .get(&format!("{rg}/publicIPAddresses/{infra}"), "2023-11-01")
        .await
        .unwrap()
        .expect("pip");
    assert_eq!(pip["sku"]["name"], "Standard");
    assert_eq!(pip["properties"]["publicIPAllocationMethod"], "Static");
    let vnet_id = format!(
        "/subscriptions/{sub}/resourceGroups/demo-vnet-{infra}/providers/Microsoft.Network/virtualNetworks/demo-{infra}"
    );
    let vnet = arm
        .get(&vnet_id, "2023-11-01")
        .await
        .unwrap()
        .expect("vnet");
    assert_eq!(
        vnet["properties"]["addressSpace"]["addressPrefixes"][0],
        "10.0.0.0/16"
    );
    let subnet = &vnet["properties"]["subnets"][0];
    assert_eq!(subnet["name"], "default");
    assert_eq!(subnet["properties"]["addressPrefix"], "10.0.0.0/24");
    assert!(
        subnet["properties"]["networkSecurityGroup"]["id"]
            .as_str()
            .unwrap_or("")
            .ends_with(&format!("demo-{infra}-nsg"))
    );
    let zone = arm
        .get(
            &format!("{rg}/privateDnsZones/demo.example.com"),
            "2024-06-01",
        )
        .await
        .unwrap()
        .expect("zone");
    assert_eq!(zone["location"], "global");
    let link = arm
        .get(
            &format!("{rg}/privateDnsZones/demo.example.com/virtualNetworkLinks/demo-{infra}"),
            "2024-06-01",
        )
        .await
        .unwrap()
        .expect("link");
    assert_eq!(link["properties"]["registrationEnabled"], false);
    assert_eq!(
        link["properties"]["virtualNetwork"]["id"]
            .as_str()
            .map(str::to_lowercase),
        Some(vnet_id.to_lowercase())
    );

    // Federated credentials: issuer = the tenant's issuer, audience openshift.
    let issuer = format!("{}/oidc-acme", system.endpoints.azurite_blob_url);
    let ident = format!(
        "/subscriptions/{sub}/resourceGroups/hcp-acme-identities/providers/Microsoft.ManagedIdentity/userAssignedIdentities"
    );
    let fics = arm
        .list(
            &format!("{ident}/demo-disk-{infra}/federatedIdentityCredentials"),
            "2024-11-30",
        )
        .await
        .expect("fics");
    assert_eq!(fics.len(), 3);
    for f in &fics {
        assert_eq!(f["properties"]["issuer"], issuer.as_str());
        assert_eq!(
            f["properties"]["audiences"],
            serde_json::json!(["openshift"])
        );
    }
    let subjects: BTreeSet<&str> = fics
        .iter()
        .filter_map(|f| f["properties"]["subject"].as_str())
        .collect();
    assert!(subjects.contains(
        "system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-node-sa"
    ));

    // The OIDC documents are public on blob storage.
    let discovery: Value = reqwest::get(format!("{issuer}/.well-known/openid-configuration"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], issuer.as_str());
    let jwks: Value = reqwest::get(format!("{issuer}/openid/v1/jwks"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"][0]["alg"], "RS256");

    // The management cluster holds the HostedCluster and NodePool.
    let objects = system.mgmt_admin().objects().await.expect("objects");
    let hc = objects
        .iter()
        .find(|o| o["kind"] == "HostedCluster")
        .expect("HostedCluster");
    assert_eq!(hc["metadata"]["name"], "demo");
    assert_eq!(
        hc["metadata"]["namespace"],
        crate::support::namespace("acme", &infra)
    );
    let az = &hc["spec"]["platform"]["azure"];
    assert_eq!(az["resourceGroup"], format!("demo-{infra}"));
    assert_eq!(
        az["vnetID"].as_str().map(str::to_lowercase),
        Some(vnet_id.to_lowercase())
    );
    assert_eq!(az["subscriptionID"], sub.as_str());
    assert_eq!(hc["spec"]["issuerURL"], issuer.as_str());
    let wi = &az["azureAuthenticationConfig"]["workloadIdentities"];
    // HyperShift's eight, the control-plane operator's included, as `create iam azure` writes.
    assert_eq!(wi.as_object().map(|o| o.len()), Some(8), "{wi}");
    assert!(wi["controlPlaneOperator"]["clientID"].is_string(), "{wi}");
    let np = objects
        .iter()
        .find(|o| o["kind"] == "NodePool")
        .expect("NodePool");
    assert_eq!(np["spec"]["replicas"], 2);
    assert_eq!(np["status"]["replicas"], 2);

    // Delete.
    let del = system.delete("acme", "demo").await;
    let gone = system.watch_to_end("acme", "demo").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    let mut c = system.client("acme").await;
    let err = c
        .get_cluster(pb::GetClusterRequest {
            name: "demo".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(err.code(), tonic::Code::NotFound);
    // Nothing of the cluster is left in Azure: its identities went with it (and their
    // credentials, which would otherwise still trust the tenant's issuer). The tenant's
    // identity group stays for its other clusters, and so does the OIDC issuer.
    assert_eq!(
        inventory(&arm, &sub).await,
        ["Microsoft.Network/dnsZones example.com".to_string()]
            .into_iter()
            .collect()
    );
    assert_eq!(
        system
            .arm_admin()
            .role_assignments(Some(&sub))
            .await
            .expect("role assignments")
            .into_iter()
            .filter(|g| g["properties"]["scope"] != format!("/subscriptions/{sub}").as_str())
            .collect::<Vec<_>>(),
        Vec::<Value>::new(),
        "no grant outlives the cluster (hypersaga's own, on the subscription, stay)"
    );
    assert_eq!(
        resource_groups(&arm, &sub).await,
        ["hcp-acme-identities".to_string(), "dns".to_string()]
            .into_iter()
            .collect()
    );
    let fics = arm
        .list(
            &format!("{ident}/demo-disk-{infra}/federatedIdentityCredentials"),
            "2024-11-30",
        )
        .await;
    // ARM answers a list under a deleted parent with 404, not an empty list.
    assert!(fics.is_err(), "credentials of a deleted identity: {fics:?}");
    assert_eq!(steps(&gone)["identity.workload"].0, "compensated");
    assert!(
        reqwest::get(format!("{issuer}/.well-known/openid-configuration"))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let objects = system.mgmt_admin().objects().await.expect("objects");
    assert!(
        !objects
            .iter()
            .any(|o| o["kind"] == "HostedCluster" || o["kind"] == "NodePool"),
        "management cluster cleaned"
    );

    // The audit stream holds every transition, in causal order, with trace context.
    let consumer = system.audit_feed("acme", Some("demo"), true).await;
    let stored = consumer.cached_info().num_pending as usize;
    let mut messages = consumer.messages().await.expect("messages");
    let mut events: Vec<Value> = Vec::new();
    let mut traces: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    while events.len() < stored {
        let msg = tokio::time::timeout(Duration::from_secs(5), messages.next())
            .await
            .expect("audit message")
            .expect("some")
            .expect("ok");
        let tp = msg
            .headers
            .as_ref()
            .and_then(|h| h.get("traceparent"))
            .map(|v| v.as_str().to_owned())
            .expect("traceparent header");
        let ev: Value = serde_json::from_slice(&msg.payload).expect("json");
        traces
            .entry(ev["operation"].as_str().unwrap().to_owned())
            .or_default()
            .insert(tp.split('-').nth(1).unwrap().to_owned());
        events.push(ev);
    }
    for (op_id, final_kind, first_kind) in [
        (&op.id, "cluster.ready", "cluster.accepted"),
        (&del.id, "cluster.deleted", "cluster.deleting"),
    ] {
        let evs: Vec<&Value> = events
            .iter()
            .filter(|e| e["operation"] == op_id.as_str())
            .collect();
        let seqs: Vec<u64> = evs.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(
            seqs,
            (1..=evs.len() as u64).collect::<Vec<_>>(),
            "gapless, in order"
        );
        assert_eq!(evs.first().unwrap()["type"], first_kind);
        assert_eq!(evs.last().unwrap()["type"], final_kind);
        assert_eq!(traces[op_id.as_str()].len(), 1, "one trace per operation");
        for e in &evs {
            for field in [
                "v",
                "type",
                "tenant",
                "cluster",
                "operation",
                "time",
                "actor",
                "trace_id",
            ] {
                assert!(!e[field].is_null(), "{field} missing in {e}");
            }
        }
    }
    let seq_of = |op: &str, kind: &str, step: &str| -> u64 {
        events
            .iter()
            .find(|e| e["operation"] == op && e["type"] == kind && e["step"] == step)
            .and_then(|e| e["seq"].as_u64())
            .unwrap_or_else(|| panic!("no {kind} for {step}"))
    };
    let create_steps = ready.status.unwrap().operation.unwrap().steps;
    for s in &create_steps {
        assert!(seq_of(&op.id, "step.started", &s.id) < seq_of(&op.id, "step.succeeded", &s.id));
        for d in &s.depends_on {
            assert!(
                seq_of(&op.id, "step.succeeded", d) < seq_of(&op.id, "step.started", &s.id),
                "{d} before {}",
                s.id
            );
        }
    }
    // Deletion runs in reverse: a step is undone only after everything that depends on it
    // (but the tenant's issuer, the user's public zone and the rollout wait, never undone).
    let kept =
        |id: &str| ["identity.oidc", "dns.public-zone", "controlplane.rollout"].contains(&id);
    for s in create_steps.iter().filter(|s| !kept(&s.id)) {
        for d in s.depends_on.iter().filter(|d| !kept(d)) {
            assert!(
                seq_of(&del.id, "step.compensated", &s.id)
                    < seq_of(&del.id, "step.compensating", d),
                "{} undone before {d}",
                s.id
            );
        }
    }
}

#[tokio::test]
async fn a_network_the_user_brings_is_used_and_never_deleted() {
    let system = System::start().await;
    let sub = system.subscription("acme");
    let arm = system.arm("acme");
    // The user's own network, made before hypersaga is asked for anything.
    let user = UserNetwork::make(&system, "acme").await;
    let nsg = user.nsg.clone();
    let vnet = user.vnet("corp-vnet", "172.16").await;
    let subnet = format!("{vnet}/subnets/clusters");

    let mut req = create_request("byo", 1);
    req.spec.as_mut().unwrap().network = Some(pb::NetworkSpec {
        vnet_id: vnet.clone(),
        subnet_id: subnet.clone(),
        nsg_id: nsg.clone(),
        ..Default::default()
    });
    let mut c = system.client("acme").await;
    c.create_cluster(req).await.expect("create");
    let ready = system.watch_to_end("acme", "byo").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let s = steps(&ready);
    assert_eq!(s["network.vnet"].0, "succeeded");
    let infra = ready.status.clone().unwrap().infra_id;
    // No VNet or NSG resource group of our own; the HostedCluster and the link use the user's.
    let groups = resource_groups(&arm, &sub).await;
    assert!(
        !groups.contains(&format!("byo-vnet-{infra}"))
            && !groups.contains(&format!("byo-nsg-{infra}")),
        "{groups:?}"
    );
    let objects = system.mgmt_admin().objects().await.expect("objects");
    let hc = objects
        .iter()
        .find(|o| o["kind"] == "HostedCluster")
        .expect("HostedCluster");
    let az = &hc["spec"]["platform"]["azure"];
    assert_eq!(
        az["vnetID"].as_str().map(str::to_lowercase),
        Some(vnet.to_lowercase())
    );
    assert_eq!(
        az["subnetID"].as_str().map(str::to_lowercase),
        Some(subnet.to_lowercase())
    );
    assert_eq!(
        az["securityGroupID"].as_str().map(str::to_lowercase),
        Some(nsg.to_lowercase())
    );
    let link = arm
        .get(&format!("/subscriptions/{sub}/resourceGroups/byo-{infra}/providers/Microsoft.Network/privateDnsZones/byo.example.com/virtualNetworkLinks/byo-{infra}"), "2024-06-01")
        .await
        .unwrap()
        .expect("link");
    assert_eq!(
        link["properties"]["virtualNetwork"]["id"]
            .as_str()
            .map(str::to_lowercase),
        Some(vnet.to_lowercase())
    );

    // This delete also asks to keep the cluster's workload identities.
    let mut c = system.client("acme").await;
    c.delete_cluster(pb::DeleteClusterRequest {
        name: "byo".into(),
        keep_identities: true,
        ..Default::default()
    })
    .await
    .expect("delete");
    let gone = system.watch_to_end("acme", "byo").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    let s = steps(&gone);
    assert_eq!(
        (
            s["network.vnet"].0.as_str(),
            s["network.nsg"].0.as_str(),
            s["identity.workload"].0.as_str()
        ),
        ("kept", "kept", "kept")
    );
    // What the user brought is still there, untouched.
    for id in [&vnet, &nsg] {
        assert!(
            arm.get(id, "2023-11-01").await.unwrap().is_some(),
            "{id} was deleted"
        );
    }
    assert!(resource_groups(&arm, &sub).await.contains("corp-network"));
    let remaining = inventory(&arm, &sub).await;
    assert!(
        remaining.contains("Microsoft.Network/virtualNetworks corp-vnet"),
        "{remaining:#?}"
    );
    assert!(
        !remaining
            .iter()
            .any(|r| r.contains(&infra) && !r.starts_with("Microsoft.ManagedIdentity")),
        "{remaining:#?}"
    );
    assert!(
        identities("byo", &infra).is_subset(&remaining),
        "identities kept on request: {remaining:#?}"
    );
}
