//! What Entra knows about a principal, as ARM's role-assignment check sees it.
//!
//! The principals are the service principals of the configured app registrations (always
//! there), the service principals behind the user-assigned identities created through the
//! emulator, and the service principals made through Graph in the subscription's own directory
//! (a principal of another directory is not found). A new principal takes a while to replicate
//! through Entra; until then a lookup does not find it, which is the `PrincipalNotFound` that
//! deployments hit when they assign a role right after creating the identity or principal.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::Emulator;
use crate::entra;
use crate::store::Store;

/// The only kind of principal the emulator's directory holds.
pub(super) const SERVICE_PRINCIPAL: &str = "ServicePrincipal";

/// The result of a directory lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Directory {
    /// Found, of this principal type.
    Known(&'static str),
    /// Exists, but a lookup does not find it yet.
    Replicating,
    /// No such principal.
    Unknown,
}

/// Looks `principal` up in `tenant`'s directory as of `now`.
pub(super) fn lookup(
    emu: &Emulator,
    store: &Store,
    tenant: &str,
    principal: &Uuid,
    now: OffsetDateTime,
) -> Directory {
    let app = emu.with_principals(|all| {
        all.iter().any(|p| {
            Uuid::parse_str(&entra::object_id(&p.client_id)).is_ok_and(|o| &o == principal)
        })
    });
    if app {
        return Directory::Known(SERVICE_PRINCIPAL);
    }
    let created = store
        .all()
        .filter(|r| {
            r.rtype
                .full_name()
                .eq_ignore_ascii_case("Microsoft.ManagedIdentity/userAssignedIdentities")
        })
        .find(|r| {
            r.properties
                .get("principalId")
                .and_then(|v| v.as_str())
                .and_then(|s| Uuid::parse_str(s).ok())
                .is_some_and(|p| &p == principal)
        })
        .map(|r| r.created)
        .or_else(|| {
            store
                .directory()
                .principal(tenant, principal)
                .map(|p| p.created)
        });
    let Some(created) = created else {
        return Directory::Unknown;
    };
    let delay = emu
        .config()
        .latency
        .apply(emu.config().principal_replication_delay);
    if now < created + delay {
        Directory::Replicating
    } else {
        Directory::Known(SERVICE_PRINCIPAL)
    }
}
