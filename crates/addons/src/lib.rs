//! Add-ons: a platform team's extensions (operators, RBAC, configuration) deployed to a
//! cluster in ordered phases, partly next to its control plane on the management cluster and
//! partly inside the hosted cluster, through Package Operator's HyperShift integration.
//!
//! An add-on is data ([`Addon`]): a name, a version and Package Operator's own phase shape.
//! It is checked whole before anything is written ([`validate`]), kept per version in the
//! bus's `hcp_addons` bucket ([`Catalog`]), and rolled out on a cluster as one
//! `ObjectDeployment` in the cluster's control-plane namespace ([`object_deployment`]):
//! Package Operator does the phases, hypersaga waits for what it reports.
#![forbid(unsafe_code)]

mod catalog;
mod definition;
mod deployment;
mod scope;
mod validate;

pub use catalog::{
    ADDON_RECORD_VERSION, AddonRecord, Catalog, CatalogError, Owner, Put, catalog_key,
};
pub use definition::{Addon, HOSTED_CLUSTER_CLASS, ParseError, Phase, PhaseObject};
pub use deployment::{
    ADDON_LABEL, DeploymentStatus, ObjectDeploymentTarget, is_current_object_set,
    object_deployment, read_status, refusal,
};
pub use validate::{MAX_ADDON_BYTES, validate};
