//! `hypersaga audit tail`: the public lifecycle stream, as any audit subscriber sees it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use futures::StreamExt;
use hypersaga_bus::AuditEvent;
use hypersaga_model::TenantId;

use crate::audit_feed::{self, AuditAccess};
use crate::endpoints::Endpoints;
use crate::output::Format;
use crate::{errln, outln};

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Print audit events live (`hcp.<tenant>.audit.<cluster>` on stream HCP_AUDIT).
    Tail {
        /// Only this tenant's events [default: every tenant].
        #[arg(long)]
        tenant: Option<String>,
        /// Only this cluster's events.
        #[arg(long)]
        cluster: Option<String>,
        /// Replay the stream from its beginning, then follow.
        #[arg(long)]
        from_start: bool,
        /// Exit after this many events.
        #[arg(long)]
        count: Option<usize>,
        /// NATS URL (overrides the endpoints file).
        #[arg(long, env = "HYPERSAGA_NATS_URL")]
        nats_url: Option<String>,
        /// Directory of the bus credentials: `audit-<tenant>.secret` (the audit password `tenant
        /// add` printed) reads one tenant, `audit.nk` every tenant [default: the endpoints
        /// file's, with --nats-url: none].
        #[arg(long, env = "HYPERSAGA_NATS_CREDENTIALS")]
        credentials_dir: Option<PathBuf>,
        /// CA bundle of the NATS server's certificate (TLS) [default: the endpoints file's].
        #[arg(long, env = "HYPERSAGA_NATS_CA")]
        nats_ca: Option<PathBuf>,
        /// Subject prefix of the bus (`serve`'s nats.prefix).
        #[arg(long, default_value = "hcp")]
        prefix: String,
        /// Endpoints file written by `hypersaga dev` [default: $HYPERSAGA_ENDPOINTS or
        /// .hypersaga/endpoints.json].
        #[arg(long, env = "HYPERSAGA_ENDPOINTS")]
        endpoints: Option<PathBuf>,
        /// Output format: text (one line per event) or json (each event as published, one
        /// per line).
        #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

pub async fn run(cmd: AuditCommand) -> anyhow::Result<ExitCode> {
    let AuditCommand::Tail {
        tenant,
        cluster,
        from_start,
        count,
        nats_url,
        credentials_dir,
        nats_ca,
        prefix,
        endpoints,
        output,
    } = cmd;
    let mut access = match nats_url {
        Some(nats_url) => AuditAccess {
            nats_url,
            prefix: prefix.clone(),
            credentials_dir: None,
            ca_file: None,
        },
        None => {
            // Whether the tenant can be read is the credentials directory's to say (an
            // onboarded tenant's reader keeps its password there), not the dev tenants'.
            let e = Endpoints::load(&endpoints.unwrap_or_else(Endpoints::default_path))?;
            AuditAccess::from_endpoints(&e)
        }
    };
    access.prefix = prefix;
    if credentials_dir.is_some() {
        access.credentials_dir = credentials_dir;
    }
    if nats_ca.is_some() {
        access.ca_file = nats_ca;
    }
    let tenant = tenant.map(TenantId::new).transpose().context("--tenant")?;
    let consumer =
        audit_feed::open(&access, tenant.as_ref(), cluster.as_deref(), from_start).await?;
    let what = Following {
        tenant: tenant.as_ref().map(ToString::to_string),
        cluster,
        stored: consumer.cached_info().num_pending,
    };
    let messages = consumer.messages().await?;
    tokio::select! {
        done = print_events(messages, &what, output, count) => done,
        () = crate::console::stdout_closed() => Err(crate::console::OutputError::Closed.into()),
    }
}

/// What `audit tail` follows, for the line that says it waits.
struct Following {
    tenant: Option<String>,
    cluster: Option<String>,
    /// Events stored already that the feed replays first (`--from-start`).
    stored: u64,
}

impl Following {
    /// Said on stderr once the stored events are shown, so a quiet stream does not look hung.
    fn waiting(&self) -> String {
        let whose = match (&self.tenant, &self.cluster) {
            (Some(t), Some(c)) => format!("tenant {t}'s cluster {c}"),
            (Some(t), None) => format!("tenant {t}"),
            (None, Some(c)) => format!("cluster {c} (every tenant)"),
            (None, None) => "every tenant".to_owned(),
        };
        let shown = match self.stored {
            0 => String::new(),
            n => format!("{n} stored event(s) shown; "),
        };
        format!("{shown}waiting for audit events of {whose}… (Ctrl-C stops)")
    }
}

/// Prints events as they come until `count` (if any), saying on stderr when it starts to
/// wait for new ones.
async fn print_events(
    mut messages: async_nats::jetstream::consumer::push::Ordered,
    what: &Following,
    output: Format,
    count: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let mut seen = 0usize;
    let mut said_waiting = false;
    loop {
        if count.is_some_and(|n| seen >= n) {
            break;
        }
        if !said_waiting && seen as u64 >= what.stored {
            errln!("{}", what.waiting());
            said_waiting = true;
        }
        let Some(msg) = messages.next().await else {
            break;
        };
        let msg = msg?;
        match output {
            Format::Json => outln!("{}", String::from_utf8_lossy(&msg.payload))?,
            Format::Text => match serde_json::from_slice::<AuditEvent>(&msg.payload) {
                Ok(e) => outln!("{}", line(&e))?,
                Err(_) => outln!("{} (unreadable event)", msg.subject)?,
            },
        }
        seen += 1;
    }
    Ok(ExitCode::SUCCESS)
}

fn line(e: &AuditEvent) -> String {
    let time = e
        .time
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut s = format!(
        "{time} {}/{} {} #{:<3} {:<20}",
        e.tenant, e.cluster, e.operation, e.seq, e.kind
    );
    if let Some(step) = &e.step {
        s.push_str(&format!(" {step}"));
        if let Some(a) = e.attempt {
            s.push_str(&format!(" (attempt {a})"));
        }
    }
    if let Some(err) = e.detail.get("error").filter(|v| !v.is_null()) {
        s.push_str(&format!(
            " {}: {}",
            err["code"].as_str().unwrap_or(""),
            err["message"].as_str().unwrap_or("")
        ));
    }
    if let Some(m) = e.detail.get("message").and_then(|m| m.as_str()) {
        s.push_str(&format!(" — {m}"));
    }
    s
}
