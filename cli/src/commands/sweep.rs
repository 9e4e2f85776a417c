//! `hypersaga sweep`: what hypersaga made that no live cluster owns — listed, and removed.

use std::process::ExitCode;

use clap::Args;
use hypersaga_api::v1 as pb;

use super::tenant::{AdminArgs, call};
use crate::output::Output;
use crate::output::sweep as shown;
use crate::{errln, out, outln};

/// `--tenant`'s meaning here: whose leftovers.
const TENANT_FILTER_HELP: &str = "Only this tenant's leftovers [default: every tenant's]";

/// `hypersaga sweep`'s flags (its help is on the command, in `cli.rs`).
#[derive(Args, Debug)]
#[command(mut_arg("tenant", |a| a.help(TENANT_FILTER_HELP)))]
pub struct SweepArgs {
    /// List the leftovers; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub admin: AdminArgs,
}

pub async fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let tenant = args
        .admin
        .client
        .tenant
        .as_deref()
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    let req = pb::SweepRequest {
        tenant,
        dry_run: args.dry_run,
    };
    let r = match call(&args.admin, |mut c| async move { c.sweep(req).await }).await? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let client = &args.admin.client;
    for why in &r.unlisted {
        errln!("warning: not listed: {why}");
    }
    if let Some(doc) = client.output.document(&shown::sweep_json(&r))? {
        out!("{doc}")?;
        return Ok(ExitCode::SUCCESS);
    }
    if client.output == Output::Name {
        for o in &r.operations {
            outln!("operation/{}", o.id)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if r.leftovers.is_empty() {
        outln!("Nothing to sweep: every resource and object hypersaga made has a live cluster.")?;
        return Ok(ExitCode::SUCCESS);
    }
    let table = shown::leftovers_table(&r.leftovers, client.output == Output::Wide);
    out!("{}", table.render(!client.no_headers))?;
    for line in shown::operations_text(&r) {
        outln!("{line}")?;
    }
    if args.dry_run {
        outln!(
            "{} leftover(s); nothing removed (dry run). Run without --dry-run to remove the removable ones.",
            r.leftovers.len()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
