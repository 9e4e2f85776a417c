//! Dead letters: messages a role refused unread (a body that disagrees with the subject it
//! came on) or gave up on (an input that failed on every delivery), kept in `HCP_DEAD` under
//! `<p>.<tenant>.dead.<role>` for whoever investigates, for 30 days.
//!
//! Everything `hypersaga dead-letter list|show` needs is recorded when the message is moved
//! there, in headers beside its untouched payload ([`Refused::headers`]): where it was sent,
//! why it was refused (a [`DeadCode`] a program can branch on, and a message for people), the
//! role and the consumer that refused it, the tenant, its `Nats-Msg-Id`, trace parent, the
//! stream and sequence it was read from and how often it was delivered. *When* is the time
//! `HCP_DEAD` stored it.
//!
//! A redrive publishes the payload again to the subject it was first sent to
//! ([`Bus::redrive_dead_letter`], the coordinator's to do), with a `Nats-Msg-Id` derived from
//! the dead letter's sequence ([`redrive_msg_id`]), then deletes the dead letter. Repeated —
//! asked twice, or after the redriver died between the publish and the delete — the publish
//! is de-duplicated by JetStream within its window ([`crate::DEDUP_WINDOW`]) and the delete
//! finds nothing; once the dead letter is gone, there is nothing left to redrive.

use std::collections::BTreeMap;

use async_nats::HeaderMap;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::{DeleteMessageErrorKind, RawMessageErrorKind};
use async_nats::jetstream::{self, ErrorCode};
use bytes::Bytes;
use hypersaga_telemetry::{TRACEPARENT, TraceParent};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::access::WORKER_SERVICES;
use crate::{Bus, DEAD_STREAM, Error, Result, Role, Subjects};

/// Header of a dead letter: the subject it was sent to.
pub const DEAD_SUBJECT_HEADER: &str = "Hypersaga-Dead-Subject";
/// Header of a dead letter: why it was refused, for people.
pub const DEAD_REASON_HEADER: &str = "Hypersaga-Dead-Reason";
/// Header of a dead letter: why it was refused, as a [`DeadCode`].
pub const DEAD_CODE_HEADER: &str = "Hypersaga-Dead-Code";
/// Header of a dead letter: the role that refused it (`coordinator`, `dns`, …).
pub const DEAD_ROLE_HEADER: &str = "Hypersaga-Dead-Role";
/// Header of a dead letter: the durable consumer it was read through.
pub const DEAD_CONSUMER_HEADER: &str = "Hypersaga-Dead-Consumer";
/// Header of a dead letter: the tenant its subject names (`unknown` for none).
pub const DEAD_TENANT_HEADER: &str = "Hypersaga-Dead-Tenant";
/// Header of a dead letter: the original message's `Nats-Msg-Id`.
pub const DEAD_MSG_ID_HEADER: &str = "Hypersaga-Dead-Msg-Id";
/// Header of a dead letter: the stream the original was read from.
pub const DEAD_STREAM_HEADER: &str = "Hypersaga-Dead-Stream";
/// Header of a dead letter: the original's sequence in that stream.
pub const DEAD_SEQUENCE_HEADER: &str = "Hypersaga-Dead-Sequence";
/// Header of a dead letter: how many times the original was delivered.
pub const DEAD_DELIVERIES_HEADER: &str = "Hypersaga-Dead-Deliveries";
/// Header of a redriven message: the dead letter it was published again from
/// (`HCP_DEAD:<sequence>`).
pub const REDRIVEN_FROM_HEADER: &str = "Hypersaga-Redriven-From";

/// The tenant of a dead letter whose subject names none (outside the bus's prefix).
pub const UNKNOWN_TENANT: &str = "unknown";

/// Why a message was dead-lettered, for programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadCode {
    /// Its body disagrees with its subject about whom it is for or who sent it (another
    /// tenant, another service's step). The subject is what permissions vouch for, so the
    /// body is not believed; sent again, it would be refused again.
    Disowned,
    /// An input that failed on every one of its deliveries (`coordinator.poison_after`): a
    /// fault outside the message (a saga record this version cannot read, say). Once the
    /// fault is fixed, a redrive has it acted on.
    Poison,
    /// Dead-lettered by a version that recorded no code.
    Unknown,
}

impl DeadCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disowned => "disowned",
            Self::Poison => "poison",
            Self::Unknown => "unknown",
        }
    }

    /// The code of a header's value; anything else (an older version's, none) is `Unknown`.
    pub fn parse(s: &str) -> Self {
        match s {
            "disowned" => Self::Disowned,
            "poison" => Self::Poison,
            _ => Self::Unknown,
        }
    }
}

impl std::fmt::Display for DeadCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message a role refuses, with what is known of it where it was read.
#[derive(Clone, Debug)]
pub struct Refused {
    pub role: Role,
    pub subject: String,
    pub payload: Bytes,
    pub code: DeadCode,
    pub reason: String,
    /// The durable consumer it was read through.
    pub consumer: Option<String>,
    /// The stream it was read from and its sequence there.
    pub origin: Option<(String, u64)>,
    pub deliveries: Option<u64>,
    /// Its `Nats-Msg-Id` and trace parent, as sent.
    pub msg_id: Option<String>,
    pub trace_parent: Option<String>,
}

impl Refused {
    /// A message delivered by a JetStream consumer, refused by `role`.
    pub fn of(
        msg: &jetstream::Message,
        role: &Role,
        code: DeadCode,
        reason: impl Into<String>,
    ) -> Self {
        let info = msg.info().ok();
        let header = |name: &str| {
            msg.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_owned())
        };
        Self {
            role: role.clone(),
            subject: msg.subject.to_string(),
            payload: msg.payload.clone(),
            code,
            reason: reason.into(),
            consumer: info.as_ref().map(|i| i.consumer.to_owned()),
            origin: info
                .as_ref()
                .map(|i| (i.stream.to_owned(), i.stream_sequence)),
            deliveries: info.as_ref().and_then(|i| u64::try_from(i.delivered).ok()),
            msg_id: msg
                .headers
                .as_ref()
                .and_then(|h| h.get(async_nats::header::NATS_MESSAGE_ID))
                .map(|v| v.as_str().to_owned()),
            trace_parent: header(TRACEPARENT),
        }
    }

    /// The tenant the message's subject names, `unknown` if none.
    pub fn tenant<'a>(&'a self, subjects: &Subjects) -> &'a str {
        subjects
            .address(&self.subject)
            .map_or(UNKNOWN_TENANT, |(tenant, _, _)| tenant)
    }

    /// The headers it is kept with in `HCP_DEAD`: everything [`DeadLetter`] shows. Its own
    /// `Nats-Msg-Id` comes from where it was read, so a dead letter whose refusal is
    /// repeated (the original's ack was lost) is kept once.
    pub fn headers(&self, subjects: &Subjects) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(DEAD_SUBJECT_HEADER, self.subject.as_str());
        h.insert(DEAD_REASON_HEADER, one_line(&self.reason).as_str());
        h.insert(DEAD_CODE_HEADER, self.code.as_str());
        h.insert(DEAD_ROLE_HEADER, self.role.name().as_str());
        h.insert(DEAD_TENANT_HEADER, self.tenant(subjects));
        if let Some(consumer) = &self.consumer {
            h.insert(DEAD_CONSUMER_HEADER, consumer.as_str());
        }
        if let Some((stream, sequence)) = &self.origin {
            h.insert(DEAD_STREAM_HEADER, stream.as_str());
            h.insert(DEAD_SEQUENCE_HEADER, sequence.to_string().as_str());
            h.insert(
                async_nats::header::NATS_MESSAGE_ID,
                format!("dead:{stream}:{sequence}").as_str(),
            );
        }
        if let Some(n) = self.deliveries {
            h.insert(DEAD_DELIVERIES_HEADER, n.to_string().as_str());
        }
        if let Some(id) = &self.msg_id {
            h.insert(DEAD_MSG_ID_HEADER, id.as_str());
        }
        if let Some(t) = &self.trace_parent {
            // Under its own name: tracing tools link the dead letter to the original's trace.
            h.insert(TRACEPARENT, t.as_str());
        }
        h
    }
}

/// Whether JetStream's error says the message is not there. A delete of a sequence the
/// stream does not hold is answered "message delete failed" (10057) saying so, not 10037.
fn no_message(e: &jetstream::Error) -> bool {
    e.error_code() == ErrorCode::NO_MESSAGE_FOUND
        || (e.error_code() == ErrorCode::STREAM_MESSAGE_DELETE_FAILED
            && e.to_string().contains("no message found"))
}

/// A header value is one line: a reason with a line break would end the header block.
fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// A dead letter as `HCP_DEAD` keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeadLetter {
    /// Its sequence in `HCP_DEAD`: what list, show, redrive and purge name it by.
    pub sequence: u64,
    /// When it was dead-lettered (stored in `HCP_DEAD`).
    pub time: OffsetDateTime,
    /// The tenant its subject names (`unknown` for none).
    pub tenant: String,
    /// The subject it was sent to, where a redrive sends it again.
    pub subject: String,
    pub code: DeadCode,
    pub reason: String,
    /// The role that refused it, and the consumer it was read through (empty if unknown).
    pub role: String,
    pub consumer: String,
    /// The original's `Nats-Msg-Id` and trace parent (empty if it had none).
    pub msg_id: String,
    pub trace_parent: String,
    /// The stream it was read from and its sequence there.
    pub origin: Option<(String, u64)>,
    pub deliveries: Option<u64>,
    pub payload: Bytes,
}

impl DeadLetter {
    /// Reads a message of `HCP_DEAD`. Its tenant and the role that refused it are read from
    /// the subject it is kept under, which permissions vouch for (a role may publish only
    /// `<p>.*.dead.<its name>`, and a published subject holds no wildcard); the headers say
    /// the rest. One kept by an older version, with only its subject and reason, reads with
    /// code `unknown`.
    pub fn from_stored(subjects: &Subjects, m: StreamMessage) -> Self {
        let header = |name: &str| {
            m.headers
                .get(name)
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default()
        };
        let (tenant, role) = match subjects.address(&m.subject) {
            Some((tenant, "dead", role)) => (tenant.to_owned(), role.to_owned()),
            // Not where dead letters are kept: believe the headers, and never redrive it.
            _ => (header(DEAD_TENANT_HEADER), header(DEAD_ROLE_HEADER)),
        };
        let stream = header(DEAD_STREAM_HEADER);
        let origin = header(DEAD_SEQUENCE_HEADER)
            .parse::<u64>()
            .ok()
            .filter(|_| !stream.is_empty())
            .map(|seq| (stream.clone(), seq));
        Self {
            sequence: m.sequence,
            time: m.time,
            tenant,
            subject: header(DEAD_SUBJECT_HEADER),
            code: DeadCode::parse(&header(DEAD_CODE_HEADER)),
            reason: header(DEAD_REASON_HEADER),
            role,
            consumer: header(DEAD_CONSUMER_HEADER),
            msg_id: header(DEAD_MSG_ID_HEADER),
            trace_parent: header(TRACEPARENT),
            origin,
            deliveries: header(DEAD_DELIVERIES_HEADER).parse().ok(),
            payload: m.payload,
        }
    }

    /// Whether a redrive may publish it again where it came from, or why not. Only to a
    /// subject of the bus that the role which refused it consumes, of the dead letter's own
    /// tenant: a dead letter is anyone's message as far as its headers go (a role that may
    /// dead-letter could write any), and the redriver must not be made to publish anywhere
    /// else. A message refused for disagreeing with its subject would only be refused again.
    pub fn redrivable(&self, subjects: &Subjects) -> std::result::Result<(), String> {
        if self.code == DeadCode::Disowned {
            return Err(
                "it was refused for disagreeing with its subject, and would be refused again: \
                 purge it"
                    .into(),
            );
        }
        let Some((tenant, kind, rest)) = subjects
            .address(&self.subject)
            .filter(|_| !self.subject.contains(['*', '>', ' ', '\t']))
        else {
            return Err(format!(
                "its subject {:?} is not one of the bus's",
                self.subject
            ));
        };
        if tenant != self.tenant {
            return Err(format!(
                "its subject {:?} is not of its tenant {:?}",
                self.subject, self.tenant
            ));
        }
        let consumed_by_its_role = match kind {
            // A service's command, refused by that service.
            "cmd" => WORKER_SERVICES.contains(&rest) && rest == self.role,
            // A service's event or a saga input, refused by the coordinator.
            "evt" => WORKER_SERVICES.contains(&rest) && self.role == Role::Coordinator.name(),
            "saga" => {
                ["start", "tick", "operate", "redrive"].contains(&rest)
                    && self.role == Role::Coordinator.name()
            }
            _ => false,
        };
        if !consumed_by_its_role {
            return Err(format!(
                "its subject {:?} is not an input of the role that refused it ({:?})",
                self.subject, self.role
            ));
        }
        Ok(())
    }
}

/// The `Nats-Msg-Id` a redrive publishes dead letter `sequence` again with: the same for
/// every redrive of it, so JetStream keeps one.
pub fn redrive_msg_id(sequence: u64) -> String {
    format!("{DEAD_STREAM}:{sequence}:redrive")
}

/// The `Nats-Msg-Id` of the request to redrive dead letter `sequence`.
pub fn redrive_request_msg_id(sequence: u64) -> String {
    format!("{DEAD_STREAM}:{sequence}:redrive-request")
}

/// An admin's request that dead letter `sequence` be sent again, on
/// `<p>.<tenant>.saga.redrive` (`<tenant>`: the dead letter's). The coordinator, which may
/// publish to every subject a dead letter can come from, does it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedriveRequest {
    pub v: u32,
    pub sequence: u64,
    /// Who asked (`admin:<name>`).
    pub actor: String,
}

/// What a redrive did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redriven {
    /// Published again on `subject` with `msg_id`, and the dead letter deleted.
    Sent { subject: String, msg_id: String },
    /// No such dead letter (any more): redriven or purged already, or expired.
    Gone,
    /// Not to be sent again, and why; the dead letter stays.
    Refused(String),
}

/// A page of dead letters, and the sequence the next one starts at (`None`: the last page).
pub type Page = (Vec<DeadLetter>, Option<u64>);

impl Bus {
    /// Keeps a message refused unread or given up on in `HCP_DEAD`, under its subject's
    /// tenant and the role that refused it, with where it came from and why. Idempotent: a
    /// repeated refusal of the same delivery is kept once (its `Nats-Msg-Id` is the
    /// original's stream and sequence).
    pub async fn dead_letter(&self, refused: &Refused) -> Result<()> {
        let subjects = self.subjects();
        let role = refused.role.name();
        metrics::counter!("hypersaga_dead_letters_total", "role" => role.clone()).increment(1);
        let subject = subjects.dead(refused.tenant(subjects), &role);
        self.jetstream()
            .publish_with_headers(subject, refused.headers(subjects), refused.payload.clone())
            .await
            .map_err(|e| Error::js("dead-letter", e))?
            .await
            .map_err(|e| Error::js("dead-letter ack", e))?;
        Ok(())
    }

    async fn dead_stream(&self) -> Result<jetstream::stream::Stream<()>> {
        self.jetstream()
            .get_stream_no_info(DEAD_STREAM)
            .await
            .map_err(|e| Error::js("open HCP_DEAD", e))
    }

    /// Dead letter `sequence`, if `HCP_DEAD` still has it.
    pub async fn dead_letter_at(&self, sequence: u64) -> Result<Option<DeadLetter>> {
        let stream = self.dead_stream().await?;
        match stream.get_raw_message(sequence).await {
            Ok(m) => Ok(Some(DeadLetter::from_stored(self.subjects(), m))),
            Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(Error::js("read a dead letter", e)),
        }
    }

    /// Up to `limit` dead letters (of one tenant, or all), oldest first, from sequence `from`.
    pub async fn dead_letters(
        &self,
        tenant: Option<&str>,
        from: u64,
        limit: usize,
    ) -> Result<Page> {
        let stream = self.dead_stream().await?;
        let filter = self.subjects().dead_filter(tenant);
        let mut letters = Vec::new();
        let mut at = from.max(1);
        loop {
            let m = match stream.get_first_raw_message_by_subject(&filter, at).await {
                Ok(m) => m,
                Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => {
                    return Ok((letters, None));
                }
                Err(e) => return Err(Error::js("list dead letters", e)),
            };
            if letters.len() == limit {
                return Ok((letters, Some(m.sequence)));
            }
            at = m.sequence + 1;
            letters.push(DeadLetter::from_stored(self.subjects(), m));
        }
    }

    /// How many dead letters each tenant has.
    pub async fn dead_letter_counts(&self) -> Result<BTreeMap<String, u64>> {
        use futures::TryStreamExt;
        let stream = self.dead_stream().await?;
        let per_subject: Vec<(String, usize)> = stream
            .info_with_subjects(self.subjects().dead_filter(None))
            .await
            .map_err(|e| Error::js("count dead letters", e))?
            .try_collect()
            .await
            .map_err(|e| Error::js("count dead letters", e))?;
        let mut counts = BTreeMap::new();
        for (subject, n) in per_subject {
            if let Some((tenant, _, _)) = self.subjects().address(&subject) {
                *counts.entry(tenant.to_owned()).or_default() += n as u64;
            }
        }
        Ok(counts)
    }

    /// Deletes dead letter `sequence`: whether it was there.
    pub async fn delete_dead_letter(&self, sequence: u64) -> Result<bool> {
        let stream = self.dead_stream().await?;
        match stream.delete_message(sequence).await {
            Ok(deleted) => Ok(deleted),
            Err(e) if matches!(e.kind(), DeleteMessageErrorKind::JetStream(j) if no_message(&j)) => {
                Ok(false)
            }
            Err(e) => Err(Error::js("delete a dead letter", e)),
        }
    }

    /// Deletes every dead letter of `tenant` (or of every tenant): how many.
    pub async fn purge_dead_letters(&self, tenant: Option<&str>) -> Result<u64> {
        let stream = self.dead_stream().await?;
        let purged = stream
            .purge()
            .filter(self.subjects().dead_filter(tenant))
            .await
            .map_err(|e| Error::js("purge dead letters", e))?;
        Ok(purged.purged)
    }

    /// Asks the coordinator to redrive `letter` (see [`Bus::redrive_dead_letter`]): a durable
    /// request, so a coordinator that dies on it leaves it to the next. Asked twice within
    /// JetStream's de-duplication window, it is one request.
    pub async fn request_redrive(&self, letter: &DeadLetter, actor: &str) -> Result<()> {
        let request = RedriveRequest {
            v: crate::ENVELOPE_VERSION,
            sequence: letter.sequence,
            actor: actor.to_owned(),
        };
        let trace = TraceParent::parse_or_new(Some(letter.trace_parent.as_str()));
        self.publish_json(
            &self.subjects().saga_redrive(&letter.tenant),
            &redrive_request_msg_id(letter.sequence),
            &trace,
            &request,
        )
        .await
    }

    /// Publishes dead letter `sequence` of `tenant` again where it was sent, then deletes it.
    /// Idempotent: a repeated redrive publishes with the same `Nats-Msg-Id`
    /// ([`redrive_msg_id`]), which JetStream drops within its de-duplication window, and a
    /// dead letter already deleted is [`Redriven::Gone`].
    pub async fn redrive_dead_letter(&self, tenant: &str, sequence: u64) -> Result<Redriven> {
        let Some(letter) = self.dead_letter_at(sequence).await? else {
            return Ok(Redriven::Gone);
        };
        if letter.tenant != tenant {
            return Ok(Redriven::Refused(format!(
                "dead letter {sequence} is tenant {:?}'s, not {tenant:?}'s",
                letter.tenant
            )));
        }
        if let Err(why) = letter.redrivable(self.subjects()) {
            return Ok(Redriven::Refused(why));
        }
        let msg_id = redrive_msg_id(sequence);
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id.as_str());
        headers.insert(
            REDRIVEN_FROM_HEADER,
            format!("{DEAD_STREAM}:{sequence}").as_str(),
        );
        if !letter.trace_parent.is_empty() {
            headers.insert(TRACEPARENT, letter.trace_parent.as_str());
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(&letter.payload).is_ok() {
            headers.insert("Content-Type", "application/json");
        }
        self.jetstream()
            .publish_with_headers(letter.subject.clone(), headers, letter.payload.clone())
            .await
            .map_err(|e| Error::js("redrive", e))?
            .await
            .map_err(|e| Error::js("redrive ack", e))?;
        self.delete_dead_letter(sequence).await?;
        metrics::counter!("hypersaga_dead_letters_redriven_total", "role" => letter.role.clone())
            .increment(1);
        Ok(Redriven::Sent {
            subject: letter.subject,
            msg_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(subject: &str, headers: HeaderMap, payload: &str) -> StreamMessage {
        StreamMessage {
            subject: subject.into(),
            sequence: 42,
            headers,
            payload: Bytes::from(payload.to_owned()),
            time: time::macros::datetime!(2026-11-29 10:00 UTC),
        }
    }

    fn refused(role: Role, subject: &str, code: DeadCode) -> Refused {
        Refused {
            role,
            subject: subject.into(),
            payload: Bytes::from_static(br#"{"v":1}"#),
            code,
            reason: "not processed after 3 deliveries:\nsaga record unreadable".into(),
            consumer: Some("coordinator".into()),
            origin: Some(("HCP_EVT".into(), 17)),
            deliveries: Some(3),
            msg_id: Some("op-1:operate:call-1".into()),
            trace_parent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        }
    }

    #[test]
    fn a_dead_letter_reads_back_everything_recorded_when_it_was_refused() {
        let s = Subjects::new("hcp");
        let r = refused(Role::Coordinator, "hcp.acme.saga.operate", DeadCode::Poison);
        let headers = r.headers(&s);
        assert_eq!(
            headers
                .get(async_nats::header::NATS_MESSAGE_ID)
                .map(|v| v.as_str()),
            Some("dead:HCP_EVT:17"),
            "a repeated refusal of the same delivery is kept once"
        );
        let letter = DeadLetter::from_stored(
            &s,
            stored(&s.dead(r.tenant(&s), "coordinator"), headers, r#"{"v":1}"#),
        );
        assert_eq!(
            letter,
            DeadLetter {
                sequence: 42,
                time: time::macros::datetime!(2026-11-29 10:00 UTC),
                tenant: "acme".into(),
                subject: "hcp.acme.saga.operate".into(),
                code: DeadCode::Poison,
                // One line: a line break would end the header block.
                reason: "not processed after 3 deliveries: saga record unreadable".into(),
                role: "coordinator".into(),
                consumer: "coordinator".into(),
                msg_id: "op-1:operate:call-1".into(),
                trace_parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
                origin: Some(("HCP_EVT".into(), 17)),
                deliveries: Some(3),
                payload: Bytes::from_static(br#"{"v":1}"#),
            }
        );
    }

    #[test]
    fn an_older_versions_dead_letter_reads_with_what_it_has() {
        let s = Subjects::new("hcp");
        let mut h = HeaderMap::new();
        h.insert(DEAD_SUBJECT_HEADER, "hcp.acme.cmd.dns");
        h.insert(DEAD_REASON_HEADER, "a command for tenant \"globex\"");
        let letter = DeadLetter::from_stored(&s, stored("hcp.acme.dead.dns", h, "{}"));
        assert_eq!(letter.code, DeadCode::Unknown);
        assert_eq!(
            (letter.tenant.as_str(), letter.role.as_str()),
            ("acme", "dns")
        );
        assert_eq!(letter.subject, "hcp.acme.cmd.dns");
        assert_eq!((letter.origin, letter.deliveries), (None, None));
        assert!(letter.consumer.is_empty() && letter.msg_id.is_empty());
    }

    #[test]
    fn a_subject_outside_the_prefix_is_kept_as_unknown_tenants() {
        let s = Subjects::new("hcp");
        let r = refused(Role::Coordinator, "elsewhere.x", DeadCode::Poison);
        assert_eq!(r.tenant(&s), UNKNOWN_TENANT);
        let letter = DeadLetter::from_stored(
            &s,
            stored("hcp.unknown.dead.coordinator", r.headers(&s), "{}"),
        );
        assert_eq!(letter.tenant, UNKNOWN_TENANT);
        assert!(letter.redrivable(&s).is_err());
    }

    #[test]
    fn only_a_poison_input_of_the_role_that_refused_it_is_sent_again() {
        let s = Subjects::new("hcp");
        let letter = |role: Role, subject: &str, code: DeadCode| {
            let r = refused(role, subject, code);
            DeadLetter::from_stored(
                &s,
                stored(&s.dead(r.tenant(&s), &r.role.name()), r.headers(&s), "{}"),
            )
        };
        let worker = Role::Worker("dns".into());
        for ok in [
            letter(Role::Coordinator, "hcp.acme.saga.operate", DeadCode::Poison),
            letter(Role::Coordinator, "hcp.acme.evt.network", DeadCode::Poison),
            letter(Role::Coordinator, "hcp.acme.saga.tick", DeadCode::Unknown),
            letter(worker.clone(), "hcp.acme.cmd.dns", DeadCode::Poison),
        ] {
            assert_eq!(ok.redrivable(&s), Ok(()), "{ok:?}");
        }
        for kept in [
            // Would be refused again.
            letter(Role::Coordinator, "hcp.acme.evt.dns", DeadCode::Disowned),
            // Not what the role consumes: another service's commands, the JetStream API, audit.
            letter(worker.clone(), "hcp.acme.cmd.network", DeadCode::Poison),
            letter(worker, "hcp.acme.evt.dns", DeadCode::Poison),
            letter(Role::Coordinator, "hcp.acme.audit.demo", DeadCode::Poison),
            letter(Role::Coordinator, "hcp.acme.saga.other", DeadCode::Poison),
            letter(Role::Coordinator, "hcp.acme.evt.dns.x", DeadCode::Poison),
            letter(
                Role::Coordinator,
                "$JS.API.STREAM.DELETE.HCP_EVT",
                DeadCode::Poison,
            ),
        ] {
            assert!(kept.redrivable(&s).is_err(), "{kept:?}");
        }
        // A wildcard where a tenant goes.
        let mut wild = letter(Role::Coordinator, "hcp.*.saga.operate", DeadCode::Poison);
        wild.tenant = "*".into();
        assert!(wild.redrivable(&s).is_err());
        // Another tenant's subject under this tenant's dead letter (forged headers).
        let mut forged = letter(Role::Coordinator, "hcp.acme.saga.operate", DeadCode::Poison);
        forged.tenant = "globex".into();
        assert!(forged.redrivable(&s).is_err());
    }

    #[test]
    fn every_redrive_of_a_dead_letter_carries_the_same_message_id() {
        assert_eq!(redrive_msg_id(7), redrive_msg_id(7));
        assert_ne!(redrive_msg_id(7), redrive_msg_id(8));
        assert_ne!(redrive_msg_id(7), redrive_request_msg_id(7));
        assert_eq!(DeadCode::parse("poison"), DeadCode::Poison);
        assert_eq!(
            DeadCode::parse(DeadCode::Disowned.as_str()),
            DeadCode::Disowned
        );
        assert_eq!(DeadCode::parse("whatever"), DeadCode::Unknown);
    }
}
