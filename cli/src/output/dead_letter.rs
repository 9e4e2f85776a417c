//! Dead letters as the CLI prints them (`hypersaga dead-letter …`): a table of them, one in
//! detail with its payload (pretty JSON when it is JSON), and the documents behind
//! `-o json|yaml`.

use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

use super::addon::age;
use super::{Table, enum_name, time, time_text};

/// `dead-letter/<sequence>`.
pub fn dead_letter_name(sequence: u64) -> String {
    format!("dead-letter/{sequence}")
}

/// `DISOWNED` → `disowned`, `POISON` → `poison`; `unknown` when not recorded.
pub fn reason_code(code: i32) -> String {
    match pb::dead_letter::Reason::try_from(code) {
        Ok(pb::dead_letter::Reason::Unspecified) => "unknown".to_owned(),
        Ok(r) => enum_name(r.as_str_name(), "REASON_"),
        Err(_) => code.to_string(),
    }
}

/// The payload as a document: its JSON when it is JSON, else its text.
fn payload_value(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| Value::from(String::from_utf8_lossy(bytes)))
}

/// The payload for people: pretty JSON (keys sorted) when it is JSON, else its text.
pub fn payload_text(bytes: &[u8]) -> String {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// A dead letter as a document; its payload only when the API answered it (`show`).
pub fn dead_letter_json(d: &pb::DeadLetter) -> Value {
    let mut doc = json!({
        "sequence": d.sequence,
        "dead_lettered_at": time(&d.dead_lettered_at),
        "tenant": d.tenant,
        "subject": d.subject,
        "reason_code": reason_code(d.reason_code),
        "reason": d.reason,
        "role": d.role,
        "consumer": d.consumer,
        "msg_id": d.msg_id,
        "traceparent": d.traceparent,
        "origin": if d.origin_stream.is_empty() {
            Value::Null
        } else {
            json!({"stream": d.origin_stream, "sequence": d.origin_sequence})
        },
        "deliveries": d.deliveries,
        "size": d.size,
        "redrivable": d.redrivable,
        "not_redrivable_reason": d.not_redrivable_reason,
    });
    if !d.payload.is_empty()
        && let Some(map) = doc.as_object_mut()
    {
        map.insert("payload".into(), payload_value(&d.payload));
    }
    doc
}

/// SEQ, TENANT, REASON, ROLE, SUBJECT, AGE and why; `wide` adds the consumer, deliveries,
/// where it was read from, its message id and whether it can be redriven. `now` is the
/// current Unix time.
pub fn dead_letters_table(items: &[pb::DeadLetter], wide: bool, now: i64) -> Table {
    let mut headers = vec!["SEQ", "TENANT", "REASON", "ROLE", "SUBJECT", "AGE"];
    if wide {
        headers.extend(["CONSUMER", "DELIVERIES", "ORIGIN", "MSG-ID", "REDRIVABLE"]);
    }
    headers.push("MESSAGE");
    let mut table = Table::new(headers);
    for d in items {
        let mut row = vec![
            d.sequence.to_string(),
            d.tenant.clone(),
            reason_code(d.reason_code),
            d.role.clone(),
            d.subject.clone(),
            age(&d.dead_lettered_at, now),
        ];
        if wide {
            row.extend([
                dash(&d.consumer),
                if d.deliveries == 0 {
                    "-".to_owned()
                } else {
                    d.deliveries.to_string()
                },
                origin_text(d),
                dash(&d.msg_id),
                if d.redrivable { "yes" } else { "no" }.to_owned(),
            ]);
        }
        row.push(d.reason.clone());
        table.row(row);
    }
    table
}

fn dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_owned()
    } else {
        s.to_owned()
    }
}

fn origin_text(d: &pb::DeadLetter) -> String {
    if d.origin_stream.is_empty() {
        "-".to_owned()
    } else {
        format!("{}:{}", d.origin_stream, d.origin_sequence)
    }
}

/// One dead letter in detail, its payload last.
pub fn dead_letter_text(d: &pb::DeadLetter) -> String {
    let mut out = format!(
        "Sequence:       {}\nDead-lettered:  {}\nTenant:         {}\nSubject:        {}\n\
         Reason:         {}: {}\nRefused by:     {}{}\n",
        d.sequence,
        time_text(&d.dead_lettered_at),
        d.tenant,
        d.subject,
        reason_code(d.reason_code),
        d.reason,
        d.role,
        if d.consumer.is_empty() {
            String::new()
        } else {
            format!(" (consumer {})", d.consumer)
        },
    );
    if d.deliveries > 0 {
        out.push_str(&format!("Deliveries:     {}\n", d.deliveries));
    }
    if !d.origin_stream.is_empty() {
        out.push_str(&format!(
            "Read from:      {} sequence {}\n",
            d.origin_stream, d.origin_sequence
        ));
    }
    if !d.msg_id.is_empty() {
        out.push_str(&format!("Message id:     {}\n", d.msg_id));
    }
    if !d.traceparent.is_empty() {
        out.push_str(&format!("Trace parent:   {}\n", d.traceparent));
    }
    if d.redrivable {
        out.push_str("Redrivable:     yes (hypersaga dead-letter redrive)\n");
    } else {
        out.push_str(&format!(
            "Redrivable:     no: {}\n",
            d.not_redrivable_reason
        ));
    }
    out.push_str(&format!("Payload:        {} bytes\n", d.size));
    if !d.payload.is_empty() {
        let body = payload_text(&d.payload);
        for line in body.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poison() -> pb::DeadLetter {
        pb::DeadLetter {
            sequence: 12,
            dead_lettered_at: Some(prost_types::Timestamp {
                seconds: 1_000,
                nanos: 0,
            }),
            tenant: "acme".into(),
            subject: "hcp.acme.saga.operate".into(),
            reason_code: pb::dead_letter::Reason::Poison as i32,
            reason: "not processed after 3 deliveries: saga record unreadable".into(),
            role: "coordinator".into(),
            consumer: "coordinator".into(),
            msg_id: "op-1:operate:c1".into(),
            origin_stream: "HCP_EVT".into(),
            origin_sequence: 99,
            deliveries: 3,
            size: 24,
            payload: br#"{"v":1,"saga_id":"op-1"}"#.to_vec(),
            redrivable: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_dead_letter_reads_with_why_when_and_by_whom() {
        let d = poison();
        let t = dead_letters_table(std::slice::from_ref(&d), false, 1_042).render(true);
        let header = t.lines().next().unwrap();
        assert!(
            header.starts_with("SEQ") && header.contains("REASON") && header.ends_with("MESSAGE"),
            "{t}"
        );
        let row = t.lines().nth(1).unwrap();
        for cell in [
            "12",
            "acme",
            "poison",
            "coordinator",
            "hcp.acme.saga.operate",
            "42s",
        ] {
            assert!(row.contains(cell), "{cell}: {t}");
        }
        let wide = dead_letters_table(std::slice::from_ref(&d), true, 1_042).render(false);
        assert!(
            wide.contains("HCP_EVT:99") && wide.contains("yes"),
            "{wide}"
        );

        let text = dead_letter_text(&d);
        assert!(
            text.contains("Reason:         poison: not processed"),
            "{text}"
        );
        assert!(text.contains("Refused by:     coordinator (consumer coordinator)"));
        // The payload as pretty JSON (keys sorted), indented under the details.
        assert!(
            text.ends_with("  {\n    \"saga_id\": \"op-1\",\n    \"v\": 1\n  }\n"),
            "{text}"
        );

        let doc = dead_letter_json(&d);
        assert_eq!(doc["reason_code"], "poison");
        assert_eq!(doc["payload"]["saga_id"], "op-1");
        assert_eq!(doc["origin"]["sequence"], 99);
        assert_eq!(dead_letter_name(12), "dead-letter/12");
    }

    #[test]
    fn a_listed_or_unreadable_payload_and_an_unrecorded_reason_still_read() {
        let mut d = poison();
        d.payload.clear();
        d.reason_code = pb::dead_letter::Reason::Unspecified as i32;
        d.redrivable = false;
        d.not_redrivable_reason = "its subject is not one of the bus's".into();
        let doc = dead_letter_json(&d);
        assert!(doc.get("payload").is_none(), "a listing carries no payload");
        assert_eq!(doc["reason_code"], "unknown");
        assert!(dead_letter_text(&d).contains("Redrivable:     no: its subject"));
        assert_eq!(payload_text(b"not json"), "not json");
        assert_eq!(payload_value(b"not json"), Value::from("not json"));
    }
}
