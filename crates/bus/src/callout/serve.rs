//! The callout service on NATS: a queue subscription to the server's authorization requests
//! (so any number of gateway replicas share them, each request answered by one), each request
//! answered on its reply subject by a [`Responder`].

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt as _;

use super::answer::{Outcome, Responder};
use super::authorize::Authorize;
use super::issuer::Issuer;

/// Where the server sends authorization requests (in the account the callout is configured
/// for: the system account).
pub const AUTH_SUBJECT: &str = "$SYS.REQ.USER.AUTH";
/// The queue group of every replica of the callout service.
pub const QUEUE_GROUP: &str = "hypersaga-callout";
/// Requests answered at once by one replica (each waits on the authorizer, a KV read).
const CONCURRENCY: usize = 64;

/// Why the callout service stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot subscribe to {AUTH_SUBJECT}")]
    Subscribe(#[source] async_nats::SubscribeError),
    #[error("cannot reach the server to confirm the subscription")]
    Flush(#[source] async_nats::client::FlushError),
    #[error("the connection closed: the callout service no longer receives requests")]
    Closed,
}

/// The service subscribed: from the moment this exists the server's requests reach it (they
/// queue in the subscription until [`Listener::run`]).
pub struct Listener {
    client: async_nats::Client,
    requests: async_nats::Subscriber,
    responder: Arc<Responder>,
}

/// Subscribes to the server's requests as `issuer`, deciding with `authorizer`, on `client`
/// (a connection as [`crate::Role::Callout`]).
pub async fn listen(
    client: async_nats::Client,
    issuer: Issuer,
    authorizer: Arc<dyn Authorize>,
) -> Result<Listener, ServeError> {
    let requests = client
        .queue_subscribe(AUTH_SUBJECT, QUEUE_GROUP.to_owned())
        .await
        .map_err(ServeError::Subscribe)?;
    // Once flushed, the server has the subscription: a connection attempted from now on is
    // asked about here.
    client.flush().await.map_err(ServeError::Flush)?;
    Ok(Listener {
        client,
        requests,
        responder: Arc::new(Responder::new(issuer, authorizer)),
    })
}

/// Answers the server's requests until `shutdown` completes (or the connection closes for
/// good: an error).
pub async fn serve(
    client: async_nats::Client,
    issuer: Issuer,
    authorizer: Arc<dyn Authorize>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    listen(client, issuer, authorizer)
        .await?
        .run(shutdown)
        .await
}

impl Listener {
    /// Answers requests until `shutdown` completes. Requests in flight then go unanswered;
    /// the server refuses those connections, and the clients try again (another replica).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let Listener {
            client,
            requests,
            responder,
        } = self;
        let answering = requests.for_each_concurrent(CONCURRENCY, |request| {
            let client = client.clone();
            let responder = responder.clone();
            async move { answer(&client, &responder, request).await }
        });
        tokio::select! {
            () = shutdown => Ok(()),
            () = answering => Err(ServeError::Closed),
        }
    }
}

async fn answer(client: &async_nats::Client, responder: &Responder, request: async_nats::Message) {
    let Some(reply) = request.reply else {
        tracing::warn!("an authorization request without a reply subject: ignored");
        return;
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let answer = match responder.answer(&request.payload, now).await {
        Ok(answer) => answer,
        Err(e) => {
            // Only the server can publish here; a request that does not verify is a
            // misconfiguration (another issuer) or worse, and is left to time out.
            metrics::counter!("hypersaga_callout_requests_total", "outcome" => "invalid")
                .increment(1);
            tracing::warn!(error = %e, "an authorization request that does not verify: not answered");
            return;
        }
    };
    match &answer.outcome {
        Outcome::Granted(grant) => {
            metrics::counter!("hypersaga_callout_requests_total", "outcome" => "granted")
                .increment(1);
            tracing::info!(tenant = %grant.tenant, valid_for_s = grant.valid_for.as_secs(), "connection granted");
        }
        Outcome::Refused(refusal) => {
            metrics::counter!(
                "hypersaga_callout_requests_total",
                "outcome" => "refused",
                "reason" => refusal.label()
            )
            .increment(1);
            tracing::info!(reason = %refusal, "connection refused");
        }
    }
    if let Err(e) = client.publish(reply, answer.response.into()).await {
        tracing::warn!(error = %e, "cannot send an authorization answer");
    }
}
