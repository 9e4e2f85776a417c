//! Whether VMs a change would add fit a region's vCPU quota: pure arithmetic over the usage
//! list and the sizes, worded as ARO-HCP words its `InsufficientVMQuota`.

use std::fmt;

use super::sizes::VmSize;
use super::usages::{Usage, Usages};
use crate::classify::ErrorKind;

/// VMs a change would add: `count` VMs of `size` (one node pool's new replicas, or its
/// autoscaling maximum).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmDemand {
    /// The VM size, as the Resource SKUs list names it (`Standard_D8s_v5`).
    pub size: String,
    /// How many VMs of it.
    pub count: u32,
}

impl VmDemand {
    /// `count` VMs of `size`.
    pub fn new(size: impl Into<String>, count: u32) -> Self {
        Self {
            size: size.into(),
            count,
        }
    }
}

/// Which quota a shortfall is of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaScope {
    /// A VM family's vCPUs (the SKU's `family`, e.g. `standardDSv5Family`).
    Family(String),
    /// The regional total (`cores`).
    Regional,
}

/// One quota the change does not fit, with the arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    /// Which quota.
    pub scope: QuotaScope,
    /// The sizes asking for it, in the order the demand named them.
    pub sizes: Vec<String>,
    /// vCPUs the change needs from it: Σ count × vCPUs.
    pub needed: u64,
    /// `limit - current`; negative when the limit is below what is held.
    pub remaining: i64,
    /// The usage row's display name ("Standard DSv5 Family vCPUs").
    pub usage: String,
    /// What is held now.
    pub current: i64,
    /// The limit.
    pub limit: i64,
}

fn quoted(sizes: &[String]) -> String {
    let list: Vec<String> = sizes.iter().map(|s| format!("{s:?}")).collect();
    let noun = if sizes.len() == 1 {
        "VM size"
    } else {
        "VM sizes"
    };
    format!("{noun} {}", list.join(", "))
}

impl fmt::Display for Shortfall {
    /// ARO-HCP's sentence (`insufficient quota for VM size "…" family "…": need N vCPUs, have R
    /// remaining for "…" (current C, limit L)`, and `insufficient total regional vCPU quota for
    /// VM size "…": …`), naming every size when several share the quota.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scope {
            QuotaScope::Family(family) => write!(
                f,
                "insufficient quota for {} family {family:?}",
                quoted(&self.sizes)
            )?,
            QuotaScope::Regional => write!(
                f,
                "insufficient total regional vCPU quota for {}",
                quoted(&self.sizes)
            )?,
        }
        write!(
            f,
            ": need {} vCPUs, have {} remaining for {:?} (current {}, limit {})",
            self.needed, self.remaining, self.usage, self.current, self.limit
        )
    }
}

/// Why a change does not fit, or could not be checked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaError {
    /// The change needs more than is left: every quota it does not fit (families first, in the
    /// demand's order, then the regional total), joined by `; ` as ARO-HCP joins them.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Insufficient(Vec<Shortfall>),
    /// The demand names a size the caller did not look up.
    #[error("VM size {0:?} was not looked up")]
    UnknownSize(String),
    /// The usage list has no row for a family the change needs (ARO-HCP's words).
    #[error("compute usage for VM family {family:?} was not found in location {location:?}")]
    MissingFamilyUsage {
        /// The family.
        family: String,
        /// The usage list's location.
        location: String,
    },
    /// The usage list has no `cores` row (ARO-HCP's words).
    #[error(
        "compute usage \"cores\" (total regional vCPUs) was not found in location {location:?}"
    )]
    MissingRegionalUsage {
        /// The usage list's location.
        location: String,
    },
}

impl QuotaError {
    /// A shortfall needs a quota increase or a smaller change: terminal. A size not looked up
    /// is the caller's mistake: terminal. A usage list without the row the change needs is an
    /// answer this client cannot interpret, retryable like [`crate::ArmError::InvalidResponse`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Insufficient(_) | Self::UnknownSize(_) => ErrorKind::Terminal,
            Self::MissingFamilyUsage { .. } | Self::MissingRegionalUsage { .. } => {
                ErrorKind::Retryable
            }
        }
    }

    /// The shortfalls, when the change does not fit.
    pub fn shortfalls(&self) -> &[Shortfall] {
        match self {
            Self::Insufficient(s) => s,
            _ => &[],
        }
    }
}

/// What one quota is asked for.
struct Ask {
    sizes: Vec<String>,
    needed: u64,
}

impl Ask {
    fn add(&mut self, size: &str, vcpus: u64) {
        if !self.sizes.iter().any(|s| s == size) {
            self.sizes.push(size.to_owned());
        }
        self.needed = self.needed.saturating_add(vcpus);
    }

    /// The shortfall against `usage`, if `needed` does not fit what remains (an exact fit does).
    fn short_of(self, scope: QuotaScope, usage: &Usage) -> Option<Shortfall> {
        let remaining = usage.remaining();
        let fits = u64::try_from(remaining).is_ok_and(|r| self.needed <= r);
        (!fits).then(|| Shortfall {
            scope,
            sizes: self.sizes,
            needed: self.needed,
            remaining,
            usage: usage.display_name().to_owned(),
            current: usage.current_value,
            limit: usage.limit,
        })
    }
}

/// Whether `demand` fits `usages`: per family, the sum over every pool of that family of count
/// × vCPUs must not exceed the family row's `limit - currentValue`, and the sum over all pools
/// must not exceed the `cores` row's (usage names compared ignoring case). `sizes` gives each
/// size's family and vCPUs ([`crate::ArmClient::vm_size`]); pools of no VMs ask for nothing.
///
/// ```
/// use hypersaga_azure::compute::{check_vcpu_quota, Usage, UsageName, Usages, VmDemand, VmSize};
/// let row = |value: &str, localized: &str, current, limit| Usage {
///     unit: "Count".into(),
///     current_value: current,
///     limit,
///     name: UsageName { value: value.into(), localized_value: localized.into() },
/// };
/// let usages = Usages::new("eastus", vec![
///     row("cores", "Total Regional vCPUs", 90, 350),
///     row("standardDSv5Family", "Standard DSv5 Family vCPUs", 90, 100),
/// ]);
/// let d8 = VmSize { name: "Standard_D8s_v5".into(), family: "standardDSv5Family".into(), vcpus: 8 };
/// let err = check_vcpu_quota(&[VmDemand::new("Standard_D8s_v5", 3)], &[d8], &usages)
///     .expect_err("24 > 10");
/// assert_eq!(
///     err.to_string(),
///     "insufficient quota for VM size \"Standard_D8s_v5\" family \"standardDSv5Family\": \
///      need 24 vCPUs, have 10 remaining for \"Standard DSv5 Family vCPUs\" (current 90, limit 100)"
/// );
/// ```
pub fn check_vcpu_quota(
    demand: &[VmDemand],
    sizes: &[VmSize],
    usages: &Usages,
) -> Result<(), QuotaError> {
    // Families in the order the demand first names them; keyed ignoring case, as usage names
    // are matched.
    let mut families: Vec<(String, Ask)> = Vec::new();
    let mut regional = Ask {
        sizes: Vec::new(),
        needed: 0,
    };
    for d in demand.iter().filter(|d| d.count > 0) {
        let size = sizes
            .iter()
            .find(|s| s.name == d.size)
            .ok_or_else(|| QuotaError::UnknownSize(d.size.clone()))?;
        let vcpus = u64::from(d.count) * u64::from(size.vcpus);
        let at = match families
            .iter()
            .position(|(f, _)| f.eq_ignore_ascii_case(&size.family))
        {
            Some(i) => i,
            None => {
                families.push((
                    size.family.clone(),
                    Ask {
                        sizes: Vec::new(),
                        needed: 0,
                    },
                ));
                families.len() - 1
            }
        };
        families[at].1.add(&size.name, vcpus);
        regional.add(&size.name, vcpus);
    }
    if regional.needed == 0 {
        return Ok(());
    }
    let mut shortfalls = Vec::new();
    for (family, ask) in families {
        let usage = usages
            .get(&family)
            .ok_or_else(|| QuotaError::MissingFamilyUsage {
                family: family.clone(),
                location: usages.location.clone(),
            })?;
        shortfalls.extend(ask.short_of(QuotaScope::Family(family), usage));
    }
    let cores = usages
        .regional()
        .ok_or_else(|| QuotaError::MissingRegionalUsage {
            location: usages.location.clone(),
        })?;
    shortfalls.extend(regional.short_of(QuotaScope::Regional, cores));
    if shortfalls.is_empty() {
        Ok(())
    } else {
        Err(QuotaError::Insufficient(shortfalls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::UsageName;

    fn row(value: &str, localized: &str, current: i64, limit: i64) -> Usage {
        Usage {
            unit: "Count".into(),
            current_value: current,
            limit,
            name: UsageName {
                value: value.into(),
                localized_value: localized.into(),
            },
        }
    }

    fn size(name: &str, family: &str, vcpus: u32) -> VmSize {
        VmSize {
            name: name.into(),
            family: family.into(),
            vcpus,
        }
    }

    fn sizes() -> Vec<VmSize> {
        vec![
            size("Standard_D4s_v5", "standardDSv5Family", 4),
            size("Standard_D8s_v5", "standardDSv5Family", 8),
            size("Standard_E8s_v5", "standardESv5Family", 8),
        ]
    }

    /// A region with `cores` at (current, limit) and the two families at theirs.
    fn usages(cores: (i64, i64), dsv5: (i64, i64), esv5: (i64, i64)) -> Usages {
        Usages::new(
            "eastus",
            vec![
                row("cores", "Total Regional vCPUs", cores.0, cores.1),
                row("virtualMachines", "Virtual Machines", 3, 25000),
                // Azure's casing is not uniform: matched ignoring it; messages name the
                // SKU's family, as ARO-HCP's do.
                row(
                    "StandardDSv5Family",
                    "Standard DSv5 Family vCPUs",
                    dsv5.0,
                    dsv5.1,
                ),
                row("standardESv5Family", "", esv5.0, esv5.1),
            ],
        )
    }

    fn check(demand: &[VmDemand], u: &Usages) -> Result<(), QuotaError> {
        check_vcpu_quota(demand, &sizes(), u)
    }

    #[test]
    fn several_pools_of_one_family_are_summed() {
        let u = usages((0, 1000), (90, 100), (0, 100));
        // 2 × 4 + 1 × 8 = 16 > 10, though each pool alone fits.
        let demand = [
            VmDemand::new("Standard_D4s_v5", 2),
            VmDemand::new("Standard_D8s_v5", 1),
        ];
        assert!(check(&demand[..1], &u).is_ok());
        assert!(check(&demand[1..], &u).is_ok());
        let err = check(&demand, &u).expect_err("16 > 10");
        assert_eq!(
            err.to_string(),
            "insufficient quota for VM sizes \"Standard_D4s_v5\", \"Standard_D8s_v5\" family \
             \"standardDSv5Family\": need 16 vCPUs, have 10 remaining for \"Standard DSv5 \
             Family vCPUs\" (current 90, limit 100)"
        );
        assert_eq!(err.kind(), ErrorKind::Terminal);
        let [s] = err.shortfalls() else {
            panic!("one shortfall: {err:?}")
        };
        assert_eq!(
            (s.needed, s.remaining, s.current, s.limit),
            (16, 10, 90, 100)
        );
    }

    #[test]
    fn two_families_are_checked_apart() {
        // DSv5 has room for 8, ESv5 for 4: the E pool alone is short.
        let u = usages((0, 1000), (92, 100), (96, 100));
        let demand = [
            VmDemand::new("Standard_D8s_v5", 1),
            VmDemand::new("Standard_E8s_v5", 1),
        ];
        let err = check(&demand, &u).expect_err("E short");
        assert_eq!(
            err.to_string(),
            "insufficient quota for VM size \"Standard_E8s_v5\" family \"standardESv5Family\": \
             need 8 vCPUs, have 4 remaining for \"standardESv5Family\" (current 96, limit 100)"
        );
    }

    #[test]
    fn the_regional_total_binds_across_families() {
        let u = usages((340, 350), (0, 100), (0, 100));
        let demand = [
            VmDemand::new("Standard_D4s_v5", 1),
            VmDemand::new("Standard_E8s_v5", 1),
        ];
        let err = check(&demand, &u).expect_err("12 > 10");
        assert_eq!(
            err.to_string(),
            "insufficient total regional vCPU quota for VM sizes \"Standard_D4s_v5\", \
             \"Standard_E8s_v5\": need 12 vCPUs, have 10 remaining for \"Total Regional vCPUs\" \
             (current 340, limit 350)"
        );
        assert_eq!(err.shortfalls()[0].scope, QuotaScope::Regional);
    }

    #[test]
    fn family_and_regional_shortfalls_are_joined() {
        let u = usages((90, 100), (90, 100), (0, 100));
        let err = check(&[VmDemand::new("Standard_D8s_v5", 3)], &u).expect_err("both");
        assert_eq!(
            err.to_string(),
            "insufficient quota for VM size \"Standard_D8s_v5\" family \"standardDSv5Family\": \
             need 24 vCPUs, have 10 remaining for \"Standard DSv5 Family vCPUs\" (current 90, \
             limit 100); insufficient total regional vCPU quota for VM size \"Standard_D8s_v5\": \
             need 24 vCPUs, have 10 remaining for \"Total Regional vCPUs\" (current 90, limit 100)"
        );
        assert_eq!(err.shortfalls().len(), 2);
    }

    #[test]
    fn an_exact_fit_fits_and_one_more_vcpu_does_not() {
        let u = usages((92, 100), (92, 100), (0, 100));
        assert_eq!(check(&[VmDemand::new("Standard_D8s_v5", 1)], &u), Ok(()));
        assert_eq!(
            check(&[VmDemand::new("Standard_D4s_v5", 2)], &u),
            Ok(()),
            "4 × 2 = 8 = 100 - 92"
        );
        let u = usages((93, 100), (92, 100), (0, 100));
        let err = check(&[VmDemand::new("Standard_D8s_v5", 1)], &u).expect_err("8 > 7");
        assert_eq!(err.shortfalls()[0].scope, QuotaScope::Regional);
    }

    #[test]
    fn a_zero_or_lowered_limit_refuses_any_vcpu() {
        let zero = usages((0, 1000), (0, 0), (0, 100));
        let err = check(&[VmDemand::new("Standard_D4s_v5", 1)], &zero).expect_err("limit 0");
        assert_eq!(err.shortfalls()[0].remaining, 0);
        let lowered = usages((0, 1000), (12, 8), (0, 100));
        let err = check(&[VmDemand::new("Standard_D4s_v5", 1)], &lowered).expect_err("below");
        assert!(err.to_string().contains("have -4 remaining"), "{err}");
    }

    #[test]
    fn pools_of_no_vms_ask_for_nothing() {
        let u = Usages::new("eastus", Vec::new());
        assert_eq!(
            check(
                &[
                    VmDemand::new("Standard_Z99s_v9", 0),
                    VmDemand::new("Standard_D4s_v5", 0)
                ],
                &u
            ),
            Ok(())
        );
        assert_eq!(check(&[], &u), Ok(()));
    }

    #[test]
    fn what_cannot_be_checked_says_why() {
        let u = usages((0, 1000), (0, 100), (0, 100));
        assert_eq!(
            check(&[VmDemand::new("Standard_Z99s_v9", 1)], &u),
            Err(QuotaError::UnknownSize("Standard_Z99s_v9".into()))
        );
        let no_family = Usages::new("eastus", vec![row("cores", "Total Regional vCPUs", 0, 10)]);
        let err = check(&[VmDemand::new("Standard_D4s_v5", 1)], &no_family).expect_err("no row");
        assert_eq!(
            err.to_string(),
            "compute usage for VM family \"standardDSv5Family\" was not found in location \"eastus\""
        );
        assert_eq!(err.kind(), ErrorKind::Retryable);
        let no_cores = Usages::new(
            "eastus",
            vec![row(
                "standardDSv5Family",
                "Standard DSv5 Family vCPUs",
                0,
                10,
            )],
        );
        assert!(matches!(
            check(&[VmDemand::new("Standard_D4s_v5", 1)], &no_cores),
            Err(QuotaError::MissingRegionalUsage { .. })
        ));
    }
}
