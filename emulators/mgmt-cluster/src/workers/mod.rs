//! The simulated CAPI + CAPZ of an Azure NodePool: its workers as Machines on the management
//! cluster and as VMs in ARM, made and removed as the `nodePoolManagement` workload identity.
//!
//! When the emulator is configured with an [`AzureEndpoints`], an Azure NodePool of an Azure
//! HostedCluster gets one Machine per replica in the control plane's namespace; each Machine's
//! NIC and VM are made in the cluster's managed resource group with a token Entra issues for
//! the hosted cluster's `kube-system/capi-provider` service account (signed with the
//! HostedCluster's `serviceAccountSigningKey`), so ARM authorizes the work by that identity's
//! role assignments alone. A refusal stays on the Machine, and replicas do not rise. A deleted
//! NodePool keeps its finalizer until every Machine's VM, disk and NIC are gone, so whatever
//! is torn down after it (the subnet) is no longer in use.
//!
//! Without endpoints the operator keeps its timed simulation: nodes without any cloud.

pub(crate) mod arm_client;
pub(crate) mod capi;
pub(crate) mod machines;
mod pool;
pub(crate) mod token;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::config::{AzureEndpoints, Config};
use crate::kinds::SECRETS;
use crate::meta::{is_deleting, meta_str};
use crate::store::Store;
use arm_client::{Endpoints, Identity};
use capi::{NodeTiming, PoolCondition};
use machines::Template;
use pool::{Order, Plan, Pool, Report};

/// HyperShift's data key of the signing key Secret (`ServiceAccountSigningKeySecretKey`).
const SIGNING_KEY_DATA: &str = "key";

/// The NodePool's view of its Machines, for the operator to put in its status.
pub(crate) struct PoolView {
    /// Machines whose node has joined.
    pub available: i64,
    pub all_machines_ready: PoolCondition,
    pub all_nodes_healthy: PoolCondition,
    /// When to look again without a change (a node that becomes ready).
    pub wake: Option<Instant>,
}

impl PoolView {
    /// The NodePool's `Ready` (the MachineDeployment's, as HyperShift copies it),
    /// `AllMachinesReady` and `AllNodesHealthy`, as (type, true?, reason, message).
    pub fn conditions(&self, replicas: i64) -> Vec<(&'static str, bool, String, String)> {
        let ready = if self.ready(replicas) {
            (true, "AsExpected".to_owned(), String::new())
        } else {
            (
                false,
                "WaitingForAvailableMachines".to_owned(),
                format!(
                    "Minimum availability requires {replicas} replicas, current {} available",
                    self.available
                ),
            )
        };
        let (m, n) = (&self.all_machines_ready, &self.all_nodes_healthy);
        vec![
            ("Ready", ready.0, ready.1, ready.2),
            ("AllMachinesReady", m.0, m.1.clone(), m.2.clone()),
            ("AllNodesHealthy", n.0, n.1.clone(), n.2.clone()),
        ]
    }

    /// Every replica has a node that joined.
    pub fn ready(&self, replicas: i64) -> bool {
        self.available >= replicas
    }
}

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
    pools: HashMap<String, Pool>,
    /// Verdicts on signing key PEMs by digest, so a key is parsed once, not every pass.
    keys: HashMap<[u8; 32], Option<String>>,
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn last_segment(id: &str) -> &str {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or(id)
}

/// The control plane's namespace of a HostedCluster (`<namespace>-<name>`, dots as dashes).
pub(crate) fn control_plane_namespace(hc: &Value) -> String {
    format!(
        "{}-{}",
        meta_str(hc, "namespace").unwrap_or_default(),
        meta_str(hc, "name").unwrap_or_default()
    )
    .replace('.', "-")
}

/// The PEM of the HostedCluster's signing key Secret, or HyperShift's words for why not
/// (`serviceAccountSigningKeyBytes`).
fn signing_key_pem(store: &Store, hc: &Value) -> Result<Option<String>, String> {
    let Some(name) = hc
        .pointer("/spec/serviceAccountSigningKey/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return Ok(None);
    };
    let ns = meta_str(hc, "namespace").unwrap_or_default();
    let secret = store.get(SECRETS, ns, name).map_err(|_| {
        format!(
            "failed to get hostedcluster ServiceAccountSigningKey secret {name}: secrets \
             \"{name}\" not found"
        )
    })?;
    let data = secret
        .pointer(&format!("/data/{SIGNING_KEY_DATA}"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!("cannot find service account key \"{SIGNING_KEY_DATA}\" in secret {name}")
        })?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("cannot decode private key in secret {name}: {e}"))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| format!("cannot decode private key in secret {name}: {e}"))
}

/// The marketplace image HyperShift defaults a NodePool to from the release payload's RHCOS
/// stream (`defaultAzureNodePoolImage`, 4.20 and later). The emulator has no payload to read:
/// it names the offer HyperShift's examples use and the release's minor, at `latest`.
fn image_reference(np: &Value, release: &str) -> Value {
    let image = np
        .pointer("/spec/platform/azure/image")
        .cloned()
        .unwrap_or(json!({}));
    if let Some(id) = image.get("imageID").and_then(Value::as_str) {
        return json!({"id": id});
    }
    let market = image.get("azureMarketplace").cloned().unwrap_or(json!({}));
    let field = |k: &str| {
        market
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let (Some(p), Some(o), Some(s), Some(v)) = (
        field("publisher"),
        field("offer"),
        field("sku"),
        field("version"),
    ) {
        return json!({"publisher": p, "offer": o, "sku": s, "version": v});
    }
    let minor: String = hypersaga_hypershift::release_version(release)
        .map(|v| v.split('.').take(2).collect())
        .unwrap_or_default();
    let sku = match field("imageGeneration") {
        Some("Gen1") => format!("aro_{minor}_gen1"),
        _ => format!("aro_{minor}"),
    };
    json!({"publisher": "azureopenshift", "offer": "aro4", "sku": sku, "version": "latest"})
}

/// The CAPZ template of a NodePool of `hc`, or what is missing for one.
fn template(hc: &Value, np: &Value) -> Result<Template, String> {
    let azure = hc
        .pointer("/spec/platform/azure")
        .ok_or("the HostedCluster has no spec.platform.azure")?;
    let field = |pointer: &str| -> Result<String, String> {
        azure
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "spec.platform.azure{} is not set",
                    pointer.replace('/', ".")
                )
            })
    };
    let vnet_id = field("/vnetID")?;
    // CAPZ takes only the subnet's name from the NodePool (`GetSubnetNameFromSubnetID`) and
    // finds it in the cluster's VNet.
    let np_subnet = text(np, "/spec/platform/azure/subnetID");
    let subnet = if np_subnet.is_empty() {
        last_segment(&field("/subnetID")?).to_owned()
    } else {
        last_segment(np_subnet).to_owned()
    };
    let release = text(np, "/spec/release/image");
    Ok(Template {
        subscription: field("/subscriptionID")?,
        resource_group: field("/resourceGroup")?,
        location: field("/location")?,
        subnet_id: format!("{}/subnets/{subnet}", vnet_id.trim_end_matches('/')),
        cluster: text(hc, "/spec/infraID").to_owned(),
        vm_size: text(np, "/spec/platform/azure/vmSize").to_owned(),
        image: image_reference(np, release),
        os_disk_gib: np
            .pointer("/spec/platform/azure/osDisk/sizeGiB")
            .and_then(Value::as_i64)
            .unwrap_or(30),
        os_disk_type: match text(np, "/spec/platform/azure/osDisk/diskStorageAccountType") {
            "" => "Premium_LRS".to_owned(),
            t => t.to_owned(),
        },
        zone: np
            .pointer("/spec/platform/azure/availabilityZone")
            .and_then(Value::as_str)
            .filter(|z| !z.is_empty())
            .map(str::to_owned),
    })
}

/// Who CAPZ acts as for `hc`, or what is missing for it.
fn identity(store: &Store, hc: &Value) -> Result<Identity, String> {
    let client_id = text(
        hc,
        "/spec/platform/azure/azureAuthenticationConfig/workloadIdentities/nodePoolManagement/clientID",
    );
    if client_id.is_empty() {
        return Err("the HostedCluster names no nodePoolManagement workload identity".into());
    }
    let issuer = text(hc, "/spec/issuerURL");
    if issuer.is_empty() {
        return Err("the HostedCluster has no issuerURL".into());
    }
    let key_pem =
        signing_key_pem(store, hc)?.ok_or("the HostedCluster has no serviceAccountSigningKey")?;
    Ok(Identity {
        tenant_id: text(hc, "/spec/platform/azure/tenantID").to_owned(),
        client_id: client_id.to_owned(),
        issuer: issuer.to_owned(),
        key_pem,
    })
}

impl Workers {
    /// Workers for `config`: in its Azure if it names one, else none.
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
    pub fn manages(&self, np: &Value, hc: Option<&Value>) -> bool {
        self.cloud.is_some()
            && text(np, "/spec/platform/type") == "Azure"
            && hc.is_some_and(|hc| text(hc, "/spec/platform/type") == "Azure")
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

    fn pool(&mut self, uid: &str) -> Option<&Pool> {
        let cloud = self.cloud.as_ref()?;
        Some(self.pools.entry(uid.to_owned()).or_insert_with(|| {
            Pool::new(
                cloud.http.clone(),
                cloud.endpoints.clone(),
                cloud.changed.clone(),
            )
        }))
    }

    /// Converges `np`'s Machines to `replicas` (all of them gone when the NodePool is being
    /// deleted) and hands their orders to its CAPZ; answers what the NodePool reports.
    pub fn converge(
        &mut self,
        store: &Store,
        np: &Value,
        hc: &Value,
        replicas: i64,
        ready_after: Duration,
        now: Instant,
    ) -> PoolView {
        let np_ns = meta_str(np, "namespace").unwrap_or_default();
        let np_name = meta_str(np, "name").unwrap_or_default();
        let np_uid = meta_str(np, "uid").unwrap_or_default().to_owned();
        let np_key = format!("{np_ns}/{np_name}");
        let namespace = control_plane_namespace(hc);
        let deleting = is_deleting(np);
        let target = if deleting { 0 } else { replicas.max(0) };
        let listed = capi::machines_of(store, &namespace, &np_key);

        // The MachineSet scales: new Machines, or the newest ones deleted.
        let live: Vec<&Value> = listed.iter().filter(|m| !is_deleting(m)).collect();
        let live_count = i64::try_from(live.len()).unwrap_or(i64::MAX);
        if live_count < target && !deleting {
            let machine_set = capi::machine_set_name(np_name, &np_uid);
            let cluster = text(hc, "/spec/infraID");
            for _ in live_count..target {
                let new = capi::NewMachine {
                    namespace: &namespace,
                    np_key: &np_key,
                    np_name,
                    machine_set: &machine_set,
                    cluster: if cluster.is_empty() { np_name } else { cluster },
                    version: None,
                };
                if let Err(e) = capi::create(store, &new) {
                    tracing::debug!(error = %e, "machine not created");
                }
            }
        } else if live_count > target {
            let extra = usize::try_from(live_count - target).unwrap_or(0);
            for m in live.iter().rev().take(extra) {
                capi::delete(store, m);
            }
        }

        // What the scaling wrote is what CAPZ works on.
        let machines = if live_count == target {
            listed
        } else {
            capi::machines_of(store, &namespace, &np_key)
        };

        // CAPZ works the orders; the Machines show what it reports.
        let orders: Vec<Order> = machines
            .iter()
            .filter(|m| is_deleting(m))
            .chain(machines.iter().filter(|m| !is_deleting(m)))
            .map(|m| Order {
                machine: meta_str(m, "name").unwrap_or_default().to_owned(),
                delete: is_deleting(m),
            })
            .collect();
        let plan = match (identity(store, hc), template(hc, np)) {
            (Ok(identity), Ok(template)) => Some(Plan {
                identity,
                template,
                orders,
            }),
            (Err(why), _) | (_, Err(why)) => {
                tracing::debug!(nodepool = %np_key, %why, "machines cannot be worked");
                None
            }
        };
        let timing = NodeTiming { ready_after, now };
        let mut wake: Option<Instant> = None;
        if let Some(pool) = self.pool(&np_uid) {
            if let Some(plan) = plan {
                pool.submit(plan);
            }
            for m in &machines {
                let name = meta_str(m, "name").unwrap_or_default();
                let report = pool.report(name);
                if is_deleting(m) && report == Some(Report::Deleted) {
                    capi::release(store, m);
                    continue;
                }
                if let Some(at) = capi::observe(store, m, report.as_ref(), &timing) {
                    wake = Some(wake.map_or(at, |w| w.min(at)));
                }
            }
        }
        PoolView {
            available: capi::available(&machines),
            all_machines_ready: capi::all_machines_ready(&machines, target),
            all_nodes_healthy: capi::all_nodes_healthy(&machines, target),
            wake,
        }
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
        self.converge(store, np, hc, 0, ready_after, now);
        capi::machines_of(store, &namespace, &np_key).is_empty()
    }

    /// Forgets the pools of NodePools that no longer exist.
    pub fn retain(&mut self, live: &[String]) {
        self.pools.retain(|uid, _| live.contains(uid));
    }
}
