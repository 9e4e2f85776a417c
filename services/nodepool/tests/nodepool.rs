//! `nodepool.<pool>` against the real management-cluster emulator (TLS, simulated HyperShift
//! operator, ~100 ms delays).

// The controlplane service's harness (emulator over TLS, hand-built step commands).
#[path = "../../controlplane/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use hypersaga_bus::{Action, NsgOutputs, StepId, VnetOutputs};
use hypersaga_emulator_mgmt::{Fault, FaultKind};
use hypersaga_hypershift::*;
use hypersaga_model::NodePoolSpec as PoolSpec;
use hypersaga_nodepool::NodePoolHandler;
use hypersaga_testkit::TestArm;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams};

const DELAY: Duration = Duration::from_millis(100);

#[async_trait::async_trait]
impl Execute for NodePoolHandler {
    async fn exec(
        &self,
        cmd: &hypersaga_bus::StepCommand,
        notes: &dyn hypersaga_stepkit::Notes,
    ) -> Result<hypersaga_worker::StepResult, hypersaga_bus::StepError> {
        self.execute(cmd, notes).await
    }
}

/// `config` reaching Azure through `arm` (where the vCPU quota is read) as tenant `acme`.
fn with_arm(mut config: hypersaga_config::Config, arm: &TestArm) -> hypersaga_config::Config {
    let az = arm.config(None);
    config.azure = az.azure;
    config.tenants = az.tenants;
    config
}

fn pool(name: &str, replicas: i32) -> PoolSpec {
    PoolSpec::new(name, replicas, "Standard_D4s_v5")
}

/// Puts the namespace and an (eventually Available) HostedCluster on the emulator, as the
/// controlplane step would have.
async fn hosted_cluster(mgmt: &Mgmt, cmd: &hypersaga_bus::StepCommand) {
    let names = &cmd.context.names;
    let ns = names.namespace.as_str();
    let params = PatchParams::apply("test").force();
    let namespaces: Api<Namespace> = Api::all(mgmt.client.clone());
    let mut n = Namespace::default();
    n.metadata.name = Some(ns.into());
    namespaces
        .patch(ns, &params, &Patch::Apply(&n))
        .await
        .expect("namespace");
    // The pull secret the HostedCluster names: HyperShift reads it before anything else.
    let mut pull = Secret::default();
    pull.metadata.name = Some(names.pull_secret.clone());
    pull.type_ = Some("kubernetes.io/dockerconfigjson".into());
    pull.string_data = Some(
        [(
            ".dockerconfigjson".to_owned(),
            r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#.to_owned(),
        )]
        .into(),
    );
    let secrets: Api<Secret> = Api::namespaced(mgmt.client.clone(), ns);
    secrets
        .patch(&names.pull_secret, &params, &Patch::Apply(&pull))
        .await
        .expect("pull secret");
    let vnet: VnetOutputs = cmd.context.outputs_of(&StepId::Vnet).expect("vnet");
    let nsg: NsgOutputs = cmd.context.outputs_of(&StepId::Nsg).expect("nsg");
    let wi = |n: &str| WorkloadIdentity {
        client_id: format!("00000000-0000-0000-0000-00000000000{n}"),
    };
    let mut hc = HostedCluster::new(
        &cmd.cluster,
        HostedClusterSpec {
            release: Release {
                image: IMAGE.into(),
            },
            // Required by HyperShift's CRD, as the controlplane step sets them.
            pull_secret: Some(LocalObjectReference {
                name: names.pull_secret.clone(),
            }),
            services: ["APIServer", "OAuthServer", "Konnectivity", "Ignition"]
                .into_iter()
                .map(|service| ServicePublishingStrategyMapping {
                    service: service.into(),
                    service_publishing_strategy: ServicePublishingStrategy {
                        type_: if service == "APIServer" {
                            "LoadBalancer"
                        } else {
                            "Route"
                        }
                        .into(),
                        ..Default::default()
                    },
                })
                .collect(),
            infra_id: names.infra_id.clone(),
            platform: PlatformSpec {
                type_: "Azure".into(),
                azure: Some(AzurePlatformSpec {
                    location: "eastus".into(),
                    resource_group: names.managed_rg.clone(),
                    vnet_id: vnet.vnet_id,
                    subnet_id: vnet.subnet_id,
                    subscription_id: SUBSCRIPTION.into(),
                    security_group_id: nsg.nsg_id,
                    tenant_id: AZURE_TENANT.into(),
                    topology: Some("Public".into()),
                    azure_authentication_config: AzureAuthenticationConfig {
                        azure_authentication_config_type:
                            AzureAuthenticationConfig::WORKLOAD_IDENTITIES.into(),
                        workload_identities: Some(AzureWorkloadIdentities {
                            image_registry: wi("1"),
                            ingress: wi("2"),
                            file: wi("3"),
                            disk: wi("4"),
                            node_pool_management: wi("5"),
                            cloud_provider: wi("6"),
                            network: wi("7"),
                            control_plane_operator: None,
                        }),
                    },
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
    );
    hc.metadata.namespace = Some(ns.into());
    let hcs: Api<HostedCluster> = Api::namespaced(mgmt.client.clone(), ns);
    hcs.patch(&cmd.cluster, &params, &Patch::Apply(&hc))
        .await
        .expect("hostedcluster");
}

#[tokio::test]
async fn do_waits_for_ready_nodes_and_undo_removes_the_pool() {
    hypersaga_devca::install_crypto_provider();
    let mgmt = mgmt(DELAY).await;
    let arm = TestArm::start().await;
    let handler = NodePoolHandler::new(&with_arm(config(&mgmt, None, &["acme"]), &arm))
        .await
        .expect("handler");
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("workers"),
        Action::Do,
        vec![pool("workers", 3)],
    );
    hosted_cluster(&mgmt, &cmd).await;
    let ns = cmd.context.names.namespace.clone();

    let notes = Collect::default();
    let outputs = within("do", drive(&handler, &cmd, &notes))
        .await
        .expect("do succeeds");
    assert_eq!(
        outputs["node_pool_id"],
        format!("nodepools.hypershift.openshift.io/{ns}/demo-workers")
    );
    assert_eq!(outputs["ready_replicas"], 3);
    assert!(
        notes
            .notes()
            .iter()
            .any(|n| n.starts_with("0/3 nodes ready")),
        "notes: {:?}",
        notes.notes()
    );

    let pools: Api<NodePool> = Api::namespaced(mgmt.client.clone(), &ns);
    let np = pools.get("demo-workers").await.expect("nodepool");
    assert!(np.is_ready());
    assert_eq!(np.ready_replicas(), 3);
    assert_eq!(np.spec.cluster_name, "demo");
    assert_eq!(np.spec.replicas, Some(3));
    assert_eq!(np.spec.release.image, IMAGE);
    assert_eq!(
        np.spec.management.as_ref().map(|m| m.upgrade_type.as_str()),
        Some("Replace")
    );
    let azure = np.spec.platform.azure.as_ref().expect("azure");
    assert_eq!(np.spec.platform.type_, "Azure");
    assert_eq!(azure.vm_size, "Standard_D4s_v5");
    assert_eq!(azure.image.type_, "AzureMarketplace");
    assert_eq!(
        azure
            .image
            .azure_marketplace
            .as_ref()
            .and_then(|m| m.image_generation.as_deref()),
        Some("Gen2")
    );
    assert_eq!(azure.os_disk.size_gib, 120);
    assert_eq!(
        azure.os_disk.disk_storage_account_type.as_deref(),
        Some("Premium_LRS")
    );
    let vnet: VnetOutputs = cmd.context.outputs_of(&StepId::Vnet).expect("vnet");
    assert_eq!(azure.subnet_id, vnet.subnet_id);
    let labels = np.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["hypersaga.io/tenant"], "acme");
    assert_eq!(labels["hypersaga.io/cluster"], "demo");

    // Do again: same object, untouched.
    let rv = np.metadata.resource_version.clone();
    let again = within("do again", drive(&handler, &cmd, &notes))
        .await
        .expect("second do");
    assert_eq!(again, outputs);
    assert_eq!(
        pools
            .get("demo-workers")
            .await
            .expect("nodepool")
            .metadata
            .resource_version,
        rv
    );

    // Scale (same step, new replica count): waits for the new size.
    let scaled = command(
        "acme",
        "demo",
        StepId::node_pool("workers"),
        Action::Do,
        vec![pool("workers", 5)],
    );
    let out = within("scale", drive(&handler, &scaled, &notes))
        .await
        .expect("scale");
    assert_eq!(out["ready_replicas"], 5);

    // Undo removes it; again is fine.
    let undo = command(
        "acme",
        "demo",
        StepId::node_pool("workers"),
        Action::Undo,
        vec![],
    );
    within("undo", drive(&handler, &undo, &notes))
        .await
        .expect("undo");
    assert!(pools.get_opt("demo-workers").await.expect("get").is_none());
    assert!(
        !objects_in(&mgmt.emulator, &ns)
            .iter()
            .any(|o| o.starts_with("NodePool/"))
    );
    within("undo again", drive(&handler, &undo, &notes))
        .await
        .expect("second undo");
}

#[tokio::test]
async fn zero_replicas_faults_and_unknown_pools() {
    hypersaga_devca::install_crypto_provider();
    let mgmt = mgmt(DELAY).await;
    let arm = TestArm::start().await;
    let mut config = with_arm(config(&mgmt, None, &["acme"]), &arm);
    config.kube.available_timeout_s = Some(1);
    let handler = NodePoolHandler::new(&config).await.expect("handler");
    let pools = vec![pool("empty", 0), pool("broken", 2)];
    let base = command(
        "acme",
        "demo",
        StepId::node_pool("empty"),
        Action::Do,
        pools.clone(),
    );
    hosted_cluster(&mgmt, &base).await;

    // Zero replicas: done once created.
    let out = within("empty", drive(&handler, &base, &Collect::default()))
        .await
        .expect("empty pool");
    assert_eq!(out["ready_replicas"], 0);

    // A pool the operator cannot get ready: retryable NodePoolNotReady after the timeout,
    // carrying the operator's reason.
    mgmt.emulator.inject_fault(Fault {
        kind: FaultKind::NodePool,
        condition: None,
        name_contains: Some("broken".into()),
        reason: "QuotaExceeded".into(),
        message: "Operation could not be completed as it results in exceeding approved Total Regional Cores quota".into(),
    });
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("broken"),
        Action::Do,
        pools.clone(),
    );
    let err = within("broken", drive(&handler, &cmd, &Collect::default()))
        .await
        .expect_err("not ready");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(err.info.code, "NodePoolNotReady");
    assert!(err.info.message.contains("QuotaExceeded"), "{err}");
    assert_eq!(
        err.info.target.as_deref(),
        Some(format!("NodePool/{}/demo-broken", base.context.names.namespace).as_str())
    );

    // A pool the spec does not have: terminal.
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("ghost"),
        Action::Do,
        pools,
    );
    let err = handler
        .execute(&cmd, &Collect::default())
        .await
        .expect_err("unknown pool");
    assert!(!err.is_retryable());
    assert_eq!(err.info.code, "UnknownNodePool");
}

#[tokio::test]
async fn a_pool_beyond_the_vcpu_quota_is_refused_with_the_arithmetic_before_anything_is_applied() {
    hypersaga_devca::install_crypto_provider();
    let mgmt = mgmt(DELAY).await;
    let arm = TestArm::start().await;
    let handler = NodePoolHandler::new(&with_arm(config(&mgmt, None, &["acme"]), &arm))
        .await
        .expect("handler");
    // 10 Dsv5 vCPUs left: 3 × Standard_D4s_v5 need 12.
    arm.admin
        .set_quota_limit(&hypersaga_emulator_arm::QuotaLimit {
            subscription: hypersaga_testkit::SUBSCRIPTION.into(),
            location: "eastus".into(),
            name: "standardDSv5Family".into(),
            limit: 10,
        })
        .await
        .expect("quota");
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("workers"),
        Action::Do,
        vec![pool("workers", 3)],
    );
    hosted_cluster(&mgmt, &cmd).await;
    let err = handler
        .execute(&cmd, &Collect::default())
        .await
        .expect_err("over quota");
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(err.info.code, "InsufficientVMQuota");
    assert!(
        err.info
            .message
            .contains("need 12 vCPUs, have 10 remaining"),
        "{err}"
    );
    assert_eq!(
        err.info.target.as_deref(),
        Some("spec.node_pools.workers.replicas")
    );
    let pools: Api<NodePool> = Api::namespaced(mgmt.client.clone(), &cmd.context.names.namespace);
    assert!(
        pools.get_opt("demo-workers").await.expect("read").is_none(),
        "nothing applied"
    );
    // Two fit: made, and a scale to three asks only for the one more.
    let two = command(
        "acme",
        "demo",
        StepId::node_pool("workers"),
        Action::Do,
        vec![pool("workers", 2)],
    );
    within("two", drive(&handler, &two, &Collect::default()))
        .await
        .expect("two fit");
}

#[tokio::test]
async fn a_release_hypershift_refuses_fails_the_step_at_once_with_its_words() {
    hypersaga_devca::install_crypto_provider();
    let mgmt = mgmt(DELAY).await;
    let arm = TestArm::start().await;
    let handler = NodePoolHandler::new(&with_arm(config(&mgmt, None, &["acme"]), &arm))
        .await
        .expect("handler");
    let mut pool = pool("inplace", 1);
    pool.upgrade_type = hypersaga_model::UpgradeType::InPlace;
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("inplace"),
        Action::Do,
        vec![pool.clone()],
    );
    hosted_cluster(&mgmt, &cmd).await;
    within("made", drive(&handler, &cmd, &Collect::default()))
        .await
        .expect("the pool is made");

    // A minor above the control plane's: HyperShift rolls nothing (ValidReleaseImage=False).
    let mut newer = pool.clone();
    newer.release_image = IMAGE.replace("4.19.0", "4.20.0");
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("inplace"),
        Action::Do,
        vec![newer],
    );
    let err = within("newer", drive(&handler, &cmd, &Collect::default()))
        .await
        .expect_err("refused");
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(err.info.code, "NodePoolInvalid");
    assert!(
        err.info.message.contains("ValidReleaseImage=False"),
        "{err}"
    );

    // A patch in place: the emulator cannot upgrade in place, and says so as HyperShift does.
    let mut patch = pool;
    patch.release_image = IMAGE.replace("4.19.0", "4.19.1");
    let cmd = command(
        "acme",
        "demo",
        StepId::node_pool("inplace"),
        Action::Do,
        vec![patch],
    );
    let err = within("in place", drive(&handler, &cmd, &Collect::default()))
        .await
        .expect_err("refused");
    assert_eq!(err.info.code, "NodePoolInvalid", "{err}");
    assert!(err.info.message.contains("InplaceUpgradeFailed"), "{err}");
}
