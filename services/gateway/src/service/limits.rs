//! What a call may carry, checked before the gateway reads or writes anything on the bus, and
//! how a refusal stays small enough to reach the caller.
//!
//! Every identifier a caller sends ends up in a NATS subject or header: a cluster name in
//! `$KV.hcp_clusters.<tenant>.<name>`, an operation id in the sagas bucket's subject, a request
//! id in `Nats-Msg-Id`. nats-server drops a connection whose protocol line passes its
//! `max_control_line` (4 KB by default), so one long name could cut the gateway off the bus,
//! for every tenant. Each identifier therefore has a length and a shape, checked first and
//! answered `INVALID_ARGUMENT` with its field path.
//!
//! A refusal travels in the answer's trailers (`grpc-message`, and `grpc-status-details-bin`
//! holding the message again with every violation); clients drop trailers over 8 KB. Values
//! are quoted cut ([`clip`]), and [`bad_request`] bounds the message and the details as a whole.

use hypersaga_model::validate::{FieldViolation as ModelViolation, clip, validate_cluster_name};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

/// Longest operation id looked up (the gateway's own are `op-` and 32 hex digits).
pub(super) const MAX_OPERATION_ID: usize = 64;
/// Longest step id looked up (`nodepool.<pool>` is the longest kind).
pub(super) const MAX_STEP_ID: usize = 64;
/// Longest request id: it becomes part of a `Nats-Msg-Id` header.
pub(super) const MAX_REQUEST_ID: usize = 128;
/// Longest page token (the gateway's own are well under 200 characters).
pub(super) const MAX_PAGE_TOKEN: usize = 512;

/// Most bytes of a refusal's message; the rest of the violations are counted, not listed.
const MAX_SUMMARY_BYTES: usize = 768;
/// Most bytes of violations carried in `google.rpc.BadRequest`.
const MAX_DETAILS_BYTES: usize = 2560;
/// Most bytes of one violation's description or field path in a refusal.
const MAX_VIOLATION_BYTES: usize = 512;

/// The violations of one call's fields, gathered before anything is looked up.
#[derive(Default)]
pub(super) struct Checks(Vec<FieldViolation>);

impl Checks {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, field: impl Into<String>, description: impl Into<String>) {
        self.0.push(FieldViolation::new(field, description));
    }

    /// Adds violations found by the model's checks.
    pub fn extend(&mut self, violations: impl IntoIterator<Item = ModelViolation>) {
        self.0.extend(
            violations
                .into_iter()
                .map(|v| FieldViolation::new(v.field, v.description)),
        );
    }

    /// A cluster name: a DNS label of at most 40 characters, as `CreateCluster` accepts.
    pub fn cluster_name(&mut self, field: &str, name: &str) -> &mut Self {
        self.extend(validate_cluster_name(field, name));
        self
    }

    /// An operation id: `op-` and lower-case letters, digits and '-'.
    pub fn operation_id(&mut self, field: &str, id: &str) -> &mut Self {
        if id.is_empty() {
            self.push(field, "the operation id (op-…) is required");
        } else if !self.too_long(field, id, MAX_OPERATION_ID) && !is_operation_id(id) {
            self.push(
                field,
                format!(
                    "{} is not an operation id: `op-` then lower-case letters, digits and '-' \
                     (CreateCluster and DeleteCluster answer `op-` and 32 hex digits)",
                    clip(id)
                ),
            );
        }
        self
    }

    /// A step id, e.g. `network.vnet`: lower-case letters, digits, '.' and '-'.
    pub fn step_id(&mut self, field: &str, step: &str) -> &mut Self {
        if step.is_empty() {
            self.push(
                field,
                "the id of a paused step is required, e.g. network.vnet",
            );
        } else if !self.too_long(field, step, MAX_STEP_ID)
            && !step
                .bytes()
                .all(|b| lower_alnum(b) || b == b'-' || b == b'.')
        {
            self.push(
                field,
                format!(
                    "{} is not a step id such as network.vnet (lower-case letters, digits, '.' \
                     and '-')",
                    clip(step)
                ),
            );
        }
        self
    }

    /// A request id: empty (the gateway picks one), or printable ASCII without spaces.
    pub fn request_id(&mut self, field: &str, id: &str) -> &mut Self {
        if !self.too_long(field, id, MAX_REQUEST_ID) && !id.bytes().all(|b| b.is_ascii_graphic()) {
            self.push(
                field,
                format!(
                    "{} must be printable ASCII without spaces (a UUID is best)",
                    clip(id)
                ),
            );
        }
        self
    }

    /// A page token's length; what it holds is checked when it is decoded.
    pub fn page_token(&mut self, field: &str, token: &str) -> &mut Self {
        self.too_long(field, token, MAX_PAGE_TOKEN);
        self
    }

    /// Whether `value` is longer than `max` characters; if so, says so (without quoting it).
    fn too_long(&mut self, field: &str, value: &str, max: usize) -> bool {
        let len = value.chars().count();
        let too_long = len > max;
        if too_long {
            self.push(
                field,
                format!("must be at most {max} characters, got {len}"),
            );
        }
        too_long
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` when nothing was found, else the refusal naming every violation.
    /// (Takes the violations, so that a chain of checks can end with it.)
    pub fn done(&mut self) -> Result<(), Status> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(bad_request(std::mem::take(&mut self.0)))
        }
    }
}

fn is_operation_id(id: &str) -> bool {
    id.starts_with("op-") && id.bytes().all(|b| lower_alnum(b) || b == b'-')
}

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `INVALID_ARGUMENT` with a `google.rpc.BadRequest` of the violations, bounded: the message
/// lists them until [`MAX_SUMMARY_BYTES`], the details until [`MAX_DETAILS_BYTES`], and each
/// says how many more there were.
pub(super) fn bad_request(violations: Vec<FieldViolation>) -> Status {
    let total = violations.len();
    let violations: Vec<FieldViolation> = violations
        .into_iter()
        .map(|v| {
            FieldViolation::new(
                cut(&v.field, MAX_VIOLATION_BYTES),
                cut(&v.description, MAX_VIOLATION_BYTES),
            )
        })
        .collect();
    let mut summary = String::new();
    let mut summarised = 0;
    for v in &violations {
        let line = format!(
            "{}{}: {}",
            if summarised > 0 { "; " } else { "" },
            v.field,
            v.description
        );
        if summary.len() + line.len() > MAX_SUMMARY_BYTES {
            break;
        }
        summary.push_str(&line);
        summarised += 1;
    }
    if summarised < total {
        summary.push_str(&format!(" (and {} more)", total - summarised));
    }
    let mut detailed = Vec::new();
    let mut size = 0;
    for v in violations {
        size += v.field.len() + v.description.len() + 8;
        if size > MAX_DETAILS_BYTES {
            break;
        }
        detailed.push(v);
    }
    if detailed.len() < total {
        detailed.push(FieldViolation::new(
            "",
            format!("{} more violations are not listed", total - detailed.len()),
        ));
    }
    Status::with_error_details(
        Code::InvalidArgument,
        format!("invalid request: {summary}"),
        ErrorDetails::with_bad_request(detailed),
    )
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary, with
/// "..." when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let end = (0..=max - 3)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(c: Checks) -> Vec<String> {
        c.0.into_iter().map(|v| v.field).collect()
    }

    #[test]
    fn identifiers_of_any_length_are_refused_by_field_without_being_quoted() {
        for len in [5_000, 100_000] {
            let long = "a".repeat(len);
            let mut c = Checks::new();
            c.cluster_name("name", &long)
                .operation_id("id", &long)
                .step_id("step", &long)
                .request_id("request_id", &long)
                .page_token("page_token", &long);
            assert!(c.0.iter().all(|v| v.description.len() < 100), "{:?}", c.0);
            assert_eq!(
                fields(c),
                ["name", "id", "step", "request_id", "page_token"],
            );
        }
    }

    #[test]
    fn well_formed_identifiers_pass() {
        let mut c = Checks::new();
        c.cluster_name("name", "demo-1")
            .operation_id("id", "op-0af7c9e2d4b14f3c8a1e5b6d7f809a1b")
            .step_id("step", "nodepool.workers")
            .request_id("request_id", "3f2b6c1e-8f1c-4c55-9d0f-0e6f1f0b9a11")
            .request_id("request_id", "")
            .page_token("page_token", "");
        assert!(c.is_empty(), "{:?}", c.0);
    }

    #[test]
    fn ill_formed_identifiers_are_named() {
        let mut c = Checks::new();
        c.cluster_name("name", "Demo")
            .operation_id("id", "acme.op-1")
            .step_id("step", "network vnet")
            .request_id("request_id", "a\r\nNats-Msg-Id: x");
        assert_eq!(fields(c), ["name", "id", "step", "request_id"]);
    }

    #[test]
    fn a_refusal_stays_small_however_many_violations() {
        let many: Vec<FieldViolation> = (0..10_000)
            .map(|i| FieldViolation::new(format!("spec.f{i}"), "x".repeat(10_000)))
            .collect();
        let status = bad_request(many);
        assert!(status.message().len() < 1024, "{}", status.message().len());
        assert!(status.message().ends_with("more)"), "{}", status.message());
        assert!(status.details().len() < 4096, "{}", status.details().len());
        let listed = status.get_details_bad_request().expect("bad request");
        let last = listed.field_violations.last().expect("violations");
        assert!(last.description.contains("more violations are not listed"));
    }

    /// What the refusal costs on the wire: its trailers as tonic encodes them
    /// (`grpc-message` percent-encoded, the details in base64), plus HTTP/2's 32 bytes of
    /// accounting per header field.
    fn trailer_bytes(status: &Status) -> usize {
        let mut headers = tonic::codegen::http::HeaderMap::new();
        status.add_header(&mut headers).expect("encodes");
        headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 32)
            .sum()
    }

    #[test]
    fn the_costliest_refusal_stays_under_8_kb_of_trailers() {
        // Spaces and non-ASCII take three bytes each once percent-encoded.
        for filler in [" ", "é", "😀", "%"] {
            let many: Vec<FieldViolation> = (0..1_000)
                .map(|i| FieldViolation::new(format!("spec.{i} {filler}"), filler.repeat(5_000)))
                .collect();
            let bytes = trailer_bytes(&bad_request(many));
            assert!(bytes < 8 * 1024, "{filler:?}: {bytes} bytes");
        }
    }

    #[test]
    fn cutting_keeps_characters_whole() {
        assert_eq!(cut("short", 10), "short");
        let cut = cut(&"é".repeat(100), 11);
        assert_eq!(cut, format!("{}...", "é".repeat(4)));
    }
}
