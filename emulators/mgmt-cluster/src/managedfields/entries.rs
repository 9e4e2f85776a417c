//! `metadata.managedFields` entries ⇄ the managers map the merge logic works on
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/managedfields.go`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::fieldpath::{FieldsError, Set, from_fields_v1, to_fields_v1};

/// `Apply` or `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// Who owns a set of fields (`BuildManagerIdentifier`): the manager name, the operation,
/// the subresource, and for updates the apiVersion (appliers keep one identity across
/// versions).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    /// Empty for appliers.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    /// The identity of a manager's `operation` at `api_version` through `subresource`.
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        let manager = if manager.is_empty() {
            "unknown"
        } else {
            manager
        };
        Self {
            manager: manager.to_owned(),
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_owned(),
            },
            subresource: subresource.to_owned(),
        }
    }

    /// How kube-apiserver names the manager in a conflict (`printManager` in
    /// `managedfields/internal/conflict.go`): `"name"`, `"name" with subresource "status"`,
    /// and for updaters `... using <apiVersion>`.
    pub fn describe(&self) -> String {
        let mut s = Value::String(self.manager.clone()).to_string();
        if !self.subresource.is_empty() {
            s = format!(
                "{s} with subresource {}",
                Value::String(self.subresource.clone())
            );
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

/// What one manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub set: Set,
    pub api_version: String,
    /// RFC 3339; the last time this manager changed the object.
    pub time: Option<String>,
}

/// Every manager of an object.
pub type Managed = BTreeMap<ManagerId, Entry>;

/// Why stored or sent managedFields cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("managedFields must be a list")]
    NotList,
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    #[error("apiVersion must not be empty")]
    ApiVersion,
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    #[error("invalid fieldsType {0:?} in managed fields entry {1}")]
    FieldsType(String, usize),
    #[error("error decoding set: {0}")]
    Fields(#[from] FieldsError),
}

/// Reads `metadata.managedFields` (absent or null: no managers).
pub fn decode(entries: Option<&Value>) -> Result<Managed, DecodeError> {
    let mut managed = Managed::new();
    let list = match entries {
        None | Some(Value::Null) => return Ok(managed),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(DecodeError::NotList),
    };
    for (i, e) in list.iter().enumerate() {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err(DecodeError::Operation),
        };
        let api_version = text("apiVersion");
        if api_version.is_empty() {
            return Err(DecodeError::ApiVersion);
        }
        match text("fieldsType") {
            "FieldsV1" => {}
            "" => return Err(DecodeError::MissingFieldsType(i)),
            other => return Err(DecodeError::FieldsType(other.to_owned(), i)),
        }
        let set = match e.get("fieldsV1") {
            Some(fields) => from_fields_v1(fields)?,
            None => Set::new(),
        };
        let id = ManagerId::new(text("manager"), operation, api_version, text("subresource"));
        let time = e.get("time").and_then(Value::as_str).map(str::to_owned);
        managed.insert(
            id,
            Entry {
                set,
                api_version: api_version.to_owned(),
                time,
            },
        );
    }
    Ok(managed)
}

/// Whether a request's managedFields ask for them to be reset: an empty list or one empty
/// entry (`isResetManagedFields`).
pub fn is_reset(entries: Option<&Value>) -> bool {
    match entries {
        Some(Value::Array(list)) if list.is_empty() => true,
        Some(Value::Array(list)) => {
            list.len() == 1 && list[0].as_object().is_some_and(|m| m.is_empty())
        }
        _ => false,
    }
}

/// The managedFields list, sorted as kube-apiserver sorts it (operation, time, manager,
/// apiVersion, subresource); `None` when there are no managers.
pub fn encode(managed: &Managed) -> Option<Value> {
    if managed.is_empty() {
        return None;
    }
    let mut entries: Vec<(&ManagerId, &Entry)> = managed.iter().collect();
    entries.sort_by(|(a, ea), (b, eb)| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| ea.time.cmp(&eb.time))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| ea.api_version.cmp(&eb.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    let list = entries
        .into_iter()
        .map(|(id, e)| {
            let mut v = json!({
                "manager": id.manager,
                "operation": id.operation.as_str(),
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.set),
            });
            if let Some(t) = &e.time {
                v["time"] = json!(t);
            }
            if !id.subresource.is_empty() {
                v["subresource"] = json!(id.subresource);
            }
            v
        })
        .collect();
    Some(Value::Array(list))
}
