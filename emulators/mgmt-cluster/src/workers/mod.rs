//! The simulated CAPI + CAPZ of a NodePool: its workers as Machines on the management
//! cluster, under a MachineDeployment and its MachineSets as HyperShift and Cluster API
//! manage them, and — for an Azure NodePool when the emulator has an [`AzureEndpoints`] —
//! as VMs in ARM, made and removed as the `nodePoolManagement` workload identity.
//!
//! Machines live in the control plane's namespace. Scaling changes the MachineDeployment's
//! replicas (fixed, or the simulated cluster-autoscaler's); a new release or platform
//! template rolls the Machines over to a new MachineSet by the NodePool's rollout strategy
//! (`Replace`: `RollingUpdate` with `maxSurge`/`maxUnavailable`, or `OnDelete`); node
//! labels, taints and drain timeouts change in place. See [`rollout`], [`deployment`].
//!
//! With Azure, each Machine's NIC and VM are made in the cluster's managed resource group
//! with a token Entra issues for the hosted cluster's `kube-system/capi-provider` service
//! account (signed with the HostedCluster's `serviceAccountSigningKey`), so ARM authorizes
//! the work by that identity's role assignments alone. A refusal stays on the Machine, and
//! replicas do not rise. A deleted NodePool keeps its finalizer until every Machine's VM,
//! disk and NIC are gone, so whatever is torn down after it (the subnet) is no longer in use.
//! Without Azure the Machines' infrastructure is emulated ([`capz::Emulated`]): there at
//! once, their nodes ready `node_pool_ready_after` later.

pub(crate) mod arm_client;
mod autoscaler;
mod azure_spec;
pub(crate) mod capi;
mod capz;
pub(crate) mod deployment;
mod machine_set;
pub(crate) mod machines;
mod pool;
pub(crate) mod rollout;
mod sync;
pub(crate) mod token;
mod view;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::config::{AzureEndpoints, Config};
use crate::meta::{is_deleting, meta_str};
use crate::store::Store;
use arm_client::Endpoints;
use azure_spec::{identity, signing_key_pem, template, text};
use capi::NodeTiming;
use capz::{Capz, Emulated, Seen};
use deployment::{Intent, MachineDeployment};
use pool::{Order, Plan, Pool, Report};
pub(crate) use view::PoolView;

pub(crate) use azure_spec::control_plane_namespace;

/// Where the workers' cloud is, and the client that reaches it.
struct Cloud {
    http: reqwest::Client,
    endpoints: Endpoints,
    changed: Arc<Notify>,
}

/// Every NodePool's workers, owned by the operator task.
#[derive(Default)]
pub(crate) struct Workers {
    cloud: Option<Cloud>,
    /// Each NodePool's infrastructure provider, by uid.
    providers: HashMap<String, Capz>,
    /// Each NodePool's MachineDeployment, by uid.
    deployments: HashMap<String, MachineDeployment>,
    /// Verdicts on signing key PEMs by digest, so a key is parsed once, not every pass.
    keys: HashMap<[u8; 32], Option<String>>,
}

impl Workers {
    /// Workers for `config`: in its Azure if it names one, else emulated.
    pub fn new(config: &Config, changed: Arc<Notify>) -> Self {
        let cloud = config.azure.as_ref().and_then(|a: &AzureEndpoints| {
            match arm_client::http_client(a.ca_pem.as_deref()) {
                Ok(http) => Some(Cloud {
                    http,
                    endpoints: Endpoints {
                        arm: a.arm_url.clone(),
                        entra: a.entra_url.clone(),
                    },
                    changed,
                }),
                Err(e) => {
                    tracing::error!(error = %e, "no Azure client: NodePools get no VMs");
                    None
                }
            }
        });
        Self {
            cloud,
            ..Self::default()
        }
    }

    /// Whether `np`'s workers are made in Azure: the emulator has one and both the NodePool
    /// and its HostedCluster are on the Azure platform.
    fn in_azure(&self, np: &Value, hc: &Value) -> bool {
        self.cloud.is_some()
            && text(np, "/spec/platform/type") == "Azure"
            && text(hc, "/spec/platform/type") == "Azure"
    }

    /// HyperShift's check of the HostedCluster's signing key (`validateServiceAccountSigningKey`):
    /// `None` when it is usable or not set, else the `ValidConfiguration` message.
    pub fn signing_key_problem(&mut self, store: &Store, hc: &Value) -> Option<String> {
        let pem = match signing_key_pem(store, hc) {
            Ok(None) => return None,
            Ok(Some(pem)) => pem,
            Err(why) => return Some(format!("invalid service account signing key: {why}")),
        };
        if text(hc, "/spec/issuerURL").is_empty() {
            return Some(
                "invalid service account signing key: the IssuerURL must be set when \
                 specifying a service account signing key"
                    .into(),
            );
        }
        let digest: [u8; 32] = Sha256::digest(pem.as_bytes()).into();
        let name = text(hc, "/spec/serviceAccountSigningKey/name");
        let verdict = self.keys.entry(digest).or_insert_with(|| {
            token::signing_key(&pem)
                .err()
                .map(|e| format!("invalid service account signing key: {e} (secret {name})"))
        });
        verdict.clone()
    }

    fn provider(&mut self, uid: &str, azure: bool) -> &mut Capz {
        let cloud = self.cloud.as_ref().filter(|_| azure);
        self.providers
            .entry(uid.to_owned())
            .or_insert_with(|| match cloud {
                Some(cloud) => Capz::Azure(Pool::new(
                    cloud.http.clone(),
                    cloud.endpoints.clone(),
                    cloud.changed.clone(),
                )),
                None => Capz::Emulated(Emulated::default()),
            })
    }

    /// One pass of CAPI and CAPZ for `np`: its MachineDeployment reconciled to `intent`
    /// (left as it was when HyperShift does not reconcile, `None`), its MachineSets
    /// converged (every Machine deleted when the NodePool is), its Machines' infrastructure
    /// worked and observed; answers what the NodePool reports.
    pub fn converge(
        &mut self,
        store: &Store,
        np: &Value,
        hc: &Value,
        intent: Option<&Intent>,
        ready_after: Duration,
        now: Instant,
    ) -> PoolView {
        let np_ns = meta_str(np, "namespace").unwrap_or_default();
        let np_name = meta_str(np, "name").unwrap_or_default();
        let np_uid = meta_str(np, "uid").unwrap_or_default().to_owned();
        let np_key = format!("{np_ns}/{np_name}");
        let namespace = control_plane_namespace(hc);
        let deleting = is_deleting(np);
        let listed = capi::machines_of(store, &namespace, &np_key);

        // HyperShift's MachineDeployment, then CAPI's MachineSets.
        match (self.deployments.get_mut(&np_uid), intent) {
            (Some(md), Some(intent)) => md.update(intent),
            (None, Some(intent)) => {
                self.deployments.insert(
                    np_uid.clone(),
                    MachineDeployment::new(np_name, &np_uid, intent),
                );
            }
            _ => {}
        }
        let changed = if deleting {
            // HyperShift deletes the MachineDeployment; its Machines all go.
            let live: Vec<&Value> = listed.iter().filter(|m| !is_deleting(m)).collect();
            live.iter().for_each(|m| capi::delete(store, m));
            !live.is_empty()
        } else if let Some(md) = self.deployments.get(&np_uid) {
            let cluster = match text(hc, "/spec/infraID") {
                "" => np_name,
                id => id,
            };
            let pool = sync::Pool {
                namespace: &namespace,
                np_key: &np_key,
                np_name,
                cluster,
                platform: text(np, "/spec/platform/type"),
            };
            sync::machine_sets(store, &pool, md, &listed)
        } else {
            false
        };
        // What the MachineSets wrote is what CAPZ works on.
        let machines = if changed {
            capi::machines_of(store, &namespace, &np_key)
        } else {
            listed
        };
        if let Some(md) = self.deployments.get_mut(&np_uid) {
            let in_use: Vec<&str> = machines.iter().map(sync::set_of).collect();
            md.forget_empty(&in_use);
        }

        let wake = self.infrastructure(store, np, hc, &np_uid, &machines, ready_after, now);
        let md = self.deployments.get(&np_uid);
        let replicas = md.map_or(0, |md| md.replicas);
        let current = md.map(|md| sync::counts(&md.current, &machines));
        let no_replicas = np.pointer("/spec/replicas").and_then(Value::as_i64) == Some(0);
        let complete = current.as_ref().is_some_and(|c| {
            c.spec == replicas
                && c.available == replicas
                && i64::try_from(machines.len()).is_ok_and(|n| n == replicas)
        });
        PoolView {
            available: capi::available(&machines),
            min_available: replicas - md.map_or(0, |md| md.strategy.max_unavailable(replicas)),
            complete,
            version: md.and_then(|md| md.template()).map(|t| t.version.clone()),
            all_machines_ready: capi::all_machines_ready(&machines, no_replicas),
            all_nodes_healthy: capi::all_nodes_healthy(&machines, no_replicas),
            wake,
        }
    }

    /// CAPZ's side: hands the provider its orders (deletions first, then creations oldest
    /// first, each with its MachineSet's template) and writes what it reports on the
    /// Machines; answers when a node becomes ready.
    #[allow(clippy::too_many_arguments)]
    fn infrastructure(
        &mut self,
        store: &Store,
        np: &Value,
        hc: &Value,
        np_uid: &str,
        machines: &[Value],
        ready_after: Duration,
        now: Instant,
    ) -> Option<Instant> {
        let azure = self.in_azure(np, hc);
        let fallback = np
            .pointer("/spec/platform/azure")
            .cloned()
            .unwrap_or(Value::Null);
        let release = text(np, "/spec/release/image");
        let md = self.deployments.get(np_uid);
        let template_of = |m: &Value| {
            let (platform, release) = match md.and_then(|md| md.set(sync::set_of(m))) {
                Some(t) => (&t.platform, t.release_image.as_str()),
                None => (&fallback, release),
            };
            template(hc, platform, release)
        };
        let ordered = machines
            .iter()
            .filter(|m| is_deleting(m))
            .chain(machines.iter().filter(|m| !is_deleting(m)));
        let plan = if azure {
            let orders: Result<Vec<Order>, String> = ordered
                .map(|m| {
                    Ok(Order {
                        machine: meta_str(m, "name").unwrap_or_default().to_owned(),
                        delete: is_deleting(m),
                        template: template_of(m)?,
                    })
                })
                .collect();
            match (identity(store, hc), orders) {
                (Ok(identity), Ok(orders)) => Some(Plan { identity, orders }),
                (Err(why), _) | (_, Err(why)) => {
                    tracing::debug!(nodepool = %text(np, "/metadata/name"), %why, "machines cannot be worked");
                    None
                }
            }
        } else {
            None
        };
        let provider_ids: Vec<Option<String>> = machines
            .iter()
            .map(|m| {
                let name = meta_str(m, "name").unwrap_or_default();
                template_of(m)
                    .ok()
                    .map(|t| format!("azure://{}", t.vm_id(name)))
            })
            .collect();
        let provider = self.provider(np_uid, azure);
        provider.submit(plan);
        let names: Vec<&str> = machines
            .iter()
            .map(|m| meta_str(m, "name").unwrap_or_default())
            .collect();
        provider.retain(&names);
        let timing = NodeTiming { ready_after, now };
        let mut wake: Option<Instant> = None;
        for (m, provider_id) in machines.iter().zip(provider_ids) {
            let seen = Seen {
                machine: meta_str(m, "name").unwrap_or_default(),
                deleting: is_deleting(m),
                provider_id,
            };
            let report = provider.report(&seen, now);
            if seen.deleting && report == Some(Report::Deleted) {
                capi::release(store, m);
                continue;
            }
            if let Some(at) = capi::observe(store, m, report.as_ref(), &timing) {
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
        }
        wake
    }

    /// Whether a deleted NodePool's Machines, and so their VMs, are all gone; starts their
    /// removal if not.
    pub fn released(
        &mut self,
        store: &Store,
        np: &Value,
        hc: Option<&Value>,
        ready_after: Duration,
        now: Instant,
    ) -> bool {
        let Some(hc) = hc else {
            return true; // no control plane namespace, so no Machines
        };
        let np_key = format!(
            "{}/{}",
            meta_str(np, "namespace").unwrap_or_default(),
            meta_str(np, "name").unwrap_or_default()
        );
        let namespace = control_plane_namespace(hc);
        if capi::machines_of(store, &namespace, &np_key).is_empty() {
            return true;
        }
        // Converging a deleted NodePool deletes its Machines and releases those whose
        // resources are gone.
        self.converge(store, np, hc, None, ready_after, now);
        capi::machines_of(store, &namespace, &np_key).is_empty()
    }

    /// Forgets the pools of NodePools that no longer exist.
    pub fn retain(&mut self, live: &[String]) {
        self.providers.retain(|uid, _| live.contains(uid));
        self.deployments.retain(|uid, _| live.contains(uid));
    }
}
