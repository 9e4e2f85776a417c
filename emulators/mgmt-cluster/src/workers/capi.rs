//! Cluster API's side of a NodePool: its `Machine`s in the control plane's namespace, as a
//! MachineSet makes them (labels and annotations from HyperShift's MachineDeployment
//! template) and as HyperShift updates them in place, their status as CAPI and CAPZ set it,
//! and the NodePool conditions HyperShift derives from them.
//!
//! Machines are named as CAPI names them under HyperShift: the MachineDeployment is the
//! NodePool's name, its MachineSet `<deployment>-<5 random>` (`computeNewMachineSetName`),
//! each Machine `<machineset>-<5 random>` (apimachinery's `SimpleNameGenerator`, whose
//! alphabet has no vowels). The infrastructure machine and the VM carry the Machine's name.
//!
//! A Machine's `InfrastructureReady` mirrors the AzureMachine's `Ready`, which summarises its
//! CAPZ conditions: `Creating` (Info) while a service works, `Failed`/`DeletionFailed`
//! (Error) with CAPZ's whole message when one fails, and CAPI's fallback
//! `WaitingForInfrastructure` while the AzureMachine has none (before any service ran, and
//! after CAPZ's terminal configuration error, which sets no condition). That terminal error
//! reaches the Machine as CAPI copies it (`reconcileExternal`): `status.failureReason` as the
//! AzureMachine has it, `status.failureMessage` prefixed with the object it came from. HyperShift folds the Machines into the
//! NodePool's `AllMachinesReady` and `AllNodesHealthy` (`setAllMachinesReadyCondition`,
//! `aggregateMachineReasonsAndMessages`), keeping at most 1000 characters of messages per
//! reason and 3000 in all: a message longer than that (any ARM refusal, with azcore's request
//! line and body) is dropped for `... too many similar errors`, so the refusal's words are
//! only on the Machine.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::deployment::InPlace;
use super::pool::Report;
use crate::kinds::MACHINES;
use crate::meta::{finalizers, is_deleting, meta_str, now_rfc3339, set_finalizers};
use crate::registry::{self, Scope};
use crate::store::Store;

/// CAPI's Machine finalizer: the Machine stays until its infrastructure is gone.
pub const FINALIZER: &str = "machine.cluster.x-k8s.io";

/// HyperShift's annotation naming a Machine's NodePool as `<namespace>/<name>`.
pub const NODE_POOL_ANNOTATION: &str = "hypershift.openshift.io/nodePool";

/// The field manager of CAPI's writes (controller-runtime defaults to the binary's name).
const MANAGER: &str = "manager";

/// apimachinery's `util/rand` alphabet: no vowels, no look-alikes.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// HyperShift's aggregation bounds (`nodepool_controller.go`).
const MAX_MESSAGE: usize = 1000;
const MAX_GLOBAL_MESSAGE: usize = 3000;
const END_OF_MESSAGE: &str = "... too many similar errors\n";
const END_OF_GLOBAL_MESSAGE: &str = "... message truncated\n";
/// `isSetupCounterCondMessage`: CAPI's step counters say nothing.
const COUNTER_SUFFIX: &str = " completed";

/// Five characters of apimachinery's alphabet from `bytes`.
pub fn suffix_from(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

fn machine_name(machine_set: &str) -> String {
    format!(
        "{machine_set}-{}",
        suffix_from(uuid::Uuid::new_v4().as_bytes())
    )
}

/// The Machines of NodePool `np_key` (`<namespace>/<name>`) in `namespace`, oldest first.
pub fn machines_of(store: &Store, namespace: &str, np_key: &str) -> Vec<Value> {
    let (mut list, _) = store.list(MACHINES, Some(namespace));
    list.retain(|m| {
        m.pointer("/metadata/annotations")
            .and_then(|a| a.get(NODE_POOL_ANNOTATION))
            .and_then(Value::as_str)
            == Some(np_key)
    });
    list.sort_by(|a, b| {
        let key = |m: &Value| {
            (
                meta_str(m, "creationTimestamp")
                    .unwrap_or_default()
                    .to_owned(),
                meta_str(m, "name").unwrap_or_default().to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    list
}

/// What a new Machine of a NodePool looks like.
pub struct NewMachine<'a> {
    pub namespace: &'a str,
    pub np_key: &'a str,
    pub np_name: &'a str,
    pub machine_set: &'a str,
    /// The CAPI cluster: the infra id.
    pub cluster: &'a str,
    /// CAPI's `machine-template-hash` of the MachineSet.
    pub template_hash: u32,
    /// The release version HyperShift puts in the template (`spec.version` and the
    /// `hypershift.openshift.io/release-version` annotation).
    pub version: &'a str,
    /// `spec.platform.type` of the NodePool.
    pub platform: &'a str,
    pub in_place: &'a InPlace,
}

/// HyperShift's label prefix for node labels it manages (`labelManagedPrefix`).
const LABEL_MANAGED_PREFIX: &str = "managed.hypershift.openshift.io";
/// The label HyperShift puts on AWS and Azure Machines for the global pull secret
/// DaemonSet (`globalPSNodeLabel`).
const GLOBAL_PS_LABEL: &str = "hypershift.openshift.io/nodepool-globalps-enabled";
/// The annotation holding the NodePool's taints as JSON (`nodePoolAnnotationTaints`).
pub const TAINTS_ANNOTATION: &str = "hypershift.openshift.io/nodePoolTaints";
/// `NodePoolReleaseVersionAnnotation`, from the MachineDeployment template.
pub const RELEASE_VERSION_ANNOTATION: &str = "hypershift.openshift.io/release-version";
/// The label of a Machine's MachineSet template (`MachineTemplateHashLabel`).
pub const TEMPLATE_HASH_LABEL: &str = "machine-template-hash";
/// The label naming a Machine's MachineSet.
pub const SET_NAME_LABEL: &str = "cluster.x-k8s.io/set-name";

/// The labels HyperShift puts on every Machine of a NodePool
/// (`propagateLabelsAndTaintsToMachines`): its node labels under the managed prefix, and
/// the global pull secret's on AWS and Azure.
fn managed_labels(platform: &str, in_place: &InPlace) -> Vec<(String, String)> {
    let mut labels: Vec<(String, String)> = in_place
        .labels
        .iter()
        .map(|(k, v)| (format!("{LABEL_MANAGED_PREFIX}.{k}"), v.clone()))
        .collect();
    if matches!(platform, "AWS" | "Azure") {
        labels.push((
            format!("{LABEL_MANAGED_PREFIX}.{GLOBAL_PS_LABEL}"),
            "true".into(),
        ));
    }
    labels
}

/// Creates one Machine, as a MachineSet scaling up does.
pub fn create(store: &Store, new: &NewMachine<'_>) -> Result<String, String> {
    let name = machine_name(new.machine_set);
    let mut spec = json!({
        "clusterName": new.cluster,
        "bootstrap": {"dataSecretName": format!("user-data-{}", new.np_name)},
        "infrastructureRef": {
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "name": name,
            "namespace": new.namespace,
        },
        "version": new.version,
    });
    set_timeouts(&mut spec, new.in_place);
    let mut labels = json!({
        "cluster.x-k8s.io/cluster-name": new.cluster,
        "cluster.x-k8s.io/deployment-name": new.np_name,
        SET_NAME_LABEL: new.machine_set,
        TEMPLATE_HASH_LABEL: new.template_hash.to_string(),
    });
    for (k, v) in managed_labels(new.platform, new.in_place) {
        labels[k] = json!(v);
    }
    let machine = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": new.namespace,
            "labels": labels,
            "annotations": {
                NODE_POOL_ANNOTATION: new.np_key,
                RELEASE_VERSION_ANNOTATION: new.version,
                TAINTS_ANNOTATION: new.in_place.taints,
            },
            "finalizers": [FINALIZER],
        },
        "spec": spec,
    });
    registry::prepare_create(MACHINES, new.namespace, machine, MANAGER)
        .and_then(|m| store.create(MACHINES, new.namespace, m, false))
        .map(|_| name)
        .map_err(|e| e.to_string())
}

/// `nodeDrainTimeout` and `nodeVolumeDetachTimeout` of a Machine's spec.
fn set_timeouts(spec: &mut Value, in_place: &InPlace) {
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    for (field, value) in [
        ("nodeDrainTimeout", &in_place.node_drain_timeout),
        (
            "nodeVolumeDetachTimeout",
            &in_place.node_volume_detach_timeout,
        ),
    ] {
        match value {
            Some(v) => map.insert(field.to_owned(), json!(v)),
            None => map.remove(field),
        };
    }
}

/// Writes what changes in place on an existing Machine: the managed labels and taints
/// annotation HyperShift patches (labels are added or updated, never removed), and the
/// drain and detach timeouts CAPI propagates from the MachineDeployment's template.
pub fn propagate(store: &Store, machine: &Value, platform: &str, in_place: &InPlace) {
    let mut next = machine.clone();
    for (k, v) in managed_labels(platform, in_place) {
        next["metadata"]["labels"][k] = json!(v);
    }
    next["metadata"]["annotations"][TAINTS_ANNOTATION] = json!(in_place.taints);
    set_timeouts(&mut next["spec"], in_place);
    if next == *machine {
        return;
    }
    let (ns, name) = ns_name(machine);
    let written = store.update(MACHINES, ns, name, false, |cur| {
        let mut desired = cur.clone();
        desired["metadata"]["labels"] = next["metadata"]["labels"].clone();
        desired["metadata"]["annotations"] = next["metadata"]["annotations"].clone();
        desired["spec"] = next["spec"].clone();
        registry::prepare_update(MACHINES, cur, desired, Scope::Main, MANAGER)
    });
    if let Err(e) = written {
        tracing::debug!(error = %e, machine = name, "machine not updated in place");
    }
}

/// Marks a Machine deleted (its finalizer keeps it until its VM is gone).
pub fn delete(store: &Store, machine: &Value) {
    let (ns, name) = ns_name(machine);
    if let Err(e) = store.delete(MACHINES, ns, name, false) {
        tracing::debug!(error = %e, machine = name, "machine not deleted");
    }
}

/// Lets a deleted Machine go: its infrastructure is gone.
pub fn release(store: &Store, machine: &Value) {
    let (ns, name) = ns_name(machine);
    let released = store.update(MACHINES, ns, name, false, |cur| {
        let mut next = cur.clone();
        let fins = finalizers(&next)
            .into_iter()
            .filter(|f| f != FINALIZER)
            .collect();
        set_finalizers(&mut next, fins);
        registry::prepare_update(MACHINES, cur, next, Scope::Main, MANAGER)
    });
    if let Err(e) = released {
        tracing::debug!(error = %e, machine = name, "machine finalizer not removed");
    }
}

fn ns_name(obj: &Value) -> (&str, &str) {
    (
        meta_str(obj, "namespace").unwrap_or_default(),
        meta_str(obj, "name").unwrap_or_default(),
    )
}

/// A v1beta1 condition: `severity` only when not `True`.
struct Cond<'a> {
    type_: &'a str,
    ok: bool,
    severity: &'a str,
    reason: &'a str,
    message: &'a str,
}

fn condition(previous: Option<&Value>, c: &Cond<'_>) -> Value {
    let status = if c.ok { "True" } else { "False" };
    let was = previous
        .and_then(|p| p.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|o| o["type"] == c.type_));
    let transition = match was {
        Some(o) if o["status"] == status => o["lastTransitionTime"].clone(),
        _ => json!(now_rfc3339()),
    };
    let mut out = json!({"type": c.type_, "status": status, "lastTransitionTime": transition});
    if !c.ok {
        out["severity"] = json!(c.severity);
        out["reason"] = json!(c.reason);
        if !c.message.is_empty() {
            out["message"] = json!(c.message);
        }
    }
    out
}

/// A Machine's node is ready this long after its VM runs.
pub struct NodeTiming {
    pub ready_after: Duration,
    pub now: Instant,
}

/// Writes the Machine's `spec.providerID` and status from the CAPZ report; answers when it
/// should be looked at again (its node's readiness).
pub fn observe(
    store: &Store,
    machine: &Value,
    report: Option<&Report>,
    timing: &NodeTiming,
) -> Option<Instant> {
    let deleting = is_deleting(machine);
    let mut wake = None;
    // (infrastructure ready?, severity, reason, message) of the AzureMachine's `Ready`.
    let (infra_ok, severity, reason, message): (bool, &str, &str, String) = match report {
        None | Some(Report::Requeued(_)) | Some(Report::Invalid(_)) => {
            (false, "Info", "WaitingForInfrastructure", String::new())
        }
        Some(Report::Creating { service }) => (
            false,
            "Info",
            "Creating",
            format!("{service} creating or updating"),
        ),
        Some(Report::CreateFailed(f)) | Some(Report::DeleteFailed(f)) => {
            (false, "Error", f.reason, f.message.clone())
        }
        Some(Report::Provisioned { .. }) => (true, "", "", String::new()),
        Some(Report::Deleting) | Some(Report::Deleted) => (
            false,
            "Info",
            "Deleting",
            "virtualmachine deleting".to_owned(),
        ),
    };
    let provisioned = match report {
        Some(Report::Provisioned { vm, at }) => Some((vm, *at)),
        _ => None,
    };
    let node_ready = provisioned.is_some_and(|(_, at)| {
        let due = at + timing.ready_after;
        if timing.now < due {
            wake = Some(due);
        }
        timing.now >= due
    }) && !deleting;

    if let Some((vm, _)) = provisioned
        && !vm.provider_id.is_empty()
        && machine.pointer("/spec/providerID").and_then(Value::as_str) != Some(&vm.provider_id)
    {
        let (ns, name) = ns_name(machine);
        let provider_id = vm.provider_id.clone();
        let written = store.update(MACHINES, ns, name, false, |cur| {
            let mut next = cur.clone();
            next["spec"]["providerID"] = json!(provider_id);
            registry::prepare_update(MACHINES, cur, next, Scope::Main, MANAGER)
        });
        if let Err(e) = written {
            tracing::debug!(error = %e, machine = name, "providerID not written");
        }
        return wake; // the write wakes the operator again; status follows on that pass
    }

    let infra = Cond {
        type_: "InfrastructureReady",
        ok: infra_ok,
        severity,
        reason,
        message: &message,
    };
    let node = Cond {
        type_: "NodeHealthy",
        ok: node_ready,
        severity: "Info",
        reason: if deleting {
            "Deleting"
        } else {
            "WaitingForNodeRef"
        },
        message: "",
    };
    // Machine `Ready` summarises the others; the first false one by severity decides.
    let ready = if !infra_ok {
        Cond {
            type_: "Ready",
            ..infra
        }
    } else if !node_ready {
        Cond {
            type_: "Ready",
            ..node
        }
    } else {
        Cond {
            type_: "Ready",
            ok: true,
            severity: "",
            reason: "",
            message: "",
        }
    };
    let bootstrap = Cond {
        type_: "BootstrapReady",
        ok: true,
        severity: "",
        reason: "",
        message: "",
    };
    let conditions: Vec<Value> = [&ready, &bootstrap, &infra, &node]
        .iter()
        .map(|c| condition(Some(machine), c))
        .collect();
    let phase = if deleting {
        "Deleting"
    } else if node_ready {
        "Running"
    } else if infra_ok {
        "Provisioned"
    } else {
        "Provisioning"
    };
    let mut status = json!({
        "bootstrapReady": true,
        "infrastructureReady": infra_ok,
        "phase": phase,
        "conditions": conditions,
        "observedGeneration": machine.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
    });
    if let Some(Report::Invalid(f)) = report {
        status["failureReason"] = json!(f.reason);
        status["failureMessage"] = json!(infrastructure_failure(machine, &f.message));
    }
    if let Some((vm, _)) = provisioned {
        let name = meta_str(machine, "name").unwrap_or_default();
        let mut addresses = vec![json!({"type": "Hostname", "address": name})];
        if let Some(ip) = &vm.address {
            addresses.push(json!({"type": "InternalIP", "address": ip}));
        }
        status["addresses"] = json!(addresses);
        if node_ready {
            status["nodeRef"] = json!({"apiVersion": "v1", "kind": "Node", "name": name});
        }
    }
    if machine.get("status") != Some(&status) {
        let (ns, name) = ns_name(machine);
        let rv = meta_str(machine, "resourceVersion")
            .unwrap_or_default()
            .to_owned();
        let mut desired = machine.clone();
        desired["status"] = status;
        desired["metadata"]["resourceVersion"] = json!(rv);
        let written = store.update(MACHINES, ns, name, false, |cur| {
            registry::prepare_update(MACHINES, cur, desired, Scope::Status, MANAGER)
        });
        if let Err(e) = written {
            tracing::debug!(error = %e, machine = name, "machine status not written");
        }
    }
    wake
}

/// CAPI's `failureMessage` for an infrastructure machine's: Go's `GroupVersionKind` string and
/// the AzureMachine's name (the Machine's) before CAPZ's words.
fn infrastructure_failure(machine: &Value, message: &str) -> String {
    let infra = machine.pointer("/spec/infrastructureRef");
    let field = |k: &str| infra.and_then(|r| r.get(k)).and_then(Value::as_str);
    let api_version = field("apiVersion").unwrap_or("infrastructure.cluster.x-k8s.io/v1beta1");
    let kind = field("kind").unwrap_or("AzureMachine");
    let name = field("name")
        .or_else(|| meta_str(machine, "name"))
        .unwrap_or_default();
    format!(
        "Failure detected from referenced resource {api_version}, Kind={kind} with name \"{name}\": \
         {message}"
    )
}

/// A condition of a Machine as HyperShift reads it.
fn machine_condition<'a>(machine: &'a Value, type_: &str) -> Option<&'a Value> {
    machine
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == type_)
}

fn text<'a>(c: &'a Value, field: &str) -> &'a str {
    c.get(field).and_then(Value::as_str).unwrap_or("")
}

fn is_counter(message: &str) -> bool {
    // `\d+ of \d+ completed`
    message.ends_with(COUNTER_SUFFIX) && message.contains(" of ")
}

/// `aggregateMachineMessages`: messages of one reason, cut before 1000 characters.
fn aggregate_messages(messages: &mut [String]) -> String {
    messages.sort();
    let mut out = String::new();
    for m in messages.iter() {
        if out.len() + m.len() > MAX_MESSAGE {
            out.push_str(END_OF_MESSAGE);
            break;
        }
        out.push_str(m);
    }
    out
}

/// `aggregateMachineReasonsAndMessages`: reasons sorted and joined with commas, then the
/// count line and each reason's block within 3000 characters.
fn aggregate(
    mut by_reason: BTreeMap<String, Vec<String>>,
    machines: usize,
    not_ok: usize,
    state: &str,
) -> (String, String) {
    let mut message = format!("{not_ok} of {machines} machines are not {state}\n");
    let reasons: Vec<String> = by_reason.keys().cloned().collect();
    for reason in &reasons {
        let block = aggregate_messages(
            by_reason
                .get_mut(reason)
                .map(Vec::as_mut_slice)
                .unwrap_or_default(),
        );
        if message.len() + block.len() + END_OF_GLOBAL_MESSAGE.len() > MAX_GLOBAL_MESSAGE {
            message.push_str(END_OF_GLOBAL_MESSAGE);
            break;
        }
        message.push_str(&block);
    }
    (reasons.join(","), message)
}

/// A NodePool condition: (`True`?, reason, message).
pub type PoolCondition = (bool, String, String);

/// `setAllMachinesReadyCondition`; `no_replicas` is `spec.replicas: 0` (not an autoscaled
/// pool at zero, which HyperShift reports as having no Machines).
pub fn all_machines_ready(machines: &[Value], no_replicas: bool) -> PoolCondition {
    if machines.is_empty() {
        return if no_replicas {
            (
                true,
                "AsExpected".into(),
                "NodePool set to no replicas".into(),
            )
        } else {
            (false, "NotFound".into(), "No Machines are created".into())
        };
    }
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut not_ready = 0;
    for m in machines {
        let name = meta_str(m, "name").unwrap_or_default();
        let ready = machine_condition(m, "Ready");
        let Some(ready) = ready else {
            not_ready += 1;
            by_reason
                .entry("WaitingForInfrastructure".into())
                .or_default()
                .push(format!("Machine {name}: WaitingForInfrastructure\n"));
            continue;
        };
        if text(ready, "status") == "True" {
            continue;
        }
        not_ready += 1;
        let infra = machine_condition(m, "InfrastructureReady");
        let (reason, line) = match infra {
            Some(i) if text(i, "status") != "True" && !is_counter(text(i, "message")) => (
                text(i, "reason"),
                format!(
                    "Machine {name}: {}: {}\n",
                    text(i, "reason"),
                    text(i, "message")
                ),
            ),
            _ => {
                let message = text(ready, "message");
                let line = if !message.is_empty() && !is_counter(message) {
                    format!("Machine {name}: {}: {message}\n", text(ready, "reason"))
                } else {
                    format!("Machine {name}: {}\n", text(ready, "reason"))
                };
                (text(ready, "reason"), line)
            }
        };
        by_reason.entry(reason.to_owned()).or_default().push(line);
    }
    if not_ready == 0 {
        return (true, "AsExpected".into(), "All is well".into());
    }
    let (reason, message) = aggregate(by_reason, machines.len(), not_ready, "ready");
    (false, reason, message)
}

/// `setAllNodesHealthyCondition`.
pub fn all_nodes_healthy(machines: &[Value], no_replicas: bool) -> PoolCondition {
    if machines.is_empty() {
        return if no_replicas {
            (
                true,
                "AsExpected".into(),
                "NodePool set to no replicas".into(),
            )
        } else {
            (false, "NotFound".into(), "No Machines are created".into())
        };
    }
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut unhealthy = 0;
    for m in machines {
        let name = meta_str(m, "name").unwrap_or_default();
        match machine_condition(m, "NodeHealthy") {
            Some(c) if text(c, "status") == "True" => {}
            Some(c) => {
                unhealthy += 1;
                let (reason, message) = (text(c, "reason"), text(c, "message"));
                let line = if message.is_empty() {
                    format!("Machine {name}: {reason}\n")
                } else {
                    format!("Machine {name}: {reason}: {message}\n")
                };
                by_reason.entry(reason.to_owned()).or_default().push(line);
            }
            None => {
                unhealthy += 1;
                by_reason
                    .entry("WaitingForNodeRef".into())
                    .or_default()
                    .push(format!("Machine {name}: WaitingForNodeRef\n"));
            }
        }
    }
    if unhealthy == 0 {
        return (true, "AsExpected".into(), "All is well".into());
    }
    let (reason, message) = aggregate(by_reason, machines.len(), unhealthy, "healthy");
    (false, reason, message)
}

/// Machines whose node has joined: the MachineDeployment's available replicas.
pub fn available(machines: &[Value]) -> i64 {
    let n = machines
        .iter()
        .filter(|m| !is_deleting(m))
        .filter(|m| {
            machine_condition(m, "NodeHealthy").is_some_and(|c| text(c, "status") == "True")
        })
        .count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(name: &str, conditions: Value) -> Value {
        json!({"metadata": {"name": name}, "status": {"conditions": conditions}})
    }

    #[test]
    fn names_are_capis() {
        let ms = format!("demo-workers-{}", suffix_from(b"uid-1"));
        let suffix = ms.strip_prefix("demo-workers-").expect("prefix");
        assert_eq!(suffix.len(), 5);
        assert!(suffix.bytes().all(|b| ALPHABET.contains(&b)), "{suffix}");
        let m = machine_name(&ms);
        assert_eq!(m.len(), ms.len() + 6);
        assert_ne!(machine_name(&ms), machine_name(&ms));
    }

    #[test]
    fn a_long_refusal_is_dropped_from_the_node_pool_as_hypershift_drops_it() {
        let long = "x".repeat(1200);
        let failing = machine(
            "w-1",
            json!([
                {"type": "Ready", "status": "False", "reason": "Failed", "message": long},
                {"type": "InfrastructureReady", "status": "False", "reason": "Failed", "message": long},
            ]),
        );
        let waiting = machine(
            "w-2",
            json!([
                {"type": "Ready", "status": "False", "reason": "WaitingForNodeRef"},
                {"type": "InfrastructureReady", "status": "True"},
            ]),
        );
        let (ok, reason, message) = all_machines_ready(&[failing, waiting], false);
        assert!(!ok);
        assert_eq!(reason, "Failed,WaitingForNodeRef");
        assert_eq!(
            message,
            "2 of 2 machines are not ready\n... too many similar errors\nMachine w-2: WaitingForNodeRef\n"
        );
    }

    #[test]
    fn a_short_message_is_kept_and_all_ready_is_all_is_well() {
        let creating = machine(
            "w-1",
            json!([
                {"type": "Ready", "status": "False", "reason": "Creating", "message": "interfaces creating or updating"},
                {"type": "InfrastructureReady", "status": "False", "reason": "Creating", "message": "interfaces creating or updating"},
            ]),
        );
        let (_, reason, message) = all_machines_ready(std::slice::from_ref(&creating), false);
        assert_eq!(reason, "Creating");
        assert_eq!(
            message,
            "1 of 1 machines are not ready\nMachine w-1: Creating: interfaces creating or updating\n"
        );
        let ready = machine("w-1", json!([{"type": "Ready", "status": "True"}]));
        assert_eq!(
            all_machines_ready(&[ready], false),
            (true, "AsExpected".into(), "All is well".into())
        );
        assert_eq!(
            all_machines_ready(&[], false),
            (false, "NotFound".into(), "No Machines are created".into())
        );
    }
}
