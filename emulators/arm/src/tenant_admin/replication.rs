//! Waiting for Entra to replicate the app, its service principal and its federated credential.
//!
//! Entra gives an administrator no "replicated" signal; what it gives everyone is the token
//! endpoint's refusals, in the order it checks them: an app it does not know yet (AADSTS700016),
//! an app whose principal it does not know yet (7000229), a matching credential it does not know
//! yet (70021), and only then the issuer's keys and the signature. So the probe is a client
//! assertion with hypersaga's issuer, subject and audience and a signature that cannot verify:
//! while any object is still replicating it gets one of the first three; once all have, a
//! refusal about the keys or the signature (50166, 7000272, 700027). It never gets a token.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Method;
use serde_json::{Value, json};

use super::TenantAdmin;
use super::error::TenantAdminError;
use super::http::poll;

/// The client assertion type of workload identity federation (RFC 7523 §2.2).
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The `kid` the probe names: no issuer publishes it.
const PROBE_KID: &str = "hypersaga-tenant-admin-replication-probe";

/// Refusals that come after the federated record matched: the keys could not be fetched
/// (50166), none has the probe's `kid` (7000272), the signature did not verify (700027).
const MATCHED: &[u64] = &[50166, 7000272, 700027];

/// A JWT with the claims Entra matches, valid for five minutes, and a signature of nothing.
fn probe_assertion(issuer: &str, subject: &str, audience: &str) -> String {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": PROBE_KID});
    let claims = json!({
        "iss": issuer,
        "sub": subject,
        "aud": audience,
        "iat": now,
        "nbf": now,
        "exp": now + Duration::from_secs(300).as_secs() as i64,
        "jti": uuid::Uuid::new_v4().to_string(),
    });
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode(b"not a signature"),
    )
}

impl TenantAdmin {
    /// Polls the token endpoint until the app `app_id`, its principal and its credential for
    /// `issuer`/`subject`/`audience` have replicated.
    pub(super) async fn await_replication(
        &self,
        app_id: &str,
        issuer: &str,
        subject: &str,
        audience: &str,
    ) -> Result<(), TenantAdminError> {
        let url = self.url(&format!("{}/oauth2/v2.0/token", self.directory), &[])?;
        poll(
            self.polling,
            "Entra replicating the app, its principal and credential",
            || async {
                let assertion = probe_assertion(issuer, subject, audience);
                let form = [
                    ("grant_type", "client_credentials"),
                    ("client_id", app_id),
                    ("client_assertion_type", JWT_BEARER),
                    ("client_assertion", assertion.as_str()),
                    ("scope", "https://management.azure.com/.default"),
                ];
                let resp = self.form_post(&url, &form).send().await.map_err(|source| {
                    TenantAdminError::Transport {
                        method: Method::POST.to_string(),
                        url: url.to_string(),
                        source,
                    }
                })?;
                let status = resp.status().as_u16();
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                let code = body
                    .get("error_codes")
                    .and_then(|c| c.get(0))
                    .and_then(Value::as_u64);
                if code.is_some_and(|c| MATCHED.contains(&c)) {
                    return Ok(());
                }
                let text = |k: &str| {
                    body.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                // Still replicating (transient), or a refusal that says the credential does
                // not match (final): either way, Entra's own words.
                Err(TenantAdminError::Entra {
                    scope: "a probe of the federated credential".into(),
                    status,
                    error: text("error"),
                    code,
                    description: text("error_description"),
                })
            },
        )
        .await
    }
}
