//! The shared budget against a real `nats-server` (one per test, in its own temp dir).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use async_nats::jetstream;
use hypersaga_pacer::{DEFAULT_BUCKET, Error, Pacer, Rate, Slot};
use hypersaga_procs::NatsServer;

const MS: i128 = 1_000_000;
const T0: i64 = 1_750_000_000_000_000_000;

/// A running server; dropping it kills the server, then removes its store.
struct Server {
    server: NatsServer,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = NatsServer::start(dir.path()).await.unwrap();
        Self { server, _dir: dir }
    }

    /// A new connection, as another replica would have.
    async fn jetstream(&self) -> jetstream::Context {
        jetstream::new(async_nats::connect(self.server.url()).await.unwrap())
    }

    async fn pacer(&self) -> Pacer {
        Pacer::new(self.jetstream().await, DEFAULT_BUCKET)
            .await
            .unwrap()
    }
}

/// A clock the test moves by hand.
#[derive(Clone)]
struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    fn new() -> Self {
        Self(Arc::new(AtomicI64::new(T0)))
    }

    fn advance(&self, d: Duration) {
        self.0
            .fetch_add(i64::try_from(d.as_nanos()).unwrap(), Ordering::SeqCst);
    }

    fn source(&self) -> impl Fn() -> i128 + Send + Sync + 'static {
        let now = self.0.clone();
        move || i128::from(now.load(Ordering::SeqCst))
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reservers_never_exceed_the_budget() {
    let server = Server::start().await;
    // Four replicas (connections), two busy tasks each: tasks of one replica queue locally,
    // replicas race through CAS.
    let mut replicas = Vec::new();
    for _ in 0..4 {
        replicas.push(server.pacer().await);
    }
    let rate = Rate::new(50.0, 20);
    let interval = 20 * MS;
    let key = "00000000-0000-0000-0000-000000000001.eastus.writes";

    let started = hypersaga_pacer::system_now();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let pacer = replicas[i % 4].clone();
            tokio::spawn(async move {
                let mut slots: Vec<Slot> = Vec::new();
                for _ in 0..25 {
                    slots.push(pacer.reserve_slot(key, rate, 1).await.unwrap());
                }
                slots
            })
        })
        .collect();
    let mut slots = Vec::new();
    for t in tasks {
        slots.extend(t.await.unwrap());
    }
    let finished = hypersaga_pacer::system_now();
    let mut at: Vec<i128> = slots.iter().map(|s| s.at_unix_nanos).collect();
    at.sort_unstable();
    assert_eq!(at.len(), 200);

    // In any window [a, b]: at most burst + rate × (b − a), with 1 ms of slack for the clock.
    let slack = MS;
    for i in 0..at.len() {
        for j in i..at.len() {
            let count = i128::try_from(j - i + 1).unwrap();
            let allowed = 20 + (at[j] - at[i] + slack) / interval;
            assert!(
                count <= allowed,
                "{count} slots within {} ms (allowed {allowed})",
                (at[j] - at[i]) / MS
            );
        }
    }
    // Nor is it needlessly slow: reserving ran far faster than the rate, so the slots are back
    // to back — the last one (200 − 20) intervals after the first burst.
    let span = at[199] - at[0];
    assert!(span >= 180 * interval - slack, "span {} ms", span / MS);
    assert!(
        span <= 180 * interval + (finished - started),
        "span {} ms",
        span / MS
    );
    // The first `burst` went at once, everyone else waits.
    assert!(
        slots.iter().filter(|s| s.wait.is_zero()).count()
            <= 20 + usize::try_from((finished - started) / interval).unwrap()
    );
}

#[tokio::test]
async fn two_replicas_share_one_budget() {
    let server = Server::start().await;
    let clock = ManualClock::new();
    // Two handles, two connections: two replicas (possibly of two services).
    let a = server.pacer().await.with_clock(clock.source());
    let b = server.pacer().await.with_clock(clock.source());
    let rate = Rate::new(10.0, 3);
    let key = "sub-1.westeurope.deletes";

    assert_eq!(a.reserve(key, rate, 1).await.unwrap(), ms(0));
    assert_eq!(b.reserve(key, rate, 1).await.unwrap(), ms(0));
    assert_eq!(a.reserve(key, rate, 1).await.unwrap(), ms(0));
    // The burst of 3 is spent between them: each replica now sees the other's reservations.
    assert_eq!(b.reserve(key, rate, 1).await.unwrap(), ms(100));
    assert_eq!(a.reserve(key, rate, 1).await.unwrap(), ms(200));
    assert_eq!(b.peek(key, rate).await.unwrap(), ms(300));

    // Other keys are other budgets.
    assert_eq!(
        b.reserve("sub-1.westeurope.writes", rate, 3).await.unwrap(),
        ms(0)
    );
    assert_eq!(
        a.reserve("sub-2.westeurope.deletes", rate, 3)
            .await
            .unwrap(),
        ms(0)
    );

    // Time passes for both: 250 ms later two of the three reserved slots have gone by.
    clock.advance(ms(250));
    assert_eq!(a.peek(key, rate).await.unwrap(), ms(50));
}

#[tokio::test]
async fn a_reservation_within_a_horizon_is_refused_beyond_it_and_takes_nothing() {
    let server = Server::start().await;
    let clock = ManualClock::new();
    let a = server.pacer().await.with_clock(clock.source());
    let b = server.pacer().await.with_clock(clock.source());
    let rate = Rate::new(10.0, 2);
    let key = "sub-1.eastus.deletes";
    let horizon = ms(250);

    // The burst, then slots 100 and 200 ms away, shared by two replicas.
    assert_eq!(
        a.reserve_within(key, rate, horizon).await.unwrap(),
        Ok(ms(0))
    );
    assert_eq!(
        b.reserve_within(key, rate, horizon).await.unwrap(),
        Ok(ms(0))
    );
    assert_eq!(
        a.reserve_within(key, rate, horizon).await.unwrap(),
        Ok(ms(100))
    );
    assert_eq!(
        b.reserve_within(key, rate, horizon).await.unwrap(),
        Ok(ms(200))
    );
    // The next slot is 300 ms away: refused, and refusing reserves nothing.
    for _ in 0..5 {
        assert_eq!(
            a.reserve_within(key, rate, horizon).await.unwrap(),
            Err(ms(300))
        );
    }
    assert_eq!(b.peek(key, rate).await.unwrap(), ms(300));
    // Once time has moved on, it is within the horizon again.
    clock.advance(ms(100));
    assert_eq!(
        b.reserve_within(key, rate, horizon).await.unwrap(),
        Ok(ms(200))
    );
}

/// Many requests of two replicas racing for one budget at the same instant: only the slots
/// within the horizon are handed out, however they interleave. (A peek, then a reserve, let
/// every one of them through, pushing the budget seconds ahead of the horizon.)
#[tokio::test]
async fn racing_reservers_never_push_the_budget_past_the_horizon() {
    let server = Server::start().await;
    let clock = ManualClock::new();
    let a = Arc::new(server.pacer().await.with_clock(clock.source()));
    let b = Arc::new(server.pacer().await.with_clock(clock.source()));
    let rate = Rate::new(10.0, 2);
    let key = "sub-1.eastus.deletes";
    let horizon = ms(250);
    let racers: Vec<_> = (0..40)
        .map(|i| {
            let pacer = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { pacer.reserve_within(key, rate, horizon).await.unwrap() })
        })
        .collect();
    let mut granted = Vec::new();
    for racer in racers {
        if let Ok(wait) = racer.await.unwrap() {
            granted.push(wait);
        }
    }
    granted.sort();
    // The burst of two now, then the slots 100 and 200 ms away; 300 ms is past the horizon.
    assert_eq!(granted, vec![ms(0), ms(0), ms(100), ms(200)]);
    assert_eq!(a.peek(key, rate).await.unwrap(), ms(300));
}

#[tokio::test]
async fn peek_does_not_consume() {
    let server = Server::start().await;
    let clock = ManualClock::new();
    let pacer = server.pacer().await.with_clock(clock.source());
    let rate = Rate::new(1.0, 2);
    let key = "sub-1.eastus.reads";

    for _ in 0..10 {
        assert_eq!(pacer.peek(key, rate).await.unwrap(), ms(0));
    }
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(0));
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(0));
    for _ in 0..10 {
        assert_eq!(pacer.peek(key, rate).await.unwrap(), ms(1_000));
    }
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(1_000));
    assert_eq!(pacer.peek(key, rate).await.unwrap(), ms(2_000));
}

#[tokio::test]
async fn arm_feedback_only_slows_the_budget_down() {
    let server = Server::start().await;
    let clock = ManualClock::new();
    let pacer = server.pacer().await.with_clock(clock.source());
    let rate = Rate::new(10.0, 10);
    let key = "sub-1.eastus.writes";

    // ARM reports more than we believe: nothing is written.
    assert!(!pacer.observe_remaining(key, rate, 199).await.unwrap());
    assert_eq!(pacer.peek(key, rate).await.unwrap(), ms(0));
    // ARM reports 2 left (other principals, other tools): two go now, the third waits.
    assert!(pacer.observe_remaining(key, rate, 2).await.unwrap());
    assert!(!pacer.observe_remaining(key, rate, 5).await.unwrap());
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(0));
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(0));
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(100));

    // A 429 with Retry-After: 6 — nothing before then, however full we thought the bucket.
    assert!(
        pacer
            .penalize(key, rate, Duration::from_secs(6))
            .await
            .unwrap()
    );
    assert!(
        !pacer
            .penalize(key, rate, Duration::from_secs(1))
            .await
            .unwrap()
    );
    assert_eq!(pacer.peek(key, rate).await.unwrap(), ms(6_000));
    clock.advance(ms(5_000));
    assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(1_000));
}

#[tokio::test]
async fn corrupt_state_is_reset_not_fatal() {
    let server = Server::start().await;
    let js = server.jetstream().await;
    let clock = ManualClock::new();
    let pacer = Pacer::new(js.clone(), "budgets_test")
        .await
        .unwrap()
        .with_clock(clock.source());
    let kv = js.get_key_value("budgets_test").await.unwrap();
    let rate = Rate::new(10.0, 2);

    for (key, junk) in [
        ("k.garbage", &b"not json"[..]),
        ("k.schema", br#"{"v":99,"tat":1}"#),
        ("k.negative", br#"{"v":1,"tat":-5}"#),
    ] {
        kv.put(key, junk.to_vec().into()).await.unwrap();
        assert_eq!(pacer.peek(key, rate).await.unwrap(), ms(0), "{key}");
        assert_eq!(pacer.reserve(key, rate, 2).await.unwrap(), ms(0), "{key}");
        assert_eq!(pacer.reserve(key, rate, 1).await.unwrap(), ms(100), "{key}");
    }
    // A deleted budget is a fresh one.
    kv.delete("k.garbage").await.unwrap();
    assert_eq!(pacer.reserve("k.garbage", rate, 2).await.unwrap(), ms(0));
}

#[tokio::test]
async fn bucket_creation_tolerates_a_concurrent_creator_and_bad_input_is_refused() {
    let server = Server::start().await;
    let (js1, js2) = (server.jetstream().await, server.jetstream().await);
    let (a, b) = tokio::join!(
        Pacer::new(js1, DEFAULT_BUCKET),
        Pacer::new(js2, DEFAULT_BUCKET)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.bucket(), b.bucket());
    let status = server
        .jetstream()
        .await
        .get_key_value(DEFAULT_BUCKET)
        .await
        .unwrap()
        .status()
        .await
        .unwrap();
    assert_eq!(status.history(), 1);

    let rate = Rate::new(10.0, 3);
    assert!(matches!(
        a.reserve("sub 1.eastus.writes", rate, 1).await,
        Err(Error::InvalidKey { .. })
    ));
    assert!(matches!(
        a.peek("sub.eastus.*", rate).await,
        Err(Error::InvalidKey { .. })
    ));
    assert!(matches!(
        a.reserve("k", rate, 4).await,
        Err(Error::Tokens { n: 4, burst: 3 })
    ));
    assert!(matches!(
        a.reserve("k", Rate::new(0.0, 3), 1).await,
        Err(Error::InvalidRate { .. })
    ));
    // `acquire` sleeps until the slot: the 4th of a 10/s burst-3 budget comes ~100 ms later.
    for _ in 0..3 {
        a.acquire("k", rate, 1).await.unwrap();
    }
    let t = std::time::Instant::now();
    b.acquire("k", rate, 1).await.unwrap();
    assert!(t.elapsed() >= ms(80), "{:?}", t.elapsed());
}
