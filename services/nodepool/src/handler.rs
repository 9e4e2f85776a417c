//! The `nodepool.<pool>` step handler.

use std::collections::BTreeMap;
use std::time::Duration;

use hypersaga_bus::{Action, Outputs, StepCommand, StepError};
use hypersaga_config::Config;
use hypersaga_controlplane::kube_ops::{self, Check, Notes, WaitError, target};
use hypersaga_hypershift::{
    AzureMarketplaceImage, AzureNodePoolOsDisk, AzureNodePoolPlatform, AzureVmImage, NodePool, NodePoolManagement,
    NodePoolPlatform, NodePoolSpec, Release, conditions,
};
use hypersaga_model::NodePoolSpec as PoolSpec;
use hypersaga_worker::{Progress, StepHandler};
use kube::{Api, Resource};
use serde_json::json;
use tracing::info;

use crate::{DEFAULT_READY_TIMEOUT, Error};

const STEP_PREFIX: &str = "nodepool.";
const OS_DISK_GIB: i32 = 120;
const OS_DISK_TYPE: &str = "Premium_LRS";

/// Runs `nodepool.<pool>`.
///
/// Idempotent: the NodePool's name is derived from the cluster and pool names and it is
/// written by a forced server-side apply of the full intent, so a repeated `do` converges the
/// same object (a changed replica count is simply applied — that is how a scale saga reuses
/// this step) and then observes that the nodes are already ready; `undo` treats 404 as success
/// and waits by watch, so it can be resumed at any point.
pub struct NodePoolHandler {
    client: kube::Client,
    ready_timeout: Duration,
}

impl NodePoolHandler {
    /// Builds the management-cluster client once (from `config.kube.kubeconfig`, else inferred).
    pub async fn new(config: &Config) -> Result<Self, Error> {
        let client = hypersaga_hypershift::client::client(config.kube.kubeconfig.as_deref()).await?;
        let ready_timeout = config.kube.available_timeout_s.map(Duration::from_secs).unwrap_or(DEFAULT_READY_TIMEOUT);
        Ok(Self { client, ready_timeout })
    }

    /// Runs one attempt of the step, reporting progress to `notes` (what
    /// [`StepHandler::run`] does with the worker's [`Progress`]).
    pub async fn execute(&self, cmd: &StepCommand, notes: &dyn Notes) -> Result<Outputs, StepError> {
        let pool_name = cmd.step.strip_prefix(STEP_PREFIX).filter(|p| !p.is_empty()).ok_or_else(|| {
            StepError::terminal("UnknownStep", format!("the nodepool service has no step {:?}", cmd.step))
        })?;
        let names = &cmd.context.names;
        let ns = names.namespace.as_str();
        let name = names.node_pool(pool_name);
        let what = target("NodePool", Some(ns), &name);
        let api: Api<NodePool> = Api::namespaced(self.client.clone(), ns);
        match cmd.action {
            Action::Do => {
                let pool = cmd.context.spec.node_pools.iter().find(|p| p.name == pool_name).ok_or_else(|| {
                    StepError::terminal("UnknownNodePool", format!("the cluster spec has no node pool {pool_name:?}"))
                        .with_target(format!("spec.node_pools.{pool_name}"))
                })?;
                self.create(cmd, pool, api, &name, &what, notes).await
            }
            Action::Undo => {
                kube_ops::delete_and_wait(api, &name, &what, self.ready_timeout, notes).await.map_err(|e| match e {
                    WaitError::Failed(e) => e,
                    WaitError::TimedOut { last } => StepError::retryable(
                        "NodePoolDeletionPending",
                        format!("{what} still present after {} s: {last}", self.ready_timeout.as_secs()),
                    )
                    .with_target(&what),
                })?;
                Ok(Outputs::new())
            }
        }
    }

    async fn create(
        &self,
        cmd: &StepCommand,
        pool: &PoolSpec,
        api: Api<NodePool>,
        name: &str,
        what: &str,
        notes: &dyn Notes,
    ) -> Result<Outputs, StepError> {
        let subnet_id = cmd
            .context
            .output("network.vnet", "subnet_id")
            .or(cmd.context.spec.network.subnet_id.as_deref())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                StepError::terminal("MissingInput", "output \"subnet_id\" of step network.vnet is missing")
                    .with_target("network.vnet.subnet_id")
            })?
            .to_owned();
        let np = node_pool(cmd, pool, name, subnet_id);
        let applied = kube_ops::apply(&api, name, &np, what).await?;
        let generation = applied.meta().generation;

        let desired = pool.replicas;
        let waited = kube_ops::wait_for(api, name, what, self.ready_timeout, notes, move |obj| check_ready(obj, desired, generation, what)).await;
        let ready = match waited {
            Ok(ready) => ready,
            Err(WaitError::Failed(e)) => return Err(e),
            Err(WaitError::TimedOut { last }) => {
                return Err(StepError::retryable(
                    "NodePoolNotReady",
                    format!("NodePool not ready after {} s: {last}", self.ready_timeout.as_secs()),
                )
                .with_target(what));
            }
        };
        info!(object = %what, ready_replicas = ready, "NodePool ready");
        let ns = &cmd.context.names.namespace;
        let mut outputs = Outputs::new();
        outputs.insert("node_pool_id".into(), json!(format!("nodepools.hypershift.openshift.io/{ns}/{name}")));
        outputs.insert("ready_replicas".into(), json!(ready));
        Ok(outputs)
    }
}

#[async_trait::async_trait]
impl StepHandler for NodePoolHandler {
    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<Outputs, StepError> {
        self.execute(cmd, progress).await
    }
}

/// The NodePool of `pool`, as `hypershift create nodepool azure` would build it.
fn node_pool(cmd: &StepCommand, pool: &PoolSpec, name: &str, subnet_id: String) -> NodePool {
    let mut np = NodePool::new(
        name,
        NodePoolSpec {
            cluster_name: cmd.cluster.clone(),
            replicas: Some(pool.replicas),
            release: Release { image: cmd.context.spec.release_image.clone() },
            management: Some(NodePoolManagement { upgrade_type: "Replace".to_owned(), auto_repair: None }),
            platform: NodePoolPlatform {
                type_: "Azure".to_owned(),
                azure: Some(AzureNodePoolPlatform {
                    vm_size: pool.vm_size.clone(),
                    image: AzureVmImage {
                        type_: "AzureMarketplace".to_owned(),
                        image_id: None,
                        azure_marketplace: Some(AzureMarketplaceImage {
                            image_generation: Some("Gen2".to_owned()),
                            ..Default::default()
                        }),
                    },
                    os_disk: AzureNodePoolOsDisk {
                        size_gib: OS_DISK_GIB,
                        disk_storage_account_type: Some(OS_DISK_TYPE.to_owned()),
                        ..Default::default()
                    },
                    subnet_id,
                    availability_zone: None,
                    encryption_at_host: None,
                }),
            },
            auto_scaling: None,
        },
    );
    np.metadata.namespace = Some(cmd.context.names.namespace.clone());
    np.metadata.labels = Some(BTreeMap::from([
        ("hypersaga.io/tenant".to_owned(), cmd.tenant.to_string()),
        ("hypersaga.io/cluster".to_owned(), cmd.cluster.clone()),
        ("hypersaga.io/saga".to_owned(), cmd.saga_id.clone()),
    ]));
    np
}

/// Done when `status.replicas == desired` and `Ready=True` — observed for the generation we
/// applied, so a scale is not mistaken for done by the previous size's `Ready`. A pool of 0
/// replicas is done once it exists.
fn check_ready(obj: Option<&NodePool>, desired: i32, applied_generation: Option<i64>, what: &str) -> Check<i32> {
    let Some(np) = obj else {
        return Check::Fail(StepError::retryable("NodePoolGone", "the NodePool disappeared while waiting for it").with_target(what));
    };
    if desired == 0 {
        return Check::Done(0);
    }
    let current = np.ready_replicas();
    let ready = np.condition(conditions::READY);
    let fresh = ready.is_some_and(|c| c.observed_generation.is_none_or(|g| applied_generation.is_none_or(|a| g >= a)));
    if current == desired && fresh && ready.is_some_and(|c| c.is_true()) {
        return Check::Done(current);
    }
    let mut why = format!("{current}/{desired} nodes ready");
    if let Some(c) = ready.filter(|c| !c.is_true()) {
        why.push_str(&format!("; Ready={} ({})", c.status, c.reason));
        if !c.message.is_empty() {
            why.push_str(&format!(": {}", c.message));
        }
    }
    Check::Wait(why)
}
