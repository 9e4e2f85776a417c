//! Protobuf: request bodies in Kubernetes' encoding (`application/vnd.kubernetes.protobuf`),
//! and a [`Writer`] for the OpenAPI v2 document.
//!
//! client-go's generated clientsets — and with them `kubectl create namespace|secret|configmap`
//! — always send built-in kinds as protobuf, and unlike CBOR they never fall back to JSON on
//! 415 (`requestClientContentConfigProvider` in `client-go/rest/client.go` only does that for
//! CBOR). So the emulator reads protobuf bodies for the built-in kinds it serves; responses
//! stay JSON, which content negotiation allows, since such clients accept both.
//!
//! The envelope (`k8s.io/apimachinery/pkg/runtime/serializer/protobuf`): the 4-byte magic
//! `k8s\0`, then a `runtime.Unknown` message — `typeMeta` (1: apiVersion 1, kind 2), `raw` (2,
//! the object's own message), `contentEncoding` (3), `contentType` (4).

mod messages;
mod wire;
mod writer;

use serde_json::{Value, json};

pub use messages::DecodeError;
use messages::{CONFIG_MAP, DELETE_OPTIONS, EVENT, Message, NAMESPACE, SECRET};
use wire::{Fields, Wire};
pub use writer::Writer;

/// `protobuf.serializer`'s prefix.
const MAGIC: &[u8] = b"k8s\0";

/// A protobuf body that cannot be decoded; worded as the serializer words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("empty data")]
    Empty,
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NoMagic,
    #[error("empty body")]
    EmptyBody,
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("no kind {kind:?} is registered for version {api_version:?} in scheme")]
    NotRegistered { kind: String, api_version: String },
}

/// The message of a kind the emulator can read as protobuf.
fn message_for(kind: &str, api_version: &str) -> Option<&'static Message> {
    let core = api_version == "v1";
    match kind {
        "Namespace" if core => Some(&NAMESPACE),
        "Secret" if core => Some(&SECRET),
        "ConfigMap" if core => Some(&CONFIG_MAP),
        "Event" if core => Some(&EVENT),
        "DeleteOptions" if core || api_version == "meta.k8s.io/v1" => Some(&DELETE_OPTIONS),
        _ => None,
    }
}

/// What a protobuf body says about its kind: `typeMeta`, defaulted from the endpoint's
/// (`copyKindDefaults`), and the raw object.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

fn envelope<'a>(body: &'a [u8], api_version: &str, kind: &str) -> Result<Envelope<'a>, ProtoError> {
    if body.is_empty() {
        return Err(ProtoError::Empty);
    }
    let data = body.strip_prefix(MAGIC).ok_or(ProtoError::NoMagic)?;
    if data.is_empty() {
        return Err(ProtoError::EmptyBody);
    }
    let mut env = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for item in Fields::new(data) {
        match item.map_err(DecodeError::from)? {
            (1, Wire::Bytes(type_meta)) => {
                for tm in Fields::new(type_meta) {
                    match tm.map_err(DecodeError::from)? {
                        (1, Wire::Bytes(v)) => env.api_version = text(v),
                        (2, Wire::Bytes(k)) => env.kind = text(k),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(raw)) => env.raw = raw,
            _ => {}
        }
    }
    if env.api_version.is_empty() {
        env.api_version = api_version.to_owned();
    }
    if env.kind.is_empty() {
        env.kind = kind.to_owned();
    }
    Ok(env)
}

/// A body that failed to decode, and the kind it claimed if the envelope got that far
/// (kube-apiserver words the error differently with and without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `(version, kind)` from the envelope, e.g. `("v1", "Secret")`.
    pub kind: Option<(String, String)>,
    pub error: ProtoError,
}

/// Decodes a protobuf request body sent to an endpoint of `api_version`/`kind` into the
/// object's JSON, with `apiVersion` and `kind` set.
pub fn decode(body: &[u8], api_version: &str, kind: &str) -> Result<Value, Failure> {
    let env = envelope(body, api_version, kind).map_err(|error| Failure { kind: None, error })?;
    let version = env
        .api_version
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let failed = |error| Failure {
        kind: Some((version.clone(), env.kind.clone())),
        error,
    };
    let msg = message_for(&env.kind, &env.api_version).ok_or_else(|| {
        failed(ProtoError::NotRegistered {
            kind: env.kind.clone(),
            api_version: env.api_version.clone(),
        })
    })?;
    let mut obj =
        messages::decode_message(msg, env.raw).map_err(|e| failed(ProtoError::Decode(e)))?;
    obj.insert("apiVersion".into(), json!(env.api_version));
    obj.insert("kind".into(), json!(env.kind));
    Ok(Value::Object(obj))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    /// A length-delimited field.
    pub fn field(n: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(n) << 3 | 2, &mut out);
        varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }

    /// A varint field.
    pub fn number(n: u32, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(n) << 3, &mut out);
        varint(v, &mut out);
        out
    }

    /// `k8s\0` + `Unknown{typeMeta, raw}`, as client-go sends a body.
    pub fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), field(1, &type_meta), field(2, raw)].concat()
    }

    #[test]
    fn decodes_a_secret_as_kubectl_create_secret_sends_it() {
        let label = [field(1, b"app"), field(2, b"x")].concat();
        let meta = [
            field(1, b"s1"),
            field(2, b""), // generateName: present but empty, as gogo writes it
            field(11, &label),
            number(7, 0),
        ]
        .concat();
        let data = [field(1, b"a"), field(2, b"\x00\xff")].concat();
        let secret = [
            field(1, &meta),
            field(2, &data),
            field(3, b"Opaque"),
            number(5, 0), // immutable: *bool false, kept
        ]
        .concat();
        let obj = decode(&body("v1", "Secret", &secret), "v1", "Secret").unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s1", "labels": {"app": "x"}},
                "data": {"a": "AP8="}, "type": "Opaque", "immutable": false})
        );
    }

    #[test]
    fn times_keep_seconds_and_micro_times_microseconds() {
        let ts = [number(1, 1_700_000_000), number(2, 123_456_789)].concat();
        let ev = [field(6, &ts), field(10, &ts), field(7, b"")].concat();
        let obj = decode(&body("v1", "Event", &ev), "v1", "Event").unwrap();
        assert_eq!(obj["firstTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(obj["eventTime"], "2023-11-14T22:13:20.123456Z");
        assert!(obj.get("lastTimestamp").is_none(), "zero time: {obj}");
    }

    #[test]
    fn kind_defaults_from_the_endpoint_and_bad_bodies_are_refused() {
        let ns = field(1, &field(1, b"n"));
        let raw = [MAGIC.to_vec(), field(2, &ns)].concat();
        let obj = decode(&raw, "v1", "Namespace").unwrap();
        assert_eq!(obj["kind"], "Namespace");
        assert_eq!(obj["metadata"]["name"], "n");
        assert_eq!(
            decode(b"{}", "v1", "Namespace"),
            Err(Failure {
                kind: None,
                error: ProtoError::NoMagic
            })
        );
        let pod = decode(&body("v1", "Pod", b""), "v1", "Pod").unwrap_err();
        assert_eq!(pod.kind, Some(("v1".into(), "Pod".into())));
        assert!(matches!(pod.error, ProtoError::NotRegistered { .. }));
    }
}
