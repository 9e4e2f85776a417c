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
async fn a_base_domain_without_a_public_zone_is_refused_before_anything_is_made() {
    let system = System::start().await;
    system.ready_to_plan("acme").await;
    let mut req = create_request("nozone", 1);
    if let Some(spec) = req.spec.as_mut() {
        spec.base_domain = "not-delegated.example.org".into();
    }
    let before = system.resource_names("acme").await;
    let violations = preflight_refusal(system.client("acme").await.create_cluster(req).await);
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(
        (
            violations[0].subject.as_str(),
            violations[0].r#type.as_str()
        ),
        ("spec.base_domain", "DNS_ZONE")
    );
    assert!(
        violations[0]
            .description
            .contains("not-delegated.example.org"),
        "{violations:?}"
    );
    assert_eq!(system.resource_names("acme").await, before, "nothing made");
}

#[tokio::test]
async fn a_release_the_management_cluster_does_not_support_is_refused_before_anything_is_made() {
    // HyperShift on the management cluster lists the minors it can install; 4.99 is not one.
    // (HyperShift's own refusal of a HostedCluster it was given anyway, and the compensation
    // that follows, are the fault matrix's `controlplane.hostedcluster` row and the
    // controlplane service's tests.)
    let system = System::start().await;
    system.ready_to_plan("acme").await;
    let mut req = create_request("future", 1);
    if let Some(spec) = req.spec.as_mut() {
        spec.release_image = "quay.io/openshift-release-dev/ocp-release:4.99.0-multi".into();
    }
    let before = system.resource_names("acme").await;
    let violations = preflight_refusal(system.client("acme").await.create_cluster(req).await);
    assert_eq!(violations.len(), 1, "{violations:#?}");
    let v = &violations[0];
    assert_eq!(
        (v.subject.as_str(), v.r#type.as_str()),
        ("spec.release_image", "RELEASE")
    );
    assert!(
        v.description.contains("4.14–4.22 and not 4.99"),
        "{violations:?}"
    );
    assert_eq!(system.resource_names("acme").await, before, "nothing made");
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

#[tokio::test]
async fn a_region_and_a_vm_size_azure_does_not_have_are_refused_with_azures_words() {
    let system = System::start().await;
    system.ready_to_plan("acme").await;
    // One cluster in a region Azure does not have, one with a VM size no region has: the
    // preflight reads the region's Resource SKUs (as CAPZ would, minutes later) and refuses
    // both before anything is made, with what the list says.
    let mut mars = create_request("mars", 1);
    let mut zed = create_request("zed", 1);
    if let Some(spec) = mars.spec.as_mut() {
        spec.location = "marsnorth".into();
    }
    if let Some(spec) = zed.spec.as_mut() {
        spec.node_pools[0].vm_size = "Standard_Z99s_v9".into();
    }
    let before = (
        system.resource_names("globex").await,
        system.resource_names("acme").await,
    );
    let (mars, zed) = tokio::join!(
        async { system.client("globex").await.create_cluster(mars).await },
        async { system.client("acme").await.create_cluster(zed).await },
    );
    for (refused, words) in [
        (
            mars,
            "VM size \"Standard_D4s_v5\" not found in Resource SKUs for subscription",
        ),
        (
            zed,
            "VM size \"Standard_Z99s_v9\" not found in Resource SKUs",
        ),
    ] {
        let violations = preflight_refusal(refused);
        assert_eq!(violations.len(), 1, "{violations:#?}");
        let v = &violations[0];
        assert_eq!(
            (v.subject.as_str(), v.r#type.as_str()),
            ("spec.node_pools.workers.vm_size", "VM_SIZE")
        );
        assert!(v.description.contains(words), "{v:?}");
    }
    let after = (
        system.resource_names("globex").await,
        system.resource_names("acme").await,
    );
    assert_eq!(after, before, "nothing made");
}
