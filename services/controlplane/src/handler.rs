//! The `controlplane.hostedcluster` step handler.

use serde_json::Value;
use std::collections::BTreeMap;

use hypersaga_bus::{
    Action, HostedClusterOutputs, NsgOutputs, OidcOutputs, Outputs, PrivateZoneOutputs,
    PublicZoneOutputs, RolloutOutputs, StepCommand, StepError, StepId, StepOutputs, VnetOutputs,
    WorkloadIdentitiesOutputs,
};
use hypersaga_config::{Config, TenantConfig};
use hypersaga_hypershift::{
    AzureAuthenticationConfig, AzurePlatformSpec, AzureWorkloadIdentities, ClusterNetworkEntry,
    ClusterNetworking, Condition, ConditionStatus, DnsSpec, HostedCluster, HostedClusterSpec,
    LocalObjectReference, NetworkEntry, PlatformSpec, Release, ServicePublishingStrategy,
    ServicePublishingStrategyMapping, conditions,
};
use hypersaga_model::record::VersionEntry;
use hypersaga_oidc::{BlobConfig, KeyStore};
use hypersaga_worker::{Progress, StepHandler, StepResult};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::ObjectMeta;
use kube::{Api, Resource};
use tracing::info;

use hypersaga_bus::plan::{StepPlan, Target};
use hypersaga_stepkit::kube::{self as kube_ops, Check, Notes, Waits, target};
use hypersaga_stepkit::plan::kube_create;

use crate::{DEFAULT_AVAILABLE_TIMEOUT, Error};

use hypersaga_stepkit::kube::{LABEL_CLUSTER, LABEL_SAGA, LABEL_TENANT};
const SAFE_TO_DELETE: &str = "hypershift.openshift.io/safe-to-delete-with-cluster";
const CLUSTER_NETWORK: &str = "10.132.0.0/14";
const SERVICE_NETWORK: &str = "172.31.0.0/16";

/// Runs `controlplane.hostedcluster`.
///
/// Idempotent: every object has a deterministic name (from [`hypersaga_model::Names`]) and is
/// written by a forced server-side apply of the full intent, so a repeated `do` converges the
/// same objects (no new resourceVersion when nothing differs) and then simply observes that
/// the HostedCluster is already `Available`; `undo` treats 404 as success at every stage, so it
/// may be resumed after a crash at any point.
///
/// Neither action waits in the worker: each looks once and answers "wait" while the
/// HostedCluster is not yet `Available` (or not yet gone); the saga re-checks it later.
pub struct ControlPlaneHandler {
    /// The management clusters, by name: each step acts on its cluster's.
    pub(crate) clients: hypersaga_stepkit::kube::ManagementClients,
    keys: KeyStore,
    /// The tenants served, live: a HostedCluster names its tenant's directory and subscription.
    tenants: hypersaga_tenants::Directory,
    pub(crate) waits: Waits,
    /// The add-on catalog, where the add-on steps read the versions clusters pin (`None`
    /// without a bus: those steps then fail, saying so).
    pub(crate) catalog: Option<hypersaga_addons::Catalog>,
    /// The `.dockerconfigjson` every HostedCluster pulls its release with, checked at start.
    pull_secret: String,
}

impl ControlPlaneHandler {
    /// Builds the management-cluster client (from `config.kube.kubeconfig`, else inferred)
    /// and the signing-key store client (`config.signing_keys`) once, for every step it will run.
    pub async fn new(config: &Config) -> Result<Self, Error> {
        let pull_secret = check_pull_secret(config.kube.pull_secret.as_ref())?;
        let clients = hypersaga_stepkit::kube::ManagementClients::from_config(config).await?;
        // Only the key store: controlplane needs a tenant's key, never the credential that
        // publishes issuers.
        let blob_endpoint =
            config
                .signing_keys
                .endpoint
                .parse()
                .map_err(|e: url::ParseError| Error::BlobEndpoint {
                    endpoint: config.signing_keys.endpoint.clone(),
                    message: e.to_string(),
                })?;
        let keys = KeyStore::new(BlobConfig {
            blob_endpoint,
            account_name: config.signing_keys.account_name.clone(),
            account_key: hypersaga_oidc::Secret::new(
                config.signing_keys.account_key.expose().to_owned(),
            ),
        })?;
        Ok(Self {
            clients,
            keys,
            tenants: hypersaga_tenants::Directory::configured(config),
            waits: Waits::from_config(config, DEFAULT_AVAILABLE_TIMEOUT),
            catalog: None,
            pull_secret,
        })
    }

    /// Reads add-on definitions from `catalog`.
    pub fn with_catalog(mut self, catalog: hypersaga_addons::Catalog) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Serves the live tenants (`hypersaga_stepkit::tenants`), not only the configured ones.
    pub fn with_tenants(mut self, tenants: hypersaga_tenants::Directory) -> Self {
        self.tenants = tenants;
        self
    }

    /// Runs one attempt (or one re-check) of the step, reporting progress to `notes` (what
    /// [`StepHandler::run`] does with the worker's [`Progress`]).
    pub async fn execute(
        &self,
        cmd: &StepCommand,
        notes: &dyn Notes,
    ) -> Result<StepResult, StepError> {
        match (cmd.step_id()?, cmd.action) {
            (StepId::HostedCluster, Action::Do) => self.create(cmd, notes).await,
            (StepId::HostedCluster, Action::Undo) => self.delete(cmd).await,
            (StepId::Rollout, Action::Do) => self.rollout(cmd).await,
            // Only a wait: nothing of it to remove.
            (StepId::Rollout, Action::Undo) => Ok(StepResult::Done(Outputs::new())),
            (StepId::Addon(name), Action::Do) => self.addon_do(cmd, &name, notes).await,
            (StepId::Addon(name), Action::Undo) => self.addon_undo(cmd, &name).await,
            (StepId::Sweep(_), Action::Do) => self.sweep(cmd).await,
            _ => Err(cmd.unknown_step()),
        }
    }

    /// Waits until the release has rolled out on the cluster's nodes: the newest entry of
    /// `status.version.history` is `Completed` for the spec's image. HyperShift fills the
    /// history from the hosted cluster's ClusterVersion, which completes only on nodes, so a
    /// cluster without any is done at once, and says so.
    async fn rollout(&self, cmd: &StepCommand) -> Result<StepResult, StepError> {
        let nodes: i32 = cmd
            .context
            .spec
            .node_pools
            .iter()
            .map(|p| p.min_nodes())
            .sum();
        if nodes == 0 {
            info!("no nodes: the release rolls out once a node pool has some");
            return Ok(StepResult::Done(RolloutOutputs::default().into_outputs()));
        }
        let ns = cmd.context.names.namespace.as_str();
        let name = cmd.cluster.as_str();
        let hc_target = target("HostedCluster", Some(ns), name);
        let clusters: Api<HostedCluster> = Api::namespaced(self.clients.of(cmd)?, ns);
        let image = cmd.context.spec.release_image.clone();
        match kube_ops::observe(&clusters, name, &hc_target, |obj| {
            check_rollout(obj, &image, &hc_target)
        })
        .await?
        {
            Check::Done(done) => Ok(StepResult::Done(done.into_outputs())),
            Check::Fail(e) => Err(e),
            Check::Wait(why) => {
                self.waits
                    .wait(cmd, "RolloutNotCompleted", &hc_target, why, Value::Null)
            }
        }
    }

    async fn create(&self, cmd: &StepCommand, notes: &dyn Notes) -> Result<StepResult, StepError> {
        let names = &cmd.context.names;
        let ns = names.namespace.as_str();
        let name = cmd.cluster.as_str();
        let hc_target = target("HostedCluster", Some(ns), name);
        let clusters: Api<HostedCluster> = Api::namespaced(self.clients.of(cmd)?, ns);
        // A re-check only looks: everything was applied by the attempt that started the wait.
        if !cmd.is_recheck() {
            notes
                .note("applying the namespace, secrets and HostedCluster".to_owned())
                .await;
            self.apply_all(cmd, &clusters).await?;
        }
        let check_target = hc_target.clone();
        match kube_ops::observe(&clusters, name, &hc_target, move |obj| {
            check_available(obj, &check_target)
        })
        .await?
        {
            Check::Done((host, port)) => {
                info!(object = %hc_target, %host, port, "HostedCluster available");
                let outputs = HostedClusterOutputs {
                    control_plane_host: host,
                    control_plane_port: port,
                    hosted_cluster_id: format!(
                        "hostedclusters.hypershift.openshift.io/{ns}/{name}"
                    ),
                    namespace_id: format!("namespaces/{ns}"),
                };
                Ok(StepResult::Done(outputs.into_outputs()))
            }
            Check::Fail(e) => Err(e),
            Check::Wait(why) => self.waits.wait(
                cmd,
                "HostedClusterNotAvailable",
                &hc_target,
                why,
                Value::Null,
            ),
        }
    }

    /// Applies the namespace, the secrets and the HostedCluster (forced server-side apply of
    /// the whole intent: a no-op when nothing differs).
    async fn apply_all(
        &self,
        cmd: &StepCommand,
        clusters: &Api<HostedCluster>,
    ) -> Result<(), StepError> {
        let names = &cmd.context.names;
        let ns = names.namespace.as_str();
        let tenant = self.tenants.get(&cmd.tenant).ok_or_else(|| {
            StepError::terminal(
                "TenantNotConfigured",
                format!("tenant {} is not onboarded (or was removed)", cmd.tenant),
            )
        })?;
        // Everything we need is gathered before anything is written.
        let inputs = Inputs::from_command(cmd, &tenant.config)?;
        let key = self
            .keys
            .load(cmd.tenant.as_str())
            .await
            .map_err(|e| {
                let (code, msg) = ("SigningKeyStoreError", format!("loading the signing key of tenant {}: {e}", cmd.tenant));
                if e.is_retryable() { StepError::retryable(code, msg) } else { StepError::terminal(code, msg) }
            })?
            .ok_or_else(|| {
                StepError::retryable(
                    "SigningKeyNotFound",
                    format!("no service-account signing key stored for tenant {} (identity.oidc creates it)", cmd.tenant),
                )
            })?;

        // Namespace.
        let namespaces: Api<Namespace> = Api::all(self.clients.of(cmd)?);
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.to_owned()),
                labels: Some(base_labels(cmd)),
                ..Default::default()
            },
            ..Default::default()
        };
        kube_ops::apply(&namespaces, ns, &namespace, &target("Namespace", None, ns)).await?;

        // Secrets.
        let secrets: Api<Secret> = Api::namespaced(self.clients.of(cmd)?, ns);
        let pull = self.pull_secret.as_str();
        let mut data = BTreeMap::new();
        data.insert(
            ".dockerconfigjson".to_owned(),
            ByteString(pull.as_bytes().to_vec()),
        );
        self.apply_secret(
            &secrets,
            cmd,
            &names.pull_secret,
            "kubernetes.io/dockerconfigjson",
            data,
            false,
        )
        .await?;

        let mut data = BTreeMap::new();
        data.insert(
            "key".to_owned(),
            ByteString(key.private_key_pem().into_bytes()),
        );
        self.apply_secret(
            &secrets,
            cmd,
            &names.signing_key_secret,
            "Opaque",
            data,
            false,
        )
        .await?;

        let mut data = BTreeMap::new();
        data.insert(
            "AZURE_SUBSCRIPTION_ID".to_owned(),
            ByteString(inputs.subscription_id.as_bytes().to_vec()),
        );
        data.insert(
            "AZURE_TENANT_ID".to_owned(),
            ByteString(inputs.azure_tenant_id.as_bytes().to_vec()),
        );
        self.apply_secret(
            &secrets,
            cmd,
            &names.cloud_credentials_secret,
            "Opaque",
            data,
            true,
        )
        .await?;

        // The HostedCluster.
        let name = cmd.cluster.as_str();
        let hc = hosted_cluster(cmd, &inputs);
        kube_ops::apply(
            clusters,
            name,
            &hc,
            &target("HostedCluster", Some(ns), name),
        )
        .await?;
        Ok(())
    }

    async fn apply_secret(
        &self,
        api: &Api<Secret>,
        cmd: &StepCommand,
        name: &str,
        type_: &str,
        data: BTreeMap<String, ByteString>,
        safe_to_delete: bool,
    ) -> Result<(), StepError> {
        let mut labels = base_labels(cmd);
        if safe_to_delete {
            labels.insert(SAFE_TO_DELETE.to_owned(), "true".to_owned());
        }
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(cmd.context.names.namespace.clone()),
                labels: Some(labels),
                ..Default::default()
            },
            type_: Some(type_.to_owned()),
            data: Some(data),
            ..Default::default()
        };
        kube_ops::apply(
            api,
            name,
            &secret,
            &target("Secret", Some(&cmd.context.names.namespace), name),
        )
        .await?;
        Ok(())
    }

    /// Deletes the HostedCluster, then (once it is gone) the secrets and the namespace; each
    /// call goes as far as it can and answers "wait" for what is still going.
    async fn delete(&self, cmd: &StepCommand) -> Result<StepResult, StepError> {
        let names = &cmd.context.names;
        let ns = names.namespace.as_str();
        let name = cmd.cluster.as_str();

        let hc_target = target("HostedCluster", Some(ns), name);
        let clusters: Api<HostedCluster> = Api::namespaced(self.clients.of(cmd)?, ns);
        if let Check::Wait(why) = kube_ops::delete_check(&clusters, name, &hc_target).await? {
            return self.still_deleting(cmd, "HostedClusterDeletionPending", &hc_target, why);
        }

        let secrets: Api<Secret> = Api::namespaced(self.clients.of(cmd)?, ns);
        for secret in [
            &names.pull_secret,
            &names.signing_key_secret,
            &names.cloud_credentials_secret,
        ] {
            if kube_ops::delete(&secrets, secret, &target("Secret", Some(ns), secret)).await? {
                info!(object = %target("Secret", Some(ns), secret), "deleted");
            }
        }

        let ns_target = target("Namespace", None, ns);
        let namespaces: Api<Namespace> = Api::all(self.clients.of(cmd)?);
        if let Check::Wait(why) = kube_ops::delete_check(&namespaces, ns, &ns_target).await? {
            return self.still_deleting(cmd, "NamespaceDeletionPending", &ns_target, why);
        }
        Ok(StepResult::Done(Outputs::new()))
    }

    fn still_deleting(
        &self,
        cmd: &StepCommand,
        code: &str,
        what: &str,
        why: String,
    ) -> Result<StepResult, StepError> {
        self.waits.wait(cmd, code, what, why, Value::Null)
    }
}

#[async_trait::async_trait]
impl StepHandler for ControlPlaneHandler {
    async fn run(&self, cmd: &StepCommand, progress: &Progress) -> Result<StepResult, StepError> {
        self.execute(cmd, progress).await
    }

    /// The HostedClusters, secrets and namespaces labelled for `tenant` (and `cluster`), on
    /// every management cluster.
    async fn made(
        &self,
        tenant: &hypersaga_model::TenantId,
        cluster: Option<&str>,
    ) -> Result<Vec<hypersaga_bus::sweep::Made>, StepError> {
        self.labelled_all(tenant, cluster).await
    }

    /// The create's plan of each `controlplane.*` step: the objects its run applies on the
    /// management cluster.
    async fn plan(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        if cmd.action != Action::Do {
            // An add-on's removal: its ObjectDeployment (Package Operator then removes its
            // objects from both clusters).
            return match cmd.step_id()? {
                StepId::Addon(name) => {
                    let mut plan = crate::addon::plan(cmd, &name);
                    for change in &mut plan.changes {
                        change.verb = Some(hypersaga_bus::plan::Verb::Delete);
                    }
                    plan.outputs = Outputs::new();
                    Ok(plan)
                }
                _ => Err(cmd.unknown_step()),
            };
        }
        match cmd.step_id()? {
            StepId::HostedCluster => self.plan_hosted_cluster(cmd).await,
            // Only a wait: nothing applied.
            StepId::Rollout => Ok(StepPlan {
                step: cmd.step.clone(),
                outputs: RolloutOutputs::default().into_outputs(),
                ..StepPlan::default()
            }),
            StepId::Addon(name) => Ok(crate::addon::plan(cmd, &name)),
            _ => Err(cmd.unknown_step()),
        }
    }
}

impl ControlPlaneHandler {
    /// What [`ControlPlaneHandler::create`] would apply: the namespace, its three secrets and
    /// the HostedCluster; a release the management
    /// cluster's HyperShift does not support is a finding. The endpoint is HyperShift's to
    /// report: the outputs predict it empty.
    async fn plan_hosted_cluster(&self, cmd: &StepCommand) -> Result<StepPlan, StepError> {
        // What it applies does not depend on the earlier steps' outputs (their own plans say
        // whether those can be made), so the release is checked even when they cannot.
        let names = &cmd.context.names;
        let ns = names.namespace.as_str();
        let on_management = |api_version: &str, kind: &str, namespace: &str, name: &str| {
            kube_create(
                Target::ManagementCluster,
                api_version,
                kind,
                namespace,
                name,
            )
        };
        let mut changes = vec![on_management("v1", "Namespace", "", ns)];
        for secret in [
            &names.pull_secret,
            &names.signing_key_secret,
            &names.cloud_credentials_secret,
        ] {
            changes.push(on_management("v1", "Secret", ns, secret));
        }
        changes.push(on_management(
            hypersaga_hypershift::API_VERSION,
            "HostedCluster",
            ns,
            &cmd.cluster,
        ));
        let supported = crate::release::supported(self.clients.of(cmd)?).await?;
        let findings = supported
            .and_then(|s| crate::release::check(cmd, &s))
            .into_iter()
            .collect();
        Ok(StepPlan {
            step: cmd.step.clone(),
            changes,
            findings,
            outputs: HostedClusterOutputs {
                control_plane_host: String::new(),
                control_plane_port: 0,
                hosted_cluster_id: format!(
                    "hostedclusters.hypershift.openshift.io/{ns}/{}",
                    cmd.cluster
                ),
                namespace_id: format!("namespaces/{ns}"),
            }
            .into_outputs(),
        })
    }
}

/// What the HostedCluster needs from earlier steps and the tenant's configuration.
struct Inputs {
    issuer_url: String,
    workload_identities: AzureWorkloadIdentities,
    vnet_id: String,
    subnet_id: String,
    nsg_id: String,
    private_zone_id: String,
    public_zone_id: String,
    subscription_id: String,
    azure_tenant_id: String,
}

impl Inputs {
    fn from_command(cmd: &StepCommand, tenant: &TenantConfig) -> Result<Self, StepError> {
        let net = &cmd.context.spec.network;
        Ok(Self {
            issuer_url: earlier::<OidcOutputs>(cmd, &StepId::Oidc)?.issuer_url,
            workload_identities: workload_identities(cmd)?,
            vnet_id: id_or_given(
                cmd,
                StepId::Vnet,
                |o: VnetOutputs| o.vnet_id,
                net.vnet_id.as_deref(),
            )?,
            subnet_id: id_or_given(
                cmd,
                StepId::Vnet,
                |o: VnetOutputs| o.subnet_id,
                net.subnet_id.as_deref(),
            )?,
            nsg_id: id_or_given(
                cmd,
                StepId::Nsg,
                |o: NsgOutputs| o.nsg_id,
                net.nsg_id.as_deref(),
            )?,
            private_zone_id: earlier::<PrivateZoneOutputs>(cmd, &StepId::PrivateZone)?
                .private_zone_id,
            public_zone_id: earlier::<PublicZoneOutputs>(cmd, &StepId::PublicZone)?.public_zone,
            subscription_id: tenant.azure.subscription_id.clone(),
            azure_tenant_id: tenant.azure.tenant_id.clone(),
        })
    }
}

/// The outputs of an earlier step. Missing or unreadable is a terminal `MissingInput`, naming
/// the step and the output.
fn earlier<T: StepOutputs>(cmd: &StepCommand, step: &StepId) -> Result<T, StepError> {
    cmd.context.outputs_of(step).map_err(|mut e| {
        e.info.code = "MissingInput".to_owned();
        e
    })
}

/// An id from an earlier step's outputs, else what the user brought (`given`), else
/// `MissingInput`.
fn id_or_given<T: StepOutputs>(
    cmd: &StepCommand,
    step: StepId,
    pick: impl FnOnce(T) -> String,
    given: Option<&str>,
) -> Result<String, StepError> {
    match earlier(cmd, &step).map(pick) {
        Ok(id) if !id.is_empty() => Ok(id),
        found => match given.filter(|id| !id.is_empty()) {
            Some(id) => Ok(id.to_owned()),
            None => Err(found.err().unwrap_or_else(|| {
                StepError::terminal(
                    "MissingInput",
                    format!("step {step} reported an empty resource id"),
                )
                .with_target(step.to_string())
            })),
        },
    }
}

/// `identity.workload` → `workload_identities`, as HyperShift's `workloadIdentities`.
fn workload_identities(cmd: &StepCommand) -> Result<AzureWorkloadIdentities, StepError> {
    let step = StepId::WorkloadIdentities;
    let outputs = earlier::<WorkloadIdentitiesOutputs>(cmd, &step)?;
    serde_json::to_value(&outputs.workload_identities)
        .and_then(serde_json::from_value)
        .map_err(|e| {
            StepError::terminal(
                "InvalidInput",
                format!(
                    "output \"workload_identities\" of step {step} is not HyperShift's workloadIdentities: {e}"
                ),
            )
            .with_target(format!("{step}.workload_identities"))
        })
}

pub(crate) fn base_labels(cmd: &StepCommand) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_TENANT.to_owned(), cmd.tenant.to_string()),
        (LABEL_CLUSTER.to_owned(), cmd.cluster.clone()),
    ])
}

fn route(service: &str, type_: &str) -> ServicePublishingStrategyMapping {
    ServicePublishingStrategyMapping {
        service: service.to_owned(),
        service_publishing_strategy: ServicePublishingStrategy {
            type_: type_.to_owned(),
            ..Default::default()
        },
    }
}

/// The HostedCluster of `cmd`, as `hypershift create cluster azure` would build it.
fn hosted_cluster(cmd: &StepCommand, inputs: &Inputs) -> HostedCluster {
    let names = &cmd.context.names;
    let spec = &cmd.context.spec;
    let machine_network = if spec.network.is_user_brought() {
        Vec::new()
    } else {
        vec![NetworkEntry {
            cidr: spec.network.vnet_cidr().to_owned(),
        }]
    };
    let mut hc = HostedCluster::new(
        &cmd.cluster,
        HostedClusterSpec {
            release: Release {
                image: spec.release_image.clone(),
            },
            infra_id: names.infra_id.clone(),
            issuer_url: Some(inputs.issuer_url.clone()),
            pull_secret: Some(LocalObjectReference {
                name: names.pull_secret.clone(),
            }),
            service_account_signing_key: Some(LocalObjectReference {
                name: names.signing_key_secret.clone(),
            }),
            ssh_key: None,
            dns: Some(DnsSpec {
                base_domain: spec.base_domain.clone(),
                base_domain_prefix: None,
                public_zone_id: Some(inputs.public_zone_id.clone()),
                private_zone_id: Some(inputs.private_zone_id.clone()),
            }),
            networking: Some(ClusterNetworking {
                cluster_network: vec![ClusterNetworkEntry {
                    cidr: CLUSTER_NETWORK.to_owned(),
                    host_prefix: None,
                }],
                service_network: vec![NetworkEntry {
                    cidr: SERVICE_NETWORK.to_owned(),
                }],
                machine_network,
                network_type: Some("OVNKubernetes".to_owned()),
            }),
            services: vec![
                route("APIServer", "LoadBalancer"),
                route("OAuthServer", "Route"),
                route("Konnectivity", "Route"),
                route("Ignition", "Route"),
            ],
            platform: PlatformSpec {
                type_: "Azure".to_owned(),
                azure: Some(AzurePlatformSpec {
                    cloud: Some("AzurePublicCloud".to_owned()),
                    location: spec.location.clone(),
                    resource_group: names.managed_rg.clone(),
                    vnet_id: inputs.vnet_id.clone(),
                    subnet_id: inputs.subnet_id.clone(),
                    subscription_id: inputs.subscription_id.clone(),
                    security_group_id: inputs.nsg_id.clone(),
                    tenant_id: inputs.azure_tenant_id.clone(),
                    topology: Some("Public".to_owned()),
                    azure_authentication_config: AzureAuthenticationConfig {
                        azure_authentication_config_type:
                            AzureAuthenticationConfig::WORKLOAD_IDENTITIES.to_owned(),
                        workload_identities: Some(inputs.workload_identities.clone()),
                    },
                }),
            },
            secret_encryption: None,
        },
    );
    let mut labels = base_labels(cmd);
    labels.insert(LABEL_SAGA.to_owned(), cmd.saga_id.clone());
    hc.metadata.namespace = Some(names.namespace.clone());
    hc.metadata.labels = Some(labels);
    hc
}

/// The pull secret HyperShift hands to every component that pulls the release: without one
/// (or with no registry in it) a real cluster cannot pull OpenShift's images and never comes
/// up, so the service refuses to start rather than fail every create half an hour in.
/// The pull secret as the role needs it, or why not (also for `serve --check-config`).
pub fn check_pull_secret(secret: Option<&hypersaga_config::Secret>) -> Result<String, Error> {
    let Some(secret) = secret else {
        return Err(Error::PullSecret(
            "is required: the pull secret (a .dockerconfigjson, e.g. from \
             console.redhat.com/openshift/install/pull-secret) every HostedCluster pulls its \
             release with"
                .to_owned(),
        ));
    };
    let parsed: serde_json::Value = serde_json::from_str(secret.expose()).map_err(|e| {
        Error::PullSecret(format!(
            "is not JSON ({e}); expected a .dockerconfigjson: {{\"auths\": {{\"<registry>\": {{\"auth\": \"<base64 user:password>\"}}}}}}"
        ))
    })?;
    let Some(auths) = parsed.get("auths").and_then(|a| a.as_object()) else {
        return Err(Error::PullSecret(
            "has no \"auths\" object; expected a .dockerconfigjson".to_owned(),
        ));
    };
    if auths.is_empty() {
        return Err(Error::PullSecret(
            "names no registry under \"auths\": the release images could not be pulled".to_owned(),
        ));
    }
    for (registry, entry) in auths {
        let has_auth = entry
            .get("auth")
            .and_then(|a| a.as_str())
            .is_some_and(|a| !a.is_empty())
            || (entry.get("username").is_some() && entry.get("password").is_some());
        if !has_auth {
            return Err(Error::PullSecret(format!(
                "auths.{registry:?} has neither \"auth\" nor \"username\" and \"password\""
            )));
        }
    }
    Ok(secret.expose().to_owned())
}

/// Done when the newest rollout in the version history is `Completed` for `image`: the
/// version, and the history as it then stands.
fn check_rollout(
    obj: Option<&HostedCluster>,
    image: &str,
    hc_target: &str,
) -> Check<RolloutOutputs> {
    let Some(hc) = obj else {
        return Check::Fail(
            StepError::retryable(
                "HostedClusterGone",
                "the HostedCluster disappeared while its release rolled out",
            )
            .with_target(hc_target),
        );
    };
    let history = hc
        .status
        .as_ref()
        .and_then(|s| s.version.as_ref())
        .map_or(&[][..], |v| v.history.as_slice());
    match history.first() {
        Some(h) if h.image == image && h.state == "Completed" => Check::Done(RolloutOutputs {
            version: h.version.clone(),
            history: history
                .iter()
                .map(|h| VersionEntry {
                    version: h.version.clone(),
                    image: h.image.clone(),
                    state: h.state.clone(),
                    started: h.started_time.clone(),
                    completed: h.completion_time.clone(),
                })
                .collect(),
        }),
        Some(h) => Check::Wait(format!(
            "waiting for release {} to roll out on the nodes (version history: {})",
            if h.version.is_empty() {
                &h.image
            } else {
                &h.version
            },
            h.state
        )),
        None => Check::Wait("waiting for the release to start rolling out".to_owned()),
    }
}

fn describe(c: Option<&Condition>, type_: &str) -> String {
    match c {
        None => format!("{type_}=Unknown"),
        Some(c) if c.message.is_empty() => format!("{type_}={} ({})", c.status, c.reason),
        Some(c) => format!("{type_}={} ({}): {}", c.status, c.reason, c.message),
    }
}

/// Conditions by which HyperShift says the HostedCluster's input is wrong: it stops
/// reconciling it (no requeue) until the input changes, so waiting is pointless
/// (`hostedcluster_conditions.go`: "A failure here is unlikely to resolve without changing
/// user input"). `ValidReleaseImage` is also how HyperShift reports a registry it cannot
/// reach; it does not retry that either.
const INPUT_CONDITIONS: [&str; 4] = [
    "ValidReleaseImage",
    "ValidConfiguration",
    "SupportedHostedCluster",
    "ValidHostedControlPlaneConfiguration",
];

/// `Available=True` with a published endpoint → done; an input condition `False` for the
/// current generation → terminal, with the operator's words; otherwise wait, saying what
/// Available (and Degraded, if set) report.
///
/// `Degraded=True` is not a failure: HyperShift sets it (reason `UnavailableReplicas`)
/// whenever a control-plane deployment has unavailable replicas, i.e. during every start and
/// rollout. A control plane that never comes up is caught by the wait's own deadline.
fn check_available(obj: Option<&HostedCluster>, hc_target: &str) -> Check<(String, i32)> {
    let Some(hc) = obj else {
        return Check::Fail(
            StepError::retryable(
                "HostedClusterGone",
                "the HostedCluster disappeared while waiting for it",
            )
            .with_target(hc_target),
        );
    };
    let generation = hc.meta().generation;
    let current = |c: &&Condition| {
        c.observed_generation
            .is_none_or(|g| generation.is_none_or(|cur| g >= cur))
    };
    if let Some(bad) = INPUT_CONDITIONS
        .iter()
        .filter_map(|t| hc.condition(t))
        .filter(current)
        .find(|c| c.status() == ConditionStatus::False)
    {
        return Check::Fail(
            StepError::terminal(
                "HostedClusterInvalid",
                format!(
                    "HyperShift refused the HostedCluster: {}",
                    describe(Some(bad), &bad.type_)
                ),
            )
            .with_target(hc_target),
        );
    }
    if hc.is_available()
        && let Some(ep) = hc.control_plane_endpoint()
    {
        return Check::Done((ep.host.clone(), ep.port));
    }
    if hc.status.as_ref().is_none_or(|s| s.conditions.is_empty()) {
        return Check::Wait(
            "waiting for the HyperShift operator to report HostedCluster status".to_owned(),
        );
    }
    let mut says = describe(hc.condition(conditions::AVAILABLE), conditions::AVAILABLE);
    if let Some(d) = hc.condition(conditions::DEGRADED).filter(|c| c.is_true()) {
        says.push_str("; ");
        says.push_str(&describe(Some(d), conditions::DEGRADED));
    }
    Check::Wait(says)
}

#[cfg(test)]
mod tests {
    use hypersaga_config::Secret;

    use super::*;

    fn check(s: Option<&str>) -> Result<String, String> {
        check_pull_secret(s.map(Secret::new).as_ref()).map_err(|e| e.to_string())
    }

    /// A HostedCluster at generation 1 with `conditions` as `(type, status, reason, message)`
    /// and, when `endpoint`, a published API endpoint.
    fn hc(conds: &[(&str, &str, &str, &str)], endpoint: bool) -> HostedCluster {
        let conditions: Vec<serde_json::Value> = conds
            .iter()
            .map(|(t, s, r, m)| {
                serde_json::json!({"type": t, "status": s, "reason": r, "message": m,
                    "lastTransitionTime": "2026-11-24T00:00:00Z", "observedGeneration": 1})
            })
            .collect();
        let mut status = serde_json::json!({ "conditions": conditions });
        if endpoint {
            status["controlPlaneEndpoint"] =
                serde_json::json!({"host": "api.demo.example.com", "port": 443});
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "hypershift.openshift.io/v1beta1",
            "kind": "HostedCluster",
            "metadata": {"name": "demo", "namespace": "hcp-x", "generation": 1},
            "spec": {
                "release": {"image": "quay.io/openshift-release-dev/ocp-release:4.21.0-multi"},
                "pullSecret": {"name": "demo-pull-secret"},
                "networking": {"networkType": "OVNKubernetes"},
                "platform": {"type": "Azure"},
                "services": [],
                "dns": {"baseDomain": "example.com"},
                "infraID": "demo-abcde",
                "issuerURL": "https://issuer"
            },
            "status": status,
        }))
        .expect("a HostedCluster")
    }

    // Condition texts as HyperShift's controllers write them (hostedcluster_controller.go,
    // hostedcontrolplane_controller.go `reconcileDegradedStatus`).
    const NOT_FOUND: (&str, &str, &str, &str) = (
        "Available",
        "False",
        "WaitingForAvailable",
        "Waiting for hosted control plane to be healthy",
    );
    const STARTING: (&str, &str, &str, &str) = (
        "Degraded",
        "True",
        "UnavailableReplicas",
        "kube-apiserver deployment has 2 unavailable replicas",
    );

    #[test]
    fn a_degraded_control_plane_that_is_starting_is_waited_for() {
        match check_available(Some(&hc(&[NOT_FOUND, STARTING], false)), "t") {
            Check::Wait(says) => {
                assert!(says.contains("WaitingForAvailable"), "{says}");
                assert!(
                    says.contains("Degraded=True (UnavailableReplicas)"),
                    "{says}"
                );
            }
            other => panic!("{other:?}"),
        }
        let up = (
            "Available",
            "True",
            "AsExpected",
            "The hosted control plane is available",
        );
        // Still Degraded while the last replicas start: available is what counts.
        match check_available(Some(&hc(&[up, STARTING], true)), "t") {
            Check::Done((host, port)) => {
                assert_eq!((host.as_str(), port), ("api.demo.example.com", 443))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wrong_input_fails_fast_with_the_operators_words() {
        let refused = (
            "ValidReleaseImage",
            "False",
            "InvalidImage",
            "the latest version supported is: \"4.20.0\". Attempting to use: \"4.99.0\"",
        );
        match check_available(
            Some(&hc(&[NOT_FOUND, refused], false)),
            "HostedCluster/hcp-x/demo",
        ) {
            Check::Fail(e) => {
                assert!(!e.is_retryable(), "{e:?}");
                assert!(
                    e.info
                        .message
                        .contains("ValidReleaseImage=False (InvalidImage)"),
                    "{e:?}"
                );
                assert!(
                    e.info.message.contains("Attempting to use: \"4.99.0\""),
                    "{e:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        let invalid = (
            "ValidConfiguration",
            "False",
            "InvalidConfiguration",
            "[a, b]",
        );
        assert!(matches!(
            check_available(Some(&hc(&[invalid], false)), "t"),
            Check::Fail(_)
        ));
        // True, or about an older generation: not a refusal.
        let fine = (
            "ValidReleaseImage",
            "True",
            "AsExpected",
            "Release image is valid",
        );
        assert!(matches!(
            check_available(Some(&hc(&[NOT_FOUND, fine], false)), "t"),
            Check::Wait(_)
        ));
        let mut old = hc(&[refused], false);
        old.metadata.generation = Some(2);
        assert!(matches!(check_available(Some(&old), "t"), Check::Wait(_)));
    }

    #[test]
    fn the_rollout_is_done_when_the_newest_history_entry_completed_for_the_image() {
        let image = "quay.io/openshift-release-dev/ocp-release:4.21.0-multi";
        let with = |history: serde_json::Value| {
            let mut hc = hc(&[], true);
            let mut status = serde_json::to_value(hc.status.take()).unwrap();
            status["version"] = serde_json::json!({"history": history});
            hc.status = serde_json::from_value(status).unwrap();
            hc
        };
        let entry = |state: &str, image: &str| serde_json::json!({"state": state, "image": image, "version": "4.21.0"});
        let done = with(serde_json::json!([entry("Completed", image)]));
        assert!(
            matches!(check_rollout(Some(&done), image, "t"), Check::Done(v) if v.version == "4.21.0" && v.history.len() == 1)
        );
        let partial = with(serde_json::json!([entry("Partial", image)]));
        assert!(
            matches!(check_rollout(Some(&partial), image, "t"), Check::Wait(w) if w.contains("Partial"))
        );
        // An older release completed is not this one.
        let older = with(serde_json::json!([entry("Completed", "quay.io/x:4.20.0")]));
        assert!(matches!(
            check_rollout(Some(&older), image, "t"),
            Check::Wait(_)
        ));
        assert!(matches!(check_rollout(None, image, "t"), Check::Fail(_)));
    }

    #[test]
    fn the_pull_secret_is_required_and_must_name_a_registry() {
        // The shape `docker login` and console.redhat.com write.
        let good = r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz","email":"me@example.com"}}}"#;
        assert_eq!(check(Some(good)).as_deref(), Ok(good));
        let basic = r#"{"auths":{"registry.example.com":{"username":"u","password":"p"}}}"#;
        assert!(check(Some(basic)).is_ok());
        for (bad, says) in [
            (None, "is required"),
            (Some("not json"), "is not JSON"),
            (Some(r#"{"quay.io":{}}"#), "no \"auths\""),
            (Some(r#"{"auths":{}}"#), "names no registry"),
            (Some(r#"{"auths":{"quay.io":{}}}"#), "auths.\"quay.io\""),
        ] {
            let err = check(bad).expect_err("refused");
            assert!(err.starts_with("kube.pull_secret: "), "{err}");
            assert!(err.contains(says), "{err}");
        }
    }
}
