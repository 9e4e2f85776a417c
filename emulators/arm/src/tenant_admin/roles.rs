//! The ARM half of onboarding: the role assignments of the app's principal on the
//! subscription, found before they are made so onboarding can run again.

use reqwest::Method;
use serde_json::{Value, json};
use url::Url;

use super::TenantAdmin;
use super::error::TenantAdminError;
use super::http::Service;

/// The role assignments api-version the portal uses.
const AUTHZ_API: &str = "2022-04-01";

impl TenantAdmin {
    /// Grants `role` on `/subscriptions/{sub}` to `principal`; answers the assignment's id
    /// (an existing one when the principal holds the role there already).
    pub(super) async fn grant(
        &self,
        arm: &str,
        sub: &str,
        role: &str,
        principal: &str,
    ) -> Result<String, TenantAdminError> {
        let scope = format!("/subscriptions/{sub}");
        let role_id = format!("{scope}/providers/Microsoft.Authorization/roleDefinitions/{role}");
        if let Some(id) = self
            .existing_assignment(arm, &scope, &role_id, principal)
            .await?
        {
            return Ok(id);
        }
        // A name derived from the grant, so a retried PUT is the same assignment (200).
        let name = uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_OID,
            format!("{scope}|{role}|{principal}").as_bytes(),
        );
        let path = format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}");
        let url = self.url(&path, &[("api-version", AUTHZ_API)])?;
        // `principalType` makes ARM skip the directory lookup a new principal fails
        // (`PrincipalNotFound`), as Azure recommends; that refusal is still waited out.
        let body = json!({"properties": {
            "roleDefinitionId": role_id,
            "principalId": principal,
            "principalType": "ServicePrincipal",
            "description": "hypersaga provisions clusters in this subscription",
        }});
        let made = self
            .call_polling(
                "assigning a role",
                Service::Arm,
                arm,
                Method::PUT,
                &url,
                Some(&body),
            )
            .await?;
        Ok(made
            .get("id")
            .and_then(Value::as_str)
            .map_or(path, str::to_owned))
    }

    /// The id of an assignment of `role_id` to `principal` exactly at `scope`, following
    /// `nextLink` on the same host only (it carries the token).
    async fn existing_assignment(
        &self,
        arm: &str,
        scope: &str,
        role_id: &str,
        principal: &str,
    ) -> Result<Option<String>, TenantAdminError> {
        let filter = format!("principalId eq '{principal}'");
        let mut next = Some(self.url(
            &format!("{scope}/providers/Microsoft.Authorization/roleAssignments"),
            &[("api-version", AUTHZ_API), ("$filter", &filter)],
        )?);
        while let Some(url) = next.take() {
            let page = self
                .call_polling(
                    "listing role assignments",
                    Service::Arm,
                    arm,
                    Method::GET,
                    &url,
                    None,
                )
                .await?;
            let found = page
                .get("value")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|a| {
                    let p = |k: &str| {
                        a.pointer(&format!("/properties/{k}"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    };
                    p("roleDefinitionId").eq_ignore_ascii_case(role_id)
                        && p("scope").eq_ignore_ascii_case(scope)
                        && p("principalId").eq_ignore_ascii_case(principal)
                });
            if let Some(id) = found.and_then(|a| a.get("id")).and_then(Value::as_str) {
                return Ok(Some(id.to_owned()));
            }
            next = page
                .get("nextLink")
                .and_then(Value::as_str)
                .and_then(|n| Url::parse(n).ok())
                .filter(|n| n.origin() == self.base.origin());
        }
        Ok(None)
    }
}
