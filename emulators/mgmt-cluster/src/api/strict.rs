//! Server-side field validation (`fieldValidation`), worded as kube-apiserver words it
//! (`test/integration/apiserver/field_validation_test.go` holds the expected strings):
//!
//! - create and update: `<Kind> in version "<v>" cannot be handled as a <Kind>: strict
//!   decoding error: duplicate field "x", unknown field "spec.y"` (400, `transformDecodeError`);
//! - merge and JSON patch: 422 `Invalid` on field `patch` with the same strict decoding
//!   error (`jsonPatcher.applyPatchToCurrentObject`), JSON-patch operations' own problems
//!   prefixed `json patch`;
//! - server-side apply: duplicate keys as the YAML decoder reports them (`line N: key "x"
//!   already set in map`), and unknown fields always fail, whatever the directive, with
//!   structured-merge-diff's `failed to create typed patch object (...): .spec.y: field not
//!   declared in schema` — a 500, as in current kube-apiserver (kubernetes/kubernetes#122480,
//!   #139253).
//!
//! With `Warn` (the default) every finding becomes a `Warning` header instead; with `Ignore`
//! nothing is said. In all cases unknown fields are pruned, never stored.

use serde_json::Value;

use super::options::Directive;
use crate::duplicates::{self, Duplicate};
use crate::error::{ApiError, ApiResult, Cause};
use crate::fieldpath::{PathElement, path_string};
use crate::kinds::{KINDS, ResourceId};
use crate::pruning::prune_unknown;
use crate::schema::{self, Kind, ListType, Node};
use crate::typed::list_item_element;

/// `Warning` header texts collected while handling a request.
#[derive(Debug, Default)]
pub struct Warnings(pub Vec<String>);

impl Warnings {
    fn extend(&mut self, texts: impl IntoIterator<Item = String>) {
        for t in texts {
            if !self.0.contains(&t) {
                self.0.push(t);
            }
        }
    }
}

fn strict_error(errors: &[String]) -> String {
    format!("strict decoding error: {}", errors.join(", "))
}

fn duplicate_fields(dups: &[Duplicate]) -> Vec<String> {
    dups.iter()
        .map(|d| format!("duplicate field {}", Value::String(d.key.clone())))
        .collect()
}

fn unknown_fields(paths: Vec<String>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| format!("unknown field {}", Value::String(p)))
        .collect()
}

/// A create or update body: duplicates in `body`, then fields of `obj` the schema does not
/// know (pruned from `obj`).
pub fn check_object(
    res: ResourceId,
    directive: Directive,
    body: &[u8],
    obj: &mut Value,
    warnings: &mut Warnings,
) -> ApiResult<()> {
    let def = &KINDS[res];
    let version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(|v| v.rsplit('/').next().unwrap_or(v).to_owned())
        .unwrap_or_else(|| def.version.to_owned());
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or(def.kind)
        .to_owned();
    let mut errors = duplicate_fields(&duplicates::find(body));
    errors.extend(unknown_fields(prune_unknown(schema::for_kind(res), obj)));
    match directive {
        Directive::Strict if !errors.is_empty() => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: {}",
            def.kind,
            strict_error(&errors)
        ))),
        Directive::Warn => {
            warnings.extend(errors);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Problems of a merge patch body itself (its duplicate keys).
pub fn merge_patch_errors(body: &[u8]) -> Vec<String> {
    duplicate_fields(&duplicates::find(body))
}

/// Problems of a JSON patch's operations: unknown and repeated operation fields.
pub fn json_patch_errors(body: &[u8], ops: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    for op in ops.as_array().into_iter().flatten() {
        for key in op.as_object().into_iter().flat_map(|m| m.keys()) {
            if !matches!(key.as_str(), "op" | "path" | "from" | "value") {
                errors.push(format!(
                    "json patch unknown field {}",
                    Value::String(key.clone())
                ));
            }
        }
    }
    errors.extend(
        duplicate_fields(&duplicates::find(body))
            .into_iter()
            .map(|e| format!("json patch {e}")),
    );
    errors
}

/// A patched object: `patch_errors`, then its unknown fields (pruned).
pub fn check_patched(
    res: ResourceId,
    directive: Directive,
    patch_errors: Vec<String>,
    patched: &mut Value,
    warnings: &mut Warnings,
) -> ApiResult<()> {
    let as_sent = patched.to_string();
    let mut errors = patch_errors;
    errors.extend(unknown_fields(prune_unknown(
        schema::for_kind(res),
        patched,
    )));
    match directive {
        Directive::Strict if !errors.is_empty() => Err(ApiError::invalid_kind(
            "",
            "",
            "",
            "",
            &[Cause::invalid(
                "patch",
                &Value::String(as_sent),
                &strict_error(&errors),
            )],
        )),
        Directive::Warn => {
            warnings.extend(errors);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Unknown fields of an applied configuration: always an error (see the module docs).
pub fn check_apply_config(res: ResourceId, config: &Value) -> ApiResult<()> {
    let def = &KINDS[res];
    let mut errors = Vec::new();
    undeclared(schema::for_kind(res), config, &mut Vec::new(), &mut errors);
    if errors.is_empty() {
        return Ok(());
    }
    let meta = |f: &str| {
        config
            .pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let gvk = format!("{}/{}, Kind={}", def.group, def.version, def.kind);
    let detail = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    Err(ApiError::internal(format!(
        "failed to create typed patch object ({}/{}; {gvk}): {detail}",
        meta("namespace"),
        meta("name")
    )))
}

/// structured-merge-diff's `field not declared in schema`, with its path notation.
fn undeclared(node: &Node, value: &Value, path: &mut Vec<PathElement>, out: &mut Vec<String>) {
    match (&node.kind, value) {
        (Kind::Object(o), Value::Object(map)) => {
            for (k, v) in map {
                path.push(PathElement::Field(k.clone()));
                match o.fields.get(k.as_str()) {
                    Some(field) => undeclared(field, v, path, out),
                    None => out.push(format!(
                        "{}: field not declared in schema",
                        path_string(path)
                    )),
                }
                path.pop();
            }
        }
        (Kind::Map(m), Value::Object(map)) => {
            for (k, v) in map {
                path.push(PathElement::Field(k.clone()));
                undeclared(&m.values, v, path, out);
                path.pop();
            }
        }
        (Kind::List(l), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let pe = match l.list_type {
                    ListType::Atomic => PathElement::Index(i),
                    _ => list_item_element(l, item, i),
                };
                path.push(pe);
                undeclared(&l.items, item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Duplicate keys of an apply body (checked after the apply itself, as kube-apiserver does).
pub fn check_apply_duplicates(
    directive: Directive,
    body: &[u8],
    warnings: &mut Warnings,
) -> ApiResult<()> {
    let lines: Vec<String> = duplicates::find(body)
        .into_iter()
        .map(|d| {
            format!(
                "line {}: key {} already set in map",
                d.line,
                Value::String(d.key)
            )
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    match directive {
        Directive::Strict => Err(ApiError::bad_request(format!(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            lines.join("\n  ")
        ))),
        Directive::Warn => {
            warnings.extend(lines);
            Ok(())
        }
        Directive::Ignore => Ok(()),
    }
}

/// The `Warning` header value for `text` (`net.NewWarningHeader(299, "-", text)`).
pub fn warning_header(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::HOSTED_CLUSTERS;
    use serde_json::json;

    #[test]
    fn strict_create_names_each_field() {
        let body = br#"{"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": "a"}, "spec": {"relase": {}, "dns": {"baseDomain": "x", "baseDomain": "y"}}}"#;
        let mut obj: Value = serde_json::from_slice(body).unwrap();
        let err = check_object(
            HOSTED_CLUSTERS,
            Directive::Strict,
            body,
            &mut obj,
            &mut Warnings::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "HostedCluster in version \"v1beta1\" cannot be handled as a HostedCluster: strict decoding error: \
             duplicate field \"baseDomain\", unknown field \"spec.relase\""
        );
        let config = json!({"metadata": {"name": "a", "namespace": "n"},
                            "status": {"conditions": [{"type": "A", "bogus": 1}]}});
        let err = check_apply_config(HOSTED_CLUSTERS, &config).unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(
            err.message,
            "failed to create typed patch object (n/a; hypershift.openshift.io/v1beta1, Kind=HostedCluster): \
             .status.conditions[type=\"A\"].bogus: field not declared in schema"
        );
        assert_eq!(
            warning_header("unknown field \"x\""),
            "299 - \"unknown field \\\"x\\\"\""
        );
    }
}
