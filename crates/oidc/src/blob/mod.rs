//! Blob storage (Azurite locally, storage accounts on Azure): the issuers, published in one
//! account, and the signing keys, kept privately in another.

mod keys;
mod publisher;
mod shared_key;

pub use keys::{KEY_BLOB, KeyStore, LEGACY_KEY_CONTAINER, Migration, legacy_key_blob};
pub use publisher::{BlobConfig, BlobPublisher};
