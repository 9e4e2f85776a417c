//! The columns `kubectl get` shows, computed by the server for `Accept: …;as=Table`.
//!
//! Built-in kinds print what kube-apiserver's printers print
//! (`pkg/printers/internalversion/printers.go`): the server always generates the wide form
//! and the client hides columns of `priority` > 0 unless `-o wide`. HyperShift's kinds print
//! their CRDs' `additionalPrinterColumns` the way the apiextensions table convertor does
//! (`apiextensions-apiserver/pkg/registry/customresource/tableconvertor`): `Name`, then each
//! column's first JSONPath result, `null` where the path finds nothing — and no `Age`, since
//! HyperShift's CRDs do not declare one.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::jsonpath::JsonPath;
use crate::kinds::ResourceDef;
use crate::schema::docs::description;

/// A `TableColumnDefinition`.
#[derive(Debug, Clone)]
pub struct ColumnDef {
    pub name: &'static str,
    pub type_: &'static str,
    pub format: &'static str,
    pub description: String,
    pub priority: i64,
}

impl ColumnDef {
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.type_, "format": self.format,
               "description": self.description, "priority": self.priority})
    }
}

/// One of a CRD's `additionalPrinterColumns`.
struct CrdColumn {
    name: &'static str,
    type_: &'static str,
    json_path: &'static str,
    description: &'static str,
    priority: i64,
}

const fn col(
    name: &'static str,
    type_: &'static str,
    json_path: &'static str,
    description: &'static str,
) -> CrdColumn {
    CrdColumn {
        name,
        type_,
        json_path,
        description,
        priority: 0,
    }
}

/// `hostedclusters.hypershift.openshift.io` (`hostedcluster_types.go` printcolumn markers).
const HOSTED_CLUSTER_COLUMNS: &[CrdColumn] = &[
    col(
        "Version",
        "string",
        r#".status.version.history[?(@.state=="Completed")].version"#,
        "Version",
    ),
    col(
        "CP Version",
        "string",
        r#".status.controlPlaneVersion.history[?(@.state=="Completed")].version"#,
        "Control Plane Version",
    ),
    col(
        "KubeConfig",
        "string",
        ".status.kubeconfig.name",
        "KubeConfig Secret",
    ),
    col(
        "Progress",
        "string",
        r#".status.version.history[?(@.state!="")].state"#,
        "Progress",
    ),
    col(
        "Available",
        "string",
        r#".status.conditions[?(@.type=="Available")].status"#,
        "Available",
    ),
    col(
        "Progressing",
        "string",
        r#".status.conditions[?(@.type=="Progressing")].status"#,
        "Progressing",
    ),
    col(
        "Message",
        "string",
        r#".status.conditions[?(@.type=="Available")].message"#,
        "Message",
    ),
    CrdColumn {
        priority: 1,
        ..col(
            "CP Progress",
            "string",
            ".status.controlPlaneVersion.history[0].state",
            "Control Plane Progress",
        )
    },
    CrdColumn {
        priority: 1,
        ..col(
            "DP Progress",
            "string",
            ".status.version.history[0].state",
            "Data Plane Progress",
        )
    },
];

/// `nodepools.hypershift.openshift.io` (`nodepool_types.go` printcolumn markers).
const NODE_POOL_COLUMNS: &[CrdColumn] = &[
    col("Cluster", "string", ".spec.clusterName", "Cluster"),
    col(
        "Desired Nodes",
        "integer",
        ".spec.replicas",
        "Desired Nodes",
    ),
    col(
        "Current Nodes",
        "integer",
        ".status.replicas",
        "Available Nodes",
    ),
    col(
        "Autoscaling",
        "string",
        r#".status.conditions[?(@.type=="AutoscalingEnabled")].status"#,
        "Autoscaling Enabled",
    ),
    col(
        "Autorepair",
        "string",
        r#".status.conditions[?(@.type=="AutorepairEnabled")].status"#,
        "Node Autorepair Enabled",
    ),
    col("Version", "string", ".status.version", "Current version"),
    col(
        "UpdatingVersion",
        "string",
        r#".status.conditions[?(@.type=="UpdatingVersion")].status"#,
        "UpdatingVersion in progress",
    ),
    col(
        "UpdatingConfig",
        "string",
        r#".status.conditions[?(@.type=="UpdatingConfig")].status"#,
        "UpdatingConfig in progress",
    ),
    col(
        "Message",
        "string",
        r#".status.conditions[?(@.type=="Ready")].message"#,
        "Message",
    ),
];

/// `.status.conditions[?(@.type=="<T>")].status`, PKO's condition columns.
macro_rules! status_of {
    ($t:literal) => {
        concat!(".status.conditions[?(@.type==\"", $t, "\")].status")
    };
}

const AGE: CrdColumn = col("Age", "date", ".metadata.creationTimestamp", "");

/// `objectdeployments.package-operator.run` (`config/crds`; the CRD's columns carry no
/// description).
const OBJECT_DEPLOYMENT_COLUMNS: &[CrdColumn] = &[
    col("Available", "string", status_of!("Available"), ""),
    col("Progressing", "string", status_of!("Progressing"), ""),
    col("Paused", "string", status_of!("Paused"), ""),
    col("Revision", "string", ".status.revision", ""),
    AGE,
];

/// `objectsets.package-operator.run`.
const OBJECT_SET_COLUMNS: &[CrdColumn] = &[
    col("Available", "string", status_of!("Available"), ""),
    col("Paused", "string", status_of!("Paused"), ""),
    CrdColumn {
        priority: 1,
        ..col("Archived", "string", status_of!("Archived"), "")
    },
    CrdColumn {
        priority: 1,
        ..col("Succeeded", "string", status_of!("Succeeded"), "")
    },
    CrdColumn {
        priority: 1,
        ..col("InTransition", "string", status_of!("InTransition"), "")
    },
    col("Revision", "string", ".spec.revision", ""),
    AGE,
];

/// `objectsetphases.package-operator.run`.
const OBJECT_SET_PHASE_COLUMNS: &[CrdColumn] = &[
    col("Available", "string", status_of!("Available"), ""),
    col("Paused", "string", status_of!("Paused"), ""),
    col("Revision", "string", ".status.revision", ""),
    AGE,
];

/// `packages.package-operator.run`.
const PACKAGE_COLUMNS: &[CrdColumn] = &[
    col("Available", "string", status_of!("Available"), ""),
    col("Progressing", "string", status_of!("Progressing"), ""),
    col("Unpacked", "string", status_of!("Unpacked"), ""),
    col("Invalid", "string", status_of!("Invalid"), ""),
    col("Revision", "string", ".status.revision", ""),
    AGE,
];

fn doc(type_name: &str, path: &str) -> String {
    description(type_name, path).unwrap_or_default().to_owned()
}

fn name_column() -> ColumnDef {
    ColumnDef {
        name: "Name",
        type_: "string",
        format: "name",
        description: doc("ObjectMeta", "name"),
        priority: 0,
    }
}

fn builtin(name: &'static str, description: String) -> ColumnDef {
    ColumnDef {
        name,
        type_: "string",
        format: "",
        description,
        priority: 0,
    }
}

fn age_column() -> ColumnDef {
    builtin("Age", doc("ObjectMeta", "creationTimestamp"))
}

fn wide(mut c: ColumnDef) -> ColumnDef {
    c.priority = 1;
    c
}

/// How a kind's rows are printed.
enum Cells {
    Crd(Vec<(JsonPath, &'static str)>),
    Builtin(fn(&Value) -> Vec<Value>),
}

/// A kind's columns and how to fill them.
pub struct Printer {
    pub columns: Vec<ColumnDef>,
    cells: Cells,
}

fn crd(columns: &[CrdColumn]) -> Printer {
    let mut defs = vec![name_column()];
    let mut paths = Vec::new();
    for c in columns {
        match JsonPath::parse(c.json_path) {
            Ok(p) => paths.push((p, c.type_)),
            Err(e) => {
                tracing::error!(error = %e, "printer column does not parse");
                continue;
            }
        }
        defs.push(ColumnDef {
            name: c.name,
            type_: c.type_,
            format: "",
            description: c.description.to_owned(),
            priority: c.priority,
        });
    }
    Printer {
        columns: defs,
        cells: Cells::Crd(paths),
    }
}

/// The printer of `def`'s kind.
pub fn printer(def: &ResourceDef) -> &'static Printer {
    static PRINTERS: LazyLock<Vec<(&'static str, Printer)>> = LazyLock::new(|| {
        vec![
            (
                "Namespace",
                Printer {
                    columns: vec![
                        name_column(),
                        builtin("Status", "The status of the namespace".into()),
                        age_column(),
                    ],
                    cells: Cells::Builtin(namespace_cells),
                },
            ),
            (
                "Secret",
                Printer {
                    columns: vec![
                        name_column(),
                        builtin("Type", doc("Secret", "type")),
                        builtin("Data", doc("Secret", "data")),
                        age_column(),
                    ],
                    cells: Cells::Builtin(secret_cells),
                },
            ),
            (
                "ConfigMap",
                Printer {
                    columns: vec![
                        name_column(),
                        builtin("Data", doc("ConfigMap", "data")),
                        age_column(),
                    ],
                    cells: Cells::Builtin(config_map_cells),
                },
            ),
            (
                "Event",
                Printer {
                    columns: vec![
                        builtin("Last Seen", doc("Event", "lastTimestamp")),
                        builtin("Type", doc("Event", "type")),
                        builtin("Reason", doc("Event", "reason")),
                        builtin("Object", doc("Event", "involvedObject")),
                        wide(builtin("Subobject", doc("ObjectReference", "fieldPath"))),
                        wide(builtin("Source", doc("Event", "source"))),
                        builtin("Message", doc("Event", "message")),
                        wide(builtin("First Seen", doc("Event", "firstTimestamp"))),
                        wide(builtin("Count", doc("Event", "count"))),
                        ColumnDef {
                            priority: 1,
                            ..name_column()
                        },
                    ],
                    cells: Cells::Builtin(event_cells),
                },
            ),
            (
                "Deployment",
                Printer {
                    columns: vec![
                        name_column(),
                        builtin("Ready", "Number of the pod with ready state".into()),
                        builtin("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec.".into()),
                        builtin("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.".into()),
                        age_column(),
                        wide(builtin("Containers", "Names of each container in the template.".into())),
                        wide(builtin("Images", "Images referenced by each container in the template.".into())),
                        wide(builtin("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.".into())),
                    ],
                    cells: Cells::Builtin(deployment_cells),
                },
            ),
            (
                "ServiceAccount",
                Printer {
                    columns: vec![
                        name_column(),
                        builtin("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.".into()),
                        age_column(),
                    ],
                    cells: Cells::Builtin(service_account_cells),
                },
            ),
            ("Role", created_at_printer()),
            ("ClusterRole", created_at_printer()),
            ("CustomResourceDefinition", created_at_printer()),
            ("RoleBinding", binding_printer()),
            ("ClusterRoleBinding", binding_printer()),
            ("ObjectDeployment", crd(OBJECT_DEPLOYMENT_COLUMNS)),
            ("ObjectSet", crd(OBJECT_SET_COLUMNS)),
            ("ObjectSetPhase", crd(OBJECT_SET_PHASE_COLUMNS)),
            ("Package", crd(PACKAGE_COLUMNS)),
            ("HostedCluster", crd(HOSTED_CLUSTER_COLUMNS)),
            ("NodePool", crd(NODE_POOL_COLUMNS)),
        ]
    });
    static NAME_ONLY: LazyLock<Printer> = LazyLock::new(|| crd(&[]));
    PRINTERS
        .iter()
        .find(|(k, _)| *k == def.kind)
        .map_or(&*NAME_ONLY, |(_, p)| p)
}

impl Printer {
    /// The cells of `obj`'s row.
    pub fn cells(&self, obj: &Value) -> Vec<Value> {
        match &self.cells {
            Cells::Builtin(f) => f(obj),
            Cells::Crd(paths) => {
                let mut cells = vec![text(obj, "/metadata/name")];
                cells.extend(paths.iter().map(|(path, type_)| {
                    path.find(obj)
                        .first()
                        .map_or(Value::Null, |v| crd_cell(type_, v))
                }));
                cells
            }
        }
    }
}

/// `cellForJSONValue`, and for `string` columns JSONPath's printing of the value.
fn crd_cell(type_: &str, v: &Value) -> Value {
    match (type_, v) {
        ("string", Value::String(s)) => json!(s),
        ("string", Value::Null) => json!("<nil>"),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => json!(since(Some(s)).unwrap_or_else(|| "<invalid>".into())),
        _ => Value::Null,
    }
}

fn text(obj: &Value, pointer: &str) -> Value {
    json!(obj.pointer(pointer).and_then(Value::as_str).unwrap_or(""))
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn len_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer)
        .and_then(Value::as_object)
        .map_or(0, |m| i64::try_from(m.len()).unwrap_or(i64::MAX))
}

fn age(obj: &Value) -> Value {
    json!(translate(obj.pointer("/metadata/creationTimestamp")))
}

fn namespace_cells(obj: &Value) -> Vec<Value> {
    vec![
        text(obj, "/metadata/name"),
        text(obj, "/status/phase"),
        age(obj),
    ]
}

/// `printDeployment`.
fn deployment_cells(obj: &Value) -> Vec<Value> {
    let n = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let containers: Vec<&Value> = obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| c.get(field).and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    vec![
        text(obj, "/metadata/name"),
        json!(format!(
            "{}/{}",
            n("/status/readyReplicas"),
            n("/spec/replicas")
        )),
        json!(n("/status/updatedReplicas")),
        json!(n("/status/availableReplicas")),
        age(obj),
        json!(join("name")),
        json!(join("image")),
        json!(selector),
    ]
}

/// `printServiceAccount`.
fn service_account_cells(obj: &Value) -> Vec<Value> {
    let secrets = obj
        .get("secrets")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    vec![text(obj, "/metadata/name"), json!(secrets), age(obj)]
}

/// `printRole`, `printClusterRole`, and the CRD registry's table: name and creation time.
fn created_at_printer() -> Printer {
    Printer {
        columns: vec![
            name_column(),
            builtin("Created At", doc("ObjectMeta", "creationTimestamp")),
        ],
        cells: Cells::Builtin(|obj| {
            vec![
                text(obj, "/metadata/name"),
                text(obj, "/metadata/creationTimestamp"),
            ]
        }),
    }
}

/// `printRoleBinding`/`printClusterRoleBinding`: the role, the age, the subjects (wide).
fn binding_printer() -> Printer {
    Printer {
        columns: vec![
            name_column(),
            builtin("Role", "Role".into()),
            age_column(),
            wide(builtin("Users", "Users in the roleBinding".into())),
            wide(builtin("Groups", "Groups in the roleBinding".into())),
            wide(builtin(
                "ServiceAccounts",
                "ServiceAccounts in the roleBinding".into(),
            )),
        ],
        cells: Cells::Builtin(binding_cells),
    }
}

fn binding_cells(obj: &Value) -> Vec<Value> {
    let subjects: Vec<&Value> = obj
        .get("subjects")
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let of = |kind: &str| {
        subjects
            .iter()
            .filter(|s| s["kind"] == kind)
            .map(|s| match (str_at(s, "/namespace"), str_at(s, "/name")) {
                (ns, name) if kind == "ServiceAccount" => format!("{ns}/{name}"),
                (_, name) => name.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        text(obj, "/metadata/name"),
        json!(format!(
            "{}/{}",
            str_at(obj, "/roleRef/kind"),
            str_at(obj, "/roleRef/name")
        )),
        age(obj),
        json!(of("User")),
        json!(of("Group")),
        json!(of("ServiceAccount")),
    ]
}

fn secret_cells(obj: &Value) -> Vec<Value> {
    vec![
        text(obj, "/metadata/name"),
        text(obj, "/type"),
        json!(len_at(obj, "/data")),
        age(obj),
    ]
}

fn config_map_cells(obj: &Value) -> Vec<Value> {
    vec![
        text(obj, "/metadata/name"),
        json!(len_at(obj, "/data") + len_at(obj, "/binaryData")),
        age(obj),
    ]
}

/// `printEvent`.
fn event_cells(ev: &Value) -> Vec<Value> {
    let set = |p: &str| ev.pointer(p).filter(|v| !v.is_null());
    let first = match set("/firstTimestamp") {
        Some(t) => translate(Some(t)),
        None => translate(ev.pointer("/eventTime")),
    };
    let mut last = match set("/lastTimestamp") {
        Some(t) => translate(Some(t)),
        None => first.clone(),
    };
    let mut count = ev.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = set("/series") {
        last = translate(series.get("lastObservedTime"));
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        // Singleton events of the new API have no count.
        count = 1;
    }
    let (kind, name) = (
        str_at(ev, "/involvedObject/kind").to_lowercase(),
        str_at(ev, "/involvedObject/name"),
    );
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let first_set = |a: &str, b: &str| {
        let a = str_at(ev, a);
        if a.is_empty() {
            str_at(ev, b).to_owned()
        } else {
            a.to_owned()
        }
    };
    let component = first_set("/source/component", "/reportingComponent");
    let instance = first_set("/source/host", "/reportingInstance");
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        text(ev, "/type"),
        text(ev, "/reason"),
        json!(target),
        text(ev, "/involvedObject/fieldPath"),
        json!(source),
        json!(str_at(ev, "/message").trim()),
        json!(first),
        json!(count),
        text(ev, "/metadata/name"),
    ]
}

/// Seconds since an RFC 3339 timestamp, `None` when it does not parse.
fn seconds_since(ts: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339).ok()?;
    Some((time::OffsetDateTime::now_utc() - t).whole_seconds())
}

fn since(ts: Option<&str>) -> Option<String> {
    ts.and_then(seconds_since).map(human_duration)
}

/// `translateTimestampSince`: `<unknown>` for a zero (absent) time.
pub fn translate(ts: Option<&Value>) -> String {
    match ts.and_then(Value::as_str) {
        None => "<unknown>".into(),
        Some(s) => since(Some(s)).unwrap_or_else(|| "<unknown>".into()),
    }
}

/// `duration.HumanDuration`: about two significant figures.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{EVENTS, HOSTED_CLUSTERS, KINDS, NODE_POOLS};

    #[test]
    fn human_durations_read_like_kubectl() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
        ] {
            assert_eq!(human_duration(s), want);
        }
    }

    #[test]
    fn crd_columns_have_no_age_and_null_for_missing() {
        let p = printer(&KINDS[HOSTED_CLUSTERS]);
        let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Name",
                "Version",
                "CP Version",
                "KubeConfig",
                "Progress",
                "Available",
                "Progressing",
                "Message",
                "CP Progress",
                "DP Progress"
            ]
        );
        let hc = json!({"metadata": {"name": "a"},
            "status": {"conditions": [{"type": "Available", "status": "False", "message": "m"}]}});
        let cells = p.cells(&hc);
        assert_eq!(cells[0], "a");
        assert_eq!(cells[1], Value::Null);
        assert_eq!((&cells[5], &cells[7]), (&json!("False"), &json!("m")));
        let np = json!({"metadata": {"name": "w"}, "spec": {"clusterName": "a", "replicas": 2}});
        let cells = printer(&KINDS[NODE_POOLS]).cells(&np);
        assert_eq!(
            &cells[..4],
            &[json!("w"), json!("a"), json!(2), Value::Null]
        );
    }

    #[test]
    fn event_rows() {
        let ev = json!({"metadata": {"name": "a.1"}, "type": "Warning", "reason": "R",
            "involvedObject": {"kind": "HostedCluster", "name": "a"}, "message": " m \n",
            "source": {"component": "c"}, "count": 3});
        let cells = printer(&KINDS[EVENTS]).cells(&ev);
        assert_eq!(
            cells,
            [
                json!("<unknown>"),
                json!("Warning"),
                json!("R"),
                json!("hostedcluster/a"),
                json!(""),
                json!("c"),
                json!("m"),
                json!("<unknown>"),
                json!(3),
                json!("a.1")
            ]
        );
    }
}
