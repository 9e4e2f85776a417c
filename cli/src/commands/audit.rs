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
        /// Directory of the bus credentials: `audit-<tenant>.nk` reads one tenant, `audit.nk`
        /// every tenant [default: the endpoints file's, with --nats-url: none].
        #[arg(long, env = "HYPERSAGA_NATS_CREDENTIALS")]
        credentials_dir: Option<PathBuf>,
        /// CA bundle of the NATS server's certificate (TLS) [default: the endpoints file's].
        #[arg(long, env = "HYPERSAGA_NATS_CA")]
        nats_ca: Option<PathBuf>,
        /// Subject prefix.
        #[arg(long, default_value = "hcp")]
        prefix: String,
        #[arg(long, env = "HYPERSAGA_ENDPOINTS")]
        endpoints: Option<PathBuf>,
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
        None => AuditAccess::from_endpoints(&Endpoints::load(
            &endpoints.unwrap_or_else(Endpoints::default_path),
        )?),
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
    let mut messages = consumer.messages().await?;
    let mut seen = 0usize;
    while let Some(msg) = messages.next().await {
        let msg = msg?;
        match output {
            Format::Json => println!("{}", String::from_utf8_lossy(&msg.payload)),
            Format::Text => match serde_json::from_slice::<AuditEvent>(&msg.payload) {
                Ok(e) => println!("{}", line(&e)),
                Err(_) => println!("{} (unreadable event)", msg.subject),
            },
        }
        seen += 1;
        if count.is_some_and(|n| seen >= n) {
            break;
        }
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
