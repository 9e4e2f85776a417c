//! The cluster-autoscaler of a hosted control plane, as far as one MachineDeployment goes.
//!
//! HyperShift bounds an autoscaled MachineDeployment itself (`setMachineDeploymentReplicas`):
//! at or below the minimum it gets the minimum, above the maximum the maximum, in between it
//! is left to the autoscaler. The emulator has no pods: its workload is a demand in nodes,
//! set per NodePool through the admin API. With a demand the autoscaler sizes the pool to
//! it within the bounds (scale up for pending pods, scale down of unneeded nodes); without
//! one it leaves the size alone.
//!
//! Kinder than the real autoscaler in one way, documented: it acts at once, where the real
//! one scans every 10 s and removes a node only after it was unneeded for 10 min.

/// The MachineDeployment's replicas after HyperShift and the autoscaler, from `current`.
pub fn replicas(current: i64, min: i64, max: i64, demand: Option<i64>) -> i64 {
    let (min, max) = (min.max(0), max.max(min.max(0)));
    let bounded = if current <= min {
        min
    } else if current > max {
        max
    } else {
        current
    };
    match demand {
        Some(nodes) => nodes.clamp(min, max),
        None => bounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_stays_within_its_bounds_and_follows_demand() {
        assert_eq!(
            replicas(0, 2, 5, None),
            2,
            "a new pool starts at the minimum"
        );
        assert_eq!(replicas(4, 2, 5, None), 4, "in bounds: left alone");
        assert_eq!(replicas(7, 2, 5, None), 5, "above the maximum");
        assert_eq!(replicas(2, 2, 5, Some(9)), 5, "demand beyond the maximum");
        assert_eq!(
            replicas(5, 2, 5, Some(0)),
            2,
            "no demand: down to the minimum"
        );
        assert_eq!(replicas(3, 0, 5, Some(0)), 0, "scale to zero");
    }
}
