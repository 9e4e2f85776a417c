//! Consumer lag, for the metrics: how many messages each durable consumer of the command and
//! event streams has yet to deliver, and how many it delivered and awaits acks for; and how
//! many dead letters `HCP_DEAD` holds (they leave it when redriven, purged or 30 days old).
//!
//! Read by the coordinator, the one role allowed to list every consumer: one listing per
//! stream a round, whatever the number of tenants and services. Every coordinator replica
//! exports the same figures, so dashboards take the maximum per consumer.

use std::time::Duration;

use futures::StreamExt;
use hypersaga_bus::{Bus, CMD_STREAM, DEAD_STREAM, EVT_STREAM};
use tokio_util::sync::CancellationToken;
use tracing::debug;

/// How often the consumers are read.
const EVERY: Duration = Duration::from_secs(5);

/// Exports the lag of every consumer of the command and event streams until `shutdown`.
pub(crate) async fn watch(bus: Bus, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        for stream in [CMD_STREAM, EVT_STREAM] {
            if let Err(e) = export(&bus, stream).await {
                debug!(stream, error = %e, "could not read the consumers' lag");
            }
        }
        if let Err(e) = export_dead(&bus).await {
            debug!(error = %e, "could not count the dead letters");
        }
    }
}

/// `hypersaga_dead_letters`: the messages `HCP_DEAD` holds now, one stream lookup.
async fn export_dead(bus: &Bus) -> Result<(), String> {
    let stream = bus
        .jetstream()
        .get_stream(DEAD_STREAM)
        .await
        .map_err(|e| e.to_string())?;
    let held = stream.cached_info().state.messages;
    metrics::gauge!("hypersaga_dead_letters").set(held as f64);
    Ok(())
}

async fn export(bus: &Bus, name: &'static str) -> Result<(), String> {
    let stream = bus
        .jetstream()
        .get_stream(name)
        .await
        .map_err(|e| e.to_string())?;
    let mut consumers = stream.consumers();
    while let Some(info) = consumers.next().await {
        let info = info.map_err(|e| e.to_string())?;
        let labels = [("stream", name.to_owned()), ("consumer", info.name.clone())];
        metrics::gauge!("hypersaga_consumer_pending", &labels).set(info.num_pending as f64);
        metrics::gauge!("hypersaga_consumer_ack_pending", &labels).set(info.num_ack_pending as f64);
    }
    Ok(())
}
