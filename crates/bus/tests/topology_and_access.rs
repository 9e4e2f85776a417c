//! The bus on a real nats-server: the topology brought to this version's configuration, and
//! the closed bus refusing what a role may not do.

use std::time::Duration;

use async_nats::jetstream::stream;
use hypersaga_bus::access::{self, Role};
use hypersaga_bus::{AUDIT_STREAM, Access, Bus, DEAD_STREAM};
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
