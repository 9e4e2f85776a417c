//! The management-cluster emulator against its own specification: kube-apiserver's semantics,
//! HyperShift's, CAPI/CAPZ's and Package Operator's controllers, faults and kubectl. One test
//! binary, a module per area (one link instead of one per file).

mod api_semantics;
mod common;
mod control_plane_upgrade;
mod dry_run;
mod faults;
mod field_validation;
mod kubectl;
mod lifecycle;
mod negotiation;
mod node_pool_day2;
mod node_pool_validation;
mod package_operator;
mod server_side_apply;
mod workers;
