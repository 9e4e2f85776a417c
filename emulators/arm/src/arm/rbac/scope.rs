//! The scope of a role assignment must exist, and is answered as ARM answers any request into
//! a missing resource group or resource: the gateway's `404 ResourceGroupNotFound`, the
//! resource's `404 ResourceNotFound`, and `409 ResourceGroupBeingDeleted` for writes into a
//! group on its way out.

use crate::arm::lookup::{check_rg, embedded, not_found, render_embedded};
use crate::errors::{ArmError, Result};
use crate::path::{AuthzRef, AuthzScope, ResourceRef};
use crate::store::Store;
use crate::types::{Storage, TYPES};

/// The scope's canonical id (the casing it was created with), or ARM's refusal.
pub(super) fn resolve(store: &Store, r: &AuthzRef, write: bool) -> Result<String> {
    let group = |rg: &str| ResourceRef {
        sub: r.sub.clone(),
        rg: rg.to_owned(),
        rtype: &TYPES[0],
        names: Vec::new(),
    };
    match &r.scope {
        AuthzScope::Subscription => Ok(format!("/subscriptions/{}", r.sub)),
        AuthzScope::ResourceGroup { rg } => Ok(check_rg(store, &group(rg), write)?.id.clone()),
        AuthzScope::Resource {
            rg,
            resource,
            type_and_name,
        } => {
            check_rg(store, &group(rg), write)?;
            let missing = || ArmError::resource_not_found(type_and_name, rg);
            let Some(res) = resource else {
                return Err(missing());
            };
            match res.rtype.storage {
                Storage::Standalone => store
                    .get(&res.key())
                    .map(|s| s.id.clone())
                    .ok_or_else(|| not_found(res)),
                Storage::Embedded { array } => {
                    let (parent, idx) =
                        embedded(store, res, array).ok_or_else(|| not_found(res))?;
                    render_embedded(store, parent, array, idx)
                        .get("id")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                        .ok_or_else(missing)
                }
            }
        }
    }
}
