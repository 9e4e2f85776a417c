//! A service that stops answering pauses the saga (it neither fails nor tears down); an
//! operator finds it with ListOperations, and resumes it or abandons it. Refused calls say
//! why, and every call is on the audit stream with its actor.

use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use serde_json::Value;
use tonic::Code;
use tonic_types::StatusExt;

use crate::support::*;

fn operation(c: &pb::Cluster) -> pb::Operation {
    c.status
        .as_ref()
        .and_then(|s| s.operation.clone())
        .unwrap_or_default()
}

fn is_paused(c: &pb::Cluster) -> bool {
    operation(c).state == pb::OperationState::Paused as i32
}

/// Every audit event of one cluster so far.
async fn audit_events(system: &System, cluster: &str) -> Vec<Value> {
    system.audit_events("acme", cluster).await
}

/// Waits until the cluster's audit trail has an event of `kind` (events are published just
/// after the state that caused them is written).
async fn audit_event(system: &System, cluster: &str, kind: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let events = audit_events(system, cluster).await;
        if let Some(e) = events.iter().find(|e| e["type"] == kind) {
            return e.clone();
        }
        let kinds: Vec<&Value> = events.iter().map(|e| &e["type"]).collect();
        assert!(
            Instant::now() < deadline,
            "no {kind} event for {cluster}; events: {kinds:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_silent_service_pauses_the_saga_and_an_operator_resumes_or_abandons_it() {
    let system = System::start().await;
    let mut acme = system.client("acme").await;

    // The dns service hangs: alive, but it takes no work.
    let dns = system.stop("dns-0");
    let op = system.create("acme", "stuck", 1).await;
    let paused = system
        .wait_until("acme", "stuck", "the operation to pause", is_paused)
        .await;
    let pause = operation(&paused).pause.expect("pause detail");
    let reason = pause.reason.clone().expect("pause reason");
    assert_eq!(reason.code, "LeaseExpired", "{pause:#?}");
    assert!(reason.step.starts_with("dns."), "{pause:#?}");
    assert!(pause.steps.contains(&reason.step), "{pause:#?}");
    assert!(pause.since.is_some(), "{pause:#?}");
    assert_eq!(
        phase(&paused),
        "provisioning",
        "a pause is not a failure: nothing is undone"
    );

    // An operator finds it among the paused operations; another tenant does not see it.
    let paused_ops = acme
        .list_operations(pb::ListOperationsRequest {
            state: pb::OperationState::Paused as i32,
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner();
    let listed = paused_ops
        .operations
        .iter()
        .find(|o| o.id == op.id)
        .expect("the paused operation is listed");
    assert_eq!(listed.cluster, "stuck");
    let listed_reason = listed.pause.as_ref().and_then(|p| p.reason.clone());
    assert_eq!(listed_reason.as_ref(), Some(&reason), "{listed:#?}");
    let running = acme
        .list_operations(pb::ListOperationsRequest {
            state: pb::OperationState::Running as i32,
            cluster: "stuck".into(),
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner();
    assert!(running.operations.is_empty(), "{running:#?}");
    let mut globex = system.client("globex").await;
    let theirs = globex
        .list_operations(pb::ListOperationsRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(theirs.operations.is_empty(), "{theirs:#?}");
    let err = globex
        .resume_operation(pb::ResumeOperationRequest {
            id: op.id.clone(),
            request_id: String::new(),
        })
        .await
        .expect_err("another tenant's operation");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    // A step the operation does not have is an invalid argument, named as such.
    let err = acme
        .retry_operation_step(pb::RetryOperationStepRequest {
            id: op.id.clone(),
            step: "dns.nope".into(),
            request_id: String::new(),
        })
        .await
        .expect_err("unknown step");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let bad = err.get_details_bad_request().expect("BadRequest");
    assert_eq!(bad.field_violations[0].field, "step");

    // The CLI shows why it is paused, and lists it.
    let out = hypersaga(&system, &["operation", "list", "--state", "paused"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&op.id) && text(&out).contains("LeaseExpired"),
        "{}",
        text(&out)
    );
    let out = hypersaga(&system, &["cluster", "get", "stuck"]);
    assert!(
        text(&out).contains("paused since") && text(&out).contains("LeaseExpired"),
        "{}",
        text(&out)
    );

    // The service comes back; the operator resumes the operation, and it finishes.
    dns.cont();
    let answer = acme
        .resume_operation(pb::ResumeOperationRequest {
            id: op.id.clone(),
            request_id: uuid::Uuid::new_v4().to_string(),
        })
        .await
        .expect("resume")
        .into_inner();
    assert_eq!(answer.id, op.id);
    let ready = system.watch_to_end("acme", "stuck").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    assert_eq!(operation(&ready).pause, None);

    // A call that does not apply any more is refused, with a reason programs can branch on.
    let err = acme
        .retry_operation_step(pb::RetryOperationStepRequest {
            id: op.id.clone(),
            step: reason.step.clone(),
            request_id: String::new(),
        })
        .await
        .expect_err("the operation has finished");
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    let info = err.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "OperationFinished");
    assert_eq!(info.domain, "hypersaga.io");
    let out = hypersaga(&system, &["operation", "retry-step", &op.id, &reason.step]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("OperationFinished"), "{}", text(&out));

    // Hung again: this time the operator gives up and keeps the record.
    let dns = system.stop("dns-0");
    let op2 = system.create("acme", "given-up", 1).await;
    system
        .wait_until("acme", "given-up", "the operation to pause", is_paused)
        .await;
    acme.abandon_operation(pb::AbandonOperationRequest {
        id: op2.id.clone(),
        request_id: String::new(),
    })
    .await
    .expect("abandon");
    let failed = system
        .wait_until("acme", "given-up", "the abandon to apply", |c| {
            phase(c) == "failed"
        })
        .await;
    let abandoned = operation(&failed);
    assert_eq!(
        abandoned.state,
        pb::OperationState::Failed as i32,
        "{failed:#?}"
    );
    assert_eq!(
        abandoned.error.as_ref().map(|e| e.code.as_str()),
        Some("Abandoned"),
        "{failed:#?}"
    );
    assert_eq!(
        failed
            .status
            .as_ref()
            .and_then(|s| s.error.as_ref())
            .map(|e| e.code.as_str()),
        Some("Abandoned")
    );
    dns.cont();
    // The record is kept: still there, still failed.
    let kept = acme
        .get_cluster(pb::GetClusterRequest {
            name: "given-up".into(),
        })
        .await
        .expect("the abandoned cluster is kept")
        .into_inner();
    assert_eq!(phase(&kept), "failed", "{kept:#?}");

    // Each call is on the audit stream, attributed to its caller.
    let resumed = audit_event(&system, "stuck", "operator.resume").await;
    assert_eq!(resumed["actor"], "tenant:acme", "{resumed}");
    assert_eq!(resumed["operation"], op.id.as_str(), "{resumed}");
    let paused_event = audit_event(&system, "stuck", "saga.paused").await;
    assert_eq!(
        paused_event["detail"]["reason"]["code"], "LeaseExpired",
        "{paused_event}"
    );
    let gave_up = audit_event(&system, "given-up", "operator.abandon").await;
    assert_eq!(gave_up["actor"], "tenant:acme", "{gave_up}");
    assert_eq!(gave_up["operation"], op2.id.as_str(), "{gave_up}");
}
