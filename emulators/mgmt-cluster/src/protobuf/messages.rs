//! The protobuf messages of the built-in kinds the emulator serves, field numbers from
//! `k8s.io/api/core/v1/generated.proto` and `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`,
//! and their decoding into the JSON the rest of the emulator works on.
//!
//! The JSON is what the Go object would marshal to: zero scalars of plain (non-pointer) fields
//! are left out as their `omitempty` tags do, while pointer fields (`*bool`, `*int64`, …) keep
//! an explicit zero; `[]byte` map values become base64; `metav1.Time` keeps whole seconds (its protobuf
//! decoding drops the nanoseconds) and `MicroTime` microseconds. Unknown field numbers are
//! skipped, as the generated decoders skip them.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::wire::{Fields, Wire, WireError};

/// How a field's bytes become JSON.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    String,
    Bool,
    Int32,
    Int64,
    /// `metav1.Time`: a `Timestamp` message, whole seconds.
    Time,
    /// `metav1.MicroTime`.
    MicroTime,
    /// `metav1.FieldsV1`: a message whose field 1 holds raw JSON.
    FieldsV1,
    Message(&'static Message),
    MapStringString,
    MapStringBytes,
}

/// One field of a message.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub number: u32,
    pub json: &'static str,
    pub ty: Ty,
    pub repeated: bool,
    /// A pointer in Go: an explicit zero is a value, not absence.
    pub pointer: bool,
}

/// A message: its Go name (for errors) and fields.
#[derive(Debug)]
pub struct Message {
    pub name: &'static str,
    pub fields: &'static [Field],
}

const fn f(number: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        number,
        json,
        ty,
        repeated: false,
        pointer: false,
    }
}

const fn ptr(number: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        pointer: true,
        ..f(number, json, ty)
    }
}

const fn list(number: u32, json: &'static str, ty: Ty) -> Field {
    Field {
        repeated: true,
        ..f(number, json, ty)
    }
}

pub static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        f(1, "kind", Ty::String),
        f(3, "name", Ty::String),
        f(4, "uid", Ty::String),
        f(5, "apiVersion", Ty::String),
        ptr(6, "controller", Ty::Bool),
        ptr(7, "blockOwnerDeletion", Ty::Bool),
    ],
};

pub static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        f(1, "manager", Ty::String),
        f(2, "operation", Ty::String),
        f(3, "apiVersion", Ty::String),
        ptr(4, "time", Ty::Time),
        f(6, "fieldsType", Ty::String),
        ptr(7, "fieldsV1", Ty::FieldsV1),
        f(8, "subresource", Ty::String),
    ],
};

pub static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        f(1, "name", Ty::String),
        f(2, "generateName", Ty::String),
        f(3, "namespace", Ty::String),
        f(4, "selfLink", Ty::String),
        f(5, "uid", Ty::String),
        f(6, "resourceVersion", Ty::String),
        f(7, "generation", Ty::Int64),
        f(8, "creationTimestamp", Ty::Time),
        ptr(9, "deletionTimestamp", Ty::Time),
        ptr(10, "deletionGracePeriodSeconds", Ty::Int64),
        f(11, "labels", Ty::MapStringString),
        f(12, "annotations", Ty::MapStringString),
        list(13, "ownerReferences", Ty::Message(&OWNER_REFERENCE)),
        list(14, "finalizers", Ty::String),
        list(17, "managedFields", Ty::Message(&MANAGED_FIELDS_ENTRY)),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    name: "NamespaceSpec",
    fields: &[list(1, "finalizers", Ty::String)],
};

static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        f(1, "type", Ty::String),
        f(2, "status", Ty::String),
        f(4, "lastTransitionTime", Ty::Time),
        f(5, "reason", Ty::String),
        f(6, "message", Ty::String),
    ],
};

static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[
        f(1, "phase", Ty::String),
        list(2, "conditions", Ty::Message(&NAMESPACE_CONDITION)),
    ],
};

pub static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        f(1, "metadata", Ty::Message(&OBJECT_META)),
        f(2, "spec", Ty::Message(&NAMESPACE_SPEC)),
        f(3, "status", Ty::Message(&NAMESPACE_STATUS)),
    ],
};

pub static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        f(1, "metadata", Ty::Message(&OBJECT_META)),
        f(2, "data", Ty::MapStringBytes),
        f(3, "type", Ty::String),
        f(4, "stringData", Ty::MapStringString),
        ptr(5, "immutable", Ty::Bool),
    ],
};

pub static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        f(1, "metadata", Ty::Message(&OBJECT_META)),
        f(2, "data", Ty::MapStringString),
        f(3, "binaryData", Ty::MapStringBytes),
        ptr(4, "immutable", Ty::Bool),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        f(1, "kind", Ty::String),
        f(2, "namespace", Ty::String),
        f(3, "name", Ty::String),
        f(4, "uid", Ty::String),
        f(5, "apiVersion", Ty::String),
        f(6, "resourceVersion", Ty::String),
        f(7, "fieldPath", Ty::String),
    ],
};

static EVENT_SOURCE: Message = Message {
    name: "EventSource",
    fields: &[f(1, "component", Ty::String), f(2, "host", Ty::String)],
};

static EVENT_SERIES: Message = Message {
    name: "EventSeries",
    fields: &[
        f(1, "count", Ty::Int32),
        f(2, "lastObservedTime", Ty::MicroTime),
    ],
};

pub static EVENT: Message = Message {
    name: "Event",
    fields: &[
        f(1, "metadata", Ty::Message(&OBJECT_META)),
        f(2, "involvedObject", Ty::Message(&OBJECT_REFERENCE)),
        f(3, "reason", Ty::String),
        f(4, "message", Ty::String),
        f(5, "source", Ty::Message(&EVENT_SOURCE)),
        f(6, "firstTimestamp", Ty::Time),
        f(7, "lastTimestamp", Ty::Time),
        f(8, "count", Ty::Int32),
        f(9, "type", Ty::String),
        f(10, "eventTime", Ty::MicroTime),
        ptr(11, "series", Ty::Message(&EVENT_SERIES)),
        f(12, "action", Ty::String),
        ptr(13, "related", Ty::Message(&OBJECT_REFERENCE)),
        f(14, "reportingComponent", Ty::String),
        f(15, "reportingInstance", Ty::String),
    ],
};

static PRECONDITIONS: Message = Message {
    name: "Preconditions",
    fields: &[
        ptr(1, "uid", Ty::String),
        ptr(2, "resourceVersion", Ty::String),
    ],
};

pub static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
        ptr(1, "gracePeriodSeconds", Ty::Int64),
        ptr(2, "preconditions", Ty::Message(&PRECONDITIONS)),
        ptr(3, "orphanDependents", Ty::Bool),
        ptr(4, "propagationPolicy", Ty::String),
        list(5, "dryRun", Ty::String),
        ptr(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            Ty::Bool,
        ),
    ],
};

/// A message that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("proto: wrong wireType = {wire_type} for field {field}")]
    WrongWireType { wire_type: u8, field: &'static str },
    #[error("proto: {message}: invalid UTF-8 in field {field}")]
    Utf8 {
        message: &'static str,
        field: &'static str,
    },
    #[error("proto: {message}: field {field} is not valid JSON")]
    Json {
        message: &'static str,
        field: &'static str,
    },
}

fn utf8<'a>(msg: &Message, field: &Field, b: &'a [u8]) -> Result<&'a str, DecodeError> {
    std::str::from_utf8(b).map_err(|_| DecodeError::Utf8 {
        message: msg.name,
        field: field.json,
    })
}

fn bytes<'a>(field: &Field, wire: Wire<'a>) -> Result<&'a [u8], DecodeError> {
    match wire {
        Wire::Bytes(b) => Ok(b),
        other => Err(DecodeError::WrongWireType {
            wire_type: other.type_number(),
            field: field.json,
        }),
    }
}

fn varint(field: &Field, wire: Wire<'_>) -> Result<u64, DecodeError> {
    match wire {
        Wire::Varint(v) => Ok(v),
        other => Err(DecodeError::WrongWireType {
            wire_type: other.type_number(),
            field: field.json,
        }),
    }
}

/// `metav1.Time`/`MicroTime` from its `Timestamp` (seconds 1, nanos 2); `None` for the zero
/// time, which is encoded as an empty message.
fn timestamp(b: &[u8], micro: bool) -> Result<Option<Value>, DecodeError> {
    if b.is_empty() {
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    for item in Fields::new(b) {
        match item? {
            // Two's complement on the wire: the casts restore negative values.
            (1, Wire::Varint(v)) => seconds = v as i64,
            (2, Wire::Varint(v)) => nanos = i64::from(v as i32),
            _ => {}
        }
    }
    let nanos = if micro { nanos - nanos % 1000 } else { 0 };
    let t = time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|t| t.replace_nanosecond(u32::try_from(nanos).ok()?).ok());
    let Some(t) = t else {
        return Ok(None);
    };
    let (date, clock) = (t.date(), t.time());
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        date.year(),
        u8::from(date.month()),
        date.day(),
        clock.hour(),
        clock.minute(),
        clock.second()
    );
    Ok(Some(json!(if micro {
        format!("{base}.{:06}Z", clock.microsecond())
    } else {
        format!("{base}Z")
    })))
}

/// A map entry message: key 1, value 2.
fn map_entry(b: &[u8]) -> Result<(&[u8], &[u8]), DecodeError> {
    let (mut key, mut value): (&[u8], &[u8]) = (&[], &[]);
    for item in Fields::new(b) {
        match item? {
            (1, Wire::Bytes(k)) => key = k,
            (2, Wire::Bytes(v)) => value = v,
            _ => {}
        }
    }
    Ok((key, value))
}

/// The JSON value of one occurrence of `field`; `None` for a zero value that `omitempty`
/// leaves out.
fn value(msg: &Message, field: &Field, wire: Wire<'_>) -> Result<Option<Value>, DecodeError> {
    let keep = field.pointer || field.repeated;
    let v = match field.ty {
        Ty::String => {
            let s = utf8(msg, field, bytes(field, wire)?)?;
            (keep || !s.is_empty()).then(|| json!(s))
        }
        Ty::Bool => {
            let b = varint(field, wire)? != 0;
            (keep || b).then(|| json!(b))
        }
        Ty::Int32 => {
            let n = i64::from(varint(field, wire)? as i32);
            (keep || n != 0).then(|| json!(n))
        }
        Ty::Int64 => {
            let n = varint(field, wire)? as i64;
            (keep || n != 0).then(|| json!(n))
        }
        Ty::Time => timestamp(bytes(field, wire)?, false)?,
        Ty::MicroTime => timestamp(bytes(field, wire)?, true)?,
        Ty::FieldsV1 => {
            let mut raw: &[u8] = &[];
            for item in Fields::new(bytes(field, wire)?) {
                if let (1, Wire::Bytes(b)) = item? {
                    raw = b;
                }
            }
            if raw.is_empty() {
                None
            } else {
                Some(serde_json::from_slice(raw).map_err(|_| DecodeError::Json {
                    message: msg.name,
                    field: field.json,
                })?)
            }
        }
        Ty::Message(inner) => Some(Value::Object(decode_message(inner, bytes(field, wire)?)?)),
        // Map entries are merged by the caller.
        Ty::MapStringString | Ty::MapStringBytes => None,
    };
    Ok(v)
}

/// Decodes one message into a JSON object.
pub fn decode_message(msg: &Message, buf: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    let mut out = Map::new();
    for item in Fields::new(buf) {
        let (number, wire) = item?;
        let Some(field) = msg.fields.iter().find(|f| f.number == number) else {
            continue;
        };
        match field.ty {
            Ty::MapStringString | Ty::MapStringBytes => {
                let (k, v) = map_entry(bytes(field, wire)?)?;
                let key = utf8(msg, field, k)?.to_owned();
                let v = match field.ty {
                    Ty::MapStringBytes => {
                        json!(base64::engine::general_purpose::STANDARD.encode(v))
                    }
                    _ => json!(utf8(msg, field, v)?),
                };
                let map = out.entry(field.json).or_insert_with(|| json!({}));
                if let Some(map) = map.as_object_mut() {
                    map.insert(key, v);
                }
            }
            _ if field.repeated => {
                if let Some(v) = value(msg, field, wire)? {
                    let list = out.entry(field.json).or_insert_with(|| json!([]));
                    if let Some(list) = list.as_array_mut() {
                        list.push(v);
                    }
                }
            }
            _ => match value(msg, field, wire)? {
                Some(v) => {
                    out.insert(field.json.to_owned(), v);
                }
                // A later zero occurrence overrides an earlier value (last one wins).
                None => {
                    out.remove(field.json);
                }
            },
        }
    }
    Ok(out)
}
