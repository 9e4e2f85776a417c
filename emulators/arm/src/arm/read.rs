//! GET, HEAD and lists: single resources, collections, resource groups and the `/resources`
//! inventory.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::Ctx;
use super::lookup::{check_rg, embedded, not_found, render_embedded};
use super::respond::{empty, json_response, page};
use crate::errors::{ArmError, Result};
use crate::path::ResourceRef;
use crate::store::{Store, StoredResource};
use crate::types::{ResourceType, Storage};

pub(super) fn get_resource(ctx: &Ctx<'_>, store: &Store, r: &ResourceRef) -> Result<Response> {
    if !r.rtype.is_resource_group() {
        check_rg(store, r, false)?;
    }
    if let Storage::Embedded { array } = r.rtype.storage {
        let (parent, idx) = embedded(store, r, array).ok_or_else(|| not_found(r))?;
        return Ok(json_response(
            StatusCode::OK,
            render_embedded(store, parent, array, idx),
        ));
    }
    let res = store.get(&r.key()).ok_or_else(|| not_found(r))?;
    let mut rendered = store.render(res);
    // `$expand=instanceView` adds the VM's instance view, as the compute RP does.
    let expand = ctx.query.get("$expand").map(String::as_str);
    if let (Some(view), Some(e)) = (r.rtype.instance_view, expand)
        && e.split(',')
            .any(|e| e.trim().eq_ignore_ascii_case("instanceView"))
    {
        rendered["properties"]["instanceView"] = view(res, ctx.now);
    }
    Ok(json_response(StatusCode::OK, rendered))
}

pub(super) fn head_resource(store: &Store, r: &ResourceRef) -> Response {
    let exists = match r.rtype.storage {
        Storage::Embedded { array } => embedded(store, r, array).is_some(),
        Storage::Standalone => store.get(&r.key()).is_some(),
    };
    empty(if exists {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    })
}

/// `GET /subscriptions/{s}/resourcegroups[?$filter=tagName eq 'X'[ and tagValue eq 'Y']]`:
/// ResourceGroups_List filters by tag only.
pub(super) fn list_resource_groups(ctx: &Ctx<'_>, store: &Store, sub: &str) -> Result<Response> {
    let filter = match ctx.query.get("$filter") {
        None => None,
        Some(f) => match Filter::parse(f) {
            Some(tag @ (Filter::TagName(_) | Filter::Tag(..))) => Some(tag),
            _ => return Err(invalid_filter(f)),
        },
    };
    let items: Vec<Value> = store
        .all()
        .filter(|r| r.rtype.is_resource_group() && r.sub.eq_ignore_ascii_case(sub))
        .filter(|r| filter.as_ref().is_none_or(|f| f.keeps(r)))
        .map(|r| {
            filter
                .as_ref()
                .map_or_else(|| store.render(r), |f| f.shown(store.render(r)))
        })
        .collect();
    Ok(page(ctx, items))
}

pub(super) fn list_collection(
    ctx: &Ctx<'_>,
    store: &Store,
    sub: &str,
    rg: Option<&str>,
    rtype: &'static ResourceType,
    parent_names: &[String],
) -> Result<Response> {
    let Some(rg) = rg else {
        // Subscription-wide list of a top-level type.
        let items = store
            .all()
            .filter(|r| std::ptr::eq(r.rtype, rtype) && r.sub.eq_ignore_ascii_case(sub))
            .map(|r| store.render(r))
            .collect();
        return Ok(page(ctx, items));
    };
    let parent = ResourceRef {
        sub: sub.to_owned(),
        rg: rg.to_owned(),
        rtype,
        names: parent_names
            .iter()
            .cloned()
            .chain([String::new()])
            .collect(),
    };
    check_rg(store, &parent, false)?;
    let parent_key = parent.parent_key();
    if let Storage::Embedded { array } = rtype.storage {
        let owner = store
            .get(&parent_key)
            .ok_or_else(|| ArmError::parent_not_found(&parent.parent_type_and_name()))?;
        let rendered = store.render(owner);
        let items = rendered
            .pointer(&format!("/properties/{array}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        return Ok(page(ctx, items));
    }
    if rtype.depth() > 1 && store.get(&parent_key).is_none() {
        return Err(ArmError::resource_not_found(
            &parent.parent_type_and_name(),
            rg,
        ));
    }
    let items = store
        .children_of(&parent_key)
        .filter(|r| std::ptr::eq(r.rtype, rtype))
        .map(|r| store.render(r))
        .collect();
    Ok(page(ctx, items))
}

/// The `$filter` forms of Resources_List the emulator evaluates: `resourceType eq 'X'`,
/// `tagName eq 'X'`, and `tagName eq 'X' and tagValue eq 'Y'` (tag names compare without
/// case, values with). Anything else is refused as Azure refuses what it cannot parse.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Filter {
    Type(String),
    TagName(String),
    Tag(String, String),
}

impl Filter {
    fn parse(filter: &str) -> Option<Self> {
        let clause = |c: &str, property: &str| {
            let (lhs, rhs) = c.split_once(" eq ")?;
            let rhs = rhs.trim();
            let quoted = rhs.strip_prefix('\'')?.strip_suffix('\'')?;
            lhs.trim()
                .eq_ignore_ascii_case(property)
                .then(|| quoted.replace("''", "'"))
        };
        let (first, second) = match filter.split_once(" and ") {
            Some((a, b)) => (a, Some(b)),
            None => (filter, None),
        };
        match second {
            None => clause(first, "resourceType")
                .map(Self::Type)
                .or_else(|| clause(first, "tagName").map(Self::TagName)),
            Some(value) => Some(Self::Tag(
                clause(first, "tagName")?,
                clause(value, "tagValue")?,
            )),
        }
    }

    fn keeps(&self, r: &StoredResource) -> bool {
        let tag = |name: &str| {
            r.tags
                .as_ref()
                .and_then(Value::as_object)
                .and_then(|t| t.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v.as_str().unwrap_or_default().to_owned())
        };
        match self {
            Self::Type(t) => r.rtype.full_name().eq_ignore_ascii_case(t),
            Self::TagName(name) => tag(name).is_some(),
            Self::Tag(name, value) => tag(name).as_deref() == Some(value.as_str()),
        }
    }

    /// What a listing shows of a resource it keeps: filtered by tag name and value, ARM
    /// leaves the resources' tags out of its answer.
    fn shown(&self, mut rendered: Value) -> Value {
        if let (Self::Tag(..), Some(obj)) = (self, rendered.as_object_mut()) {
            obj.remove("tags");
        }
        rendered
    }
}

fn invalid_filter(f: &str) -> ArmError {
    ArmError::bad_request(
        "InvalidFilterInQueryString",
        format!("Invalid $filter '{f}' specified in the query string."),
    )
}

pub(super) fn inventory(
    ctx: &Ctx<'_>,
    store: &Store,
    sub: &str,
    rg: Option<&str>,
) -> Result<Response> {
    if let Some(rg) = rg {
        let key = format!("/subscriptions/{sub}/resourcegroups/{rg}").to_ascii_lowercase();
        if store.get(&key).is_none() {
            return Err(ArmError::resource_group_not_found(rg));
        }
    }
    let wanted = match ctx.query.get("$filter") {
        None => None,
        Some(f) => Some(Filter::parse(f).ok_or_else(|| invalid_filter(f))?),
    };
    let items = store
        .all()
        .filter(|r| r.sub.eq_ignore_ascii_case(sub) && r.rtype.in_inventory)
        .filter(|r| rg.is_none_or(|g| r.rg.eq_ignore_ascii_case(g)))
        .filter(|r| wanted.as_ref().is_none_or(|f| f.keeps(r)))
        .map(|r| match &wanted {
            Some(f) => f.shown(store.render_inventory(r)),
            None => store.render_inventory(r),
        })
        .collect();
    Ok(page(ctx, items))
}

#[cfg(test)]
mod tests {
    use super::Filter;

    #[test]
    fn resource_listings_filter_by_type_by_tag_name_or_by_tag_name_and_value() {
        assert_eq!(
            Filter::parse("resourceType eq 'Microsoft.Network/virtualNetworks'"),
            Some(Filter::Type("Microsoft.Network/virtualNetworks".into()))
        );
        assert_eq!(
            Filter::parse("tagName eq 'hypersaga.io_cluster'"),
            Some(Filter::TagName("hypersaga.io_cluster".into()))
        );
        assert_eq!(
            Filter::parse("tagName eq 'owner' and tagValue eq 'it''s me'"),
            Some(Filter::Tag("owner".into(), "it's me".into()))
        );
        for unparsed in [
            "name eq 'x'",
            "tagName eq owner",
            "tagValue eq 'x' and tagName eq 'y'",
            "resourceType eq 'a' and tagValue eq 'b'",
            "startswith(tagName, 'x')",
        ] {
            assert_eq!(Filter::parse(unparsed), None, "{unparsed}");
        }
    }
}
