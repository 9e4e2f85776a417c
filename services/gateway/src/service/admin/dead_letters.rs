//! The admin API's dead letters (`HCP_DEAD`): listed and shown with why, when and by whom
//! each message was refused; redriven (sent again where it came from, once) and purged, each
//! audited on the tenant's audit subject.
//!
//! The gateway reads and purges `HCP_DEAD` itself (the only rights it has on that stream). It
//! sends no command and no event: a redrive is a durable request to the coordinator
//! (`<p>.<tenant>.saga.redrive`), which may publish on every subject a dead letter can come
//! from, and does the publish and the delete ([`hypersaga_bus::Bus::redrive_dead_letter`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hypersaga_api::v1 as pb;
use hypersaga_bus::{DeadCode, DeadLetter};
use hypersaga_config::AdminConfig;
use hypersaga_model::TenantId;
use serde_json::json;
use tonic::Status;
use tonic_types::{ErrorDetails, StatusExt};
use tracing::{info, warn};

use super::{Admin, actor_of};
use crate::convert::ts as timestamp;
use crate::service::internal;
use crate::service::limits::Checks;
use crate::service::operator::ERROR_DOMAIN;

const DEFAULT_PAGE_SIZE: usize = 100;
const MAX_PAGE_SIZE: usize = 1000;
/// How long a redrive call waits for the coordinator to have done it.
const REDRIVE_WAIT: Duration = Duration::from_secs(10);

impl Admin {
    /// One page of dead letters, oldest first.
    pub(super) async fn dead_letter_page(
        &self,
        req: pb::ListDeadLettersRequest,
    ) -> Result<pb::ListDeadLettersResponse, Status> {
        let mut checks = Checks::new();
        let tenant = tenant_filter(&req.tenant, &mut checks);
        checks.page_token("page_token", &req.page_token);
        let from = match req.page_token.trim() {
            "" => 1,
            t => t.parse::<u64>().unwrap_or_else(|_| {
                checks.push(
                    "page_token",
                    "not a page token of ours: pass ListDeadLettersResponse.next_page_token",
                );
                1
            }),
        };
        checks.done()?;
        let page_size = match req.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n => (n as usize).min(MAX_PAGE_SIZE),
        };
        let (letters, next) = self
            .gateway
            .bus
            .dead_letters(tenant.as_ref().map(TenantId::as_str), from, page_size)
            .await
            .map_err(internal("list dead letters"))?;
        Ok(pb::ListDeadLettersResponse {
            dead_letters: letters
                .iter()
                .map(|l| self.dead_letter_to_pb(l, false))
                .collect(),
            next_page_token: next.map(|s| s.to_string()).unwrap_or_default(),
        })
    }

    pub(super) async fn dead_letter_shown(&self, sequence: u64) -> Result<pb::DeadLetter, Status> {
        let letter = self.dead_letter(sequence).await?;
        Ok(self.dead_letter_to_pb(&letter, true))
    }

    /// Dead letter `sequence`, NOT_FOUND if it is gone.
    async fn dead_letter(&self, sequence: u64) -> Result<DeadLetter, Status> {
        if sequence == 0 {
            let mut checks = Checks::new();
            checks.push(
                "sequence",
                "required: a dead letter's sequence (ListDeadLetters)",
            );
            checks.done()?;
        }
        self.gateway
            .bus
            .dead_letter_at(sequence)
            .await
            .map_err(internal("read a dead letter"))?
            .ok_or_else(|| {
                Status::not_found(format!(
                    "dead letter {sequence} not found: redriven, purged or expired (30 days)"
                ))
            })
    }

    /// Has the coordinator send dead letter `sequence` again and remove it, and waits a
    /// little for it. Idempotent: asked again while it is pending, it is the same request
    /// (JetStream de-duplicates it); once done, the dead letter is gone (NOT_FOUND).
    pub(super) async fn redrive(
        &self,
        admin: &AdminConfig,
        sequence: u64,
    ) -> Result<pb::RedriveDeadLetterResponse, Status> {
        let letter = self.dead_letter(sequence).await?;
        let bus = &self.gateway.bus;
        if let Err(why) = letter.redrivable(bus.subjects()) {
            return Err(Status::with_error_details(
                tonic::Code::FailedPrecondition,
                format!("dead letter {sequence} cannot be redriven: {why}"),
                ErrorDetails::with_error_info(
                    "DeadLetterNotRedrivable",
                    ERROR_DOMAIN,
                    HashMap::from([
                        ("sequence".to_owned(), sequence.to_string()),
                        ("reason_code".to_owned(), letter.code.as_str().to_owned()),
                    ]),
                ),
            ));
        }
        bus.request_redrive(&letter, &actor_of(admin))
            .await
            .map_err(internal("request a redrive"))?;
        let started = Instant::now();
        let done = loop {
            match bus.dead_letter_at(sequence).await {
                Ok(None) => break true,
                Ok(Some(_)) | Err(_) if started.elapsed() >= REDRIVE_WAIT => break false,
                Ok(Some(_)) => {}
                Err(e) => warn!(error = %e, "could not look whether a redrive is done"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        info!(dead_letter = sequence, tenant = %letter.tenant, subject = %letter.subject, done, admin = %admin.name, "dead letter redrive requested");
        self.audit_dead_letters(
            "redriven",
            &letter.tenant,
            admin,
            json!({
                "sequence": sequence,
                "subject": letter.subject,
                "reason_code": letter.code.as_str(),
                "done": done,
            }),
        )
        .await;
        Ok(pb::RedriveDeadLetterResponse {
            subject: letter.subject.clone(),
            msg_id: hypersaga_bus::dead::redrive_msg_id(sequence),
            dead_letter: Some(self.dead_letter_to_pb(&letter, false)),
            done,
        })
    }

    /// Removes one dead letter, or all (of one tenant): how many.
    pub(super) async fn purge(
        &self,
        admin: &AdminConfig,
        req: pb::PurgeDeadLettersRequest,
    ) -> Result<pb::PurgeDeadLettersResponse, Status> {
        let mut checks = Checks::new();
        let tenant = tenant_filter(&req.tenant, &mut checks);
        match (req.sequence, req.all) {
            (0, false) => checks.push(
                "sequence",
                "say what to purge: a dead letter's sequence, or all (with a tenant, all of \
                 that tenant's)",
            ),
            (s, true) if s != 0 => checks.push(
                "all",
                "a sequence names one dead letter: give it or all, not both",
            ),
            (s, false) if s != 0 && tenant.is_some() => checks.push(
                "tenant",
                "a sequence names one dead letter already: the tenant is for all",
            ),
            _ => {}
        }
        checks.done()?;
        let bus = &self.gateway.bus;
        if req.sequence != 0 {
            let letter = self.dead_letter(req.sequence).await?;
            let deleted = bus
                .delete_dead_letter(req.sequence)
                .await
                .map_err(internal("purge a dead letter"))?;
            if !deleted {
                return Err(Status::not_found(format!(
                    "dead letter {} not found: redriven, purged or expired",
                    req.sequence
                )));
            }
            info!(dead_letter = req.sequence, tenant = %letter.tenant, admin = %admin.name, "dead letter purged");
            self.audit_dead_letters(
                "purged",
                &letter.tenant,
                admin,
                json!({"count": 1, "sequence": req.sequence, "subject": letter.subject, "reason_code": letter.code.as_str()}),
            )
            .await;
            return Ok(pb::PurgeDeadLettersResponse { purged: 1 });
        }
        // Tenant by tenant, each audited with its own count.
        let tenants: Vec<String> = match &tenant {
            Some(t) => vec![t.to_string()],
            None => bus
                .dead_letter_counts()
                .await
                .map_err(internal("count dead letters"))?
                .into_keys()
                .collect(),
        };
        let mut purged = 0;
        for t in tenants {
            let n = bus
                .purge_dead_letters(Some(&t))
                .await
                .map_err(internal("purge dead letters"))?;
            if n > 0 {
                info!(tenant = %t, purged = n, admin = %admin.name, "dead letters purged");
                self.audit_dead_letters("purged", &t, admin, json!({"count": n}))
                    .await;
            }
            purged += n;
        }
        Ok(pb::PurgeDeadLettersResponse { purged })
    }

    /// `dead_letter.<kind>` on the tenant's audit subject. Dead letters of no tenant served
    /// now (`unknown`: a subject outside the bus's prefix; a removed tenant's) are only
    /// logged: there is no tenant's audit trail to put them on.
    async fn audit_dead_letters(
        &self,
        kind: &str,
        tenant: &str,
        admin: &AdminConfig,
        detail: serde_json::Value,
    ) {
        match TenantId::new(tenant)
            .ok()
            .filter(|id| self.directory.get(id).is_some())
        {
            Some(id) => {
                self.audit_event(&format!("dead_letter.{kind}"), &id, admin, detail)
                    .await
            }
            None => {
                warn!(tenant, kind, %detail, admin = %admin.name, "dead letters of no tenant served now: logged, not audited");
            }
        }
    }

    fn dead_letter_to_pb(&self, l: &DeadLetter, with_payload: bool) -> pb::DeadLetter {
        let redrivable = l.redrivable(self.gateway.bus.subjects());
        let (origin_stream, origin_sequence) = l.origin.clone().unwrap_or_default();
        pb::DeadLetter {
            sequence: l.sequence,
            dead_lettered_at: Some(timestamp(l.time)),
            tenant: l.tenant.clone(),
            subject: l.subject.clone(),
            reason_code: match l.code {
                DeadCode::Disowned => pb::dead_letter::Reason::Disowned,
                DeadCode::Poison => pb::dead_letter::Reason::Poison,
                DeadCode::Unknown => pb::dead_letter::Reason::Unspecified,
            } as i32,
            reason: l.reason.clone(),
            role: l.role.clone(),
            consumer: l.consumer.clone(),
            msg_id: l.msg_id.clone(),
            traceparent: l.trace_parent.clone(),
            origin_stream,
            origin_sequence,
            deliveries: l.deliveries.unwrap_or_default(),
            size: l.payload.len() as u64,
            payload: if with_payload {
                l.payload.to_vec()
            } else {
                Vec::new()
            },
            redrivable: redrivable.is_ok(),
            not_redrivable_reason: redrivable.err().unwrap_or_default(),
        }
    }
}

/// `tenant` of a request: none when empty, else a tenant id (or `unknown`, the dead letters
/// of no tenant).
fn tenant_filter(given: &str, checks: &mut Checks) -> Option<TenantId> {
    let given = given.trim();
    if given.is_empty() {
        return None;
    }
    match TenantId::new(given) {
        Ok(t) => Some(t),
        Err(e) => {
            checks.push("tenant", e.to_string());
            None
        }
    }
}
