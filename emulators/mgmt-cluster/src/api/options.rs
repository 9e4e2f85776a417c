//! Write options from the query string — `dryRun`, `fieldManager`, `fieldValidation`,
//! `force` — validated as `k8s.io/apimachinery/pkg/apis/meta/v1/validation`
//! (`ValidateCreateOptions`, `ValidateUpdateOptions`, `ValidatePatchOptions`) does: a bad
//! value is 422 `Invalid` on `CreateOptions.meta.k8s.io` etc.

use std::collections::HashMap;

use http::HeaderMap;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Cause};

/// `fieldValidation`: what to do about unknown and duplicate fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    Ignore,
    /// The server default since Kubernetes 1.27: succeed and say so in `Warning` headers.
    Warn,
    /// 400 (422 for merge and JSON patches) naming every unknown or duplicate field.
    Strict,
}

/// The verb the options belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Create,
    Update,
    Patch,
    Apply,
}

impl Verb {
    fn options_kind(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Patch | Self::Apply => "PatchOptions",
        }
    }
}

/// Validated write options.
#[derive(Debug, Clone)]
pub struct Options {
    pub dry_run: bool,
    /// `fieldManager`, or the user agent's product token when absent
    /// (`managerOrUserAgent`); empty becomes `unknown` in managedFields.
    pub manager: String,
    pub directive: Directive,
    pub force: bool,
}

/// `FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Go's `strconv.ParseBool`, which query parameters go through.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `prefixFromUserAgent`: the user agent up to its first `/`, printable characters only.
fn user_agent_manager(headers: &HeaderMap) -> String {
    let ua = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut out = String::new();
    for c in ua.split('/').next().unwrap_or_default().chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// `dryRun` values must all be `All` (`ValidateDryRun`).
pub fn dry_run_causes(values: &[String]) -> Vec<Cause> {
    if values.iter().all(|v| v == "All") {
        Vec::new()
    } else {
        vec![Cause::not_supported("dryRun", &json!(values), &["All"])]
    }
}

/// Parses and validates the options of `verb`.
pub fn parse(
    params: &HashMap<String, String>,
    headers: &HeaderMap,
    verb: Verb,
) -> ApiResult<Options> {
    let field_manager = params.get("fieldManager").cloned().unwrap_or_default();
    let dry_run: Vec<String> = params.get("dryRun").cloned().into_iter().collect();
    let validation = params.get("fieldValidation").cloned().unwrap_or_default();
    let force = match params.get("force") {
        None => None,
        Some(v) => Some(parse_bool(v).ok_or_else(|| {
            ApiError::bad_request(format!("strconv.ParseBool: parsing {v:?}: invalid syntax"))
        })?),
    };
    let mut causes = Vec::new();
    match verb {
        Verb::Patch if force.is_some() => causes.push(Cause::forbidden(
            "force",
            "may not be specified for non-apply patch",
        )),
        Verb::Apply if field_manager.is_empty() => causes.push(Cause::required_because(
            "fieldManager",
            "is required for apply patch",
        )),
        _ => {}
    }
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        causes.push(Cause::too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH));
    }
    for (i, c) in field_manager.chars().enumerate() {
        if c.is_control() {
            causes.push(Cause::invalid(
                "fieldManager",
                &Value::String(field_manager.clone()),
                &format!("invalid character U+{:04X} (at position {i})", u32::from(c)),
            ));
        }
    }
    causes.extend(dry_run_causes(&dry_run));
    let directive = match validation.as_str() {
        "" | "Warn" => Directive::Warn,
        "Ignore" => Directive::Ignore,
        "Strict" => Directive::Strict,
        other => {
            causes.push(Cause::not_supported(
                "fieldValidation",
                &Value::String(other.to_owned()),
                &["", "Ignore", "Strict", "Warn"],
            ));
            Directive::Warn
        }
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid_options(verb.options_kind(), &causes));
    }
    let manager = if field_manager.is_empty() {
        user_agent_manager(headers)
    } else {
        field_manager
    };
    Ok(Options {
        dry_run: !dry_run.is_empty(),
        manager,
        directive,
        force: force.unwrap_or(false),
    })
}
