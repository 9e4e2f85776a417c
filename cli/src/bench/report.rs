//! What every bench prints: percentiles, budget bounds, ratios beside their targets, aligned
//! tables for people and one JSON document for scripts. Nothing here judges a number: the
//! targets are printed beside the figures, never asserted.

use serde::Serialize;

use crate::output::Format;

/// The `q`-quantile (0 ≤ q ≤ 1) of an ascending slice, nearest rank; `None` when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !q.is_finite() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Count, p50, p99, mean and max of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub mean: Option<f64>,
    pub max: Option<f64>,
}

impl Summary {
    pub fn of(mut values: Vec<f64>) -> Self {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let n = values.len();
        Self {
            n,
            p50: percentile(&values, 0.50),
            p99: percentile(&values, 0.99),
            mean: (n > 0).then(|| values.iter().sum::<f64>() / n as f64),
            max: values.last().copied(),
        }
    }
}

/// Seconds a token bucket of `burst` tokens refilled at `per_sec` needs to admit `requests`
/// requests that all arrive at once: whatever exceeds the burst waits for the refill.
pub fn budget_bound(requests: u64, burst: f64, per_sec: f64) -> Option<f64> {
    if !(per_sec.is_finite() && per_sec > 0.0 && burst.is_finite()) {
        return None;
    }
    Some(((requests as f64) - burst).max(0.0) / per_sec)
}

/// `a / b` when both are known and `b` is not zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 && a.is_finite() && b.is_finite() => Some(a / b),
        _ => None,
    }
}

/// A number for a table cell: `-` when unknown.
pub fn num(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "-".to_owned(),
    }
}

/// A share as a percentage cell: `1.25 %`.
pub fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{:.2} %", v * 100.0),
        _ => "-".to_owned(),
    }
}

/// A plain text table: a header row and left-aligned text columns, numbers right-aligned.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        Self {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    pub fn render(&self) -> String {
        let cols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len()])
            .max()
            .unwrap_or(0);
        let cell = |row: &Vec<String>, i: usize| row.get(i).cloned().unwrap_or_default();
        let mut widths = vec![0usize; cols];
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            for (i, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(cell(row, i).chars().count());
            }
        }
        // A column is numeric when every body cell looks like a number (or is unknown).
        let numeric: Vec<bool> = (0..cols)
            .map(|i| !self.rows.is_empty() && self.rows.iter().all(|r| looks_numeric(&cell(r, i))))
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in widths.iter().enumerate() {
                let c = cell(row, i);
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = w.saturating_sub(c.chars().count());
                if numeric[i] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(&c);
                } else {
                    line.push_str(&c);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A number, maybe with a unit (`12.5 %`, `0.8 ms`, `3 s`, `1.2×`), or `-` for unknown.
fn looks_numeric(c: &str) -> bool {
    let bare = [" %", " ms", " s", "×"]
        .iter()
        .find_map(|u| c.strip_suffix(u))
        .unwrap_or(c);
    c == "-" || bare.parse::<f64>().is_ok()
}

/// One figure the issue sets a target for, with the target beside it (not judged).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Target {
    /// What is measured, e.g. `engine / raw sagas/s @64`.
    pub name: String,
    pub value: Option<f64>,
    /// `ratio`, `ms`, `s`, `share` or `count`.
    pub unit: &'static str,
    /// The target as the issue words it, e.g. `>= 0.50`.
    pub goal: String,
}

impl Target {
    pub fn new(
        name: impl Into<String>,
        value: Option<f64>,
        unit: &'static str,
        goal: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            value,
            unit,
            goal: goal.into(),
        }
    }
}

/// The targets as a table: what, value, target.
pub fn targets_table(targets: &[Target]) -> String {
    let mut t = Table::new(["FIGURE", "VALUE", "TARGET"]);
    for target in targets {
        let value = match target.unit {
            "share" => pct(target.value),
            "ms" => format!("{} ms", num(target.value, 3)),
            "s" => format!("{} s", num(target.value, 1)),
            "count" => num(target.value, 0),
            _ => format!("{}×", num(target.value, 2)),
        };
        t.row([target.name.clone(), value, target.goal.clone()]);
    }
    t.render()
}

/// The targets as a table, then each note on a line of its own: how every bench's text ends.
pub fn targets_and_notes(targets: &[Target], notes: &[String]) -> String {
    let mut out = targets_table(targets);
    for n in notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Prints a report: `text` for people, the serialized `report` with `-o json`.
pub fn emit<T: Serialize>(
    format: Format,
    report: &T,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    match format {
        Format::Json => crate::outln!("{}", serde_json::to_string_pretty(report)?)?,
        Format::Text => crate::out!("{}", text())?,
    }
    Ok(())
}

/// Progress for people, on stderr so `-o json` stays one clean document on stdout.
pub fn progress(msg: impl AsRef<str>) {
    crate::errln!("[bench] {}", msg.as_ref());
}

/// Resident memory of a process in bytes (`VmRSS` of `/proc/<pid>/status`), `None` when
/// unreadable (another OS, a process that exited).
pub fn rss_bytes(pid: Option<u32>) -> Option<u64> {
    parse_vm_rss(&proc_file(pid, "status")?)
}

/// CPU time a process has used so far, user and system, all its threads (`/proc/<pid>/stat`),
/// in seconds; `None` when unreadable.
pub fn cpu_secs(pid: Option<u32>) -> Option<f64> {
    let ticks = parse_cpu_ticks(&proc_file(pid, "stat")?)?;
    let per_sec = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    Some(ticks as f64 / per_sec as f64)
}

/// `/proc/<pid>/<name>` (this process's without a pid), `None` when unreadable.
fn proc_file(pid: Option<u32>, name: &str) -> Option<String> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/{name}"),
        None => format!("/proc/self/{name}"),
    };
    std::fs::read_to_string(path).ok()
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in clock ticks. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted from its closing one.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let mut after_name = stat.rsplit_once(')')?.1.split_whitespace();
    // Field 3 (state) comes first; utime and stime are fields 14 and 15.
    let utime: u64 = after_name.nth(11)?.parse().ok()?;
    let stime: u64 = after_name.next()?.parse().ok()?;
    Some(utime + stime)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime cutime ...
        let stat = "4242 (nats server (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 567 0 0 20";
        assert_eq!(parse_cpu_ticks(stat), Some(1234 + 567));
        assert_eq!(parse_cpu_ticks("4242 (short"), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.50), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&v, 1.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[7.0], 0.99), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
        let s = Summary::of(vec![3.0, 1.0, f64::NAN, 2.0]);
        assert_eq!(
            (s.n, s.p50, s.max, s.mean),
            (3, Some(2.0), Some(3.0), Some(2.0))
        );
        assert_eq!(Summary::of(Vec::new()).p50, None);
    }

    #[test]
    fn the_budget_bound_is_what_exceeds_the_burst_over_the_refill_rate() {
        // ARM writes: 200 burst, 10/s.
        assert_eq!(budget_bound(150, 200.0, 10.0), Some(0.0));
        assert_eq!(budget_bound(200, 200.0, 10.0), Some(0.0));
        assert_eq!(budget_bound(2_600, 200.0, 10.0), Some(240.0));
        assert_eq!(budget_bound(10, 0.0, 0.0), None);
        assert_eq!(ratio(Some(300.0), Some(240.0)), Some(1.25));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
    }

    #[test]
    fn tables_align_text_left_and_numbers_right() {
        let mut t = Table::new(["RUN", "SAGAS/S", "SHARE"]);
        t.row(["engine", "123.4", "1.00 %"])
            .row(["raw JetStream", "-", "12.50 %"]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "RUN            SAGAS/S    SHARE");
        assert_eq!(lines[1], "engine           123.4   1.00 %");
        assert_eq!(lines[2], "raw JetStream        -  12.50 %");
        let targets = targets_table(&[
            Target::new("engine / raw sagas/s @64", Some(0.5123), "ratio", ">= 0.50"),
            Target::new("coordinator per step p50 @64", Some(0.8), "ms", "<= 1 ms"),
            Target::new("429 share", None, "share", "<= 2 %"),
        ]);
        let lines: Vec<&str> = targets.lines().collect();
        assert_eq!(lines[0], "FIGURE                           VALUE  TARGET");
        assert_eq!(lines[1], "engine / raw sagas/s @64         0.51×  >= 0.50");
        assert_eq!(lines[2], "coordinator per step p50 @64  0.800 ms  <= 1 ms");
        assert_eq!(lines[3], "429 share                            -  <= 2 %");
    }

    #[test]
    fn targets_serialize_with_unknowns_as_null() {
        let t = Target::new("ratio", None, "ratio", "<= 1.5");
        assert_eq!(
            serde_json::to_value(&t).unwrap_or_default(),
            serde_json::json!({"name": "ratio", "value": null, "unit": "ratio", "goal": "<= 1.5"})
        );
    }

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\tx\nVmPeak:\t  9 kB\nVmRSS:\t   2048 kB\nThreads: 3\n";
        assert_eq!(parse_vm_rss(status), Some(2 * 1024 * 1024));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
        assert!(rss_bytes(None).is_some_and(|b| b > 0));
    }
}
