//! The per-type hooks of the table: read-only properties a resource provider fills on PUT,
//! and the referential checks it applies before accepting a PUT or DELETE.

use serde_json::{Map, Value, json};

use super::{FillCtx, PutCheck};
use crate::errors::{ArmError, Result};
use crate::store::Store;

// ---- read-only property fillers ----------------------------------------------------------

pub(super) fn fill_identity(p: &mut Map<String, Value>, ctx: &FillCtx<'_>) {
    // principalId/clientId are minted once and survive re-PUTs of the same identity.
    for key in ["principalId", "clientId"] {
        let kept = ctx.previous.and_then(|prev| prev.get(key)).cloned();
        p.insert(
            key.into(),
            kept.unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string())),
        );
    }
    p.insert("tenantId".into(), json!(ctx.tenant_id));
}

pub(super) fn fill_private_zone(p: &mut Map<String, Value>, _ctx: &FillCtx<'_>) {
    p.insert("maxNumberOfRecordSets".into(), json!(25000));
    p.insert("maxNumberOfVirtualNetworkLinks".into(), json!(1000));
    p.insert(
        "maxNumberOfVirtualNetworkLinksWithRegistration".into(),
        json!(100),
    );
    p.entry("numberOfRecordSets").or_insert(json!(1));
    p.entry("numberOfVirtualNetworkLinks").or_insert(json!(0));
    p.entry("numberOfVirtualNetworkLinksWithRegistration")
        .or_insert(json!(0));
    p.insert("internalId".into(), json!(uuid::Uuid::new_v4().to_string()));
}

pub(super) fn fill_public_zone(p: &mut Map<String, Value>, _ctx: &FillCtx<'_>) {
    p.insert("maxNumberOfRecordSets".into(), json!(10000));
    p.entry("numberOfRecordSets").or_insert(json!(2));
    p.entry("zoneType").or_insert(json!("Public"));
    p.insert(
        "nameServers".into(),
        json!([
            "ns1-01.azure-dns.com.",
            "ns2-01.azure-dns.net.",
            "ns3-01.azure-dns.org.",
            "ns4-01.azure-dns.info."
        ]),
    );
}

pub(super) fn fill_vnet_link(p: &mut Map<String, Value>, _ctx: &FillCtx<'_>) {
    p.entry("registrationEnabled").or_insert(json!(false));
    // `virtualNetworkLinkState` is set from the operation state when rendered.
}

pub(super) fn fill_record_set(p: &mut Map<String, Value>, ctx: &FillCtx<'_>) {
    // fqdn = "<record>.<zone>." ; the zone name is the segment before the record type.
    let mut parts = ctx.id.rsplit('/');
    let record = parts.next().unwrap_or_default();
    let _record_type = parts.next();
    let zone = parts.next().unwrap_or_default();
    let fqdn = if record == "@" {
        format!("{zone}.")
    } else {
        format!("{record}.{zone}.")
    };
    p.insert("fqdn".into(), json!(fqdn));
    p.entry("ttl").or_insert(json!(3600));
    p.entry("isAutoRegistered").or_insert(json!(false));
}

// ---- referential checks -------------------------------------------------------------------

/// The private DNS RP answers 400 `BadRequest` when the linked VNet does not exist
/// ("Virtual network resource not found for '…'", quoted in Azure/azure-cli#23351), not the
/// network RP's `InvalidResourceReference`.
pub(super) fn vnet_link_target_exists(store: &Store, put: &PutCheck<'_>) -> Result<()> {
    let target = put
        .properties
        .get("virtualNetwork")
        .and_then(|v| v.get("id"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if target.is_empty() {
        return Err(ArmError::bad_request(
            "BadRequest",
            "The virtual network reference of the virtual network link is missing.",
        ));
    }
    if store.get(&target.to_ascii_lowercase()).is_none() {
        return Err(ArmError::bad_request(
            "BadRequest",
            format!("Virtual network resource not found for '{target}'"),
        ));
    }
    Ok(())
}

/// One identity may not trust the same issuer+subject twice.
pub(super) fn fic_issuer_subject_unique(store: &Store, put: &PutCheck<'_>) -> Result<()> {
    let field = |p: &Map<String, Value>, k: &str| {
        p.get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let (issuer, subject) = (
        field(put.properties, "issuer"),
        field(put.properties, "subject"),
    );
    let clash = store.children_of(put.parent_key).any(|r| {
        r.id.to_ascii_lowercase() != put.key
            && r.rtype.last_segment() == "federatedIdentityCredentials"
            && field(&r.properties, "issuer") == issuer
            && field(&r.properties, "subject") == subject
    });
    if clash {
        return Err(ArmError::new(
            axum::http::StatusCode::CONFLICT,
            "Conflict",
            "Issuer and subject combination already exists for this Managed Identity.",
        ));
    }
    Ok(())
}
