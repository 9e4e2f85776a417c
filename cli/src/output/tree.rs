//! `hypersaga operation watch ID --tree`: an operation's DAG as an indented tree.
//!
//! A DAG is not a tree: each step is drawn under the dependency it waits on last (its
//! deepest one), and any other dependency is named on its line (`also after …`), so every
//! step appears once and every edge is shown.

use std::collections::BTreeMap;

use hypersaga_api::v1 as pb;

use super::{Progress, time_text};
use super::{op_kind_and_pool, op_state, pause_text, step_finished, step_state, steps_done};

/// The operation's header, its pause or error, then every step in a tree.
pub fn operation_tree(op: &pb::Operation) -> String {
    let (done, total) = steps_done(op);
    let mut out = format!(
        "Operation {} ({}) of cluster {}: {}, {done}/{total} steps done, started {}\n",
        op.id,
        op_kind_and_pool(op),
        op.cluster,
        op_state(op.state),
        time_text(&op.start_time)
    );
    if let Some(p) = &op.pause {
        out.push_str(&format!("  {}\n", pause_text(p)));
    } else if let Some(e) = &op.error {
        out.push_str(&format!(
            "  failed at {}: {}: {}\n",
            e.step, e.code, e.message
        ));
    }
    let paused: Vec<&str> = op
        .pause
        .as_ref()
        .map(|p| p.steps.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let layout = Layout::of(&op.steps);
    let width = layout
        .rows
        .iter()
        .map(|(depth, i)| depth * 3 + 3 + op.steps[*i].id.chars().count())
        .max()
        .unwrap_or(0);
    for (depth, i) in &layout.rows {
        let st = &op.steps[*i];
        let branch = format!("{}{}{}", layout.prefix(*i), layout.connector(*i), st.id);
        let pad = width.saturating_sub(depth * 3 + 3 + st.id.chars().count());
        out.push_str(&format!(
            "{branch}{}  {:<12} {}",
            " ".repeat(pad),
            step_state(st.state),
            detail(*i, &layout, &op.steps, paused.contains(&st.id.as_str()))
        ));
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    out
}

/// Where each step goes: its parent (its deepest dependency), the order of the rows and,
/// for each row, its depth in the tree.
struct Layout {
    parent: Vec<Option<usize>>,
    /// (depth in the tree, step index), in the order drawn.
    rows: Vec<(usize, usize)>,
    /// Whether a step is the last child of its parent (or the last root).
    last: Vec<bool>,
}

impl Layout {
    fn of(steps: &[pb::Step]) -> Self {
        let index: BTreeMap<&str, usize> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let mut depth: Vec<Option<usize>> = vec![None; steps.len()];
        fn depth_of(
            i: usize,
            steps: &[pb::Step],
            index: &BTreeMap<&str, usize>,
            depth: &mut [Option<usize>],
            seen: &mut [bool],
        ) -> usize {
            if let Some(d) = depth[i] {
                return d;
            }
            if seen[i] {
                return 0; // a cycle: never in a plan, but never a hang either
            }
            seen[i] = true;
            let d = steps[i]
                .depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()))
                .map(|&j| depth_of(j, steps, index, depth, seen) + 1)
                .max()
                .unwrap_or(0);
            depth[i] = Some(d);
            d
        }
        for i in 0..steps.len() {
            depth_of(i, steps, &index, &mut depth, &mut vec![false; steps.len()]);
        }
        let depth: Vec<usize> = depth.into_iter().map(Option::unwrap_or_default).collect();
        // The deepest dependency; the last listed of equals.
        let parent: Vec<Option<usize>> = steps
            .iter()
            .map(|s| {
                s.depends_on
                    .iter()
                    .filter_map(|d| index.get(d.as_str()).copied())
                    .max_by_key(|&j| (depth[j], j))
            })
            .collect();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); steps.len()];
        let mut roots = Vec::new();
        for (i, p) in parent.iter().enumerate() {
            match p {
                Some(p) => children[*p].push(i),
                None => roots.push(i),
            }
        }
        let mut layout = Self {
            parent,
            rows: Vec::new(),
            last: vec![false; steps.len()],
        };
        fn walk(i: usize, depth: usize, children: &[Vec<usize>], layout: &mut Layout) {
            layout.rows.push((depth, i));
            if let Some(&last) = children[i].last() {
                layout.last[last] = true;
            }
            for &c in &children[i] {
                walk(c, depth + 1, children, layout);
            }
        }
        if let Some(&last) = roots.last() {
            layout.last[last] = true;
        }
        for &r in &roots {
            walk(r, 0, &children, &mut layout);
        }
        layout
    }

    /// `├─ ` or `└─ `.
    fn connector(&self, i: usize) -> &'static str {
        if self.last[i] { "└─ " } else { "├─ " }
    }

    /// The rails of the step's ancestors: `│  ` under an ancestor with siblings below it.
    fn prefix(&self, i: usize) -> String {
        let mut rails = Vec::new();
        let mut at = self.parent[i];
        while let Some(p) = at {
            rails.push(if self.last[p] { "   " } else { "│  " });
            at = self.parent[p];
        }
        rails.reverse();
        rails.concat()
    }
}

/// What a step's line says after its state: attempts, when it started or how long it took,
/// what it waits on, its error while it matters, and whether it waits for an operator.
fn detail(i: usize, layout: &Layout, steps: &[pb::Step], paused: bool) -> String {
    let st = &steps[i];
    let mut parts = Vec::new();
    if paused {
        parts.push("PAUSED".to_owned());
    }
    if st.attempts > 1 {
        parts.push(format!("attempt {}", st.attempts));
    }
    match (&st.start_time, &st.end_time) {
        (Some(a), Some(b)) => parts.push(format!(
            "took {}",
            super::duration_text(b.seconds - a.seconds)
        )),
        (Some(_), None) => parts.push(format!("since {}", clock(&st.start_time))),
        _ => {}
    }
    let open: Vec<&str> = st
        .depends_on
        .iter()
        .filter(|d| steps.iter().any(|s| &s.id == *d && !step_finished(s.state)))
        .map(String::as_str)
        .collect();
    if step_state(st.state) == "pending" && !open.is_empty() {
        parts.push(format!("waits on {}", open.join(", ")));
    }
    if st.waiting_since.is_some() {
        parts.push(format!(
            "waiting since {}: {}",
            clock(&st.waiting_since),
            st.message
        ));
    } else if !st.message.is_empty() {
        parts.push(st.message.clone());
    }
    if let Some(e) = st.last_error.as_ref().filter(|_| !step_finished(st.state)) {
        parts.push(format!("{}: {}", e.code, e.message));
    }
    // The other dependencies: the parent is the line above, these are not.
    let parent = layout.parent[i].map(|p| steps[p].id.as_str());
    let others: Vec<&str> = st
        .depends_on
        .iter()
        .map(String::as_str)
        .filter(|d| Some(*d) != parent)
        .collect();
    if !others.is_empty() {
        parts.push(format!("(also after {})", others.join(", ")));
    }
    parts.join(" · ")
}

/// `10:21:03` (UTC) of an RFC 3339 time, `?` without one.
fn clock(t: &Option<prost_types::Timestamp>) -> String {
    let full = time_text(t);
    full.get(11..19).map(str::to_owned).unwrap_or(full)
}

/// What `operation watch --tree` prints as the operation changes: on a terminal the whole
/// tree again in place of the last; elsewhere the tree once, then a plain line per change
/// (as `cluster watch` prints them), so a log or a pipe reads top to bottom.
pub struct TreeView {
    operation: String,
    terminal: bool,
    shown: Option<String>,
    lines: Progress,
}

impl TreeView {
    pub fn new(operation: &str, terminal: bool) -> Self {
        Self {
            operation: operation.to_owned(),
            terminal,
            shown: None,
            lines: Progress::default(),
        }
    }

    /// What to print for this state of the cluster (nothing when the operation followed is
    /// not the cluster's, or nothing visible changed).
    pub fn change(&mut self, c: &pb::Cluster) -> String {
        let Some(op) = c
            .status
            .as_ref()
            .and_then(|s| s.operation.as_ref())
            .filter(|op| op.id == self.operation)
        else {
            return String::new();
        };
        let lines = self.lines.changes(c);
        if op.steps.is_empty() {
            // Accepted, not yet planned: no DAG to draw.
            return String::new();
        }
        let tree = operation_tree(op);
        if self.shown.as_deref() == Some(tree.as_str()) {
            return String::new();
        }
        let first = self.shown.is_none();
        self.shown = Some(tree.clone());
        if self.terminal {
            // Home, clear the screen, draw: the tree in place of the last one.
            format!("\x1b[H\x1b[2J{tree}")
        } else if first {
            tree
        } else {
            lines.iter().map(|l| format!("{l}\n")).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, state: pb::StepState, deps: &[&str]) -> pb::Step {
        pb::Step {
            id: id.into(),
            service: id.split('.').next().unwrap_or_default().into(),
            state: state as i32,
            depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn each_step_sits_under_its_deepest_dependency_and_names_the_others() {
        use pb::StepState::*;
        let ts = |s| {
            Some(prost_types::Timestamp {
                seconds: s,
                nanos: 0,
            })
        };
        let mut lb = step("network.lb", Running, &["network.rg", "network.ip"]);
        lb.attempts = 3;
        lb.start_time = ts(1_700_000_000);
        lb.last_error = Some(pb::ErrorDetail {
            code: "ServiceUnavailable".into(),
            message: "try later".into(),
            ..Default::default()
        });
        let mut ip = step("network.ip", Succeeded, &["network.rg"]);
        ip.start_time = ts(1_700_000_000);
        ip.end_time = ts(1_700_000_065);
        let op = pb::Operation {
            id: "op-1".into(),
            cluster: "demo".into(),
            kind: pb::OperationKind::Create as i32,
            state: pb::OperationState::Running as i32,
            steps: vec![
                step("network.rg", Succeeded, &[]),
                ip,
                lb,
                step("dns.zone", Pending, &["network.rg", "network.lb"]),
                step("identity.issuer", Succeeded, &[]),
            ],
            ..Default::default()
        };
        let tree = operation_tree(&op);
        let lines: Vec<&str> = tree.lines().collect();
        assert!(
            lines[0]
                .starts_with("Operation op-1 (create) of cluster demo: running, 3/5 steps done"),
            "{tree}"
        );
        assert!(lines[1].starts_with("├─ network.rg "), "{tree}");
        assert!(lines[2].starts_with("│  └─ network.ip "), "{tree}");
        assert!(
            lines[2].contains("succeeded") && lines[2].contains("took 1m05s"),
            "{tree}"
        );
        assert!(lines[3].starts_with("│     └─ network.lb "), "{tree}");
        assert!(
            lines[3].contains("attempt 3 · since 22:13:20 · ServiceUnavailable: try later · (also after network.rg)"),
            "{tree}"
        );
        assert!(lines[4].starts_with("│        └─ dns.zone "), "{tree}");
        assert!(
            lines[4].contains("waits on network.lb · (also after network.rg)"),
            "{tree}"
        );
        assert!(lines[5].starts_with("└─ identity.issuer "), "{tree}");
        // States line up in one column.
        let column = |l: &str| {
            l.find("succeeded")
                .or_else(|| l.find("running"))
                .or_else(|| l.find("pending"))
        };
        assert_eq!(column(lines[1]), column(lines[5]), "{tree}");
    }

    #[test]
    fn off_a_terminal_the_tree_is_printed_once_then_a_line_per_change() {
        let mut op = pb::Operation {
            id: "op-1".into(),
            state: pb::OperationState::Running as i32,
            steps: vec![step("network.rg", pb::StepState::Running, &[])],
            ..Default::default()
        };
        let cluster = |op: &pb::Operation| pb::Cluster {
            name: "demo".into(),
            status: Some(pb::ClusterStatus {
                phase: pb::ClusterPhase::Provisioning as i32,
                operation: Some(op.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut view = TreeView::new("op-1", false);
        let planned = std::mem::take(&mut op.steps);
        assert_eq!(
            view.change(&cluster(&op)),
            "",
            "nothing to draw before the plan"
        );
        op.steps = planned;
        let first = view.change(&cluster(&op));
        assert!(first.contains("└─ network.rg"), "{first}");
        assert_eq!(view.change(&cluster(&op)), "", "nothing changed");
        op.steps[0].state = pb::StepState::Succeeded as i32;
        let next = view.change(&cluster(&op));
        assert!(!next.contains("└─"), "a line, not the tree again: {next}");
        assert!(
            next.contains("network.rg") && next.contains("succeeded"),
            "{next}"
        );
        let mut other = op.clone();
        other.id = "op-2".into();
        assert_eq!(
            view.change(&cluster(&other)),
            "",
            "another operation is not drawn"
        );
        let mut on_terminal = TreeView::new("op-1", true);
        assert!(
            on_terminal
                .change(&cluster(&op))
                .starts_with("\x1b[H\x1b[2JOperation op-1")
        );
    }
}
