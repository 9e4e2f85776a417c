//! What a write does to an object between the request and the store, in kube-apiserver's
//! order (`apiserver/pkg/endpoints/handlers/{create,update,patch}.go`,
//! `apiserver/pkg/registry/rest/{create,update}.go`, the kinds' strategies):
//!
//! 1. decoding fixes: `null`s the schema does not allow are pruned, defaults applied
//!    (structural defaulting), a Secret's `stringData` folded into `data`;
//! 2. the field manager records who changed what in `metadata.managedFields` (or, for
//!    server-side apply, merges the configuration and checks ownership);
//! 3. the strategy: a create drops `status` of kinds with a status subresource and fills
//!    system metadata; an update keeps system metadata, keeps `status` on the main resource
//!    and everything but `status` on `/status`, and bumps `generation` when anything outside
//!    `metadata` changed;
//! 4. validation against the schema (422 `Invalid`), ratcheted against the stored object,
//!    and the kind's own checks ([`crate::kinds::ResourceDef::validate`]).
//!
//! The store then checks `resourceVersion` and commits (or, for `dryRun`, does not).

use serde_json::{Value, json};

use crate::defaulting::apply_defaults;
use crate::error::{ApiError, ApiResult};
use crate::fieldpath::{PathElement, Set};
use crate::kinds::{KINDS, ResourceId};
use crate::managedfields::FieldManager;
use crate::meta::{meta_str, metadata_mut, now_rfc3339};
use crate::pruning::prune_nulls;
use crate::schema;
use crate::validation;

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The main resource: everything but `status` (for kinds with a status subresource).
    Main,
    /// The `status` subresource: only `status`.
    Status,
}

impl Scope {
    fn subresource(self) -> &'static str {
        match self {
            Self::Main => "",
            Self::Status => "status",
        }
    }
}

/// The field manager of `res` at `scope`, with the strategy's reset fields
/// (`GetResetFields`: `status` for the main resource of kinds with a status subresource,
/// `spec` for `/status`).
fn field_manager(res: ResourceId, scope: Scope, api_version: &str) -> FieldManager<'_> {
    let def = &KINDS[res];
    let mut ignored = Set::new();
    match scope {
        Scope::Main if def.status_subresource => {
            ignored.insert(&[PathElement::Field("status".into())]);
        }
        Scope::Status => ignored.insert(&[PathElement::Field("spec".into())]),
        Scope::Main => {}
    }
    FieldManager {
        schema: schema::for_kind(res),
        api_version,
        subresource: scope.subresource(),
        ignored,
    }
}

/// Decoding fixes every stored object gets.
fn decode_fixes(res: ResourceId, obj: &mut Value) {
    let node = schema::for_kind(res);
    prune_nulls(node, obj);
    if let Some(fold) = KINDS[res].decode {
        fold(obj);
    }
    apply_defaults(node, obj);
}

fn validate(res: ResourceId, next: &Value, old: Option<&Value>, scope: Scope) -> ApiResult<()> {
    let def = &KINDS[res];
    let name = meta_str(next, "name").unwrap_or_default();
    let node = schema::for_kind(res);
    let causes = match scope {
        Scope::Main => {
            let mut causes = validation::validate(node, next, old, "");
            if let Some(check) = def.validate {
                causes.extend(check(next));
            }
            if let (Some(check), Some(old)) = (def.validate_update, old) {
                causes.extend(check(next, old));
            }
            causes
        }
        Scope::Status => match (node.field("status"), next.get("status")) {
            (Some(status_node), Some(status)) => validation::validate(
                status_node,
                status,
                old.and_then(|o| o.get("status")),
                "status",
            ),
            _ => Vec::new(),
        },
    };
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(def, name, &causes))
    }
}

/// A new object of `res` in namespace `ns` as `manager` creates it (POST, or an apply that
/// finds nothing): system metadata filled, status dropped where it is a subresource,
/// managedFields started, validated. `obj` has been decoded and pruned.
pub fn prepare_create(
    res: ResourceId,
    ns: &str,
    mut obj: Value,
    manager: &str,
) -> ApiResult<Value> {
    let def = &KINDS[res];
    decode_fixes(res, &mut obj);
    wipe_system_fields(&mut obj);
    let api_version = def.api_version();
    let empty = json!({"apiVersion": api_version, "kind": def.kind});
    let now = now_rfc3339();
    let mut obj = field_manager(res, Scope::Main, &api_version).update(&empty, obj, manager, &now);
    strategy_create(res, ns, &mut obj)?;
    validate(res, &obj, None, Scope::Main)?;
    Ok(obj)
}

/// `current` changed into `desired` by `manager` through `scope` (PUT, merge or JSON patch,
/// or a controller's update): managedFields updated, strategy applied, validated.
/// `desired.metadata.resourceVersion`, when set, stays as the store's precondition.
pub fn prepare_update(
    res: ResourceId,
    current: &Value,
    mut desired: Value,
    scope: Scope,
    manager: &str,
) -> ApiResult<Value> {
    let api_version = KINDS[res].api_version();
    decode_fixes(res, &mut desired);
    let now = now_rfc3339();
    let next = field_manager(res, scope, &api_version).update(current, desired, manager, &now);
    let next = strategy_update(res, current, next, scope);
    validate(res, &next, Some(current), scope)?;
    Ok(next)
}

/// One server-side apply request.
pub struct Apply<'a> {
    pub res: ResourceId,
    /// Namespace and name from the URL.
    pub ns: &'a str,
    pub name: &'a str,
    pub config: &'a Value,
    pub scope: Scope,
    pub manager: &'a str,
    pub force: bool,
}

/// Server-side apply of `req.config` to `current` or, when it does not exist, to a new
/// object.
pub fn prepare_apply(req: &Apply<'_>, current: Option<&Value>) -> ApiResult<Value> {
    let Apply {
        res,
        ns,
        name,
        config,
        scope,
        manager,
        force,
    } = *req;
    let def = &KINDS[res];
    let api_version = def.api_version();
    let empty = json!({"apiVersion": api_version, "kind": def.kind});
    let live = current.unwrap_or(&empty);
    let now = now_rfc3339();
    let mut next =
        field_manager(res, scope, &api_version).apply(live, config, manager, force, &now)?;
    decode_fixes(res, &mut next);
    match current {
        Some(current) => {
            let next = strategy_update(res, current, next, scope);
            validate(res, &next, Some(current), scope)?;
            Ok(next)
        }
        None => {
            let meta = metadata_mut(&mut next);
            meta.insert("name".into(), json!(name));
            wipe_system_fields(&mut next);
            strategy_create(res, ns, &mut next)?;
            validate(res, &next, None, Scope::Main)?;
            Ok(next)
        }
    }
}

/// `rest.WipeObjectMetaSystemFields`: what a client may not set on create.
fn wipe_system_fields(obj: &mut Value) {
    let meta = metadata_mut(obj);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "resourceVersion",
    ] {
        meta.remove(field);
    }
}

/// `BeforeCreate` and the kinds' `PrepareForCreate`.
fn strategy_create(res: ResourceId, ns: &str, obj: &mut Value) -> ApiResult<()> {
    let def = &KINDS[res];
    let name = resolve_name(obj)?;
    if let Some(cause) = validation::name(&name) {
        return Err(ApiError::invalid(def, &name, &[cause]));
    }
    if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".into(), json!(def.api_version()));
        map.insert("kind".into(), json!(def.kind));
        if def.status_subresource {
            map.remove("status");
        }
    }
    let meta = metadata_mut(obj);
    if def.namespaced {
        meta.insert("namespace".into(), json!(ns));
    } else {
        meta.remove("namespace");
    }
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
    meta.remove("generation");
    if def.generation {
        meta.insert("generation".into(), json!(1));
    }
    if let Some(normalize) = def.normalize {
        normalize(obj);
    }
    Ok(())
}

/// `metadata.name`, or one generated from `metadata.generateName`.
fn resolve_name(obj: &mut Value) -> ApiResult<String> {
    if let Some(name) = meta_str(obj, "name").filter(|n| !n.is_empty()) {
        return Ok(name.to_owned());
    }
    if let Some(prefix) = meta_str(obj, "generateName").filter(|n| !n.is_empty()) {
        let suffix: String = uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .chars()
            .take(5)
            .collect();
        let name = format!("{prefix}{suffix}");
        metadata_mut(obj).insert("name".into(), json!(name));
        return Ok(name);
    }
    Err(ApiError::bad_request("name or generateName is required"))
}

/// `BeforeUpdate` and the kinds' `PrepareForUpdate`: system metadata from the stored object,
/// the status subresource split, the generation bump.
fn strategy_update(res: ResourceId, current: &Value, desired: Value, scope: Scope) -> Value {
    let def = &KINDS[res];
    let precondition = meta_str(&desired, "resourceVersion").map(str::to_owned);
    let mut next = match scope {
        // Only status (and the managedFields recording the change) come from the request.
        Scope::Status => {
            let mut next = current.clone();
            if let Some(map) = next.as_object_mut() {
                match desired.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            let meta = metadata_mut(&mut next);
            match desired.pointer("/metadata/managedFields") {
                Some(mf) => meta.insert("managedFields".into(), mf.clone()),
                None => meta.remove("managedFields"),
            };
            next
        }
        Scope::Main => {
            let mut next = desired;
            if def.status_subresource
                && let Some(map) = next.as_object_mut()
            {
                match current.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            next
        }
    };
    if let Some(map) = next.as_object_mut() {
        map.insert("apiVersion".into(), json!(def.api_version()));
        map.insert("kind".into(), json!(def.kind));
    }
    let outside_metadata = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("metadata");
        }
        v
    };
    // The status subresource never moves `generation`; the main resource does when anything
    // outside `metadata` changed (its status is the stored one by now).
    let changed = scope == Scope::Main && outside_metadata(current) != outside_metadata(&next);
    let generation = current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let meta = metadata_mut(&mut next);
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match current.get("metadata").and_then(|m| m.get(field)) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    match precondition {
        Some(rv) => meta.insert("resourceVersion".into(), json!(rv)),
        None => meta.remove("resourceVersion"),
    };
    if def.generation {
        let generation = if changed { generation + 1 } else { generation };
        meta.insert("generation".into(), json!(generation));
    } else {
        meta.remove("generation");
    }
    if let Some(normalize) = def.normalize {
        normalize(&mut next);
    }
    next
}
