//! Answering the gateway's plan requests ([`hypersaga_bus::plan`]): every replica of a service
//! subscribes in one queue group, so each request is answered once, by the handler's own
//! planning code, under a guard that refuses every mutating call.

use std::sync::Arc;

use futures::StreamExt;
use hypersaga_bus::plan::{PlanReply, PlanRequest, StepPlan};
use hypersaga_bus::{Bus, ENVELOPE_VERSION, StepError, trace_of};
use hypersaga_model::ErrorInfo;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::StepHandler;
use crate::guard::Guard;

/// Plans one replica works on at once; more wait in the subscription.
const PLANS_AT_ONCE: usize = 16;

/// Answers plan requests for `service` until `shutdown`.
pub async fn serve_plans(
    bus: Bus,
    handler: Arc<dyn StepHandler>,
    service: String,
    shutdown: CancellationToken,
) -> crate::Result<()> {
    let filter = bus.subjects().plan_filter(&service);
    let mut requests = bus
        .client()
        .queue_subscribe(filter.clone(), format!("plan-{service}"))
        .await
        .map_err(|e| crate::Error::Consumer {
            consumer: filter.clone(),
            message: e.to_string(),
        })?;
    let permits = Arc::new(Semaphore::new(PLANS_AT_ONCE));
    loop {
        let msg = tokio::select! {
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
            let reply = answer(&bus, handler.as_ref(), &msg.subject, &msg.payload, &trace).await;
            match serde_json::to_vec(&reply) {
                Ok(body) => {
                    if let Err(e) = bus.client().publish(reply_to, body.into()).await {
                        warn!(error = %e, "could not answer a plan request");
                    }
                }
                Err(e) => warn!(error = %e, "could not encode a plan"),
            }
            drop(permit);
        });
    }
    Ok(())
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
    let refused = |code: &str, message: String| PlanReply {
        v: ENVELOPE_VERSION,
        steps: Vec::new(),
        error: Some(ErrorInfo {
            code: code.into(),
            message,
            ..Default::default()
        }),
    };
    let req: PlanRequest = match serde_json::from_slice(payload) {
        Ok(r) => r,
        Err(e) => return refused("InvalidPlanRequest", format!("cannot decode: {e}")),
    };
    let tenant = bus.subjects().address(subject).map(|(t, _, _)| t);
    if tenant != Some(req.tenant.as_str()) {
        return refused(
            "TenantMismatch",
            format!(
                "the request names tenant {} on {subject}",
                req.tenant.as_str()
            ),
        );
    }
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
        let guard = Guard::planning(cmd.clone());
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
