//! The infrastructure provider behind a NodePool's Machines: CAPZ making VMs in the
//! configured Azure (the ARM emulator or the real one), or, without one, a provider that
//! has every Machine's infrastructure at once and removes it at once, so the same CAPI
//! simulation (scaling, rollouts, conditions) runs in tests of the Kubernetes API alone.

use std::collections::HashMap;
use std::time::Instant;

use super::machines::Provisioned;
use super::pool::{Plan, Pool, Report};

/// A NodePool's infrastructure provider.
pub enum Capz {
    /// CAPZ against Azure, one task per pool.
    Azure(Pool),
    /// No cloud: infrastructure is there from when a Machine is first seen.
    Emulated(Emulated),
}

/// The cloudless provider: when each Machine was first seen.
#[derive(Default)]
pub struct Emulated {
    seen: HashMap<String, Instant>,
}

/// What the emulated provider needs of one Machine.
pub struct Seen<'a> {
    pub machine: &'a str,
    pub deleting: bool,
    /// The `providerID` its VM would have, if the HostedCluster says where it would be.
    pub provider_id: Option<String>,
}

impl Capz {
    /// Hands the Azure CAPZ its plan (the emulated provider needs none).
    pub fn submit(&self, plan: Option<Plan>) {
        if let (Capz::Azure(pool), Some(plan)) = (self, plan) {
            pool.submit(plan);
        }
    }

    /// What the provider reports for a Machine.
    pub fn report(&mut self, seen: &Seen<'_>, now: Instant) -> Option<Report> {
        match self {
            Capz::Azure(pool) => pool.report(seen.machine),
            Capz::Emulated(e) => Some(e.report(seen, now)),
        }
    }

    /// Forgets Machines that are gone.
    pub fn retain(&mut self, machines: &[&str]) {
        if let Capz::Emulated(e) = self {
            e.seen.retain(|m, _| machines.contains(&m.as_str()));
        }
    }
}

impl Emulated {
    fn report(&mut self, seen: &Seen<'_>, now: Instant) -> Report {
        if seen.deleting {
            return Report::Deleted;
        }
        let at = *self.seen.entry(seen.machine.to_owned()).or_insert(now);
        Report::Provisioned {
            vm: Provisioned {
                provider_id: seen.provider_id.clone().unwrap_or_default(),
                address: None,
            },
            at,
        }
    }
}
