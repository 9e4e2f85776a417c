//! Dry runs and preflights: what an operation would do, asked of the services that run its
//! steps ([`hypersaga_bus::plan`]), level by level of its DAG, so each step is planned with
//! the outputs the steps before it predict. Nothing is written.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::future::join_all;
use hypersaga_api::v1 as pb;
use hypersaga_bus::plan::{
    Change, Finding, PlanReply, PlanRequest, PlannedStep, StepPlan, Target, Verb,
};
use hypersaga_bus::{Action, StepContext, step_service};
use hypersaga_model::{ClusterRecord, ClusterSpec, ErrorInfo, Names, TenantId};
use hypersaga_saga::kinds::{self, Direction, Existing, PlanInput};
use hypersaga_saga::{Retain, StepDef};
use tonic::Status;
use tonic_types::{ErrorDetails, StatusExt};
use tracing::warn;

use super::Gateway;
use crate::convert::error_to_pb;

/// How long one service may take to plan its steps of one level.
const PLAN_TIMEOUT: Duration = Duration::from_secs(10);
/// The code of a step not planned because its service did not answer in time.
const TIMED_OUT: &str = "PlanTimedOut";

/// What the services said of each step, in the order of the plan.
pub(super) struct Planned {
    pub steps: Vec<(StepDef, Result<StepPlan, ErrorInfo>)>,
}

impl Planned {
    /// Names each finding's field as the request that asked for the change does (`rename`
    /// gives the new name, or `None` to keep it): a day-2 call's fields are not the spec's.
    pub fn rename_fields(&mut self, rename: impl Fn(&str) -> Option<String>) {
        let plans = self.steps.iter_mut().filter_map(|(_, p)| p.as_mut().ok());
        for finding in plans.flat_map(|p| p.findings.iter_mut()) {
            if let Some(named) = rename(&finding.field) {
                finding.field = named;
            }
        }
    }

    /// Every finding, with the step that found it.
    pub fn findings(&self) -> Vec<(&str, &Finding)> {
        self.steps
            .iter()
            .filter_map(|(def, plan)| plan.as_ref().ok().map(|p| (def.id.as_str(), p)))
            .flat_map(|(step, p)| p.findings.iter().map(move |f| (step, f)))
            .collect()
    }

    /// The plan as the API shows it.
    pub fn to_pb(&self, infra_id: &str, management_cluster: &str) -> pb::Plan {
        pb::Plan {
            infra_id: infra_id.to_owned(),
            management_cluster: management_cluster.to_owned(),
            steps: self
                .steps
                .iter()
                .map(|(def, plan)| pb::PlannedStep {
                    step: def.id.clone(),
                    service: step_service(&def.id).to_owned(),
                    depends_on: def.deps.clone(),
                    changes: plan
                        .as_ref()
                        .map(|p| p.changes.iter().map(change_to_pb).collect())
                        .unwrap_or_default(),
                    not_planned: plan.as_ref().err().map(error_to_pb),
                })
                .collect(),
            findings: self
                .findings()
                .into_iter()
                .map(|(step, f)| finding_to_pb(step, f))
                .collect(),
        }
    }

    /// FAILED_PRECONDITION with a `google.rpc.PreconditionFailure` naming every finding, when
    /// there are any.
    pub fn refusal(&self) -> Option<Status> {
        let findings = self.findings();
        if findings.is_empty() {
            return None;
        }
        let summary: Vec<String> = findings
            .iter()
            .map(|(_, f)| format!("{}: {}", f.field, f.message))
            .collect();
        let mut details = ErrorDetails::new();
        for (_, f) in &findings {
            let description = if f.remedy.is_empty() {
                f.message.clone()
            } else {
                format!("{} ({})", f.message, f.remedy)
            };
            details.add_precondition_failure_violation(&f.kind, &f.field, description);
        }
        Some(Status::with_error_details(
            tonic::Code::FailedPrecondition,
            format!(
                "preflight: {} problem(s) before anything is made: {}",
                findings.len(),
                summary.join("; ")
            ),
            details,
        ))
    }
}

impl Gateway {
    /// The create of `tenant`'s cluster `name` (of uid `uid`, infra id `infra_id`) as the
    /// coordinator would plan it, placed on `management_cluster`, planned by the services.
    pub(super) async fn plan_create(
        &self,
        tenant: &TenantId,
        name: &str,
        (uid, infra_id): (&str, &str),
        spec: &ClusterSpec,
        management_cluster: &str,
    ) -> Planned {
        let context = StepContext {
            cluster_uid: uid.to_owned(),
            names: Names::new(tenant, name, infra_id, &spec.base_domain),
            spec: spec.clone(),
            outputs: BTreeMap::new(),
            management_cluster: management_cluster.to_owned(),
        };
        let steps = hypersaga_saga::create_plan(spec, Default::default());
        self.plan_steps(tenant, name, steps, context, Action::Do)
            .await
    }

    /// A day-2 `change` of the cluster of `rec`, leading to `spec`, as the coordinator would
    /// plan it (from what the cluster owns), planned by the services: each step's `do`, or
    /// its `undo` for an operation that removes (a pool's or an add-on's).
    pub(super) async fn plan_change(
        &self,
        rec: &ClusterRecord,
        spec: &ClusterSpec,
        change: &super::day2::Change<'_>,
    ) -> Result<Planned, Status> {
        let existing = Existing::from_steps(rec.owned.keys().map(String::as_str));
        let steps = kinds::plan(
            change.kind,
            PlanInput {
                spec,
                node_pool: change.node_pool.as_deref(),
                addon: change.addon.as_deref(),
                retain: Retain::default(),
                existing: &existing,
            },
        )
        .map_err(|e| Status::failed_precondition(e.to_string()))?;
        let context = StepContext {
            cluster_uid: rec.uid.clone(),
            names: Names::new(&rec.tenant, &rec.name, &rec.infra_id, &spec.base_domain),
            spec: spec.clone(),
            outputs: rec.owned.clone(),
            management_cluster: rec.management_cluster.clone(),
        };
        let action = match kinds::behaviour(change.kind).direction {
            Direction::Forward => Action::Do,
            Direction::Backward => Action::Undo,
        };
        Ok(self
            .plan_steps(&rec.tenant, &rec.name, steps, context, action)
            .await)
    }

    /// Plans `steps` (an operation's, in DAG order) of `tenant`'s cluster `cluster` against
    /// `context`, asking each service for its steps of each level at once.
    pub(super) async fn plan_steps(
        &self,
        tenant: &TenantId,
        cluster: &str,
        steps: Vec<StepDef>,
        mut context: StepContext,
        action: Action,
    ) -> Planned {
        let mut plans: HashMap<String, Result<StepPlan, ErrorInfo>> = HashMap::new();
        let mut silent: HashMap<&str, ErrorInfo> = HashMap::new();
        let mut left: Vec<&StepDef> = steps.iter().collect();
        while !left.is_empty() {
            let (ready, blocked): (Vec<&StepDef>, Vec<&StepDef>) = left
                .iter()
                .partition(|s| s.deps.iter().all(|d| plans.contains_key(d)));
            if ready.is_empty() {
                // A cycle cannot come from the saga's plans; say so rather than loop.
                for s in blocked {
                    plans.insert(s.id.clone(), Err(not_planned("dependencies never planned")));
                }
                break;
            }
            let mut by_service: BTreeMap<&str, Vec<PlannedStep>> = BTreeMap::new();
            // A step after one that could not be planned is asked all the same: it is
            // planned if it does not need that one's outputs, and says so if it does.
            for s in &ready {
                by_service
                    .entry(step_service(&s.id))
                    .or_default()
                    .push(PlannedStep {
                        step: s.id.clone(),
                        action,
                    });
            }
            let asked = by_service.into_iter().map(|(service, steps)| {
                let req = PlanRequest::new(tenant.clone(), cluster, steps, context.clone());
                let silent = silent.get(service).cloned();
                async move {
                    // A service that let one request of this plan time out (alive on the bus
                    // but not answering: hung, or stopped) is not waited for again.
                    let reply = match silent {
                        Some(why) => Err(why),
                        None => self.ask(service, &req).await,
                    };
                    (service, req.steps.clone(), reply)
                }
            });
            for (service, asked, reply) in join_all(asked).await {
                if let Err(e) = &reply
                    && e.code == TIMED_OUT
                {
                    silent.insert(service, e.clone());
                }
                settle(&mut plans, &asked, reply);
            }
            for plan in plans.values().flatten() {
                if !plan.outputs.is_empty() {
                    context
                        .outputs
                        .insert(plan.step.clone(), plan.outputs.clone());
                }
            }
            left = blocked;
        }
        Planned {
            steps: steps
                .into_iter()
                .map(|def| {
                    let plan = plans
                        .remove(&def.id)
                        .unwrap_or_else(|| Err(not_planned("not asked")));
                    (def, plan)
                })
                .collect(),
        }
    }

    /// One service's answer to `req`, or why there is none.
    async fn ask(&self, service: &str, req: &PlanRequest) -> Result<PlanReply, ErrorInfo> {
        let subject = self.bus.subjects().plan(&req.tenant, service);
        self.ask_service(service, subject, req, PLAN_TIMEOUT).await
    }

    /// One service's answer to a request (a plan, a sweep's listing), or why there is none.
    pub(super) async fn ask_service<Q: serde::Serialize, A: serde::de::DeserializeOwned>(
        &self,
        service: &str,
        subject: String,
        req: &Q,
        within: Duration,
    ) -> Result<A, ErrorInfo> {
        let body = serde_json::to_vec(req)
            .map_err(|e| not_planned(&format!("cannot encode the request: {e}")))?;
        // The request is part of the caller's trace: each service's `plan` span is a child.
        let mut headers = async_nats::HeaderMap::new();
        if let Some(trace) = hypersaga_telemetry::otel::current() {
            headers.insert(
                hypersaga_telemetry::TRACEPARENT,
                hypersaga_telemetry::otel::outgoing(&trace)
                    .to_string()
                    .as_str(),
            );
        }
        // No replica listening (a service down or starting) is answered at once ("no
        // responders"): its steps are not planned, and a create goes on without them.
        let answer = tokio::time::timeout(
            within,
            self.bus
                .client()
                .request_with_headers(subject, headers, body.into()),
        )
        .await;
        // The client's own request timeout (as long as ours) may say so first: either way the
        // service is silent, and the rest of the plan does not wait for it again.
        let timed_out = || ErrorInfo {
            code: TIMED_OUT.into(),
            ..not_planned(&format!(
                "the {service} service did not answer within {} s",
                within.as_secs()
            ))
        };
        let msg = match answer {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::TimedOut => {
                return Err(timed_out());
            }
            Ok(Err(e)) => {
                warn!(%service, error = %e, "request to a service failed");
                return Err(not_planned(&format!(
                    "the {service} service did not answer: {e}"
                )));
            }
            Ok(Ok(msg)) => msg,
        };
        serde_json::from_slice(&msg.payload).map_err(|e| {
            not_planned(&format!(
                "the {service} service's answer does not decode: {e}"
            ))
        })
    }
}

/// Files a service's answer (or its absence) under each step it was asked.
fn settle(
    plans: &mut HashMap<String, Result<StepPlan, ErrorInfo>>,
    asked: &[PlannedStep],
    reply: Result<PlanReply, ErrorInfo>,
) {
    let (mut answered, error) = match reply {
        Ok(r) => (
            r.steps
                .into_iter()
                .map(|p| (p.step.clone(), p))
                .collect::<HashMap<_, _>>(),
            r.error,
        ),
        Err(e) => (HashMap::new(), Some(e)),
    };
    for s in asked {
        let plan = match answered.remove(&s.step) {
            Some(p) => Ok(p),
            None => Err(error
                .clone()
                .unwrap_or_else(|| not_planned("the service did not plan it"))),
        };
        plans.insert(s.step.clone(), plan);
    }
}

fn not_planned(why: &str) -> ErrorInfo {
    ErrorInfo {
        code: "NotPlanned".into(),
        message: why.to_owned(),
        ..Default::default()
    }
}

fn change_to_pb(c: &Change) -> pb::PlannedChange {
    pb::PlannedChange {
        target: c.target.map(target_name).unwrap_or_default().to_owned(),
        verb: c.verb.map(verb_name).unwrap_or_default().to_owned(),
        r#type: c.kind.clone(),
        name: c.name.clone(),
        id: c.id.clone(),
        api_version: c.api_version.clone(),
        location: c.location.clone(),
        note: c.note.clone(),
    }
}

fn finding_to_pb(step: &str, f: &Finding) -> pb::PreflightFinding {
    pb::PreflightFinding {
        field: f.field.clone(),
        kind: f.kind.clone(),
        message: f.message.clone(),
        remedy: f.remedy.clone(),
        step: step.to_owned(),
    }
}

pub(super) fn target_name(t: Target) -> &'static str {
    match t {
        Target::Azure => "azure",
        Target::Storage => "storage",
        Target::ManagementCluster => "management_cluster",
        Target::HostedCluster => "hosted_cluster",
    }
}

fn verb_name(v: Verb) -> &'static str {
    match v {
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Delete => "delete",
        Verb::Read => "read",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(id: &str, deps: &[&str]) -> StepDef {
        StepDef {
            id: id.to_owned(),
            deps: deps.iter().map(|d| (*d).to_owned()).collect(),
            undo: hypersaga_saga::UndoPolicy::Undo,
        }
    }

    #[test]
    fn a_service_that_did_not_answer_leaves_its_steps_unplanned_with_the_reason() {
        let mut plans = HashMap::new();
        let asked = vec![
            PlannedStep {
                step: "network.nsg".into(),
                action: Action::Do,
            },
            PlannedStep {
                step: "network.public-ip".into(),
                action: Action::Do,
            },
        ];
        let reply = PlanReply {
            v: 1,
            steps: vec![StepPlan {
                step: "network.nsg".into(),
                ..Default::default()
            }],
            error: Some(ErrorInfo {
                code: "PlanUnsupported".into(),
                message: "cannot plan network.public-ip yet".into(),
                ..Default::default()
            }),
        };
        settle(&mut plans, &asked, Ok(reply));
        assert!(plans["network.nsg"].is_ok());
        assert_eq!(
            plans["network.public-ip"].as_ref().unwrap_err().code,
            "PlanUnsupported"
        );
        let planned = Planned {
            steps: vec![
                (
                    def("network.nsg", &[]),
                    plans.remove("network.nsg").unwrap(),
                ),
                (
                    def("network.public-ip", &[]),
                    plans.remove("network.public-ip").unwrap(),
                ),
            ],
        };
        let pb = planned.to_pb("demo-x", "default");
        assert_eq!(
            pb.steps[1].not_planned.as_ref().map(|e| e.code.as_str()),
            Some("PlanUnsupported")
        );
        assert!(planned.refusal().is_none(), "no finding, no refusal");
    }

    #[test]
    fn every_finding_is_a_precondition_failure_with_its_field() {
        let finding = |field: &str, kind: &str| Finding {
            field: field.into(),
            kind: kind.into(),
            message: format!("{field} is wrong"),
            remedy: "fix it".into(),
        };
        let planned = Planned {
            steps: vec![(
                def("nodepool.workers", &[]),
                Ok(StepPlan {
                    step: "nodepool.workers".into(),
                    findings: vec![
                        finding("spec.node_pools[0].vm_size", "QUOTA"),
                        finding("spec.base_domain", "DNS_ZONE"),
                    ],
                    ..Default::default()
                }),
            )],
        };
        let status = planned.refusal().expect("refused");
        assert_eq!(status.code(), tonic::Code::FailedPrecondition);
        let violations = status
            .get_details_precondition_failure()
            .expect("PreconditionFailure")
            .violations;
        let subjects: Vec<&str> = violations.iter().map(|v| v.subject.as_str()).collect();
        assert_eq!(subjects, ["spec.node_pools[0].vm_size", "spec.base_domain"]);
        assert_eq!(violations[0].r#type, "QUOTA");
        assert!(
            status.message().contains("2 problem(s)"),
            "{}",
            status.message()
        );
    }
}
