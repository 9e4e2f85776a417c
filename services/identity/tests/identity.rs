//! The identity steps against real Azurite (issuer) and the real ARM emulator (identities).

use hypersaga_bus::{Action, OidcOutputs, Outputs, StepCommand, StepError, StepId};
use hypersaga_config::Config;
use hypersaga_identity::{FIC_API, IdentityHandler};
use hypersaga_model::TenantId;
use hypersaga_model::identities::WORKLOAD_IDENTITIES;
use hypersaga_oidc::{
    BlobConfig, BlobPublisher, KEY_BLOB, KeyStore, LEGACY_KEY_CONTAINER, Secret, SigningKey,
    legacy_key_blob,
};
use hypersaga_stepkit::ArmStep;
use hypersaga_stepkit::{ArmClients, LogNotes};
use hypersaga_testkit::{Azurite, SUBSCRIPTION, TestArm, command, names_of, prior, spec};
use serde_json::{Value, json};

const MSI: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";
const FIC: &str = "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials";

async fn exec(h: &IdentityHandler, cmd: &StepCommand) -> Result<Outputs, StepError> {
    h.execute(cmd, &LogNotes).await
}

/// Blob settings that are never contacted (the workload step needs no storage).
fn without_blob(arm: &TestArm) -> Config {
    let mut c = arm.config(None);
    c.blob.endpoint = "http://127.0.0.1:9/devstoreaccount1".into();
    c.blob.account_name = "devstoreaccount1".into();
    c.blob.account_key = hypersaga_config::Secret::new(hypersaga_testkit::azurite_key());
    c.signing_keys.endpoint = "http://127.0.0.1:9/hypersagakeys".into();
    c.signing_keys.account_name = "hypersagakeys".into();
    c.signing_keys.account_key = hypersaga_config::Secret::new("a2V5");
    c
}

fn oidc_outputs(issuer: &str) -> Vec<(String, Outputs)> {
    vec![prior(
        StepId::Oidc,
        OidcOutputs {
            issuer_url: issuer.to_owned(),
            kid: "k".to_owned(),
        },
    )]
}

/// A client of one of `az`'s accounts, from its configuration section.
fn account(section: &hypersaga_config::BlobConfig) -> BlobConfig {
    BlobConfig {
        blob_endpoint: section.endpoint.parse().expect("endpoint"),
        account_name: section.account_name.clone(),
        account_key: Secret::new(section.account_key.expose().to_owned()),
    }
}

/// A tenant whose key an earlier version kept in the issuers' account keeps that key: the
/// service moves it into the key store at start (and `identity.oidc` would, had the start
/// missed it), publishes the same `kid`, and leaves no key in the issuers' account. The key
/// store's blob is refused to an anonymous reader, as the issuer documents are not.
#[tokio::test]
async fn a_key_kept_where_earlier_versions_kept_it_is_moved_to_the_private_store() {
    hypersaga_devca::install_crypto_provider();
    let az = Azurite::start().await;
    let arm = TestArm::start().await;
    let config = arm.config(Some(&az));
    let issuers = BlobPublisher::new(account(&config.blob)).expect("issuers");
    let keys = KeyStore::new(account(&config.signing_keys)).expect("key store");

    // As the previous version stored it: a private container of the issuers' account.
    let legacy = SigningKey::generate().expect("key");
    issuers
        .ensure_private_container(LEGACY_KEY_CONTAINER)
        .await
        .expect("legacy container");
    issuers
        .put_blob(
            LEGACY_KEY_CONTAINER,
            &legacy_key_blob("acme"),
            legacy.private_key_pem().into_bytes(),
            "application/x-pem-file",
        )
        .await
        .expect("legacy key");

    let h = IdentityHandler::new(&config).expect("handler");
    h.migrate_legacy_keys(&config).await;
    assert_eq!(
        issuers
            .get_blob(LEGACY_KEY_CONTAINER, &legacy_key_blob("acme"))
            .await
            .expect("read legacy"),
        None,
        "the key is gone from the issuers' account"
    );
    let moved = keys.load("acme").await.expect("load").expect("moved key");
    assert_eq!(moved.kid(), legacy.kid());

    let out = exec(&h, &command("one", spec(), StepId::Oidc, Action::Do, []))
        .await
        .expect("oidc");
    assert_eq!(
        out["kid"],
        legacy.kid().as_str(),
        "the old key is kept, not replaced"
    );

    // Anonymous readers: the JWKS yes, the key no (Azurite refuses an anonymous read of a
    // private container's blob with 403 AuthorizationFailure).
    let http = reqwest::Client::new();
    let issuer = out["issuer_url"].as_str().expect("issuer_url");
    let jwks = http
        .get(format!("{issuer}/openid/v1/jwks"))
        .send()
        .await
        .unwrap();
    assert_eq!(jwks.status(), 200);
    let key_url = format!(
        "{}/{}/{KEY_BLOB}",
        az.key_store_endpoint,
        KeyStore::container("acme")
    );
    let anonymous = http.get(&key_url).send().await.unwrap();
    assert_eq!(anonymous.status(), 403, "anonymous GET of {key_url}");
    assert_eq!(
        anonymous
            .headers()
            .get("x-ms-error-code")
            .map(|v| v.as_bytes()),
        Some(&b"AuthorizationFailure"[..])
    );
    assert!(!anonymous.text().await.unwrap().contains("PRIVATE KEY"));
}

#[tokio::test]
async fn issuer_is_published_once_per_tenant_and_shared() {
    hypersaga_devca::install_crypto_provider();
    let az = Azurite::start().await;
    let arm = TestArm::start().await;
    let config = arm.config(Some(&az));
    let h = IdentityHandler::new(&config).expect("handler");

    // Two clusters of the tenant race to create the issuer: one key wins, both use it.
    let a = command("one", spec(), StepId::Oidc, Action::Do, []);
    let b = command("two", spec(), StepId::Oidc, Action::Do, []);
    let (ra, rb) = tokio::join!(exec(&h, &a), exec(&h, &b));
    let (oa, ob) = (ra.expect("oidc one"), rb.expect("oidc two"));
    assert_eq!(oa, ob, "both clusters share the tenant's issuer and key");
    let issuer = oa["issuer_url"].as_str().expect("issuer_url").to_owned();
    let kid = oa["kid"].as_str().expect("kid").to_owned();
    assert_eq!(issuer, format!("{}/oidc-acme", az.endpoint));

    // Entra's view: anonymous reads of discovery and JWKS.
    let http = reqwest::Client::new();
    let discovery: Value = http
        .get(format!("{issuer}/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], issuer.as_str());
    let jwks: Value = http
        .get(discovery["jwks_uri"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"].as_array().map(Vec::len), Some(1));
    assert_eq!(jwks["keys"][0]["kid"], kid.as_str());

    // Again: the stored key is adopted (same kid), documents republished identically.
    let again = exec(&h, &command("three", spec(), StepId::Oidc, Action::Do, []))
        .await
        .expect("oidc again");
    assert_eq!(again, oa);

    // Undo is a no-op: the issuer is shared.
    exec(&h, &command("one", spec(), StepId::Oidc, Action::Undo, []))
        .await
        .expect("undo");
    let still = http
        .get(format!("{issuer}/openid/v1/jwks"))
        .send()
        .await
        .unwrap();
    assert_eq!(still.status(), 200);
    // No ARM call was made for the issuer.
    assert!(
        arm.requests()
            .await
            .counts
            .iter()
            .all(|c| c.resource_type == "Entra" || c.count == 0)
    );
}

#[tokio::test]
async fn workload_identities_are_created_adopted_and_removed() {
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let h = IdentityHandler::new(&without_blob(&arm)).expect("handler");
    let issuer = "https://issuer.example/oidc-acme";
    let cmd = command(
        "demo",
        spec(),
        StepId::WorkloadIdentities,
        Action::Do,
        oidc_outputs(issuer),
    );
    let out = exec(&h, &cmd).await.expect("workload");
    let names = names_of("demo", &spec());

    let rg_id = format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/hcp-acme-identities");
    assert_eq!(out["identity_rg_id"], rg_id.as_str());
    let rg = arm.resource(&rg_id).await.expect("identity rg");
    assert_eq!(rg["location"], "eastus");

    // The controlplane service puts this object into the HostedCluster as is.
    let typed: hypersaga_hypershift::AzureWorkloadIdentities =
        serde_json::from_value(out["workload_identities"].clone())
            .expect("HyperShift's workloadIdentities shape");
    assert_eq!(
        typed.disk.client_id,
        out["workload_identities"]["disk"]["clientID"]
            .as_str()
            .unwrap()
    );
    let workload = out["workload_identities"].as_object().expect("object");
    assert_eq!(workload.len(), 8);
    let inventory = arm.resources().await;
    for w in WORKLOAD_IDENTITIES {
        let id = format!("{rg_id}/providers/{MSI}/{}", names.identity(w.suffix));
        assert_eq!(
            out[&format!("{}_identity_id", w.key)],
            id.as_str(),
            "{}",
            w.key
        );
        let mi = inventory
            .iter()
            .find(|r| {
                r["id"]
                    .as_str()
                    .is_some_and(|i| i.eq_ignore_ascii_case(&id))
            })
            .expect("mi");
        assert_eq!(
            workload[w.key]["clientID"], mi["properties"]["clientId"],
            "{}",
            w.key
        );
        assert_eq!(
            out["workload_principals"][w.key],
            mi["properties"]["principalId"]
        );
        assert_eq!(mi["tags"]["hypersaga.io_cluster"], "demo");
        for (suffix, subject) in w.credentials {
            let fic_id = format!(
                "{id}/federatedIdentityCredentials/{}",
                names.federated_credential(suffix)
            );
            let fic = inventory
                .iter()
                .find(|r| {
                    r["id"]
                        .as_str()
                        .is_some_and(|i| i.eq_ignore_ascii_case(&fic_id))
                })
                .unwrap_or_else(|| panic!("fic {fic_id}"));
            assert_eq!(fic["properties"]["issuer"], issuer);
            assert_eq!(fic["properties"]["subject"], *subject);
            assert_eq!(fic["properties"]["audiences"], json!(["openshift"]));
        }
    }
    let stats = arm.requests().await;
    assert_eq!(stats.count("PUT", MSI), 8);
    assert_eq!(stats.count("PUT", FIC), 13);
    assert_eq!(stats.count("PUT", "Microsoft.Resources/resourceGroups"), 1);

    // Do again: adopted, no writes, same outputs.
    assert_eq!(exec(&h, &cmd).await.expect("again"), out);
    let stats = arm.requests().await;
    assert_eq!((stats.count("PUT", MSI), stats.count("PUT", FIC)), (8, 13));
    assert_eq!(stats.count("PUT", "Microsoft.Resources/resourceGroups"), 1);

    // A credential whose subject drifted is replaced; the others are left alone.
    let tenant = ArmClients::new(&without_blob(&arm))
        .unwrap()
        .tenant(&TenantId::new("acme").unwrap())
        .unwrap();
    let disk = WORKLOAD_IDENTITIES[0];
    let fic_id = format!(
        "{}/federatedIdentityCredentials/{}",
        out["disk_identity_id"].as_str().unwrap(),
        names.federated_credential(disk.credentials[0].0)
    );
    tenant
        .client
        .put(&fic_id, FIC_API, &json!({"properties": {"issuer": issuer, "subject": "system:serviceaccount:x:y", "audiences": ["openshift"]}}))
        .await
        .expect("tamper");
    exec(&h, &cmd).await.expect("repair");
    let fixed = tenant
        .client
        .get(&fic_id, FIC_API)
        .await
        .unwrap()
        .expect("fic");
    assert_eq!(fixed["properties"]["subject"], disk.credentials[0].1);
    assert_eq!(
        arm.requests().await.count("PUT", FIC),
        13 + 2,
        "the tamper and its repair only"
    );

    // A new issuer URL rewrites every credential, verbatim.
    let moved = command(
        "demo",
        spec(),
        StepId::WorkloadIdentities,
        Action::Do,
        oidc_outputs("https://other.example/oidc-acme"),
    );
    exec(&h, &moved).await.expect("new issuer");
    assert_eq!(arm.requests().await.count("PUT", FIC), 15 + 13);
    let fic = tenant
        .client
        .get(&fic_id, FIC_API)
        .await
        .unwrap()
        .expect("fic");
    assert_eq!(
        fic["properties"]["issuer"],
        "https://other.example/oidc-acme"
    );

    // Undo removes the identities, and their credentials with them; the tenant's group stays.
    let undo = command("demo", spec(), StepId::WorkloadIdentities, Action::Undo, []);
    exec(&h, &undo).await.expect("undo");
    assert_eq!(arm.requests().await.count("DELETE", MSI), 8);
    let left = arm.resources().await;
    assert!(
        !left
            .iter()
            .any(|r| r["type"].as_str().is_some_and(|t| t.starts_with(MSI))),
        "identities or credentials left: {left:#?}"
    );
    assert!(
        arm.resource(&rg_id).await.is_some(),
        "the tenant's group stays"
    );
    // Again: already gone is done.
    exec(&h, &undo).await.expect("undo again");
}

#[tokio::test]
async fn identity_errors_are_classified() {
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let h = IdentityHandler::new(&without_blob(&arm)).expect("handler");
    let cmd = command(
        "flt",
        spec(),
        StepId::WorkloadIdentities,
        Action::Do,
        oidc_outputs("https://i.example/oidc-acme"),
    );

    arm.fault("PUT", MSI, 403, "AuthorizationFailed", 100).await;
    let e = exec(&h, &cmd).await.expect_err("403");
    assert_eq!(e.info.code, "AuthorizationFailed");
    assert!(!e.is_retryable());
    arm.admin.clear_faults().await.unwrap();

    arm.fault("PUT", FIC, 500, "InternalServerError", 1).await;
    let e = exec(&h, &cmd).await.expect_err("500");
    assert!(e.is_retryable(), "{e}");
    // The retry finishes the job.
    exec(&h, &cmd).await.expect("retry");
    assert_eq!(
        arm.requests().await.count("PUT", MSI) as usize,
        8 + 8,
        "403s, then the creates"
    );

    // Without the issuer output the step cannot run: a plan bug, terminal.
    let e = exec(
        &h,
        &command("flt", spec(), StepId::WorkloadIdentities, Action::Do, []),
    )
    .await
    .expect_err("no issuer");
    assert_eq!(e.info.code, "MissingStepOutput");
    assert_eq!(e.info.target.as_deref(), Some("identity.oidc.issuer_url"));
    let e = exec(
        &h,
        &command("flt", spec(), "identity.roles", Action::Do, []),
    )
    .await
    .expect_err("unknown");
    assert_eq!(e.info.code, "UnknownStep");
}

/// The role of each identity at each of the cluster's groups, as docs/reference/hypershift-azure.md
/// §2.4 lists them (HyperShift's `rbac.go`): (component, role GUID, scopes).
const GRANTS: [(&str, &str, &[&str]); 8] = [
    (
        "cloudProvider",
        "a1f96423-95ce-4224-ab27-4e3dc72facd4",
        &["managed", "nsg", "vnet"],
    ),
    (
        "ingress",
        "0336e1d3-7a87-462b-b6db-342b63f7802c",
        &["managed", "vnet", "dns"],
    ),
    (
        "file",
        "0d7aedc0-15fd-4a67-a412-efad370c947e",
        &["managed", "nsg", "vnet"],
    ),
    ("disk", "5b7237c5-45e1-49d6-bc18-a1f62f400748", &["managed"]),
    (
        "network",
        "be7a6435-15ae-4171-8f30-4a343eff9e8f",
        &["managed", "vnet"],
    ),
    (
        "imageRegistry",
        "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5",
        &["managed"],
    ),
    (
        "nodePoolManagement",
        "b24988ac-6180-42a0-ab88-20f7382dd24c",
        &["managed", "vnet"],
    ),
    (
        "controlPlaneOperator",
        "b24988ac-6180-42a0-ab88-20f7382dd24c",
        &["managed", "nsg", "vnet"],
    ),
];

#[tokio::test]
async fn role_assignments_are_made_once_adopted_repaired_and_removed() {
    use hypersaga_bus::ResourceGroupsOutputs;
    hypersaga_devca::install_crypto_provider();
    let arm = TestArm::start().await;
    let config = without_blob(&arm);
    let h = IdentityHandler::new(&config).expect("handler");
    let issuer = "https://issuer.example/oidc-acme";
    let workload = command(
        "demo",
        spec(),
        StepId::WorkloadIdentities,
        Action::Do,
        oidc_outputs(issuer),
    );
    let identities = exec(&h, &workload).await.expect("identities");

    // The cluster's three groups, as the network step makes them.
    let names = names_of("demo", &spec());
    let client = ArmClients::new(&config)
        .unwrap()
        .tenant(&TenantId::new("acme").unwrap())
        .unwrap();
    let group = |rg: &str| format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}");
    let scopes = [
        ("managed", group(&names.managed_rg)),
        ("vnet", group(&names.vnet_rg)),
        ("nsg", group(&names.nsg_rg)),
        // The user's group of the public zone of the base domain.
        ("dns", group("dns")),
    ];
    for (_, id) in &scopes {
        client
            .client
            .put(id, "2021-04-01", &json!({"location": "eastus"}))
            .await
            .expect("group");
    }
    let mut outputs = oidc_outputs(issuer);
    outputs.push((StepId::WorkloadIdentities.to_string(), identities.clone()));
    outputs.push(prior(
        StepId::ResourceGroups,
        ResourceGroupsOutputs {
            managed_rg_id: scopes[0].1.clone(),
            vnet_rg_id: Some(scopes[1].1.clone()),
            nsg_rg_id: Some(scopes[2].1.clone()),
        },
    ));
    outputs.push(prior(
        StepId::PublicZone,
        hypersaga_bus::PublicZoneOutputs {
            public_zone: format!(
                "{}/providers/Microsoft.Network/dnsZones/example.com",
                scopes[3].1
            ),
        },
    ));
    let cmd = command(
        "demo",
        spec(),
        StepId::RoleAssignments,
        Action::Do,
        outputs.clone(),
    );
    let out = exec(&h, &cmd).await.expect("role assignments");
    assert_eq!(out["role_assignments"].as_array().map(Vec::len), Some(18));

    // Exactly the grants of the reference, each as a service principal.
    let listed = arm
        .admin
        .role_assignments(Some(SUBSCRIPTION))
        .await
        .expect("list");
    let mut seen = std::collections::BTreeSet::new();
    for a in &listed {
        let p = &a["properties"];
        assert_eq!(p["principalType"], "ServicePrincipal", "{a:#}");
        let principal = p["principalId"].as_str().unwrap();
        let (key, role, _) = GRANTS
            .iter()
            .find(|(k, _, _)| identities["workload_principals"][*k] == principal)
            .unwrap_or_else(|| panic!("an assignment for no identity: {a:#}"));
        assert!(
            p["roleDefinitionId"].as_str().unwrap().ends_with(role),
            "{a:#}"
        );
        let scope = p["scope"].as_str().unwrap().to_ascii_lowercase();
        let (part, _) = scopes
            .iter()
            .find(|(_, id)| id.to_ascii_lowercase() == scope)
            .unwrap_or_else(|| panic!("an assignment outside the cluster's groups: {a:#}"));
        seen.insert((key.to_string(), part.to_string()));
    }
    let expected: std::collections::BTreeSet<(String, String)> = GRANTS
        .iter()
        .flat_map(|(k, _, parts)| parts.iter().map(move |p| (k.to_string(), p.to_string())))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(listed.len(), 18);

    // Again: adopted, nothing written.
    const ASSIGNMENTS: &str = "Microsoft.Authorization/roleAssignments";
    let before = arm.requests().await.count("PUT", ASSIGNMENTS);
    exec(&h, &cmd).await.expect("again");
    assert_eq!(arm.requests().await.count("PUT", ASSIGNMENTS), before);

    // One taken away under the running system is made again; only that one.
    let gone = out["role_assignments"][0].as_str().unwrap();
    arm.admin
        .delete_role_assignment(gone)
        .await
        .expect("admin delete")
        .expect("existed");
    exec(&h, &cmd).await.expect("repair");
    assert_eq!(arm.requests().await.count("PUT", ASSIGNMENTS), before + 1);
    assert_eq!(
        arm.admin
            .role_assignments(Some(SUBSCRIPTION))
            .await
            .unwrap()
            .len(),
        18
    );

    // Undo removes them all; already gone is done.
    let undo = command(
        "demo",
        spec(),
        StepId::RoleAssignments,
        Action::Undo,
        outputs,
    );
    exec(&h, &undo).await.expect("undo");
    assert!(
        arm.admin
            .role_assignments(Some(SUBSCRIPTION))
            .await
            .unwrap()
            .is_empty()
    );
    exec(&h, &undo).await.expect("undo again");
}

/// The keys never share the issuers' account: a configuration that says so does not load,
/// and one without a key store does not start identity.
#[test]
fn the_signing_keys_need_an_account_of_their_own() {
    let mut c = Config::default();
    c.blob.endpoint = "https://issuers.blob.core.windows.net".into();
    c.blob.account_name = "issuers".into();
    c.signing_keys.endpoint = "https://issuers.blob.core.windows.net/".into();
    c.signing_keys.account_name = "keys".into();
    let err = c.validate().expect_err("same account").to_string();
    assert!(err.contains("signing_keys.endpoint"), "{err}");
    c.signing_keys.endpoint = "https://keys.blob.core.windows.net".into();
    c.validate().expect("separate accounts");

    c.signing_keys.endpoint.clear();
    let err = IdentityHandler::new(&c)
        .err()
        .expect("no key store")
        .to_string();
    assert!(err.contains("signing_keys.endpoint is required"), "{err}");
}
