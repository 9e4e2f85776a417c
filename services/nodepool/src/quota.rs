//! The vCPU quota a pool change needs, checked before anything is applied.
//!
//! Azure refuses a VM beyond its subscription's per-family or regional vCPU quota only when
//! CAPZ asks for it, minutes in, machine by machine (409 `OperationNotAllowed`), and CAPZ then
//! retries for ever. ARO-HCP checks first (`AzureNodePoolVMQuotaValidation`); so does this
//! step, on the first attempt of a change that adds VMs, and refuses with the arithmetic.

use hypersaga_azure::{ComputeError, ErrorKind, QuotaError, VmDemand, check_vcpu_quota};
use hypersaga_bus::StepError;
use hypersaga_hypershift::NodePool;
use hypersaga_model::{NodePoolSpec, ReleaseVersion, UpgradeType};
use hypersaga_stepkit::{TenantArm, step_error};

/// The ARM actions the check performs as the tenant's principal: the Resource SKUs list (the
/// size's vCPUs) and the region's Compute usage list (the quota left).
pub(crate) const READS: &[&str] = &[
    "Microsoft.Compute/skus/read",
    "Microsoft.Compute/locations/usages/read",
];

/// The VMs applying `pool` would add to what `existing` (the NodePool as it is, if it exists)
/// already asks for: the nodes beyond its count (at most, with autoscaling), plus the one a
/// `Replace` rollout of a new release makes before it removes an old one (`maxSurge: 1`).
pub(crate) fn vms_added(pool: &NodePoolSpec, existing: Option<&NodePool>, image: &str) -> u32 {
    let (before, old_image) = match existing {
        Some(np) => (
            np.spec
                .auto_scaling
                .as_ref()
                .map_or(np.spec.replicas.unwrap_or(0), |a| a.max),
            np.spec.release.image.as_str(),
        ),
        None => (0, image),
    };
    let grows = pool.max_nodes().saturating_sub(before).max(0);
    let rolls = before > 0
        && pool.upgrade_type == UpgradeType::Replace
        && version_of(old_image) != version_of(image);
    u32::try_from(grows).unwrap_or(0) + u32::from(rolls)
}

fn version_of(image: &str) -> Option<ReleaseVersion> {
    ReleaseVersion::of_image(image).ok()
}

/// Refuses `added` more VMs of the pool's size beyond what the tenant's subscription has left
/// in `location`, with ARO-HCP's words (`InsufficientVMQuota`, terminal: it takes a quota
/// increase or a smaller change). `target` is the field the refusal points at; a size the
/// region does not offer points at the pool's `vm_size`.
pub(crate) async fn check(
    arm: &TenantArm,
    location: &str,
    pool: &NodePoolSpec,
    added: u32,
    target: &str,
) -> Result<(), StepError> {
    if added == 0 {
        return Ok(());
    }
    let sub = &arm.subscription_id;
    let size = arm
        .client
        .vm_size(sub, location, &pool.vm_size)
        .await
        .map_err(|e| compute_error(e, &format!("spec.node_pools.{}.vm_size", pool.name)))?;
    let usages = arm.client.usages(sub, location).await.map_err(step_error)?;
    let demand = [VmDemand::new(pool.vm_size.clone(), added)];
    check_vcpu_quota(&demand, &[size], &usages).map_err(|e| quota_error(&e, target))
}

fn compute_error(e: ComputeError, target: &str) -> StepError {
    match e {
        ComputeError::Arm(e) => step_error(e),
        other => {
            // Azure's own code for a size a region does not offer the subscription.
            let code = "SkuNotAvailable";
            let message = other.to_string();
            match other.kind() {
                ErrorKind::Terminal => StepError::terminal(code, message),
                _ => StepError::retryable(code, message),
            }
            .with_target(target)
        }
    }
}

fn quota_error(e: &QuotaError, target: &str) -> StepError {
    let code = match e {
        QuotaError::Insufficient(_) => "InsufficientVMQuota",
        _ => "QuotaUnknown",
    };
    match e.kind() {
        ErrorKind::Terminal => StepError::terminal(code, e.to_string()),
        _ => StepError::retryable(code, e.to_string()),
    }
    .with_target(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypersaga_hypershift::{NodePoolAutoScaling, NodePoolSpec as Np, Release};
    use hypersaga_model::Autoscaling;

    const OLD: &str = "quay.io/ocp-release:4.21.0-multi";
    const NEW: &str = "quay.io/ocp-release:4.22.0-multi";

    fn existing(replicas: Option<i32>, max: Option<i32>, image: &str) -> NodePool {
        NodePool::new(
            "demo-workers",
            Np {
                replicas,
                auto_scaling: max.map(|max| NodePoolAutoScaling { min: 1, max }),
                release: Release {
                    image: image.into(),
                },
                ..Default::default()
            },
        )
    }

    #[test]
    fn a_change_adds_the_nodes_beyond_the_pools_and_one_for_a_replace_rollout() {
        let mut pool = NodePoolSpec::new("workers", 5, "Standard_D8s_v5");
        assert_eq!(vms_added(&pool, None, OLD), 5, "a new pool");
        let three = existing(Some(3), None, OLD);
        assert_eq!(vms_added(&pool, Some(&three), OLD), 2, "a scale up");
        pool.replicas = 1;
        assert_eq!(vms_added(&pool, Some(&three), OLD), 0, "a scale down");
        assert_eq!(
            vms_added(&pool, Some(&three), NEW),
            1,
            "the rollout's surge"
        );
        pool.upgrade_type = UpgradeType::InPlace;
        assert_eq!(vms_added(&pool, Some(&three), NEW), 0, "in place: no surge");
        let mut auto = NodePoolSpec::new("workers", 0, "Standard_D8s_v5");
        auto.autoscaling = Some(Autoscaling { min: 2, max: 8 });
        assert_eq!(
            vms_added(&auto, Some(&existing(None, Some(4), OLD)), OLD),
            4
        );
    }
}
