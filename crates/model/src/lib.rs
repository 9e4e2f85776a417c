//! Domain types of hypersaga: cluster specs, their validation with field paths, the names of
//! everything a cluster creates, and the cluster and operation records kept on the bus.
//!
//! Pure data and pure functions: no I/O, so every rule here is unit-tested directly.
#![forbid(unsafe_code)]

pub mod addon;
pub mod identities;
pub mod names;
pub mod record;
pub mod spec;
pub mod tenant;
pub mod validate;
pub mod version;

pub use addon::{AddonRef, AddonScope};
pub use names::Names;
pub use record::{ClusterPhase, ClusterRecord, ErrorInfo};
pub use spec::{Autoscaling, ClusterSpec, NetworkSpec, NodePoolSpec, OsDisk, Taint, UpgradeType};
pub use tenant::TenantId;
pub use validate::{FieldViolation, validate_create, validate_subscription};
pub use version::{ReleaseVersion, SkewError};
