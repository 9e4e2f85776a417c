//! Azure failures: a terminal one compensates; retryable ones are retried to success.

use hypersaga_emulator_arm::FaultSpec;

use crate::support::*;

fn fault(
    method: &str,
    ty: &str,
    status: u16,
    code: &str,
    count: Option<u32>,
    retry_after: Option<u64>,
) -> FaultSpec {
    FaultSpec {
        method: method.into(),
        resource_type: ty.into(),
        name_contains: None,
        path_contains: None,
        status,
        code: code.into(),
        message: Some(format!("injected {code}")),
        retry_after_secs: retry_after,
        count,
    }
}

#[tokio::test]
async fn a_terminal_fault_compensates_everything() {
    let system = System::start().await;
    // A few retryable failures first (faults apply in order), so the identity branch has
    // usually finished and compensation has identities to remove; then a terminal 403.
    let admin = system.arm_admin();
    admin
        .add_fault(&fault(
            "PUT",
            "Microsoft.Network/privateDnsZones",
            500,
            "InternalServerError",
            Some(3),
            None,
        ))
        .await
        .expect("fault");
    admin
        .add_fault(&fault(
            "PUT",
            "Microsoft.Network/privateDnsZones",
            403,
            "AuthorizationFailed",
            None,
            None,
        ))
        .await
        .expect("fault");
    system.create("acme", "doomed", 1).await;
    let failed = system.watch_to_end("acme", "doomed").await;
    assert_eq!(phase(&failed), "failed", "{failed:#?}");
    let status = failed.status.clone().unwrap();
    let error = status.error.clone().expect("error");
    assert_eq!(error.step, "dns.private-zone");
    assert_eq!(error.code, "AuthorizationFailed");
    assert!(
        status.message.contains("AuthorizationFailed"),
        "{}",
        status.message
    );

    let s = steps(&failed);
    assert_eq!(
        s["dns.private-zone"].0, "compensated",
        "the failed step's partial work is undone too"
    );
    assert_eq!(s["network.vnet"].0, "compensated");
    assert_eq!(s["network.resource-groups"].0, "compensated");
    // Identities are removed if they were made before the failure, skipped if not.
    assert!(
        ["compensated", "skipped"].contains(&s["identity.workload"].0.as_str()),
        "{s:?}"
    );
    assert_eq!(s["controlplane.hostedcluster"].0, "skipped");

    // Everything created was removed; the tenant's identity group stays for its other clusters.
    let left = system.resource_names("acme").await;
    for r in &left {
        assert!(outlives_clusters(r), "left behind: {r} (all: {left:#?})");
    }

    // A failed cluster can still be deleted; the delete finds nothing left to undo.
    system.arm_admin().clear_faults().await.unwrap();
    system.delete("acme", "doomed").await;
    let gone = system.watch_to_end("acme", "doomed").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
}

#[tokio::test]
async fn retryable_faults_are_retried_until_success() {
    let system = System::start().await;
    let admin = system.arm_admin();
    admin
        .add_fault(&fault(
            "PUT",
            "Microsoft.Network/networkSecurityGroups",
            500,
            "InternalServerError",
            Some(2),
            None,
        ))
        .await
        .unwrap();
    admin
        .add_fault(&fault(
            "PUT",
            "Microsoft.Network/virtualNetworks",
            429,
            "SubscriptionRequestsThrottled",
            Some(2),
            Some(1),
        ))
        .await
        .unwrap();
    system.create("acme", "bumpy", 1).await;
    let ready = system.watch_to_end("acme", "bumpy").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let s = steps(&ready);
    assert_eq!(s["network.nsg"], ("succeeded".to_string(), 3));
    // Throttling is backpressure, not failure: the two 429s cost no attempt.
    assert_eq!(s["network.vnet"], ("succeeded".to_string(), 1));
    let throttled = system
        .audit_events("acme", "bumpy")
        .await
        .iter()
        .filter(|e| e["type"] == "step.throttled")
        .count();
    assert_eq!(throttled, 2, "each 429 was waited out, on the audit stream");
    let faults = admin.faults().await.unwrap();
    assert!(
        faults.is_empty(),
        "every injected failure was used up: {faults:?}"
    );
}

#[tokio::test]
async fn a_failing_control_plane_is_compensated_on_the_management_cluster_too() {
    let system = System::start().await;
    let out = hypersaga(
        &system,
        &[
            "emulator",
            "cluster-fault",
            "add",
            "--kind",
            "hosted-cluster",
            "--reason",
            "InvalidConfiguration",
            "--message",
            "the service account signing key is not a valid RSA key",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    system.create("acme", "sick", 1).await;
    let failed = system.watch_to_end("acme", "sick").await;
    assert_eq!(phase(&failed), "failed", "{failed:#?}");
    let error = failed.status.clone().unwrap().error.expect("error");
    assert_eq!(error.step, "controlplane.hostedcluster");
    assert_eq!(error.code, "HostedClusterInvalid");
    assert!(
        error
            .message
            .contains("ValidConfiguration=False (InvalidConfiguration)")
            && error.message.contains("not a valid RSA key"),
        "{error:?}"
    );
    let s = steps(&failed);
    assert_eq!(s["controlplane.hostedcluster"].0, "compensated");
    assert_eq!(s["nodepool.workers"].0, "skipped");
    assert_eq!(s["identity.workload"].0, "compensated");
    // Nothing of the cluster is left on the management cluster, nor in Azure.
    let objects = system.mgmt_admin().objects().await.unwrap();
    let infra = failed.status.unwrap().infra_id;
    let ns = crate::support::namespace("acme", &infra);
    assert!(
        !objects
            .iter()
            .any(|o| o["metadata"]["namespace"] == ns || o["metadata"]["name"] == ns),
        "{objects:#?}"
    );
    let left = system.resource_names("acme").await;
    for r in &left {
        assert!(outlives_clusters(r), "left behind: {r}");
    }
}

#[tokio::test]
async fn a_base_domain_without_a_public_zone_fails_before_anything_is_made() {
    let system = System::start().await;
    let mut req = create_request("nozone", 1);
    if let Some(spec) = req.spec.as_mut() {
        spec.base_domain = "not-delegated.example.org".into();
    }
    let before = system.resource_names("acme").await;
    system
        .client("acme")
        .await
        .create_cluster(req)
        .await
        .expect("accepted: the zone is looked up by the create itself");
    let failed = system.watch_to_end("acme", "nozone").await;
    assert_eq!(phase(&failed), "failed", "{failed:#?}");
    let error = failed.status.clone().unwrap().error.expect("error");
    assert_eq!(
        (error.step.as_str(), error.code.as_str()),
        ("dns.public-zone", "PublicZoneNotFound")
    );
    assert!(
        error.message.contains("not-delegated.example.org"),
        "{error:?}"
    );
    // Nothing was made, so nothing needed undoing.
    assert!(
        steps(&failed)
            .iter()
            .filter(|(id, _)| id.as_str() != "dns.public-zone")
            .all(|(_, (state, _))| state == "skipped"),
        "{:?}",
        steps(&failed)
    );
    assert_eq!(system.resource_names("acme").await, before);
}

#[tokio::test]
async fn a_release_hypershift_refuses_fails_within_seconds_and_compensates_everything() {
    let system = System::start().await;
    let mut req = create_request("future", 1);
    if let Some(spec) = req.spec.as_mut() {
        spec.release_image = "quay.io/openshift-release-dev/ocp-release:4.99.0-multi".into();
    }
    let started = std::time::Instant::now();
    system
        .client("acme")
        .await
        .create_cluster(req)
        .await
        .expect("accepted");
    let failed = system.watch_to_end("acme", "future").await;
    assert_eq!(phase(&failed), "failed", "{failed:#?}");
    let error = failed.status.clone().unwrap().error.expect("error");
    assert_eq!(
        (error.step.as_str(), error.code.as_str()),
        ("controlplane.hostedcluster", "HostedClusterInvalid")
    );
    assert!(
        error
            .message
            .contains("ValidReleaseImage=False (InvalidImage)")
            && error.message.contains("4.99.0"),
        "{error:?}"
    );
    // Within seconds of the control plane step, not after the 30-minute wait for Available.
    assert!(started.elapsed() < std::time::Duration::from_secs(90));
    let s = steps(&failed);
    assert_eq!(s["controlplane.hostedcluster"].0, "compensated");
    assert_eq!(s["identity.workload"].0, "compensated");
    let left = system.resource_names("acme").await;
    assert!(left.iter().all(|r| outlives_clusters(r)), "{left:#?}");
    let objects = system.mgmt_admin().objects().await.unwrap();
    assert!(
        !objects
            .iter()
            .any(|o| o["kind"] == "HostedCluster" || o["kind"] == "NodePool"),
        "{objects:#?}"
    );
}

#[tokio::test]
async fn a_link_azure_refuses_after_accepting_it_compensates_everything() {
    let system = System::start().await;
    // As Azure answers a VNet link to a zone whose namespace overlaps one the VNet is linked
    // to already: accepted, then the operation fails (MicrosoftDocs/azure-aks-docs#212).
    let out = hypersaga(
        &system,
        &[
            "emulator",
            "fault",
            "add-async",
            "--method",
            "PUT",
            "--type",
            "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
            "--code",
            "BadRequest",
            "--message",
            "A virtual network cannot be linked to multiple zones with overlapping namespaces.",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    system.create("acme", "overlap", 1).await;
    let failed = system.watch_to_end("acme", "overlap").await;
    assert_eq!(phase(&failed), "failed", "{failed:#?}");
    let error = failed.status.clone().unwrap().error.expect("error");
    assert_eq!(
        (error.step.as_str(), error.code.as_str()),
        ("dns.vnet-link", "BadRequest")
    );
    assert!(
        error.message.contains("overlapping namespaces"),
        "{error:?}"
    );
    let left = system.resource_names("acme").await;
    assert!(left.iter().all(|r| outlives_clusters(r)), "{left:#?}");
}

/// Creates `name` for `tenant` from `req`; answers the operation's id.
async fn create_with(
    system: &System,
    tenant: &str,
    req: hypersaga_api::v1::CreateClusterRequest,
) -> String {
    system
        .client(tenant)
        .await
        .create_cluster(req)
        .await
        .expect("accepted: Azure is the judge of regions and sizes")
        .into_inner()
        .id
}

/// The operation as `GetOperation` shows it.
async fn operation(system: &System, tenant: &str, id: &str) -> hypersaga_api::v1::Operation {
    system
        .client(tenant)
        .await
        .get_operation(hypersaga_api::v1::GetOperationRequest { id: id.into() })
        .await
        .expect("operation")
        .into_inner()
}

#[tokio::test]
async fn a_region_and_a_vm_size_azure_does_not_have_fail_the_create_with_azures_words() {
    let system = System::start().await;
    // One cluster in a region Azure does not have (a tenant of its own, whose identity group
    // does not exist yet), one with a VM size no region has.
    let mut mars = create_request("mars", 1);
    let mut zed = create_request("zed", 1);
    if let Some(spec) = mars.spec.as_mut() {
        spec.location = "marsnorth".into();
    }
    if let Some(spec) = zed.spec.as_mut() {
        spec.node_pools[0].vm_size = "Standard_Z99s_v9".into();
    }
    let mars_op = create_with(&system, "globex", mars).await;
    let zed_op = create_with(&system, "acme", zed).await;
    let (mars, zed) = tokio::join!(
        system.watch_to_end("globex", "mars"),
        system.watch_to_end("acme", "zed")
    );

    // The region: ARM refuses the first group of the cluster, and nothing is made.
    assert_eq!(phase(&mars), "failed", "{mars:#?}");
    let error = mars.status.clone().expect("status").error.expect("error");
    assert!(
        ["network.resource-groups", "identity.workload"].contains(&error.step.as_str()),
        "{error:?}"
    );
    assert_eq!(
        error.code, "LocationNotAvailableForResourceGroup",
        "{error:?}"
    );
    assert!(
        error.message.starts_with(
            "The provided location 'marsnorth' is not available for resource group. List of \
             available regions is 'westus,eastus,"
        ),
        "{error:?}"
    );
    assert!(!error.retryable, "{error:?}");
    let op = operation(&system, "globex", &mars_op).await;
    let op_error = op.error.expect("the operation's error");
    assert_eq!(
        (op_error.code.as_str(), op_error.message.as_str()),
        (error.code.as_str(), error.message.as_str())
    );
    let left = system.resource_names("globex").await;
    assert!(
        left.iter().all(|r| !r.contains("mars")),
        "nothing of the cluster: {left:#?}"
    );

    // The size: the node pool step looks it up in the region's Resource SKUs before it applies
    // anything (the list CAPZ would find it missing from later), fails at once with what the
    // list says, and the create compensates.
    assert_eq!(phase(&zed), "failed", "{zed:#?}");
    let error = zed.status.clone().expect("status").error.expect("error");
    assert_eq!(
        (error.step.as_str(), error.code.as_str()),
        ("nodepool.workers", "SkuNotAvailable"),
        "{error:?}"
    );
    assert!(
        error
            .message
            .contains("VM size \"Standard_Z99s_v9\" not found in Resource SKUs"),
        "{error:?}"
    );
    assert!(!error.retryable, "{error:?}");
    let op = operation(&system, "acme", &zed_op).await;
    assert_eq!(
        op.error.map(|e| (e.step, e.code)),
        Some(("nodepool.workers".into(), "SkuNotAvailable".into()))
    );
    let s = steps(&zed);
    assert_eq!(s["nodepool.workers"].0, "compensated", "{s:?}");
    assert_eq!(s["controlplane.hostedcluster"].0, "compensated", "{s:?}");
    let left = system.resource_names("acme").await;
    for r in &left {
        assert!(outlives_clusters(r), "left behind: {r} (all: {left:#?})");
    }
}
