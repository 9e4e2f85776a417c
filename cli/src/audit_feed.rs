//! Reading the public audit stream as an audit subscriber does: with the audit credentials of
//! one tenant (or the platform team's, for every tenant), through a named consumer filtered to
//! what those credentials may read. Shared by `hypersaga audit tail`, the benches and the
//! end-to-end tests, so they all read it the one way the bus allows.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use async_nats::jetstream::consumer::{Consumer, DeliverPolicy, push};
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::stream::ConsumerErrorKind;
use backon::Retryable as _;
use hypersaga_bus::{AUDIT_STREAM, Access, Role, Subjects};
use hypersaga_model::TenantId;

use crate::endpoints::Endpoints;

/// Where the audit stream is and how to prove the right to read it.
#[derive(Clone, Debug)]
pub struct AuditAccess {
    pub nats_url: String,
    pub prefix: String,
    /// Directory of the bus credentials (`audit-<tenant>.secret`, `audit.nk`); `None` on an
    /// open bus.
    pub credentials_dir: Option<PathBuf>,
    /// CA of the server's certificate; `None` without TLS.
    pub ca_file: Option<PathBuf>,
}

impl AuditAccess {
    /// As `hypersaga dev` wrote them to its endpoints file.
    pub fn from_endpoints(e: &Endpoints) -> Self {
        Self {
            nats_url: e.nats_url.clone(),
            prefix: "hcp".into(),
            credentials_dir: e.nats_credentials_dir.clone(),
            ca_file: e.nats_credentials_dir.as_ref().map(|_| e.ca_bundle.clone()),
        }
    }
}

/// An ordered consumer of the audit events of `tenant` (every tenant: `None`), narrowed to one
/// cluster if given. Its `cached_info().num_pending` says how many are stored already.
pub async fn open(
    access: &AuditAccess,
    tenant: Option<&TenantId>,
    cluster: Option<&str>,
    from_start: bool,
) -> anyhow::Result<Consumer<push::OrderedConfig>> {
    let role = Role::Audit(tenant.cloned());
    if let (Some(dir), Some(tenant)) = (&access.credentials_dir, tenant) {
        known_tenant(dir, tenant, &role)?;
    }
    let creds = Access::for_role(
        access.credentials_dir.as_deref(),
        &role,
        access.ca_file.as_deref(),
    )?;
    let client = hypersaga_bus::client_as(&access.nats_url, &role, &creds)
        .await
        .with_context(|| format!("cannot connect to NATS at {}", access.nats_url))?;
    let subjects = Subjects::new(&access.prefix);
    let filter = match cluster {
        Some(c) => {
            let tenant = tenant.map_or("*".to_owned(), ToString::to_string);
            format!("{}.{tenant}.audit.{c}", access.prefix)
        }
        None => subjects.audit_filter(tenant),
    };
    let js = async_nats::jetstream::new(client.clone());
    let get = || js.get_stream(AUDIT_STREAM);
    let stream = get
        .retry(hypersaga_bus::settling(UNANSWERED_FOR))
        .when(|e| matches!(e.kind(), GetStreamErrorKind::Request))
        .await
        .with_context(|| {
            format!(
                "cannot open the audit stream {AUDIT_STREAM} as {}",
                role.name()
            )
        })?;
    let config = push::OrderedConfig {
        // Named, so the server can check the filter against the reader's permissions.
        name: Some(format!("{}-{}", role.name(), uuid::Uuid::new_v4().simple())),
        deliver_subject: client.new_inbox(),
        filter_subject: filter.clone(),
        deliver_policy: if from_start {
            DeliverPolicy::All
        } else {
            DeliverPolicy::New
        },
        ..Default::default()
    };
    // A request the server does not answer is either refused by the reader's permissions
    // (NATS drops it) or lost while the stream's cluster elects a leader (a server just
    // went away): asked again, the second kind goes through.
    let create = || stream.create_consumer(config.clone());
    create
        .retry(hypersaga_bus::settling(UNANSWERED_FOR))
        .when(|e| {
            matches!(
                e.kind(),
                ConsumerErrorKind::TimedOut | ConsumerErrorKind::Request
            )
        })
        .await
        .with_context(|| {
            format!(
                "cannot read {filter} as {}: these credentials may read {} only (or the audit \
                 stream's servers did not answer for {} s)",
                role.name(),
                subjects.audit_filter(tenant),
                UNANSWERED_FOR.as_secs()
            )
        })
}

/// Fails, naming the tenant, when `dir` holds no audit credentials for it: a tenant the bus
/// does not know, not a missing file to go and find. The tenants it does know are those with
/// an `audit-<tenant>.secret` (the audit password `hypersaga tenant add` printed).
fn known_tenant(dir: &std::path::Path, tenant: &TenantId, role: &Role) -> anyhow::Result<()> {
    let file = dir.join(format!("{}.secret", role.name()));
    if file.exists() {
        return Ok(());
    }
    let mut known: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the bus credentials in {}", dir.display()))?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(
                name.strip_prefix("audit-")?
                    .strip_suffix(".secret")?
                    .to_owned(),
            )
        })
        .collect();
    known.sort();
    let known = if known.is_empty() {
        "none".to_owned()
    } else {
        known.join(", ")
    };
    anyhow::bail!(
        "unknown tenant \"{tenant}\": {} holds no audit credentials for it ({}); tenants with \
         audit credentials there: {known}",
        dir.display(),
        file.display()
    )
}

/// How long unanswered requests to open the feed are repeated.
const UNANSWERED_FOR: Duration = Duration::from_secs(20);
