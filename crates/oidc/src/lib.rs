//! OIDC issuer material for a tenant, compatible with `ccoctl azure`:
//!
//! * [`SigningKey`] — the RSA 4096 service-account signing key (PKCS#1 PEM for HyperShift's
//!   `serviceAccountSigningKey` Secret, PKIX public PEM, `kid` as kube-apiserver derives it);
//! * [`discovery_document`] and [`jwks`] — the two documents Entra reads;
//! * [`BlobPublisher`] — writes them to a public blob container of the issuers' storage
//!   account (Azurite locally);
//! * [`KeyStore`] — keeps each tenant's signing key in a private container of its own, in a
//!   second storage account that serves nothing anonymously, so any replica can reload it
//!   and nobody can read it without that account's credential.
//!
//! * [`AssertionSigner`] — hypersaga's own client assertions, which tenants' Entra directories
//!   trust through federated credentials instead of any secret.
//!
//! Workload identity federation only works if the published `issuer` equals the token `iss`
//! and each federated credential's `issuer` byte-for-byte, so everything here derives the
//! issuer URL from one function ([`BlobPublisher::issuer_url`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// `Error::Blob` keeps the SDK error by value; errors are rare next to a storage round trip.
#![allow(clippy::result_large_err)]

mod assertion;
mod blob;
mod der;
mod documents;
mod error;
mod key;
mod pem;

pub use assertion::AssertionSigner;
pub use azure_core::credentials::Secret;
pub use blob::{
    BlobConfig, BlobPublisher, KEY_BLOB, KeyStore, LEGACY_KEY_CONTAINER, Migration, legacy_key_blob,
};
pub use documents::{DISCOVERY_PATH, JWKS_PATH, discovery_document, jwks};
pub use error::{Error, Result};
pub use key::{PublicKey, SigningKey};
