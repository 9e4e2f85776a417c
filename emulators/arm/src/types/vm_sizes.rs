//! The VM sizes the compute resource provider offers: each size's vCPUs, memory and the quota
//! family its vCPUs count against.
//!
//! The emulator refuses a VM of any other size (`400 InvalidParameter`, see
//! [`crate::ArmError::invalid_vm_size`]) and serves this table as the Resource SKUs list
//! (`GET /subscriptions/{s}/providers/Microsoft.Compute/skus`), so CAPZ's SKU look-up and the
//! VM PUT agree; the quota ledger ([`crate::quota`]) reads `vcpus` and `family` from the same
//! rows.
//!
//! Sources: vCPUs and memory from Microsoft's size pages (MicrosoftDocs/azure-compute-docs
//! `articles/virtual-machines/sizes/general-purpose/{dsv3,dsv4,dsv5,dasv5,ddsv5}-series.md`,
//! `memory-optimized/esv5-series.md`, `compute-optimized/fsv2-series.md`); the usage family
//! from Azure/ARO-RP `pkg/api/util/vms/types.go` and, for `Standard_D2_v5`, the live SKU data
//! Azure/karpenter-provider-azure generates its fakes from. Only sizes found in those sources
//! are listed: a size Azure has and the table lacks is refused, which errs on the strict side.

/// One VM size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmSize {
    /// ARM's name, e.g. `Standard_D4s_v5`.
    pub name: &'static str,
    pub vcpus: u32,
    /// The SKU's `MemoryGB` capability, which is GiB.
    pub memory_gib: u32,
    /// The usage family (`name.value` of a Compute usage row), e.g. `standardDSv5Family`.
    pub family: &'static str,
    /// Premium storage (the `s` in the name): the SKU's `PremiumIO` capability.
    pub premium_io: bool,
}

impl VmSize {
    /// The SKU's `size`: the name without its tier prefix (`D4s_v5`).
    pub fn size(&self) -> &'static str {
        self.name.strip_prefix("Standard_").unwrap_or(self.name)
    }
}

const fn size(
    name: &'static str,
    vcpus: u32,
    memory_gib: u32,
    family: &'static str,
    premium_io: bool,
) -> VmSize {
    VmSize {
        name,
        vcpus,
        memory_gib,
        family,
        premium_io,
    }
}

/// Every size the emulator offers, in every region.
pub static VM_SIZES: &[VmSize] = &[
    size("Standard_D2s_v3", 2, 8, "standardDSv3Family", true),
    size("Standard_D4s_v3", 4, 16, "standardDSv3Family", true),
    size("Standard_D8s_v3", 8, 32, "standardDSv3Family", true),
    size("Standard_D16s_v3", 16, 64, "standardDSv3Family", true),
    size("Standard_D32s_v3", 32, 128, "standardDSv3Family", true),
    size("Standard_D4s_v4", 4, 16, "standardDSv4Family", true),
    size("Standard_D8s_v4", 8, 32, "standardDSv4Family", true),
    size("Standard_D16s_v4", 16, 64, "standardDSv4Family", true),
    size("Standard_D2s_v5", 2, 8, "standardDSv5Family", true),
    size("Standard_D4s_v5", 4, 16, "standardDSv5Family", true),
    size("Standard_D8s_v5", 8, 32, "standardDSv5Family", true),
    size("Standard_D16s_v5", 16, 64, "standardDSv5Family", true),
    size("Standard_D32s_v5", 32, 128, "standardDSv5Family", true),
    size("Standard_D2_v5", 2, 8, "standardDv5Family", false),
    size("Standard_D4as_v5", 4, 16, "standardDASv5Family", true),
    size("Standard_D8as_v5", 8, 32, "standardDASv5Family", true),
    size("Standard_D16as_v5", 16, 64, "standardDASv5Family", true),
    size("Standard_D4ds_v5", 4, 16, "standardDDSv5Family", true),
    size("Standard_D8ds_v5", 8, 32, "standardDDSv5Family", true),
    size("Standard_D16ds_v5", 16, 64, "standardDDSv5Family", true),
    size("Standard_E4s_v5", 4, 32, "standardESv5Family", true),
    size("Standard_E8s_v5", 8, 64, "standardESv5Family", true),
    size("Standard_E16s_v5", 16, 128, "standardESv5Family", true),
    size("Standard_F8s_v2", 8, 16, "standardFSv2Family", true),
    size("Standard_F16s_v2", 16, 32, "standardFSv2Family", true),
];

/// The size named `name`. The compute resource provider takes sizes in any case
/// (`standard_d4s_v5`), so the match ignores it; callers that match exactly, as CAPZ's SKU
/// cache does, compare [`VmSize::name`] themselves.
pub fn find(name: &str) -> Option<&'static VmSize> {
    VM_SIZES.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// Every size's name, in table order (the list ARM's refusal prints).
pub fn names() -> Vec<&'static str> {
    VM_SIZES.iter().map(|s| s.name).collect()
}

/// Every family once, in table order (the rows of the Compute usage list).
pub fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for s in VM_SIZES {
        if !out.contains(&s.family) {
            out.push(s.family);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_is_found_in_any_case_and_a_made_up_one_is_not() {
        let d4 = find("standard_d4s_v5").expect("D4s_v5");
        assert_eq!(
            (d4.name, d4.vcpus, d4.memory_gib, d4.family),
            ("Standard_D4s_v5", 4, 16, "standardDSv5Family")
        );
        assert_eq!(d4.size(), "D4s_v5");
        assert!(find("Standard_Z99s_v9").is_none());
        assert!(find("").is_none());
    }

    #[test]
    fn every_row_is_consistent() {
        let mut seen = std::collections::BTreeSet::new();
        for s in VM_SIZES {
            assert!(seen.insert(s.name), "{} twice", s.name);
            assert!(s.name.starts_with("Standard_"), "{}", s.name);
            // Memory is a whole multiple of the vCPUs for every general-purpose, memory- and
            // compute-optimised size listed (2, 4 or 8 GiB per vCPU).
            assert!([2, 4, 8].contains(&(s.memory_gib / s.vcpus)), "{}", s.name);
            assert!(
                s.family.starts_with("standard") && s.family.ends_with("Family"),
                "{}",
                s.family
            );
            // `s` before the version suffix is premium storage.
            let premium = s.size().split('_').next().unwrap_or("").ends_with('s');
            assert_eq!(premium, s.premium_io, "{}", s.name);
        }
    }
}
