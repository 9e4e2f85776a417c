//! OIDC issuer material: RSA signing keys, key ids, discovery document and JWKS.
#![forbid(unsafe_code)]
