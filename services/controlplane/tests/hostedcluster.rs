//! `controlplane.hostedcluster` against the real management-cluster emulator (TLS, simulated
//! HyperShift operator, ~100 ms delays) and a real Azurite holding the tenant's signing key.

mod common;

use std::time::Duration;

use common::*;
use hypersaga_bus::{Action, NsgOutputs, OidcOutputs, PrivateZoneOutputs, StepId, VnetOutputs};
use hypersaga_controlplane::ControlPlaneHandler;
use hypersaga_emulator_mgmt::{Fault, FaultKind};
use hypersaga_hypershift::HostedCluster;
use hypersaga_oidc::SigningKey;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::{Api, Resource};

const STEP: StepId = StepId::HostedCluster;
const DELAY: Duration = Duration::from_millis(100);

/// The management cluster, Azurite holding tenant acme's signing key, and the handler.
async fn started() -> (Mgmt, Azurite, ControlPlaneHandler) {
    hypersaga_devca::install_crypto_provider();
    let (mgmt, az) = tokio::join!(mgmt(DELAY), azurite());
    key_store(&az)
        .store("acme", &SigningKey::generate().expect("key"))
        .await
        .expect("store key");
    let handler = ControlPlaneHandler::new(&config(&mgmt, Some(&az), &["acme"]))
        .await
        .expect("handler");
    (mgmt, az, handler)
}

/// The emulator's delays in the test that watches the control plane come up: long enough
/// that its pods' restart (`Degraded=True` for the first half of the rollout) is seen by
/// checks ~100 ms apart on a loaded machine.
const OBSERVED_DELAY: Duration = Duration::from_secs(1);

#[tokio::test]
async fn do_is_idempotent_and_undo_removes_everything() {
    hypersaga_devca::install_crypto_provider();
    let (mgmt, az) = tokio::join!(mgmt(OBSERVED_DELAY), azurite());
    let key = SigningKey::generate().expect("key");
    key_store(&az).store("acme", &key).await.expect("store key");
    let handler = ControlPlaneHandler::new(&config(&mgmt, Some(&az), &["acme"]))
        .await
        .expect("handler");

    let cmd = command("acme", "demo", STEP, Action::Do, vec![]);
    let names = cmd.context.names.clone();
    let ns = names.namespace.clone();
    let notes = Collect::default();
    let outputs = within("do", drive(&handler, &cmd, &notes))
        .await
        .expect("do succeeds");

    // Outputs.
    assert_eq!(
        outputs["hosted_cluster_id"],
        format!("hostedclusters.hypershift.openshift.io/{ns}/demo")
    );
    assert_eq!(outputs["namespace_id"], format!("namespaces/{ns}"));
    assert!(
        outputs["control_plane_host"]
            .as_str()
            .is_some_and(|h| !h.is_empty()),
        "{outputs:?}"
    );
    assert_eq!(outputs["control_plane_port"], 7443);
    assert!(
        notes
            .notes()
            .iter()
            .any(|n| n.contains("Available=False") || n.contains("HyperShift operator")),
        "progress notes: {:?}",
        notes.notes()
    );
    // The control-plane pods starting showed as Degraded, which is progress, not failure.
    assert!(
        notes
            .notes()
            .iter()
            .any(|n| n.contains("Degraded=True (UnavailableReplicas)")),
        "progress notes: {:?}",
        notes.notes()
    );

    // The HostedCluster, as HyperShift's CLI would write it, and Available.
    let hcs: Api<HostedCluster> = Api::namespaced(mgmt.client.clone(), &ns);
    let hc = hcs.get("demo").await.expect("hostedcluster");
    assert!(hc.is_available());
    let labels = hc.meta().labels.clone().unwrap_or_default();
    assert_eq!(labels["hypersaga.io/tenant"], "acme");
    assert_eq!(labels["hypersaga.io/cluster"], "demo");
    assert_eq!(labels["hypersaga.io/saga"], "saga-demo");
    let spec = &hc.spec;
    assert_eq!(spec.release.image, IMAGE);
    assert_eq!(spec.infra_id, names.infra_id);
    let oidc: OidcOutputs = cmd.context.outputs_of(&StepId::Oidc).unwrap();
    assert_eq!(spec.issuer_url, Some(oidc.issuer_url));
    assert_eq!(
        spec.pull_secret.as_ref().map(|r| r.name.as_str()),
        Some(names.pull_secret.as_str())
    );
    assert_eq!(
        spec.service_account_signing_key
            .as_ref()
            .map(|r| r.name.as_str()),
        Some("demosa-token-issuer-key")
    );
    let dns = spec.dns.as_ref().expect("dns");
    assert_eq!(dns.base_domain, "example.com");
    let zone: PrivateZoneOutputs = cmd.context.outputs_of(&StepId::PrivateZone).unwrap();
    assert_eq!(dns.private_zone_id, Some(zone.private_zone_id));
    // The user's public zone, so that `*.apps` resolves publicly.
    let public: hypersaga_bus::PublicZoneOutputs =
        cmd.context.outputs_of(&StepId::PublicZone).unwrap();
    assert_eq!(dns.public_zone_id, Some(public.public_zone));
    let net = spec.networking.as_ref().expect("networking");
    assert_eq!(net.cluster_network[0].cidr, "10.132.0.0/14");
    assert_eq!(net.service_network[0].cidr, "172.31.0.0/16");
    assert_eq!(net.machine_network[0].cidr, "10.0.0.0/16");
    assert_eq!(net.network_type.as_deref(), Some("OVNKubernetes"));
    let services: Vec<(String, String)> = spec
        .services
        .iter()
        .map(|s| {
            (
                s.service.clone(),
                s.service_publishing_strategy.type_.clone(),
            )
        })
        .collect();
    assert!(
        services.contains(&("APIServer".into(), "LoadBalancer".into())),
        "{services:?}"
    );
    for route in ["OAuthServer", "Konnectivity", "Ignition"] {
        assert!(
            services.contains(&(route.into(), "Route".into())),
            "{services:?}"
        );
    }
    assert_eq!(spec.platform.type_, "Azure");
    let azure = spec.platform.azure.as_ref().expect("azure");
    assert_eq!(azure.location, "eastus");
    assert_eq!(azure.resource_group, names.managed_rg);
    let vnet: VnetOutputs = cmd.context.outputs_of(&StepId::Vnet).unwrap();
    assert_eq!(azure.vnet_id, vnet.vnet_id);
    assert_eq!(azure.subnet_id, vnet.subnet_id);
    let nsg: NsgOutputs = cmd.context.outputs_of(&StepId::Nsg).unwrap();
    assert_eq!(azure.security_group_id, nsg.nsg_id);
    assert_eq!(azure.subscription_id, SUBSCRIPTION);
    assert_eq!(azure.tenant_id, AZURE_TENANT);
    assert_eq!(azure.cloud.as_deref(), Some("AzurePublicCloud"));
    assert_eq!(azure.topology.as_deref(), Some("Public"));
    let auth = &azure.azure_authentication_config;
    assert_eq!(auth.azure_authentication_config_type, "WorkloadIdentities");
    let wi = auth
        .workload_identities
        .as_ref()
        .expect("workload identities");
    assert_eq!(wi.disk.client_id, "00000000-0000-0000-0000-000000000004");
    assert_eq!(wi.network.client_id, "00000000-0000-0000-0000-000000000007");

    // Namespace and secrets.
    let namespaces: Api<Namespace> = Api::all(mgmt.client.clone());
    let n = namespaces.get(&ns).await.expect("namespace");
    assert_eq!(
        n.metadata.labels.as_ref().expect("labels")["hypersaga.io/tenant"],
        "acme"
    );
    let secrets: Api<Secret> = Api::namespaced(mgmt.client.clone(), &ns);
    let pull = secrets.get(&names.pull_secret).await.expect("pull secret");
    assert_eq!(
        pull.type_.as_deref(),
        Some("kubernetes.io/dockerconfigjson")
    );
    assert_eq!(
        pull.data.as_ref().expect("data")[".dockerconfigjson"].0,
        common::PULL_SECRET.as_bytes()
    );
    let signing = secrets
        .get(&names.signing_key_secret)
        .await
        .expect("signing key secret");
    assert_eq!(
        signing.data.as_ref().expect("data")["key"].0,
        key.private_key_pem().into_bytes()
    );
    let creds = secrets
        .get(&names.cloud_credentials_secret)
        .await
        .expect("cloud credentials");
    let data = creds.data.as_ref().expect("data");
    assert_eq!(data["AZURE_SUBSCRIPTION_ID"].0, SUBSCRIPTION.as_bytes());
    assert_eq!(data["AZURE_TENANT_ID"].0, AZURE_TENANT.as_bytes());
    assert_eq!(
        creds.metadata.labels.as_ref().expect("labels")["hypershift.openshift.io/safe-to-delete-with-cluster"],
        "true"
    );

    // Do again: same object, nothing rewritten, same outputs.
    let before = (
        hc.meta().uid.clone(),
        hc.meta().resource_version.clone(),
        hc.meta().generation,
    );
    let again = within("do again", drive(&handler, &cmd, &notes))
        .await
        .expect("second do succeeds");
    assert_eq!(again, outputs);
    let hc2 = hcs.get("demo").await.expect("hostedcluster");
    assert_eq!(
        (
            hc2.meta().uid.clone(),
            hc2.meta().resource_version.clone(),
            hc2.meta().generation
        ),
        before
    );
    assert_eq!(
        hcs.list(&Default::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );
    let ns_before = n.metadata.resource_version.clone();
    assert_eq!(
        namespaces
            .get(&ns)
            .await
            .expect("namespace")
            .metadata
            .resource_version,
        ns_before
    );

    // Undo: everything gone; again: still fine.
    let undo = command("acme", "demo", STEP, Action::Undo, vec![]);
    let out = within("undo", drive(&handler, &undo, &notes))
        .await
        .expect("undo succeeds");
    assert!(out.is_empty());
    assert!(
        objects_in(&mgmt.emulator, &ns).is_empty(),
        "left behind: {:?}",
        objects_in(&mgmt.emulator, &ns)
    );
    within("undo again", drive(&handler, &undo, &notes))
        .await
        .expect("second undo succeeds");
}

#[tokio::test]
async fn a_hosted_cluster_hypershift_refuses_fails_fast_with_its_words() {
    let (mgmt, _az, handler) = started().await;
    mgmt.emulator.inject_fault(Fault {
        kind: FaultKind::HostedCluster,
        name_contains: Some("broken".into()),
        condition: Some("ValidConfiguration".into()),
        reason: "InvalidConfiguration".into(),
        message: "the service account signing key is not a valid RSA key".into(),
    });
    let cmd = command("acme", "broken", STEP, Action::Do, vec![]);
    let err = within("do", drive(&handler, &cmd, &Collect::default()))
        .await
        .expect_err("refused");
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(err.info.code, "HostedClusterInvalid");
    assert!(
        err.info
            .message
            .contains("ValidConfiguration=False (InvalidConfiguration)"),
        "{err}"
    );
    assert!(err.info.message.contains("not a valid RSA key"), "{err}");
    assert_eq!(
        err.info.target.as_deref(),
        Some(format!("HostedCluster/{}/broken", cmd.context.names.namespace).as_str())
    );

    // Compensation still cleans up a degraded cluster.
    let undo = command("acme", "broken", STEP, Action::Undo, vec![]);
    within("undo", drive(&handler, &undo, &Collect::default()))
        .await
        .expect("undo succeeds");
    assert!(objects_in(&mgmt.emulator, &cmd.context.names.namespace).is_empty());
}

#[tokio::test]
async fn missing_inputs_and_keys_are_classified() {
    hypersaga_devca::install_crypto_provider();
    let (mgmt, az) = tokio::join!(mgmt(DELAY), azurite());
    let handler = ControlPlaneHandler::new(&config(&mgmt, Some(&az), &["acme"]))
        .await
        .expect("handler");

    // No signing key stored yet: retryable (identity.oidc may still be writing it).
    let cmd = command("acme", "demo", STEP, Action::Do, vec![]);
    let err = handler
        .execute(&cmd, &Collect::default())
        .await
        .expect_err("no key");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(err.info.code, "SigningKeyNotFound");

    // A missing output of an earlier step: terminal, naming it.
    let mut cmd = command("acme", "demo", STEP, Action::Do, vec![]);
    cmd.context
        .outputs
        .remove(StepId::PrivateZone.to_string().as_str());
    let err = handler
        .execute(&cmd, &Collect::default())
        .await
        .expect_err("missing input");
    assert!(!err.is_retryable());
    assert_eq!(err.info.code, "MissingInput");
    assert!(err.info.message.contains("private_zone_id"), "{err}");

    // An unknown tenant: terminal.
    let cmd = command("other", "demo", STEP, Action::Do, vec![]);
    let err = handler
        .execute(&cmd, &Collect::default())
        .await
        .expect_err("unknown tenant");
    assert_eq!(err.info.code, "TenantNotConfigured");

    // Nothing was written by any of these.
    assert!(objects_in(&mgmt.emulator, &cmd.context.names.namespace).is_empty());
}

#[tokio::test]
async fn a_release_hypershift_does_not_support_fails_within_seconds() {
    let (_mgmt, _az, handler) = started().await;
    let mut cmd = command("acme", "future", STEP, Action::Do, vec![]);
    cmd.context.spec.release_image =
        "quay.io/openshift-release-dev/ocp-release:4.99.0-multi".into();
    let started = std::time::Instant::now();
    let err = within("do", drive(&handler, &cmd, &Collect::default()))
        .await
        .expect_err("refused");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(err.info.code, "HostedClusterInvalid");
    assert!(
        err.info
            .message
            .contains("ValidReleaseImage=False (InvalidImage)"),
        "{err}"
    );
    assert!(err.info.message.contains("4.99.0"), "{err}");
}
