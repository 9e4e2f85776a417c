//! A cluster's workers: the management cluster's CAPZ makes them in ARM as the
//! node-pool-management identity, with a token of the hosted cluster's service account, so
//! they exist only while the identity holds its grants; they go before the NodePool does, and
//! every workload identity federates with the service accounts HyperShift names for it.

use std::time::Duration;

use hypersaga_emulator_mgmt::{Fault, FaultKind, service_account_token};
use hypersaga_model::identities::{AUDIENCE, WORKLOAD_IDENTITIES};
use serde_json::Value;

use crate::support::*;

/// `(type, name)` of the workers' resources (VMs, NICs, disks) in `group`.
async fn workers_in(system: &System, tenant: &str, group: &str) -> Vec<(String, String)> {
    let marker = format!("/resourcegroups/{}/", group.to_lowercase());
    let mut out: Vec<(String, String)> = system
        .inventory(tenant)
        .await
        .iter()
        .filter(|r| {
            r["id"]
                .as_str()
                .is_some_and(|id| id.to_lowercase().contains(&marker))
        })
        .filter_map(|r| {
            let ty = r["type"].as_str()?;
            let worker = [
                "Microsoft.Compute/virtualMachines",
                "Microsoft.Compute/disks",
                "Microsoft.Network/networkInterfaces",
            ]
            .contains(&ty);
            worker.then(|| (ty.to_owned(), r["name"].as_str().unwrap_or("?").to_owned()))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn two_replicas_are_two_vms_with_their_nics_and_disks_until_the_delete() {
    let system = System::start().await;
    system.create("acme", "demo", 2).await;
    let ready = system.watch_to_end("acme", "demo").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let infra = ready.status.clone().expect("status").infra_id;
    let group = format!("demo-{infra}");

    let workers = workers_in(&system, "acme", &group).await;
    let vms: Vec<&str> = workers
        .iter()
        .filter(|(t, _)| t == "Microsoft.Compute/virtualMachines")
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(vms.len(), 2, "{workers:#?}");
    let mut expected = Vec::new();
    for vm in &vms {
        // CAPI's names: `<nodepool>-<machineset suffix>-<machine suffix>`.
        let rest = vm
            .strip_prefix("demo-workers-")
            .expect("named for the NodePool");
        assert!(
            rest.len() == 11 && rest.as_bytes()[5] == b'-',
            "{vm}: five and five random characters"
        );
        expected.push(("Microsoft.Compute/disks".to_owned(), format!("{vm}_OSDisk")));
        expected.push((
            "Microsoft.Compute/virtualMachines".to_owned(),
            vm.to_string(),
        ));
        expected.push((
            "Microsoft.Network/networkInterfaces".to_owned(),
            format!("{vm}-nic"),
        ));
    }
    expected.sort();
    assert_eq!(workers, expected, "exactly the two workers, nothing else");

    // Each NIC is on the cluster's subnet, each VM holds its NIC and boots from its disk.
    let all = system.inventory("acme").await;
    for vm in &vms {
        let nic = all
            .iter()
            .find(|r| r["name"] == format!("{vm}-nic").as_str())
            .expect("nic");
        let subnet = nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"]
            .as_str()
            .expect("subnet id");
        assert!(
            subnet.ends_with(&format!("/virtualNetworks/demo-{infra}/subnets/default")),
            "{subnet}"
        );
        let machine = all.iter().find(|r| r["name"] == *vm).expect("vm");
        let os = &machine["properties"]["storageProfile"]["osDisk"];
        assert_eq!(os["createOption"], "FromImage");
        assert_eq!(os["name"], format!("{vm}_OSDisk").as_str());
        assert_eq!(
            machine["properties"]["hardwareProfile"]["vmSize"],
            "Standard_D4s_v5"
        );
    }
    // The Machines say which VM is theirs.
    let objects = system.mgmt_admin().objects().await.expect("objects");
    let machines: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Machine").collect();
    assert_eq!(machines.len(), 2);
    for m in &machines {
        let id = m["spec"]["providerID"].as_str().expect("providerID");
        assert!(
            vms.iter()
                .any(|vm| id.ends_with(&format!("/virtualMachines/{vm}"))),
            "{id}"
        );
    }

    // The delete: the NodePool's finalizer waited for CAPZ, the subnet went after.
    system.delete("acme", "demo").await;
    let gone = system.watch_to_end("acme", "demo").await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    assert!(workers_in(&system, "acme", &group).await.is_empty());
    let left = system.resource_names("acme").await;
    for r in &left {
        assert!(outlives_clusters(r), "left behind: {r} (all: {left:#?})");
    }
}

#[tokio::test]
async fn a_missing_grant_fails_the_node_pool_step_with_arms_words_and_compensates() {
    let system = System::start().await;
    let sub = system.subscription("acme");
    // Hold the NodePool back (no Machine is made while it is faulted) until the grants are
    // gone; the node pool step waits on it meanwhile.
    system
        .mgmt_admin()
        .inject_fault(&Fault {
            kind: FaultKind::NodePool,
            name_contains: Some("denied".into()),
            reason: "HeldBack".into(),
            message: "held back by the test".into(),
            condition: None,
        })
        .await
        .expect("fault");
    system.create("acme", "denied", 1).await;
    let granted = system
        .wait_until("acme", "denied", "the role assignments", |c| {
            steps(c)
                .get("identity.role-assignments")
                .is_some_and(|(s, _)| s == "succeeded")
        })
        .await;
    let infra = granted.status.clone().expect("status").infra_id;

    // An administrator removes the node-pool-management identity's grant on the managed group.
    // (Its grant on the VNet's group stays: without any grant in the subscription CAPZ could not
    // even list the Resource SKUs, which it reports nowhere but its log.)
    let identity = system
        .inventory("acme")
        .await
        .into_iter()
        .find(|r| r["name"] == format!("denied-node-pool-mgmt-{infra}").as_str())
        .expect("identity");
    let principal = identity["properties"]["principalId"]
        .as_str()
        .expect("principal")
        .to_owned();
    let grants: Vec<Value> = system
        .arm_admin()
        .role_assignments(Some(&sub))
        .await
        .expect("assignments")
        .into_iter()
        .filter(|a| a["properties"]["principalId"] == principal.as_str())
        .collect();
    assert_eq!(
        grants.len(),
        2,
        "Contributor on the managed and VNet groups: {grants:#?}"
    );
    let managed = format!("/resourcegroups/denied-{infra}");
    let grants: Vec<Value> = grants
        .into_iter()
        .filter(|g| {
            g["properties"]["scope"]
                .as_str()
                .is_some_and(|s| s.to_lowercase().ends_with(&managed))
        })
        .collect();
    assert_eq!(grants.len(), 1, "the managed group's grant");
    for g in &grants {
        system
            .arm_admin()
            .delete_role_assignment(g["id"].as_str().expect("id"))
            .await
            .expect("admin")
            .expect("deleted");
    }
    system.mgmt_admin().clear_faults().await.expect("clear");

    // The node pool step fails with ARM's refusal; its undo waits on the worker CAPZ may not
    // delete either.
    let failing = system
        .wait_until("acme", "denied", "the node pool step to fail", |c| {
            steps(c)
                .get("nodepool.workers")
                .is_some_and(|(s, _)| s == "compensating" || s == "compensated")
        })
        .await;
    assert!(
        workers_in(&system, "acme", &format!("denied-{infra}"))
            .await
            .is_empty()
    );
    let held = system.mgmt_admin().objects().await.expect("objects");
    assert!(
        held.iter().any(|o| o["kind"] == "NodePool"),
        "the NodePool's finalizer holds while its Machine cannot be deleted: {failing:#?}"
    );

    // The grant back (as the user would put it), the compensation finishes.
    let arm = system.arm("acme");
    for g in &grants {
        let body = serde_json::json!({"properties": {
            "roleDefinitionId": g["properties"]["roleDefinitionId"],
            "principalId": principal,
            "principalType": "ServicePrincipal",
        }});
        arm.put(g["id"].as_str().expect("id"), "2022-04-01", &body)
            .await
            .expect("grant restored");
    }
    let failed = system.watch_to_end("acme", "denied").await;
    assert_eq!(phase(&failed), "failed", "{failed:#?}");
    let status = failed.status.clone().expect("status");
    let error = status.error.clone().expect("error");
    assert_eq!(error.step, "nodepool.workers", "{error:#?}");
    assert_eq!(error.code, "AuthorizationFailed", "{error:#?}");
    for words in [
        "does not have authorization to perform action 'Microsoft.Network/networkInterfaces/read'",
        &format!(
            "/resourceGroups/denied-{infra}/providers/Microsoft.Network/networkInterfaces/denied-workers-"
        ),
    ] {
        assert!(
            error.message.contains(words),
            "{words:?} in {}",
            error.message
        );
    }
    let s = steps(&failed);
    assert_eq!(s["nodepool.workers"].0, "compensated", "{s:?}");
    assert_eq!(s["controlplane.hostedcluster"].0, "compensated", "{s:?}");
    let left = system.resource_names("acme").await;
    for r in &left {
        assert!(outlives_clusters(r), "left behind: {r} (all: {left:#?})");
    }
}

/// Standard base64 (RFC 4648 §4), as a Secret's `data` holds its values.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
    {
        let v = ALPHABET.iter().position(|a| *a == c).expect("base64") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Entra's answer to a client-assertion grant: status and body.
async fn exchange(
    http: &reqwest::Client,
    system: &System,
    tenant: &str,
    client_id: &str,
    assertion: &str,
) -> (u16, Value) {
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "client_credentials")
        .append_pair("client_id", client_id)
        .append_pair("scope", "https://management.azure.com/.default")
        .append_pair(
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        )
        .append_pair("client_assertion", assertion)
        .finish();
    let resp = http
        .post(format!(
            "{}/{tenant}/oauth2/v2.0/token",
            system.endpoints.entra_url.trim_end_matches('/')
        ))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("token request");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn each_identity_takes_its_own_service_accounts_tokens_and_nothing_else() {
    let system = System::start().await;
    system.create("acme", "fed", 1).await;
    let ready = system.watch_to_end("acme", "fed").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");

    // What the hosted cluster's kube-apiserver signs with: the Secret the product stored.
    let objects = system.mgmt_admin().objects().await.expect("objects");
    let hc = objects
        .iter()
        .find(|o| o["kind"] == "HostedCluster" && o["metadata"]["name"] == "fed")
        .expect("HostedCluster");
    let key_secret = hc["spec"]["serviceAccountSigningKey"]["name"]
        .as_str()
        .expect("signing key secret");
    assert_eq!(key_secret, "fedsa-token-issuer-key");
    let secret = objects
        .iter()
        .find(|o| {
            o["kind"] == "Secret"
                && o["metadata"]["name"] == key_secret
                && o["metadata"]["namespace"] == hc["metadata"]["namespace"]
        })
        .expect("Secret");
    let pem = String::from_utf8(base64_decode(secret["data"]["key"].as_str().expect("key")))
        .expect("PEM");
    let issuer = hc["spec"]["issuerURL"].as_str().expect("issuerURL");
    let ids = &hc["spec"]["platform"]["azure"]["azureAuthenticationConfig"]["workloadIdentities"];
    let tenant = system
        .endpoints
        .tenant(Some("acme"))
        .expect("tenant")
        .azure_tenant_id
        .clone();
    let ca = std::fs::read(&system.endpoints.ca_bundle).expect("CA");
    let http = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("CA")])
        .build()
        .expect("client");
    let token = |issuer: &str, subject: &str, audience: &str| {
        service_account_token(&pem, issuer, subject, audience, Duration::from_secs(600))
            .expect("token")
    };

    // All eight identities, each for every service account it trusts.
    let mut exchanged = 0;
    for w in WORKLOAD_IDENTITIES {
        let client_id = ids[w.key]["clientID"].as_str().expect("clientID");
        for (_, subject) in w.credentials {
            let (status, body) = exchange(
                &http,
                &system,
                &tenant,
                client_id,
                &token(issuer, subject, AUDIENCE),
            )
            .await;
            assert_eq!(status, 200, "{} as {subject}: {body}", w.key);
            assert!(body["access_token"].is_string(), "{body}");
            exchanged += 1;
        }
    }
    assert_eq!((WORKLOAD_IDENTITIES.len(), exchanged), (8, 13));

    // Anything else is refused as Entra refuses it: another issuer, another identity's service
    // account, another audience.
    let npm = ids["nodePoolManagement"]["clientID"]
        .as_str()
        .expect("clientID");
    let capz = "system:serviceaccount:kube-system:capi-provider";
    let disk = WORKLOAD_IDENTITIES[0].credentials[0].1;
    for (assertion, code) in [
        (token(&format!("{issuer}/"), capz, AUDIENCE), 700211),
        (token(issuer, disk, AUDIENCE), 700213),
        (token(issuer, capz, "api://AzureADTokenExchange"), 700212),
    ] {
        let (status, body) = exchange(&http, &system, &tenant, npm, &assertion).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["error"], "invalid_client", "{body}");
        assert_eq!(body["error_codes"][0], code, "{body}");
        assert!(
            body["error_description"]
                .as_str()
                .is_some_and(|d| d.starts_with(&format!("AADSTS{code}:"))),
            "{body}"
        );
    }
}
