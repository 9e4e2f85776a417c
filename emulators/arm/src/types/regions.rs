//! The public Azure regions, and ARM's refusal of a location that is not one of them.
//!
//! ARM checks a tracked resource's `location` against the regions its type is registered in
//! before the resource provider sees the request: an unknown region is refused with `400
//! LocationNotAvailableForResourceType` (naming the type and listing its regions), or, for a
//! resource group, `400 LocationNotAvailableForResourceGroup` (Azure/k8s-infra
//! `hack/generated/pkg/armclient/template_client_test.go` asserts both the status and the
//! code). Every regional type the emulator serves is taken as registered in every region of
//! [`REGIONS`], so one table serves both refusals and `NoRegisteredProviderFound`.
//!
//! ARM takes a display name as well as the name (`West Europe` for `westeurope`): the check
//! compares [`normalize`]d names.

/// The public regions by their ARM names: first in the order ARM's `NoRegisteredProviderFound`
/// lists them for a Network type (Azure/azure-cli#28496), then regions registered for other
/// types (the restricted-access pairs, as the `Microsoft.Media` registrations quoted in
/// Azure/azure-cli#27798 list them; `jioindiawest` as Compute's in Azure/azure-cli#19725), then
/// the regions opened since (2025: Chile Central, Indonesia Central, Malaysia West). Regions
/// announced but not found in a registration (Austria East, Belgium Central, Denmark East) are
/// left out: refusing a region Azure has is the safe side for an emulator.
pub const REGIONS: &[&str] = &[
    "westus",
    "eastus",
    "northeurope",
    "westeurope",
    "eastasia",
    "southeastasia",
    "northcentralus",
    "southcentralus",
    "centralus",
    "eastus2",
    "japaneast",
    "japanwest",
    "brazilsouth",
    "australiaeast",
    "australiasoutheast",
    "centralindia",
    "southindia",
    "westindia",
    "canadacentral",
    "canadaeast",
    "westcentralus",
    "westus2",
    "ukwest",
    "uksouth",
    "koreacentral",
    "koreasouth",
    "francecentral",
    "australiacentral",
    "australiacentral2",
    "southafricanorth",
    "uaenorth",
    "switzerlandnorth",
    "germanywestcentral",
    "norwayeast",
    "westus3",
    "swedencentral",
    "qatarcentral",
    "polandcentral",
    "italynorth",
    "israelcentral",
    "spaincentral",
    "mexicocentral",
    "newzealandnorth",
    "francesouth",
    "southafricawest",
    "uaecentral",
    "germanynorth",
    "switzerlandwest",
    "norwaywest",
    "brazilsoutheast",
    "jioindiawest",
    "jioindiacentral",
    "chilecentral",
    "indonesiacentral",
    "malaysiawest",
];

/// A location as ARM compares it: lower case, without spaces (`West Europe` → `westeurope`).
pub fn normalize(location: &str) -> String {
    location
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `location` (a name or a display name) is a public region.
pub fn is_region(location: &str) -> bool {
    let wanted = normalize(location);
    REGIONS.iter().any(|r| *r == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_display_names_are_regions_and_made_up_ones_are_not() {
        assert!(is_region("eastus"));
        assert!(is_region("West Europe"));
        assert!(is_region("EASTUS2"));
        assert!(!is_region("marsnorth"));
        assert!(!is_region(""));
        assert!(
            !is_region("global"),
            "global is not a region of a tracked resource"
        );
    }

    #[test]
    fn the_table_has_no_duplicates_and_only_arm_names() {
        let mut seen = std::collections::BTreeSet::new();
        for r in REGIONS {
            assert!(seen.insert(*r), "{r} twice");
            assert_eq!(normalize(r), *r, "{r} is not in ARM's spelling");
        }
    }
}
