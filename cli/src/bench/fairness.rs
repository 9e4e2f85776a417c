//! `hypersaga bench fairness`: does one tenant's burst hold up another tenant's single create?
//!
//! Tenant `globex` creates one cluster alone (after a first, unmeasured one that sets up its
//! persistent identities), and the time to ready is noted. Then tenant `acme` submits a burst
//! of creates and, as soon as they are accepted, `globex` creates one more. The bench prints
//! globex's time to ready in both cases and their ratio. The tenants have their own
//! subscriptions (so their own ARM budgets) but share the services' workers and the bus.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use super::report::{Table, Target, emit, num, pct, progress, ratio, targets_and_notes};
use super::system::{ArmDelta, DevSystem, Settled, SystemArgs, create_all, create_one, list_all};
use crate::output::{self, Format};

const BURSTING: &str = "acme";
const SINGLE: &str = "globex";

#[derive(Args, Debug)]
pub struct FairnessArgs {
    /// Creates tenant acme submits at once.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=999))]
    pub burst: u32,
    #[command(flatten)]
    pub system: SystemArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

#[derive(Debug, Serialize)]
pub struct FairnessReport {
    pub bench: &'static str,
    pub burst: u32,
    pub profile: String,
    pub replicas: usize,
    /// acme's creates the API accepted.
    pub burst_accepted: usize,
    /// How long submitting the burst took.
    pub burst_submit_secs: f64,
    /// globex's create, alone: seconds to ready (`None` if it did not get ready).
    pub alone_secs: Option<f64>,
    /// globex's create right after acme's burst.
    pub during_burst_secs: Option<f64>,
    /// `during_burst / alone`.
    pub ratio: Option<f64>,
    /// acme's clusters ready when globex's was.
    pub burst_ready_by_then: usize,
    /// Share of each subscription's ARM requests answered 429 while globex's create ran.
    pub acme_throttled_share: Option<f64>,
    pub globex_throttled_share: Option<f64>,
    pub targets: Vec<Target>,
    pub notes: Vec<String>,
}

pub async fn run(args: FairnessArgs) -> anyhow::Result<ExitCode> {
    let sys = DevSystem::start(&args.system).await?;
    let result = measure(&sys, &args).await;
    sys.stop().await;
    let report = result?;
    emit(args.output, &report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

async fn measure(sys: &DevSystem, args: &FairnessArgs) -> anyhow::Result<FairnessReport> {
    let acme = sys.client(BURSTING).await?;
    let globex = sys.client(SINGLE).await?;
    let admin = sys.admin()?;
    let (acme_sub, globex_sub) = (
        sys.tenant(BURSTING)?.subscription_id.clone(),
        sys.tenant(SINGLE)?.subscription_id.clone(),
    );
    let timeout = args.system.timeout();
    let mut notes = Vec::new();

    progress("globex: a first create (sets up its persistent identities; not measured)");
    let warm = create_one(&globex, "gx-warm", timeout).await;
    if warm.settled != Settled::Succeeded {
        notes.push(format!(
            "globex's first create did not succeed: {:?}",
            warm.settled
        ));
    }
    progress("globex: one create alone");
    let alone = create_one(&globex, "gx-alone", timeout).await;
    let alone_secs = (alone.settled == Settled::Succeeded).then_some(alone.secs);
    if alone_secs.is_none() {
        notes.push(format!(
            "globex's lone create did not succeed: {:?}",
            alone.settled
        ));
    }

    progress(format!(
        "acme: {} creates at once, then globex: one create",
        args.burst
    ));
    let names: Vec<String> = (0..args.burst).map(|i| format!("burst-{i:03}")).collect();
    let before = admin.requests().await?;
    let t_burst = Instant::now();
    let sent = create_all(&acme, &names).await;
    let burst_submit_secs = t_burst.elapsed().as_secs_f64();
    let burst_accepted = sent.iter().filter(|(_, r)| r.is_ok()).count();
    if let Some((name, Err(e))) = sent.iter().find(|(_, r)| r.is_err()) {
        notes.push(format!(
            "{} of acme's creates were refused, e.g. {name}: {e}",
            sent.len() - burst_accepted
        ));
    }
    let busy = create_one(&globex, "gx-busy", timeout).await;
    let during_burst_secs = (busy.settled == Settled::Succeeded).then_some(busy.secs);
    if during_burst_secs.is_none() {
        notes.push(format!(
            "globex's create during the burst did not succeed: {:?}",
            busy.settled
        ));
    }
    let after = admin.requests().await?;
    let burst_ready_by_then = match list_all(&mut acme.clone()).await {
        Ok(clusters) => clusters
            .iter()
            .filter(|c| output::phase(c.status.as_ref().map_or(0, |s| s.phase)) == "ready")
            .count(),
        Err(_) => 0,
    };
    // acme's burst is not waited for: the system is stopped with it still going.
    let acme_arm = ArmDelta::between(&before, &after, &acme_sub);
    let globex_arm = ArmDelta::between(&before, &after, &globex_sub);
    notes.push(
        "the ARM shares cover the time from the burst's first request until globex's \
         cluster was ready"
            .to_owned(),
    );
    let ratio = ratio(during_burst_secs, alone_secs);
    Ok(FairnessReport {
        bench: "fairness",
        burst: args.burst,
        profile: format!("{:?}", args.system.profile).to_ascii_lowercase(),
        replicas: args.system.replicas.max(1),
        burst_accepted,
        burst_submit_secs,
        alone_secs,
        during_burst_secs,
        ratio,
        burst_ready_by_then,
        acme_throttled_share: acme_arm.throttled_share(),
        globex_throttled_share: globex_arm.throttled_share(),
        targets: vec![Target::new(
            "globex time to ready, during acme's burst / alone",
            ratio,
            "ratio",
            "<= 1.5",
        )],
        notes,
    })
}

fn render(r: &FairnessReport) -> String {
    let mut out = format!(
        "hypersaga bench fairness: tenant acme's burst of {} creates beside tenant globex's \
         single create (profile {}, {} replica(s))\n\n",
        r.burst, r.profile, r.replicas
    );
    let mut t = Table::new([
        "GLOBEX CREATE",
        "TIME TO READY s",
        "ACME ACCEPTED",
        "ACME READY BY THEN",
        "ACME 429 SHARE",
        "GLOBEX 429 SHARE",
    ]);
    t.row([
        "alone".to_owned(),
        num(r.alone_secs, 1),
        "-".to_owned(),
        "-".to_owned(),
        "-".to_owned(),
        "-".to_owned(),
    ]);
    t.row([
        "during acme's burst".to_owned(),
        num(r.during_burst_secs, 1),
        r.burst_accepted.to_string(),
        r.burst_ready_by_then.to_string(),
        pct(r.acme_throttled_share),
        pct(r.globex_throttled_share),
    ]);
    out.push_str(&t.render());
    out.push_str(&format!(
        "\nacme's burst was submitted in {:.2} s; globex's create followed at once.\n\n",
        r.burst_submit_secs
    ));
    out.push_str(&targets_and_notes(&r.targets, &r.notes));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_is_time_during_the_burst_over_time_alone() {
        let report = FairnessReport {
            bench: "fairness",
            burst: 200,
            profile: "demo".into(),
            replicas: 1,
            burst_accepted: 200,
            burst_submit_secs: 0.4,
            alone_secs: Some(40.0),
            during_burst_secs: Some(52.0),
            ratio: ratio(Some(52.0), Some(40.0)),
            burst_ready_by_then: 3,
            acme_throttled_share: Some(0.015),
            globex_throttled_share: None,
            targets: vec![Target::new(
                "globex",
                ratio(Some(52.0), Some(40.0)),
                "ratio",
                "<= 1.5",
            )],
            notes: Vec::new(),
        };
        assert_eq!(report.ratio, Some(1.3));
        let text = render(&report);
        assert!(text.contains("during acme's burst"), "{text}");
        assert!(text.contains("1.50 %"), "{text}");
        assert!(text.contains("1.30×  <= 1.5"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["ratio"], 1.3);
        assert_eq!(json["globex_throttled_share"], serde_json::Value::Null);
    }
}
