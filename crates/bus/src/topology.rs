//! Streams and KV buckets: created at start-up, and brought to this version's configuration
//! and the configured replication when they exist already (by the coordinator on a closed bus;
//! on an open one by whichever process comes first).

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};

use crate::{Error, Result, Subjects};

pub const CMD_STREAM: &str = "HCP_CMD";
pub const EVT_STREAM: &str = "HCP_EVT";
pub const AUDIT_STREAM: &str = "HCP_AUDIT";
pub const SAGAS_BUCKET: &str = "hcp_sagas";
pub const CLUSTERS_BUCKET: &str = "hcp_clusters";
/// One key per saga that has not finished (or still has an outbox): what the coordinator's
/// resync looks at, so its cost follows the work in flight, not every saga ever run.
pub const ACTIVE_BUCKET: &str = "hcp_active";
/// Messages refused unread: a tenant in the body that is not the subject's, say. Kept for
/// whoever investigates, never acted on.
pub const DEAD_STREAM: &str = "HCP_DEAD";
/// The shared Azure budgets (`hypersaga-pacer`). Made here with the rest, so that the workers,
/// which pace themselves through it, need no right to create buckets.
pub const BUDGETS_BUCKET: &str = "hcp_budgets";
/// The onboarded tenants (`hypersaga-tenants`): written by the gateway's admin API, followed
/// live by every role.
pub const TENANTS_BUCKET: &str = "hcp_tenants";
/// The management clusters (`hypersaga-placement`): each one's region, capacity, cordon and
/// the clusters placed on it.
pub const MANAGEMENT_BUCKET: &str = "hcp_management";
/// Tenants' rollouts (the gateway makes and drives them), by `<tenant>.<id>`.
pub const ROLLOUTS_BUCKET: &str = "hcp_rollouts";
/// The add-on catalog (`hypersaga-addons`): every version of every add-on, by
/// `<owner>.<name>.<version>` (a version, once put, never changes).
pub const ADDONS_BUCKET: &str = "hcp_addons";

/// How long a `Nats-Msg-Id` is remembered. JetStream's default; larger windows cost memory.
pub const DEDUP_WINDOW: Duration = Duration::from_secs(120);

pub(crate) async fn ensure(js: &jetstream::Context, s: &Subjects, replicas: usize) -> Result<()> {
    let p = s.prefix();
    let replicas = replicas.max(1);
    let streams = [
        stream::Config {
            name: CMD_STREAM.into(),
            subjects: vec![format!("{p}.*.cmd.*")],
            retention: stream::RetentionPolicy::WorkQueue,
            duplicate_window: DEDUP_WINDOW,
            storage: stream::StorageType::File,
            num_replicas: replicas,
            ..Default::default()
        },
        stream::Config {
            name: EVT_STREAM.into(),
            // Timers live here too: a schedule must fire into its own stream.
            subjects: vec![
                format!("{p}.*.evt.*"),
                format!("{p}.*.saga.*"),
                format!("{p}.*.timer.*"),
            ],
            allow_message_schedules: true,
            retention: stream::RetentionPolicy::Limits,
            max_age: Duration::from_secs(7 * 24 * 3600),
            duplicate_window: DEDUP_WINDOW,
            storage: stream::StorageType::File,
            num_replicas: replicas,
            ..Default::default()
        },
        stream::Config {
            name: AUDIT_STREAM.into(),
            subjects: vec![format!("{p}.*.audit.>")],
            retention: stream::RetentionPolicy::Limits,
            max_age: Duration::from_secs(400 * 24 * 3600),
            duplicate_window: DEDUP_WINDOW,
            storage: stream::StorageType::File,
            num_replicas: replicas,
            ..Default::default()
        },
        stream::Config {
            name: DEAD_STREAM.into(),
            subjects: vec![format!("{p}.*.dead.*")],
            retention: stream::RetentionPolicy::Limits,
            max_age: Duration::from_secs(30 * 24 * 3600),
            duplicate_window: DEDUP_WINDOW,
            storage: stream::StorageType::File,
            num_replicas: replicas,
            ..Default::default()
        },
    ];
    for config in streams {
        reconcile_stream(js, config).await?;
    }
    for (bucket, history) in [
        (SAGAS_BUCKET, 5),
        (CLUSTERS_BUCKET, 5),
        (ACTIVE_BUCKET, 1),
        (BUDGETS_BUCKET, 1),
        (TENANTS_BUCKET, 5),
        (MANAGEMENT_BUCKET, 1),
        (ROLLOUTS_BUCKET, 1),
        (ADDONS_BUCKET, 1),
    ] {
        if js.get_key_value(bucket).await.is_err() {
            let created = js
                .create_key_value(kv::Config {
                    bucket: bucket.into(),
                    history,
                    storage: stream::StorageType::File,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await;
            // Another process may have created it between our look and our create.
            if let Err(e) = created {
                js.get_key_value(bucket)
                    .await
                    .map_err(|_| Error::js("create KV bucket", e))?;
            }
        }
        let name = format!("KV_{bucket}");
        let mut current = current_config(js, &name).await?;
        current.num_replicas = replicas;
        current.allow_message_ttl |= bucket == SAGAS_BUCKET;
        reconcile_stream(js, current).await?;
    }
    Ok(())
}

/// Creates `desired`, or brings an existing stream to it where JetStream allows a change
/// (subjects, limits, replication, schedules and TTLs); leaves it alone when it matches.
async fn reconcile_stream(js: &jetstream::Context, desired: stream::Config) -> Result<()> {
    let mut existing = match js.get_stream(&desired.name).await {
        Ok(stream) => stream,
        Err(e) if not_found(&e) => match js.create_stream(desired.clone()).await {
            Ok(_) => return Ok(()),
            // Another process may have created it meanwhile: then check it as an existing one.
            Err(create) => js
                .get_stream(&desired.name)
                .await
                .map_err(|_| Error::js("create stream", create))?,
        },
        Err(e) => return Err(Error::js("look up stream", e)),
    };
    let current = existing
        .info()
        .await
        .map_err(|e| Error::js("read stream", e))?
        .config
        .clone();
    let mut wanted = current.clone();
    wanted.subjects = desired.subjects.clone();
    wanted.max_age = desired.max_age;
    wanted.duplicate_window = desired.duplicate_window;
    wanted.num_replicas = desired.num_replicas;
    wanted.allow_message_schedules |= desired.allow_message_schedules;
    wanted.allow_message_ttl |= desired.allow_message_ttl;
    if wanted != current {
        tracing::info!(stream = %desired.name, replicas = desired.num_replicas, "bringing a stream to this version's configuration");
        js.update_stream(wanted)
            .await
            .map_err(|e| Error::js("update stream", e))?;
    }
    Ok(())
}

async fn current_config(js: &jetstream::Context, name: &str) -> Result<stream::Config> {
    let mut stream = js
        .get_stream(name)
        .await
        .map_err(|e| Error::js("open KV stream", e))?;
    Ok(stream
        .info()
        .await
        .map_err(|e| Error::js("read KV stream", e))?
        .config
        .clone())
}

/// The streams of the topology, the buckets' included (`KV_<bucket>`).
pub fn stream_names() -> Vec<String> {
    [CMD_STREAM, EVT_STREAM, AUDIT_STREAM, DEAD_STREAM]
        .map(str::to_owned)
        .into_iter()
        .chain(
            [
                SAGAS_BUCKET,
                CLUSTERS_BUCKET,
                ACTIVE_BUCKET,
                BUDGETS_BUCKET,
                TENANTS_BUCKET,
                MANAGEMENT_BUCKET,
                ROLLOUTS_BUCKET,
            ]
            .map(|b| format!("KV_{b}")),
        )
        .collect()
}

/// For roles that may not create them: waits until every stream and bucket exists (the
/// coordinator makes them), saying what it waits for.
pub(crate) async fn wait_for(js: &jetstream::Context) -> Result<()> {
    let streams = stream_names();
    let started = std::time::Instant::now();
    let mut warn_at = started + Duration::from_secs(5);
    for name in streams {
        let mut pause = Duration::from_millis(100);
        loop {
            match js.get_stream(&name).await {
                Ok(_) => break,
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(Error::js("look up stream", e)),
            }
            if std::time::Instant::now() >= warn_at {
                tracing::warn!(stream = %name, waited_s = started.elapsed().as_secs(), "waiting for the coordinator to create the bus's streams and buckets");
                warn_at += Duration::from_secs(30);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }
    Ok(())
}

fn not_found(e: &jetstream::context::GetStreamError) -> bool {
    matches!(e.kind(), jetstream::context::GetStreamErrorKind::JetStream(j)
        if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND)
}
