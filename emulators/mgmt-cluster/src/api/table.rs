//! The `meta.k8s.io` transformations of a response (`apiserver/pkg/endpoints/handlers/response.go`):
//! `Table` (what `kubectl get` asks for), `PartialObjectMetadata` and
//! `PartialObjectMetadataList`.

use serde_json::{Value, json};

use super::negotiate::Convert;
use super::printers::printer;
use super::resources::Params;
use crate::error::{ApiError, ApiResult, Cause};
use crate::kinds::ResourceDef;

/// `TableOptions.includeObject`: what each row carries besides its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Include {
    None,
    /// The default: a `PartialObjectMetadata`.
    #[default]
    Metadata,
    Object,
}

/// `TableOptions` from the query string.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableOptions {
    pub include: Include,
    /// Leave out `columnDefinitions` (watches send them with the first event only).
    pub no_headers: bool,
}

impl TableOptions {
    /// Parses and validates (`ValidateTableOptions`) the options.
    pub fn parse(params: &Params) -> ApiResult<Self> {
        let include = match params.get("includeObject").map(String::as_str) {
            None | Some("") | Some("Metadata") => Include::Metadata,
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            Some(other) => {
                let cause = Cause::not_supported(
                    "includeObject",
                    &json!(other),
                    &["Metadata", "None", "Object"],
                );
                return Err(ApiError::bad_request(format!(
                    "Unable to convert to Table as requested: {}: {}",
                    cause.field, cause.message
                )));
            }
        };
        Ok(Self {
            include,
            no_headers: false,
        })
    }
}

fn partial(obj: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A `Table` of `objects`; `list_meta` is the list's metadata, or for one object its
/// resourceVersion.
pub fn table(
    def: &ResourceDef,
    objects: &[Value],
    version: &str,
    opts: TableOptions,
    list_meta: Value,
) -> Value {
    let p = printer(def);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let object = match opts.include {
                Include::Metadata => partial(o, version),
                Include::Object => o.clone(),
                Include::None => Value::Null,
            };
            json!({"cells": p.cells(o), "object": object})
        })
        .collect();
    let columns = if opts.no_headers {
        Value::Null
    } else {
        Value::Array(p.columns.iter().map(|c| c.to_json()).collect())
    };
    json!({
        "kind": "Table", "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta, "columnDefinitions": columns, "rows": rows,
    })
}

/// The Go type a transformation error names (`%T` of the object being transformed).
fn go_type(def: &ResourceDef, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if def.builtin {
        format!("*{}.{}{suffix}", def.go_package(), def.kind)
    } else {
        format!("*unstructured.Unstructured{suffix}")
    }
}

/// The response for one object under `convert`.
pub fn one(def: &ResourceDef, obj: Value, convert: Convert, params: &Params) -> ApiResult<Value> {
    if obj.get("kind").and_then(Value::as_str) == Some("Status") {
        return Ok(obj);
    }
    match convert {
        Convert::Table(v) => {
            let rv = obj
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(json!(""));
            let opts = TableOptions::parse(params)?;
            Ok(table(def, &[obj], v, opts, json!({"resourceVersion": rv})))
        }
        Convert::Partial(v) => Ok(partial(&obj, v)),
        Convert::PartialList(_) => Err(ApiError::not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(def, false)
        ))),
    }
}

/// The response for a list under `convert`.
pub fn list(
    def: &ResourceDef,
    items: &[Value],
    list_meta: Value,
    convert: Convert,
    params: &Params,
) -> ApiResult<Value> {
    match convert {
        Convert::Table(v) => Ok(table(
            def,
            items,
            v,
            TableOptions::parse(params)?,
            list_meta,
        )),
        Convert::PartialList(v) => Ok(json!({
            "kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{v}"),
            "metadata": list_meta,
            "items": items.iter().map(|o| partial(o, v)).collect::<Vec<_>>(),
        })),
        Convert::Partial(_) => Err(ApiError::not_acceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(def, true)
        ))),
    }
}
