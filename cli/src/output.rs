//! What the CLI prints: human tables and progress by default; `-o json` and `-o yaml` (the
//! same document), `-o wide` (tables with more columns), `-o name` (`cluster/<name>`, one per
//! line, as kubectl prints them) for the commands that show clusters, node pools, operations
//! and tenants.

pub mod addon;
pub mod dead_letter;
pub mod management;
pub mod nodepool;
pub mod rollout;
pub mod sweep;
pub mod tenant;
pub mod tree;

pub use addon::{addon_json, addon_name, addon_text, addons_table};
pub use nodepool::{nodepool_json, nodepool_name, nodepool_text, nodepools_table};
pub use rollout::{rollout_json, rollout_name, rollout_text, rollouts_table};
pub use tenant::{tenant_json, tenant_name, tenant_text, tenants_table};
pub use tree::{TreeView, operation_tree};

// One JSON shape for the CLI and the web view: the API crate's.
pub use hypersaga_api::json::{op_kind, op_state, phase, step_state};

use std::collections::BTreeMap;

use hypersaga_api::json::{enum_name, time};
use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

/// Output of commands that print no clusters or operations (audit, tokens, emulators, benches).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables and progress lines for people.
    #[default]
    Text,
    /// One JSON document (or one per line for streams), for scripts.
    Json,
}

/// Output of the commands that show clusters and operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Tables, details and progress lines for people.
    #[default]
    Text,
    /// One JSON document (one per line while watching), for scripts.
    Json,
    /// The JSON document as YAML (`---` between documents while watching).
    Yaml,
    /// Tables with more columns (location, node pools, the current operation, times).
    Wide,
    /// `cluster/<name>`, `nodepool/<name>`, `addon/<name>`, `operation/<id>`, `rollout/<id>`,
    /// `tenant/<id>` or `dead-letter/<sequence>`, one per line, for `xargs` and loops.
    Name,
}

impl Output {
    /// `-o json|yaml`: the document, as `value` holds it.
    pub fn document(self, value: &Value) -> anyhow::Result<Option<String>> {
        Ok(match self {
            Output::Json => Some(format!("{}\n", serde_json::to_string_pretty(value)?)),
            Output::Yaml => Some(serde_norway::to_string(value)?),
            _ => None,
        })
    }
}

/// A table as kubectl prints one: upper-case headers (unless `--no-headers`), columns as wide
/// as their widest cell, three spaces apart, the last one unpadded.
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: Vec<&'static str>) -> Self {
        Self {
            headers,
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self, headers: bool) -> String {
        let header_row: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        let shown: Vec<&Vec<String>> = headers
            .then_some(&header_row)
            .into_iter()
            .chain(&self.rows)
            .collect();
        let mut widths = vec![0; self.headers.len()];
        for row in &shown {
            for (w, cell) in widths.iter_mut().zip(row.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in shown {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    let pad = widths[i] - cell.chars().count() + 3;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The kind, with the node pool or the add-on the operation acts on: `update_node_pool
/// gpu`, `add_addon logging`.
pub fn op_kind_and_pool(op: &pb::Operation) -> String {
    match (op.node_pool.as_str(), op.addon.as_str()) {
        ("", "") => op_kind(op.kind),
        ("", addon) => format!("{} {addon}", op_kind(op.kind)),
        (pool, _) => format!("{} {pool}", op_kind(op.kind)),
    }
}

/// Whether an operation changes a living cluster (an upgrade, a node pool's creation, change
/// or deletion, an add-on added, moved to another version or removed), rather than creating
/// or deleting the cluster.
pub fn is_day2(op: &pb::Operation) -> bool {
    use pb::OperationKind as K;
    match K::try_from(op.kind) {
        Ok(
            K::UpdateCluster
            | K::CreateNodePool
            | K::UpdateNodePool
            | K::DeleteNodePool
            | K::AddAddon
            | K::UpdateAddon
            | K::RemoveAddon,
        ) => true,
        Ok(K::Create | K::Delete | K::Sweep | K::Unspecified) | Err(_) => false,
    }
}

/// What a day-2 operation does, for people: its subject, the noun of the change, and what the
/// subject is once it succeeded (`None` for creates and deletes of the cluster).
struct Change {
    subject: String,
    noun: &'static str,
    done: &'static str,
}

fn change(op: &pb::Operation, cluster: &str) -> Option<Change> {
    use pb::OperationKind as K;
    let pool = |noun, done| Change {
        subject: format!("Node pool {} of cluster {cluster}", op.node_pool),
        noun,
        done,
    };
    let addon = |noun, done| Change {
        subject: format!("Add-on {} of cluster {cluster}", op.addon),
        noun,
        done,
    };
    match K::try_from(op.kind).ok()? {
        K::UpdateCluster => Some(Change {
            subject: format!("The control plane of cluster {cluster}"),
            noun: "upgrade",
            done: "upgraded",
        }),
        K::CreateNodePool => Some(pool("creation", "created")),
        K::UpdateNodePool => Some(pool("update", "updated")),
        K::DeleteNodePool => Some(pool("deletion", "deleted")),
        K::AddAddon => Some(addon("addition", "added")),
        K::UpdateAddon => Some(addon("update", "updated")),
        K::RemoveAddon => Some(addon("removal", "removed")),
        K::Create | K::Delete | K::Sweep | K::Unspecified => None,
    }
}

/// What a running day-2 operation is doing, for a watch line: `update of node pool gpu`,
/// `addition of add-on logging`.
fn change_phrase(op: &pb::Operation) -> Option<String> {
    let c = change(op, "")?;
    Some(match (op.node_pool.as_str(), op.addon.as_str()) {
        ("", "") => format!("{} of the control plane", c.noun),
        ("", addon) => format!("{} of add-on {addon}", c.noun),
        (pool, _) => format!("{} of node pool {pool}", c.noun),
    })
}

/// A timestamp for people: RFC 3339, or `?` when absent or out of range.
fn time_text(t: &Option<prost_types::Timestamp>) -> String {
    match time(t) {
        Value::String(s) => s,
        _ => "?".to_owned(),
    }
}

fn error_json(e: &Option<pb::ErrorDetail>) -> Value {
    hypersaga_api::json::error(e)
}

/// An operation with every step (the document `operation get -o json` prints).
pub fn operation_json(o: &pb::Operation) -> Value {
    hypersaga_api::json::operation(o)
}

/// A dry run's plan, for scripts: every step with its changes, and the findings.
pub fn plan_json(p: &pb::Plan) -> Value {
    json!({
        "infra_id": p.infra_id,
        "management_cluster": p.management_cluster,
        "steps": p.steps.iter().map(|s| json!({
            "step": s.step,
            "service": s.service,
            "depends_on": s.depends_on,
            "changes": s.changes.iter().map(|c| json!({
                "target": c.target,
                "verb": c.verb,
                "type": c.r#type,
                "name": c.name,
                "id": c.id,
                "api_version": c.api_version,
                "location": c.location,
                "note": c.note,
            })).collect::<Vec<_>>(),
            "not_planned": error_json(&s.not_planned),
        })).collect::<Vec<_>>(),
        "findings": p.findings.iter().map(|f| json!({
            "field": f.field,
            "kind": f.kind,
            "message": f.message,
            "remedy": f.remedy,
            "step": f.step,
        })).collect::<Vec<_>>(),
    })
}

/// A dry run's plan, for people: the steps in order, each change on its own line, then what
/// stands in the way.
pub fn plan_text(p: &pb::Plan) -> String {
    let mut out = format!(
        "Plan (nothing was made): infra id {} (a create picks its own), management cluster {}\n",
        p.infra_id, p.management_cluster
    );
    for s in &p.steps {
        let after = if s.depends_on.is_empty() {
            String::new()
        } else {
            format!("  (after {})", s.depends_on.join(", "))
        };
        out.push_str(&format!("\n{}{after}\n", s.step));
        if let Some(e) = &s.not_planned {
            out.push_str(&format!("  not planned: {}: {}\n", e.code, e.message));
        }
        for c in &s.changes {
            let at = if c.location.is_empty() {
                String::new()
            } else {
                format!(" in {}", c.location)
            };
            let api = if c.api_version.is_empty() {
                String::new()
            } else {
                format!(" @{}", c.api_version)
            };
            out.push_str(&format!(
                "  {:<7} {} {}{at}{api}\n",
                c.verb, c.r#type, c.name
            ));
            if !c.id.is_empty() && c.id != c.name {
                out.push_str(&format!("          {}\n", c.id));
            }
            if !c.note.is_empty() {
                out.push_str(&format!("          ({})\n", c.note));
            }
        }
    }
    if p.findings.is_empty() {
        out.push_str("\nPreflight: nothing in the way.\n");
    } else {
        out.push_str(&format!(
            "\nPreflight: {} problem(s); a create would be refused:\n",
            p.findings.len()
        ));
        for f in &p.findings {
            out.push_str(&format!("  - {}: {} [{}]\n", f.field, f.message, f.kind));
            if !f.remedy.is_empty() {
                out.push_str(&format!("    {}\n", f.remedy));
            }
        }
    }
    out
}

pub fn cluster_json(c: &pb::Cluster) -> Value {
    let spec = c.spec.clone().unwrap_or_default();
    let net = spec.network.clone().unwrap_or_default();
    let status = c.status.clone().unwrap_or_default();
    let resources: BTreeMap<String, String> = status.resources.into_iter().collect();
    let labels: BTreeMap<&String, &String> = c.labels.iter().collect();
    json!({
        "name": c.name,
        "uid": c.uid,
        "etag": c.etag,
        "create_time": time(&c.create_time),
        "labels": labels,
        "spec": {
            "location": spec.location,
            "base_domain": spec.base_domain,
            "release_image": spec.release_image,
            "node_pools": spec.node_pools.iter().map(nodepool::nodepool_spec_json).collect::<Vec<_>>(),
            "network": {"vnet_cidr": net.vnet_cidr, "subnet_cidr": net.subnet_cidr, "vnet_id": net.vnet_id, "subnet_id": net.subnet_id, "nsg_id": net.nsg_id},
            "addons": addon::cluster_addons_json(&spec.addons),
        },
        "status": {
            "phase": phase(status.phase),
            "message": status.message,
            "infra_id": status.infra_id,
            "management_cluster": status.management_cluster,
            "resources": resources,
            "error": error_json(&status.error),
            "operation": status.operation.as_ref().map(operation_json).unwrap_or(Value::Null),
            "control_plane": nodepool::control_plane_json(&status.control_plane),
            "node_pools": status.node_pools.iter().map(nodepool_json).collect::<Vec<_>>(),
        },
    })
}

/// A table of clusters; `wide` adds where, how big, the current operation and when.
pub fn clusters_table(clusters: &[pb::Cluster], wide: bool) -> Table {
    let mut headers = vec!["NAME", "PHASE", "INFRA ID"];
    if wide {
        headers.extend(["LOCATION", "NODE POOLS", "OPERATION", "CREATED"]);
    }
    headers.push("MESSAGE");
    let mut table = Table::new(headers);
    for c in clusters {
        let s = c.status.clone().unwrap_or_default();
        let mut row = vec![c.name.clone(), phase(s.phase), s.infra_id.clone()];
        if wide {
            let spec = c.spec.clone().unwrap_or_default();
            let pools: Vec<String> = spec
                .node_pools
                .iter()
                .map(|p| format!("{}={}×{}", p.name, pool_size(p), p.vm_size))
                .collect();
            let op = s
                .operation
                .as_ref()
                .map(|o| format!("{} {} {}", o.id, op_kind_and_pool(o), op_state(o.state)))
                .unwrap_or_default();
            row.extend([
                spec.location.clone(),
                pools.join(","),
                op,
                time_text(&c.create_time),
            ]);
        }
        row.push(s.message.clone());
        table.row(row);
    }
    table
}

/// `cluster/<name>`, as kubectl names what it printed.
pub fn cluster_name(name: &str) -> String {
    format!("cluster/{name}")
}

/// `operation/<id>`.
pub fn operation_name(id: &str) -> String {
    format!("operation/{id}")
}

/// A human view of one cluster: phase, operation, every step, what exists.
pub fn cluster_text(c: &pb::Cluster) -> String {
    let s = c.status.clone().unwrap_or_default();
    let spec = c.spec.clone().unwrap_or_default();
    let mut out = String::new();
    out.push_str(&format!("Cluster:   {}  ({})\n", c.name, c.uid));
    out.push_str(&format!("Phase:     {}  — {}\n", phase(s.phase), s.message));
    out.push_str(&format!(
        "Location:  {}   Base domain: {}   Infra ID: {}\n",
        spec.location, spec.base_domain, s.infra_id
    ));
    out.push_str(&format!(
        "Labels:    {}\n",
        if c.labels.is_empty() {
            "<none>".to_owned()
        } else {
            nodepool::labels_text(&c.labels)
        }
    ));
    if let Some(e) = &s.error {
        out.push_str(&format!(
            "Error:     {} at step {}: {}{}\n",
            e.code,
            e.step,
            e.message,
            if e.target.is_empty() {
                String::new()
            } else {
                format!(" (target {})", e.target)
            }
        ));
    }
    out.push_str(&nodepool::cluster_versions_text(c));
    out.push_str(&addon::cluster_addons_text(&spec.addons));
    if let Some(op) = &s.operation {
        out.push_str(&operation_text(op));
    }
    if !s.resources.is_empty() {
        out.push_str("Resources:\n");
        let r: BTreeMap<_, _> = s.resources.iter().collect();
        for (k, v) in r {
            out.push_str(&format!("  {k:<22} {v}\n"));
        }
    }
    out
}

pub fn operation_text(op: &pb::Operation) -> String {
    let mut out = format!(
        "Operation: {} ({}) {}\n",
        op.id,
        op_kind_and_pool(op),
        op_state(op.state)
    );
    if let Some(p) = &op.pause {
        out.push_str(&format!("  {}\n", pause_text(p)));
        out.push_str(&format!("  paused steps: {}\n", p.steps.join(", ")));
        // What an operator may do next; compensation applies to what is undone on failure
        // (a cluster's or a node pool's creation, an add-on's addition) only.
        let mut next = vec![
            format!("resume {}", op.id),
            format!("retry-step {} STEP", op.id),
        ];
        if compensable(op.kind) {
            next.push(format!("compensate {}", op.id));
        }
        next.push(format!("abandon {}", op.id));
        out.push_str(&format!(
            "  waiting for an operator: hypersaga operation {}\n",
            next.join(" | ")
        ));
    }
    out.push_str(&format!(
        "  {:<30} {:<13} {:>8}  {}\n",
        "STEP", "STATE", "ATTEMPTS", "DETAIL"
    ));
    for st in &op.steps {
        let detail = match (&st.last_error, st.message.is_empty()) {
            // Waiting on something outside (an ARM operation, the HostedCluster): since when
            // tells a slow wait from a stuck one.
            _ if st.waiting_since.is_some() => {
                format!(
                    "waiting since {}: {}",
                    time_text(&st.waiting_since),
                    st.message
                )
            }
            (Some(e), _) if !step_finished(st.state) => {
                format!("{}: {}", e.code, e.message)
            }
            (_, false) => st.message.clone(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {:<30} {:<13} {:>8}  {}\n",
            st.id,
            step_state(st.state),
            st.attempts,
            detail
        ));
    }
    out
}

/// Whether an operator may turn a paused operation of `kind` around (`operation
/// compensate`): the kinds whose failure undoes what they made.
fn compensable(kind: i32) -> bool {
    use pb::OperationKind as K;
    match K::try_from(kind) {
        Ok(K::Create | K::CreateNodePool | K::AddAddon) => true,
        Ok(
            K::Delete
            | K::UpdateCluster
            | K::UpdateNodePool
            | K::DeleteNodePool
            | K::UpdateAddon
            | K::RemoveAddon
            | K::Sweep
            | K::Unspecified,
        )
        | Err(_) => false,
    }
}

/// `paused since <time>: <step>: <code>: <message>`.
pub fn pause_text(p: &pb::PauseDetail) -> String {
    let reason = p.reason.clone().unwrap_or_default();
    let step = if reason.step.is_empty() {
        p.steps.join(", ")
    } else {
        reason.step
    };
    format!(
        "paused since {}: {step}: {}: {}",
        time_text(&p.since),
        reason.code,
        reason.message
    )
}

/// A table of operations; DETAIL says why one is paused or failed; `wide` adds when it
/// ended, its steps done, its request id and the node pool it acts on.
pub fn operations_table(ops: &[pb::Operation], wide: bool) -> Table {
    let mut headers = vec!["ID", "CLUSTER", "KIND", "STATE", "STARTED"];
    if wide {
        headers.extend(["ENDED", "STEPS", "REQUEST ID", "NODE POOL", "ADD-ON"]);
    }
    headers.push("DETAIL");
    let mut table = Table::new(headers);
    for o in ops {
        let detail = match (&o.pause, &o.error) {
            (Some(p), _) => {
                let r = p.reason.clone().unwrap_or_default();
                format!("{}: {}: {}", p.steps.join(", "), r.code, r.message)
            }
            (None, Some(e)) => format!("{}: {}", e.code, e.message),
            (None, None) => String::new(),
        };
        let mut row = vec![
            o.id.clone(),
            o.cluster.clone(),
            op_kind(o.kind),
            op_state(o.state),
            time_text(&o.start_time),
        ];
        if wide {
            let (done, total) = steps_done(o);
            let ended = if o.end_time.is_some() {
                time_text(&o.end_time)
            } else {
                String::new()
            };
            row.extend([
                ended,
                format!("{done}/{total}"),
                o.request_id.clone(),
                o.node_pool.clone(),
                o.addon.clone(),
            ]);
        }
        row.push(detail);
        table.row(row);
    }
    table
}

/// Whether a step is finished in a way that needs nothing more: done, undone, kept by
/// design (the tenant's issuer, the rollout wait, a network the user brought) or never
/// needed (skipped). A succeeded delete has all its steps in one of these.
pub fn step_finished(state: i32) -> bool {
    matches!(
        pb::StepState::try_from(state),
        Ok(pb::StepState::Succeeded
            | pb::StepState::Compensated
            | pb::StepState::Kept
            | pb::StepState::Skipped)
    )
}

/// `(finished, total)` steps of an operation (see [`step_finished`]).
pub fn steps_done(op: &pb::Operation) -> (usize, usize) {
    let done = op.steps.iter().filter(|s| step_finished(s.state)).count();
    (done, op.steps.len())
}

/// The last line of `--wait` and `watch`: how the operation ended.
pub fn outcome(c: &pb::Cluster) -> String {
    let s = c.status.clone().unwrap_or_default();
    let steps = s.operation.as_ref().map(|op| {
        let (done, total) = steps_done(op);
        let took = match (&op.start_time, &op.end_time) {
            (Some(a), Some(b)) => format!(" in {}", duration_text(b.seconds - a.seconds)),
            _ => String::new(),
        };
        format!("{done}/{total} steps done{took}")
    });
    let steps = steps.unwrap_or_else(|| "no operation".to_owned());
    if let Some(op) = &s.operation
        && let Some(ch) = change(op, &c.name)
    {
        let why = op
            .error
            .as_ref()
            .or(s.error.as_ref())
            .map(|e| format!(": {}: {}: {}", e.step, e.code, e.message))
            .unwrap_or_default();
        let cluster_is = format!("cluster {} is {}", c.name, phase(s.phase));
        return match op_state(op.state).as_str() {
            "succeeded" => {
                let version = s
                    .control_plane
                    .as_ref()
                    .map(|cp| cp.version.as_str())
                    .unwrap_or_default();
                let to =
                    if op.kind == pb::OperationKind::UpdateCluster as i32 && !version.is_empty() {
                        format!(" to {version}")
                    } else if op.kind == pb::OperationKind::UpdateAddon as i32 {
                        // The version the cluster's spec carries once the move succeeded.
                        c.spec
                            .as_ref()
                            .and_then(|s| s.addons.iter().find(|a| a.name == op.addon))
                            .map(|a| format!(" to {}", a.version))
                            .unwrap_or_default()
                    } else {
                        String::new()
                    };
                format!("{} is {}{to} ({steps}).", ch.subject, ch.done)
            }
            "failed" => format!(
                "{}: {} failed{why} ({steps}); {cluster_is}.",
                ch.subject, ch.noun
            ),
            other => format!(
                "{}: {} is {other} ({steps}); {cluster_is}.",
                ch.subject, ch.noun
            ),
        };
    }
    match phase(s.phase).as_str() {
        "failed" => {
            let why = s
                .error
                .as_ref()
                .map(|e| format!(": {}: {}: {}", e.step, e.code, e.message))
                .unwrap_or_default();
            format!("Cluster {} failed{why} ({steps}).", c.name)
        }
        other => format!("Cluster {} is {other} ({steps}).", c.name),
    }
}

/// `1h02m03s`, `2m05s`, `42s`.
fn duration_text(secs: i64) -> String {
    let secs = secs.max(0);
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// Whether a phase is where an operation ends.
fn terminal_phase(p: i32) -> bool {
    matches!(phase(p).as_str(), "ready" | "deleted" | "failed")
}

/// What was last shown of a step.
#[derive(Clone, PartialEq, Eq)]
struct Shown {
    state: i32,
    attempts: u32,
    message: String,
}

/// Remembers what was shown, to print only what changed while watching.
#[derive(Default)]
pub struct Progress {
    seen: BTreeMap<String, Shown>,
    phase: i32,
    /// Whether the operation was paused at the last snapshot.
    paused: bool,
    started: Option<std::time::Instant>,
}

impl Progress {
    /// Lines describing what changed since the last snapshot: each step as it is now (an
    /// error only while it is what the step is about: a failed step's, or the one a new
    /// attempt follows), and the cluster's phase; an end (ready, deleted, failed) comes after
    /// the steps that led to it.
    pub fn changes(&mut self, c: &pb::Cluster) -> Vec<String> {
        let started = *self.started.get_or_insert_with(std::time::Instant::now);
        let stamp = {
            let e = started.elapsed().as_secs();
            format!("[{:02}:{:02}]", e / 60, e % 60)
        };
        let s = c.status.clone().unwrap_or_default();
        let first = self.seen.is_empty();
        let phase_line = (s.phase != self.phase).then(|| {
            self.phase = s.phase;
            // A change of a living cluster says what changes: `is updating: update of node
            // pool gpu (operation op-…)`.
            let doing = s
                .operation
                .as_ref()
                .filter(|_| !terminal_phase(s.phase))
                .and_then(|op| Some(format!(": {} (operation {})", change_phrase(op)?, op.id)))
                .unwrap_or_default();
            format!("{stamp} cluster {} is {}{doing}", c.name, phase(s.phase))
        });
        let mut lines = Vec::new();
        if let Some(line) = phase_line.as_ref().filter(|_| !terminal_phase(s.phase)) {
            lines.push(line.clone());
        }
        lines.extend(self.pause_lines(&s, &stamp));
        for st in s.operation.iter().flat_map(|o| o.steps.iter()) {
            let now = Shown {
                state: st.state,
                attempts: st.attempts,
                message: st.message.clone(),
            };
            let before = self.seen.insert(st.id.clone(), now.clone());
            if before.as_ref() == Some(&now) {
                continue;
            }
            // The first snapshot lists only what has started.
            if first && step_state(st.state) == "pending" {
                continue;
            }
            lines.push(format!("{stamp}   {}", step_line(st, before.as_ref())));
        }
        if let Some(line) = phase_line.filter(|_| terminal_phase(s.phase)) {
            lines.push(line);
        }
        lines
    }

    /// A pause does not change the phase, and the watch goes on through it: say so, and
    /// what unsticks it, rather than look hung.
    fn pause_lines(&mut self, s: &pb::ClusterStatus, stamp: &str) -> Vec<String> {
        let pause = s
            .operation
            .as_ref()
            .and_then(|o| o.pause.as_ref().map(|p| (o, p)));
        match (pause, self.paused) {
            (Some((op, p)), false) => {
                self.paused = true;
                vec![
                    format!("{stamp} operation {} {}", op.id, pause_text(p)),
                    format!("{stamp} waiting for an operator: see `hypersaga operation --help`"),
                ]
            }
            (None, true) => {
                self.paused = false;
                let state = s.operation.as_ref().map(|o| op_state(o.state));
                vec![format!(
                    "{stamp} operation is {}",
                    state.as_deref().unwrap_or("no longer paused")
                )]
            }
            _ => Vec::new(),
        }
    }
}

/// One step as it is now. Its last error is shown while it is the step's present: a failed
/// step's, or the one the attempt just started follows (once, on that attempt's first line);
/// an error a later attempt got past is not repeated.
fn step_line(st: &pb::Step, before: Option<&Shown>) -> String {
    let state = step_state(st.state);
    let mut line = format!("{:<30} {state}", st.id);
    let new_attempt = before.is_none_or(|b| b.attempts != st.attempts || b.state != st.state);
    let error = st
        .last_error
        .as_ref()
        .map(|e| format!("{}: {}", e.code, e.message));
    // A deadline's error quotes the step's last message: said once.
    let mut message_said = false;
    match (state.as_str(), error) {
        ("failed", Some(e)) => {
            if st.attempts > 1 {
                line.push_str(&format!(" (attempt {})", st.attempts));
            }
            message_said = e.contains(&st.message);
            line.push_str(&format!(" — {e}"));
        }
        ("running" | "compensating", Some(e)) if st.attempts > 1 && new_attempt => {
            line.push_str(&format!(" (attempt {}, after {e})", st.attempts));
        }
        _ if st.attempts > 1 && matches!(state.as_str(), "running" | "compensating") => {
            line.push_str(&format!(" (attempt {})", st.attempts));
        }
        _ => {}
    }
    if !st.message.is_empty() && !message_said {
        line.push_str(&format!(" — {}", st.message));
    }
    line
}

/// Renders a gRPC error for people, with every field violation on its own line.
pub fn status_text(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    let mut out = format!("{:?}: {}", status.code(), status.message());
    if let Some(bad) = status.get_details_bad_request() {
        out = format!("{:?}: the request is invalid:", status.code());
        for v in bad.field_violations {
            out.push_str(&format!("\n  - {}: {}", v.field, v.description));
        }
    }
    if let Some(failed) = status.get_details_precondition_failure() {
        for v in failed.violations {
            out.push_str(&format!(
                "\n  - {}: {} [{}]",
                v.subject, v.description, v.r#type
            ));
        }
    }
    // The machine-readable reason (e.g. `OperationNotPaused`), for scripts that grep stderr.
    if let Some(info) = status.get_details_error_info() {
        out.push_str(&format!(" [{}]", info.reason));
        // One change at a time per cluster: name the one in the way, and how to see it.
        if info.reason == "OperationRunning"
            && let Some(op) = info.metadata.get("operation")
        {
            let kind = info
                .metadata
                .get("kind")
                .map(|k| format!(" ({k})"))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n  running: operation {op}{kind}; see it with `hypersaga operation get {op}`, and try again once it has ended"
            ));
        }
    }
    out
}

/// A pool's size as a table shows it: its count, or its autoscaler's bounds (`2..4`).
pub fn pool_size(p: &pb::NodePoolSpec) -> String {
    match (&p.autoscaling, p.replicas) {
        (Some(a), _) => format!("{}..{}", a.min, a.max),
        (None, n) => n.unwrap_or_default().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    fn paused_create() -> pb::Operation {
        pb::Operation {
            id: "op-1".into(),
            cluster: "demo".into(),
            kind: pb::OperationKind::Create as i32,
            state: pb::OperationState::Paused as i32,
            pause: Some(pb::PauseDetail {
                since: ts(1_800_000_000),
                reason: Some(pb::ErrorDetail {
                    code: "LeaseExpired".into(),
                    message: "no word from the dns service".into(),
                    step: "dns.private-zone".into(),
                    ..Default::default()
                }),
                steps: vec!["dns.private-zone".into()],
            }),
            steps: vec![pb::Step {
                id: "controlplane.hostedcluster".into(),
                state: pb::StepState::Running as i32,
                attempts: 1,
                message: "HostedCluster not yet Available".into(),
                waiting_since: ts(1_800_000_060),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_paused_operation_says_why_since_when_and_what_an_operator_may_do() {
        let text = operation_text(&paused_create());
        for expected in [
            "Operation: op-1 (create) paused",
            "paused since 2027-01-15T08:00:00Z: dns.private-zone: LeaseExpired: no word from the dns service",
            "paused steps: dns.private-zone",
            "hypersaga operation resume op-1 | retry-step op-1 STEP | compensate op-1 | abandon op-1",
            "waiting since 2027-01-15T08:01:00Z: HostedCluster not yet Available",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        let json = operation_json(&paused_create());
        assert_eq!(json["pause"]["reason"]["code"], "LeaseExpired");
        assert_eq!(json["pause"]["steps"][0], "dns.private-zone");
        assert_eq!(json["steps"][0]["waiting_since"], "2027-01-15T08:01:00Z");
    }

    #[test]
    fn a_watch_says_when_the_operation_pauses_and_when_it_goes_on() {
        let mut cluster = pb::Cluster {
            name: "demo".into(),
            status: Some(pb::ClusterStatus {
                phase: pb::ClusterPhase::Provisioning as i32,
                operation: Some(paused_create()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut progress = Progress::default();
        let lines = progress.changes(&cluster).join("\n");
        assert!(lines.contains("operation op-1 paused since"), "{lines}");
        assert!(
            !progress
                .changes(&cluster)
                .iter()
                .any(|l| l.contains("paused")),
            "said once"
        );
        if let Some(op) = cluster.status.as_mut().and_then(|s| s.operation.as_mut()) {
            op.pause = None;
            op.state = pb::OperationState::Running as i32;
        }
        let lines = progress.changes(&cluster).join("\n");
        assert!(lines.contains("operation is running"), "{lines}");
    }

    fn step(id: &str, state: pb::StepState, attempts: u32, error: Option<&str>) -> pb::Step {
        pb::Step {
            id: id.into(),
            state: state as i32,
            attempts,
            last_error: error.map(|code| pb::ErrorDetail {
                code: code.into(),
                message: "try again".into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn creating(phase: pb::ClusterPhase, steps: Vec<pb::Step>) -> pb::Cluster {
        pb::Cluster {
            name: "demo".into(),
            status: Some(pb::ClusterStatus {
                phase: phase as i32,
                operation: Some(pb::Operation {
                    id: "op-1".into(),
                    kind: pb::OperationKind::Create as i32,
                    state: pb::OperationState::Running as i32,
                    start_time: ts(1_800_000_000),
                    steps,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_watch_shows_an_error_only_while_it_is_the_steps_present() {
        use pb::ClusterPhase::Provisioning;
        use pb::StepState::{Running, Succeeded};
        let lb = "network.load-balancer";
        let mut progress = Progress::default();
        progress.changes(&creating(Provisioning, vec![step(lb, Running, 1, None)]));
        let lines = progress.changes(&creating(
            Provisioning,
            vec![step(lb, Running, 2, Some("ServiceUnavailable"))],
        ));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].ends_with("running (attempt 2, after ServiceUnavailable: try again)"),
            "{lines:?}"
        );
        // Progress within the same attempt: the error it got past is not repeated.
        let mut waiting = step(lb, Running, 2, Some("ServiceUnavailable"));
        waiting.message = "waiting for the ARM operation".into();
        let lines = progress.changes(&creating(Provisioning, vec![waiting]));
        assert!(
            lines[0].ends_with("running (attempt 2) — waiting for the ARM operation"),
            "{lines:?}"
        );
        let lines = progress.changes(&creating(
            Provisioning,
            vec![step(lb, Succeeded, 2, Some("ServiceUnavailable"))],
        ));
        assert!(lines[0].ends_with("succeeded"), "{lines:?}");
    }

    #[test]
    fn the_end_comes_after_the_steps_that_led_to_it_and_the_outcome_counts_every_step() {
        use pb::StepState::{Running, Succeeded};
        let mut progress = Progress::default();
        progress.changes(&creating(
            pb::ClusterPhase::Provisioning,
            vec![step("nodepool.workers", Running, 1, None)],
        ));
        let mut ready = creating(
            pb::ClusterPhase::Ready,
            vec![
                step("nodepool.workers", Succeeded, 1, None),
                step("controlplane.rollout", Succeeded, 1, None),
            ],
        );
        let lines = progress.changes(&ready);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[2].ends_with("cluster demo is ready"), "{lines:?}");
        if let Some(op) = ready.status.as_mut().and_then(|s| s.operation.as_mut()) {
            op.end_time = ts(1_800_000_062);
        }
        assert_eq!(
            outcome(&ready),
            "Cluster demo is ready (2/2 steps done in 1m02s)."
        );
    }

    #[test]
    fn a_succeeded_delete_has_all_its_steps_done() {
        use pb::StepState::{Compensated, Kept, Skipped};
        let delete = pb::Operation {
            kind: pb::OperationKind::Delete as i32,
            state: pb::OperationState::Succeeded as i32,
            steps: vec![
                step("dns.public-zone", Kept, 0, None),
                step("identity.oidc", Kept, 0, None),
                step("network.vnet", Compensated, 1, None),
                step("controlplane.rollout", Kept, 0, None),
                step("nodepool.workers", Skipped, 0, None),
            ],
            ..Default::default()
        };
        assert_eq!(steps_done(&delete), (5, 5));
        let table = operations_table(&[delete], true).render(false);
        assert!(table.contains("5/5"), "{table}");
    }

    fn cluster(name: &str, phase: pb::ClusterPhase, replicas: i32) -> pb::Cluster {
        pb::Cluster {
            name: name.into(),
            create_time: ts(1_800_000_000),
            spec: Some(pb::ClusterSpec {
                location: "westeurope".into(),
                node_pools: vec![pb::NodePoolSpec {
                    name: "workers".into(),
                    replicas: Some(replicas),
                    vm_size: "Standard_D4s_v5".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(pb::ClusterStatus {
                phase: phase as i32,
                infra_id: format!("{name}-x1"),
                message: "all good".into(),
                operation: Some(paused_create()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn cluster_get_shows_the_clusters_labels_in_text_and_json() {
        let mut c = cluster("demo", pb::ClusterPhase::Ready, 2);
        let text = cluster_text(&c);
        assert!(text.contains("\nLabels:    <none>\n"), "{text}");
        assert_eq!(cluster_json(&c)["labels"], json!({}));
        c.labels = [
            ("tier".to_owned(), "gold".to_owned()),
            ("env".to_owned(), "prod".to_owned()),
        ]
        .into();
        let text = cluster_text(&c);
        assert!(text.contains("\nLabels:    env=prod,tier=gold\n"), "{text}");
        let doc = cluster_json(&c);
        assert_eq!(doc["labels"], json!({"env": "prod", "tier": "gold"}));
        let yaml = Output::Yaml.document(&doc).unwrap().unwrap();
        assert!(
            yaml.contains("labels:\n  env: prod\n  tier: gold\n"),
            "{yaml}"
        );
    }

    #[test]
    fn a_table_lines_its_columns_up_and_drops_its_header_on_request() {
        let clusters = [
            cluster("demo", pb::ClusterPhase::Ready, 2),
            cluster("a-much-longer-name", pb::ClusterPhase::Provisioning, 1),
        ];
        let table = clusters_table(&clusters, false);
        let shown = table.render(true);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        assert!(lines[0].starts_with("NAME "), "{shown}");
        let phase_at = lines[0].find("PHASE").unwrap();
        assert_eq!(lines[1].find("ready"), Some(phase_at), "{shown}");
        assert_eq!(lines[2].find("provisioning"), Some(phase_at), "{shown}");
        let bare = table.render(false);
        assert_eq!(bare.lines().count(), 2, "{bare}");
        assert!(bare.starts_with("demo "), "{bare}");
    }

    #[test]
    fn wide_tables_add_where_how_big_and_what_is_going_on() {
        let shown =
            clusters_table(&[cluster("demo", pb::ClusterPhase::Ready, 2)], true).render(true);
        for expected in [
            "LOCATION",
            "NODE POOLS",
            "OPERATION",
            "CREATED",
            "westeurope",
            "workers=2×Standard_D4s_v5",
            "op-1 create paused",
            "2027-01-15T08:00:00Z",
        ] {
            assert!(
                shown.contains(expected),
                "missing {expected:?} in:\n{shown}"
            );
        }
        let ops = operations_table(&[paused_create()], true).render(true);
        for expected in ["ENDED", "STEPS", "REQUEST ID", "0/1", "LeaseExpired"] {
            assert!(ops.contains(expected), "missing {expected:?} in:\n{ops}");
        }
    }

    #[test]
    fn yaml_is_the_json_document_and_names_are_kubectl_style() {
        let value = cluster_json(&cluster("demo", pb::ClusterPhase::Ready, 2));
        let yaml = Output::Yaml.document(&value).unwrap().unwrap();
        let back: Value = serde_norway::from_str(&yaml).unwrap();
        assert_eq!(back, value);
        assert!(yaml.contains("phase: ready"), "{yaml}");
        let json = Output::Json.document(&value).unwrap().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), value);
        assert_eq!(Output::Text.document(&value).unwrap(), None);
        assert_eq!(cluster_name("demo"), "cluster/demo");
        assert_eq!(operation_name("op-1"), "operation/op-1");
    }

    fn day2(kind: pb::OperationKind, pool: &str, state: pb::OperationState) -> pb::Cluster {
        let mut c = cluster("demo", pb::ClusterPhase::Updating, 2);
        if let Some(s) = c.status.as_mut() {
            s.operation = Some(pb::Operation {
                id: "op-2".into(),
                cluster: "demo".into(),
                kind: kind as i32,
                state: state as i32,
                node_pool: pool.into(),
                start_time: ts(1_800_000_000),
                steps: vec![step(
                    &format!("nodepool.{pool}"),
                    pb::StepState::Running,
                    1,
                    None,
                )],
                ..Default::default()
            });
            s.control_plane = Some(pb::ControlPlaneStatus {
                version: "4.22.0".into(),
                history: vec![
                    pb::VersionHistoryEntry {
                        version: "4.22.0".into(),
                        image: "quay.io/openshift-release-dev/ocp-release:4.22.0-multi".into(),
                        state: "Completed".into(),
                        start_time: ts(1_800_000_000),
                        completion_time: ts(1_800_001_200),
                    },
                    pb::VersionHistoryEntry {
                        version: "4.21.0".into(),
                        image: "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into(),
                        state: "Completed".into(),
                        start_time: ts(1_790_000_000),
                        completion_time: ts(1_790_001_500),
                    },
                ],
            });
            s.node_pools = vec![nodepool::tests::pool("workers", "Ready")];
        }
        c
    }

    /// Ends `c`'s operation as `state`, the cluster `phase`, after 95 s, every step in `step`.
    fn ended(mut c: pb::Cluster, state: pb::OperationState, step: pb::StepState) -> pb::Cluster {
        if let Some(s) = c.status.as_mut() {
            s.phase = pb::ClusterPhase::Ready as i32;
            if let Some(op) = s.operation.as_mut() {
                op.state = state as i32;
                op.end_time = ts(1_800_000_095);
                for st in &mut op.steps {
                    st.state = step as i32;
                }
                if state == pb::OperationState::Failed {
                    op.error = Some(pb::ErrorDetail {
                        code: "QuotaExceeded".into(),
                        message: "not enough vCPUs".into(),
                        step: op.steps[0].id.clone(),
                        ..Default::default()
                    });
                }
            }
        }
        c
    }

    #[test]
    fn cluster_get_shows_the_control_planes_history_and_each_pools_desired_ready_and_version() {
        let c = day2(
            pb::OperationKind::UpdateNodePool,
            "workers",
            pb::OperationState::Running,
        );
        let text = cluster_text(&c);
        let lines: Vec<&str> = text.lines().collect();
        let at = |prefix: &str| {
            lines
                .iter()
                .position(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
        };
        let cp = at("Control plane: 4.22.0");
        assert_eq!(
            lines[cp + 1].split_whitespace().collect::<Vec<_>>(),
            ["VERSION", "STATE", "STARTED", "COMPLETED"],
            "{text}"
        );
        assert_eq!(
            lines[cp + 2].split_whitespace().collect::<Vec<_>>(),
            [
                "4.22.0",
                "Completed",
                "2027-01-15T08:00:00Z",
                "2027-01-15T08:20:00Z"
            ],
            "newest first: {text}"
        );
        assert!(lines[cp + 3].trim_start().starts_with("4.21.0"), "{text}");
        let pools = at("Node pools:");
        assert_eq!(
            lines[pools + 1].split_whitespace().collect::<Vec<_>>(),
            [
                "NAME", "STATE", "DESIRED", "READY", "SIZE", "VM", "SIZE", "VERSION"
            ],
            "{text}"
        );
        assert_eq!(
            lines[pools + 2].split_whitespace().collect::<Vec<_>>(),
            [
                "workers",
                "Ready",
                "3",
                "2",
                "3",
                "Standard_D8s_v5",
                "4.21.0"
            ],
            "{text}"
        );
        assert!(
            text.contains("Operation: op-2 (update_node_pool workers) running"),
            "{text}"
        );

        let doc = cluster_json(&c);
        let status = &doc["status"];
        assert_eq!(status["phase"], "updating");
        assert_eq!(status["control_plane"]["version"], "4.22.0");
        assert_eq!(status["control_plane"]["history"][1]["version"], "4.21.0");
        assert_eq!(
            status["control_plane"]["history"][0]["completion_time"],
            "2027-01-15T08:20:00Z"
        );
        assert_eq!(status["node_pools"][0]["name"], "workers");
        assert_eq!(status["node_pools"][0]["status"]["desired_replicas"], 3);
        assert_eq!(status["node_pools"][0]["status"]["ready_replicas"], 2);
        assert_eq!(status["node_pools"][0]["status"]["version"], "4.21.0");
        assert_eq!(status["operation"]["kind"], "update_node_pool");
        assert_eq!(status["operation"]["node_pool"], "workers");
        assert_eq!(doc["spec"]["node_pools"][0]["vm_size"], "Standard_D4s_v5");
        assert_eq!(doc["spec"]["node_pools"][0]["replicas"], 2);
        let yaml = Output::Yaml.document(&doc).unwrap().unwrap();
        assert_eq!(serde_norway::from_str::<Value>(&yaml).unwrap(), doc);
    }

    #[test]
    fn a_cluster_without_pools_in_its_status_shows_its_specs() {
        let c = cluster("demo", pb::ClusterPhase::Ready, 2);
        let text = cluster_text(&c);
        assert!(text.contains("Control plane: not rolled out yet"), "{text}");
        assert!(text.contains("workers"), "{text}");
    }

    #[test]
    fn day2_kinds_and_the_updating_phase_read_as_words_everywhere() {
        use pb::OperationKind as K;
        for (kind, name) in [
            (K::UpdateCluster, "update_cluster"),
            (K::CreateNodePool, "create_node_pool"),
            (K::UpdateNodePool, "update_node_pool"),
            (K::DeleteNodePool, "delete_node_pool"),
        ] {
            assert_eq!(op_kind(kind as i32), name);
        }
        assert_eq!(phase(pb::ClusterPhase::Updating as i32), "updating");
        let c = day2(K::CreateNodePool, "gpu", pb::OperationState::Running);
        let op = c.status.as_ref().and_then(|s| s.operation.clone()).unwrap();
        let table = clusters_table(std::slice::from_ref(&c), true).render(false);
        assert!(
            table.contains("op-2 create_node_pool gpu running"),
            "{table}"
        );
        assert!(table.contains("updating"), "{table}");
        let ops = operations_table(std::slice::from_ref(&op), true).render(true);
        assert!(ops.contains("NODE POOL"), "{ops}");
        let row = ops.lines().nth(1).unwrap_or_default();
        assert!(
            row.contains(" create_node_pool ") && row.contains(" gpu"),
            "{ops}"
        );
        assert_eq!(operation_json(&op)["kind"], "create_node_pool");
        // A paused pool creation can be compensated, like a cluster's.
        let mut paused = op.clone();
        paused.state = pb::OperationState::Paused as i32;
        paused.pause = paused_create().pause;
        assert!(operation_text(&paused).contains("compensate op-2"));

        let mut progress = Progress::default();
        let lines = progress.changes(&c);
        assert!(
            lines[0]
                .ends_with("cluster demo is updating: creation of node pool gpu (operation op-2)"),
            "{lines:?}"
        );
        let lines = progress.changes(&ended(
            c,
            pb::OperationState::Succeeded,
            pb::StepState::Succeeded,
        ));
        assert!(
            lines[0].ends_with("nodepool.gpu                   succeeded"),
            "{lines:?}"
        );
        assert!(lines[1].ends_with("cluster demo is ready"), "{lines:?}");
        let up = day2(K::UpdateCluster, "", pb::OperationState::Running);
        let lines = Progress::default().changes(&up);
        assert!(
            lines[0].ends_with("is updating: upgrade of the control plane (operation op-2)"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_day2_outcome_says_what_changed_and_that_a_failure_leaves_the_cluster_ready() {
        use pb::OperationKind as K;
        use pb::OperationState::{Failed, Succeeded};
        use pb::StepState;
        let done = |kind, pool| {
            outcome(&ended(
                day2(kind, pool, pb::OperationState::Running),
                Succeeded,
                StepState::Succeeded,
            ))
        };
        assert_eq!(
            done(K::CreateNodePool, "gpu"),
            "Node pool gpu of cluster demo is created (1/1 steps done in 1m35s)."
        );
        assert_eq!(
            done(K::UpdateNodePool, "gpu"),
            "Node pool gpu of cluster demo is updated (1/1 steps done in 1m35s)."
        );
        assert_eq!(
            done(K::DeleteNodePool, "gpu"),
            "Node pool gpu of cluster demo is deleted (1/1 steps done in 1m35s)."
        );
        assert_eq!(
            done(K::UpdateCluster, ""),
            "The control plane of cluster demo is upgraded to 4.22.0 (1/1 steps done in 1m35s)."
        );
        let failed = outcome(&ended(
            day2(K::UpdateNodePool, "gpu", pb::OperationState::Running),
            Failed,
            StepState::Failed,
        ));
        assert_eq!(
            failed,
            "Node pool gpu of cluster demo: update failed: nodepool.gpu: QuotaExceeded: not enough vCPUs (0/1 steps done in 1m35s); cluster demo is ready."
        );
        // A cluster's own create keeps its words.
        let mut ready = creating(
            pb::ClusterPhase::Ready,
            vec![step("network.vnet", StepState::Succeeded, 1, None)],
        );
        if let Some(op) = ready.status.as_mut().and_then(|s| s.operation.as_mut()) {
            op.end_time = ts(1_800_000_010);
        }
        assert_eq!(
            outcome(&ready),
            "Cluster demo is ready (1/1 steps done in 10s)."
        );
    }

    /// `demo` running an add-on operation on `logging`, carrying it at 1.5.0.
    fn addon_change(kind: pb::OperationKind, state: pb::OperationState) -> pb::Cluster {
        let mut c = day2(kind, "", state);
        if let Some(op) = c.status.as_mut().and_then(|s| s.operation.as_mut()) {
            op.addon = "logging".into();
            op.steps = vec![step("addon.logging", pb::StepState::Running, 1, None)];
        }
        if let Some(spec) = c.spec.as_mut() {
            spec.addons = vec![pb::ClusterAddon {
                name: "logging".into(),
                version: "1.5.0".into(),
                scope: pb::AddonScope::Platform as i32,
            }];
        }
        c
    }

    #[test]
    fn add_on_operations_read_as_words_in_tables_watches_and_outcomes() {
        use pb::OperationKind as K;
        use pb::OperationState::{Failed, Running, Succeeded};
        use pb::StepState;
        for (kind, name) in [
            (K::AddAddon, "add_addon"),
            (K::UpdateAddon, "update_addon"),
            (K::RemoveAddon, "remove_addon"),
        ] {
            assert_eq!(op_kind(kind as i32), name);
            let c = addon_change(kind, Running);
            let op = c.status.as_ref().and_then(|s| s.operation.clone()).unwrap();
            assert!(is_day2(&op), "{name}");
            assert_eq!(op_kind_and_pool(&op), format!("{name} logging"));
            assert_eq!(operation_json(&op)["addon"], "logging");
            let row = operations_table(std::slice::from_ref(&op), true).render(true);
            assert!(row.contains("ADD-ON") && row.contains(" logging"), "{row}");
        }
        let lines = Progress::default().changes(&addon_change(K::AddAddon, Running));
        assert!(
            lines[0].ends_with("is updating: addition of add-on logging (operation op-2)"),
            "{lines:?}"
        );
        let lines = Progress::default().changes(&addon_change(K::RemoveAddon, Running));
        assert!(lines[0].contains("removal of add-on logging"), "{lines:?}");

        let done = |kind| {
            outcome(&ended(
                addon_change(kind, Running),
                Succeeded,
                StepState::Succeeded,
            ))
        };
        assert_eq!(
            done(K::AddAddon),
            "Add-on logging of cluster demo is added (1/1 steps done in 1m35s)."
        );
        assert_eq!(
            done(K::UpdateAddon),
            "Add-on logging of cluster demo is updated to 1.5.0 (1/1 steps done in 1m35s)."
        );
        assert_eq!(
            done(K::RemoveAddon),
            "Add-on logging of cluster demo is removed (1/1 steps done in 1m35s)."
        );
        let failed = outcome(&ended(
            addon_change(K::AddAddon, Running),
            Failed,
            StepState::Failed,
        ));
        assert_eq!(
            failed,
            "Add-on logging of cluster demo: addition failed: addon.logging: QuotaExceeded: not enough vCPUs (0/1 steps done in 1m35s); cluster demo is ready."
        );
        // A paused addition can be compensated (the add-on removed again); a removal not.
        let mut paused = paused_create();
        paused.kind = K::AddAddon as i32;
        assert!(operation_text(&paused).contains("compensate op-1"));
        paused.kind = K::RemoveAddon as i32;
        assert!(!operation_text(&paused).contains("compensate"));
    }

    #[test]
    fn cluster_get_shows_the_clusters_add_ons() {
        let c = addon_change(pb::OperationKind::UpdateAddon, pb::OperationState::Running);
        let text = cluster_text(&c);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "Add-ons:")
            .unwrap_or_else(|| panic!("no add-ons in:\n{text}"));
        assert_eq!(
            lines[at + 1].split_whitespace().collect::<Vec<_>>(),
            ["NAME", "VERSION", "SCOPE"]
        );
        assert_eq!(
            lines[at + 2].split_whitespace().collect::<Vec<_>>(),
            ["logging", "1.5.0", "platform"]
        );
        assert!(
            text.contains("Operation: op-2 (update_addon logging) running"),
            "{text}"
        );
        let doc = cluster_json(&c);
        assert_eq!(
            doc["spec"]["addons"],
            json!([{"name": "logging", "version": "1.5.0", "scope": "platform"}])
        );
        let none = cluster_text(&cluster("demo", pb::ClusterPhase::Ready, 2));
        assert!(none.contains("\nAdd-ons:   <none>\n"), "{none}");
    }

    #[test]
    fn a_refusal_names_each_field_and_the_operation_in_the_way() {
        use std::collections::HashMap;
        use tonic_types::{ErrorDetails, StatusExt};
        let busy = tonic::Status::with_error_details(
            tonic::Code::FailedPrecondition,
            "cluster \"demo\" is busy with update_node_pool operation op-9 (Running)",
            ErrorDetails::with_error_info(
                "OperationRunning",
                "hypersaga.io",
                HashMap::from([
                    ("operation".to_owned(), "op-9".to_owned()),
                    ("kind".to_owned(), "update_node_pool".to_owned()),
                ]),
            ),
        );
        let text = status_text(&busy);
        assert!(text.contains("[OperationRunning]"), "{text}");
        assert!(
            text.contains(
                "running: operation op-9 (update_node_pool); see it with `hypersaga operation get op-9`"
            ),
            "{text}"
        );
        let bad = tonic::Status::with_error_details(
            tonic::Code::InvalidArgument,
            "invalid",
            ErrorDetails::with_bad_request(vec![
                tonic_types::FieldViolation::new(
                    "node_pool.spec.release_image",
                    "4.23.0 is newer than the control plane's 4.22.0",
                ),
                tonic_types::FieldViolation::new(
                    "update_mask",
                    "spec.vm_size cannot change once the pool exists: create a new pool instead",
                ),
            ]),
        );
        let text = status_text(&bad);
        assert!(
            text.contains(
                "\n  - node_pool.spec.release_image: 4.23.0 is newer than the control plane's 4.22.0"
            ),
            "{text}"
        );
        assert!(text.contains("\n  - update_mask: spec.vm_size"), "{text}");
    }

    #[test]
    fn a_failed_steps_message_is_not_repeated_when_its_error_quotes_it() {
        let mut st = step(
            "controlplane.rollout",
            pb::StepState::Failed,
            1,
            Some("StepDeadlineExceeded"),
        );
        st.message = "waiting for release 4.22.0".into();
        if let Some(e) = st.last_error.as_mut() {
            e.message = "did not finish within 120 s; last: waiting for release 4.22.0".into();
        }
        let line = step_line(&st, None);
        assert_eq!(
            line.matches("waiting for release 4.22.0").count(),
            1,
            "{line}"
        );
        if let Some(e) = st.last_error.as_mut() {
            e.message = "gone".into();
        }
        let line = step_line(&st, None);
        assert!(
            line.ends_with("StepDeadlineExceeded: gone — waiting for release 4.22.0"),
            "{line}"
        );
    }
}
