//! The two documents an OIDC issuer serves, exactly as ccoctl uploads them.
//!
//! Entra fetches `<issuer>/.well-known/openid-configuration`, follows `jwks_uri`, and checks
//! the token's `kid`/signature against it; the federated credential's `issuer` must equal
//! the token's `iss` byte-for-byte, so the issuer URL has no trailing slash.

use serde_json::{Value, json};

use crate::key::PublicKey;

/// Blob path of the discovery document inside the issuer container.
pub const DISCOVERY_PATH: &str = ".well-known/openid-configuration";
/// Blob path of the key set inside the issuer container.
pub const JWKS_PATH: &str = "openid/v1/jwks";

/// The discovery document for `issuer_url` (trailing slashes are removed).
///
/// ```
/// let doc = hypersaga_oidc::discovery_document("https://acct.blob.core.windows.net/oidc/");
/// assert_eq!(doc["issuer"], "https://acct.blob.core.windows.net/oidc");
/// assert_eq!(doc["jwks_uri"], "https://acct.blob.core.windows.net/oidc/openid/v1/jwks");
/// ```
pub fn discovery_document(issuer_url: &str) -> Value {
    let issuer = issuer_url.trim_end_matches('/');
    json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/{JWKS_PATH}"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    })
}

/// The key set: one entry per key (two during a rotation, new and old).
pub fn jwks(keys: &[PublicKey]) -> Value {
    json!({ "keys": keys.iter().map(PublicKey::jwk).collect::<Vec<_>>() })
}
