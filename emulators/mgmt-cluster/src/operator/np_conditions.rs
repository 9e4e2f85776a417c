//! The NodePool conditions HyperShift computes from the NodePool and its HostedCluster
//! before it touches any Machine (`nodepool/conditions.go`), in its order: autoscaling,
//! update management, the release, the version skew, the version update.

use serde_json::Value;

use super::cluster_version::completed_version;
use super::np_spec::{autoscaling, upgrade_type};
use super::release::{self, Cluster, Version, image_version};

/// One condition: type, status (`True`/`False`/`Unknown`), reason, message.
pub(super) struct Cond {
    pub type_: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Cond {
    fn new(
        type_: &'static str,
        ok: bool,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status: if ok { "True" } else { "False" },
            reason,
            message: message.into(),
        }
    }

    fn unknown(type_: &'static str, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            type_,
            status: "Unknown",
            reason,
            message: message.into(),
        }
    }
}

const AS_EXPECTED: &str = "AsExpected";
const VALIDATION_FAILED: &str = "ValidationFailed";

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `autoscalerEnabledCondition`.
pub(super) fn autoscaling_enabled(np: &Value) -> Cond {
    let Some((min, max)) = autoscaling(np) else {
        return Cond::new("AutoscalingEnabled", false, AS_EXPECTED, "");
    };
    let platform = text(np, "/spec/platform/type");
    if min == 0 && !matches!(platform, "AWS" | "Azure") {
        return Cond::new(
            "AutoscalingEnabled",
            false,
            VALIDATION_FAILED,
            format!("Autoscaling from zero (min=0) is not supported for {platform} platform"),
        );
    }
    Cond::new(
        "AutoscalingEnabled",
        true,
        AS_EXPECTED,
        format!("Maximum nodes: {max}, Minimum nodes: {min}"),
    )
}

/// `updateManagementEnabledCondition` (`validateManagement`): `False` stops the reconcile.
pub(super) fn update_management(np: &Value) -> Cond {
    let problem = match upgrade_type(np) {
        "InPlace" => None,
        "Replace" => match np.pointer("/spec/management/replace") {
            None => Some(
                "this is unsupported. \"Replace\" upgrade type and a strategy: \
                 \"RollingUpdate\" or \"OnDelete\" are required",
            ),
            Some(r) => match r.get("strategy").and_then(Value::as_str) {
                Some("OnDelete") => None,
                Some("RollingUpdate") if r.get("rollingUpdate").is_some() => None,
                Some("RollingUpdate") => Some(
                    "this is unsupported. \"Replace\" upgrade type with strategy \
                     \"RollingUpdate\" require a MaxUnavailable and MaxSurge",
                ),
                _ => Some(
                    "this is unsupported. \"Replace\" upgrade type only support strategies \
                     \"OnDelete\" and \"RollingUpdate\"",
                ),
            },
        },
        _ => Some(
            "this is unsupported. \"Replace\" upgrade type and a strategy: \"RollingUpdate\" \
             or \"OnDelete\" are required",
        ),
    };
    match problem {
        None => Cond::new("UpdateManagementEnabled", true, AS_EXPECTED, ""),
        Some(why) => Cond::new("UpdateManagementEnabled", false, VALIDATION_FAILED, why),
    }
}

/// `getHostedClusterVersion`: the newest completed rollout's version, else the spec's.
fn hosted_cluster_version(hc: &Value) -> Result<Version, String> {
    let status = hc.get("status").cloned().unwrap_or(Value::Null);
    match completed_version(&status) {
        Some(v) => Version::parse(&v),
        None => image_version(text(hc, "/spec/release/image"))
            .map_err(|e| format!("failed to lookup release image: {e}")),
    }
}

/// `getReleaseImage`: the NodePool's release version, or why HyperShift refuses it
/// (`IsValidReleaseVersion` against the NodePool's `status.version` and the HostedCluster's
/// version: no minor above the control plane's, no y-stream downgrade, none below the
/// minimum).
pub(super) fn release(np: &Value, hc: &Value) -> Result<Version, String> {
    let image = text(np, "/spec/release/image");
    let wanted = image_version(image)
        .map_err(|e| format!("failed to look up release image metadata: {e}"))?;
    let current = match text(np, "/status/version") {
        "" => None,
        v => Some(Version::parse(v)?),
    };
    let max = hosted_cluster_version(hc)?;
    let cluster = Cluster {
        network_type: match text(hc, "/spec/networking/networkType") {
            "" => "OVNKubernetes",
            t => t,
        },
        platform: text(hc, "/spec/platform/type"),
    };
    release::check(wanted, current, max, &cluster)?;
    Ok(wanted)
}

/// `releaseImageCondition`.
pub(super) fn valid_release_image(np: &Value, checked: &Result<Version, String>) -> Cond {
    match checked {
        Ok(_) => Cond::new(
            "ValidReleaseImage",
            true,
            AS_EXPECTED,
            format!("Using release image: {}", text(np, "/spec/release/image")),
        ),
        Err(e) => Cond::new(
            "ValidReleaseImage",
            false,
            VALIDATION_FAILED,
            format!("Failed to get release image: {e}"),
        ),
    }
}

/// `supportedVersionSkewCondition`: against the newest `Completed` control-plane version
/// (the desired one during an install), status only.
pub(super) fn supported_version_skew(node_pool: Version, hc: &Value) -> Cond {
    const TYPE: &str = "SupportedVersionSkew";
    let Some(status) = hc.pointer("/status").filter(|s| s.get("version").is_some()) else {
        return Cond::unknown(
            TYPE,
            VALIDATION_FAILED,
            "HostedCluster version is not available yet, waiting for version information",
        );
    };
    let history_empty = status
        .pointer("/version/history")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    let control_plane = if history_empty {
        text(status, "/version/desired/version").to_owned()
    } else {
        completed_version(status)
            .unwrap_or_else(|| text(status, "/version/history/0/version").to_owned())
    };
    let parsed = match Version::parse(&control_plane) {
        Ok(v) => v,
        Err(e) => {
            return Cond::unknown(
                TYPE,
                VALIDATION_FAILED,
                format!("Failed to parse control plane version ({control_plane}): {e}"),
            );
        }
    };
    match release::check_skew(parsed, node_pool) {
        Ok(()) => Cond::new(TYPE, true, AS_EXPECTED, "Release image version is valid"),
        Err(e) => Cond::new(TYPE, false, "UnsupportedSkew", e),
    }
}

/// `updatingVersionCondition`: a version update is under way while the target differs from
/// `status.version`. An InPlace pool's update (of Machines that already run) is reported as
/// failed: the emulator does not run in-place upgrades.
pub(super) fn updating_version(np: &Value, target: Version) -> Cond {
    const TYPE: &str = "UpdatingVersion";
    let current = text(np, "/status/version");
    let target = target.to_string();
    if current == target {
        return Cond::new(TYPE, false, AS_EXPECTED, "");
    }
    if in_place_refused(np, &target) {
        return Cond::new(
            TYPE,
            false,
            "InplaceUpgradeFailed",
            format!(
                "in-place upgrades are not simulated by the management-cluster emulator: \
                 the nodes stay at {current}; use upgradeType Replace to move them to {target}"
            ),
        );
    }
    Cond::new(
        TYPE,
        true,
        AS_EXPECTED,
        format!("Updating version in progress. Target version: {target}"),
    )
}

/// Whether `np` is an InPlace pool asked to move running Machines to another version.
pub(super) fn in_place_refused(np: &Value, target: &str) -> bool {
    let current = text(np, "/status/version");
    upgrade_type(np) == "InPlace" && !current.is_empty() && current != target
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hc(history: Value) -> Value {
        json!({"spec": {"release": {"image": "r:4.20.0-x86_64"}, "platform": {"type": "Azure"}},
            "status": {"version": {"desired": {"version": "4.20.0"}, "history": history}}})
    }

    fn np(image: &str, status_version: Option<&str>) -> Value {
        let mut np = json!({"spec": {"release": {"image": image},
            "management": {"upgradeType": "Replace"}}});
        if let Some(v) = status_version {
            np["status"] = json!({"version": v});
        }
        np
    }

    #[test]
    fn a_pool_release_is_checked_against_the_completed_control_plane() {
        // The control plane runs 4.19.2 and is rolling to 4.20.0.
        let hc = hc(json!([
            {"state": "Partial", "version": "4.20.0"},
            {"state": "Completed", "version": "4.19.2", "completionTime": "t"},
        ]));
        assert_eq!(
            release(&np("q:4.20.0-x86_64", Some("4.19.0")), &hc),
            Err(
                "the latest version supported is: \"4.19.2\". Attempting to use: \"4.20.0\"".into()
            )
        );
        let ok = release(&np("q:4.19.1-x86_64", Some("4.19.0")), &hc);
        assert_eq!(ok, Ok(Version::new(4, 19, 1)));
        assert_eq!(
            release(&np("q:4.18.9-x86_64", Some("4.19.0")), &hc),
            Err("y-stream downgrade from \"4.19.0\" to \"4.18.9\" is not supported".into())
        );
        let refused = valid_release_image(
            &np("q:4.13.0-x86_64", None),
            &release(&np("q:4.13.0-x86_64", None), &hc),
        );
        assert_eq!(
            (refused.status, refused.reason),
            ("False", "ValidationFailed")
        );
        assert_eq!(
            refused.message,
            "Failed to get release image: the minimum version supported for platform Azure \
             is: \"4.14\". Attempting to use: \"4.13.0\""
        );
        // Newer patch than the control plane: valid, but an unsupported skew.
        let skew = supported_version_skew(Version::new(4, 19, 5), &hc);
        assert_eq!((skew.status, skew.reason), ("False", "UnsupportedSkew"));
        assert_eq!(
            skew.message,
            "NodePool version 4.19.5 cannot be higher than the HostedCluster version 4.19.2"
        );
        let old = supported_version_skew(Version::new(4, 15, 0), &hc);
        assert_eq!(old.reason, "UnsupportedSkew");
        let fine = supported_version_skew(Version::new(4, 17, 0), &hc);
        assert_eq!(
            (fine.status, fine.message.as_str()),
            ("True", "Release image version is valid")
        );
    }

    #[test]
    fn autoscaling_and_updates_are_worded_as_hypershift_words_them() {
        let mut pool = np("q:4.19.0-x86_64", Some("4.18.0"));
        let off = autoscaling_enabled(&pool);
        assert_eq!(
            (off.status, off.reason, off.message.as_str()),
            ("False", "AsExpected", "")
        );
        pool["spec"]["autoScaling"] = json!({"min": 1, "max": 4});
        let on = autoscaling_enabled(&pool);
        assert_eq!(
            (on.status, on.message.as_str()),
            ("True", "Maximum nodes: 4, Minimum nodes: 1")
        );
        let rolling = updating_version(&pool, Version::new(4, 19, 0));
        assert_eq!(
            (rolling.status, rolling.message.as_str()),
            (
                "True",
                "Updating version in progress. Target version: 4.19.0"
            )
        );
        pool["spec"]["management"]["upgradeType"] = json!("InPlace");
        let refused = updating_version(&pool, Version::new(4, 19, 0));
        assert_eq!(
            (refused.status, refused.reason),
            ("False", "InplaceUpgradeFailed")
        );
        let management = update_management(&np("q", None));
        assert_eq!(management.status, "False");
    }
}
