//! Closing a tenant's live connections: the system account's monitoring request
//! (`$SYS.REQ.SERVER.PING.CONNZ`, answered by every server) lists the connections of the
//! tenant's user name in the bus's account, and `$SYS.REQ.SERVER.<id>.KICK` closes each on
//! its server.
//!
//! It asks the servers rather than remembering whom it let in, so any replica can revoke what
//! any replica (or a previous run) granted. It closes what is connected now; a connection the
//! callout is authorizing at the same moment can slip past, and lasts until its user JWT
//! expires (see the module's documentation).

use std::time::Duration;

use futures::StreamExt as _;
use hypersaga_model::TenantId;
use serde::Deserialize;

use super::answer::BUS_ACCOUNT;
use crate::access::Role;

/// Every server's connection listing.
pub const CONNZ_SUBJECT: &str = "$SYS.REQ.SERVER.PING.CONNZ";
/// Closing a connection on one server (`*`: the server's id).
pub const KICK_SUBJECTS: &str = "$SYS.REQ.SERVER.*.KICK";

/// How long the first server has to answer the listing.
const FIRST_ANSWER: Duration = Duration::from_secs(2);
/// After an answer, how long to wait for another server's before taking the list as whole.
const NEXT_ANSWER: Duration = Duration::from_millis(300);
/// How long a server has to close a connection.
const KICK_TIMEOUT: Duration = Duration::from_secs(2);
/// The most connections one server lists (one tenant's readers are a handful).
const LIST_LIMIT: usize = 10_000;

/// Why a tenant's connections could not be closed.
#[derive(Debug, thiserror::Error)]
pub enum RevokeError {
    #[error("cannot ask the servers for their connections")]
    Nats(#[source] async_nats::Error),
    #[error(
        "no server listed its connections within {FIRST_ANSWER:?}: is this connection a \
             user of the system account, allowed {CONNZ_SUBJECT}?"
    )]
    NoAnswer,
    #[error("server {server} could not close connection {cid}: {message}")]
    Kick {
        server: String,
        cid: u64,
        message: String,
    },
}

/// What a revocation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Revoked {
    /// Servers that listed their connections.
    pub servers: usize,
    /// Connections closed.
    pub closed: usize,
}

/// Closes every connection of `tenant`'s audit reader on every server, through `client` (a
/// connection as [`Role::Callout`]). Call it once the authorizer refuses the tenant, so that
/// the readers cannot come back.
pub async fn revoke(
    client: &async_nats::Client,
    tenant: &TenantId,
) -> Result<Revoked, RevokeError> {
    let user = Role::Audit(Some(tenant.clone())).name();
    let listings = list(client, &user).await?;
    let mut revoked = Revoked {
        servers: listings.len(),
        closed: 0,
    };
    for listing in listings {
        let Some(server) = listing.server_id() else {
            tracing::warn!("a connection listing from a server without a valid id: skipped");
            continue;
        };
        for conn in listing.connections(&user) {
            if kick(client, &server, conn).await? {
                revoked.closed += 1;
            }
        }
    }
    tracing::info!(%tenant, closed = revoked.closed, servers = revoked.servers, "tenant's connections revoked");
    Ok(revoked)
}

/// Every server's listing of `user`'s connections in the bus's account.
async fn list(client: &async_nats::Client, user: &str) -> Result<Vec<Listing>, RevokeError> {
    let inbox = client.new_inbox();
    let mut answers = client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| RevokeError::Nats(e.into()))?;
    let query = serde_json::json!({
        "auth": true,
        "user": user,
        "acc": BUS_ACCOUNT,
        "limit": LIST_LIMIT,
    });
    client
        .publish_with_reply(CONNZ_SUBJECT, inbox, query.to_string().into())
        .await
        .map_err(|e| RevokeError::Nats(e.into()))?;
    let mut listings = Vec::new();
    let mut wait = FIRST_ANSWER;
    while let Ok(Some(answer)) = tokio::time::timeout(wait, answers.next()).await {
        wait = NEXT_ANSWER;
        match serde_json::from_slice::<Listing>(&answer.payload) {
            Ok(listing) => listings.push(listing),
            Err(e) => tracing::warn!(error = %e, "an unreadable connection listing: skipped"),
        }
    }
    if listings.is_empty() {
        return Err(RevokeError::NoAnswer);
    }
    Ok(listings)
}

/// Closes connection `cid` on `server`; false if it had gone already.
async fn kick(client: &async_nats::Client, server: &str, cid: u64) -> Result<bool, RevokeError> {
    let subject = format!("$SYS.REQ.SERVER.{server}.KICK");
    let request = client.request(
        subject,
        serde_json::json!({ "cid": cid }).to_string().into(),
    );
    let answer = tokio::time::timeout(KICK_TIMEOUT, request)
        .await
        .map_err(|_| RevokeError::Kick {
            server: server.to_owned(),
            cid,
            message: format!("no answer within {KICK_TIMEOUT:?}"),
        })?
        .map_err(|e| RevokeError::Nats(e.into()))?;
    let answer: ApiAnswer = serde_json::from_slice(&answer.payload).unwrap_or_default();
    match answer.error {
        None => Ok(true),
        // Gone between the listing and now: closed all the same.
        Some(e) if e.description.contains("no such client") => Ok(false),
        Some(e) => Err(RevokeError::Kick {
            server: server.to_owned(),
            cid,
            message: e.description,
        }),
    }
}

/// A server's answer to the listing.
#[derive(Debug, Deserialize)]
struct Listing {
    server: ServerInfo,
    #[serde(default)]
    data: Option<Connz>,
}

#[derive(Debug, Deserialize)]
struct ServerInfo {
    #[serde(default)]
    id: String,
}

#[derive(Debug, Default, Deserialize)]
struct Connz {
    #[serde(default)]
    connections: Vec<Connection>,
}

#[derive(Debug, Deserialize)]
struct Connection {
    cid: u64,
    #[serde(default)]
    authorized_user: String,
}

impl Listing {
    /// The server's id, if it is one (it goes into a subject).
    fn server_id(&self) -> Option<String> {
        let id = &self.server.id;
        nkeys::KeyPair::from_public_key(id)
            .is_ok_and(|k| k.key_pair_type() == nkeys::KeyPairType::Server)
            .then(|| id.clone())
    }

    /// The ids of `user`'s connections (the filter is the server's; the check is ours).
    fn connections<'a>(&'a self, user: &'a str) -> impl Iterator<Item = u64> + 'a {
        self.data
            .iter()
            .flat_map(|d| d.connections.iter())
            .filter(move |c| c.authorized_user == user)
            .map(|c| c.cid)
    }
}

#[derive(Debug, Default, Deserialize)]
struct ApiAnswer {
    #[serde(default)]
    error: Option<ApiError>,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(default)]
    description: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_yields_the_users_connections_on_a_valid_server() {
        let server = nkeys::KeyPair::new_server().public_key();
        let json = serde_json::json!({
            "server": {"name": "n0", "host": "0.0.0.0", "id": server, "ver": "2.15.1"},
            "data": {
                "server_id": server,
                "num_connections": 3,
                "connections": [
                    {"cid": 5, "authorized_user": "audit-acme", "ip": "127.0.0.1"},
                    {"cid": 6, "authorized_user": "audit-globex"},
                    {"cid": 7}
                ]
            }
        });
        let listing: Listing = serde_json::from_value(json).unwrap();
        assert_eq!(listing.server_id(), Some(server));
        assert_eq!(listing.connections("audit-acme").collect::<Vec<_>>(), [5]);
    }

    #[test]
    fn a_server_id_that_is_not_a_server_key_is_not_put_in_a_subject() {
        for id in ["", "N.>", "*", &nkeys::KeyPair::new_user().public_key()] {
            let listing: Listing =
                serde_json::from_value(serde_json::json!({"server": {"id": id}})).unwrap();
            assert_eq!(listing.server_id(), None, "{id}");
        }
    }
}
