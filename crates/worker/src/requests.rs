//! Answering the gateway's requests: plan requests ([`hypersaga_bus::plan`]) and the
//! sweeper's listings ([`hypersaga_bus::sweep`]). Every replica of a service subscribes in one
//! queue group per kind, so each request is answered once, by the handler's own code, under a
//! guard that refuses every mutating call.

use std::sync::Arc;

use futures::StreamExt;
use hypersaga_bus::plan::{PlanReply, PlanRequest, StepPlan};
use hypersaga_bus::sweep::{SweepReply, SweepRequest};
use hypersaga_bus::{Bus, ENVELOPE_VERSION, StepError, trace_of};
use hypersaga_model::ErrorInfo;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::StepHandler;
use crate::guard::Guard;

/// Requests one replica works on at once; more wait in the subscriptions.
const REQUESTS_AT_ONCE: usize = 16;

/// What a request asks.
#[derive(Clone, Copy, Debug)]
enum Asked {
    Plan,
    Sweep,
}

/// Answers plan requests and sweep listings for `service` until `shutdown`.
pub async fn serve_requests(
    bus: Bus,
    handler: Arc<dyn StepHandler>,
    service: String,
    shutdown: CancellationToken,
) -> crate::Result<()> {
    let subjects = bus.subjects();
    let plans = subscribe(
        &bus,
        subjects.plan_filter(&service),
        format!("plan-{service}"),
    )
    .await?;
    let sweeps = subscribe(
        &bus,
        subjects.sweep_filter(&service),
        format!("sweep-{service}"),
    )
    .await?;
    let mut requests = futures::stream::select(
        plans.map(|m| (Asked::Plan, m)),
        sweeps.map(|m| (Asked::Sweep, m)),
    );
    let permits = Arc::new(Semaphore::new(REQUESTS_AT_ONCE));
    loop {
        let (asked, msg) = tokio::select! {
            _ = shutdown.cancelled() => break,
            m = requests.next() => match m { Some(m) => m, None => break },
        };
        let Some(reply_to) = msg.reply.clone() else {
            continue;
        };
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let (bus, handler) = (bus.clone(), handler.clone());
        let trace = trace_of(msg.headers.as_ref());
        tokio::spawn(async move {
            let body = match asked {
                Asked::Plan => serde_json::to_vec(
                    &answer(&bus, handler.as_ref(), &msg.subject, &msg.payload, &trace).await,
                ),
                Asked::Sweep => serde_json::to_vec(
                    &list_made(&bus, handler.as_ref(), &msg.subject, &msg.payload, &trace).await,
                ),
            };
            match body {
                Ok(body) => {
                    if let Err(e) = bus.client().publish(reply_to, body.into()).await {
                        warn!(error = %e, ?asked, "could not answer a request");
                    }
                }
                Err(e) => warn!(error = %e, ?asked, "could not encode an answer"),
            }
            drop(permit);
        });
    }
    Ok(())
}

async fn subscribe(
    bus: &Bus,
    filter: String,
    queue: String,
) -> crate::Result<async_nats::Subscriber> {
    bus.client()
        .queue_subscribe(filter.clone(), queue)
        .await
        .map_err(|e| crate::Error::Consumer {
            consumer: filter,
            message: e.to_string(),
        })
}

/// Why a request is not answered: it does not decode, or its body names another tenant than
/// its subject (which permissions vouch for).
fn misaddressed<T: serde::de::DeserializeOwned>(
    bus: &Bus,
    subject: &str,
    payload: &[u8],
    tenant_of: impl Fn(&T) -> &hypersaga_model::TenantId,
) -> Result<T, ErrorInfo> {
    let refused = |code: &str, message: String| ErrorInfo {
        code: code.into(),
        message,
        ..Default::default()
    };
    let req: T = serde_json::from_slice(payload)
        .map_err(|e| refused("InvalidRequest", format!("cannot decode: {e}")))?;
    let tenant = bus.subjects().address(subject).map(|(t, _, _)| t);
    if tenant != Some(tenant_of(&req).as_str()) {
        return Err(refused(
            "TenantMismatch",
            format!(
                "the request names tenant {} on {subject}",
                tenant_of(&req).as_str()
            ),
        ));
    }
    Ok(req)
}

/// What the service made for the request's tenant (and cluster), by its tags and labels.
async fn list_made(
    bus: &Bus,
    handler: &dyn StepHandler,
    subject: &str,
    payload: &[u8],
    trace: &hypersaga_telemetry::TraceParent,
) -> SweepReply {
    let req: SweepRequest = match misaddressed(bus, subject, payload, |r: &SweepRequest| &r.tenant)
    {
        Ok(r) => r,
        Err(e) => return SweepReply::refused(e),
    };
    let span = info_span!(
        "sweep.list",
        tenant = %req.tenant,
        cluster = req.cluster.as_deref().unwrap_or("*"),
        otel.name = "sweep list",
        otel.kind = "consumer",
    );
    hypersaga_telemetry::otel::adopt(&span, trace);
    let work = handler.made(&req.tenant, req.cluster.as_deref());
    match Guard::planning().scope(work).instrument(span).await {
        Ok(found) => SweepReply::found(found),
        Err(e) => SweepReply::refused(e.info),
    }
}

/// The plans of the request's steps, in order; a request that does not decode, or whose body
/// names another tenant than its subject (which permissions vouch for), is answered with why.
async fn answer(
    bus: &Bus,
    handler: &dyn StepHandler,
    subject: &str,
    payload: &[u8],
    trace: &hypersaga_telemetry::TraceParent,
) -> PlanReply {
    let req: PlanRequest = match misaddressed(bus, subject, payload, |r: &PlanRequest| &r.tenant) {
        Ok(r) => r,
        Err(e) => {
            return PlanReply {
                v: ENVELOPE_VERSION,
                steps: Vec::new(),
                error: Some(e),
            };
        }
    };
    let mut steps = Vec::with_capacity(req.steps.len());
    for step in &req.steps {
        let cmd = Arc::new(req.command(step));
        let span = info_span!(
            "plan",
            tenant = %cmd.tenant,
            cluster = %cmd.cluster,
            step = %cmd.step,
            action = cmd.action.as_str(),
            otel.name = %format_args!("plan {}", cmd.step),
            otel.kind = "consumer",
        );
        // A child of the gateway's call that asked for the plan.
        hypersaga_telemetry::otel::adopt(&span, trace);
        let guard = Guard::planning();
        match guard.scope(handler.plan(&cmd)).instrument(span).await {
            Ok(plan) => steps.push(plan),
            Err(e) => return failed(step.step.as_str(), steps, e),
        }
    }
    PlanReply {
        v: ENVELOPE_VERSION,
        steps,
        error: None,
    }
}

/// The plans made so far, and why the next one could not be.
fn failed(step: &str, steps: Vec<StepPlan>, e: StepError) -> PlanReply {
    let mut info = e.info;
    info.step = Some(step.to_owned());
    PlanReply {
        v: ENVELOPE_VERSION,
        steps,
        error: Some(info),
    }
}
