//! The gRPC API `hypersaga.v1`, generated from `proto/hypersaga/v1/`.
//!
//! Wire types stay in this crate's `v1` module; the gateway converts them into domain types at
//! the boundary so the rest of the code never sees them.
#![forbid(unsafe_code)]

pub mod codec;
pub mod json;

/// Generated types and the `ClusterService` client and server.
pub mod v1 {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("hypersaga.v1");
}

/// The encoded file descriptor set, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/hypersaga_descriptor.bin"));
