//! The CEL rules HyperShift's NodePool CRD puts on the Azure resource IDs a pool names
//! (`azure.go`: `subnetID`, `osDisk.encryptionSetID`), messages as the CRD has them —
//! including the subnet rules' copy of "encryptionSetID" in their first two messages.
//!
//! A malformed ID fails several rules at once, and those that index the split ID past its
//! end fail to evaluate: kube-apiserver reports each, and so does the emulator.

use super::Rule;
use super::rules::{id_shape, part_matches, part_not_ending};

/// `[{]?<8>-<4>-<4>-<4>-<12>[}]?`, the subscription segment.
const UUID: &str = "^[{]?[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}[}]?$";
/// The CRD's `[a-zA-Z0-9-_\(\)\.]{1,90}`, searched unanchored as CEL does.
const RESOURCE_GROUP: &str = "[a-zA-Z0-9_().-]{1,90}";
const SUBSCRIPTION_MESSAGE: &str = "the subscriptionId in the encryptionSetID must be a valid \
     UUID. It should be 5 groups of hyphen separated hexadecimal characters in the form 8-4-4-4-12";
const RESOURCE_GROUP_MESSAGE: &str = "The resourceGroupName should be between 1 and 90 \
     characters, consisting only of alphanumeric characters, hyphens, underscores, periods and \
     parenthesis";

/// `AzureNodePoolPlatform.subnetID` (its immutability is a separate rule).
pub fn subnet_id() -> Vec<Rule> {
    vec![
        id_shape(
            11,
            "^/subscriptions/.*/resourceGroups/.*/providers/Microsoft.Network/virtualNetworks/.*/subnets/.*$",
            "encryptionSetID must be in the format `/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Network/virtualNetworks/{vnetName}/subnets/{subnetName}`",
        ),
        part_matches(2, UUID, SUBSCRIPTION_MESSAGE),
        part_matches(4, RESOURCE_GROUP, RESOURCE_GROUP_MESSAGE),
        part_not_ending(
            4,
            &['.'],
            "the resourceGroupName in the subnetID must not end with a period (.) character",
        ),
        part_matches(
            8,
            "[a-zA-Z0-9_.-]{2,64}",
            "The vnetName should be between 2 and 64 characters, consisting only of \
             alphanumeric characters, hyphens, underscores and periods",
        ),
        part_not_ending(
            8,
            &['.', '-'],
            "the vnetName in the subnetID must not end with either a period (.) or hyphen (-) \
             character",
        ),
        part_matches(
            10,
            "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,79}",
            "The subnetName should be between 1 and 80 characters, consisting only of \
             alphanumeric characters, hyphens and underscores and must start with an \
             alphanumeric character",
        ),
        part_not_ending(
            10,
            &['.', '-'],
            "the subnetName in the subnetID must not end with a period (.) or hyphen (-) \
             character",
        ),
    ]
}

/// `AzureNodePoolOSDisk.encryptionSetID`.
pub fn encryption_set_id() -> Vec<Rule> {
    vec![
        id_shape(
            9,
            "^/subscriptions/.*/resourceGroups/.*/providers/Microsoft.Compute/diskEncryptionSets/.*$",
            "encryptionSetID must be in the format `/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Compute/diskEncryptionSets/{resourceName}`",
        ),
        part_matches(2, UUID, SUBSCRIPTION_MESSAGE),
        part_matches(4, RESOURCE_GROUP, RESOURCE_GROUP_MESSAGE),
        part_not_ending(
            4,
            &['.'],
            "the resourceGroupName in the encryptionSetID must not end with a period (.) \
             character",
        ),
        part_matches(
            8,
            "[a-zA-Z0-9_-]{1,80}",
            "The resourceName should be between 1 and 80 characters, consisting only of \
             alphanumeric characters, hyphens and underscores",
        ),
    ]
}
