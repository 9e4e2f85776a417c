//! NATS auth callout: how tenants' audit readers get onto the bus without their credentials
//! being in the server's configuration, so tenants can be added, suspended and removed while
//! everything (nats-server included) keeps running.
//!
//! # How a reader gets in
//!
//! The server's configuration ([`crate::access::authorization_block`]) holds hypersaga's own
//! static nkey users, listed as `auth_users`: the server checks those itself. Any other
//! connection is put on hold while the server sends an authorization request, a JWT it signs
//! with its own nkey, to `$SYS.REQ.USER.AUTH` in the system account. The callout service
//! ([`serve`], run by the gateway as [`crate::Role::Callout`], in a queue group so every
//! replica shares the work):
//! 1. checks the request ([`Responder`]): signed by the server it names, for this issuer, not
//!    expired;
//! 2. asks its [`Authorize`]r, with the client's credentials ([`ConnectRequest`]): a tenant's
//!    reader connects as user `audit-<tenant>` with the password it was issued at onboarding
//!    ([`Secret`]; its record keeps the [`SecretDigest`]);
//! 3. answers with a response signed by the issuer account key ([`Issuer`], named in the
//!    server's configuration) for that server and that connection, holding a user JWT with
//!    exactly the [`Grant`]'s permissions (for a reader, [`crate::Role::Audit`]`(Some(tenant))`'s
//!    from the permission table), placed in the bus's account, named `audit-<tenant>`, valid
//!    for the grant's time; or with the [`Refusal`]'s reason, which the server logs.
//!
//! A request that does not verify is not answered: the server refuses the connection at its
//! authorization timeout. So does it when no callout service runs, which leaves hypersaga's
//! own processes unaffected (they never go through the callout).
//!
//! Why a user name and password rather than a token: the user name says whose credential it
//! is, so the authorizer reads one tenant's record and compares one digest, the server's logs
//! and connection listings name the tenant, and revocation finds its connections by it;
//! async-nats takes it as `ConnectOptions::user_and_password` (or a URL's user info), which is
//! all `hypersaga audit tail` needs besides the file holding the password.
//!
//! Why the requests are not encrypted (the callout's optional `xkey`): they carry tenants'
//! passwords, but they are sent in the system account, whose only user is the callout's, over
//! TLS on client connections and mutual TLS between servers. Encryption would add a key pair
//! to make, store and rotate, to protect from a reader that cannot subscribe there.
//!
//! # Revocation, and its bound
//!
//! A tenant suspended or removed is refused at once by the authorizer (it reads the live
//! records), so no new connection of its gets in. Its live connections are closed by
//! [`revoke`], which the gateway calls when it sees the change: it lists the tenant's
//! connections on every server (the system account's `CONNZ`) and closes each (`KICK`), in
//! well under a second. Readers reconnect at once (async-nats does), and are refused.
//!
//! Two backstops bound what `revoke` can miss (it failed, or a grant raced it: a connection
//! being authorized by a replica that had not yet seen the change): every user JWT expires
//! after its grant's `valid_for`, when the server disconnects the connection itself (the
//! server arms a timer at the JWT's `exp`) and the client's reconnection is asked about again;
//! and every replica revokes on its own sighting of the change. So a revoked tenant keeps a
//! connection at most `valid_for` (the gateway's choice, minutes), and in the normal case for
//! the time `revoke` takes.

mod answer;
mod authorize;
mod claims;
mod issuer;
pub mod jwt;
mod revoke;
mod secret;
mod serve;

pub use answer::{Answer, BUS_ACCOUNT, InvalidRequest, Outcome, Responder};
pub use authorize::{Authorize, ConnectRequest, Credential, Grant, Refusal};
pub use claims::{
    AuthorizationRequest, AuthorizationResponse, ClientInfo, ClientTls, ConnectOpts, Permission,
    REQUEST_AUDIENCE, ResponsePermission, ServerId, User,
};
pub use issuer::{ISSUER_FILE, Issuer, IssuerError};
pub use revoke::{CONNZ_SUBJECT, KICK_SUBJECTS, RevokeError, Revoked, revoke};
pub use secret::{BadDigest, Secret, SecretDigest};
pub use serve::{AUTH_SUBJECT, Listener, QUEUE_GROUP, ServeError, listen, serve};

use crate::access::Role;

/// The callout service's connection, as the configuration's `nats` section says: the
/// [`Role::Callout`] user (`<credentials_dir>/callout.nk`), a plain connection to the system
/// account (no JetStream there).
pub async fn connect(nats: &hypersaga_config::NatsConfig) -> crate::Result<async_nats::Client> {
    let access = crate::Access::for_role(
        nats.credentials_dir.as_deref(),
        &Role::Callout,
        nats.ca_file.as_deref(),
    )?;
    crate::client_as(&nats.url, &Role::Callout, &access).await
}
