//! The bus on a real nats-server: the topology brought to this version's configuration, and
//! the closed bus refusing what a role may not do.

use std::time::Duration;

use async_nats::jetstream::stream;
use hypersaga_bus::access::{self, Role};
use hypersaga_bus::{AUDIT_STREAM, Access, Bus, DEAD_STREAM, DeadCode, Redriven, Refused};
use hypersaga_procs::NatsServer;

#[tokio::test]
async fn an_existing_stream_is_brought_to_this_versions_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let nats = NatsServer::start(dir.path()).await.expect("nats-server");
    // An older version's audit stream: a week's retention.
    let client = async_nats::connect(nats.url()).await.unwrap();
    let js = async_nats::jetstream::new(client);
    js.create_stream(stream::Config {
        name: AUDIT_STREAM.into(),
        subjects: vec!["hcp.*.audit.>".into()],
        max_age: Duration::from_secs(7 * 24 * 3600),
        ..Default::default()
    })
    .await
    .unwrap();

    Bus::connect(nats.url(), "test", "hcp")
        .await
        .expect("connect");

    let mut audit = js.get_stream(AUDIT_STREAM).await.unwrap();
    let config = audit.info().await.unwrap().config.clone();
    assert_eq!(config.max_age, Duration::from_secs(400 * 24 * 3600));
    js.get_stream(DEAD_STREAM)
        .await
        .expect("the dead-letter stream is made");
}

#[tokio::test]
async fn a_role_waits_for_the_coordinator_and_may_do_only_what_it_is_granted() {
    let dir = tempfile::tempdir().unwrap();
    let creds = access::generate().unwrap();
    let users: Vec<(String, Role)> = creds
        .iter()
        .map(|c| (c.public_key.clone(), c.role.clone()))
        .collect();
    let issuer = hypersaga_bus::callout::Issuer::generate().public_key();
    let config = access::authorization_block("hcp", &users, &issuer);
    let nats = NatsServer::start_with_config(dir.path(), &config)
        .await
        .expect("nats-server");
    let access_of = |role: &Role| Access {
        nkey_seed: creds
            .iter()
            .find(|c| &c.role == role)
            .map(|c| c.seed.clone()),
        ..Access::default()
    };

    // A worker started before the coordinator waits for the streams instead of failing.
    let url = nats.url().to_owned();
    let dns_access = access_of(&Role::Worker("dns".into()));
    let worker = tokio::spawn(async move {
        Bus::connect_as(&url, "hcp", &Role::Worker("dns".into()), &dns_access, 1).await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !worker.is_finished(),
        "the worker did not wait for the topology"
    );
    Bus::connect_as(
        nats.url(),
        "hcp",
        &Role::Coordinator,
        &access_of(&Role::Coordinator),
        1,
    )
    .await
    .expect("the coordinator makes the topology");
    let worker = tokio::time::timeout(Duration::from_secs(10), worker)
        .await
        .expect("the worker went on once the topology existed")
        .unwrap()
        .expect("worker connected");

    // Its own events go through; another service's are refused by the server.
    let js = worker.jetstream();
    js.publish("hcp.acme.evt.dns", "{}".into())
        .await
        .unwrap()
        .await
        .expect("a worker publishes its own events");
    let forged = async {
        js.publish("hcp.acme.evt.controlplane", "{}".into())
            .await?
            .await
            .map_err(async_nats::Error::from)
    };
    assert!(
        tokio::time::timeout(Duration::from_secs(10), forged)
            .await
            .map_or(true, |r| r.is_err()),
        "a worker published another service's event"
    );

    // Dead letters: the gateway lists and purges them, and sends no command or event (a
    // redrive is the coordinator's, which may send an event back).
    let gateway = Bus::connect_as(
        nats.url(),
        "hcp",
        &Role::Gateway,
        &access_of(&Role::Gateway),
        1,
    )
    .await
    .expect("the gateway connects");
    let refused = poison("hcp.acme.evt.dns", 3);
    let coordinator = Bus::connect_as(
        nats.url(),
        "hcp",
        &Role::Coordinator,
        &access_of(&Role::Coordinator),
        1,
    )
    .await
    .expect("the coordinator connects");
    coordinator
        .dead_letter(&refused)
        .await
        .expect("the coordinator dead-letters");
    let (listed, _) = gateway
        .dead_letters(Some("acme"), 1, 10)
        .await
        .expect("the gateway lists dead letters");
    assert_eq!(listed.len(), 1);
    gateway
        .request_redrive(&listed[0], "admin:test")
        .await
        .expect("the gateway asks for a redrive");
    // Both at once: a refused publish is only noticed when its ack times out.
    let forbidden = ["hcp.acme.cmd.dns", "hcp.acme.evt.dns"].map(|subject| {
        let js = gateway.jetstream().clone();
        async move {
            let sent = async {
                js.publish(subject, "{}".into())
                    .await?
                    .await
                    .map_err(async_nats::Error::from)
            };
            let stored = tokio::time::timeout(Duration::from_secs(10), sent)
                .await
                .is_ok_and(|r| r.is_ok());
            (subject, stored)
        }
    });
    for (subject, stored) in futures::future::join_all(forbidden).await {
        assert!(!stored, "the gateway published on {subject}");
    }
    assert_eq!(
        coordinator
            .redrive_dead_letter("acme", listed[0].sequence)
            .await
            .expect("the coordinator sends an event back"),
        Redriven::Sent {
            subject: "hcp.acme.evt.dns".into(),
            msg_id: hypersaga_bus::dead::redrive_msg_id(listed[0].sequence),
        }
    );
    coordinator
        .dead_letter(&poison("hcp.acme.saga.operate", 4))
        .await
        .unwrap();
    assert_eq!(
        gateway
            .purge_dead_letters(None)
            .await
            .expect("the gateway purges"),
        1
    );

    // Without credentials nobody gets in.
    let anonymous = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(2))
        .connect(nats.url())
        .await;
    assert!(anonymous.is_err(), "an anonymous client connected");
}

/// Every role that lists or watches a bucket does so through an ordered push consumer with
/// flow control: nats-server stops pushing once a few MB are unanswered, and the answer goes
/// to `$JS.FC.<stream>.…`. A role that may not publish there stalls for good at that point
/// (the coordinator's watch of the active index did, in its initial replay: one delete marker
/// per finished operation). So each listing and watch is run here on the closed bus through
/// more than that, as the role that does it.
#[tokio::test]
async fn listings_and_watches_keep_up_past_flow_control_on_the_closed_bus() {
    use futures::{StreamExt, TryStreamExt};
    use hypersaga_bus::{ACTIVE_BUCKET, CLUSTERS_BUCKET, SAGAS_BUCKET};

    let dir = tempfile::tempdir().unwrap();
    let creds = access::generate().unwrap();
    let users: Vec<(String, Role)> = creds
        .iter()
        .map(|c| (c.public_key.clone(), c.role.clone()))
        .collect();
    let issuer = hypersaga_bus::callout::Issuer::generate().public_key();
    let config = access::authorization_block("hcp", &users, &issuer);
    let nats = NatsServer::start_with_config(dir.path(), &config)
        .await
        .expect("nats-server");
    let connect = |role: Role| {
        let access = Access {
            nkey_seed: creds
                .iter()
                .find(|c| c.role == role)
                .map(|c| c.seed.clone()),
            ..Access::default()
        };
        let url = nats.url().to_owned();
        async move {
            Bus::connect_as(&url, "hcp", &role, &access, 1)
                .await
                .expect("connect")
        }
    };
    let coordinator = connect(Role::Coordinator).await;
    let gateway = connect(Role::Gateway).await;

    // 4 MB in each bucket: 2,000 keys of 2 KB values, each key about 1 KB long (a listing
    // sends keys only).
    const KEYS: usize = 2_000;
    let pad = "k".repeat(1_000);
    let value = bytes::Bytes::from(vec![b'x'; 2_000]);
    for bucket in [ACTIVE_BUCKET, SAGAS_BUCKET, CLUSTERS_BUCKET] {
        let js = coordinator.jetstream();
        let mut acks = Vec::with_capacity(KEYS);
        for i in 0..KEYS {
            let subject = format!("$KV.{bucket}.acme.{pad}{i:05}");
            acks.push(js.publish(subject, value.clone()).await.expect("publish"));
            if acks.len() == 256 {
                for ack in acks.drain(..) {
                    ack.await.expect("stored");
                }
            }
        }
        for ack in acks {
            ack.await.expect("stored");
        }
    }

    let in_time = Duration::from_secs(30);
    let listed = |bus: Bus, bucket: &'static str| async move {
        let store = bus.jetstream().get_key_value(bucket).await.expect("bucket");
        let keys: Vec<String> = tokio::time::timeout(in_time, async {
            store.keys().await.expect("keys").try_collect().await
        })
        .await
        .unwrap_or_else(|_| panic!("listing {bucket} stalled"))
        .expect("listing");
        keys.len()
    };
    let watched = |bus: Bus, bucket: &'static str| async move {
        let store = bus.jetstream().get_key_value(bucket).await.expect("bucket");
        let mut watch = store.watch_with_history(">").await.expect("watch");
        let mut seen = 0;
        while seen < KEYS {
            match tokio::time::timeout(in_time, watch.next()).await {
                Ok(Some(Ok(_))) => seen += 1,
                Ok(other) => panic!("the watch of {bucket} ended: {other:?}"),
                Err(_) => panic!("the watch of {bucket} stalled after {seen} entries"),
            }
        }
        seen
    };
    // The coordinator follows the active index and lists every bucket in its resync.
    assert_eq!(watched(coordinator.clone(), ACTIVE_BUCKET).await, KEYS);
    for bucket in [ACTIVE_BUCKET, SAGAS_BUCKET, CLUSTERS_BUCKET] {
        assert_eq!(listed(coordinator.clone(), bucket).await, KEYS);
    }
    // The gateway watches cluster records (WatchCluster) and lists its tenants' records.
    assert_eq!(watched(gateway.clone(), CLUSTERS_BUCKET).await, KEYS);
    assert_eq!(watched(gateway.clone(), SAGAS_BUCKET).await, KEYS);
}

/// A coordinator's input given up on after `deliveries`, read as the `origin`-th message of
/// `HCP_EVT`.
fn poison(subject: &str, origin: u64) -> Refused {
    Refused {
        role: Role::Coordinator,
        subject: subject.into(),
        payload: bytes::Bytes::from_static(br#"{"v":1,"saga_id":"op-1"}"#),
        code: DeadCode::Poison,
        reason: "not processed after 3 deliveries: saga record acme.op-1 is unreadable".into(),
        consumer: Some("coordinator".into()),
        origin: Some(("HCP_EVT".into(), origin)),
        deliveries: Some(3),
        msg_id: Some(format!("op-1:operate:{origin}")),
        trace_parent: None,
    }
}

/// How many messages `HCP_EVT` holds on `subject`.
async fn stored_on(bus: &Bus, subject: &str) -> usize {
    use futures::TryStreamExt;
    let stream = bus.jetstream().get_stream("HCP_EVT").await.unwrap();
    let per_subject: Vec<(String, usize)> = stream
        .info_with_subjects(subject)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    per_subject.into_iter().map(|(_, n)| n).sum()
}

/// A redrive sends a dead letter again once: when its redriver died between the publish and
/// the delete (the publish is de-duplicated), and when it is asked again (it is gone). A
/// refusal repeated for the same delivery is kept once. Listing pages and filters by tenant;
/// purging counts.
#[tokio::test]
async fn a_dead_letter_is_redriven_once_however_often_it_is_asked() {
    use async_nats::HeaderMap;

    let dir = tempfile::tempdir().unwrap();
    let nats = NatsServer::start(dir.path()).await.expect("nats-server");
    let bus = Bus::connect(nats.url(), "test", "hcp").await.unwrap();
    let refused = poison("hcp.acme.saga.operate", 7);
    bus.dead_letter(&refused).await.unwrap();
    bus.dead_letter(&refused).await.unwrap();
    bus.dead_letter(&poison("hcp.acme.saga.operate", 8))
        .await
        .unwrap();
    bus.dead_letter(&poison("hcp.globex.saga.operate", 9))
        .await
        .unwrap();

    let (first, next) = bus.dead_letters(Some("acme"), 1, 1).await.unwrap();
    assert_eq!(first.len(), 1, "a repeated refusal is kept once");
    let next = next.expect("a second page");
    let (second, last) = bus.dead_letters(Some("acme"), next, 1).await.unwrap();
    assert_eq!((second.len(), last), (1, None));
    assert_eq!(first[0].origin, Some(("HCP_EVT".into(), 7)));
    assert_eq!(second[0].origin, Some(("HCP_EVT".into(), 8)));
    let (all, _) = bus.dead_letters(None, 1, 10).await.unwrap();
    assert_eq!(all.len(), 3);
    let counts = bus.dead_letter_counts().await.unwrap();
    assert_eq!(counts.get("acme"), Some(&2));
    assert_eq!(counts.get("globex"), Some(&1));

    // The redriver published, then died before deleting the dead letter.
    let seq = first[0].sequence;
    let mut headers = HeaderMap::new();
    headers.insert(
        async_nats::header::NATS_MESSAGE_ID,
        hypersaga_bus::dead::redrive_msg_id(seq).as_str(),
    );
    bus.jetstream()
        .publish_with_headers("hcp.acme.saga.operate", headers, first[0].payload.clone())
        .await
        .unwrap()
        .await
        .unwrap();
    // Another replica takes the request over: the same message id, so one message.
    assert!(matches!(
        bus.redrive_dead_letter("acme", seq).await.unwrap(),
        Redriven::Sent { .. }
    ));
    assert_eq!(stored_on(&bus, "hcp.acme.saga.operate").await, 1);
    assert_eq!(bus.dead_letter_at(seq).await.unwrap(), None);
    // Asked again: it is gone, and nothing more is sent.
    assert_eq!(
        bus.redrive_dead_letter("acme", seq).await.unwrap(),
        Redriven::Gone
    );
    assert_eq!(stored_on(&bus, "hcp.acme.saga.operate").await, 1);
    // Not another tenant's, whatever the request says.
    assert!(matches!(
        bus.redrive_dead_letter("acme", all[2].sequence)
            .await
            .unwrap(),
        Redriven::Refused(_)
    ));

    // What was sent is the dead letter's payload, as it was first sent.
    let sent = bus
        .jetstream()
        .get_stream("HCP_EVT")
        .await
        .unwrap()
        .get_last_raw_message_by_subject("hcp.acme.saga.operate")
        .await
        .unwrap();
    assert_eq!(sent.payload, first[0].payload);

    assert!(bus.delete_dead_letter(second[0].sequence).await.unwrap());
    assert!(!bus.delete_dead_letter(second[0].sequence).await.unwrap());
    assert_eq!(bus.purge_dead_letters(Some("acme")).await.unwrap(), 0);
    assert_eq!(bus.purge_dead_letters(None).await.unwrap(), 1);
    assert!(bus.dead_letters(None, 1, 10).await.unwrap().0.is_empty());
}
