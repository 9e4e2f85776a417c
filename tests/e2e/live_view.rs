//! The live view, as an operator uses it: a real headless Chromium opens the page whose URL
//! `hypersaga dev` prints, finds a create among the tenant's operations, watches its DAG's
//! steps change state without a reload, sees why it paused, and resumes it from the page.
//! Screenshots of the running create are kept under `<target>/test-artifacts/live-view/`.

use std::time::Duration;

use serde_json::Value;

use crate::browser::{Browser, artifacts, spki_digest};
use crate::support::*;

/// Each step's state as the page draws it (`data-step`, `data-state`).
const STATES: &str = "Object.fromEntries([...document.querySelectorAll('[data-step]')]\
                      .map(e => [e.dataset.step, e.dataset.state]))";

#[tokio::test]
async fn the_live_view_follows_a_create_shows_why_it_paused_and_resumes_it_from_the_page() {
    let system = System::start().await;
    let web = system
        .endpoints
        .web
        .clone()
        .expect("hypersaga dev serves the live view");
    let out = artifacts("live-view");
    eprintln!("live view screenshots: {}", out.display());

    // The page's API is the gRPC API's, authorization included.
    let ca = std::fs::read(&system.endpoints.ca_bundle).expect("CA");
    let http = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("CA")])
        .build()
        .expect("client");
    let anonymous = http
        .get(format!("{web}api/v1/operations"))
        .send()
        .await
        .expect("list");
    assert_eq!(anonymous.status(), 401);
    let refused: Value = anonymous.json().await.expect("JSON");
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");

    // The load balancer fails retryably until the faults are cleared: the create retries it,
    // then pauses, retries spent.
    system.hold_at_the_load_balancer().await;
    let key = std::fs::read_to_string(system.state_dir().join("tls/server-key.pem"))
        .expect("the gateway's key");
    let mut browser =
        Browser::launch(&spki_digest(&key), &system.dir.path().join("chromium.log")).await;
    let minute = Duration::from_secs(60);

    // The banner's URL: the token in the fragment is kept in the tab, and dropped from the
    // address.
    browser
        .navigate(&format!("{web}#token={}", system.token("acme")))
        .await;
    browser
        .wait_for(
            "the operations list",
            "!!document.getElementById('operations')",
            minute,
        )
        .await;
    let address = browser.eval("location.href").await;
    assert!(!address.to_string().contains("token"), "{address}");
    // Set once; a reload would lose it.
    browser.eval("window.sameDocument = 'never reloaded'").await;

    let op = system.create("acme", "watched", 1).await;
    let row = format!("[data-operation=\"{}\"] a", op.id);
    browser
        .wait_for(
            "the create among the operations",
            &format!("!!document.querySelector('{row}')"),
            minute,
        )
        .await;
    browser.click(&row).await;
    browser
        .wait_for(
            "the create's DAG",
            "document.querySelectorAll('[data-step]').length > 5",
            minute,
        )
        .await;
    let drawn = browser.eval(STATES).await;
    browser.screenshot(&out.join("create-running.png")).await;

    // Paused, with its reason and the calls an operator has.
    let reason = browser
        .wait_for(
            "the pause and its reason",
            "document.getElementById('pause-reason')?.innerText",
            TIMEOUT,
        )
        .await;
    let reason = reason.as_str().unwrap_or_default().to_owned();
    assert!(
        reason.contains("network.load-balancer") && reason.contains("ServiceUnavailable"),
        "{reason}"
    );
    let calls = browser
        .eval("[...document.querySelectorAll('#calls button')].map(b => b.dataset.call)")
        .await;
    assert_eq!(
        calls,
        serde_json::json!(["resume", "compensate", "abandon"]),
        "{calls}"
    );
    assert!(
        browser
            .eval("!!document.querySelector('[data-step=\"network.load-balancer\"] button[data-call=\"retry-step\"]')")
            .await
            .as_bool()
            .unwrap_or_default(),
        "the paused step offers a retry of its own"
    );
    let paused = browser.eval(STATES).await;
    browser.screenshot(&out.join("create-paused.png")).await;

    // Another tenant neither sees it nor acts on it.
    let globex = http
        .post(format!("{web}api/v1/operations/{}/resume", op.id))
        .bearer_auth(system.token("globex"))
        .send()
        .await
        .expect("resume as globex");
    assert_eq!(globex.status(), 404);

    // The cause goes away; the operator resumes from the page, and the create goes on to
    // the end, drawn as it goes.
    system
        .arm_admin()
        .clear_faults()
        .await
        .expect("clear faults");
    browser.click("#calls button[data-call=\"resume\"]").await;
    browser
        .wait_for(
            "the create to succeed",
            "document.getElementById('op-state')?.dataset.state === 'succeeded'",
            TIMEOUT,
        )
        .await;
    let done = browser.eval(STATES).await;
    browser.screenshot(&out.join("create-succeeded.png")).await;
    eprintln!(
        "live view screenshots: {}",
        [
            "create-running.png",
            "create-paused.png",
            "create-succeeded.png"
        ]
        .map(|f| out.join(f).display().to_string())
        .join(", ")
    );

    // Every step drawn changed state in place: no reload, the same page throughout.
    assert_eq!(
        browser.eval("window.sameDocument").await,
        "never reloaded",
        "the page was reloaded"
    );
    let state = |v: &Value, step: &str| v[step].as_str().unwrap_or_default().to_owned();
    assert_ne!(
        state(&paused, "network.load-balancer"),
        "succeeded",
        "{paused}"
    );
    assert_eq!(state(&done, "network.load-balancer"), "succeeded", "{done}");
    let changed: Vec<&String> = done
        .as_object()
        .expect("steps")
        .keys()
        .filter(|s| state(&drawn, s) != state(&done, s))
        .collect();
    assert!(
        changed.len() > 1,
        "steps changed state while the page watched: before {drawn}, after {done}"
    );
    assert!(
        done.as_object()
            .expect("steps")
            .values()
            .all(|s| ["succeeded", "skipped", "kept"].contains(&s.as_str().unwrap_or_default())),
        "every step has finished: {done}"
    );
    assert!(
        browser
            .eval("document.getElementById('pause') === null")
            .await
            .as_bool()
            .unwrap_or_default(),
        "the pause is gone"
    );

    // The page's resume was the tenant's own operator call, audited as such.
    let events = system.audit_events("acme", "watched").await;
    let resumed = events
        .iter()
        .find(|e| e["type"] == "operator.resume")
        .expect("the resume is audited");
    assert_eq!(resumed["actor"], "tenant:acme", "{resumed}");
    let ready = system.watch_to_end("acme", "watched").await;
    assert_eq!(phase(&ready), "ready");
}
