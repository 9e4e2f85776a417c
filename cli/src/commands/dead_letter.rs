//! `hypersaga dead-letter …`: the messages the bus's roles refused unread or gave up on (the
//! `HCP_DEAD` stream) — list them, show one with its payload, send one again where it came
//! from (once), purge them. Admin token as for `hypersaga tenant`.

use std::process::ExitCode;

use clap::{ArgGroup, Subcommand};
use hypersaga_api::v1 as pb;
use serde_json::json;

use super::tenant::{AdminArgs, call};
use crate::output::Output;
use crate::output::dead_letter as shown;
use crate::{out, outln};

/// `--tenant`'s meaning here: whose dead letters (the client flag of the same name picks a
/// dev tenant to act as, which an admin command has no use for).
const TENANT_FILTER_HELP: &str = "Only this tenant's dead letters (`unknown`: those whose subject names no tenant) \
     [default: every tenant's]";

#[derive(Subcommand, Debug)]
pub enum DeadLetterCommand {
    /// List dead letters, oldest first: why each was refused, by which role, when, and the
    /// subject it was sent to.
    ///
    /// A dead letter is a message a role refused unread (reason `disowned`: its body
    /// disagrees with the subject it came on, e.g. it names another tenant) or gave up on
    /// (reason `poison`: an input that failed on every delivery, coordinator.poison_after
    /// times). It is kept in the HCP_DEAD stream for 30 days, never acted on, until it is
    /// redriven or purged. -o wide adds the consumer it was read through, how often it was
    /// delivered, where it was read from, its message id and whether it can be redriven.
    ///
    /// Example: hypersaga dead-letter list --tenant acme -o wide
    #[command(mut_arg("tenant", |a| a.help(TENANT_FILTER_HELP)))]
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Show one dead letter in detail, its payload included (pretty JSON when it is JSON).
    ///
    /// Example: hypersaga dead-letter show 12 -o yaml
    Show {
        /// The dead letter's sequence (SEQ in `dead-letter list`).
        sequence: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Send a dead letter again, once, to the subject it was first sent to, and remove it.
    ///
    /// Fix what made it fail first (for `poison`, the fault its reason names): it is then
    /// acted on as it would have been. The coordinator sends it, with a message id derived
    /// from its sequence, so asked twice (or after a crash half-way) it is still sent once;
    /// once it is gone, redriving it again is NOT_FOUND (exit 3). A `disowned` one is refused
    /// (FAILED_PRECONDITION, exit 1): it would only be refused again; purge it. Recorded on
    /// the tenant's audit stream (`dead_letter.redriven`) with the admin as actor.
    ///
    /// Example: hypersaga dead-letter redrive 12
    Redrive {
        /// The dead letter's sequence.
        sequence: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Remove one dead letter, or all of them (--all, of one tenant with --tenant), and say
    /// how many.
    ///
    /// No confirmation is asked. Recorded on each tenant's audit stream
    /// (`dead_letter.purged`, with the count) with the admin as actor.
    ///
    /// Example: hypersaga dead-letter purge 12; hypersaga dead-letter purge --all --tenant acme
    #[command(
        mut_arg("tenant", |a| a.help(TENANT_FILTER_HELP)),
        group(ArgGroup::new("what").required(true).args(["sequence", "all"]))
    )]
    Purge {
        /// The dead letter's sequence.
        sequence: Option<u64>,
        /// Every dead letter (of --tenant only, if given).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Dead letters as `-o` shows them.
const DEAD_LETTERS: super::Shown<pb::DeadLetter> = super::Shown {
    json: shown::dead_letter_json,
    text: shown::dead_letter_text,
    name: |d| shown::dead_letter_name(d.sequence),
    table: |items, wide| shown::dead_letters_table(items, wide, now()),
};

/// The tenant a list or purge is about: `--tenant`, trimmed; empty for every tenant.
fn tenant_of(admin: &AdminArgs) -> String {
    admin
        .client
        .tenant
        .as_deref()
        .map(str::trim)
        .unwrap_or_default()
        .to_owned()
}

pub async fn run(cmd: DeadLetterCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DeadLetterCommand::List { admin } => {
            let tenant = tenant_of(&admin);
            let pages = call(&admin, |c| async move {
                let letters = super::all_pages(|page_token| {
                    let mut c = c.clone();
                    let req = pb::ListDeadLettersRequest {
                        tenant: tenant.clone(),
                        page_size: 0,
                        page_token,
                    };
                    async move {
                        let r = c.list_dead_letters(req).await?.into_inner();
                        Ok((r.dead_letters, r.next_page_token))
                    }
                })
                .await?;
                Ok(tonic::Response::new(letters))
            })
            .await?;
            match pages {
                Ok(letters) => {
                    super::print_objects(&letters, &admin.client, false, &DEAD_LETTERS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
        DeadLetterCommand::Show { sequence, admin } => {
            let req = pb::GetDeadLetterRequest { sequence };
            match call(&admin, |mut c| async move { c.get_dead_letter(req).await }).await? {
                Ok(d) => {
                    super::print_objects(&[d], &admin.client, true, &DEAD_LETTERS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
        DeadLetterCommand::Redrive { sequence, admin } => {
            let req = pb::RedriveDeadLetterRequest { sequence };
            let r = match call(
                &admin,
                |mut c| async move { c.redrive_dead_letter(req).await },
            )
            .await?
            {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            let doc = json!({
                "dead_letter": r.dead_letter.as_ref().map(shown::dead_letter_json),
                "subject": r.subject,
                "msg_id": r.msg_id,
                "done": r.done,
            });
            if let Some(doc) = admin.client.output.document(&doc)? {
                out!("{doc}")?;
            } else if admin.client.output == Output::Name {
                outln!("{}", shown::dead_letter_name(sequence))?;
            } else if r.done {
                outln!(
                    "{} redriven: sent again to {} (message id {}), and removed",
                    shown::dead_letter_name(sequence),
                    r.subject,
                    r.msg_id
                )?;
            } else {
                outln!(
                    "{}: redrive requested; the coordinator has not sent it yet (the request is \
                     kept, and it will); `hypersaga dead-letter show {sequence}` is NOT_FOUND \
                     once it has",
                    shown::dead_letter_name(sequence)
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        DeadLetterCommand::Purge {
            sequence,
            all,
            admin,
        } => {
            let tenant = tenant_of(&admin);
            if !all && !tenant.is_empty() {
                return Err(crate::exit::Usage(format!(
                    "--tenant {tenant} is for --all (every dead letter of that tenant); a                      sequence names one dead letter already"
                ))
                .into());
            }
            let req = pb::PurgeDeadLettersRequest {
                sequence: sequence.unwrap_or_default(),
                all,
                tenant,
            };
            let r = match call(
                &admin,
                |mut c| async move { c.purge_dead_letters(req).await },
            )
            .await?
            {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            if let Some(doc) = admin.client.output.document(&json!({"purged": r.purged}))? {
                out!("{doc}")?;
            } else {
                outln!(
                    "purged {} dead letter{}",
                    r.purged,
                    if r.purged == 1 { "" } else { "s" }
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
