//! `meta.k8s.io/v1` `Table` responses, which `kubectl get` asks for to print columns.

use serde_json::{Value, json};

use crate::kinds::ResourceDef;

/// A printer column: header and how to read the cell.
struct Column {
    name: &'static str,
    type_: &'static str,
    cell: fn(&Value) -> Value,
}

fn condition(obj: &Value, type_: &str, field: &str) -> Value {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .map(|c| c[field].clone())
        .unwrap_or(json!(""))
}

fn at(obj: &Value, pointer: &str) -> Value {
    obj.pointer(pointer).cloned().unwrap_or(json!(""))
}

fn columns(kind: &str) -> Vec<Column> {
    match kind {
        "HostedCluster" => vec![
            Column {
                name: "Version",
                type_: "string",
                cell: |o| {
                    o.pointer("/status/version/history")
                        .and_then(Value::as_array)
                        .and_then(|h| h.iter().find(|e| e["state"] == "Completed"))
                        .map(|e| e["version"].clone())
                        .unwrap_or(json!(""))
                },
            },
            Column {
                name: "KubeConfig",
                type_: "string",
                cell: |o| at(o, "/status/kubeconfig/name"),
            },
            Column {
                name: "Progress",
                type_: "string",
                cell: |o| at(o, "/status/version/history/0/state"),
            },
            Column {
                name: "Available",
                type_: "string",
                cell: |o| condition(o, "Available", "status"),
            },
            Column {
                name: "Progressing",
                type_: "string",
                cell: |o| condition(o, "Progressing", "status"),
            },
            Column {
                name: "Message",
                type_: "string",
                cell: |o| condition(o, "Available", "message"),
            },
        ],
        "NodePool" => vec![
            Column {
                name: "Cluster",
                type_: "string",
                cell: |o| at(o, "/spec/clusterName"),
            },
            Column {
                name: "Desired Nodes",
                type_: "integer",
                cell: |o| at(o, "/spec/replicas"),
            },
            Column {
                name: "Current Nodes",
                type_: "integer",
                cell: |o| at(o, "/status/replicas"),
            },
            Column {
                name: "Ready",
                type_: "string",
                cell: |o| condition(o, "Ready", "status"),
            },
            Column {
                name: "Version",
                type_: "string",
                cell: |o| at(o, "/status/version"),
            },
            Column {
                name: "Message",
                type_: "string",
                cell: |o| condition(o, "Ready", "message"),
            },
        ],
        "Namespace" => vec![Column {
            name: "Status",
            type_: "string",
            cell: |o| at(o, "/status/phase"),
        }],
        "Secret" => vec![
            Column {
                name: "Type",
                type_: "string",
                cell: |o| at(o, "/type"),
            },
            Column {
                name: "Data",
                type_: "string",
                cell: |o| {
                    json!(
                        o.get("data")
                            .and_then(Value::as_object)
                            .map_or(0, |m| m.len())
                    )
                },
            },
        ],
        "ConfigMap" => vec![Column {
            name: "Data",
            type_: "string",
            cell: |o| {
                json!(
                    o.get("data")
                        .and_then(Value::as_object)
                        .map_or(0, |m| m.len())
                )
            },
        }],
        _ => vec![],
    }
}

fn age(obj: &Value) -> Value {
    let Some(created) = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
    else {
        return json!("<unknown>");
    };
    let Ok(t) =
        time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339)
    else {
        return json!("<unknown>");
    };
    let secs = (time::OffsetDateTime::now_utc() - t).whole_seconds().max(0);
    json!(match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    })
}

/// A Table of `objects` (column definitions included every time; kubectl accepts that on
/// watch events too).
pub(super) fn table(def: &ResourceDef, objects: &[Value]) -> Value {
    let cols = columns(def.kind);
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}),
    ];
    defs.extend(cols.iter().map(|c| json!({"name": c.name, "type": c.type_, "format": "", "description": c.name, "priority": 0})));
    defs.push(
        json!({"name": "Age", "type": "date", "format": "", "description": "Age", "priority": 0}),
    );
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut cells = vec![o.pointer("/metadata/name").cloned().unwrap_or(json!(""))];
            cells.extend(cols.iter().map(|c| (c.cell)(o)));
            cells.push(age(o));
            json!({
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata").cloned().unwrap_or(json!({}))},
            })
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": defs, "rows": rows})
}
