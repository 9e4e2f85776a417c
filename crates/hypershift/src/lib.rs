//! Typed `hypershift.openshift.io/v1beta1` resources for kube-rs clients.
//!
//! Only the subset of HyperShift's API that hypersaga sets or reads is modelled: the fields of
//! `HostedCluster` and `NodePool` a self-managed Azure control plane needs, their readiness
//! conditions and the status fields our services wait on. Every optional field is an `Option`
//! skipped when absent, so a server-side-apply body built from these types only claims the
//! fields we actually set, and objects written by the real operator still deserialize.
//! Field names are camelCase exactly as in `api/hypershift/v1beta1`.
#![forbid(unsafe_code)]

pub mod client;
mod common;
mod condition;
mod hosted_cluster;
mod node_pool;

pub use common::{LocalObjectReference, Release, release_version};
pub use condition::{Condition, ConditionStatus, conditions};
pub use hosted_cluster::*;
pub use node_pool::*;

/// API group of both resources.
pub const GROUP: &str = "hypershift.openshift.io";
/// API version of both resources.
pub const VERSION: &str = "v1beta1";
/// `apiVersion` value of both resources.
pub const API_VERSION: &str = "hypershift.openshift.io/v1beta1";
/// The finalizer the HyperShift operator puts on HostedClusters and NodePools; the objects
/// disappear only after it has torn down what they own.
pub const HYPERSHIFT_FINALIZER: &str = "hypershift.openshift.io/finalizer";

/// Serializes the CRD of `K` as YAML, e.g. for an emulator's discovery or `kubectl apply`.
pub fn crd_yaml<K: kube::CustomResourceExt>() -> Result<String, serde_norway::Error> {
    serde_norway::to_string(&K::crd())
}
