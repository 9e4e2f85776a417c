//! An admin's session with `hypersaga tenant` against a running system: onboarding a tenant,
//! its token working, suspending and resuming it, removing it (and not removing one that has
//! a cluster). The admin token is the one
//! `hypersaga dev` wrote into its endpoints file.

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// How long a change of a tenant may take to be served by the gateway (it follows the
/// tenants' bucket).
const SERVED_WITHIN: Duration = Duration::from_secs(30);

/// Runs `hypersaga args` until what it answered satisfies `done`, as an admin retries while a
/// change reaches the gateway; panics with the last answer after [`SERVED_WITHIN`].
async fn until(
    system: &System,
    args: &[&str],
    what: &str,
    done: impl Fn(&Output) -> bool,
) -> Output {
    let deadline = Instant::now() + SERVED_WITHIN;
    loop {
        let out = hypersaga(system, args);
        if done(&out) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {} s; `hypersaga {}` last answered (exit {:?}):\n{}",
            SERVED_WITHIN.as_secs(),
            args.join(" "),
            out.status.code(),
            text(&out)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The tenant `id` in `tenant list -o json`'s answer, if listed.
fn listed(out: &Output, id: &str) -> Option<Value> {
    let all: Value = serde_json::from_slice(&out.stdout).ok()?;
    all.as_array()?.iter().find(|t| t["id"] == id).cloned()
}

#[tokio::test]
async fn an_admin_onboards_suspends_resumes_and_removes_a_tenant() {
    let system = System::start().await;
    let admin_token = system
        .endpoints
        .admin_token
        .clone()
        .expect("hypersaga dev writes an admin token into its endpoints file");
    let id = format!("cli-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let guid = || uuid::Uuid::new_v4().to_string();
    let (directory, subscription, app) = (guid(), guid(), guid());
    let mut everything_shown = String::new();

    // Onboarding: the tenant, its credentials shown once, what it must set up in Azure.
    let out = hypersaga(
        &system,
        &[
            "tenant",
            "add",
            &id,
            "--azure-tenant-id",
            &directory,
            "--subscription-id",
            &subscription,
            "--client-id",
            &app,
        ],
    );
    let shown = text(&out);
    everything_shown.push_str(&shown);
    assert!(out.status.success(), "{shown}");
    for expected in [
        format!("Tenant {id} added."),
        "shown only now".to_owned(),
        "API token:".to_owned(),
        "Audit user:".to_owned(),
        "Audit password:".to_owned(),
        format!("on application {app}"),
        "Issuer:".to_owned(),
        format!("Subject:   hypersaga:tenant:{id}"),
        "Audience:".to_owned(),
        format!(
            "Contributor (b24988ac-6180-42a0-ab88-20f7382dd24c) at scope /subscriptions/{subscription}"
        ),
        "Steps:".to_owned(),
    ] {
        assert!(
            shown.contains(&expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    let token = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("API token:"))
        .map(str::trim)
        .expect("the API token is printed")
        .to_owned();
    assert!(!token.is_empty(), "{shown}");

    // The admin finds it in the list, onboarded by an admin, one API token valid.
    let out = until(
        &system,
        &["tenant", "list", "-o", "json"],
        "the new tenant listed",
        |o| o.status.success() && listed(o, &id).is_some(),
    )
    .await;
    everything_shown.push_str(&text(&out));
    let tenant = listed(&out, &id).expect("listed");
    assert_eq!(tenant["state"], "active", "{tenant}");
    assert_eq!(tenant["source"], "onboarded", "{tenant}");
    assert_eq!(tenant["azure"]["subscription_id"], subscription, "{tenant}");
    assert_eq!(tenant["api_tokens"], 1, "{tenant}");
    assert!(
        tenant["created_by"]
            .as_str()
            .is_some_and(|by| by.starts_with("admin:")),
        "{tenant}"
    );
    assert!(
        !text(&out).contains(&token),
        "a listed tenant shows no credential"
    );

    // The tenant's token calls the cluster API: it has no clusters yet.
    let out = until(
        &system,
        &["cluster", "list", "-o", "json", "--token", &token],
        "the new tenant's token served",
        |o| o.status.success(),
    )
    .await;
    let clusters: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(clusters, serde_json::json!([]), "{}", text(&out));

    // A tenant's token is no admin's.
    let out = hypersaga(&system, &["tenant", "list", "--admin-token", &token]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(text(&out).contains("PermissionDenied"), "{}", text(&out));

    // Suspended: its calls are refused, naming the suspension.
    let out = hypersaga(&system, &["tenant", "suspend", &id, "--reason", "unpaid"]);
    everything_shown.push_str(&text(&out));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("Tenant {id} is suspended")),
        "{}",
        text(&out)
    );
    let out = until(
        &system,
        &["cluster", "list", "--token", &token],
        "the suspended tenant refused",
        |o| o.status.code() == Some(5),
    )
    .await;
    let refused = text(&out);
    for expected in [
        "PermissionDenied".to_owned(),
        format!("tenant {id} is suspended"),
        "unpaid".to_owned(),
        "[TenantSuspended]".to_owned(),
    ] {
        assert!(
            refused.contains(&expected),
            "missing {expected:?} in:\n{refused}"
        );
    }
    let out = hypersaga(&system, &["tenant", "get", &id]);
    let shown = text(&out);
    everything_shown.push_str(&shown);
    assert!(out.status.success(), "{shown}");
    for expected in [
        "State:         suspended since",
        "by admin:",
        "Reason:        unpaid",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }

    // Resumed: served again.
    let out = hypersaga(&system, &["tenant", "resume", &id, "-o", "json"]);
    everything_shown.push_str(&text(&out));
    assert!(out.status.success(), "{}", text(&out));
    let resumed: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(resumed["state"], "active", "{resumed}");
    until(
        &system,
        &["cluster", "list", "--token", &token],
        "the resumed tenant served",
        |o| o.status.success(),
    )
    .await;

    // Removed: its token is unknown, and the tenant is gone.
    let out = hypersaga(&system, &["tenant", "remove", &id]);
    everything_shown.push_str(&text(&out));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("Tenant {id} is removed")),
        "{}",
        text(&out)
    );
    let out = until(
        &system,
        &["cluster", "list", "--token", &token],
        "the removed tenant's token refused",
        |o| o.status.code() == Some(5) && text(o).contains("Unauthenticated"),
    )
    .await;
    assert!(text(&out).contains("unknown token"), "{}", text(&out));
    until(
        &system,
        &["tenant", "get", &id],
        "the removed tenant not found",
        |o| o.status.code() == Some(3),
    )
    .await;

    // A tenant with a cluster is not removed: the refusal names it.
    let other = format!("{id}-b");
    let out = hypersaga(
        &system,
        &[
            "tenant",
            "add",
            &other,
            "--azure-tenant-id",
            &guid(),
            "--subscription-id",
            &guid(),
            "--client-id",
            &guid(),
            "-o",
            "json",
        ],
    );
    everything_shown.push_str(&text(&out));
    assert!(out.status.success(), "{}", text(&out));
    let added: Value = serde_json::from_slice(&out.stdout).expect("json");
    let other_token = added["api_token"].as_str().expect("api_token").to_owned();
    assert!(added["audit_password"].is_string(), "{added}");
    assert_eq!(added["tenant"]["id"], other.as_str(), "{added}");
    assert_eq!(
        added["onboarding"]["subject"],
        format!("hypersaga:tenant:{other}"),
        "{added}"
    );
    until(
        &system,
        &["cluster", "create", "demo", "--token", &other_token],
        "a cluster created with the other tenant's token",
        |o| o.status.success(),
    )
    .await;
    let out = hypersaga(&system, &["tenant", "remove", &other]);
    let shown = text(&out);
    everything_shown.push_str(&shown);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    for expected in [
        format!("tenant {other} still has 1 cluster(s) (demo); delete them first"),
        "[TenantHasClusters]".to_owned(),
    ] {
        assert!(
            shown.contains(&expected),
            "missing {expected:?} in:\n{shown}"
        );
    }

    assert!(
        !everything_shown.contains(&admin_token),
        "the admin token is never printed:\n{everything_shown}"
    );
}
