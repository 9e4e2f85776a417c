//! A HostedCluster's `status.version` and its `ClusterVersion*` conditions: what the hosted
//! cluster's ClusterVersion (the CVO's) says, as HyperShift copies it
//! (`computeClusterVersionStatus`, `hcpstatus.reconcile`).
//!
//! Before the control plane exists HyperShift bootstraps the status itself: `desired` is the
//! spec's release and a `Partial` entry is prepended whenever the spec names another one.
//! Once it runs, the status is the CVO's: a release is accepted only when HyperShift lets
//! the control plane move to it (a refused one leaves `desired` and `history` as they were);
//! the accepted release becomes `desired`, a `Partial` entry is prepended, and that entry
//! becomes `Completed` with its `completionTime` when the rollout ends.

use serde_json::{Value, json};

use super::conditions::put_condition;
use crate::meta::now_rfc3339;

/// The reason HyperShift gives a CVO condition that has none (`FromClusterVersionReason`).
const FROM_CLUSTER_VERSION: &str = "FromClusterVersion";
/// What HyperShift says of a CVO condition it cannot read yet.
const NOT_IN_CVO: &str = "Condition not found in the CVO.";
/// `runtime.GOARCH` of the CVO, in its `ReleaseAccepted` message.
const ARCHITECTURE: &str = "amd64";

/// `status.version.desired.image`, if HyperShift has set one.
pub(super) fn desired_image(status: &Value) -> Option<&str> {
    status
        .pointer("/version/desired/image")
        .and_then(Value::as_str)
        .filter(|i| !i.is_empty())
}

fn history(status: &Value) -> Vec<Value> {
    status
        .pointer("/version/history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Makes `image` the desired release, prepending a `Partial` history entry unless it is the
/// newest one already; answers whether a new entry was prepended.
pub(super) fn desire(status: &mut Value, image: &str, version: &str, generation: i64) -> bool {
    let mut history = history(status);
    let new = history.first().is_none_or(|h| h["image"] != image);
    if new {
        history.insert(
            0,
            json!({"state": "Partial", "image": image, "version": version,
                "startedTime": now_rfc3339(), "completionTime": null, "verified": false}),
        );
    }
    // `availableUpdates` and `completionTime` are required (nullable) by the CRD schema.
    status["version"] = json!({
        "availableUpdates": null,
        "desired": {"image": image, "version": version},
        "history": history,
        "observedGeneration": generation,
    });
    new
}

/// Marks the newest history entry `Completed` (once), with its completion time.
pub(super) fn complete(status: &mut Value) {
    let mut history = history(status);
    if let Some(h) = history.first_mut()
        && h["state"] != "Completed"
    {
        h["state"] = json!("Completed");
        h["completionTime"] = json!(now_rfc3339());
        status["version"]["history"] = json!(history);
    }
}

/// Whether the newest history entry is `Completed`.
pub(super) fn newest_completed(status: &Value) -> bool {
    status
        .pointer("/version/history/0/state")
        .and_then(Value::as_str)
        == Some("Completed")
}

/// The version of the newest `Completed` history entry: what the control plane runs.
pub(super) fn completed_version(status: &Value) -> Option<String> {
    history(status)
        .iter()
        .find(|h| h["state"] == "Completed")
        .and_then(|h| h["version"].as_str())
        .map(str::to_owned)
}

/// What the CVO reports, if HyperShift can read it.
pub(super) enum Cvo<'a> {
    /// No hosted control plane, or its kube-apiserver is not serving yet.
    NotFound,
    /// Applying `desired`; `done` is the last version it finished applying, if any.
    Working {
        desired: (&'a str, &'a str),
        done: Option<&'a str>,
    },
    /// `version` (of `image`) is applied.
    Done { image: &'a str, version: &'a str },
}

/// Sets the `ClusterVersion*` conditions as HyperShift bubbles them up from the CVO. The
/// CVO's `Progressing` is `Working towards <version>` while it applies a release (its
/// wording before any manifest is counted) and `Cluster version is <version>` once done;
/// its conditions carry no reason, so HyperShift's `FromClusterVersion` stands in.
pub(super) fn set_cvo_conditions(list: &mut Vec<Value>, cvo: &Cvo<'_>, generation: i64) {
    let mut put = |type_: &str, status: &str, reason: &str, message: &str| {
        put_condition(list, type_, status, reason, message, generation);
    };
    let (image, version, progressing, done) = match cvo {
        Cvo::NotFound => {
            for t in [
                "ClusterVersionSucceeding",
                "ClusterVersionProgressing",
                "ClusterVersionReleaseAccepted",
                "ClusterVersionUpgradeable",
                "ClusterVersionAvailable",
            ] {
                put(t, "Unknown", "StatusUnknown", NOT_IN_CVO);
            }
            return;
        }
        Cvo::Working {
            desired: (image, version),
            done,
        } => (*image, *version, true, *done),
        Cvo::Done { image, version } => (*image, *version, false, Some(*version)),
    };
    put("ClusterVersionSucceeding", "True", FROM_CLUSTER_VERSION, "");
    if progressing {
        put(
            "ClusterVersionProgressing",
            "True",
            FROM_CLUSTER_VERSION,
            &format!("Working towards {version}"),
        );
    } else {
        put(
            "ClusterVersionProgressing",
            "False",
            FROM_CLUSTER_VERSION,
            &format!("Cluster version is {version}"),
        );
    }
    put(
        "ClusterVersionReleaseAccepted",
        "True",
        "PayloadLoaded",
        &format!(
            "Payload loaded version=\"{version}\" image=\"{image}\" architecture=\"{ARCHITECTURE}\""
        ),
    );
    // The CVO of a hosted cluster sets no `Upgradeable`; HyperShift then reports it True.
    put(
        "ClusterVersionUpgradeable",
        "True",
        FROM_CLUSTER_VERSION,
        NOT_IN_CVO,
    );
    match done {
        Some(v) => put(
            "ClusterVersionAvailable",
            "True",
            FROM_CLUSTER_VERSION,
            &format!("Done applying {v}"),
        ),
        None => put("ClusterVersionAvailable", "False", FROM_CLUSTER_VERSION, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_release_is_prepended_and_completed_once() {
        let mut status = json!({});
        assert!(desire(&mut status, "r:4.19.0", "4.19.0", 1));
        complete(&mut status);
        assert!(
            !desire(&mut status, "r:4.19.0", "4.19.0", 1),
            "same release"
        );
        assert!(desire(&mut status, "r:4.20.0", "4.20.0", 2));
        let h = status["version"]["history"].as_array().expect("history");
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0]["state"].as_str(), h[0]["version"].as_str()),
            (Some("Partial"), Some("4.20.0"))
        );
        assert!(h[0]["completionTime"].is_null());
        assert_eq!(h[1]["state"], "Completed");
        assert_eq!(completed_version(&status).as_deref(), Some("4.19.0"));
        assert_eq!(desired_image(&status), Some("r:4.20.0"));
        assert!(!newest_completed(&status));
        complete(&mut status);
        assert!(newest_completed(&status));
        assert!(status["version"]["history"][0]["completionTime"].is_string());
        assert_eq!(completed_version(&status).as_deref(), Some("4.20.0"));
    }
}
