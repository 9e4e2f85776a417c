//! `hypersaga bench fleet`: N clusters created at once in one subscription, through the
//! gateway, against the ARM emulator at ARM's real request budgets; then all deleted at once.
//!
//! ARM admits writes (PUT, PATCH, POST) from a bucket of 200 refilled at 10/s per
//! subscription and principal, and deletes likewise. However clever the engine, N clusters
//! whose creation needs W writes cannot be ready before the bucket has admitted them:
//! `max(0, W − 200) / 10` seconds, plus the time one cluster takes on its own (its critical
//! path). The bench prints the time it took beside that bound, the share of ARM requests
//! answered 429, and what failed or paused.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use hypersaga_emulator_arm::ThrottleConfig;
use serde::Serialize;

use super::chaos::{self, Chaos, Killer};
use super::report::{
    Summary, Table, Target, budget_bound, emit, num, pct, progress, ratio, targets_and_notes,
};
use super::system::{
    ArmDelta, DevSystem, Outcome, Settled, SystemArgs, create_all, create_one, delete_all,
    delete_one, follow,
};
use crate::output::Format;

/// The tenant whose subscription the fleet is built in.
const TENANT: &str = "acme";

#[derive(Args, Debug)]
pub struct FleetArgs {
    /// Clusters created at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=999))]
    pub clusters: u32,
    /// Skip deleting the fleet afterwards (and the inventory of what is left).
    #[arg(long)]
    pub no_delete: bool,
    /// Kill -9 one replica (any role but the gateway this bench talks to, in turn) every this
    /// many milliseconds while the fleet is created and deleted; `hypersaga dev` restarts each.
    /// Then checks every operation's journal: its end exactly once, no gap, no repeat. Use
    /// with `--replicas 3`. 0: no kills.
    #[arg(long, default_value_t = 0)]
    pub kill_every_ms: u64,
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

#[derive(Debug, Serialize)]
pub struct FleetReport {
    pub bench: &'static str,
    pub clusters: u32,
    pub profile: String,
    pub replicas: usize,
    pub arm_budget_scale: f64,
    pub phases: Vec<Phase>,
    /// Resources left in the subscription after the deletes, by type.
    pub left_over: Option<BTreeMap<String, u64>>,
    /// With `--kill-every-ms`: the kills and what they did not break, by phase.
    pub chaos: BTreeMap<&'static str, Chaos>,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
}

/// The creates, or the deletes.
#[derive(Debug, Serialize)]
pub struct Phase {
    /// `create` or `delete`.
    pub phase: &'static str,
    pub clusters: usize,
    /// Refused by the API.
    pub rejected: usize,
    /// Ready (create) or gone (delete).
    pub succeeded: usize,
    pub failed: usize,
    pub paused: usize,
    pub timed_out: usize,
    /// From sending the first request until every cluster succeeded; `None` when some did not.
    pub time_to_all_secs: Option<f64>,
    /// Until the last cluster settled, whatever the outcome.
    pub time_to_settled_secs: Option<f64>,
    /// Per cluster, from sending the requests until it settled.
    pub cluster_secs: Summary,
    /// The same operation on one cluster alone, done first (the critical path).
    pub one_alone_secs: Option<f64>,
    /// `writes` (PUT, PATCH, POST) or `deletes`: the ARM budget this phase is bound by.
    pub budget: &'static str,
    pub budget_burst: f64,
    pub budget_per_sec: f64,
    /// Requests of that class ARM admitted during the phase.
    pub budget_requests: u64,
    /// `one_alone + max(0, requests − burst) / per_sec`.
    pub bound_secs: Option<f64>,
    /// `time_to_all / bound`.
    pub ratio_to_bound: Option<f64>,
    pub arm: ArmDelta,
    pub throttled_share: Option<f64>,
    /// What the read budget alone would bound the phase at (for context).
    pub read_bound_secs: Option<f64>,
    /// The first few failures and pauses, `name: reason`.
    pub problems: Vec<String>,
}

impl Phase {
    #[allow(clippy::too_many_arguments)]
    fn new(
        phase: &'static str,
        clusters: usize,
        refused: &[(String, Result<(), String>)],
        outcomes: &[Outcome],
        one_alone_secs: Option<f64>,
        arm: ArmDelta,
        budget: (&'static str, f64, f64),
        reads: (f64, f64),
    ) -> Self {
        let count = |f: fn(&Settled) -> bool| outcomes.iter().filter(|o| f(&o.settled)).count();
        let succeeded = count(|s| *s == Settled::Succeeded);
        let rejected = refused.iter().filter(|(_, r)| r.is_err()).count();
        let last = outcomes
            .iter()
            .map(|o| o.secs)
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
        let all_ok = rejected == 0 && succeeded == clusters && clusters > 0;
        let (name, burst, per_sec) = budget;
        let budget_requests = if name == "deletes" {
            arm.deletes
        } else {
            arm.writes
        };
        let bound_secs = budget_bound(budget_requests, burst, per_sec)
            .and_then(|b| one_alone_secs.map(|one| one + b));
        let time_to_all_secs = if all_ok { last } else { None };
        let mut problems: Vec<String> = refused
            .iter()
            .filter_map(|(n, r)| r.as_ref().err().map(|e| format!("{n}: refused: {e}")))
            .collect();
        problems.extend(outcomes.iter().filter_map(|o| match &o.settled {
            Settled::Succeeded => None,
            Settled::Failed(e) => Some(format!("{}: failed: {e}", o.name)),
            Settled::Paused(e) => Some(format!("{}: paused: {e}", o.name)),
            Settled::TimedOut => Some(format!("{}: timed out", o.name)),
        }));
        problems.truncate(10);
        Self {
            phase,
            clusters,
            rejected,
            succeeded,
            failed: count(|s| matches!(s, Settled::Failed(_))),
            paused: count(|s| matches!(s, Settled::Paused(_))),
            timed_out: count(|s| *s == Settled::TimedOut),
            time_to_all_secs,
            time_to_settled_secs: last,
            cluster_secs: Summary::of(outcomes.iter().map(|o| o.secs).collect()),
            one_alone_secs,
            budget: name,
            budget_burst: burst,
            budget_per_sec: per_sec,
            budget_requests,
            ratio_to_bound: ratio(time_to_all_secs, bound_secs),
            throttled_share: arm.throttled_share(),
            read_bound_secs: budget_bound(arm.reads, reads.0, reads.1),
            bound_secs,
            arm,
            problems,
        }
    }
}

pub async fn run(args: FleetArgs) -> anyhow::Result<ExitCode> {
    let sys = DevSystem::start(&args.system).await?;
    let result = measure(&sys, &args).await;
    if result.is_err() {
        progress(format!(
            "the run failed; the last lines of hypersaga dev's log:\n{}",
            std::fs::read_to_string(sys.log_path())
                .unwrap_or_default()
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    sys.stop().await;
    let report = result?;
    emit(args.output, &report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

async fn measure(sys: &DevSystem, args: &FleetArgs) -> anyhow::Result<FleetReport> {
    let client = sys.client(TENANT).await?;
    let admin = sys.admin()?;
    let sub = sys.tenant(TENANT)?.subscription_id.clone();
    let timeout = args.system.timeout();
    // The emulator's buckets, as `hypersaga dev` configures them.
    let arm = ThrottleConfig::default().scaled(args.system.arm_budget_scale);
    let mut notes = Vec::new();

    progress("one cluster alone first: create, then delete (each one's critical path)");
    let solo_create = create_one(&client, "solo", timeout).await;
    let one_create = (solo_create.settled == Settled::Succeeded).then_some(solo_create.secs);
    if one_create.is_none() {
        notes.push(format!(
            "the lone create did not succeed ({:?}); no bound for the creates",
            solo_create.settled
        ));
    }
    let solo_delete = delete_one(&client, "solo", timeout).await;
    let one_delete = (solo_delete.settled == Settled::Succeeded).then_some(solo_delete.secs);
    if one_delete.is_none() {
        notes.push(format!(
            "the lone delete did not succeed ({:?}); no bound for the deletes",
            solo_delete.settled
        ));
    }

    let n = args.clusters as usize;
    let names: Vec<String> = (0..n).map(|i| format!("fleet-{i:03}")).collect();
    progress(format!("creating {n} clusters at once"));
    let before = admin.requests().await?;
    let t0 = Instant::now();
    let killer = start_killing(sys, args);
    let sent = create_all(&client, &names).await;
    let accepted: Vec<String> = sent
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(n, _)| n.clone())
        .collect();
    let outcomes = follow(&client, &accepted, false, t0, timeout).await;
    let mut chaos = BTreeMap::new();
    if let Some(killer) = killer {
        chaos.insert(
            "create",
            checked(sys, killer, &accepted, "cluster.ready").await?,
        );
    }
    let after_create = admin.requests().await?;
    let create = Phase::new(
        "create",
        n,
        &sent,
        &outcomes,
        one_create,
        ArmDelta::between(&before, &after_create, &sub),
        ("writes", arm.writes.capacity, arm.writes.refill_per_sec),
        (arm.reads.capacity, arm.reads.refill_per_sec),
    );
    let mut phases = vec![create];
    let mut left_over = None;

    if !args.no_delete {
        // Everything that exists: ready, failed (compensated) or paused.
        let existing: Vec<String> = outcomes
            .iter()
            .filter(|o| o.settled != Settled::TimedOut)
            .map(|o| o.name.clone())
            .collect();
        progress(format!("deleting {} clusters at once", existing.len()));
        let t1 = Instant::now();
        let killer = start_killing(sys, args);
        let sent = delete_all(&client, &existing).await;
        let accepted: Vec<String> = sent
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(n, _)| n.clone())
            .collect();
        let outcomes = follow(&client, &accepted, true, t1, timeout).await;
        if let Some(killer) = killer {
            chaos.insert(
                "delete",
                checked(sys, killer, &accepted, "cluster.deleted").await?,
            );
        }
        let after_delete = admin.requests().await?;
        phases.push(Phase::new(
            "delete",
            existing.len(),
            &sent,
            &outcomes,
            one_delete,
            ArmDelta::between(&after_create, &after_delete, &sub),
            ("deletes", arm.deletes.capacity, arm.deletes.refill_per_sec),
            (arm.reads.capacity, arm.reads.refill_per_sec),
        ));
        let mut by_type = BTreeMap::new();
        for r in admin.resources(Some(&sub)).await? {
            if r.get("id").is_some() {
                let t = r["type"].as_str().unwrap_or("?").to_owned();
                *by_type.entry(t).or_insert(0u64) += 1;
            }
        }
        left_over = Some(by_type);
    }

    for p in &phases {
        if let Some(read) = p.read_bound_secs
            && p.bound_secs.is_some_and(|b| read > b)
        {
            notes.push(format!(
                "{}: the read budget ({:.0} reads) bounds the phase at {read:.1} s, above the {} bound",
                p.phase, p.arm.reads, p.budget
            ));
        }
    }
    notes.push(
        "a lone create includes the tenant's one-time identity set-up (kept for later \
         clusters), so the create bound is, if anything, generous"
            .to_owned(),
    );
    Ok(FleetReport {
        bench: "fleet",
        clusters: args.clusters,
        profile: format!("{:?}", args.system.profile).to_ascii_lowercase(),
        replicas: args.system.replicas.max(1),
        arm_budget_scale: args.system.arm_budget_scale,
        targets: targets(&phases, &chaos),
        chaos,
        phases,
        left_over,
        notes,
    })
}

/// Starts the kills `--kill-every-ms` asks for.
fn start_killing(sys: &DevSystem, args: &FleetArgs) -> Option<Killer> {
    (args.kill_every_ms > 0).then(|| {
        Killer::start(
            sys.endpoints.state_dir.clone(),
            std::time::Duration::from_millis(args.kill_every_ms),
        )
    })
}

/// Stops the kills and checks the journals of `clusters`' operations that end with `ends`.
async fn checked(
    sys: &DevSystem,
    killer: Killer,
    clusters: &[String],
    ends: &str,
) -> anyhow::Result<Chaos> {
    let killed = killer.stop().await;
    let mut chaos = Chaos::new(&killed);
    let journals = chaos::journals(&sys.endpoints, TENANT, clusters).await?;
    chaos.check(&journals, ends);
    Ok(chaos)
}

fn targets(phases: &[Phase], chaos: &BTreeMap<&'static str, Chaos>) -> Vec<Target> {
    let mut out = Vec::new();
    for (phase, c) in chaos {
        out.push(Target::new(
            format!(
                "{phase}: operations not ended exactly once, under {} kills",
                c.kills
            ),
            Some(c.not_once.len() as f64),
            "count",
            "0",
        ));
        out.push(Target::new(
            format!("{phase}: journals with a gap or a repeat"),
            Some(c.broken_journals.len() as f64),
            "count",
            "0",
        ));
    }
    for p in phases {
        let bound = if p.phase == "create" {
            "write"
        } else {
            "delete"
        };
        out.push(Target::new(
            format!("{}: time to all / {bound}-budget bound", p.phase),
            p.ratio_to_bound,
            "ratio",
            "<= 1.25",
        ));
        out.push(Target::new(
            format!("{}: 429s / ARM requests", p.phase),
            p.throttled_share,
            "share",
            "<= 2 %",
        ));
    }
    out
}

fn render(r: &FleetReport) -> String {
    let mut out = format!(
        "hypersaga bench fleet: {} clusters at once in one subscription, through the gateway, \
         against the ARM emulator (profile {}, {} replica(s), ARM budgets × {})\n\n",
        r.clusters, r.profile, r.replicas, r.arm_budget_scale
    );
    let mut t = Table::new([
        "PHASE",
        "CLUSTERS",
        "OK",
        "FAILED",
        "PAUSED",
        "REFUSED",
        "TIMED OUT",
        "TIME TO ALL s",
        "P50 s",
        "ONE ALONE s",
        "BUDGET",
        "ADMITTED",
        "BOUND s",
        "RATIO",
        "ARM REQUESTS",
        "429s",
        "429 SHARE",
    ]);
    for p in &r.phases {
        t.row([
            p.phase.to_owned(),
            p.clusters.to_string(),
            p.succeeded.to_string(),
            p.failed.to_string(),
            p.paused.to_string(),
            p.rejected.to_string(),
            p.timed_out.to_string(),
            num(p.time_to_all_secs, 1),
            num(p.cluster_secs.p50, 1),
            num(p.one_alone_secs, 1),
            format!(
                "{} {}/{}s⁻¹",
                p.budget,
                num(Some(p.budget_burst), 0),
                num(Some(p.budget_per_sec), 0)
            ),
            p.budget_requests.to_string(),
            num(p.bound_secs, 1),
            num(p.ratio_to_bound, 2),
            p.arm.requests.to_string(),
            p.arm.throttled.to_string(),
            pct(p.throttled_share),
        ]);
    }
    out.push_str(&t.render());
    out.push_str(
        "\nTIME TO ALL: from sending the requests until every cluster was ready (create) or \
         gone (delete); empty when some were not. ADMITTED: requests of the phase's budget \
         class ARM admitted. BOUND: ONE ALONE + max(0, ADMITTED − burst) / rate. ARM \
         REQUESTS and 429s: the subscription's, as the emulator counted them.\n",
    );
    for p in &r.phases {
        if let Some(s) = p.time_to_settled_secs
            && p.time_to_all_secs.is_none()
        {
            out.push_str(&format!(
                "{}: the last cluster settled after {s:.1} s\n",
                p.phase
            ));
        }
        for problem in &p.problems {
            out.push_str(&format!("{}: {problem}\n", p.phase));
        }
    }
    for (phase, c) in &r.chaos {
        let roles: Vec<String> = c
            .kills_by_role
            .iter()
            .map(|(role, n)| format!("{role} {n}"))
            .collect();
        out.push_str(&format!(
            "{phase}: kill -9 of {} replicas ({})\n",
            c.kills,
            roles.join(", ")
        ));
        for problem in c.not_once.iter().chain(&c.broken_journals).take(10) {
            out.push_str(&format!("{phase}: {problem}\n"));
        }
    }
    if let Some(left) = &r.left_over {
        out.push_str("\nLeft in the subscription after the deletes (what outlives clusters: the user's public DNS zone and its group, the tenant's identity group):\n");
        if left.is_empty() {
            out.push_str("  nothing\n");
        } else {
            let mut t = Table::new(["TYPE", "COUNT"]);
            for (k, v) in left {
                t.row([k.clone(), v.to_string()]);
            }
            out.push_str(&t.render());
        }
    }
    out.push('\n');
    out.push_str(&targets_and_notes(&r.targets, &r.notes));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, settled: Settled, secs: f64) -> Outcome {
        Outcome {
            name: name.into(),
            settled,
            secs,
        }
    }

    #[test]
    fn a_phase_is_bound_by_its_budget_and_its_critical_path() {
        let sent = vec![("a".to_owned(), Ok(())), ("b".to_owned(), Ok(()))];
        let outcomes = vec![
            outcome("a", Settled::Succeeded, 100.0),
            outcome("b", Settled::Succeeded, 280.0),
        ];
        let arm = ArmDelta {
            requests: 5000,
            throttled: 50,
            writes: 2600,
            deletes: 0,
            reads: 2000,
            ..Default::default()
        };
        let p = Phase::new(
            "create",
            2,
            &sent,
            &outcomes,
            Some(40.0),
            arm,
            ("writes", 200.0, 10.0),
            (250.0, 25.0),
        );
        assert_eq!(p.bound_secs, Some(280.0));
        assert_eq!(p.time_to_all_secs, Some(280.0));
        assert_eq!(p.ratio_to_bound, Some(1.0));
        assert_eq!(p.throttled_share, Some(0.01));
        assert_eq!(p.read_bound_secs, Some(70.0));
        assert!(p.problems.is_empty());

        // One failed: no time to all, the problem named.
        let outcomes = vec![
            outcome("a", Settled::Succeeded, 100.0),
            outcome(
                "b",
                Settled::Failed("Conflict at network.vnet: x".into()),
                120.0,
            ),
        ];
        let p = Phase::new(
            "create",
            2,
            &sent,
            &outcomes,
            None,
            ArmDelta::default(),
            ("writes", 200.0, 10.0),
            (250.0, 25.0),
        );
        assert_eq!((p.succeeded, p.failed), (1, 1));
        assert_eq!(p.time_to_all_secs, None);
        assert_eq!(p.time_to_settled_secs, Some(120.0));
        assert_eq!(p.bound_secs, None);
        assert_eq!(p.problems, vec!["b: failed: Conflict at network.vnet: x"]);
    }

    #[test]
    fn the_report_renders_as_a_table_and_as_json() {
        let sent = vec![("a".to_owned(), Ok(()))];
        let outcomes = vec![outcome("a", Settled::Succeeded, 50.0)];
        let arm = ArmDelta {
            requests: 100,
            throttled: 1,
            writes: 40,
            deletes: 0,
            reads: 60,
            ..Default::default()
        };
        let phases = vec![Phase::new(
            "create",
            1,
            &sent,
            &outcomes,
            Some(40.0),
            arm,
            ("writes", 200.0, 10.0),
            (250.0, 25.0),
        )];
        let report = FleetReport {
            bench: "fleet",
            clusters: 1,
            profile: "demo".into(),
            replicas: 1,
            arm_budget_scale: 1.0,
            targets: targets(&phases, &BTreeMap::new()),
            phases,
            left_over: Some(BTreeMap::from([(
                "Microsoft.Resources/resourceGroups".to_owned(),
                1,
            )])),
            chaos: BTreeMap::new(),
            notes: Vec::new(),
        };
        let text = render(&report);
        assert!(text.contains("writes 200/10s⁻¹"), "{text}");
        assert!(
            text.contains("write-budget bound   1.25×  <= 1.25"),
            "{text}"
        );
        assert!(
            text.contains("Microsoft.Resources/resourceGroups      1"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["phases"][0]["bound_secs"], 40.0);
        assert_eq!(json["phases"][0]["ratio_to_bound"], 1.25);
        assert_eq!(json["phases"][0]["arm"]["throttled"], 1);
        assert_eq!(json["targets"][1]["value"], 0.01);
    }
}
