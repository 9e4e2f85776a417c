//! The signing keys of external OIDC issuers, fetched as Entra fetches them.
//!
//! For a trusted issuer Entra reads `{issuer}/.well-known/openid-configuration` (OpenID
//! Connect Discovery 1.0 §4: a trailing `/` of the issuer is dropped before the suffix), follows
//! its `jwks_uri` and looks the assertion's `kid` up in the key set. Entra only talks to
//! `https` issuers; the emulator makes one exception, plain `http` to a loopback host, because
//! the tests and `hypersaga dev` publish the documents on Azurite at `http://127.0.0.1`.
//!
//! Key sets are cached for a short while per issuer, as any relying party does, and fetched
//! again when a `kid` is not in the cached set (the issuer may have rotated its key).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use serde_json::Value;
use url::Url;

/// How long a fetched key set is trusted without asking again.
const KEYS_TTL: Duration = Duration::from_secs(60);

/// How long one fetch may take before it counts as failed.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the keys of an issuer could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeysError {
    /// The issuer (or its `jwks_uri`) is not an `https` URL, nor `http` to a loopback host.
    #[error("issuer URL '{0}' is not https")]
    NotHttps(String),
    #[error("fetching {url} failed: {reason}")]
    Fetch { url: String, reason: String },
    #[error("{url} did not answer an OIDC document: {reason}")]
    Document { url: String, reason: String },
    /// The fetched set has no key with that `kid`.
    #[error("no key '{0}' in the issuer's key set")]
    UnknownKid(String),
}

struct CachedKeys {
    keys: Vec<Jwk>,
    fetched: Instant,
}

/// The key sets of the issuers seen so far, and the client that fetches them.
#[derive(Default)]
pub(crate) struct Issuers {
    http: OnceLock<Option<reqwest::Client>>,
    cache: Mutex<HashMap<String, CachedKeys>>,
}

/// `https`, or `http` to `localhost` or a loopback address.
fn allowed(url: &str) -> Result<Url, KeysError> {
    let refuse = || KeysError::NotHttps(url.to_owned());
    let parsed = Url::parse(url).map_err(|_| refuse())?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" => {
            let loopback = match parsed.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
                Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
                None => false,
            };
            if loopback { Ok(parsed) } else { Err(refuse()) }
        }
        _ => Err(refuse()),
    }
}

fn find(keys: &[Jwk], kid: &str) -> Option<Jwk> {
    keys.iter()
        .find(|k| k.common.key_id.as_deref() == Some(kid))
        .cloned()
}

impl Issuers {
    fn client(&self) -> Option<&reqwest::Client> {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .timeout(FETCH_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .inspect_err(|e| tracing::error!(error = %e, "building the OIDC client failed"))
                    .ok()
            })
            .as_ref()
    }

    fn cached(&self, issuer: &str, kid: &str) -> Option<Jwk> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let entry = cache.get(issuer)?;
        if entry.fetched.elapsed() > KEYS_TTL {
            return None;
        }
        find(&entry.keys, kid)
    }

    /// The key `kid` of `issuer`, from the cache or fetched.
    pub async fn key(&self, issuer: &str, kid: &str) -> Result<Jwk, KeysError> {
        allowed(issuer)?;
        if let Some(k) = self.cached(issuer, kid) {
            return Ok(k);
        }
        let keys = self.fetch(issuer).await?;
        let found = find(&keys, kid);
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(
            issuer.to_owned(),
            CachedKeys {
                keys,
                fetched: Instant::now(),
            },
        );
        found.ok_or_else(|| KeysError::UnknownKid(kid.to_owned()))
    }

    async fn get_json(&self, url: &Url) -> Result<Value, KeysError> {
        let fail = |reason: String| KeysError::Fetch {
            url: url.to_string(),
            reason,
        };
        let client = self.client().ok_or_else(|| fail("no HTTP client".into()))?;
        let resp = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(fail(format!("HTTP {}", resp.status())));
        }
        let bytes = resp.bytes().await.map_err(|e| fail(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| KeysError::Document {
            url: url.to_string(),
            reason: e.to_string(),
        })
    }

    /// Discovery document, then key set.
    async fn fetch(&self, issuer: &str) -> Result<Vec<Jwk>, KeysError> {
        let discovery = allowed(&format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ))?;
        let doc = self.get_json(&discovery).await?;
        let bad_doc = |reason: &str| KeysError::Document {
            url: discovery.to_string(),
            reason: reason.to_owned(),
        };
        // Discovery §4.3: the document's issuer must be the one it was fetched for.
        if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
            return Err(bad_doc("its issuer is not the assertion's"));
        }
        let jwks_uri = doc
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_doc("no jwks_uri"))?;
        let jwks_url = allowed(jwks_uri)?;
        let set = self.get_json(&jwks_url).await?;
        let keys =
            set.get("keys")
                .and_then(Value::as_array)
                .ok_or_else(|| KeysError::Document {
                    url: jwks_url.to_string(),
                    reason: "no keys array".into(),
                })?;
        // A key of a type the parser does not know is skipped, not fatal to the others.
        Ok(keys
            .iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        for ok in [
            "https://acct.blob.core.windows.net/oidc",
            "http://127.0.0.1:10000/devstoreaccount1/oidc",
            "http://127.1.2.3/x",
            "http://[::1]:8080/x",
            "http://localhost:10000/x",
        ] {
            assert!(allowed(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com/oidc",
            "http://10.0.0.1/oidc",
            "http://127.0.0.1.nip.io/oidc",
            "ftp://127.0.0.1/x",
            "not a url",
        ] {
            assert!(matches!(allowed(bad), Err(KeysError::NotHttps(_))), "{bad}");
        }
    }
}
