//! Dead letters, as the platform team meets them: a command forged with another tenant in its
//! body is refused unread, listed with why and by which consumer, and purged; an input that
//! failed on every delivery (its saga record unreadable) is dead-lettered, and once the fault
//! is fixed it is redriven, acted on once, and cannot be redriven twice.

use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_bus::{Access, Role};
use serde_json::Value;

use crate::support::*;

/// A connection to the local system's bus as `role`, with its own credentials from the dev
/// state directory.
async fn connect_as(system: &System, role: &Role) -> async_nats::jetstream::Context {
    let e = &system.endpoints;
    let access = Access::for_role(e.nats_credentials_dir.as_deref(), role, Some(&e.ca_bundle))
        .expect("credentials of the role");
    let client = hypersaga_bus::client_as(&e.nats_url, role, &access)
        .await
        .expect("connect");
    async_nats::jetstream::new(client)
}

/// `hypersaga dead-letter list -o json` (with more arguments), as documents.
fn listed(system: &System, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["dead-letter", "list", "-o", "json"];
    args.extend_from_slice(extra);
    let out = hypersaga(system, &args);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice::<Vec<Value>>(&out.stdout)
        .unwrap_or_else(|e| panic!("not a JSON list ({e}): {}", text(&out)))
}

/// Waits until `dead-letter list` shows one dead letter `matches` accepts.
async fn dead_letter(system: &System, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let all = listed(system, &[]);
        if let Some(d) = all.iter().find(|d| matches(d)) {
            return d.clone();
        }
        assert!(Instant::now() < deadline, "no dead letter {what}: {all:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn is_paused(c: &pb::Cluster) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.operation.as_ref())
        .is_some_and(|o| o.state == pb::OperationState::Paused as i32)
}

#[tokio::test]
async fn a_forged_command_is_listed_and_purged_and_a_poison_input_is_redriven_once_fixed() {
    // Three failed deliveries make an input poison (0.5 s and 1 s apart), not 80.
    let system = System::start_with_env(&[], &[("HYPERSAGA_COORDINATOR__POISON_AFTER", "3")]).await;
    assert!(
        listed(&system, &[]).is_empty(),
        "a fresh system has no dead letter"
    );

    // A create whose DNS service hangs pauses; its DNS command waits in the queue.
    let dns = system.stop("dns-0");
    let op = system.create("acme", "stuck", 1).await;
    system
        .wait_until("acme", "stuck", "the operation to pause", is_paused)
        .await;

    // With the coordinator's credentials (it may send commands), a copy of that command whose
    // body names globex is sent on acme's DNS queue.
    let coordinator = connect_as(&system, &Role::Coordinator).await;
    let queued = coordinator
        .get_stream("HCP_CMD")
        .await
        .expect("command stream")
        .get_last_raw_message_by_subject("hcp.acme.cmd.dns")
        .await
        .expect("the DNS command waits in the queue");
    let mut forged: Value = serde_json::from_slice(&queued.payload).expect("a command");
    forged["tenant"] = "globex".into();
    coordinator
        .publish(
            "hcp.acme.cmd.dns",
            serde_json::to_vec(&forged).expect("json").into(),
        )
        .await
        .expect("publish")
        .await
        .expect("stored: the coordinator may send commands");
    dns.cont();

    // The DNS service refused it unread: listed, with why and by which consumer.
    let refused = dead_letter(&system, "refused by dns", |d| d["role"] == "dns").await;
    assert_eq!(refused["reason_code"], "disowned", "{refused:#}");
    assert_eq!(refused["tenant"], "acme", "{refused:#}");
    assert_eq!(refused["subject"], "hcp.acme.cmd.dns", "{refused:#}");
    assert_eq!(refused["consumer"], "svc-dns-acme", "{refused:#}");
    assert_eq!(refused["redrivable"], false, "{refused:#}");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("globex"),
        "{refused:#}"
    );
    let seq = refused["sequence"].as_u64().expect("sequence").to_string();
    let table = hypersaga(
        &system,
        &["dead-letter", "list", "--tenant", "acme", "-o", "wide"],
    );
    let shown = text(&table);
    assert!(table.status.success(), "{shown}");
    let row = shown
        .lines()
        .find(|l| l.split_whitespace().next() == Some(seq.as_str()))
        .unwrap_or_else(|| panic!("dead letter {seq} in the table: {shown}"));
    for cell in [
        "acme",
        "disowned",
        "dns",
        "hcp.acme.cmd.dns",
        "svc-dns-acme",
    ] {
        assert!(row.contains(cell), "{cell} in {row}");
    }
    assert!(
        listed(&system, &["--tenant", "globex"]).is_empty(),
        "filed under the subject's tenant, not the body's"
    );
    let detail = hypersaga(&system, &["dead-letter", "show", &seq]);
    assert!(detail.status.success(), "{}", text(&detail));
    assert!(
        text(&detail).contains("\"tenant\": \"globex\""),
        "the payload, as pretty JSON: {}",
        text(&detail)
    );
    // It would only be refused again: not redriven, purged.
    let again = hypersaga(&system, &["dead-letter", "redrive", &seq]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("refused again"), "{}", text(&again));
    let purged = hypersaga(&system, &["dead-letter", "purge", &seq]);
    assert!(purged.status.success(), "{}", text(&purged));
    assert_eq!(text(&purged).trim(), "purged 1 dead letter");
    let gone = hypersaga(&system, &["dead-letter", "show", &seq]);
    assert_eq!(gone.status.code(), Some(3), "{}", text(&gone));

    // A resume the gateway accepts, for a saga the coordinator then cannot read: the
    // coordinator is held while the resume is sent and the record broken.
    let held = system.stop("coordinator-0");
    let out = hypersaga(&system, &["operation", "resume", &op.id]);
    assert!(out.status.success(), "{}", text(&out));
    let sagas = coordinator
        .get_key_value("hcp_sagas")
        .await
        .expect("saga bucket");
    let key = format!("acme.{}", op.id);
    let good = sagas.get(&key).await.expect("read").expect("the saga");
    sagas
        .put(&key, "{not a saga".into())
        .await
        .expect("break the saga record");
    held.cont();
    let poison = dead_letter(&system, "of the resume", |d| {
        d["subject"] == "hcp.acme.saga.operate"
    })
    .await;
    assert_eq!(poison["reason_code"], "poison", "{poison:#}");
    assert_eq!(poison["role"], "coordinator", "{poison:#}");
    assert_eq!(poison["consumer"], "coordinator", "{poison:#}");
    assert_eq!(poison["deliveries"], 3, "{poison:#}");
    assert!(
        poison["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("unreadable"),
        "{poison:#}"
    );
    assert_eq!(poison["origin"]["stream"], "HCP_EVT", "{poison:#}");

    // The fault fixed, the resume is redriven: sent again where it came from, once.
    sagas
        .put(&key, good)
        .await
        .expect("restore the saga record");
    let seq = poison["sequence"].as_u64().expect("sequence").to_string();
    let redriven = hypersaga(&system, &["dead-letter", "redrive", &seq, "-o", "json"]);
    assert!(redriven.status.success(), "{}", text(&redriven));
    let answer: Value = serde_json::from_slice(&redriven.stdout).expect("json");
    assert_eq!(answer["done"], true, "{answer:#}");
    assert_eq!(answer["subject"], "hcp.acme.saga.operate", "{answer:#}");
    assert_eq!(
        answer["msg_id"],
        format!("HCP_DEAD:{seq}:redrive"),
        "{answer:#}"
    );
    let twice = hypersaga(&system, &["dead-letter", "redrive", &seq]);
    assert_eq!(twice.status.code(), Some(3), "{}", text(&twice));

    let ready = system.watch_to_end("acme", "stuck").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let events = system.audit_events("acme", "stuck").await;
    let resumes = events
        .iter()
        .filter(|e| e["type"] == "operator.resume")
        .count();
    assert_eq!(resumes, 1, "the resume acted on once: {events:#?}");

    // Each admin action is on the tenant's audit stream, with the admin as actor.
    let admin: Vec<Value> = system
        .audit_events("acme", "_tenant")
        .await
        .into_iter()
        .filter(|e| {
            e["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("dead_letter."))
        })
        .collect();
    let kinds: Vec<&str> = admin.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["dead_letter.purged", "dead_letter.redriven"],
        "{admin:#?}"
    );
    assert!(
        admin
            .iter()
            .all(|e| e["actor"].as_str().is_some_and(|a| a.starts_with("admin:"))),
        "{admin:#?}"
    );
    assert_eq!(admin[1]["detail"]["subject"], "hcp.acme.saga.operate");

    // Whatever else the broken record made fail (its timer's ticks) goes with one purge.
    let all = hypersaga(&system, &["dead-letter", "purge", "--all", "-o", "json"]);
    assert!(all.status.success(), "{}", text(&all));
    let purged: Value = serde_json::from_slice(&all.stdout).expect("json");
    assert!(purged["purged"].is_u64(), "{purged}");
    assert!(listed(&system, &[]).is_empty(), "nothing is left");
}
