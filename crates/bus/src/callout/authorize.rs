//! The decision the callout service leaves to its owner: given who is connecting and with
//! what, which tenant is it and what may it do, or why not. The gateway answers it from the
//! live tenant records; the tests from a table.

use std::time::Duration;

use hypersaga_model::TenantId;

use super::claims::{ClientInfo, ServerId};
use super::secret::Secret;
use crate::access::{Permissions, Role};

/// A connection the server asks about.
#[derive(Clone, Debug)]
pub struct ConnectRequest {
    /// What the client proved itself with.
    pub credential: Credential,
    /// The name the client gave its connection (`CONNECT`'s `name`), for logs.
    pub client_name: String,
    /// The connection (host, id on its server).
    pub client: ClientInfo,
    /// The server it connects to.
    pub server: ServerId,
}

/// The credentials in a client's `CONNECT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// `user` and `pass`: how a tenant's reader connects (`audit-<tenant>` and its secret).
    Password { user: String, password: Secret },
    /// `auth_token` alone.
    Token(Secret),
    /// Something this service does not take from outsiders: an nkey or a JWT the server did
    /// not know, or nothing.
    Other(&'static str),
}

impl Credential {
    /// The tenant a `audit-<tenant>` user name names, if it is one.
    pub fn audit_tenant(&self) -> Option<TenantId> {
        match self {
            Credential::Password { user, .. } => {
                TenantId::new(user.strip_prefix("audit-")?.to_owned()).ok()
            }
            _ => None,
        }
    }
}

/// A connection let in: as which tenant, with what permissions, for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub tenant: TenantId,
    pub permissions: Permissions,
    /// How long the user JWT is valid: the server disconnects the connection then, and the
    /// client, reconnecting, is asked about again. The bound on how long a revoked tenant
    /// keeps a connection that [`super::revoke`] missed. At least a second.
    pub valid_for: Duration,
}

impl Grant {
    /// A tenant's audit reader: exactly [`Role::Audit`]`(Some(tenant))`'s permissions on a bus
    /// with subject prefix `prefix`.
    pub fn audit_reader(tenant: TenantId, prefix: &str, valid_for: Duration) -> Self {
        let permissions = Role::Audit(Some(tenant.clone())).permissions(prefix);
        Self {
            tenant,
            permissions,
            valid_for,
        }
    }

    /// The user name the server shows for the connection (and by which revocation finds it).
    pub fn user_name(&self) -> String {
        Role::Audit(Some(self.tenant.clone())).name()
    }
}

/// Why a connection is refused: logged by the server (`auth callout service returned an
/// error: …`), never shown to the client, which only hears "Authorization Violation".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such user")]
    UnknownUser,
    #[error("wrong password for tenant {0}")]
    WrongPassword(TenantId),
    #[error("tenant {0} is suspended")]
    Suspended(TenantId),
    #[error("{0} credentials are not taken here")]
    Unsupported(&'static str),
    /// The decision could not be made (records unreachable): refused, to be asked again.
    #[error("cannot decide: {0}")]
    Unavailable(String),
}

impl Refusal {
    /// A short label for metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Refusal::UnknownUser => "unknown_user",
            Refusal::WrongPassword(_) => "wrong_password",
            Refusal::Suspended(_) => "suspended",
            Refusal::Unsupported(_) => "unsupported",
            Refusal::Unavailable(_) => "unavailable",
        }
    }
}

/// Decides who connects. Called once per connection attempt (and reconnection) that is not
/// one of hypersaga's static users; it should answer well within the server's authorization
/// timeout (2 s by default), or the connection is refused.
#[async_trait::async_trait]
pub trait Authorize: Send + Sync {
    async fn authorize(&self, request: &ConnectRequest) -> Result<Grant, Refusal>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_reader_grant_is_the_tables_audit_role() {
        let acme = TenantId::new("acme").unwrap();
        let grant = Grant::audit_reader(acme.clone(), "hcp", Duration::from_secs(60));
        assert_eq!(
            grant.permissions,
            Role::Audit(Some(acme)).permissions("hcp")
        );
        assert_eq!(grant.user_name(), "audit-acme");
    }

    #[test]
    fn the_tenant_is_read_from_the_user_name() {
        let with = |user: &str| Credential::Password {
            user: user.into(),
            password: Secret::new("p"),
        };
        assert_eq!(
            with("audit-acme").audit_tenant(),
            Some(TenantId::new("acme").unwrap())
        );
        assert_eq!(with("acme").audit_tenant(), None);
        assert_eq!(with("audit-").audit_tenant(), None);
        assert_eq!(with("audit-a.b").audit_tenant(), None);
        assert_eq!(Credential::Other("nkey").audit_tenant(), None);
    }
}
