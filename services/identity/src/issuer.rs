//! `identity.oidc`: the tenant's OIDC issuer (docs/reference/hypershift-azure.md §3), created once
//! and shared by all the tenant's clusters.
//!
//! The signing key is chosen exactly once per tenant: it is stored create-only, so when two
//! clusters of a tenant race, one key wins and both use it — a second key would leave the
//! published JWKS and the tokens of one of the clusters disagreeing. It is kept in the key
//! store (`[signing_keys]`, a private container per tenant in an account of its own), apart
//! from the anonymously readable issuer documents (`[blob]`).

use hypersaga_bus::plan::{Change, StepPlan, Target, Verb};
use hypersaga_bus::{OidcOutputs, Outputs, StepCommand, StepError, StepOutputs};
use hypersaga_model::names::oidc_container;
use hypersaga_oidc::{BlobPublisher, DISCOVERY_PATH, JWKS_PATH, KeyStore, Migration, SigningKey};
use hypersaga_stepkit::Notes;
use tracing::info;

use crate::blob::step_error;

/// Loads (from the key store, or moved there from where earlier versions kept it) or creates
/// the tenant's signing key, then (re)publishes the discovery document and JWKS to the
/// tenant's public container. Publishing every time is cheap (two small blobs) and
/// heals a document someone deleted. Outputs `issuer_url` (what every FIC's `issuer` and the
/// HostedCluster's `issuerURL` must equal byte for byte) and `kid`.
pub(crate) async fn ensure(
    publisher: &BlobPublisher,
    keys: &KeyStore,
    cmd: &StepCommand,
    notes: &dyn Notes,
) -> Result<Outputs, StepError> {
    let tenant = cmd.tenant.as_str();
    let mut stored = keys.load(tenant).await.map_err(step_error)?;
    if stored.is_none() {
        // A tenant made before keys had a store of their own: its key must be the one its
        // clusters already sign with, never a new one.
        hypersaga_stepkit::fenced("signingKeys").await?;
        let moved = keys
            .migrate_legacy(publisher, tenant)
            .await
            .map_err(step_error)?;
        if moved != Migration::NothingToMove {
            info!(?moved, "moved the tenant's signing key into the key store");
            stored = keys.load(tenant).await.map_err(step_error)?;
        }
    }
    let key = match stored {
        Some(key) => {
            info!(kid = %key.kid(), "adopted the tenant's signing key");
            key
        }
        None => {
            notes
                .note("generating the tenant's OIDC signing key (RSA 4096)".to_owned())
                .await;
            let generated = tokio::task::spawn_blocking(SigningKey::generate)
                .await
                .map_err(|e| {
                    StepError::retryable(
                        "InternalError",
                        format!("key generation task failed: {e}"),
                    )
                })?
                .map_err(step_error)?;
            hypersaga_stepkit::fenced("signingKeys").await?;
            if keys.create(tenant, &generated).await.map_err(step_error)? {
                info!(kid = %generated.kid(), "created the tenant's signing key");
                generated
            } else {
                // Another cluster of the tenant stored its key first: that one is the key.
                let winner = keys
                    .load(tenant)
                    .await
                    .map_err(step_error)?
                    .ok_or_else(|| {
                        StepError::retryable(
                            "SigningKeyRace",
                            "signing key was stored concurrently but cannot be read yet",
                        )
                    })?;
                info!(kid = %winner.kid(), "adopted the signing key another writer stored first");
                winner
            }
        }
    };
    let container = oidc_container(&cmd.tenant);
    hypersaga_stepkit::fenced("oidcIssuer").await?;
    let issuer = publisher
        .publish_issuer(&container, &[key.public_key()])
        .await
        .map_err(step_error)?;
    info!(%issuer, "OIDC issuer published");
    Ok(OidcOutputs {
        issuer_url: issuer,
        kid: key.kid(),
    }
    .into_outputs())
}

/// What [`ensure`] would do: make the tenant's signing key if it has none (its id is then not
/// known yet), and publish the issuer's two documents in its public container.
pub(crate) async fn plan(
    publisher: &BlobPublisher,
    keys: &KeyStore,
    cmd: &StepCommand,
) -> Result<StepPlan, StepError> {
    let tenant = cmd.tenant.as_str();
    let container = oidc_container(&cmd.tenant);
    let issuer = publisher.issuer_url(&container);
    let stored = keys.load(tenant).await.map_err(step_error)?;
    let blob = |name: &str, verb: Verb| Change {
        target: Some(Target::Storage),
        verb: Some(verb),
        kind: "blob".into(),
        name: name.to_owned(),
        id: format!("{container}/{name}"),
        ..Change::default()
    };
    let mut changes = Vec::new();
    if stored.is_none() {
        changes.push(Change {
            note: "an RSA 4096 key, made once per tenant, kept in the key store".into(),
            ..blob(&format!("signing key of {tenant}"), Verb::Create)
        });
    }
    changes.push(Change {
        kind: "container".into(),
        id: container.clone(),
        ..blob(&container, Verb::Create)
    });
    changes.push(blob(DISCOVERY_PATH, Verb::Update));
    changes.push(blob(JWKS_PATH, Verb::Update));
    Ok(StepPlan {
        step: cmd.step.clone(),
        changes,
        findings: Vec::new(),
        outputs: OidcOutputs {
            issuer_url: issuer,
            kid: stored.map(|k| k.kid()).unwrap_or_default(),
        }
        .into_outputs(),
    })
}
