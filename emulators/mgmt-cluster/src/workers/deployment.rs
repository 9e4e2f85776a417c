//! A NodePool's MachineDeployment as HyperShift reconciles it (`reconcileMachineDeployment`),
//! kept by the emulator in memory rather than served: its replicas, its rollout strategy,
//! its current Machine template and the MachineSet each template got.
//!
//! What rolls: a new release or a new Azure platform template (the userdata Secret and the
//! AzureMachineTemplate HyperShift derives from them) makes a new MachineSet. What does not:
//! replicas and autoscaling, node labels, taints and drain/detach timeouts, which HyperShift
//! and CAPI propagate to the existing Machines in place ([`InPlace`]).
//!
//! When HyperShift stops reconciling a NodePool (a release it refuses), it leaves the
//! MachineDeployment as it was and CAPI keeps converging to that.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::autoscaler;
use super::capi::suffix_from;
use super::rollout::Strategy;

/// What a new Machine is made from.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineTemplate {
    pub release_image: String,
    /// The release's version: the Machine's `spec.version` and release annotation.
    pub version: String,
    /// `spec.platform.azure` as the NodePool had it.
    pub platform: Value,
}

impl MachineTemplate {
    /// A stable digest of what makes Machines differ (CAPI's `machine-template-hash`).
    pub fn hash(&self) -> u32 {
        let digest = Sha256::digest(
            json!({"release": self.release_image, "platform": self.platform})
                .to_string()
                .as_bytes(),
        );
        u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
    }
}

/// What HyperShift writes on every Machine of the pool without replacing it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InPlace {
    /// `spec.nodeLabels`, as `managed.hypershift.openshift.io.<key>` Machine labels.
    pub labels: BTreeMap<String, String>,
    /// `spec.taints` as HyperShift marshals them into the taints annotation.
    pub taints: String,
    pub node_drain_timeout: Option<String>,
    pub node_volume_detach_timeout: Option<String>,
}

/// How many Machines the MachineDeployment wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// `spec.replicas` (0 when unset).
    Fixed(i64),
    /// `spec.autoScaling`: the cluster-autoscaler decides within the bounds, from the
    /// simulated workload's demand in nodes, if any.
    Autoscaled {
        min: i64,
        max: i64,
        demand: Option<i64>,
    },
}

/// What HyperShift reconciles the MachineDeployment to in one pass.
#[derive(Clone, Debug)]
pub struct Intent {
    pub replicas: Replicas,
    pub strategy: Strategy,
    pub template: MachineTemplate,
    /// Whether a different template is taken (false: an InPlace pool, whose upgrades the
    /// emulator does not run, keeps its Machines' template).
    pub roll: bool,
    pub in_place: InPlace,
}

/// The MachineDeployment of one NodePool.
#[derive(Clone, Debug)]
pub struct MachineDeployment {
    pub replicas: i64,
    pub strategy: Strategy,
    /// The new MachineSet's name.
    pub current: String,
    /// Every MachineSet made so far and its template, oldest first.
    pub sets: Vec<(String, MachineTemplate)>,
    pub in_place: InPlace,
    name: String,
    uid: String,
}

/// CAPI's MachineSet name, `<deployment>-<5 random>` (`computeNewMachineSetName`), its
/// suffix fixed here by the NodePool's uid and the template.
fn set_name(np_name: &str, np_uid: &str, template: &MachineTemplate) -> String {
    let digest = Sha256::digest(format!("{np_uid}/{}", template.hash()).as_bytes());
    format!("{np_name}-{}", suffix_from(&digest))
}

impl MachineDeployment {
    /// The MachineDeployment HyperShift creates for NodePool `np_name` (`np_uid`).
    pub fn new(np_name: &str, np_uid: &str, intent: &Intent) -> Self {
        let current = set_name(np_name, np_uid, &intent.template);
        let mut md = Self {
            replicas: 0,
            strategy: intent.strategy.clone(),
            current: current.clone(),
            sets: vec![(current, intent.template.clone())],
            in_place: intent.in_place.clone(),
            name: np_name.to_owned(),
            uid: np_uid.to_owned(),
        };
        md.update(intent);
        md
    }

    /// Reconciles to `intent`: replicas (the autoscaler's, when autoscaling), strategy,
    /// in-place fields, and a new MachineSet for a new template.
    pub fn update(&mut self, intent: &Intent) {
        self.replicas = match intent.replicas {
            Replicas::Fixed(n) => n.max(0),
            Replicas::Autoscaled { min, max, demand } => {
                autoscaler::replicas(self.replicas, min, max, demand)
            }
        };
        self.strategy = intent.strategy.clone();
        self.in_place = intent.in_place.clone();
        if intent.roll && self.template() != Some(&intent.template) {
            let name = set_name(&self.name, &self.uid, &intent.template);
            self.sets.retain(|(n, _)| *n != name);
            self.sets.push((name.clone(), intent.template.clone()));
            self.current = name;
        }
    }

    /// The current template.
    pub fn template(&self) -> Option<&MachineTemplate> {
        self.set(&self.current)
    }

    /// The template of MachineSet `name`.
    pub fn set(&self, name: &str) -> Option<&MachineTemplate> {
        self.sets.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// Forgets MachineSets with no Machines left (CAPI's `cleanupDeployment` of old ones).
    pub fn forget_empty(&mut self, in_use: &[&str]) {
        let current = self.current.clone();
        self.sets
            .retain(|(n, _)| *n == current || in_use.contains(&n.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(image: &str, replicas: Replicas) -> Intent {
        Intent {
            replicas,
            strategy: Strategy::default(),
            template: MachineTemplate {
                release_image: image.into(),
                version: "4.19.0".into(),
                platform: json!({"vmSize": "Standard_D4s_v5"}),
            },
            roll: true,
            in_place: InPlace::default(),
        }
    }

    #[test]
    fn a_new_template_is_a_new_machine_set_and_the_rest_is_in_place() {
        let mut md = MachineDeployment::new("w", "uid", &intent("r:1", Replicas::Fixed(2)));
        let first = md.current.clone();
        assert!(first.starts_with("w-") && first.len() == 7, "{first}");
        let mut scaled = intent("r:1", Replicas::Fixed(5));
        scaled.in_place.labels.insert("team".into(), "a".into());
        md.update(&scaled);
        assert_eq!((md.replicas, md.current.as_str()), (5, first.as_str()));
        md.update(&intent("r:2", Replicas::Fixed(5)));
        assert_ne!(md.current, first);
        assert_eq!(md.sets.len(), 2);
        md.forget_empty(&[]);
        assert_eq!(md.sets.len(), 1);
        // An InPlace pool keeps its template.
        let mut kept = intent("r:3", Replicas::Fixed(5));
        kept.roll = false;
        let current = md.current.clone();
        md.update(&kept);
        assert_eq!(md.current, current);
    }
}
