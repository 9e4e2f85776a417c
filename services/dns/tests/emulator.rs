//! The dns steps against the real ARM emulator.

use hypersaga_stepkit::ArmStep;
use std::fmt::Display;

use hypersaga_bus::{
    Action, HostedClusterOutputs, Outputs, StepCommand, StepError, StepId, VnetOutputs,
};
use hypersaga_dns::{DnsHandler, PRIVATE_DNS_API};
use hypersaga_model::TenantId;
use hypersaga_stepkit::{ArmClients, LogNotes, TenantArm};
use hypersaga_testkit::{SUBSCRIPTION, TestArm, command, names_of, spec};
use serde_json::{Value, json};

const ZONE: &str = "Microsoft.Network/privateDnsZones";
const LINK: &str = "Microsoft.Network/privateDnsZones/virtualNetworkLinks";

async fn exec(h: &DnsHandler, cmd: &StepCommand) -> Result<Outputs, StepError> {
    h.execute(cmd, &LogNotes).await
}

fn s(o: &Outputs, key: &str) -> String {
    o.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("output {key} in {o:?}"))
        .to_owned()
}

/// What the network service would have made: the managed RG and a VNet. Returns the VNet id.
async fn network(arm: &TenantArm, cluster: &str) -> String {
    let names = names_of(cluster, &spec());
    arm.client
        .put(
            &arm.resource_group_id(&names.managed_rg),
            "2021-04-01",
            &json!({"location": "eastus"}),
        )
        .await
        .expect("rg");
    arm.client
        .put(
            &arm.resource_group_id(&names.vnet_rg),
            "2021-04-01",
            &json!({"location": "eastus"}),
        )
        .await
        .expect("vnet rg");
    let vnet = arm.resource_id(
        &names.vnet_rg,
        "Microsoft.Network/virtualNetworks",
        &names.vnet,
    );
    arm.client
        .put(&vnet, "2023-11-01", &json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}))
        .await
        .expect("vnet");
    vnet
}

fn prior(vnet: &str, host: Option<&str>) -> Vec<(String, Outputs)> {
    let mut v = vec![hypersaga_testkit::prior(
        StepId::Vnet,
        VnetOutputs {
            vnet_id: vnet.to_owned(),
            subnet_id: format!("{vnet}/subnets/default"),
        },
    )];
    if let Some(h) = host {
        v.push(hypersaga_testkit::prior(
            StepId::HostedCluster,
            HostedClusterOutputs {
                control_plane_host: h.to_owned(),
                control_plane_port: 443,
                hosted_cluster_id: "hostedclusters.hypershift.openshift.io/ns/demo".into(),
                namespace_id: "namespaces/ns".into(),
            },
        ));
    }
    v
}

async fn setup() -> (TestArm, DnsHandler, TenantArm) {
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let config = arm.config(None);
    let h = DnsHandler::new(&config).expect("handler");
    let tenant = ArmClients::new(&config)
        .unwrap()
        .tenant(&TenantId::new("acme").unwrap())
        .unwrap();
    (arm, h, tenant)
}

#[tokio::test]
async fn zone_link_and_records_lifecycle() {
    let (arm, h, tenant) = setup().await;
    let vnet = network(&tenant, "demo").await;
    let names = names_of("demo", &spec());
    let run = |step: &dyn Display, action: Action, host: Option<&str>| {
        command("demo", spec(), step, action, prior(&vnet, host))
    };

    // Zone.
    let zone_out = exec(&h, &run(&StepId::PrivateZone, Action::Do, None))
        .await
        .expect("zone");
    let zone_id = s(&zone_out, "private_zone_id");
    assert_eq!(
        zone_id,
        format!(
            "/subscriptions/{SUBSCRIPTION}/resourceGroups/{}/providers/{ZONE}/{}",
            names.managed_rg, names.private_zone
        )
    );
    assert_eq!(names.private_zone, "demo.example.com");
    let zone = arm.resource(&zone_id).await.expect("zone stored");
    assert_eq!(zone["location"], "global");
    assert_eq!(zone["tags"]["hypersaga.io_saga"], "saga-demo");
    assert_eq!(
        exec(&h, &run(&StepId::PrivateZone, Action::Do, None))
            .await
            .expect("again"),
        zone_out
    );
    assert_eq!(arm.requests().await.count("PUT", ZONE), 1, "adopted");

    // Link.
    let link_out = exec(&h, &run(&StepId::VnetLink, Action::Do, None))
        .await
        .expect("link");
    let link_id = s(&link_out, "vnet_link_id");
    assert_eq!(
        link_id,
        format!("{zone_id}/virtualNetworkLinks/{}", names.vnet_link)
    );
    let link = arm.resource(&link_id).await.expect("link stored");
    assert_eq!(link["location"], "global");
    assert_eq!(link["properties"]["registrationEnabled"], false);
    assert!(
        link["properties"]["virtualNetwork"]["id"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case(&vnet)
    );
    assert_eq!(
        exec(&h, &run(&StepId::VnetLink, Action::Do, None))
            .await
            .expect("again"),
        link_out
    );
    assert_eq!(arm.requests().await.count("PUT", LINK), 1, "adopted");

    // The zone cannot go while linked: retryable, not terminal (the DAG removes the link first).
    let e = exec(&h, &run(&StepId::PrivateZone, Action::Undo, None))
        .await
        .expect_err("linked zone");
    assert!(e.is_retryable(), "{e}");

    // Records: IPv4 → A.
    let rec = exec(
        &h,
        &run(&StepId::DnsRecords, Action::Do, Some("20.30.40.50")),
    )
    .await
    .expect("A");
    let a_id = s(&rec, "api_record_id");
    assert_eq!(a_id, format!("{zone_id}/A/api"));
    let a = tenant
        .client
        .get(&a_id, PRIVATE_DNS_API)
        .await
        .unwrap()
        .expect("A record");
    assert_eq!(a["properties"]["ttl"], 300);
    assert_eq!(
        a["properties"]["aRecords"],
        json!([{"ipv4Address": "20.30.40.50"}])
    );
    exec(
        &h,
        &run(&StepId::DnsRecords, Action::Do, Some("20.30.40.50")),
    )
    .await
    .expect("A again");
    assert_eq!(
        arm.requests()
            .await
            .count("PUT", "Microsoft.Network/privateDnsZones/A"),
        1,
        "adopted"
    );

    // The endpoint becomes a host name → the A record is replaced by a CNAME.
    let rec = exec(
        &h,
        &run(
            &StepId::DnsRecords,
            Action::Do,
            Some("kas.demo.example.net"),
        ),
    )
    .await
    .expect("CNAME");
    let cname_id = s(&rec, "api_record_id");
    assert_eq!(cname_id, format!("{zone_id}/CNAME/api"));
    assert!(
        tenant
            .client
            .get(&a_id, PRIVATE_DNS_API)
            .await
            .unwrap()
            .is_none(),
        "A removed"
    );
    let c = tenant
        .client
        .get(&cname_id, PRIVATE_DNS_API)
        .await
        .unwrap()
        .expect("CNAME record");
    assert_eq!(
        c["properties"]["cnameRecord"]["cname"],
        "kas.demo.example.net"
    );

    // Undo in reverse order, then again (404 is success).
    for _ in 0..2 {
        for step in [StepId::DnsRecords, StepId::VnetLink, StepId::PrivateZone] {
            exec(&h, &run(&step, Action::Undo, None))
                .await
                .unwrap_or_else(|e| panic!("undo {step}: {e}"));
        }
    }
    assert!(
        tenant
            .client
            .get(&cname_id, PRIVATE_DNS_API)
            .await
            .unwrap()
            .is_none()
    );
    assert!(arm.resource(&link_id).await.is_none());
    assert!(arm.resource(&zone_id).await.is_none());
}

#[tokio::test]
async fn dns_errors_are_classified() {
    let (arm, h, tenant) = setup().await;
    let vnet = network(&tenant, "flt").await;
    let run = |step: &dyn Display, action: Action, host: Option<&str>| {
        command("flt", spec(), step, action, prior(&vnet, host))
    };

    arm.fault("PUT", ZONE, 403, "AuthorizationFailed", 1).await;
    let e = exec(&h, &run(&StepId::PrivateZone, Action::Do, None))
        .await
        .expect_err("403");
    assert_eq!(e.info.code, "AuthorizationFailed");
    assert!(!e.is_retryable());

    arm.fault("PUT", ZONE, 500, "InternalServerError", 1).await;
    let e = exec(&h, &run(&StepId::PrivateZone, Action::Do, None))
        .await
        .expect_err("500");
    assert!(e.is_retryable());
    exec(&h, &run(&StepId::PrivateZone, Action::Do, None))
        .await
        .expect("retry");

    // 409 Conflict "already linked" counts as success, as in HyperShift.
    arm.fault("PUT", LINK, 409, "Conflict", 1).await;
    let out = exec(&h, &run(&StepId::VnetLink, Action::Do, None))
        .await
        .expect("already linked is success");
    let names = names_of("flt", &spec());
    assert!(s(&out, "vnet_link_id").ends_with(&format!(
        "/privateDnsZones/{}/virtualNetworkLinks/{}",
        names.private_zone, names.vnet_link
    )));
    assert_eq!(arm.count_status("PUT", LINK, 409).await, 1);

    // Records need the control plane's endpoint.
    let e = exec(&h, &run(&StepId::DnsRecords, Action::Do, None))
        .await
        .expect_err("no host");
    assert_eq!(e.info.code, "MissingStepOutput");
    assert_eq!(
        e.info.target.as_deref(),
        Some("controlplane.hostedcluster.control_plane_host")
    );
    let e = exec(&h, &run(&"dns.bogus", Action::Do, None))
        .await
        .expect_err("unknown");
    assert_eq!(e.info.code, "UnknownStep");
}

#[tokio::test]
async fn the_public_zone_of_the_base_domain_is_found_or_refused_up_front() {
    let (arm, h, tenant) = setup().await;
    let lookup = command("demo", spec(), StepId::PublicZone, Action::Do, []);
    // No zone yet: refused, naming the field to change, and nothing written.
    let e = exec(&h, &lookup).await.expect_err("no zone");
    assert_eq!(e.info.code, "PublicZoneNotFound");
    assert!(!e.is_retryable(), "{e:?}");
    assert_eq!(e.info.target.as_deref(), Some("spec.base_domain"));
    assert!(e.info.message.contains("example.com"), "{e:?}");
    assert_eq!(
        arm.requests()
            .await
            .count("PUT", "Microsoft.Network/dnsZones"),
        0
    );

    // The user makes it (any group, another zone beside it): found.
    let group = format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/dns");
    tenant
        .client
        .put(&group, "2021-04-01", &json!({"location": "eastus"}))
        .await
        .expect("group");
    for zone in ["other.org", "example.com"] {
        tenant
            .client
            .put(
                &format!("{group}/providers/Microsoft.Network/dnsZones/{zone}"),
                hypersaga_dns::DNS_API,
                &json!({"location": "global"}),
            )
            .await
            .expect("zone");
    }
    let out = exec(&h, &lookup).await.expect("found");
    assert_eq!(
        out["public_zone"].as_str().map(str::to_ascii_lowercase),
        Some(
            format!("{group}/providers/microsoft.network/dnszones/example.com")
                .to_ascii_lowercase()
        )
    );
}

#[tokio::test]
async fn a_link_azure_accepts_then_refuses_fails_with_azures_words() {
    let (arm, h, tenant) = setup().await;
    let vnet = network(&tenant, "demo").await;
    let run = |step: &dyn Display| command("demo", spec(), step, Action::Do, prior(&vnet, None));
    exec(&h, &run(&StepId::PrivateZone)).await.expect("zone");
    // What Azure answers, after accepting the link, for a VNet already linked to a zone of an
    // overlapping namespace (quoted in MicrosoftDocs/azure-aks-docs#212): a failed operation.
    let refusal = "A virtual network cannot be linked to multiple zones with overlapping \
                   namespaces. You tried to link virtual network with 'a.example.com' and \
                   'example.com' zones.";
    arm.admin
        .add_async_fault(&hypersaga_emulator_arm::AsyncFaultSpec {
            method: "PUT".into(),
            resource_type: LINK.into(),
            name_contains: None,
            path_contains: None,
            code: "BadRequest".into(),
            message: refusal.into(),
            count: None,
        })
        .await
        .expect("fault");
    let e = exec(&h, &run(&StepId::VnetLink))
        .await
        .expect_err("refused");
    // Retrying cannot fix it: the user's network or zones must change.
    assert!(!e.is_retryable(), "{e:?}");
    assert_eq!(e.info.code, "BadRequest");
    assert!(e.info.message.contains("overlapping namespaces"), "{e:?}");
}
