//! The body of a role-assignment PUT (`RoleAssignmentCreateParameters`), validated as the
//! Authorization resource provider validates it before looking at anything else.

use axum::body::Bytes;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::refusals::{invalid_content, invalid_principal_id, invalid_role_definition_id};
use crate::arm::body::parse_body;
use crate::errors::Result;

/// `principalType` values the 2022-04-01 spec lists, plus `Device` (later versions).
const PRINCIPAL_TYPES: &[&str] = &[
    "User",
    "Group",
    "ServicePrincipal",
    "ForeignGroup",
    "Device",
];

/// The role definition path every form of `roleDefinitionId` ends with.
const ROLE_DEFINITIONS: &str = "/providers/microsoft.authorization/roledefinitions/";

/// A validated `PUT …/roleAssignments/{name}` body.
#[derive(Debug)]
pub(super) struct AssignmentRequest {
    pub role: Uuid,
    pub principal: Uuid,
    /// Canonical casing, if sent.
    pub principal_type: Option<&'static str>,
    pub description: Option<String>,
    pub condition: Option<String>,
    pub condition_version: Option<String>,
    pub delegated_managed_identity_resource_id: Option<String>,
}

fn string(props: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match props.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid_content(&format!(
            "Unexpected value for property '{key}': a string is required"
        ))),
    }
}

fn required(props: &Map<String, Value>, key: &str) -> Result<String> {
    string(props, key)?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid_content(&format!("Required property '{key}' not found in JSON")))
}

/// `[/subscriptions/{s}]/providers/Microsoft.Authorization/roleDefinitions/{guid}` → the GUID;
/// anything else is `InvalidRoleDefinitionId`, quoting the part after the last slash.
fn role_guid(id: &str) -> Result<Uuid> {
    let last = id.rsplit('/').next().unwrap_or(id);
    let refuse = || invalid_role_definition_id(last);
    let Some((prefix, guid)) = id
        .to_ascii_lowercase()
        .rsplit_once(ROLE_DEFINITIONS)
        .map(|(p, g)| (p.to_owned(), g.to_owned()))
    else {
        return Err(refuse());
    };
    let scope_ok = prefix.is_empty()
        || prefix
            .strip_prefix("/subscriptions/")
            .is_some_and(|s| !s.is_empty() && !s.contains('/'));
    if !scope_ok {
        return Err(refuse());
    }
    Uuid::parse_str(&guid).map_err(|_| refuse())
}

/// Reads and validates the body.
pub(super) fn parse(body: &Bytes) -> Result<AssignmentRequest> {
    let mut body = parse_body(body)?;
    let props = match body.remove("properties") {
        Some(Value::Object(p)) => p,
        None | Some(Value::Null) => {
            return Err(invalid_content(
                "Required property 'properties' not found in JSON",
            ));
        }
        Some(_) => return Err(invalid_content("'properties' must be an object")),
    };
    let role = role_guid(&required(&props, "roleDefinitionId")?)?;
    let principal =
        Uuid::parse_str(&required(&props, "principalId")?).map_err(|_| invalid_principal_id())?;
    let principal_type = match string(&props, "principalType")? {
        None => None,
        Some(t) => Some(
            PRINCIPAL_TYPES
                .iter()
                .copied()
                .find(|p| p.eq_ignore_ascii_case(&t))
                .ok_or_else(|| {
                    invalid_content(&format!(
                        "Error converting value \"{t}\" to type 'PrincipalType'"
                    ))
                })?,
        ),
    };
    let condition = string(&props, "condition")?;
    // ARM fills the only condition language there is when a condition comes without one.
    let condition_version = string(&props, "conditionVersion")?
        .or_else(|| condition.as_ref().map(|_| "2.0".to_owned()));
    Ok(AssignmentRequest {
        role,
        principal,
        principal_type,
        description: string(&props, "description")?,
        condition,
        condition_version,
        delegated_managed_identity_resource_id: string(
            &props,
            "delegatedManagedIdentityResourceId",
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_definition_ids_in_every_form_arm_accepts() {
        let guid = "b24988ac-6180-42a0-ab88-20f7382dd24c";
        for id in [
            format!("/subscriptions/s1/providers/Microsoft.Authorization/roleDefinitions/{guid}"),
            format!("/providers/Microsoft.Authorization/roleDefinitions/{guid}"),
            format!("/SUBSCRIPTIONS/s1/PROVIDERS/microsoft.authorization/ROLEDEFINITIONS/{guid}"),
        ] {
            assert_eq!(role_guid(&id).ok(), Uuid::parse_str(guid).ok(), "{id}");
        }
        for bad in [
            "Contributor",
            "/subscriptions/s1/providers/Microsoft.Authorization/roleDefinitions/not-a-guid",
            "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c",
        ] {
            let err = role_guid(bad).expect_err(bad);
            assert_eq!(err.code, "InvalidRoleDefinitionId");
        }
    }
}
