//! Node pools: each pool on its own (a create's pools, a pool created later), a cluster's pools
//! together (ARO-HCP's node limits), and what an update may change.

use std::collections::{BTreeMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

use super::{FieldViolation, clip, too_long};
use crate::spec::{Autoscaling, NodePoolSpec};
use crate::version::ReleaseVersion;

/// Most node pools one cluster may have.
pub const MAX_NODE_POOLS: usize = 10;
/// Most nodes in one pool without an availability zone (ARO-HCP's `MaxNodePoolNodes`).
pub const MAX_POOL_NODES: i32 = 200;
/// Most nodes across a cluster's pools (ARO-HCP's `maxNodesTotal` bound).
pub const MAX_CLUSTER_NODES: i32 = 500;
/// Longest node pool name (ARO-HCP's node pool name pattern allows 15).
pub const MAX_NODE_POOL_NAME: usize = 15;
/// Longest drain timeout (ARO-HCP's `nodeDrainTimeoutMinutes`: a week).
pub const MAX_DRAIN_MINUTES: u32 = 10_080;
/// OS disk sizes ARO-HCP accepts.
pub const OS_DISK_GIB: std::ops::RangeInclusive<u32> = 64..=4095;
/// Disk types HyperShift's `AzureNodePoolOSDisk` accepts.
pub const OS_DISK_TYPES: [&str; 4] = [
    "Premium_LRS",
    "PremiumV2_LRS",
    "Standard_LRS",
    "StandardSSD_LRS",
];
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// Most labels and most taints on one pool: enough for any real use, small enough to bound a
/// record.
const MAX_LABELS: usize = 50;
const MAX_ARM_ID: usize = super::MAX_ARM_ID;

/// ARO-HCP's node pool name, lower-case as the Kubernetes object named after it must be.
static POOL_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z]([-a-z0-9]{0,13}[a-z0-9])?$").expect("static regex"));
// HyperShift's NodePool.spec.platform.azure.vmSize pattern.
static VM_SIZE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(Standard_|Basic_)?[A-Z]+[0-9]+(-[0-9]+)?[abdilmptsCNP]*(_[A-Z]*[0-9]+[A-Z]*)?(_v[0-9]+)?$")
        .expect("static regex")
});
/// A Kubernetes label key: an optional DNS-subdomain prefix and a name of at most 63.
static LABEL_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
        .expect("static regex")
});
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$").expect("static regex")
});
static SUBNET_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^/subscriptions/[^/?#%]+/resourceGroups/[^/?#%]+/providers/Microsoft\.Network/virtualNetworks/[^/?#%]+/subnets/[^/?#%]+$")
        .expect("static regex")
});

/// Checks the pools of a create: each one, their names, their count and their nodes together.
pub(super) fn check_node_pools(v: &mut Vec<FieldViolation>, pools: &[NodePoolSpec]) {
    if pools.len() > MAX_NODE_POOLS {
        v.push(FieldViolation::new(
            "spec.node_pools",
            format!("at most {MAX_NODE_POOLS} node pools, got {}", pools.len()),
        ));
    }
    let mut seen = HashSet::new();
    // Beyond the most a cluster may have, the pools are not looked at one by one: the count
    // says what is wrong, and the answer stays small however many were sent.
    for (i, p) in pools.iter().enumerate().take(MAX_NODE_POOLS) {
        let at = format!("spec.node_pools[{i}]");
        check_node_pool(v, &at, p);
        if !p.name.is_empty() && !seen.insert(p.name.as_str()) {
            v.push(FieldViolation::new(
                format!("{at}.name"),
                format!("duplicate node pool name {}", clip(&p.name)),
            ));
        }
    }
    if pools.len() <= MAX_NODE_POOLS {
        check_cluster_nodes(v, "spec.node_pools", pools.iter());
    }
}

/// Checks one pool, at `at` (`spec.node_pools[1]`, or `node_pool` in a pool's own call).
pub fn check_node_pool(v: &mut Vec<FieldViolation>, at: &str, p: &NodePoolSpec) {
    check_pool_name(v, &format!("{at}.name"), &p.name);
    check_scale(
        v,
        at,
        p.replicas,
        p.autoscaling,
        p.availability_zone.is_some(),
    );
    check_vm_size(v, &format!("{at}.vm_size"), &p.vm_size);
    if !p.release_image.is_empty() {
        super::check_release_image(v, &format!("{at}.release_image"), &p.release_image);
    }
    if !OS_DISK_GIB.contains(&p.os_disk.size_gib) {
        v.push(FieldViolation::new(
            format!("{at}.os_disk.size_gib"),
            format!(
                "must be between {} and {} GiB, got {}",
                OS_DISK_GIB.start(),
                OS_DISK_GIB.end(),
                p.os_disk.size_gib
            ),
        ));
    }
    if !OS_DISK_TYPES.contains(&p.os_disk.storage_account_type.as_str()) {
        v.push(FieldViolation::new(
            format!("{at}.os_disk.storage_account_type"),
            format!(
                "{} is not one of {}",
                clip(&p.os_disk.storage_account_type),
                OS_DISK_TYPES.join(", ")
            ),
        ));
    }
    if let Some(zone) = &p.availability_zone
        && !["1", "2", "3"].contains(&zone.as_str())
    {
        v.push(FieldViolation::new(
            format!("{at}.availability_zone"),
            format!("{} is not an Azure zone: \"1\", \"2\" or \"3\"", clip(zone)),
        ));
    }
    if let Some(id) = &p.subnet_id {
        let field = format!("{at}.subnet_id");
        if !too_long(v, &field, id, MAX_ARM_ID) && !SUBNET_ID.is_match(id) {
            v.push(FieldViolation::new(
                field,
                format!(
                    "{} is not a subnet's ARM id (/subscriptions/…/resourceGroups/…/providers/Microsoft.Network/virtualNetworks/…/subnets/…)",
                    clip(id)
                ),
            ));
        }
    }
    check_labels(v, &format!("{at}.labels"), &p.labels);
    check_taints(v, at, p);
    if p.node_drain_timeout_minutes > MAX_DRAIN_MINUTES {
        v.push(FieldViolation::new(
            format!("{at}.node_drain_timeout_minutes"),
            format!(
                "must be at most {MAX_DRAIN_MINUTES} (a week), got {}",
                p.node_drain_timeout_minutes
            ),
        ));
    }
}

/// Checks a pool name (`field` is where the call carries it). Every call naming a pool checks
/// it before looking.
pub fn check_pool_name(v: &mut Vec<FieldViolation>, field: &str, name: &str) {
    if name.is_empty() {
        v.push(FieldViolation::new(field, "is required"));
    } else if !too_long(v, field, name, MAX_NODE_POOL_NAME) && !POOL_NAME.is_match(name) {
        v.push(FieldViolation::new(
            field,
            format!(
                "{} must start with a lower-case letter, then lower-case letters, digits and '-', ending with a letter or digit",
                clip(name)
            ),
        ));
    }
}

/// A fixed count or autoscaling bounds, within ARO-HCP's limits. `replicas` is 0 when
/// autoscaling is set (the gateway refuses a request that sets both).
fn check_scale(
    v: &mut Vec<FieldViolation>,
    at: &str,
    replicas: i32,
    autoscaling: Option<Autoscaling>,
    zoned: bool,
) {
    // Without a zone a pool has at most 200 nodes; with one, the cluster's bound applies.
    let max = if zoned {
        MAX_CLUSTER_NODES
    } else {
        MAX_POOL_NODES
    };
    let why = if zoned {
        "nodes in a cluster"
    } else {
        "nodes in a pool without an availability zone"
    };
    match autoscaling {
        None => {
            if !(0..=max).contains(&replicas) {
                v.push(FieldViolation::new(
                    format!("{at}.replicas"),
                    format!("must be between 0 and {max} ({why}), got {replicas}"),
                ));
            }
        }
        Some(a) => {
            if replicas != 0 {
                v.push(FieldViolation::new(
                    format!("{at}.replicas"),
                    "cannot be set together with autoscaling: the autoscaler sets the count",
                ));
            }
            // Scale from zero needs capacity hints HyperShift takes from the Resource SKUs
            // API; its Azure documentation still says the minimum must be at least 1.
            if !(1..=max).contains(&a.min) {
                v.push(FieldViolation::new(
                    format!("{at}.autoscaling.min"),
                    format!("must be between 1 and {max} ({why}), got {}", a.min),
                ));
            }
            if a.max < a.min || a.max > max {
                v.push(FieldViolation::new(
                    format!("{at}.autoscaling.max"),
                    format!(
                        "must be at least min ({}) and at most {max}, got {}",
                        a.min, a.max
                    ),
                ));
            }
        }
    }
}

fn check_vm_size(v: &mut Vec<FieldViolation>, field: &str, size: &str) {
    if size.is_empty() {
        v.push(FieldViolation::new(field, "is required"));
    } else if !too_long(v, field, size, super::MAX_VM_SIZE) && !VM_SIZE.is_match(size) {
        v.push(FieldViolation::new(
            field,
            format!(
                "{} is not an Azure VM size, e.g. \"Standard_D4s_v5\"",
                clip(size)
            ),
        ));
    }
}

/// Kubernetes labels: at most [`MAX_LABELS`], each key and value as Kubernetes accepts them.
pub fn check_labels(v: &mut Vec<FieldViolation>, at: &str, labels: &BTreeMap<String, String>) {
    if labels.len() > MAX_LABELS {
        v.push(FieldViolation::new(
            at,
            format!("at most {MAX_LABELS} labels, got {}", labels.len()),
        ));
        return;
    }
    for (k, val) in labels {
        check_label_key(v, &format!("{at}[{}]", clip(k)), k);
        if !LABEL_VALUE.is_match(val) {
            v.push(FieldViolation::new(
                format!("{at}[{}]", clip(k)),
                format!(
                    "value {} must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
                    clip(val)
                ),
            ));
        }
    }
}

fn check_label_key(v: &mut Vec<FieldViolation>, field: &str, key: &str) {
    if key.len() > 253 + 1 + 63 || !LABEL_KEY.is_match(key) {
        v.push(FieldViolation::new(
            field,
            format!(
                "key {} is not a Kubernetes label key (an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.')",
                clip(key)
            ),
        ));
    }
}

fn check_taints(v: &mut Vec<FieldViolation>, at: &str, p: &NodePoolSpec) {
    if p.taints.len() > MAX_LABELS {
        v.push(FieldViolation::new(
            format!("{at}.taints"),
            format!("at most {MAX_LABELS} taints, got {}", p.taints.len()),
        ));
        return;
    }
    for (i, t) in p.taints.iter().enumerate() {
        let at = format!("{at}.taints[{i}]");
        check_label_key(v, &format!("{at}.key"), &t.key);
        if !LABEL_VALUE.is_match(&t.value) {
            v.push(FieldViolation::new(
                format!("{at}.value"),
                format!("{} is not a Kubernetes label value", clip(&t.value)),
            ));
        }
        if !TAINT_EFFECTS.contains(&t.effect.as_str()) {
            v.push(FieldViolation::new(
                format!("{at}.effect"),
                format!(
                    "{} is not one of {}",
                    clip(&t.effect),
                    TAINT_EFFECTS.join(", ")
                ),
            ));
        }
    }
}

/// The cluster's pools together stay within [`MAX_CLUSTER_NODES`] nodes, each counted at its
/// most (its count, or its autoscaler's maximum).
pub fn check_cluster_nodes<'a>(
    v: &mut Vec<FieldViolation>,
    field: &str,
    pools: impl Iterator<Item = &'a NodePoolSpec>,
) {
    let total: i64 = pools.map(|p| i64::from(p.max_nodes().max(0))).sum();
    if total > i64::from(MAX_CLUSTER_NODES) {
        v.push(FieldViolation::new(
            field,
            format!(
                "the cluster's pools would have up to {total} nodes; a cluster has at most {MAX_CLUSTER_NODES}"
            ),
        ));
    }
}

/// What an update of pool `old` to `new` may not do, at `at` (`node_pool`): change a field
/// that is immutable once the pool exists. The new spec is checked on its own too.
pub fn check_pool_update(
    v: &mut Vec<FieldViolation>,
    at: &str,
    old: &NodePoolSpec,
    new: &NodePoolSpec,
) {
    check_node_pool(v, at, new);
    for field in new.differences(old) {
        if NodePoolSpec::IMMUTABLE.contains(&field) {
            v.push(FieldViolation::new(
                format!("{at}.{field}"),
                "cannot change once the pool exists: create a new pool instead",
            ));
        }
    }
}

/// The version a release image states, or a violation at `field`.
pub fn release_version(
    v: &mut Vec<FieldViolation>,
    field: &str,
    image: &str,
) -> Option<ReleaseVersion> {
    match ReleaseVersion::of_image(image) {
        Ok(version) => Some(version),
        Err(e) => {
            v.push(FieldViolation::new(field, format!("{}: {e}", clip(image))));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Taint, UpgradeType};

    fn fields(v: &[FieldViolation]) -> Vec<&str> {
        v.iter().map(|f| f.field.as_str()).collect()
    }

    fn pool() -> NodePoolSpec {
        NodePoolSpec::new("gpu", 3, "Standard_D8s_v5")
    }

    fn check(p: &NodePoolSpec) -> Vec<FieldViolation> {
        let mut v = Vec::new();
        check_node_pool(&mut v, "node_pool", p);
        v
    }

    #[test]
    fn a_good_pool_has_no_violations() {
        let mut p = pool();
        p.labels
            .insert("node-role.kubernetes.io/gpu".into(), "".into());
        p.taints.push(Taint {
            key: "nvidia.com/gpu".into(),
            value: "present".into(),
            effect: "NoSchedule".into(),
        });
        p.availability_zone = Some("2".into());
        p.release_image = "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into();
        assert_eq!(check(&p), vec![]);
    }

    #[test]
    fn names_are_what_aro_hcp_allows() {
        for bad in ["1pool", "pool-", "Pool", "a-very-long-pool-name", "p_q"] {
            let mut p = pool();
            p.name = bad.into();
            assert_eq!(fields(&check(&p)), ["node_pool.name"], "{bad}");
        }
        let mut p = pool();
        p.name = "a".repeat(15);
        assert_eq!(check(&p), vec![]);
    }

    #[test]
    fn replicas_and_autoscaling_exclude_each_other_within_aro_hcps_limits() {
        let mut p = pool();
        p.autoscaling = Some(Autoscaling { min: 2, max: 4 });
        assert_eq!(fields(&check(&p)), ["node_pool.replicas"]);
        p.replicas = 0;
        assert_eq!(check(&p), vec![]);
        p.autoscaling = Some(Autoscaling { min: 5, max: 4 });
        assert_eq!(fields(&check(&p)), ["node_pool.autoscaling.max"]);
        p.autoscaling = Some(Autoscaling { min: 0, max: 4 });
        assert_eq!(fields(&check(&p)), ["node_pool.autoscaling.min"]);
        let mut p = pool();
        p.replicas = 201;
        let v = check(&p);
        assert!(
            v[0].description.contains("without an availability zone"),
            "{v:?}"
        );
        p.availability_zone = Some("1".into());
        assert_eq!(check(&p), vec![]);
        let pools = [p.clone(), p.clone(), p];
        let mut v = Vec::new();
        check_cluster_nodes(&mut v, "spec.node_pools", pools.iter());
        assert!(v[0].description.contains("up to 603 nodes"), "{v:?}");
    }

    #[test]
    fn every_field_is_checked_with_its_path() {
        let mut p = pool();
        p.vm_size = "huge".into();
        p.os_disk.size_gib = 10;
        p.os_disk.storage_account_type = "Ultra".into();
        p.availability_zone = Some("4".into());
        p.subnet_id = Some("/subscriptions/s/resourceGroups/r/x".into());
        p.labels.insert("bad key!".into(), "v".into());
        p.taints.push(Taint {
            key: "k".into(),
            value: String::new(),
            effect: "Sometimes".into(),
        });
        p.node_drain_timeout_minutes = 20_000;
        p.release_image = "no tag".into();
        assert_eq!(
            fields(&check(&p)),
            [
                "node_pool.vm_size",
                "node_pool.release_image",
                "node_pool.os_disk.size_gib",
                "node_pool.os_disk.storage_account_type",
                "node_pool.availability_zone",
                "node_pool.subnet_id",
                "node_pool.labels[\"bad key!\"]",
                "node_pool.taints[0].effect",
                "node_pool.node_drain_timeout_minutes",
            ]
        );
    }

    #[test]
    fn immutable_fields_cannot_change_on_update() {
        let old = pool();
        let mut new = old.clone();
        new.replicas = 5;
        new.labels.insert("tier".into(), "gold".into());
        let mut v = Vec::new();
        check_pool_update(&mut v, "node_pool", &old, &new);
        assert_eq!(v, vec![]);
        new.vm_size = "Standard_D4s_v5".into();
        new.upgrade_type = UpgradeType::InPlace;
        new.availability_zone = Some("1".into());
        check_pool_update(&mut v, "node_pool", &old, &new);
        assert_eq!(
            fields(&v),
            [
                "node_pool.vm_size",
                "node_pool.availability_zone",
                "node_pool.upgrade_type"
            ]
        );
    }
}
