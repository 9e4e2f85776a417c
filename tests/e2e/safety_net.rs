//! Before anything is made: a dry run says what a create would make, from the code its steps
//! run, and the preflight refuses a create that cannot work before it writes anything.

use std::collections::BTreeSet;

use hypersaga_api::v1 as pb;

use crate::support::*;

/// ARM requests that change a resource (PUT, PATCH, DELETE, or a POST action on one; not
/// Entra's token requests), all subscriptions, as the emulator's request log counts them.
async fn arm_writes(system: &System) -> u64 {
    let stats = system.arm_admin().requests().await.expect("request stats");
    stats
        .counts
        .iter()
        .filter(|c| !c.method.eq_ignore_ascii_case("GET"))
        .filter(|c| c.resource_type.contains('/'))
        .map(|c| c.count)
        .sum()
}

/// The tenant has no cluster `name`: nothing was recorded for it.
async fn assert_no_cluster(client: &mut hypersaga::client::Client, name: &str) {
    let gone = client
        .get_cluster(pb::GetClusterRequest { name: name.into() })
        .await
        .expect_err("no cluster");
    assert_eq!(gone.code(), tonic::Code::NotFound, "{name}");
}

const ROLE_ASSIGNMENTS: &str = "/providers/Microsoft.Authorization/roleAssignments/";

/// What a plan says the create makes in Azure, its infra id replaced by `infra`: `type name`
/// of each resource named in full, `(type, prefix, suffix)` of each named by HyperShift's
/// CAPZ (`name-*-nic`), and the scope of each role assignment (named after the infra id).
struct Listed {
    named: BTreeSet<String>,
    patterns: Vec<(String, String, String)>,
    role_scopes: Vec<String>,
}

fn listed(plan: &pb::Plan, infra: &str) -> Listed {
    let mut out = Listed {
        named: BTreeSet::new(),
        patterns: Vec::new(),
        role_scopes: Vec::new(),
    };
    let creates = plan
        .steps
        .iter()
        .flat_map(|s| &s.changes)
        .filter(|c| c.target == "azure" && c.verb == "create");
    for c in creates {
        let name = c.name.replace(&plan.infra_id, infra);
        if let Some((scope, _)) = c.id.split_once(ROLE_ASSIGNMENTS) {
            out.role_scopes
                .push(scope.replace(&plan.infra_id, infra).to_lowercase());
        } else if let Some((prefix, suffix)) = name.split_once('*') {
            out.patterns
                .push((c.r#type.clone(), prefix.to_owned(), suffix.to_owned()));
        } else {
            out.named.insert(format!("{} {name}", c.r#type));
        }
    }
    out.role_scopes.sort();
    out
}

/// The scopes of the subscription's role assignments, lower-cased.
async fn role_scopes(system: &System, tenant: &str) -> Vec<String> {
    let all = system
        .arm_admin()
        .role_assignments(Some(&system.subscription(tenant)))
        .await
        .expect("role assignments");
    let mut scopes: Vec<String> = all
        .iter()
        .filter_map(|a| a["id"].as_str())
        .filter_map(|id| {
            id.split_once(ROLE_ASSIGNMENTS)
                .map(|(s, _)| s.to_lowercase())
        })
        .collect();
    scopes.sort();
    scopes
}

#[tokio::test]
async fn a_dry_run_lists_what_the_create_then_makes_and_the_preflight_refuses_before_any_write() {
    let system = System::start().await;
    system.ready_to_plan("acme").await;
    let mut client = system.client("acme").await;
    let before = arm_writes(&system).await;

    // A dry run: the plan of every step, in an order the create could run them; nothing made.
    let mut req = create_request("planned", 1);
    req.validate_only = true;
    let op = client
        .create_cluster(req.clone())
        .await
        .expect("dry run")
        .into_inner();
    assert!(op.id.is_empty(), "a dry run starts no operation: {op:?}");
    let plan = op.plan.expect("the plan");
    assert!(!plan.infra_id.is_empty() && plan.infra_id.starts_with("planned-"));
    assert_eq!(plan.management_cluster, "default");
    let mut seen = BTreeSet::new();
    for s in &plan.steps {
        for d in &s.depends_on {
            assert!(seen.contains(d), "{} is listed before {d}", s.step);
        }
        seen.insert(s.step.clone());
        assert!(s.not_planned.is_none(), "{}: {:?}", s.step, s.not_planned);
    }
    assert!(plan.findings.is_empty(), "{:?}", plan.findings);
    let network: Vec<&pb::PlannedStep> = plan
        .steps
        .iter()
        .filter(|s| s.service == "network")
        .collect();
    assert_eq!(network.len(), 5);
    assert!(
        network.iter().all(|s| s.not_planned.is_none()),
        "{network:#?}"
    );
    let vnet = network
        .iter()
        .find(|s| s.step == "network.vnet")
        .and_then(|s| s.changes.first())
        .expect("the VNet");
    assert_eq!(
        (
            vnet.r#type.as_str(),
            vnet.verb.as_str(),
            vnet.api_version.as_str()
        ),
        ("Microsoft.Network/virtualNetworks", "create", "2023-11-01")
    );
    assert_eq!(vnet.location, "eastus");
    assert_eq!(
        arm_writes(&system).await,
        before,
        "a dry run writes nothing to ARM"
    );
    assert_no_cluster(&mut client, "planned").await;

    // The create then makes what the plan listed, by type and name (its own infra id).
    let there_before = system.resource_names("acme").await;
    let scopes_before = role_scopes(&system, "acme").await;
    req.validate_only = false;
    client.create_cluster(req).await.expect("create");
    let ready = system.watch_to_end("acme", "planned").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let infra = ready.status.as_ref().expect("status").infra_id.clone();
    let listed = listed(&plan, &infra);
    let made: BTreeSet<String> = system
        .resource_names("acme")
        .await
        .difference(&there_before)
        .cloned()
        .collect();
    // What CAPZ named: each pattern takes one resource of its type whose name fits it.
    let mut by_capz = made
        .difference(&listed.named)
        .cloned()
        .collect::<BTreeSet<_>>();
    for (kind, prefix, suffix) in &listed.patterns {
        let fits = by_capz
            .iter()
            .find(|r| {
                r.strip_prefix(&format!("{kind} {prefix}"))
                    .is_some_and(|rest| rest.ends_with(suffix.as_str()) && !rest.is_empty())
            })
            .cloned();
        let fits =
            fits.unwrap_or_else(|| panic!("no {kind} {prefix}*{suffix} was made: {made:#?}"));
        by_capz.remove(&fits);
    }
    let missing: Vec<&String> = listed.named.difference(&made).collect();
    assert!(
        missing.is_empty() && by_capz.is_empty(),
        "planned but not made: {missing:#?}\nmade but not planned: {by_capz:#?}"
    );
    let scopes: Vec<String> = {
        let mut now = role_scopes(&system, "acme").await;
        for s in &scopes_before {
            if let Some(i) = now.iter().position(|n| n == s) {
                now.remove(i);
            }
        }
        now
    };
    assert_eq!(scopes, listed.role_scopes, "role assignments, by scope");
    // And on the management cluster, the objects it listed, by type, namespace and name (the
    // namespace is named after the cluster's uid, which the real create picks anew).
    let namespace_of = |entries: &BTreeSet<String>| {
        entries
            .iter()
            .find_map(|e| e.strip_prefix("v1/Namespace ").map(str::to_owned))
            .expect("a namespace")
    };
    let kube_planned: BTreeSet<String> = plan
        .steps
        .iter()
        .flat_map(|s| &s.changes)
        .filter(|c| c.target == "management_cluster" && c.verb == "create")
        .map(|c| format!("{} {}", c.r#type, c.id))
        .collect();
    let kube_made: BTreeSet<String> = what_is_left(&system, "planned")
        .await
        .into_iter()
        .filter(|l| !l.starts_with("Microsoft."))
        .collect();
    let (planned_ns, made_ns) = (namespace_of(&kube_planned), namespace_of(&kube_made));
    let kube_planned: BTreeSet<String> = kube_planned
        .iter()
        .map(|e| e.replace(&planned_ns, &made_ns))
        .collect();
    assert_eq!(kube_made, kube_planned, "management-cluster objects");

    // What leaks is swept: a create held before its DNS record, its coordinator killed, then
    // abandoned, leaves half a cluster; the sweep lists exactly that (not `planned`, which is
    // live) and removes it.
    let left = leave_half_a_cluster(&system, &mut client, "leaky").await;
    let left_infra = client
        .get_cluster(pb::GetClusterRequest {
            name: "leaky".into(),
        })
        .await
        .expect("the abandoned cluster is kept")
        .into_inner()
        .status
        .map(|s| s.infra_id)
        .expect("its infra id");
    let listed = sweep(&system, &["--dry-run"]);
    let leftovers = listed["leftovers"].as_array().expect("leftovers");
    assert!(
        leftovers.iter().all(|l| l["cluster"] == "leaky"
            && l["reason"] == "cluster_failed"
            && l["removable"] == true),
        "{listed:#}"
    );
    let ids: BTreeSet<String> = leftovers
        .iter()
        .map(|l| {
            format!(
                "{} {}",
                l["type"].as_str().unwrap_or("?"),
                l["id"].as_str().unwrap_or("?")
            )
        })
        .collect();
    // (The secrets in its namespace are not listed: they go with the namespace, and listing
    // secrets would mean reading every secret on the management cluster.)
    let left_listed: BTreeSet<String> = left
        .iter()
        .filter(|l| !l.starts_with("v1/Secret "))
        .cloned()
        .collect();
    assert_eq!(ids, left_listed, "the dry run lists exactly what was left");
    assert!(
        listed["operations"].as_array().is_some_and(Vec::is_empty),
        "{listed:#}"
    );
    assert_eq!(
        what_is_left(&system, "leaky").await,
        left,
        "a dry run removes nothing"
    );

    let swept = sweep(&system, &[]);
    let ops = swept["operations"].as_array().expect("operations");
    assert_eq!(ops.len(), 1, "{swept:#}");
    let op = ops[0]["id"].as_str().expect("id").to_owned();
    wait_for_operation(&mut client, &op).await;
    assert_eq!(
        what_is_left(&system, "leaky").await,
        BTreeSet::new(),
        "all swept"
    );
    // Nor anything untagged in its groups (what CAPZ made for the pool went with them).
    let named_after: Vec<String> = system
        .inventory("acme")
        .await
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| id.contains(&left_infra))
        .map(str::to_owned)
        .collect();
    assert!(named_after.is_empty(), "{named_after:#?}");
    let again = sweep(&system, &["--dry-run"]);
    assert_eq!(again["leftovers"], serde_json::json!([]), "{again:#}");
    let events: Vec<String> = system
        .audit_events("acme", "leaky")
        .await
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect();
    for kind in ["cluster.sweeping", "cluster.swept"] {
        assert!(events.iter().any(|e| e == kind), "{kind}: {events:?}");
    }
    let planned = client
        .get_cluster(pb::GetClusterRequest {
            name: "planned".into(),
        })
        .await
        .expect("the live cluster is untouched")
        .into_inner();
    assert_eq!(phase(&planned), "ready");

    // Four misconfigurations at once, all refused in one answer before any ARM write: a
    // subnet outside the VNet the user brings, a base domain without a public zone, a release
    // the management cluster's HyperShift does not support, no vCPU quota left for the pool.
    // The one worker of `planned` uses the region's Dsv5 vCPUs up.
    let req = misconfigured(&system, "misfit", 2, 4).await;
    let before = arm_writes(&system).await;
    let violations = preflight_refusal(client.create_cluster(req).await);
    let found: BTreeSet<(&str, &str)> = violations
        .iter()
        .map(|v| (v.subject.as_str(), v.r#type.as_str()))
        .collect();
    assert_eq!(
        found,
        BTreeSet::from([
            ("spec.base_domain", "DNS_ZONE"),
            ("spec.network.subnet_id", "NETWORK"),
            ("spec.node_pools.workers.replicas", "QUOTA"),
            ("spec.release_image", "RELEASE"),
        ]),
        "{violations:#?}"
    );
    assert!(
        violations.iter().all(|v| !v.description.is_empty()),
        "{violations:#?}"
    );
    assert_eq!(
        arm_writes(&system).await,
        before,
        "refused before any ARM write"
    );
    assert_no_cluster(&mut client, "misfit").await;

    // A day-2 change is planned and checked the same way: a pool the quota has no room for
    // is a finding in its dry run and refused for real, before any write; an upgrade's dry
    // run lists what it changes and starts nothing.
    let more = || pb::CreateNodePoolRequest {
        cluster: "planned".into(),
        node_pool: Some(pb::NodePoolSpec {
            name: "more".into(),
            replicas: Some(1),
            vm_size: "Standard_D4s_v5".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let before = arm_writes(&system).await;
    let planned_op = client
        .create_node_pool(pb::CreateNodePoolRequest {
            validate_only: true,
            ..more()
        })
        .await
        .expect("a day-2 dry run")
        .into_inner();
    assert!(planned_op.id.is_empty(), "{planned_op:?}");
    let plan = planned_op.plan.expect("the plan");
    let steps: Vec<&str> = plan.steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, ["nodepool.more"], "{plan:#?}");
    assert_eq!(
        plan.findings
            .iter()
            .map(|f| (f.field.as_str(), f.kind.as_str()))
            .collect::<Vec<_>>(),
        [("node_pool.replicas", "QUOTA")],
        "{plan:#?}"
    );
    let refused = preflight_refusal(client.create_node_pool(more()).await);
    assert_eq!(refused[0].r#type, "QUOTA", "{refused:#?}");
    let upgrade = client
        .update_cluster(pb::UpdateClusterRequest {
            cluster: Some(pb::Cluster {
                name: "planned".into(),
                spec: Some(pb::ClusterSpec {
                    release_image: "quay.io/openshift-release-dev/ocp-release:4.22.0-multi".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            update_mask: Some(prost_types::FieldMask {
                paths: vec!["spec.release_image".into()],
            }),
            validate_only: true,
            ..Default::default()
        })
        .await
        .expect("an upgrade's dry run")
        .into_inner();
    let plan = upgrade.plan.expect("the plan");
    assert!(plan.findings.is_empty(), "{plan:#?}");
    assert!(
        plan.steps
            .iter()
            .flat_map(|s| &s.changes)
            .any(|c| c.r#type.ends_with("/HostedCluster") && c.name == "planned"),
        "{plan:#?}"
    );
    assert_eq!(arm_writes(&system).await, before, "nothing written");
    let cluster = client
        .get_cluster(pb::GetClusterRequest {
            name: "planned".into(),
        })
        .await
        .expect("planned")
        .into_inner();
    assert_eq!(
        phase(&cluster),
        "ready",
        "no operation started: {cluster:#?}"
    );
}

/// Role Based Access Control Administrator, one of the two roles onboarding grants the
/// tenant's application (`hypersaga tenant add`, `dev`'s `world::register_app`).
const RBAC_ADMINISTRATOR: &str = "f58310d9-a9f6-439a-9e8d-f62e7b41a168";

#[tokio::test]
async fn a_create_the_tenants_principal_may_not_make_is_refused_before_any_write() {
    let system = System::start().await;
    // As the other tenant: acme's permissions are read (and kept 30 s) only once its role
    // has been taken back.
    system.ready_to_plan("globex").await;
    let mut client = system.client("acme").await;
    // The tenant's administrator takes a role back from hypersaga's application: it keeps
    // Contributor, whose notActions leave out every Microsoft.Authorization write.
    let sub = system.subscription("acme");
    let assignments = system
        .arm_admin()
        .role_assignments(Some(&sub))
        .await
        .expect("role assignments");
    let rbac_admin = assignments
        .iter()
        .find(|a| {
            a["properties"]["roleDefinitionId"]
                .as_str()
                .is_some_and(|r| r.ends_with(RBAC_ADMINISTRATOR))
        })
        .and_then(|a| a["id"].as_str())
        .expect("onboarding granted RBAC Administrator");
    system
        .arm_admin()
        .delete_role_assignment(rbac_admin)
        .await
        .expect("delete")
        .expect("it was there");
    let before = arm_writes(&system).await;

    // The dry run names what is missing, where, and the step that needs it.
    let mut req = create_request("ungranted", 1);
    req.validate_only = true;
    let plan = client
        .create_cluster(req.clone())
        .await
        .expect("dry run")
        .into_inner()
        .plan
        .expect("the plan");
    let zone_group = format!("/subscriptions/{sub}/resourceGroups/dns");
    let found: Vec<(&str, &str, &str)> = plan
        .findings
        .iter()
        .map(|f| (f.kind.as_str(), f.step.as_str(), f.field.as_str()))
        .collect();
    assert_eq!(
        found,
        [(
            "PERMISSION",
            "identity.role-assignments",
            zone_group.as_str()
        )],
        "{:#?}",
        plan.findings
    );
    let finding = &plan.findings[0];
    assert!(
        finding
            .message
            .contains("'Microsoft.Authorization/roleAssignments/write'"),
        "{finding:?}"
    );
    assert!(
        finding
            .remedy
            .contains("Role Based Access Control Administrator"),
        "{finding:?}"
    );

    // The create is refused with it, before anything is written.
    req.validate_only = false;
    let violations = preflight_refusal(client.create_cluster(req).await);
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(
        (
            violations[0].r#type.as_str(),
            violations[0].subject.as_str()
        ),
        ("PERMISSION", zone_group.as_str())
    );
    assert_eq!(
        arm_writes(&system).await,
        before,
        "refused before any ARM write"
    );
    assert_no_cluster(&mut client, "ungranted").await;

    // Five misconfigurations at once, the missing role among them, all refused in one answer
    // before any ARM write, each with its field: no public zone (the permissions are then
    // read at another group of the subscription), a subnet outside the VNet the user brings,
    // a release HyperShift does not support, and no vCPU quota for the pool.
    let req = misconfigured(&system, "misfit", 1, 0).await;
    let before = arm_writes(&system).await;
    let violations = preflight_refusal(client.create_cluster(req).await);
    let kinds: BTreeSet<&str> = violations.iter().map(|v| v.r#type.as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["DNS_ZONE", "NETWORK", "PERMISSION", "QUOTA", "RELEASE"]),
        "{violations:#?}"
    );
    assert!(
        violations
            .iter()
            .all(|v| !v.subject.is_empty() && !v.description.is_empty()),
        "{violations:#?}"
    );
    assert_eq!(
        arm_writes(&system).await,
        before,
        "refused before any ARM write"
    );
    assert_no_cluster(&mut client, "misfit").await;
}

/// `hypersaga sweep --tenant acme -o json` (with `extra`), as the admin `dev` made.
fn sweep(system: &System, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["sweep", "--tenant", "acme", "-o", "json"];
    args.extend_from_slice(extra);
    let out = hypersaga(system, &args);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("the sweep's JSON")
}

/// Everything of cluster `name` of acme in ARM and on the management cluster, as `type id`:
/// what its tags or labels name, and the role assignments of its identities' principals.
async fn what_is_left(system: &System, name: &str) -> BTreeSet<String> {
    let sub = system.subscription("acme");
    let stored = system
        .arm_admin()
        .resources(Some(&sub))
        .await
        .expect("resources");
    let ours: Vec<&serde_json::Value> = stored
        .iter()
        .filter(|r| {
            r["tags"]["hypersaga.io_tenant"] == "acme" && r["tags"]["hypersaga.io_cluster"] == name
        })
        .collect();
    let principals: BTreeSet<&str> = ours
        .iter()
        .filter_map(|r| r["properties"]["principalId"].as_str())
        .collect();
    let mut left: BTreeSet<String> = ours
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["type"].as_str().unwrap_or("?"),
                r["id"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let assignments = system
        .arm_admin()
        .role_assignments(Some(&sub))
        .await
        .expect("assignments");
    for a in &assignments {
        if a["properties"]["principalId"]
            .as_str()
            .is_some_and(|p| principals.contains(p))
        {
            left.insert(format!(
                "Microsoft.Authorization/roleAssignments {}",
                a["id"].as_str().unwrap_or("?")
            ));
        }
    }
    for o in system.mgmt_admin().objects().await.expect("objects") {
        let labels = &o["metadata"]["labels"];
        if labels["hypersaga.io/tenant"] == "acme" && labels["hypersaga.io/cluster"] == name {
            let id = match o["metadata"]["namespace"].as_str() {
                Some(ns) => format!("{ns}/{}", o["metadata"]["name"].as_str().unwrap_or("?")),
                None => o["metadata"]["name"].as_str().unwrap_or("?").to_owned(),
            };
            left.insert(format!(
                "{}/{} {id}",
                o["apiVersion"].as_str().unwrap_or("?"),
                o["kind"].as_str().unwrap_or("?")
            ));
        }
    }
    left
}

/// A create of `name` held before its DNS record (after its control plane and pool were
/// made), its coordinator killed while it waits, then abandoned: what it left.
async fn leave_half_a_cluster(
    system: &System,
    client: &mut hypersaga::client::Client,
    name: &str,
) -> BTreeSet<String> {
    for record in [
        "Microsoft.Network/privateDnsZones/A",
        "Microsoft.Network/privateDnsZones/CNAME",
    ] {
        system.hold_puts(record, Some(name)).await;
    }
    let op = client
        .create_cluster(create_request(name, 1))
        .await
        .expect("create")
        .into_inner();
    system
        .wait_until(ACME, name, "the control plane and the pool", |c| {
            let s = steps(c);
            let done = |id: &str| s.get(id).is_some_and(|(state, _)| state == "succeeded");
            done("controlplane.hostedcluster") && done("nodepool.workers")
        })
        .await;
    system.kill9("coordinator-0");
    client
        .abandon_operation(pb::AbandonOperationRequest {
            id: op.id.clone(),
            request_id: String::new(),
        })
        .await
        .expect("abandon");
    system
        .wait_until(ACME, name, "the abandon to apply", |c| phase(c) == "failed")
        .await;
    system
        .arm_admin()
        .clear_faults()
        .await
        .expect("clear faults");
    let left = what_is_left(system, name).await;
    for kind in [
        "Microsoft.Resources/resourceGroups",
        "Microsoft.Network/virtualNetworks",
        "Microsoft.ManagedIdentity/userAssignedIdentities",
        "Microsoft.Authorization/roleAssignments",
        "hypershift.openshift.io/v1beta1/HostedCluster",
        "hypershift.openshift.io/v1beta1/NodePool",
        "v1/Namespace",
    ] {
        assert!(
            left.iter().any(|l| l.starts_with(&format!("{kind} "))),
            "no {kind} left: {left:#?}"
        );
    }
    left
}

const ACME: &str = "acme";

/// Waits for operation `id` to succeed.
async fn wait_for_operation(client: &mut hypersaga::client::Client, id: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let op = client
            .get_operation(pb::GetOperationRequest { id: id.into() })
            .await
            .expect("the operation")
            .into_inner();
        match pb::OperationState::try_from(op.state) {
            Ok(pb::OperationState::Succeeded) => return,
            Ok(pb::OperationState::Running) | Ok(pb::OperationState::Compensating) => {}
            other => panic!("operation {id} ended {other:?}: {op:#?}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "operation {id} still running: {op:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// A create of acme's cluster `name` with four misconfigurations: a base domain without a
/// public zone, a release the management cluster's HyperShift does not support, a subnet
/// outside the VNet the user brings (made here), and `replicas` workers with the region's
/// Dsv5 vCPU quota set to `quota`.
async fn misconfigured(
    system: &System,
    name: &str,
    replicas: i32,
    quota: u64,
) -> pb::CreateClusterRequest {
    let user = UserNetwork::make(system, "acme").await;
    let corp = user.vnet("corp-vnet", "172.16").await;
    let lab = user.vnet("lab-vnet", "172.17").await;
    system.set_dsv5_quota("acme", quota).await;
    let mut req = create_request(name, replicas);
    if let Some(spec) = req.spec.as_mut() {
        spec.base_domain = "nozone.example.org".into();
        spec.release_image = "quay.io/openshift-release-dev/ocp-release:4.23.0-multi".into();
        spec.network = Some(pb::NetworkSpec {
            vnet_id: corp,
            subnet_id: format!("{lab}/subnets/clusters"),
            nsg_id: user.nsg.clone(),
            ..Default::default()
        });
    }
    req
}
