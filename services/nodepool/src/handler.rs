//! The `nodepool.<pool>` step handler.

use std::collections::BTreeMap;

use hypersaga_bus::plan::{Finding, StepPlan, Target, Verb};
use hypersaga_bus::sweep::Made;
use hypersaga_bus::{
    Action, NodePoolOutputs, Outputs, StepCommand, StepError, StepId, StepOutputs, VnetOutputs,
};
use hypersaga_config::Config;
use hypersaga_hypershift::{
    AzureMarketplaceImage, AzureNodePoolOsDisk, AzureNodePoolPlatform, AzureVmImage, NodePool,
    NodePoolAutoScaling, NodePoolManagement, NodePoolPlatform, NodePoolSpec, Release, Taint,
    conditions,
};
use hypersaga_model::{NodePoolSpec as PoolSpec, ReleaseVersion};
use hypersaga_stepkit::ArmClients;
use hypersaga_stepkit::kube::{self as kube_ops, Check, Notes, Waits, target};
use hypersaga_stepkit::plan::{finding_of, kube_create};
use hypersaga_worker::{Progress, StepHandler, StepResult};
use kube::{Api, Resource};
use serde_json::json;
use tracing::info;

use crate::machines::{self, MachineFailure};
use crate::quota;
use crate::{DEFAULT_READY_TIMEOUT, Error};

/// Runs `nodepool.<pool>`.
///
/// Idempotent: the NodePool's name is derived from the cluster and pool names and it is
/// written by a forced server-side apply of the full intent, so a repeated `do` converges the
/// same object (a changed replica count is simply applied — that is how a scale saga reuses
/// this step) and then observes that the nodes are already ready; `undo` treats 404 as success,
/// so it can be resumed at any point. Neither waits in the worker: each looks once and answers
/// "wait" until the nodes are ready (or the pool is gone), and the saga re-checks later.
pub struct NodePoolHandler {
    /// The management clusters, by name: each step acts on its cluster's.
    clients: hypersaga_stepkit::kube::ManagementClients,
    /// Each tenant's ARM client: the vCPU quota is read from its subscription.
    arm: ArmClients,
    waits: Waits,
}

impl NodePoolHandler {
    /// Builds the management-cluster client once (from `config.kube.kubeconfig`, else inferred).
    pub async fn new(config: &Config) -> Result<Self, Error> {
        let clients = hypersaga_stepkit::kube::ManagementClients::from_config(config).await?;
        Ok(Self {
            clients,
            arm: ArmClients::new(config)?,
            waits: Waits::from_config(config, DEFAULT_READY_TIMEOUT),
        })
    }

    /// Serves the live tenants (`hypersaga_stepkit::tenants`), not only the configured ones.
    pub fn with_tenants(mut self, tenants: hypersaga_tenants::Directory) -> Self {
        self.arm = self.arm.with_tenants(tenants);
        self
    }

    /// Runs one attempt of the step, reporting progress to `notes` (what
    /// [`StepHandler::run`] does with the worker's [`Progress`]).
    pub async fn execute(
        &self,
        cmd: &StepCommand,
        notes: &dyn Notes,
    ) -> Result<StepResult, StepError> {
        let pool_name = match cmd.step_id()? {
            StepId::NodePool(pool_name) => pool_name,
            StepId::Sweep(_) if cmd.action == Action::Do => return self.sweep(cmd).await,
            _ => return Err(cmd.unknown_step()),
        };
        let pool_name = pool_name.as_str();
        let names = &cmd.context.names;
        let ns = names.namespace.as_str();
        let name = names.node_pool(pool_name);
        let what = target("NodePool", Some(ns), &name);
        let api: Api<NodePool> = Api::namespaced(self.clients.of(cmd)?, ns);
        match cmd.action {
            Action::Do => {
                let pool = pool_of(cmd, pool_name)?;
                if !cmd.is_recheck() {
                    notes.note(format!("applying {what}")).await;
                }
                self.create(cmd, pool, api, &name, &what).await
            }
            Action::Undo => match kube_ops::delete_check(&api, &name, &what).await? {
                Check::Done(()) => Ok(StepResult::Done(Outputs::new())),
                Check::Fail(e) => Err(e),
                Check::Wait(why) => {
                    // A worker CAPZ may not delete holds the NodePool's finalizer: say so.
                    let refused = self.machine_failures(cmd, &name).await;
                    self.wait(
                        cmd,
                        "NodePoolDeletionPending",
                        &what,
                        with_refusals(why, &refused),
                        serde_json::Value::Null,
                    )
                }
            },
        }
    }

    async fn create(
        &self,
        cmd: &StepCommand,
        pool: &PoolSpec,
        api: Api<NodePool>,
        name: &str,
        what: &str,
    ) -> Result<StepResult, StepError> {
        // The pool's own subnet, else the one from `network.vnet`, else the one the user
        // brought, else `MissingInput`.
        let subnet_id = match cmd.context.outputs_of::<VnetOutputs>(&StepId::Vnet) {
            _ if pool.subnet_id.is_some() => pool.subnet_id.clone().unwrap_or_default(),
            Ok(vnet) if !vnet.subnet_id.is_empty() => vnet.subnet_id,
            found => {
                let given = cmd.context.spec.network.subnet_id.as_deref();
                match given.filter(|s| !s.is_empty()) {
                    Some(given) => given.to_owned(),
                    None => {
                        let mut e = found.err().unwrap_or_else(|| {
                            StepError::missing_output(StepId::Vnet, "subnet_id")
                        });
                        e.info.code = "MissingInput".to_owned();
                        return Err(e);
                    }
                }
            }
        };
        // The generation we applied, so a scale is not mistaken for done by the previous size's
        // `Ready`; a re-check reads it back from the memo instead of applying again.
        let generation = match cmd
            .memo
            .get("generation")
            .and_then(serde_json::Value::as_i64)
        {
            Some(g) if cmd.is_recheck() => Some(g),
            _ => {
                self.check_quota(cmd, pool, &api, name, what).await?;
                let np = node_pool(cmd, pool, name, subnet_id);
                kube_ops::apply(&api, name, &np, what)
                    .await?
                    .meta()
                    .generation
            }
        };
        let want = Want::of(pool, release_image(cmd, pool));
        match kube_ops::observe(&api, name, what, move |obj| {
            check_ready(obj, &want, generation, what)
        })
        .await?
        {
            Check::Done((ready, version)) => {
                // A scale down is over once the surplus machines are gone too.
                if let Some(surplus) = self.surplus(cmd, name, ready).await {
                    let why = format!("{ready} nodes ready; {surplus} more machines being removed");
                    return self.wait(
                        cmd,
                        "NodePoolNotReady",
                        what,
                        why,
                        json!({ "generation": generation }),
                    );
                }
                info!(object = %what, ready_replicas = ready, %version, "NodePool ready");
                let ns = &cmd.context.names.namespace;
                let outputs = NodePoolOutputs {
                    node_pool_id: format!("nodepools.hypershift.openshift.io/{ns}/{name}"),
                    ready_replicas: ready,
                    version,
                };
                Ok(StepResult::Done(outputs.into_outputs()))
            }
            Check::Fail(e) => Err(e),
            Check::Wait(why) => {
                // HyperShift's NodePool cannot carry CAPZ's refusals; its Machines can.
                let refused = self.machine_failures(cmd, name).await;
                if let Some(f) = refused.iter().find(|f| f.is_terminal()) {
                    return Err(StepError::terminal(
                        f.code.clone(),
                        format!(
                            "the NodePool's machines cannot be created: {}",
                            f.describe()
                        ),
                    )
                    .with_target(what));
                }
                self.wait(
                    cmd,
                    "NodePoolNotReady",
                    what,
                    with_refusals(why, &refused),
                    json!({ "generation": generation }),
                )
            }
        }
    }

    /// Refuses, before anything is applied, a change needing more vCPUs than the tenant's
    /// subscription has left (see [`quota`]). The NodePool as it stands says what the pool
    /// asks for already, so an attempt after one that applied the change adds nothing.
    async fn check_quota(
        &self,
        cmd: &StepCommand,
        pool: &PoolSpec,
        api: &Api<NodePool>,
        name: &str,
        what: &str,
    ) -> Result<(), StepError> {
        let existing = kube_ops::look(api, name, what).await?;
        let added = quota::vms_added(pool, existing.as_ref(), release_image(cmd, pool));
        let arm = self.arm.tenant(&cmd.tenant)?;
        let target = format!("spec.node_pools.{}.replicas", pool.name);
        quota::check(&arm, &cmd.context.spec.location, pool, added, &target).await
    }

    /// The reads of the quota check ([`quota::READS`]) the tenant's principal may not make, as
    /// findings. The VMs, NICs and disks are CAPZ's, made as HyperShift's node-pool identity,
    /// so the tenant's principal needs no more than these.
    async fn quota_permissions(&self, cmd: &StepCommand) -> Result<Vec<Finding>, StepError> {
        let Some(scope) = hypersaga_stepkit::plan::permission_scope(cmd) else {
            return Ok(Vec::new());
        };
        let arm = self.arm.tenant(&cmd.tenant)?;
        let reads: Vec<String> = quota::READS.iter().map(|a| (*a).to_owned()).collect();
        hypersaga_stepkit::plan::missing_actions(&arm, &scope, &reads).await
    }

    /// How many more Machines the pool has than its `ready` nodes (those a scale down is
    /// still removing), when there are any and the management cluster says so.
    async fn surplus(&self, cmd: &StepCommand, name: &str, ready: i32) -> Option<usize> {
        let names = &cmd.context.names;
        let key = format!("{}/{name}", names.namespace);
        let machines = machines::count(
            &self.clients.of(cmd).ok()?,
            &names.control_plane_namespace(),
            &key,
        )
        .await?;
        let ready = usize::try_from(ready).unwrap_or(0);
        (machines > ready).then(|| machines - ready)
    }

    /// What CAPZ wrote on the NodePool's Machines when it failed.
    async fn machine_failures(&self, cmd: &StepCommand, name: &str) -> Vec<MachineFailure> {
        let names = &cmd.context.names;
        let key = format!("{}/{name}", names.namespace);
        match self.clients.of(cmd) {
            Ok(client) => machines::failures(&client, &names.control_plane_namespace(), &key).await,
            Err(_) => Vec::new(),
        }
    }

    /// "Wait", unless the wait has lasted past the ready timeout.
    fn wait(
        &self,
        cmd: &StepCommand,
        code: &str,
        what: &str,
        why: String,
        memo: serde_json::Value,
    ) -> Result<StepResult, StepError> {
        self.waits.wait(cmd, code, what, why, memo)
    }

    /// Runs `nodepool._sweep`: deletes the NodePools the command's cluster made (in its
    /// namespace) one after another, on whichever management cluster each is, waiting while
    /// HyperShift drains and deletes its machines. Idempotent: each attempt lists again, and a
    /// pool already going is only waited for.
    async fn sweep(&self, cmd: &StepCommand) -> Result<StepResult, StepError> {
        // Its own management cluster must be one this service knows (see controlplane's).
        self.clients.of(cmd)?;
        let found = self
            .clients
            .labelled::<NodePool>(&cmd.tenant, Some(&cmd.cluster))
            .await?;
        for made in &hypersaga_stepkit::sweep::of_the_cluster(found, cmd) {
            match kube_ops::delete_made::<NodePool>(self.clients.on(made)?, made).await? {
                Check::Done(()) => info!(object = %made.id, on = %made.location, "swept"),
                Check::Fail(e) => return Err(e),
                Check::Wait(why) => {
                    return self.wait(cmd, "NodePoolDeletionPending", &made.id, why, json!(null));
                }
            }
        }
        Ok(StepResult::Done(Outputs::new()))
    }
}

#[async_trait::async_trait]
impl StepHandler for NodePoolHandler {
    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError> {
        self.execute(cmd, progress).await
    }

    /// The NodePools labelled for `tenant` (and `cluster`), on every management cluster.
    async fn made(
        &self,
        tenant: &hypersaga_model::TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<Made>, StepError> {
        self.clients.labelled::<NodePool>(tenant, cluster).await
    }

    /// The NodePool the step would apply, and its quota check: a VM size the region does not
    /// offer, or more vCPUs than the subscription has left, is a finding; so is a read of that
    /// check the tenant's principal may not make.
    async fn plan(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        let pool_name = match (cmd.step_id()?, cmd.action) {
            (StepId::NodePool(pool_name), Action::Do) => pool_name,
            // A pool's removal: its NodePool (HyperShift's CAPZ then deletes its machines).
            (StepId::NodePool(pool_name), Action::Undo) => {
                let ns = cmd.context.names.namespace.as_str();
                let mut change = kube_create(
                    Target::ManagementCluster,
                    hypersaga_hypershift::API_VERSION,
                    "NodePool",
                    ns,
                    &cmd.context.names.node_pool(&pool_name),
                );
                change.verb = Some(Verb::Delete);
                change.note = "HyperShift's CAPZ deletes the pool's VMs, NICs and disks".into();
                return Ok(StepPlan {
                    step: cmd.step.clone(),
                    changes: vec![change],
                    ..StepPlan::default()
                });
            }
            _ => return Err(cmd.unknown_step()),
        };
        let pool = pool_of(cmd, &pool_name)?;
        let ns = cmd.context.names.namespace.as_str();
        let name = cmd.context.names.node_pool(&pool_name);
        let what = target("NodePool", Some(ns), &name);
        let api: Api<NodePool> = Api::namespaced(self.clients.of(cmd)?, ns);
        // Without the reads the quota check makes, the check itself cannot be made.
        let mut findings = self.quota_permissions(cmd).await?;
        if findings.is_empty()
            && let Err(e) = self.check_quota(cmd, pool, &api, &name, &what).await
        {
            let (kind, remedy) = if e.info.code == "SkuNotAvailable" {
                (
                    "VM_SIZE",
                    "choose a VM size the region offers the subscription",
                )
            } else {
                (
                    "QUOTA",
                    "ask Azure for more vCPU quota in the region, or ask for fewer or smaller nodes",
                )
            };
            findings.push(finding_of(e, kind, remedy)?);
        }
        let mut changes = vec![kube_create(
            Target::ManagementCluster,
            hypersaga_hypershift::API_VERSION,
            "NodePool",
            ns,
            &name,
        )];
        changes.extend(machines::planned(&name, pool, &cmd.context.spec.location));
        Ok(StepPlan {
            step: cmd.step.clone(),
            changes,
            findings,
            outputs: NodePoolOutputs {
                node_pool_id: format!("nodepools.hypershift.openshift.io/{ns}/{name}"),
                ready_replicas: pool.min_nodes(),
                version: String::new(),
            }
            .into_outputs(),
        })
    }
}

/// The pool of the cluster's spec a `nodepool.<pool>` step is about.
fn pool_of<'a>(cmd: &'a StepCommand, pool_name: &str) -> Result<&'a PoolSpec, StepError> {
    cmd.context
        .spec
        .node_pools
        .iter()
        .find(|p| p.name == pool_name)
        .ok_or_else(|| {
            StepError::terminal(
                "UnknownNodePool",
                format!("the cluster spec has no node pool {pool_name:?}"),
            )
            .with_target(format!("spec.node_pools.{pool_name}"))
        })
}

/// A wait's message, with the refusals CAPZ reported on the Machines.
fn with_refusals(why: String, refused: &[MachineFailure]) -> String {
    refused.iter().fold(why, |mut why, f| {
        why.push_str("; ");
        why.push_str(&f.describe());
        why
    })
}

/// The release `pool` runs: its own, or (in records written before pools had one) the
/// cluster's.
fn release_image<'a>(cmd: &'a StepCommand, pool: &'a PoolSpec) -> &'a str {
    if pool.release_image.is_empty() {
        &cmd.context.spec.release_image
    } else {
        &pool.release_image
    }
}

/// The NodePool of `pool`, as `hypershift create nodepool azure` would build it, with what
/// ARO-HCP lets users set on top (autoscaling, labels, taints, drain timeout, zone).
fn node_pool(cmd: &StepCommand, pool: &PoolSpec, name: &str, subnet_id: String) -> NodePool {
    let mut np = NodePool::new(
        name,
        NodePoolSpec {
            cluster_name: cmd.cluster.clone(),
            replicas: pool.autoscaling.is_none().then_some(pool.replicas),
            auto_scaling: pool.autoscaling.map(|a| NodePoolAutoScaling {
                min: a.min,
                max: a.max,
            }),
            release: Release {
                image: release_image(cmd, pool).to_owned(),
            },
            management: Some(NodePoolManagement {
                upgrade_type: pool.upgrade_type.as_str().to_owned(),
                auto_repair: None,
            }),
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
                        size_gib: i32::try_from(pool.os_disk.size_gib).unwrap_or(i32::MAX),
                        disk_storage_account_type: Some(pool.os_disk.storage_account_type.clone()),
                        ..Default::default()
                    },
                    subnet_id,
                    availability_zone: pool.availability_zone.clone(),
                    encryption_at_host: None,
                }),
            },
            node_labels: pool.labels.clone(),
            taints: pool
                .taints
                .iter()
                .map(|t| Taint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                })
                .collect(),
            node_drain_timeout: (pool.node_drain_timeout_minutes > 0)
                .then(|| format!("{}m", pool.node_drain_timeout_minutes)),
        },
    );
    np.metadata.namespace = Some(cmd.context.names.namespace.clone());
    np.metadata.labels = Some(BTreeMap::from([
        (kube_ops::LABEL_TENANT.to_owned(), cmd.tenant.to_string()),
        (kube_ops::LABEL_CLUSTER.to_owned(), cmd.cluster.clone()),
        (kube_ops::LABEL_SAGA.to_owned(), cmd.saga_id.clone()),
    ]));
    np
}

/// What a pool must show to be as its spec says: its node count (or a count within its
/// autoscaler's bounds) ready, and its release's version rolled out.
#[derive(Clone, Debug)]
struct Want {
    min: i32,
    max: i32,
    /// The version `status.version` must say; `None` when the tag states none (the
    /// gateway refuses such images, but records from before it did may hold one).
    version: Option<String>,
}

impl Want {
    fn of(pool: &PoolSpec, image: &str) -> Self {
        Self {
            min: pool.min_nodes(),
            max: pool.max_nodes(),
            version: ReleaseVersion::of_image(image).ok().map(|v| v.to_string()),
        }
    }
}

/// HyperShift refusing the pool as it is asked for, for the generation applied: a release it
/// does not take (`ValidReleaseImage=False`: it rolls nothing until the spec changes), or an
/// in-place upgrade that cannot go on. Waiting cannot clear either: terminal, with HyperShift's
/// words.
fn refusal(
    np: &NodePool,
    current: &dyn Fn(&&hypersaga_hypershift::Condition) -> bool,
) -> Option<StepError> {
    let says = |type_: &str| np.condition(type_).filter(current);
    let refused = says(conditions::VALID_RELEASE_IMAGE)
        .filter(|c| c.status == "False")
        .or_else(|| {
            says(conditions::UPDATING_VERSION)
                .filter(|c| c.status == "False" && c.reason == conditions::INPLACE_UPGRADE_FAILED)
        })?;
    Some(StepError::terminal(
        "NodePoolInvalid",
        format!(
            "HyperShift refuses the NodePool: {}=False ({}): {}",
            refused.type_, refused.reason, refused.message
        ),
    ))
}

/// Done when the ready nodes are what the spec wants (`status.replicas` within the bounds),
/// `Ready=True` observed for the generation we applied (so a scale is not mistaken for done by
/// the previous size's `Ready`), and `status.version` is the release's version, which
/// HyperShift sets only once a rollout has completed. A pool of 0 replicas is done once it
/// exists.
fn check_ready(
    obj: Option<&NodePool>,
    want: &Want,
    applied_generation: Option<i64>,
    what: &str,
) -> Check<(i32, String)> {
    let Some(np) = obj else {
        return Check::Fail(
            StepError::retryable(
                "NodePoolGone",
                "the NodePool disappeared while waiting for it",
            )
            .with_target(what),
        );
    };
    let version = np
        .status
        .as_ref()
        .and_then(|s| s.version.clone())
        .unwrap_or_default();
    if want.max == 0 {
        return Check::Done((0, version));
    }
    let current_for = |c: &&hypersaga_hypershift::Condition| {
        c.observed_generation
            .is_none_or(|g| applied_generation.is_none_or(|a| g >= a))
    };
    if let Some(refused) = refusal(np, &current_for) {
        return Check::Fail(refused.with_target(what));
    }
    let current = np.ready_replicas();
    let ready = np.condition(conditions::READY);
    let fresh = ready.is_some_and(|c| current_for(&c));
    let counted = (want.min..=want.max).contains(&current);
    let rolled_out = want.version.as_ref().is_none_or(|v| *v == version);
    if counted && rolled_out && fresh && ready.is_some_and(|c| c.is_true()) {
        return Check::Done((current, version));
    }
    let mut why = if want.min == want.max {
        format!("{current}/{} nodes ready", want.max)
    } else {
        format!("{current} nodes ready ({}..{})", want.min, want.max)
    };
    if let Some(v) = want.version.as_ref().filter(|v| **v != version) {
        let on = if version.is_empty() {
            "none yet"
        } else {
            version.as_str()
        };
        why.push_str(&format!("; rolling out {v} (nodes on {on})"));
    }
    if let Some(c) = ready.filter(|c| !c.is_true()) {
        why.push_str(&format!("; Ready={} ({})", c.status, c.reason));
        if !c.message.is_empty() {
            why.push_str(&format!(": {}", c.message));
        }
    }
    Check::Wait(why)
}
