//! Parsing ARM request paths into what they address.
//!
//! ARM path segments are case-insensitive (`resourcegroups` = `resourceGroups`); names keep
//! the caller's casing here and are matched case-insensitively by the store.

mod authz;

use axum::http::StatusCode;

use crate::errors::{ArmError, Result};
use crate::types::{self, Registration, ResourceType};
pub use authz::{AuthzKind, AuthzRef, AuthzScope};

/// Which view of an asynchronous operation a URL asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpView {
    /// `Azure-AsyncOperation`: always 200 with a status body.
    Status,
    /// `Location`: 202 while running, then the final result.
    Result,
}

/// A resource addressed by the request, with the caller's casing.
#[derive(Clone, Debug)]
pub struct ResourceRef {
    pub sub: String,
    pub rg: String,
    pub rtype: &'static ResourceType,
    /// One name per type segment (for a resource group: the group name).
    pub names: Vec<String>,
}

impl ResourceRef {
    /// The id in canonical casing for type segments, caller casing for names.
    pub fn id(&self) -> String {
        let rg_id = format!("/subscriptions/{}/resourceGroups/{}", self.sub, self.rg);
        if self.rtype.is_resource_group() {
            return rg_id;
        }
        let mut id = format!("{rg_id}/providers/{}", self.rtype.namespace);
        for (seg, name) in self.rtype.segments().zip(&self.names) {
            id.push('/');
            id.push_str(seg);
            id.push('/');
            id.push_str(name);
        }
        id
    }

    pub fn key(&self) -> String {
        self.id().to_ascii_lowercase()
    }

    pub fn name(&self) -> &str {
        self.names.last().map(String::as_str).unwrap_or(&self.rg)
    }

    pub fn rg_key(&self) -> String {
        format!("/subscriptions/{}/resourcegroups/{}", self.sub, self.rg).to_ascii_lowercase()
    }

    /// Key of the parent: the RG for top-level resources, else the parent resource.
    pub fn parent_key(&self) -> String {
        if self.rtype.is_resource_group() {
            return format!("/subscriptions/{}", self.sub).to_ascii_lowercase();
        }
        if self.names.len() <= 1 {
            return self.rg_key();
        }
        let id = self.key();
        // strip "/{type}/{name}"
        let mut cut = id.as_str();
        for _ in 0..2 {
            cut = cut.rsplit_once('/').map_or(cut, |(head, _)| head);
        }
        cut.to_owned()
    }

    /// `Namespace/type/name[/child/name]`, as ARM's ResourceNotFound message spells it.
    pub fn type_and_name(&self) -> String {
        let mut s = self.rtype.namespace.to_owned();
        for (seg, name) in self.rtype.segments().zip(&self.names) {
            s.push('/');
            s.push_str(seg);
            s.push('/');
            s.push_str(name);
        }
        s
    }

    /// Same, for the parent resource.
    pub fn parent_type_and_name(&self) -> String {
        let mut s = self.rtype.namespace.to_owned();
        let n = self.names.len().saturating_sub(1);
        for (seg, name) in self.rtype.segments().zip(&self.names).take(n) {
            s.push('/');
            s.push_str(seg);
            s.push('/');
            s.push_str(name);
        }
        s
    }
}

/// What a request path addresses.
#[derive(Clone, Debug)]
pub enum Target {
    /// `/subscriptions/{s}/resourcegroups`
    ResourceGroupList { sub: String },
    /// `/subscriptions/{s}[/resourceGroups/{rg}]/resources`
    Inventory { sub: String, rg: Option<String> },
    /// One of the operation URLs the emulator hands out.
    Operation {
        sub: String,
        id: String,
        view: OpView,
    },
    /// A single resource (or resource group).
    Resource(ResourceRef),
    /// A collection: all `rtype` under `parent` (a resource, an RG, or the subscription).
    Collection {
        sub: String,
        rg: Option<String>,
        rtype: &'static ResourceType,
        parent_names: Vec<String>,
    },
    /// A role assignment or role definition (one, or a collection) at some scope.
    Authorization(AuthzRef),
    /// `/subscriptions/{s}/providers/Microsoft.Compute/skus`: the Resource SKUs list.
    ResourceSkus { sub: String },
    /// `/subscriptions/{s}/providers/Microsoft.Compute/locations/{location}/usages`: the
    /// Compute usage list (vCPU quota) of a region, `location` as the caller spelt it.
    ComputeUsages { sub: String, location: String },
    /// A type the namespace does not have. ARM answers it only once it has the api-version
    /// (its message names it), after authenticating the caller like any other request.
    UnknownType {
        sub: String,
        namespace: String,
        type_path: String,
    },
}

/// How the api-version of a request is checked, which decides ARM's refusal.
#[derive(Clone, Copy, Debug)]
pub enum VersionRule<'a> {
    /// Operation URLs carry the caller's own version back: any is accepted.
    Any,
    /// ARM's own endpoints (resource groups, the inventory): `InvalidApiVersionParameter`.
    Arm(&'static [&'static str]),
    /// A resource provider's type: refused as its registration dictates.
    Provider {
        versions: &'static [&'static str],
        namespace: &'a str,
        type_path: &'a str,
        registration: Registration,
    },
    /// A type the namespace does not have: every version is refused.
    Unknown {
        namespace: &'a str,
        type_path: &'a str,
    },
}

impl Target {
    pub fn subscription(&self) -> &str {
        match self {
            Target::ResourceGroupList { sub }
            | Target::Inventory { sub, .. }
            | Target::Operation { sub, .. }
            | Target::Collection { sub, .. }
            | Target::UnknownType { sub, .. }
            | Target::ResourceSkus { sub }
            | Target::ComputeUsages { sub, .. } => sub,
            Target::Resource(r) => &r.sub,
            Target::Authorization(a) => &a.sub,
        }
    }

    /// The full type name used for faults, request counts and api-version checks.
    pub fn type_name(&self) -> String {
        match self {
            Target::ResourceGroupList { .. } => "Microsoft.Resources/resourceGroups".into(),
            Target::Inventory { .. } => "Microsoft.Resources/resources".into(),
            Target::Operation { .. } => "operations".into(),
            Target::Resource(r) => r.rtype.full_name(),
            Target::Collection { rtype, .. } => rtype.full_name(),
            Target::Authorization(a) => format!("{}/{}", authz::NAMESPACE, a.kind.type_path()),
            Target::ResourceSkus { .. } => "Microsoft.Compute/skus".into(),
            Target::ComputeUsages { .. } => "Microsoft.Compute/locations/usages".into(),
            Target::UnknownType {
                namespace,
                type_path,
                ..
            } => format!("{namespace}/{type_path}"),
        }
    }

    /// How the request's api-version is checked.
    pub fn version_rule(&self) -> VersionRule<'_> {
        let provider = |rtype: &'static ResourceType| VersionRule::Provider {
            versions: rtype.api_versions,
            namespace: rtype.namespace,
            type_path: rtype.type_path,
            registration: rtype.registration,
        };
        match self {
            Target::ResourceGroupList { .. } | Target::Inventory { .. } => {
                VersionRule::Arm(types::RESOURCES_VERSIONS)
            }
            Target::Resource(r) if r.rtype.is_resource_group() => {
                VersionRule::Arm(r.rtype.api_versions)
            }
            Target::Operation { .. } => VersionRule::Any,
            Target::Resource(r) => provider(r.rtype),
            Target::Collection { rtype, .. } => provider(rtype),
            Target::Authorization(a) => VersionRule::Provider {
                versions: a.kind.api_versions(),
                namespace: authz::NAMESPACE,
                type_path: a.kind.type_path(),
                registration: Registration::Locationless,
            },
            // (~) `skus` is taken as registered without locations, like Microsoft.Authorization's
            // types: its ARM manifest entry was not found.
            Target::ResourceSkus { .. } => VersionRule::Provider {
                versions: types::RESOURCE_SKU_VERSIONS,
                namespace: "Microsoft.Compute",
                type_path: "skus",
                registration: Registration::Locationless,
            },
            // Regional, as Azure/azure-sdk-for-python#21283 shows ARM refusing it.
            Target::ComputeUsages { .. } => VersionRule::Provider {
                versions: types::USAGE_VERSIONS,
                namespace: "Microsoft.Compute",
                type_path: "locations/usages",
                registration: Registration::Regions,
            },
            Target::UnknownType {
                namespace,
                type_path,
                ..
            } => VersionRule::Unknown {
                namespace,
                type_path,
            },
        }
    }

    /// The resource name faults match on.
    pub fn name(&self) -> &str {
        match self {
            Target::Resource(r) => r.name(),
            Target::Authorization(a) => a.name.as_deref().unwrap_or(""),
            _ => "",
        }
    }
}

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

fn not_found_path(path: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("The requested resource path '{path}' is not supported by the emulator."),
    )
}

/// Parses a request path.
pub fn parse(path: &str) -> Result<Target> {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let [first, sub, rest @ ..] = segs.as_slice() else {
        return Err(not_found_path(path));
    };
    if !eq(first, "subscriptions") {
        return Err(not_found_path(path));
    }
    let sub = (*sub).to_owned();
    if let Some(i) = authz::locate(&segs) {
        return authz::parse(sub, &segs[2..i], &segs[i + 2..], path);
    }
    match rest {
        [rgs] if eq(rgs, "resourcegroups") => Ok(Target::ResourceGroupList { sub }),
        [res] if eq(res, "resources") => Ok(Target::Inventory { sub, rg: None }),
        [opr, id] if eq(opr, "operationresults") => Ok(Target::Operation {
            sub,
            id: (*id).to_owned(),
            view: OpView::Result,
        }),
        [rgs, rg] if eq(rgs, "resourcegroups") => Ok(Target::Resource(ResourceRef {
            sub,
            rg: (*rg).to_owned(),
            rtype: &types::TYPES[0],
            names: Vec::new(),
        })),
        [rgs, rg, res] if eq(rgs, "resourcegroups") && eq(res, "resources") => {
            Ok(Target::Inventory {
                sub,
                rg: Some((*rg).to_owned()),
            })
        }
        [rgs, rg, prov, ns, tail @ ..] if eq(rgs, "resourcegroups") && eq(prov, "providers") => {
            parse_provider(sub, Some((*rg).to_owned()), ns, tail, path)
        }
        [prov, ns, tail @ ..] if eq(prov, "providers") => parse_provider(sub, None, ns, tail, path),
        _ => Err(not_found_path(path)),
    }
}

fn parse_provider(
    sub: String,
    rg: Option<String>,
    ns: &str,
    tail: &[&str],
    path: &str,
) -> Result<Target> {
    // Operation URLs first. Compute's disk operations live under `DiskOperations`; Compute
    // answers both views on one path and tells them apart by `monitor=true`, which the
    // router reads from the query.
    match (rg.is_some(), tail) {
        (false, [loc, _, ops, id])
            if eq(loc, "locations")
                && (eq(ops, "operations")
                    || eq(ops, "operationResults")
                    || eq(ops, "DiskOperations")) =>
        {
            // `operationResults` is only ever a result; the Compute and DiskRP paths are the
            // status unless `monitor=true` asks for the result.
            let view = if eq(ops, "operationResults") {
                OpView::Result
            } else {
                OpView::Status
            };
            return Ok(Target::Operation {
                sub,
                id: (*id).to_owned(),
                view,
            });
        }
        (true, [ops, id])
            if eq(ops, "privateDnsOperationStatuses") || eq(ops, "privateDnsOperationResults") =>
        {
            let view = if eq(ops, "privateDnsOperationStatuses") {
                OpView::Status
            } else {
                OpView::Result
            };
            return Ok(Target::Operation {
                sub,
                id: (*id).to_owned(),
                view,
            });
        }
        _ => {}
    }
    if rg.is_none() && eq(ns, "Microsoft.Compute") && matches!(tail, [skus] if eq(skus, "skus")) {
        return Ok(Target::ResourceSkus { sub });
    }
    if let (None, [locs, location, usages]) = (&rg, tail)
        && eq(ns, "Microsoft.Compute")
        && eq(locs, "locations")
        && eq(usages, "usages")
    {
        return Ok(Target::ComputeUsages {
            sub,
            location: (*location).to_owned(),
        });
    }
    if !types::namespace_known(ns) {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "InvalidResourceNamespace",
            format!("The resource namespace '{ns}' is invalid."),
        ));
    }
    if tail.is_empty() {
        return Err(not_found_path(path));
    }
    let type_segs: Vec<&str> = tail.iter().step_by(2).copied().collect();
    let names: Vec<String> = tail
        .iter()
        .skip(1)
        .step_by(2)
        .map(|s| (*s).to_owned())
        .collect();
    let Some(rtype) = types::lookup(ns, &type_segs) else {
        return Ok(Target::UnknownType {
            sub,
            namespace: ns.to_owned(),
            type_path: type_segs.join("/"),
        });
    };
    let is_collection = tail.len() % 2 == 1;
    match (rg, is_collection) {
        (Some(rg), false) => Ok(Target::Resource(ResourceRef {
            sub,
            rg,
            rtype,
            names,
        })),
        (rg, true) => Ok(Target::Collection {
            sub,
            rg,
            rtype,
            parent_names: names,
        }),
        (None, false) => Err(not_found_path(path)),
    }
}

/// Decodes `%xx` escapes in one path segment (names such as `@` may arrive encoded).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
