//! Before anything is made: a dry run says what a create would make, from the code its steps
//! run, and the preflight refuses a create that cannot work before it writes anything.

use std::collections::BTreeSet;

use hypersaga_api::v1 as pb;
use tonic_types::StatusExt;

use crate::support::*;

/// ARM requests that change something (every method but GET), all subscriptions.
async fn arm_writes(system: &System) -> u64 {
    let stats = system.arm_admin().requests().await.expect("request stats");
    stats
        .counts
        .iter()
        .filter(|c| !c.method.eq_ignore_ascii_case("GET"))
        .map(|c| c.count)
        .sum()
}

/// `type name` of every Azure resource a planned step would create, the plan's infra id
/// replaced by `infra`.
fn planned_creates(plan: &pb::Plan, infra: &str) -> BTreeSet<String> {
    plan.steps
        .iter()
        .filter(|s| s.not_planned.is_none())
        .flat_map(|s| &s.changes)
        .filter(|c| c.target == "azure" && c.verb == "create")
        .map(|c| format!("{} {}", c.r#type, c.name.replace(&plan.infra_id, infra)))
        .collect()
}

#[tokio::test]
async fn a_dry_run_lists_what_the_create_then_makes_and_the_preflight_refuses_before_any_write() {
    let system = System::start().await;
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
        // Every step is planned, or says why not.
        if let Some(why) = &s.not_planned {
            assert!(!why.message.is_empty(), "{}: {why:?}", s.step);
        }
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
    let gone = client
        .get_cluster(pb::GetClusterRequest {
            name: "planned".into(),
        })
        .await
        .expect_err("no cluster");
    assert_eq!(gone.code(), tonic::Code::NotFound);

    // The create then makes what the plan listed, by type and name (its own infra id).
    req.validate_only = false;
    client.create_cluster(req).await.expect("create");
    let ready = system.watch_to_end("acme", "planned").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let infra = ready.status.as_ref().expect("status").infra_id.clone();
    let made = system.resource_names("acme").await;
    let listed = planned_creates(&plan, &infra);
    let missing: Vec<&String> = listed.difference(&made).collect();
    assert!(
        missing.is_empty(),
        "planned but not made: {missing:?}\nmade: {made:#?}"
    );

    // A network the user brings that does not exist: refused before any write, naming it.
    let before = arm_writes(&system).await;
    let sub = system.subscription("acme");
    let net = format!("/subscriptions/{sub}/resourceGroups/nowhere/providers/Microsoft.Network");
    let mut req = create_request("unbuildable", 1);
    if let Some(spec) = req.spec.as_mut() {
        spec.network = Some(pb::NetworkSpec {
            vnet_id: format!("{net}/virtualNetworks/absent"),
            subnet_id: format!("{net}/virtualNetworks/absent/subnets/default"),
            nsg_id: format!("{net}/networkSecurityGroups/absent"),
            ..Default::default()
        });
    }
    let refused = client
        .create_cluster(req)
        .await
        .expect_err("the preflight refuses it");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    let violations = refused
        .get_details_precondition_failure()
        .expect("a PreconditionFailure")
        .violations;
    let fields: BTreeSet<&str> = violations.iter().map(|v| v.subject.as_str()).collect();
    assert_eq!(
        fields,
        BTreeSet::from([
            "spec.network.nsg_id",
            "spec.network.subnet_id",
            "spec.network.vnet_id"
        ]),
        "{violations:#?}"
    );
    assert!(violations.iter().all(|v| v.r#type == "NETWORK"));
    assert_eq!(
        arm_writes(&system).await,
        before,
        "refused before any ARM write"
    );
    let gone = client
        .get_cluster(pb::GetClusterRequest {
            name: "unbuildable".into(),
        })
        .await
        .expect_err("no cluster");
    assert_eq!(gone.code(), tonic::Code::NotFound);
}
