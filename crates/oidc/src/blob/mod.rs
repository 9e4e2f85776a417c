//! Publishing the issuer to blob storage (Azurite locally, a storage account on Azure).

mod publisher;
mod shared_key;

pub use publisher::{BlobConfig, BlobPublisher};
