//! The writing verbs: create (POST), update (PUT) and patch (merge, JSON, apply), each with
//! `dryRun`, `fieldManager` and `fieldValidation` as kube-apiserver handles them
//! (`apiserver/pkg/endpoints/handlers/{create,update,patch}.go`).

use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use super::negotiate;
use super::options::{self, Options, Verb};
use super::resources::Req;
use super::strict::{self, Warnings};
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta::meta_str;
use crate::patch;
use crate::registry;

impl Req<'_> {
    fn options(&self, verb: Verb) -> ApiResult<Options> {
        options::parse(self.params, self.headers, verb)
    }

    /// `EnsureObjectNamespaceMatchesRequestNamespace`.
    fn check_namespace_matches(&self, obj: &Value) -> ApiResult<()> {
        if self.def.namespaced
            && let Some(body_ns) = meta_str(obj, "namespace").filter(|n| !n.is_empty())
            && body_ns != self.ns()
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Ok(())
    }

    /// `checkName`: a body naming another object than the URL.
    fn check_name_matches(&self, obj: &Value) -> ApiResult<()> {
        if let Some(body_name) = meta_str(obj, "name").filter(|n| !n.is_empty())
            && body_name != self.name()
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({})",
                self.name()
            )));
        }
        Ok(())
    }

    /// The body as scanned for duplicate keys: not a protobuf one, which has no keys to
    /// repeat (and whose bytes could look like some).
    fn json_source(&self) -> &[u8] {
        match negotiate::input(self.headers) {
            Ok(negotiate::Input::Protobuf) => &[],
            _ => self.body,
        }
    }

    /// The request body as an object.
    fn body_object(&self) -> ApiResult<Value> {
        let obj = self.body_json()?;
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        Ok(obj)
    }

    fn check_api_version(&self, obj: &Value) -> ApiResult<()> {
        let expected = self.def.api_version();
        match obj.get("apiVersion").and_then(Value::as_str) {
            Some(v) if v != expected => Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            ))),
            _ => Ok(()),
        }
    }

    /// Custom resources refuse unconditional updates (`AllowUnconditionalUpdate` is false for
    /// CRDs): a PUT must carry the resourceVersion it read (`registry/generic/registry/store.go`).
    fn check_conditional(&self, obj: &Value) -> ApiResult<()> {
        if (self.def.builtin && self.def.group != "apiextensions.k8s.io")
            || meta_str(obj, "resourceVersion").is_some_and(|rv| !rv.is_empty())
        {
            return Ok(());
        }
        let causes = [Cause::invalid(
            "metadata.resourceVersion",
            &json!(0),
            "must be specified for an update",
        )];
        Err(ApiError::invalid_kind(
            &self.def.qualified(),
            self.def.group,
            self.def.plural,
            self.name(),
            &causes,
        ))
    }

    pub(super) fn create(&self) -> ApiResult<Response> {
        self.require_namespace()?;
        let opts = self.options(Verb::Create)?;
        let mut obj = self.body_object()?;
        let mut warnings = Warnings::default();
        strict::check_object(
            self.target.res,
            opts.directive,
            self.json_source(),
            &mut obj,
            &mut warnings,
        )?;
        self.check_api_version(&obj)?;
        self.check_namespace_matches(&obj)?;
        let res = self.target.res;
        let prepared = registry::prepare_create(res, self.ns(), obj, &opts.manager)?;
        let created = self
            .emu
            .shared()
            .store
            .create(res, self.ns(), prepared, opts.dry_run)?;
        self.respond_warning(StatusCode::CREATED, created, &warnings)
    }

    pub(super) fn update(&self) -> ApiResult<Response> {
        let opts = self.options(Verb::Update)?;
        let mut obj = self.body_object()?;
        let mut warnings = Warnings::default();
        strict::check_object(
            self.target.res,
            opts.directive,
            self.json_source(),
            &mut obj,
            &mut warnings,
        )?;
        self.check_api_version(&obj)?;
        self.check_namespace_matches(&obj)?;
        self.check_name_matches(&obj)?;
        self.check_conditional(&obj)?;
        let (res, scope) = (self.target.res, self.scope());
        let written =
            self.emu
                .shared()
                .store
                .update(res, self.ns(), self.name(), opts.dry_run, |cur| {
                    registry::prepare_update(res, cur, obj, scope, &opts.manager)
                })?;
        self.respond_warning(StatusCode::OK, written.object, &warnings)
    }

    pub(super) fn patch(&self) -> ApiResult<Response> {
        let ct = negotiate::media_type(self.headers);
        match ct.as_str() {
            "application/merge-patch+json" | "application/json-patch+json" => self.json_patch(&ct),
            "application/strategic-merge-patch+json" if self.def.builtin => {
                // Strategic merge patch differs from a merge patch only in how some
                // built-in lists merge; none of the served built-in kinds relies on that.
                self.json_patch("application/merge-patch+json")
            }
            "application/apply-patch+yaml" => self.apply(),
            // The patch types the endpoint was installed with (`patchTypes`); custom
            // resources have no strategic merge patch.
            _ if self.def.builtin => Err(ApiError::unsupported_media_type(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
            ])),
            _ => Err(ApiError::unsupported_media_type(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ])),
        }
    }

    /// Merge and JSON patches: applied to the stored object, then treated as an update.
    fn json_patch(&self, ct: &str) -> ApiResult<Response> {
        let opts = self.options(Verb::Patch)?;
        let body = self.body_json()?;
        let merge = ct == "application/merge-patch+json";
        let patch_errors = if merge {
            strict::merge_patch_errors(self.body)
        } else {
            strict::json_patch_errors(self.body, &body)
        };
        let (res, scope) = (self.target.res, self.scope());
        let mut warnings = Warnings::default();
        let written =
            self.emu
                .shared()
                .store
                .update(res, self.ns(), self.name(), opts.dry_run, |cur| {
                    let mut patched = cur.clone();
                    if merge {
                        patch::merge_patch(&mut patched, &body);
                    } else {
                        patch::json_patch(&mut patched, &body)?;
                    }
                    strict::check_patched(
                        res,
                        opts.directive,
                        patch_errors,
                        &mut patched,
                        &mut warnings,
                    )?;
                    self.check_name_matches(&patched)?;
                    self.check_namespace_matches(&patched)?;
                    registry::prepare_update(res, cur, patched, scope, &opts.manager)
                })?;
        self.respond_warning(StatusCode::OK, written.object, &warnings)
    }

    /// Server-side apply (`application/apply-patch+yaml`), creating the object if needed.
    fn apply(&self) -> ApiResult<Response> {
        let opts = self.options(Verb::Apply)?;
        let config = self
            .body_json()
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {}", e.message)))?;
        if !config.is_object() {
            return Err(ApiError::bad_request(
                "error decoding YAML: the applied configuration must be an object",
            ));
        }
        let expected = self.def.api_version();
        let sent = config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if sent != expected {
            return Err(ApiError::bad_request(format!(
                "Incorrect version specified in apply patch. Specified patch version: {sent}, expected: {expected}"
            )));
        }
        if config.pointer("/metadata/managedFields").is_some() {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        self.check_namespace_matches(&config)?;
        self.check_name_matches(&config)?;
        let (res, scope) = (self.target.res, self.scope());
        let mut warnings = Warnings::default();
        let written =
            self.emu
                .shared()
                .store
                .upsert(res, self.ns(), self.name(), opts.dry_run, |cur| {
                    if cur.is_none() && scope == registry::Scope::Status {
                        return Err(ApiError::not_found(self.def, self.name()));
                    }
                    strict::check_apply_config(res, &config)?;
                    let request = registry::Apply {
                        res,
                        ns: self.ns(),
                        name: self.name(),
                        config: &config,
                        scope,
                        manager: &opts.manager,
                        force: opts.force,
                    };
                    let next = registry::prepare_apply(&request, cur)?;
                    strict::check_apply_duplicates(opts.directive, self.body, &mut warnings)?;
                    Ok(next)
                })?;
        let code = if written.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        self.respond_warning(code, written.object, &warnings)
    }
}
