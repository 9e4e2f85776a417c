//! Streams and KV buckets, created idempotently at start-up by whichever process comes first.

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

/// How long a `Nats-Msg-Id` is remembered. JetStream's default; larger windows cost memory.
const DEDUP_WINDOW: Duration = Duration::from_secs(120);

pub(crate) async fn ensure(js: &jetstream::Context, s: &Subjects) -> Result<()> {
    let p = s.prefix();
    let streams = [
        stream::Config {
            name: CMD_STREAM.into(),
            subjects: vec![format!("{p}.*.cmd.*")],
            retention: stream::RetentionPolicy::WorkQueue,
            duplicate_window: DEDUP_WINDOW,
            storage: stream::StorageType::File,
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
            ..Default::default()
        },
        stream::Config {
            name: AUDIT_STREAM.into(),
            subjects: vec![format!("{p}.*.audit.>")],
            retention: stream::RetentionPolicy::Limits,
            max_age: Duration::from_secs(400 * 24 * 3600),
            duplicate_window: DEDUP_WINDOW,
            storage: stream::StorageType::File,
            ..Default::default()
        },
    ];
    for config in streams {
        js.get_or_create_stream(config)
            .await
            .map_err(|e| Error::js("create stream", e))?;
    }
    for (bucket, history) in [(SAGAS_BUCKET, 5), (CLUSTERS_BUCKET, 5), (ACTIVE_BUCKET, 1)] {
        if js.get_key_value(bucket).await.is_err() {
            let created = js
                .create_key_value(kv::Config {
                    bucket: bucket.into(),
                    history,
                    storage: stream::StorageType::File,
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
    }
    allow_ttl(js, SAGAS_BUCKET).await
}

/// Lets the records of `bucket` carry a `Nats-TTL` (the sagas of a deleted cluster expire).
/// Buckets made before that was needed are updated in place.
async fn allow_ttl(js: &jetstream::Context, bucket: &str) -> Result<()> {
    let name = format!("KV_{bucket}");
    let mut stream = js
        .get_stream(&name)
        .await
        .map_err(|e| Error::js("open KV stream", e))?;
    let mut config = stream
        .info()
        .await
        .map_err(|e| Error::js("read KV stream", e))?
        .config
        .clone();
    if !config.allow_message_ttl {
        config.allow_message_ttl = true;
        js.update_stream(config)
            .await
            .map_err(|e| Error::js("allow TTLs on KV stream", e))?;
    }
    Ok(())
}
