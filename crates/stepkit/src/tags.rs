//! The tags every resource hypersaga creates carries.
//!
//! They let a sweeper find leaked resources (a saga abandoned half-way), let operators see
//! who owns what in the portal, and let cost reports group by tenant and cluster. The saga
//! tag names the operation that created the resource; an adopted resource keeps its tags.

use hypersaga_bus::StepCommand;
use serde_json::{Value, json};

// Azure forbids `<>%&\?/` in tag names, so the `hypersaga.io/…` label keys used on
// Kubernetes objects are written with `_` here, as ccoctl writes
// `openshift.io_cloud-credential-operator_<name>`.

/// Tag naming the tenant.
pub const TENANT_TAG: &str = "hypersaga.io_tenant";
/// Tag naming the cluster.
pub const CLUSTER_TAG: &str = "hypersaga.io_cluster";
/// Tag naming the saga (operation) that created the resource.
pub const SAGA_TAG: &str = "hypersaga.io_saga";

/// `{"hypersaga.io_tenant": …, "hypersaga.io_cluster": …, "hypersaga.io_saga": …}` for the
/// `tags` of an ARM body.
pub fn tags(cmd: &StepCommand) -> Value {
    json!({
        TENANT_TAG: cmd.tenant.as_str(),
        CLUSTER_TAG: cmd.cluster,
        SAGA_TAG: cmd.saga_id,
    })
}
