//! The bus is closed: each role reads and writes only what it must, and a message's body is
//! believed only where its subject (what permissions vouch for) agrees.

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, push};
use futures::StreamExt;
use hypersaga_bus::{Access, Action, ENVELOPE_VERSION, Outcome, Role, StepError, StepEvent};
use hypersaga_model::TenantId;
use serde_json::Value;

use crate::support::*;

/// A connection to the local system's bus as `role`, with its own credentials.
async fn connect_as(system: &System, role: &Role) -> async_nats::jetstream::Context {
    let e = &system.endpoints;
    let access = Access::for_role(e.nats_credentials_dir.as_deref(), role, Some(&e.ca_bundle))
        .expect("credentials of the role");
    let client = hypersaga_bus::client_as(&e.nats_url, role, &access)
        .await
        .expect("connect");
    async_nats::jetstream::new(client)
}

/// A terminal failure report of `step` as its service would send it, for the operation `op`.
fn forged_failure(op: &str, cluster: &str, step: &str, attempt: u32) -> Vec<u8> {
    let event = StepEvent {
        v: ENVELOPE_VERSION,
        saga_id: op.to_owned(),
        tenant: TenantId::new("acme").unwrap(),
        cluster: cluster.to_owned(),
        step: step.to_owned(),
        action: Action::Do,
        attempt,
        fence: 0,
        outcome: Outcome::Failed {
            error: StepError::terminal("Forged", "forged by a test"),
        },
        time: time::OffsetDateTime::now_utc(),
    };
    serde_json::to_vec(&event).expect("json")
}

#[tokio::test]
async fn an_audit_reader_can_neither_forge_events_nor_read_another_tenants_audit() {
    let system = System::start().await;
    system.create("acme", "demo", 1).await;
    let acme = TenantId::new("acme").unwrap();
    let globex = TenantId::new("globex").unwrap();

    // acme's audit reader follows acme's audit events, as it may.
    let reader = connect_as(&system, &Role::Audit(Some(acme.clone()))).await;
    let started: Value = {
        let consumer = system.audit_feed("acme", Some("demo"), true).await;
        let mut messages = consumer.messages().await.expect("messages");
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(60), messages.next())
                .await
                .expect("an audit event in time")
                .expect("some")
                .expect("ok");
            let ev: Value = serde_json::from_slice(&msg.payload).expect("json");
            if ev["type"] == "step.started" {
                break ev;
            }
        }
    };

    // From what it read it builds a step's terminal failure, and the server refuses to take it.
    let step = started["step"].as_str().expect("step");
    let service = step.split('.').next().unwrap();
    let op = started["operation"].as_str().expect("operation");
    let attempt = started["attempt"].as_u64().unwrap_or(1) as u32;
    let forged = reader
        .publish(
            format!("hcp.acme.evt.{service}"),
            forged_failure(op, "demo", step, attempt).into(),
        )
        .await;
    let stored = match forged {
        Ok(ack) => tokio::time::timeout(Duration::from_secs(10), ack)
            .await
            .map(|r| r.is_ok())
            .unwrap_or(false),
        Err(_) => false,
    };
    assert!(!stored, "an audit reader's forged event was stored");

    // Nor may it read another tenant's audit events.
    let stream = reader.get_stream("HCP_AUDIT").await.expect("audit stream");
    let peek = tokio::time::timeout(
        Duration::from_secs(10),
        stream.create_consumer(push::OrderedConfig {
            name: Some("peek".into()),
            deliver_subject: "_INBOX_audit-acme.peek".into(),
            filter_subject: format!("hcp.{globex}.audit.>"),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        }),
    )
    .await;
    assert!(
        !matches!(peek, Ok(Ok(_))),
        "acme's audit reader read globex's audit stream"
    );

    // A worker may report only on its own steps: the DNS service's credentials, used to fail
    // a control-plane step, are dead-lettered by the coordinator, never acted on.
    let dns = connect_as(&system, &Role::Worker("dns".into())).await;
    dns.publish(
        "hcp.acme.evt.dns",
        forged_failure(op, "demo", "controlplane.hostedcluster", 1).into(),
    )
    .await
    .expect("publish")
    .await
    .expect("stored: the DNS service may send events");

    let ready = system.watch_to_end("acme", "demo").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");

    let admin = connect_as(&system, &Role::Coordinator).await;
    let dead = admin
        .get_stream("HCP_DEAD")
        .await
        .expect("dead-letter stream")
        .get_last_raw_message_by_subject("hcp.acme.dead.coordinator")
        .await
        .expect("the forged event was dead-lettered");
    let headers = dead.headers;
    let reason = headers
        .get(hypersaga_bus::DEAD_REASON_HEADER)
        .map(|v| v.as_str().to_owned())
        .unwrap_or_default();
    assert!(
        reason.contains("controlplane") && reason.contains("dns"),
        "why it was refused: {reason}"
    );
}
