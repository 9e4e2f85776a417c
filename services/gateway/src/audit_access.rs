//! Tenants' audit readers on the bus: the gateway answers nats-server's auth callout from the
//! live tenants, and cuts a tenant's readers off when it is suspended, removed or loses a
//! credential (see `hypersaga_bus::callout` for the protocol and the bound on revocation).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hypersaga_bus::callout::{self, Authorize, ConnectRequest, Credential, Grant, Refusal};
use hypersaga_config::{Config, TokenDigest};
use hypersaga_model::TenantId;
use hypersaga_tenants::Directory;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How long a reader's grant lasts before the server asks again: the bound on a revocation
/// that `revoke` missed.
const GRANT_FOR: Duration = Duration::from_secs(10 * 60);

/// Decides from the live tenants.
struct TenantReaders {
    tenants: Directory,
    prefix: String,
}

#[async_trait::async_trait]
impl Authorize for TenantReaders {
    async fn authorize(&self, request: &ConnectRequest) -> Result<Grant, Refusal> {
        let tenant_id = request
            .credential
            .audit_tenant()
            .ok_or(match &request.credential {
                Credential::Password { .. } => Refusal::UnknownUser,
                Credential::Token(_) => Refusal::Unsupported("token"),
                Credential::Other(kind) => Refusal::Unsupported(kind),
            })?;
        let Credential::Password { password, .. } = &request.credential else {
            return Err(Refusal::UnknownUser);
        };
        let tenant = self.tenants.get(&tenant_id).ok_or(Refusal::UnknownUser)?;
        if !tenant
            .audit_credentials
            .iter()
            .any(|d| d.matches(password.expose()))
        {
            return Err(Refusal::WrongPassword(tenant_id));
        }
        if tenant.suspended.is_some() {
            return Err(Refusal::Suspended(tenant_id));
        }
        Ok(Grant::audit_reader(tenant_id, &self.prefix, GRANT_FOR))
    }
}

/// Serves the callout and revokes readers as tenants change, until `shutdown`. Runs only on a
/// closed bus (`nats.credentials_dir` set); on an open one anybody may read anything anyway.
pub async fn run(
    config: &Config,
    tenants: Directory,
    shutdown: CancellationToken,
) -> crate::Result<()> {
    let Some(dir) = &config.nats.credentials_dir else {
        return Ok(());
    };
    let issuer = callout::Issuer::load(dir).map_err(|e| crate::Error::Callout(e.to_string()))?;
    let client = callout::connect(&config.nats).await?;
    let readers = Arc::new(TenantReaders {
        tenants: tenants.clone(),
        prefix: config.nats.prefix.clone(),
    });
    let listener = callout::listen(client.clone(), issuer, readers)
        .await
        .map_err(|e| crate::Error::Callout(e.to_string()))?;
    info!("answering the bus's auth callout for tenants' audit readers");
    let revoking = tokio::spawn(revoke_on_change(client, tenants, shutdown.clone()));
    let served = listener
        .run(shutdown.cancelled_owned())
        .await
        .map_err(|e| crate::Error::Callout(e.to_string()));
    let _ = revoking.await;
    served
}

/// What a tenant's readers were let in with: while it stays the same (or only grows), they
/// keep their connections.
type Admitted = HashMap<TenantId, Vec<TokenDigest>>;

fn admitted(tenants: &Directory) -> Admitted {
    tenants
        .all()
        .into_iter()
        .filter(|t| t.suspended.is_none())
        .map(|t| (t.id().clone(), t.audit_credentials.clone()))
        .collect()
}

/// Tenants in `before` that are gone from `now`, suspended, or lost a credential.
fn lost(before: &Admitted, now: &Admitted) -> Vec<TenantId> {
    before
        .iter()
        .filter(|(id, creds)| match now.get(*id) {
            None => true,
            Some(kept) => creds.iter().any(|c| !kept.contains(c)),
        })
        .map(|(id, _)| id.clone())
        .collect()
}

/// Cuts off the readers of every tenant that loses its access, as the directory changes.
async fn revoke_on_change(
    client: async_nats::Client,
    tenants: Directory,
    shutdown: CancellationToken,
) {
    let mut changes = tenants.changes();
    let mut before = admitted(&tenants);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
        let now = admitted(&tenants);
        for tenant in lost(&before, &now) {
            match callout::revoke(&client, &tenant).await {
                Ok(r) => {
                    info!(%tenant, closed = r.closed, servers = r.servers, "tenant's audit readers cut off")
                }
                Err(e) => {
                    warn!(%tenant, error = %e, "could not cut off the tenant's audit readers; their grants expire within {} s", GRANT_FOR.as_secs())
                }
            }
        }
        before = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_suspended_removed_or_losing_a_credential_is_cut_off() {
        let id = |s: &str| TenantId::new(s).unwrap();
        let (a, b) = (TokenDigest::of("a"), TokenDigest::of("b"));
        let before: Admitted = [
            (id("kept"), vec![a.clone()]),
            (id("rotated"), vec![a.clone(), b.clone()]),
            (id("gone"), vec![a.clone()]),
            (id("grown"), vec![a.clone()]),
        ]
        .into();
        let now: Admitted = [
            (id("kept"), vec![a.clone()]),
            (id("rotated"), vec![b.clone()]),
            (id("grown"), vec![a, b]),
            (id("new"), vec![]),
        ]
        .into();
        let mut cut = lost(&before, &now);
        cut.sort();
        assert_eq!(cut, vec![id("gone"), id("rotated")]);
    }
}
