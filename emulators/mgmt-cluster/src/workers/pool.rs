//! One NodePool's CAPZ: a task that works its Machines' orders against Azure one at a time,
//! while the operator, which never waits on the network, reads what it reports.
//!
//! The operator hands over a [`Plan`] every pass (level-triggered: the whole current intent,
//! not a change); the task runs while some order is not done and stops when all are, and a
//! new plan with work starts it again. A failed order is retried with a growing delay, as a
//! controller requeues an object whose reconcile failed, except after CAPZ's terminal
//! configuration error, which it never reconciles again; a plan change wakes the task early.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::arm_client::{Endpoints, Identity, Session};
use super::machines::{self, CreateError, Failure, Provisioned, Template};
use crate::lock;

/// First delay before an order that failed is tried again; it doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(8);

/// What to do with one Machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Order {
    pub machine: String,
    /// The Machine is being deleted: remove its resources.
    pub delete: bool,
    /// Where and what its resources are (its MachineSet's template).
    pub template: Template,
}

/// Everything the task needs, as the operator last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub identity: Identity,
    /// Deletions first, then creations oldest first.
    pub orders: Vec<Order>,
}

/// How far an order got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// Making: which CAPZ service is at work.
    Creating { service: &'static str },
    /// The VM runs (since `at`).
    Provisioned { vm: Provisioned, at: Instant },
    /// Making failed; it is tried again.
    CreateFailed(Failure),
    /// Making failed before any service ran, with an error CAPZ only logs; it is tried again.
    Requeued(String),
    /// CAPZ refused the machine's configuration for good (`failureReason`): never tried again.
    Invalid(Failure),
    /// Removing.
    Deleting,
    /// Nothing is left in Azure.
    Deleted,
    /// Removing failed; it is tried again.
    DeleteFailed(Failure),
}

impl Report {
    /// The error CAPZ reconciled into, if this is a failure.
    fn error(&self) -> Option<&str> {
        match self {
            Report::CreateFailed(f) | Report::DeleteFailed(f) | Report::Invalid(f) => {
                Some(&f.message)
            }
            Report::Requeued(why) => Some(why),
            _ => None,
        }
    }

    fn settles(&self, order: &Order) -> bool {
        match self {
            Report::Deleted => order.delete,
            Report::Provisioned { .. } | Report::Invalid(_) => !order.delete,
            _ => false,
        }
    }
}

#[derive(Default)]
struct State {
    plan: Option<Plan>,
    reports: HashMap<String, Report>,
    /// Failures in a row and when the order may be tried again.
    retry: HashMap<String, (u32, Instant)>,
    running: bool,
}

/// What the task does next.
enum Next {
    Work(Box<(Identity, Order)>),
    WaitUntil(Instant),
    Stop,
}

impl State {
    fn pending(&self) -> impl Iterator<Item = &Order> {
        self.plan
            .iter()
            .flat_map(|p| p.orders.iter())
            .filter(|o| self.reports.get(&o.machine).is_none_or(|r| !r.settles(o)))
    }

    fn next(&self, now: Instant) -> Next {
        let Some(plan) = &self.plan else {
            return Next::Stop;
        };
        let mut earliest: Option<Instant> = None;
        for order in self.pending() {
            match self.retry.get(&order.machine) {
                Some((_, at)) if *at > now => {
                    earliest = Some(earliest.map_or(*at, |e| e.min(*at)));
                }
                _ => {
                    return Next::Work(Box::new((plan.identity.clone(), order.clone())));
                }
            }
        }
        earliest.map_or(Next::Stop, Next::WaitUntil)
    }
}

/// The handle the operator keeps for one NodePool.
pub struct Pool {
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
    http: reqwest::Client,
    endpoints: Endpoints,
    /// Wakes the operator when a report changes.
    changed: Arc<Notify>,
}

impl Pool {
    pub fn new(http: reqwest::Client, endpoints: Endpoints, changed: Arc<Notify>) -> Self {
        Self {
            state: Arc::default(),
            wake: Arc::new(Notify::new()),
            http,
            endpoints,
            changed,
        }
    }

    /// Hands over the current plan; starts the task if there is work and it is not running.
    pub fn submit(&self, plan: Plan) {
        let mut st = lock(&self.state);
        let machines: Vec<&str> = plan.orders.iter().map(|o| o.machine.as_str()).collect();
        st.reports.retain(|m, _| machines.contains(&m.as_str()));
        st.retry.retain(|m, _| machines.contains(&m.as_str()));
        if st.plan.as_ref() == Some(&plan) {
            return;
        }
        st.plan = Some(plan);
        if st.running {
            drop(st);
            self.wake.notify_one();
            return;
        }
        if st.pending().next().is_none() {
            return;
        }
        st.running = true;
        drop(st);
        tokio::spawn(run(
            self.state.clone(),
            self.wake.clone(),
            self.http.clone(),
            self.endpoints.clone(),
            self.changed.clone(),
        ));
    }

    /// What the task last reported for `machine`.
    pub fn report(&self, machine: &str) -> Option<Report> {
        lock(&self.state).reports.get(machine).cloned()
    }
}

fn set(state: &Mutex<State>, changed: &Notify, machine: &str, report: Report) {
    lock(state).reports.insert(machine.to_owned(), report);
    changed.notify_one();
}

async fn run(
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
    http: reqwest::Client,
    endpoints: Endpoints,
    changed: Arc<Notify>,
) {
    let mut session: Option<Session> = None;
    loop {
        let next = {
            let mut st = lock(&state);
            let next = st.next(Instant::now());
            if matches!(next, Next::Stop) {
                st.running = false;
            }
            next
        };
        let (identity, order) = match next {
            Next::Stop => return,
            Next::WaitUntil(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at.into()) => {}
                    _ = wake.notified() => {}
                }
                continue;
            }
            Next::Work(work) => *work,
        };
        if session.as_ref().is_none_or(|s| *s.identity() != identity) {
            session = Some(Session::new(http.clone(), endpoints.clone(), identity));
        }
        let Some(session) = session.as_mut() else {
            continue;
        };
        let machine = order.machine.as_str();
        let outcome = if order.delete {
            set(&state, &changed, machine, Report::Deleting);
            match machines::delete(session, &order.template, machine).await {
                Ok(()) => Ok(Report::Deleted),
                Err(f) => Err(Report::DeleteFailed(f)),
            }
        } else {
            let progress = |service| {
                set(&state, &changed, machine, Report::Creating { service });
            };
            match machines::create(session, &order.template, machine, progress).await {
                Ok(vm) => Ok(Report::Provisioned {
                    vm,
                    at: Instant::now(),
                }),
                // Settled, as a success is: the order is done with.
                Err(CreateError::Terminal(f)) => Ok(Report::Invalid(f)),
                Err(CreateError::Condition(f)) => Err(Report::CreateFailed(f)),
                Err(CreateError::Logged(why)) => Err(Report::Requeued(why)),
            }
        };
        let mut st = lock(&state);
        match outcome {
            Ok(report) => {
                st.retry.remove(machine);
                st.reports.insert(machine.to_owned(), report);
            }
            Err(report) => {
                // controller-runtime logs every reconcile error ("Reconciler error"), the
                // ones CAPZ writes nowhere else too; `hypersaga dev` shows warnings, so a
                // machine that keeps failing says why in its log.
                tracing::warn!(
                    machine,
                    error = report.error().unwrap_or_default(),
                    "CAPZ reconcile error, requeued"
                );
                let failures = st.retry.get(machine).map_or(0, |(n, _)| *n) + 1;
                let delay = FIRST_RETRY
                    .saturating_mul(1 << failures.saturating_sub(1).min(8))
                    .min(MAX_RETRY);
                st.retry
                    .insert(machine.to_owned(), (failures, Instant::now() + delay));
                st.reports.insert(machine.to_owned(), report);
            }
        }
        drop(st);
        changed.notify_one();
    }
}
