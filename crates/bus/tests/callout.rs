//! Tenants' audit readers on a real nats-server through the auth callout: hypersaga's own
//! roles connect as before, without the callout; a tenant's reader connects with the password
//! it was issued, reads its own audit events and nothing else, and loses its connection
//! within seconds once the tenant is suspended.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, push};
use async_nats::{ConnectErrorKind, Event};
use futures::StreamExt;
use hypersaga_bus::access::{self, Credentials, Role};
use hypersaga_bus::callout::{
    self, Authorize, ConnectRequest, Credential, Grant, Issuer, Refusal, Secret, SecretDigest,
};
use hypersaga_bus::{AUDIT_STREAM, Access, Bus};
use hypersaga_model::TenantId;
use hypersaga_procs::NatsCluster;
use tokio::sync::{mpsc, oneshot};

const PREFIX: &str = "hcp";

fn tenant(name: &str) -> TenantId {
    TenantId::new(name).unwrap()
}

/// The live tenant records, as far as the callout is concerned: each tenant's password digest
/// and whether it is suspended.
#[derive(Default)]
struct Tenants {
    records: Mutex<HashMap<TenantId, (SecretDigest, bool)>>,
    valid_for: Mutex<Option<Duration>>,
    asked: AtomicUsize,
    refusals: Mutex<Vec<Refusal>>,
}

impl Tenants {
    fn onboard(&self, tenant: &TenantId, secret: &Secret) {
        self.records
            .lock()
            .unwrap()
            .insert(tenant.clone(), (secret.digest(), false));
    }

    fn suspend(&self, tenant: &TenantId) {
        if let Some(record) = self.records.lock().unwrap().get_mut(tenant) {
            record.1 = true;
        }
    }

    fn grant_for(&self, valid_for: Duration) {
        *self.valid_for.lock().unwrap() = Some(valid_for);
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }

    fn refusals(&self) -> Vec<Refusal> {
        self.refusals.lock().unwrap().clone()
    }

    fn decide(&self, request: &ConnectRequest) -> Result<Grant, Refusal> {
        let Credential::Password { password, .. } = &request.credential else {
            return Err(Refusal::Unsupported("these"));
        };
        let tenant = request
            .credential
            .audit_tenant()
            .ok_or(Refusal::UnknownUser)?;
        let (digest, suspended) = *self
            .records
            .lock()
            .unwrap()
            .get(&tenant)
            .ok_or(Refusal::UnknownUser)?;
        if !digest.matches(password.expose()) {
            return Err(Refusal::WrongPassword(tenant));
        }
        if suspended {
            return Err(Refusal::Suspended(tenant));
        }
        let valid_for = self
            .valid_for
            .lock()
            .unwrap()
            .unwrap_or(Duration::from_secs(600));
        Ok(Grant::audit_reader(tenant, PREFIX, valid_for))
    }
}

#[async_trait::async_trait]
impl Authorize for Tenants {
    async fn authorize(&self, request: &ConnectRequest) -> Result<Grant, Refusal> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let decision = self.decide(request);
        if let Err(refusal) = &decision {
            self.refusals.lock().unwrap().push(refusal.clone());
        }
        decision
    }
}

/// A closed bus with two of hypersaga's roles (coordinator, DNS worker) and the callout, its
/// topology made by the coordinator, and the callout service answering for `tenants`.
struct System {
    nats: NatsCluster,
    creds: Vec<Credentials>,
    tenants: Arc<Tenants>,
    /// The callout service's connection (it also revokes).
    callout: async_nats::Client,
    stop_callout: Option<oneshot::Sender<()>>,
    callout_task: tokio::task::JoinHandle<Result<(), callout::ServeError>>,
    _dir: tempfile::TempDir,
}

impl System {
    async fn start() -> Self {
        Self::start_cluster(1).await
    }

    /// As [`System::start`], on `size` routed servers; hypersaga's roles and the callout
    /// service connect to the first.
    async fn start_cluster(size: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let static_roles = [Role::Coordinator, Role::Worker("dns".into()), Role::Callout];
        let creds: Vec<Credentials> = access::generate()
            .unwrap()
            .into_iter()
            .filter(|c| static_roles.contains(&c.role))
            .collect();
        let users: Vec<(String, Role)> = creds
            .iter()
            .map(|c| (c.public_key.clone(), c.role.clone()))
            .collect();
        let issuer = Issuer::generate();
        let config = access::authorization_block(PREFIX, &users, &issuer.public_key());
        let nats = NatsCluster::start_with_config(dir.path(), size, &config)
            .await
            .expect("nats-server");
        let url = nats.servers()[0].url();

        let access = |role: &Role| access_of(&creds, role);
        // The coordinator makes the streams, the audit stream among them.
        Bus::connect_as(
            url,
            PREFIX,
            &Role::Coordinator,
            &access(&Role::Coordinator),
            1,
        )
        .await
        .expect("the coordinator connects");

        let callout = hypersaga_bus::client_as(url, &Role::Callout, &access(&Role::Callout))
            .await
            .expect("the callout service connects");
        let tenants = Arc::new(Tenants::default());
        let listener = callout::listen(callout.clone(), issuer, tenants.clone())
            .await
            .expect("the callout service subscribes");
        let (stop, stopped) = oneshot::channel::<()>();
        let callout_task = tokio::spawn(listener.run(async {
            let _ = stopped.await;
        }));
        Self {
            nats,
            creds,
            tenants,
            callout,
            stop_callout: Some(stop),
            callout_task,
            _dir: dir,
        }
    }

    fn url(&self, server: usize) -> &str {
        self.nats.servers()[server].url()
    }

    fn access(&self, role: &Role) -> Access {
        access_of(&self.creds, role)
    }

    async fn bus(&self, role: Role) -> Bus {
        Bus::connect_as(self.url(0), PREFIX, &role, &self.access(&role), 1)
            .await
            .expect("a static role connects")
    }

    /// A tenant's reader connecting as `hypersaga audit tail` would, its connection's events
    /// sent to the returned channel.
    async fn reader(
        &self,
        tenant: &TenantId,
        password: &str,
    ) -> Result<(async_nats::Client, mpsc::UnboundedReceiver<Event>), async_nats::ConnectError>
    {
        self.reader_on(0, tenant, password).await
    }

    /// As [`System::reader`], connected to server `server` of the cluster.
    async fn reader_on(
        &self,
        server: usize,
        tenant: &TenantId,
        password: &str,
    ) -> Result<(async_nats::Client, mpsc::UnboundedReceiver<Event>), async_nats::ConnectError>
    {
        let role = Role::Audit(Some(tenant.clone()));
        let (events, seen) = mpsc::unbounded_channel();
        async_nats::ConnectOptions::new()
            .user_and_password(role.name(), password.to_owned())
            .custom_inbox_prefix(role.inbox_prefix())
            .connection_timeout(Duration::from_secs(5))
            .event_callback(move |event| {
                let events = events.clone();
                async move {
                    let _ = events.send(event);
                }
            })
            .connect(self.url(server))
            .await
            .map(|client| (client, seen))
    }

    async fn stop_callout(&mut self) {
        if let Some(stop) = self.stop_callout.take() {
            let _ = stop.send(());
        }
        (&mut self.callout_task)
            .await
            .unwrap()
            .expect("the callout service stops cleanly");
        // The subscription is gone from the server once this round trip is done.
        self.callout.flush().await.unwrap();
    }
}

/// The credentials of a static role.
fn access_of(creds: &[Credentials], role: &Role) -> Access {
    Access {
        nkey_seed: creds
            .iter()
            .find(|c| &c.role == role)
            .map(|c| c.seed.clone()),
        ..Access::default()
    }
}

/// Creates a named consumer of the audit stream filtered to `filter`, as `audit tail` does;
/// `Err` if the server did not allow it within a few seconds.
async fn audit_consumer(
    client: &async_nats::Client,
    filter: &str,
) -> Result<async_nats::jetstream::consumer::Consumer<push::OrderedConfig>, String> {
    let js = async_nats::jetstream::new(client.clone());
    let attempt = async {
        let stream = js
            .get_stream(AUDIT_STREAM)
            .await
            .map_err(|e| e.to_string())?;
        stream
            .create_consumer(push::OrderedConfig {
                name: Some(format!("peek-{}", PEEKS.fetch_add(1, Ordering::SeqCst))),
                deliver_subject: client.new_inbox(),
                filter_subject: filter.to_owned(),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())
    };
    tokio::time::timeout(Duration::from_secs(5), attempt)
        .await
        .map_err(|_| "no answer".to_owned())?
}

/// Numbers the test's consumers (each named, as the server requires to check its filter).
static PEEKS: AtomicUsize = AtomicUsize::new(0);

/// The next server error the client was told of, within a few seconds.
async fn server_error(events: &mut mpsc::UnboundedReceiver<Event>) -> Option<String> {
    let wait = async {
        while let Some(event) = events.recv().await {
            if let Event::ServerError(e) = event {
                return Some(e.to_string());
            }
        }
        None
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn hypersagas_roles_connect_without_the_callout_and_keep_their_permissions() {
    let system = System::start().await;

    let worker = system.bus(Role::Worker("dns".into())).await;
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
        tokio::time::timeout(Duration::from_secs(5), forged)
            .await
            .map_or(true, |r| r.is_err()),
        "a worker published another service's event"
    );

    assert_eq!(
        system.tenants.asked(),
        0,
        "a static role was sent to the callout"
    );
}

#[tokio::test]
async fn a_tenants_reader_reads_its_own_audit_events_and_nothing_else() {
    let system = System::start().await;
    let (acme, secret) = (tenant("acme"), Secret::generate());
    system.tenants.onboard(&acme, &secret);
    let coordinator = system.bus(Role::Coordinator).await;
    coordinator
        .jetstream()
        .publish(
            "hcp.acme.audit.demo",
            r#"{"type":"cluster.created"}"#.into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();

    let (reader, mut events) = system
        .reader(&acme, secret.expose())
        .await
        .expect("acme's reader connects with its password");
    assert_eq!(system.tenants.asked(), 1);

    // Its own audit events: there, and readable.
    let consumer = audit_consumer(&reader, "hcp.acme.audit.>")
        .await
        .expect("acme's reader follows acme's audit events");
    let mut messages = consumer.messages().await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), messages.next())
        .await
        .expect("an audit event in time")
        .unwrap()
        .unwrap();
    assert_eq!(first.subject.as_str(), "hcp.acme.audit.demo");

    // Another tenant's: refused.
    assert!(
        audit_consumer(&reader, "hcp.globex.audit.>").await.is_err(),
        "acme's reader read globex's audit events"
    );
    while events.try_recv().is_ok() {}

    // And it publishes nothing but its reads: a step's event is refused by the server.
    reader
        .publish("hcp.acme.evt.dns", "{}".into())
        .await
        .unwrap();
    reader.flush().await.unwrap();
    let error = server_error(&mut events).await.expect("the server objects");
    assert!(
        error.contains("Permissions Violation for Publish to \"hcp.acme.evt.dns\""),
        "{error}"
    );
    reader
        .publish("$JS.API.STREAM.DELETE.HCP_AUDIT", "".into())
        .await
        .unwrap();
    reader.flush().await.unwrap();
    let error = server_error(&mut events).await.expect("the server objects");
    assert!(
        error.contains("Permissions Violation for Publish"),
        "{error}"
    );
}

#[tokio::test]
async fn a_wrong_password_or_an_unknown_tenant_is_refused() {
    let system = System::start().await;
    let acme = tenant("acme");
    system.tenants.onboard(&acme, &Secret::generate());

    let wrong = system.reader(&acme, "not the password").await;
    assert!(
        matches!(&wrong, Err(e) if e.kind() == ConnectErrorKind::AuthorizationViolation),
        "{:?}",
        wrong.map(|_| ())
    );
    let unknown = system.reader(&tenant("initech"), "anything").await;
    assert!(matches!(&unknown, Err(e) if e.kind() == ConnectErrorKind::AuthorizationViolation));
    assert_eq!(
        system.tenants.refusals(),
        vec![Refusal::WrongPassword(acme), Refusal::UnknownUser]
    );
}

#[tokio::test]
async fn a_suspended_tenant_loses_its_connection_within_seconds_and_cannot_come_back() {
    let system = System::start().await;
    let (acme, secret) = (tenant("acme"), Secret::generate());
    system.tenants.onboard(&acme, &secret);
    let (reader, _events) = system.reader(&acme, secret.expose()).await.unwrap();
    // Another tenant's reader, which the revocation leaves alone.
    let (globex, globex_secret) = (tenant("globex"), Secret::generate());
    system.tenants.onboard(&globex, &globex_secret);
    let (bystander, _) = system
        .reader(&globex, globex_secret.expose())
        .await
        .unwrap();

    // The admin API suspends acme: the records say so at once, then the gateway revokes.
    system.tenants.suspend(&acme);
    let started = std::time::Instant::now();
    let revoked = callout::revoke(&system.callout, &acme)
        .await
        .expect("revoke");
    assert_eq!((revoked.servers, revoked.closed), (1, 1));

    let closed = async {
        while reader.connection_state() == async_nats::connection::State::Connected {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("acme's connection closed within seconds");
    assert!(started.elapsed() < Duration::from_secs(5));

    // The client tries to come back at once, and is refused; so is a new connection.
    let refused_again = async {
        while !system
            .tenants
            .refusals()
            .contains(&Refusal::Suspended(acme.clone()))
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), refused_again)
        .await
        .expect("the reader's reconnection was refused");
    let again = system.reader(&acme, secret.expose()).await;
    assert!(matches!(&again, Err(e) if e.kind() == ConnectErrorKind::AuthorizationViolation));
    assert_ne!(
        reader.connection_state(),
        async_nats::connection::State::Connected
    );

    assert_eq!(
        bystander.connection_state(),
        async_nats::connection::State::Connected
    );
    bystander
        .flush()
        .await
        .expect("globex's reader is still on");
}

#[tokio::test]
async fn a_grant_expires_and_the_reader_is_let_in_again_without_noticing() {
    let system = System::start().await;
    let (acme, secret) = (tenant("acme"), Secret::generate());
    system.tenants.onboard(&acme, &secret);
    system.tenants.grant_for(Duration::from_secs(2));

    let (reader, mut events) = system.reader(&acme, secret.expose()).await.unwrap();
    assert_eq!(system.tenants.asked(), 1);

    // The server closes the connection when the user JWT expires…
    let error = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(Event::ServerError(e)) = events.recv().await {
                break e.to_string();
            }
        }
    })
    .await
    .expect("the server ends the connection at the grant's end");
    assert!(error.to_lowercase().contains("expired"), "{error}");

    // …and the client reconnects, asked about again and let in.
    let back = async {
        while system.tenants.asked() < 2
            || reader.connection_state() != async_nats::connection::State::Connected
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), back)
        .await
        .expect("the reader is back");
    reader.flush().await.unwrap();
}

#[tokio::test]
async fn without_the_callout_service_readers_cannot_connect_but_hypersaga_can() {
    let mut system = System::start().await;
    let (acme, secret) = (tenant("acme"), Secret::generate());
    system.tenants.onboard(&acme, &secret);
    system.stop_callout().await;

    let reader = system.reader(&acme, secret.expose()).await;
    assert!(
        reader.is_err(),
        "a reader connected with no callout service to let it in"
    );
    assert_eq!(system.tenants.asked(), 0);

    let worker = system.bus(Role::Worker("dns".into())).await;
    worker
        .jetstream()
        .publish("hcp.acme.evt.dns", "{}".into())
        .await
        .unwrap()
        .await
        .expect("hypersaga's roles carry on");
}

#[tokio::test]
async fn in_a_cluster_a_reader_on_any_server_is_let_in_and_revoked() {
    let system = System::start_cluster(3).await;
    let (acme, secret) = (tenant("acme"), Secret::generate());
    system.tenants.onboard(&acme, &secret);

    // The callout service is connected to the first server; the readers to the others.
    let (on_second, _) = system.reader_on(1, &acme, secret.expose()).await.unwrap();
    let (on_third, _) = system.reader_on(2, &acme, secret.expose()).await.unwrap();
    audit_consumer(&on_third, "hcp.acme.audit.>")
        .await
        .expect("acme's reader reads its audit events on any server");

    system.tenants.suspend(&acme);
    let revoked = callout::revoke(&system.callout, &acme)
        .await
        .expect("revoke");
    assert_eq!((revoked.servers, revoked.closed), (3, 2));
    let closed = async {
        while [&on_second, &on_third]
            .iter()
            .any(|r| r.connection_state() == async_nats::connection::State::Connected)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("both connections closed within seconds");
}

#[tokio::test]
async fn a_reader_connects_with_the_password_kept_in_its_credentials_directory() {
    let system = System::start().await;
    let (acme, secret) = (tenant("acme"), Secret::generate());
    system.tenants.onboard(&acme, &secret);
    // What the tenant was handed at onboarding, where `hypersaga audit tail` looks.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("audit-acme.secret"),
        format!("{}\n", secret.expose()),
    )
    .unwrap();
    let role = Role::Audit(Some(acme));
    let access = Access::for_role(Some(dir.path()), &role, None).unwrap();
    assert!(access.nkey_seed.is_none() && !access.is_open());

    let reader = hypersaga_bus::client_as(system.url(0), &role, &access)
        .await
        .unwrap();
    audit_consumer(&reader, "hcp.acme.audit.>")
        .await
        .expect("the reader follows its audit events");
}
