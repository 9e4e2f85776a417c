//! What HyperShift's NodePool controller reads from a NodePool's spec for its
//! MachineDeployment (`reconcileMachineDeployment`, `setMachineDeploymentReplicas`,
//! `propagateLabelsAndTaintsToMachines`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::workers::deployment::{InPlace, Intent, MachineTemplate, Replicas};
use crate::workers::rollout::{IntOrPercent, Strategy};

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `spec.autoScaling` as (min, max), when the pool is autoscaled (`isAutoscalingEnabled`).
pub(super) fn autoscaling(np: &Value) -> Option<(i64, i64)> {
    let auto = np.pointer("/spec/autoScaling")?;
    let min = auto.get("min").and_then(Value::as_i64).unwrap_or(0);
    let max = auto.get("max").and_then(Value::as_i64).unwrap_or(0);
    Some((min, max))
}

/// `spec.management.upgradeType`.
pub(super) fn upgrade_type(np: &Value) -> &str {
    text(np, "/spec/management/upgradeType")
}

/// The MachineDeployment's strategy from `spec.management.replace` (CAPI defaults a
/// rolling update's missing bounds to `maxSurge: 1`, `maxUnavailable: 0`).
fn strategy(np: &Value) -> Strategy {
    let replace = np.pointer("/spec/management/replace");
    if replace
        .and_then(|r| r.get("strategy"))
        .and_then(Value::as_str)
        == Some("OnDelete")
    {
        return Strategy::OnDelete;
    }
    let bound = |field: &str, default: i64| {
        replace
            .and_then(|r| r.pointer(&format!("/rollingUpdate/{field}")))
            .and_then(IntOrPercent::parse)
            .unwrap_or(IntOrPercent::Int(default))
    };
    Strategy::RollingUpdate {
        max_surge: bound("maxSurge", 1),
        max_unavailable: bound("maxUnavailable", 0),
    }
}

/// `taintsToJSON`: Go's `json.Marshal` of `[]hyperv1.Taint` — fields in declaration order
/// (`key`, `value` omitted when empty, `effect`), `null` when there are none.
fn taints_json(np: &Value) -> String {
    let Some(taints) = np.pointer("/spec/taints").and_then(Value::as_array) else {
        return "null".into();
    };
    let quoted = |s: &str| Value::String(s.to_owned()).to_string();
    let items: Vec<String> = taints
        .iter()
        .map(|t| {
            let value = match text(t, "/value") {
                "" => String::new(),
                v => format!(",\"value\":{}", quoted(v)),
            };
            format!(
                "{{\"key\":{}{value},\"effect\":{}}}",
                quoted(text(t, "/key")),
                quoted(text(t, "/effect"))
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// What changes on the Machines in place.
fn in_place(np: &Value) -> InPlace {
    let labels: BTreeMap<String, String> = np
        .pointer("/spec/nodeLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let duration = |p: &str| np.pointer(p).and_then(Value::as_str).map(str::to_owned);
    InPlace {
        labels,
        taints: taints_json(np),
        node_drain_timeout: duration("/spec/nodeDrainTimeout"),
        node_volume_detach_timeout: duration("/spec/nodeVolumeDetachTimeout"),
    }
}

/// The MachineDeployment HyperShift wants for `np` at release `version`, with `demand`
/// nodes of simulated workload for the autoscaler. `roll` is whether a new template may
/// replace the Machines' (not for an InPlace pool, whose upgrades are not simulated).
pub(super) fn intent(np: &Value, version: &str, demand: Option<i64>, roll: bool) -> Intent {
    let replicas = match autoscaling(np) {
        Some((min, max)) => Replicas::Autoscaled { min, max, demand },
        // "If unset, the controller default value is 0".
        None => Replicas::Fixed(
            np.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0),
        ),
    };
    let platform = np
        .pointer("/spec/platform/azure")
        .or_else(|| np.pointer("/spec/platform"))
        .cloned()
        .unwrap_or(Value::Null);
    Intent {
        replicas,
        strategy: strategy(np),
        template: MachineTemplate {
            release_image: text(np, "/spec/release/image").to_owned(),
            version: version.to_owned(),
            platform,
        },
        roll,
        in_place: in_place(np),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_spec_becomes_a_machine_deployment() {
        let np = json!({"spec": {
            "release": {"image": "r:4.19.0"}, "autoScaling": {"min": 1, "max": 3},
            "management": {"upgradeType": "Replace", "replace": {"strategy": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 1}}},
            "nodeLabels": {"team": "a"}, "nodeDrainTimeout": "5m",
            "taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "g", "value": "v", "effect": "NoExecute"}],
            "platform": {"type": "Azure", "azure": {"vmSize": "Standard_D4s_v5"}}}});
        let i = intent(&np, "4.19.0", Some(7), true);
        assert_eq!(
            i.replicas,
            Replicas::Autoscaled {
                min: 1,
                max: 3,
                demand: Some(7)
            }
        );
        assert_eq!(
            i.strategy,
            Strategy::RollingUpdate {
                max_surge: IntOrPercent::Percent(50),
                max_unavailable: IntOrPercent::Int(1)
            }
        );
        assert_eq!(
            i.in_place.taints,
            r#"[{"key":"k","effect":"NoSchedule"},{"key":"g","value":"v","effect":"NoExecute"}]"#
        );
        assert_eq!(i.in_place.node_drain_timeout.as_deref(), Some("5m"));
        assert_eq!(i.template.platform, json!({"vmSize": "Standard_D4s_v5"}));
        let bare = json!({"spec": {"release": {"image": "r"}, "platform": {"type": "None"}}});
        let i = intent(&bare, "4.19.0", None, true);
        assert_eq!(i.replicas, Replicas::Fixed(0));
        assert_eq!(i.strategy, Strategy::default());
        assert_eq!(i.in_place.taints, "null");
    }
}
