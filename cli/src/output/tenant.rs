//! Tenants as the CLI prints them (`hypersaga tenant …`): a table of tenants, one tenant in
//! detail, the credentials an onboarding or a rotation answers once, the onboarding
//! instructions the tenant follows in its own Entra directory, and the JSON documents behind
//! `-o json|yaml`.

use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

use super::{Table, enum_name, time, time_text};

/// `tenant/<id>`, as kubectl names what it printed.
pub fn tenant_name(id: &str) -> String {
    format!("tenant/{id}")
}

/// `ACTIVE` → `active`, `SUSPENDED` → `suspended`.
pub fn tenant_state(s: i32) -> String {
    pb::tenant::State::try_from(s)
        .map(|s| enum_name(s.as_str_name(), "STATE_"))
        .unwrap_or_else(|_| s.to_string())
}

fn is_suspended(t: &pb::Tenant) -> bool {
    t.state == pb::tenant::State::Suspended as i32
}

/// A tenant as a document: the API's `Tenant`, its state as a word. Never a credential: the
/// API answers only how many are valid.
pub fn tenant_json(t: &pb::Tenant) -> Value {
    let azure = t.azure.clone().unwrap_or_default();
    json!({
        "id": t.id,
        "state": tenant_state(t.state),
        "source": t.source,
        "azure": {
            "tenant_id": azure.tenant_id,
            "subscription_id": azure.subscription_id,
            "client_id": azure.client_id,
        },
        "suspended_reason": t.suspended_reason,
        "suspended_by": t.suspended_by,
        "suspended_at": time(&t.suspended_at),
        "api_tokens": t.api_tokens,
        "audit_credentials": t.audit_credentials,
        "audit_user": t.audit_user,
        "created_at": time(&t.created_at),
        "created_by": t.created_by,
        "updated_at": time(&t.updated_at),
        "updated_by": t.updated_by,
        "etag": t.etag,
    })
}

/// A table of tenants: ID, STATE, SOURCE, SUBSCRIPTION, CLIENT ID, CREATED BY and, last, why
/// a suspended one is; `wide` adds its Azure tenant, how many API tokens and audit
/// credentials are valid, and when it was created and last changed, by whom.
pub fn tenants_table(tenants: &[pb::Tenant], wide: bool) -> Table {
    let mut headers = vec![
        "ID",
        "STATE",
        "SOURCE",
        "SUBSCRIPTION",
        "CLIENT ID",
        "CREATED BY",
    ];
    if wide {
        headers.extend([
            "AZURE TENANT",
            "API TOKENS",
            "AUDIT CREDENTIALS",
            "CREATED",
            "UPDATED",
            "UPDATED BY",
        ]);
    }
    headers.push("REASON");
    let mut table = Table::new(headers);
    for t in tenants {
        let azure = t.azure.clone().unwrap_or_default();
        let mut row = vec![
            t.id.clone(),
            tenant_state(t.state),
            t.source.clone(),
            azure.subscription_id.clone(),
            azure.client_id.clone(),
            t.created_by.clone(),
        ];
        if wide {
            let when = |ts: &Option<prost_types::Timestamp>| {
                if ts.is_some() {
                    time_text(ts)
                } else {
                    String::new()
                }
            };
            row.extend([
                azure.tenant_id.clone(),
                t.api_tokens.to_string(),
                t.audit_credentials.to_string(),
                when(&t.created_at),
                when(&t.updated_at),
                t.updated_by.clone(),
            ]);
        }
        row.push(if is_suspended(t) {
            t.suspended_reason.clone()
        } else {
            String::new()
        });
        table.row(row);
    }
    table
}

/// `1 API token`, `2 API tokens`.
fn count(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One tenant for people (`tenant get`): where its clusters are built, its state (a
/// suspension's reason, who and since when), its credentials counted, its history and etag.
pub fn tenant_text(t: &pb::Tenant) -> String {
    let azure = t.azure.clone().unwrap_or_default();
    let source = match t.source.as_str() {
        "configuration" => "configuration: declared in the configuration file, changed only there",
        other => other,
    };
    let mut out = format!("Tenant:        {}  ({source})\n", t.id);
    if is_suspended(t) {
        out.push_str(&format!(
            "State:         suspended since {} by {}\n",
            time_text(&t.suspended_at),
            t.suspended_by
        ));
        out.push_str(&format!("Reason:        {}\n", t.suspended_reason));
    } else {
        out.push_str(&format!("State:         {}\n", tenant_state(t.state)));
    }
    out.push_str(&format!("Azure tenant:  {}\n", azure.tenant_id));
    out.push_str(&format!("Subscription:  {}\n", azure.subscription_id));
    out.push_str(&format!("Client ID:     {}\n", azure.client_id));
    out.push_str(&format!(
        "Credentials:   {}, {} (audit user {})\n",
        count(t.api_tokens, "API token", "API tokens"),
        count(t.audit_credentials, "audit credential", "audit credentials"),
        t.audit_user
    ));
    if t.created_at.is_some() {
        out.push_str(&format!(
            "Created:       {} by {}\n",
            time_text(&t.created_at),
            t.created_by
        ));
    }
    if t.updated_at.is_some() {
        out.push_str(&format!(
            "Updated:       {} by {}\n",
            time_text(&t.updated_at),
            t.updated_by
        ));
    }
    if !t.etag.is_empty() {
        out.push_str(&format!("Etag:          {}\n", t.etag));
    }
    out
}

/// The credentials an onboarding or a rotation issued (empty strings: none issued), said to
/// be shown only now; empty if none was issued.
pub fn credentials_text(t: &pb::Tenant, api_token: &str, audit_password: &str) -> String {
    if api_token.is_empty() && audit_password.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Credentials, shown only now: hypersaga keeps only their digests. Store them safely and \
         hand them to the tenant.\n",
    );
    if !api_token.is_empty() {
        out.push_str(&format!("  API token:       {api_token}\n"));
    }
    if !audit_password.is_empty() {
        out.push_str(&format!("  Audit user:      {}\n", t.audit_user));
        out.push_str(&format!("  Audit password:  {audit_password}\n"));
    }
    out.push_str(&format!(
        "A lost one is replaced, not shown again: hypersaga tenant update {} --issue-api-token \
         (or --issue-audit-credential), then --revoke-older.\n",
        t.id
    ));
    out
}

/// The onboarding instructions as a document, in the API's names.
pub fn onboarding_json(o: &pb::Onboarding) -> Value {
    json!({
        "issuer": o.issuer,
        "subject": o.subject,
        "audience": o.audience,
        "roles": o.roles.iter().map(|r| json!({
            "role": r.role,
            "role_definition_id": r.role_definition_id,
            "scope": r.scope,
        })).collect::<Vec<_>>(),
        "steps": o.steps,
    })
}

/// What tenant `t` must set up in its own Entra directory for hypersaga to build in its
/// subscription: the federated identity credential, the roles, and the same as steps.
pub fn onboarding_text(o: &pb::Onboarding, t: &pb::Tenant) -> String {
    let azure = t.azure.clone().unwrap_or_default();
    let mut out = format!(
        "Onboarding: what tenant {} must set up in its Entra directory {} for hypersaga to \
         build in subscription {} (no secret is exchanged):\n",
        t.id, azure.tenant_id, azure.subscription_id
    );
    out.push_str(&format!(
        "  A federated identity credential on application {} (compared byte for byte):\n",
        azure.client_id
    ));
    out.push_str(&format!("    Issuer:    {}\n", o.issuer));
    out.push_str(&format!("    Subject:   {}\n", o.subject));
    out.push_str(&format!("    Audience:  {}\n", o.audience));
    if !o.roles.is_empty() {
        out.push_str("  Roles for the application's service principal:\n");
        for r in &o.roles {
            out.push_str(&format!(
                "    {} ({}) at scope {}\n",
                r.role, r.role_definition_id, r.scope
            ));
        }
    }
    if !o.steps.is_empty() {
        out.push_str("  Steps:\n");
        for (i, step) in o.steps.iter().enumerate() {
            out.push_str(&format!("    {}. {step}\n", i + 1));
        }
    }
    out
}

/// A credential as a document: absent (`null`) when none was issued.
fn secret(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        Value::from(s)
    }
}

/// `tenant add -o json|yaml`: the whole answer, credentials included (scripts store them).
pub fn added_json(r: &pb::AddTenantResponse) -> Value {
    json!({
        "tenant": r.tenant.as_ref().map(tenant_json),
        "api_token": secret(&r.api_token),
        "audit_password": secret(&r.audit_password),
        "onboarding": r.onboarding.as_ref().map(onboarding_json),
    })
}

/// `tenant update -o json|yaml`: the whole answer; a credential not issued and onboarding
/// the Azure application did not need are `null`.
pub fn updated_json(r: &pb::UpdateTenantResponse) -> Value {
    json!({
        "tenant": r.tenant.as_ref().map(tenant_json),
        "api_token": secret(&r.api_token),
        "audit_password": secret(&r.audit_password),
        "onboarding": r.onboarding.as_ref().map(onboarding_json),
    })
}

/// `tenant add` for people: the tenant, its credentials (once), its onboarding.
pub fn added_text(r: &pb::AddTenantResponse) -> String {
    let t = r.tenant.clone().unwrap_or_default();
    let mut out = format!("Tenant {} added.\n\n{}", t.id, tenant_text(&t));
    let creds = credentials_text(&t, &r.api_token, &r.audit_password);
    if !creds.is_empty() {
        out.push('\n');
        out.push_str(&creds);
    }
    if let Some(o) = &r.onboarding {
        out.push('\n');
        out.push_str(&onboarding_text(o, &t));
    }
    out
}

/// `tenant update` for people: what changed (`changes`, as the command asked them), the
/// tenant, new credentials (once) and, when its Azure application changed, its onboarding.
pub fn updated_text(r: &pb::UpdateTenantResponse, changes: &[String]) -> String {
    let t = r.tenant.clone().unwrap_or_default();
    let mut out = format!(
        "Tenant {} updated: {}.\n\n{}",
        t.id,
        changes.join(", "),
        tenant_text(&t)
    );
    let creds = credentials_text(&t, &r.api_token, &r.audit_password);
    if !creds.is_empty() {
        out.push('\n');
        out.push_str(&creds);
    }
    if let Some(o) = &r.onboarding {
        out.push('\n');
        out.push_str(&onboarding_text(o, &t));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    pub(crate) fn tenant(id: &str) -> pb::Tenant {
        pb::Tenant {
            id: id.into(),
            azure: Some(pb::TenantAzure {
                tenant_id: "11111111-1111-1111-1111-111111111111".into(),
                subscription_id: "22222222-2222-2222-2222-222222222222".into(),
                client_id: "33333333-3333-3333-3333-333333333333".into(),
            }),
            state: pb::tenant::State::Active as i32,
            source: "onboarded".into(),
            api_tokens: 1,
            audit_credentials: 2,
            created_at: ts(1_800_000_000),
            created_by: "admin:ops".into(),
            updated_at: ts(1_800_000_060),
            updated_by: "admin:ops".into(),
            etag: "7".into(),
            audit_user: format!("audit-{id}"),
            ..Default::default()
        }
    }

    fn suspended(id: &str) -> pb::Tenant {
        pb::Tenant {
            state: pb::tenant::State::Suspended as i32,
            suspended_reason: "unpaid".into(),
            suspended_by: "admin:billing".into(),
            suspended_at: ts(1_800_000_120),
            ..tenant(id)
        }
    }

    fn configured(id: &str) -> pb::Tenant {
        pb::Tenant {
            source: "configuration".into(),
            created_at: None,
            created_by: String::new(),
            updated_at: None,
            updated_by: String::new(),
            etag: String::new(),
            ..tenant(id)
        }
    }

    fn onboarding() -> pb::Onboarding {
        pb::Onboarding {
            issuer: "https://issuer.example/hypersaga".into(),
            subject: "hypersaga:tenant:acme".into(),
            audience: "api://AzureADTokenExchange".into(),
            roles: vec![pb::RoleGrant {
                role: "Contributor".into(),
                role_definition_id: "b24988ac-6180-42a0-ab88-20f7382dd24c".into(),
                scope: "/subscriptions/22222222-2222-2222-2222-222222222222".into(),
            }],
            steps: vec!["Add the credential.".into(), "Assign the role.".into()],
        }
    }

    #[test]
    fn the_tenant_table_shows_state_source_subscription_client_and_creator_in_line() {
        let tenants = [tenant("acme"), suspended("globex"), configured("initech")];
        let shown = tenants_table(&tenants, false).render(true);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 4, "{shown}");
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            [
                "ID",
                "STATE",
                "SOURCE",
                "SUBSCRIPTION",
                "CLIENT",
                "ID",
                "CREATED",
                "BY",
                "REASON"
            ],
            "{shown}"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            [
                "acme",
                "active",
                "onboarded",
                "22222222-2222-2222-2222-222222222222",
                "33333333-3333-3333-3333-333333333333",
                "admin:ops"
            ],
            "{shown}"
        );
        let reason_at = lines[0].find("REASON").unwrap();
        assert_eq!(lines[2].find("unpaid"), Some(reason_at), "{shown}");
        assert!(lines[3].contains("configuration"), "{shown}");
        let wide = tenants_table(&tenants, true).render(false);
        for expected in [
            "11111111-1111-1111-1111-111111111111",
            "2027-01-15T08:00:00Z",
            "2027-01-15T08:01:00Z",
        ] {
            assert!(wide.contains(expected), "missing {expected:?} in:\n{wide}");
        }
        assert_eq!(tenant_name("acme"), "tenant/acme");
    }

    #[test]
    fn one_tenant_in_detail_says_why_who_and_since_when_it_is_suspended() {
        let text = tenant_text(&suspended("globex"));
        for expected in [
            "Tenant:        globex  (onboarded)",
            "State:         suspended since 2027-01-15T08:02:00Z by admin:billing",
            "Reason:        unpaid",
            "Azure tenant:  11111111-1111-1111-1111-111111111111",
            "Subscription:  22222222-2222-2222-2222-222222222222",
            "Client ID:     33333333-3333-3333-3333-333333333333",
            "Credentials:   1 API token, 2 audit credentials (audit user audit-globex)",
            "Created:       2027-01-15T08:00:00Z by admin:ops",
            "Updated:       2027-01-15T08:01:00Z by admin:ops",
            "Etag:          7",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        let active = tenant_text(&tenant("acme"));
        assert!(active.contains("State:         active\n"), "{active}");
        assert!(!active.contains("Reason:"), "{active}");
        let conf = tenant_text(&configured("initech"));
        assert!(conf.contains("changed only there"), "{conf}");
        assert!(
            !conf.contains("Created:") && !conf.contains("Etag:"),
            "{conf}"
        );
    }

    #[test]
    fn a_tenant_as_a_document_has_every_field_and_no_credential() {
        let doc = tenant_json(&suspended("globex"));
        assert_eq!(doc["id"], "globex");
        assert_eq!(doc["state"], "suspended");
        assert_eq!(doc["source"], "onboarded");
        assert_eq!(
            doc["azure"]["client_id"],
            "33333333-3333-3333-3333-333333333333"
        );
        assert_eq!(doc["suspended_reason"], "unpaid");
        assert_eq!(doc["suspended_by"], "admin:billing");
        assert_eq!(doc["suspended_at"], "2027-01-15T08:02:00Z");
        assert_eq!(doc["api_tokens"], 1);
        assert_eq!(doc["audit_credentials"], 2);
        assert_eq!(doc["etag"], "7");
        let doc = tenant_json(&configured("initech"));
        assert_eq!(doc["created_at"], Value::Null);
        assert_eq!(doc["suspended_at"], Value::Null);
        assert_eq!(tenant_state(pb::tenant::State::Active as i32), "active");
    }

    #[test]
    fn an_onboarding_prints_the_credentials_once_then_what_the_tenant_must_set_up() {
        let r = pb::AddTenantResponse {
            tenant: Some(tenant("acme")),
            api_token: "hs_acme_secret".into(),
            audit_password: "audit_acme_secret".into(),
            onboarding: Some(onboarding()),
        };
        let text = added_text(&r);
        for expected in [
            "Tenant acme added.",
            "Tenant:        acme  (onboarded)",
            "shown only now",
            "  API token:       hs_acme_secret",
            "  Audit user:      audit-acme",
            "  Audit password:  audit_acme_secret",
            "in its Entra directory 11111111-1111-1111-1111-111111111111",
            "subscription 22222222-2222-2222-2222-222222222222",
            "on application 33333333-3333-3333-3333-333333333333",
            "    Issuer:    https://issuer.example/hypersaga",
            "    Subject:   hypersaga:tenant:acme",
            "    Audience:  api://AzureADTokenExchange",
            "    Contributor (b24988ac-6180-42a0-ab88-20f7382dd24c) at scope /subscriptions/22222222-2222-2222-2222-222222222222",
            "    1. Add the credential.",
            "    2. Assign the role.",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        // The credentials come before the onboarding, said once.
        assert!(text.find("API token:") < text.find("Onboarding:"), "{text}");
        assert_eq!(text.matches("hs_acme_secret").count(), 1, "{text}");

        let doc = added_json(&r);
        assert_eq!(doc["api_token"], "hs_acme_secret");
        assert_eq!(doc["audit_password"], "audit_acme_secret");
        assert_eq!(doc["tenant"]["audit_user"], "audit-acme");
        assert_eq!(doc["onboarding"]["subject"], "hypersaga:tenant:acme");
        assert_eq!(doc["onboarding"]["roles"][0]["role"], "Contributor");
        assert_eq!(doc["onboarding"]["steps"][1], "Assign the role.");
    }

    #[test]
    fn an_update_shows_only_what_it_issued_and_onboarding_only_for_a_new_application() {
        let rotated = pb::UpdateTenantResponse {
            tenant: Some(tenant("acme")),
            api_token: "hs_acme_new".into(),
            ..Default::default()
        };
        let text = updated_text(&rotated, &["an API token issued".into()]);
        assert!(
            text.starts_with("Tenant acme updated: an API token issued.\n"),
            "{text}"
        );
        assert!(text.contains("  API token:       hs_acme_new"), "{text}");
        assert!(!text.contains("Audit password"), "{text}");
        assert!(!text.contains("Onboarding:"), "{text}");
        let doc = updated_json(&rotated);
        assert_eq!(doc["api_token"], "hs_acme_new");
        assert_eq!(doc["audit_password"], Value::Null);
        assert_eq!(doc["onboarding"], Value::Null);

        let moved = pb::UpdateTenantResponse {
            tenant: Some(tenant("acme")),
            onboarding: Some(onboarding()),
            ..Default::default()
        };
        let text = updated_text(&moved, &["azure.client_id".into()]);
        assert!(!text.contains("shown only now"), "{text}");
        assert!(text.contains("Subject:   hypersaga:tenant:acme"), "{text}");
    }
}
