//! The network steps against the real ARM emulator: do, do again (adopted, no new writes),
//! undo, undo again (404 is success), user-brought networks, injected faults.

use hypersaga_bus::{Action, Outputs, StepCommand, StepError, StepId};
use hypersaga_model::{ClusterSpec, TenantId};
use hypersaga_network::{NETWORK_API, NetworkHandler, RESOURCES_API};
use hypersaga_stepkit::ArmStep;
use hypersaga_stepkit::{ArmClients, LogNotes};
use hypersaga_testkit::{SUBSCRIPTION, TestArm, command, spec};
use serde_json::{Value, json};

async fn exec(h: &NetworkHandler, cmd: &StepCommand) -> Result<Outputs, StepError> {
    h.execute(cmd, &LogNotes).await
}

fn out(o: &Outputs, key: &str) -> String {
    o.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("output {key} in {o:?}"))
        .to_owned()
}

/// Runs the five create steps in DAG order, feeding outputs forward.
async fn create_all(
    h: &NetworkHandler,
    cluster: &str,
    spec: &ClusterSpec,
) -> Vec<(String, Outputs)> {
    let mut done: Vec<(String, Outputs)> = Vec::new();
    for step in [
        StepId::ResourceGroups,
        StepId::Nsg,
        StepId::Vnet,
        StepId::PublicIp,
        StepId::LoadBalancer,
    ] {
        let cmd = command(cluster, spec.clone(), &step, Action::Do, done.clone());
        let o = exec(h, &cmd)
            .await
            .unwrap_or_else(|e| panic!("{step}: {e}"));
        done.push((step.to_string(), o));
    }
    done
}

fn tagged(resource: &Value, cluster: &str) {
    assert_eq!(
        resource["tags"],
        json!({"hypersaga.io_tenant": "acme", "hypersaga.io_cluster": cluster, "hypersaga.io_saga": format!("saga-{cluster}")}),
        "{resource}"
    );
}

#[tokio::test]
async fn create_adopt_and_delete_the_network() {
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let h = NetworkHandler::new(&arm.config(None)).expect("handler");
    let spec = spec();
    let done = create_all(&h, "demo", &spec).await;
    let o = |step: StepId| {
        done.iter()
            .find(|(s, _)| *s == step)
            .map(|(_, o)| o.clone())
            .expect("step ran")
    };

    // Resource groups: all three, with names from docs/reference/hypershift-azure.md §1.1.
    let rgs = o(StepId::ResourceGroups);
    let names = hypersaga_testkit::names_of("demo", &spec);
    let rg = |n: &str| format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/{n}");
    assert_eq!(out(&rgs, "managed_rg_id"), rg(&names.managed_rg));
    assert_eq!(out(&rgs, "vnet_rg_id"), rg(&names.vnet_rg));
    assert_eq!(out(&rgs, "nsg_rg_id"), rg(&names.nsg_rg));
    for key in ["managed_rg_id", "vnet_rg_id", "nsg_rg_id"] {
        let r = arm.resource(&out(&rgs, key)).await.expect("rg exists");
        assert_eq!(r["location"], "eastus");
        tagged(&r, "demo");
    }

    let nsg_id = out(&o(StepId::Nsg), "nsg_id");
    assert_eq!(
        nsg_id,
        format!(
            "{}/providers/Microsoft.Network/networkSecurityGroups/{}",
            rg(&names.nsg_rg),
            names.nsg
        )
    );
    let nsg = arm.resource(&nsg_id).await.expect("nsg");
    assert_eq!(nsg["properties"]["securityRules"], json!([]));
    tagged(&nsg, "demo");

    let vnet_out = o(StepId::Vnet);
    let vnet_id = out(&vnet_out, "vnet_id");
    assert_eq!(
        vnet_id,
        format!(
            "{}/providers/Microsoft.Network/virtualNetworks/{}",
            rg(&names.vnet_rg),
            names.vnet
        )
    );
    assert_eq!(
        out(&vnet_out, "subnet_id"),
        format!("{vnet_id}/subnets/default")
    );
    let vnet = arm.resource(&vnet_id).await.expect("vnet");
    assert_eq!(
        vnet["properties"]["addressSpace"]["addressPrefixes"],
        json!(["10.0.0.0/16"])
    );
    let subnet = &vnet["properties"]["subnets"][0];
    assert_eq!(subnet["name"], "default");
    assert_eq!(subnet["properties"]["addressPrefix"], "10.0.0.0/24");
    assert!(
        subnet["properties"]["networkSecurityGroup"]["id"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case(&nsg_id)
    );
    tagged(&vnet, "demo");

    let pip_id = out(&o(StepId::PublicIp), "public_ip_id");
    assert_eq!(
        pip_id,
        format!(
            "{}/providers/Microsoft.Network/publicIPAddresses/{}",
            rg(&names.managed_rg),
            names.infra_id
        )
    );
    let pip = arm.resource(&pip_id).await.expect("pip");
    assert_eq!(pip["sku"]["name"], "Standard");
    assert_eq!(pip["properties"]["publicIPAllocationMethod"], "Static");
    assert_eq!(pip["properties"]["publicIPAddressVersion"], "IPv4");
    assert_eq!(pip["properties"]["idleTimeoutInMinutes"], 4);

    let lb_id = out(&o(StepId::LoadBalancer), "load_balancer_id");
    assert_eq!(
        lb_id,
        format!(
            "{}/providers/Microsoft.Network/loadBalancers/{}",
            rg(&names.managed_rg),
            names.infra_id
        )
    );
    let lb = arm.resource(&lb_id).await.expect("lb");
    assert_eq!(lb["sku"]["name"], "Standard");
    let p = &lb["properties"];
    assert_eq!(
        p["frontendIPConfigurations"][0]["name"],
        names.infra_id.as_str()
    );
    assert!(
        p["frontendIPConfigurations"][0]["properties"]["publicIPAddress"]["id"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case(&pip_id)
    );
    assert_eq!(p["backendAddressPools"][0]["name"], names.infra_id.as_str());
    assert_eq!(p["probes"][0]["properties"]["port"], 30595);
    assert_eq!(p["probes"][0]["properties"]["requestPath"], "/healthz");
    assert_eq!(
        p["outboundRules"][0]["properties"]["allocatedOutboundPorts"],
        1024
    );
    assert_eq!(p["outboundRules"][0]["properties"]["protocol"], "All");
    tagged(&lb, "demo");

    // Do again: everything adopted, no new writes, same outputs.
    let puts = |stats: &hypersaga_testkit::RequestStats| {
        [
            "Microsoft.Resources/resourceGroups",
            "Microsoft.Network/networkSecurityGroups",
            "Microsoft.Network/virtualNetworks",
            "Microsoft.Network/publicIPAddresses",
            "Microsoft.Network/loadBalancers",
        ]
        .map(|t| stats.count("PUT", t))
    };
    let before = puts(&arm.requests().await);
    assert_eq!(before, [3, 1, 1, 1, 1]);
    let again = create_all(&h, "demo", &spec).await;
    assert_eq!(again, done);
    assert_eq!(
        puts(&arm.requests().await),
        before,
        "a second do must adopt, not write"
    );
    let inventory = arm.resources().await;
    assert_eq!(
        inventory
            .iter()
            .filter(|r| r["type"] == "Microsoft.Network/loadBalancers")
            .count(),
        1
    );

    // Undo in reverse DAG order: everything goes.
    for step in [
        StepId::LoadBalancer,
        StepId::PublicIp,
        StepId::Vnet,
        StepId::Nsg,
        StepId::ResourceGroups,
    ] {
        let cmd = command("demo", spec.clone(), &step, Action::Undo, done.clone());
        assert_eq!(
            exec(&h, &cmd)
                .await
                .unwrap_or_else(|e| panic!("undo {step}: {e}")),
            Outputs::new()
        );
    }
    assert!(
        arm.resources().await.is_empty(),
        "left behind: {:#?}",
        arm.resources().await
    );
    // Undo again: 404 is success.
    for step in [
        StepId::LoadBalancer,
        StepId::PublicIp,
        StepId::Vnet,
        StepId::Nsg,
    ] {
        let cmd = command("demo", spec.clone(), &step, Action::Undo, done.clone());
        exec(&h, &cmd)
            .await
            .unwrap_or_else(|e| panic!("second undo {step}: {e}"));
    }
}

fn user_spec() -> ClusterSpec {
    let base = format!(
        "/subscriptions/{SUBSCRIPTION}/resourceGroups/user-net/providers/Microsoft.Network"
    );
    let mut s = spec();
    s.network.vnet_id = Some(format!("{base}/virtualNetworks/corp"));
    s.network.subnet_id = Some(format!("{base}/virtualNetworks/corp/subnets/workers"));
    s.network.nsg_id = Some(format!("{base}/networkSecurityGroups/corp-nsg"));
    s
}

#[tokio::test]
async fn user_brought_network_is_read_never_written_or_deleted() {
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let config = arm.config(None);
    let h = NetworkHandler::new(&config).expect("handler");
    let spec = user_spec();
    let net = &spec.network;

    // The NSG is looked up, and missing is terminal, pointing at the spec field.
    let cmd = command("byo", spec.clone(), StepId::Nsg, Action::Do, []);
    let e = exec(&h, &cmd).await.expect_err("no user NSG yet");
    assert_eq!(e.info.code, "UserNetworkNotFound");
    assert_eq!(e.info.target.as_deref(), Some("spec.network.nsg_id"));
    assert!(!e.is_retryable());

    // The user creates their network.
    let user = ArmClients::new(&config)
        .expect("clients")
        .tenant(&TenantId::new("acme").unwrap())
        .expect("tenant");
    let c = &user.client;
    c.put(
        &user.resource_group_id("user-net"),
        RESOURCES_API,
        &json!({"location": "eastus"}),
    )
    .await
    .expect("user rg");
    let nsg_id = net.nsg_id.clone().unwrap();
    c.put(&nsg_id, NETWORK_API, &json!({"location": "eastus"}))
        .await
        .expect("user nsg");
    c.put(
        net.vnet_id.as_deref().unwrap(),
        NETWORK_API,
        &json!({"location": "eastus", "properties": {
            "addressSpace": {"addressPrefixes": ["172.16.0.0/16"]},
            "subnets": [{"name": "workers", "properties": {"addressPrefix": "172.16.1.0/24", "networkSecurityGroup": {"id": nsg_id}}}],
        }}),
    )
    .await
    .expect("user vnet");

    // A subnet's room is what ARM says of it: its prefix, less Azure's five addresses and the
    // IP configurations placed in it (a NIC of the user's here).
    use hypersaga_worker::StepHandler;
    let base = format!(
        "/subscriptions/{SUBSCRIPTION}/resourceGroups/user-net/providers/Microsoft.Network"
    );
    c.put(
        &format!("{base}/networkInterfaces/jumpbox"),
        NETWORK_API,
        &json!({"location": "eastus", "properties": {"ipConfigurations": [
            {"name": "ipconfig1", "properties": {"subnet": {"id": net.subnet_id}}}
        ]}}),
    )
    .await
    .expect("a NIC in the subnet");
    let mut crowded = spec.clone();
    crowded.node_pools = vec![hypersaga_model::NodePoolSpec::new(
        "workers",
        251,
        "Standard_D4s_v5",
    )];
    let plan = h
        .plan(&command("byo", crowded, StepId::Vnet, Action::Do, []))
        .await
        .expect("plan");
    let room: Vec<_> = plan
        .findings
        .iter()
        .filter(|f| f.field == "spec.network.subnet_id")
        .collect();
    assert!(
        room.len() == 1 && room[0].message.contains("has 250 free addresses"),
        "{:?}",
        plan.findings
    );
    let plan = h
        .plan(&command("byo", spec.clone(), StepId::Vnet, Action::Do, []))
        .await
        .expect("plan");
    assert!(plan.findings.is_empty(), "{:?}", plan.findings);

    let done = create_all(&h, "byo", &spec).await;
    let o = |step: StepId| {
        done.iter()
            .find(|(s, _)| *s == step)
            .map(|(_, o)| o.clone())
            .expect("step ran")
    };
    let rgs = o(StepId::ResourceGroups);
    assert!(rgs.contains_key("managed_rg_id"));
    assert!(
        !rgs.contains_key("vnet_rg_id") && !rgs.contains_key("nsg_rg_id"),
        "{rgs:?}"
    );
    assert_eq!(out(&o(StepId::Nsg), "nsg_id"), nsg_id);
    assert_eq!(
        out(&o(StepId::Vnet), "vnet_id"),
        net.vnet_id.clone().unwrap()
    );
    assert_eq!(
        out(&o(StepId::Vnet), "subnet_id"),
        net.subnet_id.clone().unwrap()
    );
    let stats = arm.requests().await;
    assert_eq!(
        stats.count("PUT", "Microsoft.Network/networkSecurityGroups"),
        1,
        "only the user's own PUT"
    );
    assert_eq!(
        stats.count("PUT", "Microsoft.Network/virtualNetworks"),
        1,
        "only the user's own PUT"
    );
    assert_eq!(
        stats.count("PUT", "Microsoft.Resources/resourceGroups"),
        2,
        "user RG + managed RG only"
    );

    // Undo everything: the user's network and resource group survive.
    for step in [
        StepId::LoadBalancer,
        StepId::PublicIp,
        StepId::Vnet,
        StepId::Nsg,
        StepId::ResourceGroups,
    ] {
        let cmd = command("byo", spec.clone(), &step, Action::Undo, done.clone());
        exec(&h, &cmd)
            .await
            .unwrap_or_else(|e| panic!("undo {step}: {e}"));
    }
    let stats = arm.requests().await;
    assert_eq!(
        stats.count("DELETE", "Microsoft.Network/networkSecurityGroups"),
        0
    );
    assert_eq!(
        stats.count("DELETE", "Microsoft.Network/virtualNetworks"),
        0
    );
    assert!(arm.resource(&nsg_id).await.is_some());
    assert!(
        arm.resource(net.vnet_id.as_deref().unwrap())
            .await
            .is_some()
    );
    assert!(
        arm.resource(&user.resource_group_id("user-net"))
            .await
            .is_some()
    );
    let managed = out(&rgs, "managed_rg_id");
    assert!(arm.resource(&managed).await.is_none(), "managed RG deleted");
}

#[tokio::test]
async fn azure_errors_are_classified() {
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let h = NetworkHandler::new(&arm.config(None)).expect("handler");
    let spec = spec();
    let rgs = exec(
        &h,
        &command("flt", spec.clone(), StepId::ResourceGroups, Action::Do, []),
    )
    .await
    .expect("rgs");
    let prior = vec![(StepId::ResourceGroups.to_string(), rgs)];

    // 403 on the NSG PUT: terminal, Azure's code kept.
    arm.fault(
        "PUT",
        "Microsoft.Network/networkSecurityGroups",
        403,
        "AuthorizationFailed",
        1,
    )
    .await;
    let e = exec(
        &h,
        &command("flt", spec.clone(), StepId::Nsg, Action::Do, prior.clone()),
    )
    .await
    .expect_err("403");
    assert_eq!(e.info.code, "AuthorizationFailed");
    assert!(!e.is_retryable(), "{e}");

    // 500 on the public IP PUT: retryable; the retry then succeeds.
    arm.fault(
        "PUT",
        "Microsoft.Network/publicIPAddresses",
        500,
        "InternalServerError",
        1,
    )
    .await;
    let cmd = command(
        "flt",
        spec.clone(),
        StepId::PublicIp,
        Action::Do,
        prior.clone(),
    );
    let e = exec(&h, &cmd).await.expect_err("500");
    assert!(e.is_retryable(), "{e}");
    assert_eq!(e.info.code, "InternalServerError");
    exec(&h, &cmd).await.expect("retry succeeds");

    // 429 with Retry-After: retryable, delay passed on.
    arm.admin
        .add_fault(&hypersaga_testkit::FaultSpec {
            method: "GET".into(),
            resource_type: "Microsoft.Network/loadBalancers".into(),
            name_contains: None,
            path_contains: None,
            status: 429,
            code: "TooManyRequests".into(),
            message: None,
            retry_after_secs: Some(7),
            count: Some(1),
        })
        .await
        .expect("fault");
    let e = exec(
        &h,
        &command(
            "flt",
            spec.clone(),
            StepId::LoadBalancer,
            Action::Do,
            prior.clone(),
        ),
    )
    .await
    .expect_err("429");
    // The LB step checks its input before calling ARM: without the public IP output it is a
    // plan bug, reported terminal; with it, the throttled GET is retryable.
    assert_eq!(e.info.code, "MissingStepOutput");
    let pip = exec(&h, &cmd).await.expect("pip adopted");
    let mut with_pip = prior.clone();
    with_pip.push((StepId::PublicIp.to_string(), pip));
    let e = exec(
        &h,
        &command(
            "flt",
            spec.clone(),
            StepId::LoadBalancer,
            Action::Do,
            with_pip,
        ),
    )
    .await
    .expect_err("429");
    assert!(e.is_retryable());
    assert_eq!(e.retry_after_ms, Some(7000));

    // Unknown step and unknown tenant.
    let e = exec(
        &h,
        &command("flt", spec.clone(), "network.bogus", Action::Do, []),
    )
    .await
    .expect_err("unknown");
    assert_eq!(e.info.code, "UnknownStep");
    assert!(!e.is_retryable());
    let mut cmd = command("flt", spec.clone(), StepId::Nsg, Action::Do, []);
    cmd.tenant = TenantId::new("nobody").unwrap();
    let e = exec(&h, &cmd).await.expect_err("unknown tenant");
    assert_eq!(e.info.code, "TenantNotConfigured");
    assert!(!e.is_retryable());
}

/// The permission check that ends each plan: ARM's permissions list at the public zone's
/// group, read once for every plan of the tenant within 30 s; a principal refused even that
/// read holds nothing, so each action its plan needs is a `PERMISSION` finding there.
#[tokio::test]
async fn plans_find_the_permissions_the_tenants_principal_lacks() {
    use hypersaga_bus::PublicZoneOutputs;
    use hypersaga_testkit::{prior, tenant};
    use hypersaga_worker::StepHandler;

    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let config = arm.config(None);
    let user = ArmClients::new(&config)
        .expect("clients")
        .tenant(&tenant())
        .expect("tenant");
    let zone_group = user.resource_group_id("dns");
    user.client
        .put(&zone_group, RESOURCES_API, &json!({"location": "eastus"}))
        .await
        .expect("the zone's group");
    let cmd = |step: StepId| {
        let zone = PublicZoneOutputs {
            public_zone: format!("{zone_group}/providers/Microsoft.Network/dnsZones/example.com"),
        };
        command(
            "perm",
            spec(),
            step,
            Action::Do,
            [prior(StepId::PublicZone, zone)],
        )
    };
    const LIST: &str = "Microsoft.Authorization/permissions";

    // Refused the read: every action the plan needs is missing, once each.
    arm.fault("GET", LIST, 403, "AuthorizationFailed", 1).await;
    let refused = NetworkHandler::new(&config).expect("handler");
    let plan = refused
        .plan(&cmd(StepId::ResourceGroups))
        .await
        .expect("plan");
    assert_eq!(plan.changes.len(), 3, "{plan:#?}");
    let [finding] = plan.findings.as_slice() else {
        panic!("one action, one finding: {:#?}", plan.findings);
    };
    assert_eq!(
        (finding.kind.as_str(), finding.field.as_str()),
        ("PERMISSION", zone_group.as_str())
    );
    assert!(
        finding
            .message
            .contains("'Microsoft.Resources/subscriptions/resourceGroups/write'"),
        "{finding:?}"
    );
    assert!(finding.remedy.contains("Contributor"), "{finding:?}");

    // The operator's principal owns the subscription: nothing missing, and the plans of every
    // step share one read.
    let h = NetworkHandler::new(&config).expect("handler");
    for step in [StepId::ResourceGroups, StepId::PublicIp] {
        let plan = h.plan(&cmd(step)).await.expect("plan");
        assert!(plan.findings.is_empty(), "{:#?}", plan.findings);
    }
    assert_eq!(arm.count_status("GET", LIST, 403).await, 1);
    assert_eq!(arm.count_status("GET", LIST, 200).await, 1);
}
