//! Node pools and the control plane's version, as the CLI prints them: a table of pools
//! (`nodepool list`, and inside `cluster get`), one pool in detail (`nodepool get`), the
//! control plane's version history, and the JSON documents behind `-o json|yaml`.

use std::collections::BTreeMap;

use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

use super::{Table, error_json, pool_size, time, time_text};

/// `nodepool/<name>`, as kubectl names what it printed (the cluster is the command's).
pub fn nodepool_name(name: &str) -> String {
    format!("nodepool/{name}")
}

/// The upgrade type as `--upgrade-type` spells it; unspecified is Replace (the API's default).
pub fn upgrade_type(t: i32) -> &'static str {
    match pb::UpgradeType::try_from(t) {
        Ok(pb::UpgradeType::InPlace) => "InPlace",
        _ => "Replace",
    }
}

/// Labels by key, as `k=v,k2=v2`.
pub fn labels_text(labels: &std::collections::HashMap<String, String>) -> String {
    let sorted: BTreeMap<_, _> = labels.iter().collect();
    sorted
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A taint as `--taint` takes it: `key=value:Effect`, or `key:Effect` without a value.
pub fn taint_text(t: &pb::Taint) -> String {
    if t.value.is_empty() {
        format!("{}:{}", t.key, t.effect)
    } else {
        format!("{}={}:{}", t.key, t.value, t.effect)
    }
}

fn taints_text(taints: &[pb::Taint]) -> String {
    taints.iter().map(taint_text).collect::<Vec<_>>().join(",")
}

/// A pool's spec as a document: every field, in the API's names.
pub fn nodepool_spec_json(p: &pb::NodePoolSpec) -> Value {
    let disk = p.os_disk.clone().unwrap_or_default();
    let labels: BTreeMap<&String, &String> = p.labels.iter().collect();
    json!({
        "name": p.name,
        "replicas": p.replicas,
        "autoscaling": p.autoscaling.as_ref().map(|a| json!({"min": a.min, "max": a.max})),
        "vm_size": p.vm_size,
        "release_image": p.release_image,
        "os_disk": {"size_gib": disk.size_gib, "storage_account_type": disk.storage_account_type},
        "availability_zone": p.availability_zone,
        "subnet_id": p.subnet_id,
        "labels": labels,
        "taints": p.taints.iter().map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect})).collect::<Vec<_>>(),
        "upgrade_type": upgrade_type(p.upgrade_type),
        "node_drain_timeout_minutes": p.node_drain_timeout_minutes,
    })
}

/// A pool as a document: the API's `NodePool`, with its name at the top for scripts.
pub fn nodepool_json(p: &pb::NodePool) -> Value {
    let spec = p.spec.clone().unwrap_or_default();
    let s = p.status.clone().unwrap_or_default();
    json!({
        "name": spec.name,
        "cluster": p.cluster,
        "etag": p.etag,
        "spec": nodepool_spec_json(&spec),
        "status": {
            "state": s.state,
            "desired_replicas": s.desired_replicas,
            "ready_replicas": s.ready_replicas,
            "version": s.version,
            "message": s.message,
            "operation": s.operation,
            "error": error_json(&s.error),
        },
    })
}

/// The control plane's version and its history, newest first.
pub fn control_plane_json(cp: &Option<pb::ControlPlaneStatus>) -> Value {
    let cp = cp.clone().unwrap_or_default();
    json!({
        "version": cp.version,
        "history": cp.history.iter().map(|h| json!({
            "version": h.version,
            "image": h.image,
            "state": h.state,
            "start_time": time(&h.start_time),
            "completion_time": time(&h.completion_time),
        })).collect::<Vec<_>>(),
    })
}

/// What a pool's row says of its trouble: its error, else its message.
fn pool_message(s: &pb::NodePoolStatus) -> String {
    match &s.error {
        Some(e) => format!("{}: {}", e.code, e.message),
        None => s.message.clone(),
    }
}

/// A table of pools: NAME, STATE, DESIRED, READY, SIZE (the count, or the autoscaler's
/// `min..max`), VM SIZE, VERSION (what every node runs once a rollout completed); `wide` adds
/// the zone, the upgrade type, labels, taints, the pool's operation and its message.
pub fn nodepools_table(pools: &[pb::NodePool], wide: bool) -> Table {
    let mut headers = vec![
        "NAME", "STATE", "DESIRED", "READY", "SIZE", "VM SIZE", "VERSION",
    ];
    if wide {
        headers.extend([
            "ZONE",
            "UPGRADE",
            "LABELS",
            "TAINTS",
            "OPERATION",
            "MESSAGE",
        ]);
    }
    let mut table = Table::new(headers);
    for p in pools {
        let spec = p.spec.clone().unwrap_or_default();
        let s = p.status.clone().unwrap_or_default();
        let mut row = vec![
            spec.name.clone(),
            s.state.clone(),
            s.desired_replicas.to_string(),
            s.ready_replicas.to_string(),
            pool_size(&spec),
            spec.vm_size.clone(),
            s.version.clone(),
        ];
        if wide {
            row.extend([
                spec.availability_zone.clone(),
                upgrade_type(spec.upgrade_type).to_owned(),
                labels_text(&spec.labels),
                taints_text(&spec.taints),
                s.operation.clone(),
                pool_message(&s),
            ]);
        }
        table.row(row);
    }
    table
}

/// `cluster get`'s pools: the status's (with desired, ready and version), or, from a server
/// that sends none, the spec's with an empty status.
pub fn pools_of(c: &pb::Cluster) -> Vec<pb::NodePool> {
    let status = c.status.clone().unwrap_or_default();
    if !status.node_pools.is_empty() {
        return status.node_pools;
    }
    let spec = c.spec.clone().unwrap_or_default();
    spec.node_pools
        .into_iter()
        .map(|p| pb::NodePool {
            cluster: c.name.clone(),
            spec: Some(p),
            ..Default::default()
        })
        .collect()
}

/// `table` indented under a heading of `cluster get`.
fn indented(table: &Table) -> String {
    table
        .render(true)
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect()
}

/// `cluster get`'s control plane and pools.
pub fn cluster_versions_text(c: &pb::Cluster) -> String {
    let s = c.status.clone().unwrap_or_default();
    let spec = c.spec.clone().unwrap_or_default();
    let cp = s.control_plane.unwrap_or_default();
    let version = if cp.version.is_empty() {
        "not rolled out yet".to_owned()
    } else {
        cp.version.clone()
    };
    let mut out = format!(
        "Control plane: {version}  (release {})\n",
        spec.release_image
    );
    if !cp.history.is_empty() {
        let mut t = Table::new(vec!["VERSION", "STATE", "STARTED", "COMPLETED"]);
        for h in &cp.history {
            let completed = if h.completion_time.is_some() {
                time_text(&h.completion_time)
            } else {
                String::new()
            };
            t.row(vec![
                h.version.clone(),
                h.state.clone(),
                time_text(&h.start_time),
                completed,
            ]);
        }
        out.push_str(&indented(&t));
    }
    let pools = pools_of(c);
    if pools.is_empty() {
        out.push_str("Node pools: none\n");
    } else {
        out.push_str("Node pools:\n");
        out.push_str(&indented(&nodepools_table(&pools, false)));
    }
    out
}

/// One pool for people (`nodepool get`).
pub fn nodepool_text(p: &pb::NodePool) -> String {
    let spec = p.spec.clone().unwrap_or_default();
    let s = p.status.clone().unwrap_or_default();
    let disk = spec.os_disk.clone().unwrap_or_default();
    let mut out = format!("Node pool: {}  (cluster {})\n", spec.name, p.cluster);
    let message = pool_message(&s);
    if message.is_empty() {
        out.push_str(&format!("State:     {}\n", s.state));
    } else {
        out.push_str(&format!("State:     {}  — {message}\n", s.state));
    }
    let size = match &spec.autoscaling {
        Some(a) => format!("autoscaling {}..{}", a.min, a.max),
        None => format!("{} replicas", spec.replicas.unwrap_or_default()),
    };
    out.push_str(&format!(
        "Size:      {size}  (desired {}, ready {})\n",
        s.desired_replicas, s.ready_replicas
    ));
    let zone = if spec.availability_zone.is_empty() {
        "any".to_owned()
    } else {
        spec.availability_zone.clone()
    };
    out.push_str(&format!(
        "VM size:   {}   OS disk: {} GiB {}   Zone: {zone}\n",
        spec.vm_size, disk.size_gib, disk.storage_account_type
    ));
    let subnet = if spec.subnet_id.is_empty() {
        "the cluster's"
    } else {
        &spec.subnet_id
    };
    out.push_str(&format!("Subnet:    {subnet}\n"));
    let version = if s.version.is_empty() {
        "not rolled out yet"
    } else {
        &s.version
    };
    out.push_str(&format!(
        "Version:   {version}  (release {})\n",
        spec.release_image
    ));
    let drain = match spec.node_drain_timeout_minutes {
        0 => "none (drains until done)".to_owned(),
        m => format!("{m} min"),
    };
    out.push_str(&format!(
        "Upgrade:   {}   Drain timeout: {drain}\n",
        upgrade_type(spec.upgrade_type)
    ));
    let or_none = |s: String| if s.is_empty() { "none".to_owned() } else { s };
    out.push_str(&format!(
        "Labels:    {}\n",
        or_none(labels_text(&spec.labels))
    ));
    out.push_str(&format!(
        "Taints:    {}\n",
        or_none(taints_text(&spec.taints))
    ));
    if !s.operation.is_empty() {
        out.push_str(&format!("Operation: {}\n", s.operation));
    }
    out.push_str(&format!("Etag:      {}\n", p.etag));
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn pool(name: &str, state: &str) -> pb::NodePool {
        pb::NodePool {
            cluster: "demo".into(),
            spec: Some(pb::NodePoolSpec {
                name: name.into(),
                replicas: Some(3),
                vm_size: "Standard_D8s_v5".into(),
                release_image: "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into(),
                os_disk: Some(pb::OsDisk {
                    size_gib: 128,
                    storage_account_type: "Premium_LRS".into(),
                }),
                availability_zone: "2".into(),
                labels: [("tier".to_owned(), "gpu".to_owned())].into(),
                taints: vec![pb::Taint {
                    key: "gpu".into(),
                    value: "true".into(),
                    effect: "NoSchedule".into(),
                }],
                upgrade_type: pb::UpgradeType::InPlace as i32,
                node_drain_timeout_minutes: 30,
                ..Default::default()
            }),
            status: Some(pb::NodePoolStatus {
                state: state.into(),
                desired_replicas: 3,
                ready_replicas: 2,
                version: "4.21.0".into(),
                operation: "op-7".into(),
                ..Default::default()
            }),
            etag: "\"0123abcd\"".into(),
        }
    }

    fn autoscaled(name: &str) -> pb::NodePool {
        let mut p = pool(name, "Ready");
        if let Some(s) = p.spec.as_mut() {
            s.replicas = None;
            s.autoscaling = Some(pb::Autoscaling { min: 2, max: 5 });
        }
        p
    }

    #[test]
    fn the_pool_table_shows_state_desired_ready_size_vm_size_and_version_in_line() {
        let pools = [pool("workers", "Updating"), autoscaled("gpu-a100")];
        let shown = nodepools_table(&pools, false).render(true);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            [
                "NAME", "STATE", "DESIRED", "READY", "SIZE", "VM", "SIZE", "VERSION"
            ],
            "{shown}"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            [
                "workers",
                "Updating",
                "3",
                "2",
                "3",
                "Standard_D8s_v5",
                "4.21.0"
            ],
            "{shown}"
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            [
                "gpu-a100",
                "Ready",
                "3",
                "2",
                "2..5",
                "Standard_D8s_v5",
                "4.21.0"
            ],
            "{shown}"
        );
        let size_at = lines[0].find("SIZE").unwrap();
        assert_eq!(lines[2].find("2..5"), Some(size_at), "{shown}");
        let wide = nodepools_table(&pools, true).render(false);
        for expected in ["InPlace", "tier=gpu", "gpu=true:NoSchedule", "op-7"] {
            assert!(wide.contains(expected), "missing {expected:?} in:\n{wide}");
        }
    }

    #[test]
    fn one_pool_in_detail_and_as_a_document() {
        let p = pool("workers", "Ready");
        let text = nodepool_text(&p);
        for expected in [
            "Node pool: workers  (cluster demo)",
            "Size:      3 replicas  (desired 3, ready 2)",
            "OS disk: 128 GiB Premium_LRS   Zone: 2",
            "Subnet:    the cluster's",
            "Version:   4.21.0  (release quay.io/openshift-release-dev/ocp-release:4.21.0-multi)",
            "Upgrade:   InPlace   Drain timeout: 30 min",
            "Labels:    tier=gpu",
            "Taints:    gpu=true:NoSchedule",
            "Etag:      \"0123abcd\"",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        let doc = nodepool_json(&p);
        assert_eq!(doc["name"], "workers");
        assert_eq!(doc["spec"]["replicas"], 3);
        assert_eq!(doc["spec"]["autoscaling"], Value::Null);
        assert_eq!(doc["spec"]["labels"]["tier"], "gpu");
        assert_eq!(doc["spec"]["taints"][0]["effect"], "NoSchedule");
        assert_eq!(doc["spec"]["upgrade_type"], "InPlace");
        assert_eq!(doc["status"]["ready_replicas"], 2);
        assert_eq!(doc["etag"], "\"0123abcd\"");
        let doc = nodepool_json(&autoscaled("gpu"));
        assert_eq!(doc["spec"]["replicas"], Value::Null);
        assert_eq!(doc["spec"]["autoscaling"]["max"], 5);
        assert!(nodepool_text(&autoscaled("gpu")).contains("Size:      autoscaling 2..5"));
        assert_eq!(nodepool_name("gpu"), "nodepool/gpu");
    }

    #[test]
    fn a_taint_without_a_value_reads_as_kubectl_writes_it() {
        let t = pb::Taint {
            key: "dedicated".into(),
            value: String::new(),
            effect: "NoExecute".into(),
        };
        assert_eq!(taint_text(&t), "dedicated:NoExecute");
    }
}
