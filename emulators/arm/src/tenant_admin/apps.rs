//! The Graph half of onboarding: the app registration, its service principal and its federated
//! identity credential, each found before it is made so onboarding can run again, and the
//! credentials' removal.

use reqwest::Method;
use serde_json::{Value, json};

use super::TenantAdmin;
use super::error::TenantAdminError;
use super::http::Service;

/// An app registration: object id and client id.
pub(super) struct App {
    pub id: String,
    pub app_id: String,
}

/// A federated identity credential: id and name.
pub(super) struct Credential {
    pub id: String,
    pub name: String,
}

/// Graph's longest credential name.
const MAX_CREDENTIAL_NAME: usize = 120;

/// A Graph `$filter` string literal: single quotes doubled (OData's escape).
fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// The items of a Graph collection.
fn items(body: &Value) -> &[Value] {
    body.get("value")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn field(v: &Value, name: &str) -> String {
    v.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The credential name onboarding gives: the subject with every character Graph refuses in a
/// name (anything but letters, digits, `-` and `_`) made `-`, starting with a letter or digit,
/// 3 to 120 characters (`hypersaga:tenant:acme` → `hypersaga-tenant-acme`).
pub(super) fn credential_name(subject: &str) -> String {
    let mapped: String = subject
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut name: String = mapped
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .chars()
        .take(MAX_CREDENTIAL_NAME)
        .collect();
    if name.len() < 3 {
        name = format!("hypersaga-{name}");
    }
    name
}

impl TenantAdmin {
    /// The app named `display_name` (`true`: adopted), or a new single-tenant one.
    pub(super) async fn find_or_register_app(
        &self,
        graph: &str,
        display_name: &str,
    ) -> Result<(App, bool), TenantAdminError> {
        let filter = format!("displayName eq {}", literal(display_name));
        let url = self.url("v1.0/applications", &[("$filter", &filter)])?;
        let found = self
            .call_polling(
                "listing apps",
                Service::Graph,
                graph,
                Method::GET,
                &url,
                None,
            )
            .await?;
        // Graph's filter ignores case; adopt only the app named exactly so.
        let named: Vec<&Value> = items(&found)
            .iter()
            .filter(|a| field(a, "displayName") == display_name)
            .collect();
        match named.as_slice() {
            [app] => {
                return Ok((
                    App {
                        id: field(app, "id"),
                        app_id: field(app, "appId"),
                    },
                    true,
                ));
            }
            [] => {}
            many => {
                return Err(TenantAdminError::AmbiguousApp {
                    display_name: display_name.to_owned(),
                    app_ids: many.iter().map(|a| field(a, "appId")).collect(),
                });
            }
        }
        // Not retried: a POST whose answer was lost may have made the app, and a second one
        // would make adoption ambiguous.
        let url = self.url("v1.0/applications", &[])?;
        let body = json!({
            "displayName": display_name,
            "signInAudience": "AzureADMyOrg",
            "description": "hypersaga provisions clusters in this directory's subscriptions",
        });
        let made = self
            .call(Service::Graph, graph, Method::POST, &url, Some(&body))
            .await?;
        let app = App {
            id: field(&made, "id"),
            app_id: field(&made, "appId"),
        };
        if app.id.is_empty() || app.app_id.is_empty() {
            return Err(TenantAdminError::Unexpected {
                url: url.to_string(),
                status: 201,
                reason: "the application has no id or appId".into(),
            });
        }
        Ok((app, false))
    }

    /// The object id of `app`'s service principal, made if there is none (retrying while the
    /// app replicates, as `az ad sp create` does).
    pub(super) async fn find_or_create_principal(
        &self,
        graph: &str,
        app: &App,
    ) -> Result<String, TenantAdminError> {
        let filter = format!("appId eq {}", literal(&app.app_id));
        let list = self.url("v1.0/servicePrincipals", &[("$filter", &filter)])?;
        let existing = || async {
            let found = self
                .call_polling(
                    "listing service principals",
                    Service::Graph,
                    graph,
                    Method::GET,
                    &list,
                    None,
                )
                .await?;
            Ok::<_, TenantAdminError>(items(&found).first().map(|p| field(p, "id")))
        };
        if let Some(id) = existing().await? {
            return Ok(id);
        }
        let url = self.url("v1.0/servicePrincipals", &[])?;
        let body = json!({ "appId": app.app_id });
        let made = self
            .call_polling(
                "making the app's service principal",
                Service::Graph,
                graph,
                Method::POST,
                &url,
                Some(&body),
            )
            .await;
        match made {
            Ok(p) => Ok(field(&p, "id")),
            // Made meanwhile (or by a POST whose answer was lost): take that one.
            Err(TenantAdminError::Graph { status: 409, .. }) => {
                existing()
                    .await?
                    .ok_or_else(|| TenantAdminError::Unexpected {
                        url: list.to_string(),
                        status: 200,
                        reason: "Graph answered 409 for the service principal but lists none"
                            .into(),
                    })
            }
            Err(e) => Err(e),
        }
    }

    /// The credential of `app` trusting exactly `issuer`, `subject` and `audience`, added if
    /// there is none.
    pub(super) async fn find_or_add_credential(
        &self,
        graph: &str,
        app: &App,
        issuer: &str,
        subject: &str,
        audience: &str,
    ) -> Result<Credential, TenantAdminError> {
        let path = format!("v1.0/applications/{}/federatedIdentityCredentials", app.id);
        let url = self.url(&path, &[])?;
        let listed = self
            .call_polling(
                "listing the app's federated credentials",
                Service::Graph,
                graph,
                Method::GET,
                &url,
                None,
            )
            .await?;
        let name = credential_name(subject);
        for c in items(&listed) {
            let audiences: Vec<&str> = c
                .get("audiences")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let same = field(c, "issuer") == issuer
                && field(c, "subject") == subject
                && audiences == [audience];
            if same {
                return Ok(Credential {
                    id: field(c, "id"),
                    name: field(c, "name"),
                });
            }
            if field(c, "name").eq_ignore_ascii_case(&name) {
                return Err(TenantAdminError::CredentialMismatch {
                    name,
                    issuer: field(c, "issuer"),
                    subject: field(c, "subject"),
                });
            }
        }
        let body = json!({
            "name": name,
            "issuer": issuer,
            "subject": subject,
            "audiences": [audience],
            "description": "hypersaga's workload identity for this tenant",
        });
        let made = self
            .call_polling(
                "adding the federated credential",
                Service::Graph,
                graph,
                Method::POST,
                &url,
                Some(&body),
            )
            .await?;
        Ok(Credential {
            id: field(&made, "id"),
            name: field(&made, "name"),
        })
    }

    /// Deletes every federated credential of the app `app_id`; answers how many.
    pub(super) async fn delete_credentials(
        &self,
        graph: &str,
        app_id: &str,
    ) -> Result<usize, TenantAdminError> {
        let path = format!("v1.0/applications(appId='{app_id}')/federatedIdentityCredentials");
        let url = self.url(&path, &[])?;
        // Not polled: an app that is not there (404) will not appear by waiting.
        let listed = self
            .call(Service::Graph, graph, Method::GET, &url, None)
            .await?;
        let mut deleted = 0;
        for c in items(&listed) {
            let id = field(c, "id");
            if uuid::Uuid::parse_str(&id).is_err() {
                return Err(TenantAdminError::Unexpected {
                    url: url.to_string(),
                    status: 200,
                    reason: format!("a credential's id '{id}' is not a GUID"),
                });
            }
            let one = self.url(&format!("{path}/{id}"), &[])?;
            match self
                .call(Service::Graph, graph, Method::DELETE, &one, None)
                .await
            {
                Ok(_) => deleted += 1,
                // Deleted meanwhile: the end is the same.
                Err(TenantAdminError::Graph { status: 404, .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_are_what_graph_accepts() {
        assert_eq!(
            credential_name("hypersaga:tenant:acme"),
            "hypersaga-tenant-acme"
        );
        assert_eq!(credential_name("::a"), "hypersaga-a");
        assert_eq!(credential_name(&"x".repeat(200)).len(), 120);
        assert_eq!(literal("it's"), "'it''s'");
    }
}
