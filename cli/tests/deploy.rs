//! The deployment artifacts, checked without a cluster or a container engine: the kustomize
//! overlays render offline (`kubectl kustomize`) into what we mean to run, the Secrets
//! `create-secrets.sh` makes are the ones the manifests read, the NATS configurations load in
//! nats-server (`-t`), the configurations load in hypersaga, every command compose.yaml runs
//! is one the binary accepts, and `federation-issuer.sh` writes the issuer documents
//! hypersaga's own signer is checked against. The Prometheus alert rules pass `promtool check
//! rules` and their unit tests (`promtool test rules`), and what they and the Grafana dashboard
//! read are metrics the roles export.
//!
//! Needs kubectl (with its built-in kustomize), nats-server, jq, openssl, xxd and promtool on
//! PATH, as the CI machine has them (`scripts/setup.sh` installs promtool, `scripts/env.sh`
//! puts nats-server there).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::{Value, json};

const ROLES: [&str; 7] = [
    "gateway",
    "coordinator",
    "identity",
    "network",
    "dns",
    "controlplane",
    "nodepool",
];
/// The roles that call Azure (ARM, Entra ID, blob storage).
const AZURE_ROLES: [&str; 5] = ["identity", "network", "dns", "controlplane", "nodepool"];
/// The roles that act on the management cluster.
const KUBE_ROLES: [&str; 2] = ["controlplane", "nodepool"];
/// The roles that call Azure as a tenant: they hold hypersaga's federation key (the client
/// assertions), and read their Secret's config.json (where a declared tenant's client secret
/// would be, given one).
const TENANT_AZURE_ROLES: [&str; 4] = ["identity", "network", "dns", "nodepool"];
/// Where those roles find the federation key (`federation.signing_key_file`).
const FEDERATION_KEY_FILE: &str = "/etc/hypersaga/federation/signing-key.pem";
/// The auth callout's files, besides the gateway's own seed: only the gateway holds them.
const CALLOUT_FILES: [&str; 2] = ["callout.nk", "callout-issuer.nk"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn hypersaga() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hypersaga"))
}

/// Runs `cmd`, failing the test with its output unless it succeeds; returns stdout.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn yaml_documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).expect("YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

/// One rendered overlay.
struct Rendered {
    overlay: &'static str,
    objects: Vec<Value>,
}

impl Rendered {
    fn of(overlay: &'static str) -> Self {
        let dir = root().join("deploy/kustomize/overlays").join(overlay);
        let text = run(Command::new("kubectl").arg("kustomize").arg(&dir));
        Self {
            overlay,
            objects: yaml_documents(&text),
        }
    }

    fn production(&self) -> bool {
        self.overlay == "production"
    }

    fn all(&self, kind: &str) -> impl Iterator<Item = &Value> {
        self.objects.iter().filter(move |o| o["kind"] == kind)
    }

    fn get(&self, kind: &str, name: &str) -> &Value {
        self.all(kind)
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{}: no {kind} {name}", self.overlay))
    }

    /// A ConfigMap by the name it was generated under (kustomize adds a hash).
    fn config_map(&self, name: &str) -> &Value {
        let prefix = format!("{name}-");
        self.all("ConfigMap")
            .find(|o| {
                o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("{}: no ConfigMap {name}", self.overlay))
    }

    fn namespace(&self) -> &str {
        self.get("Deployment", "hypersaga-gateway")["metadata"]["namespace"]
            .as_str()
            .expect("a namespace")
    }
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn container(deployment: &Value) -> &Value {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container per role");
    &containers[0]
}

/// Every (Secret, key) a pod reads, from volumes (secret and projected) and from env.
fn secret_keys(pod: &Value) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let mut items = |volume: &str, secret: &Value| {
        let name = secret["secretName"]
            .as_str()
            .or(secret["name"].as_str())
            .expect("a Secret name")
            .to_owned();
        let items = secret["items"].as_array().unwrap_or_else(|| {
            panic!("volume {volume} mounts the whole Secret {name}: list its keys (items)")
        });
        for item in items {
            found.push((
                volume.to_owned(),
                name.clone(),
                item["key"].as_str().expect("key").to_owned(),
            ));
        }
    };
    for v in pod["volumes"].as_array().into_iter().flatten() {
        let volume = v["name"].as_str().expect("volume name");
        if v["secret"].is_object() {
            items(volume, &v["secret"]);
        }
        for source in v["projected"]["sources"].as_array().into_iter().flatten() {
            if source["secret"].is_object() {
                items(volume, &source["secret"]);
            }
        }
    }
    for c in pod["containers"].as_array().into_iter().flatten() {
        for e in c["env"].as_array().into_iter().flatten() {
            let r = &e["valueFrom"]["secretKeyRef"];
            if r.is_object() {
                found.push((
                    format!("env {}", e["name"].as_str().unwrap_or("")),
                    r["name"].as_str().expect("name").to_owned(),
                    r["key"].as_str().expect("key").to_owned(),
                ));
            }
        }
    }
    found
}

fn mount_path<'a>(container: &'a Value, volume: &str) -> &'a str {
    container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == volume)
        .and_then(|m| m["mountPath"].as_str())
        .unwrap_or_else(|| panic!("volume {volume} is not mounted"))
}

fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == name)
}

fn check_role(r: &Rendered, role: &str) {
    let what = format!("{}: {role}", r.overlay);
    let name = format!("hypersaga-{role}");
    let d = r.get("Deployment", &name);
    let replicas = d["spec"]["replicas"].as_u64().expect("replicas");
    assert_eq!(replicas, if r.production() { 2 } else { 1 }, "{what}");
    let pod = &d["spec"]["template"]["spec"];
    let labels = &d["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["app.kubernetes.io/component"], role, "{what}");
    assert_eq!(labels["app.kubernetes.io/name"], "hypersaga", "{what}");

    // Its own ServiceAccount, with an API token only where it acts on the cluster.
    assert_eq!(pod["serviceAccountName"], name, "{what}");
    r.get("ServiceAccount", &name);
    assert_eq!(
        pod["automountServiceAccountToken"],
        KUBE_ROLES.contains(&role),
        "{what}: a token only for the roles that act on the management cluster"
    );

    let c = container(d);
    assert_eq!(strs(&c["args"])[..2], ["serve", role], "{what}");

    // Probes and metrics on the health port.
    let health = c["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == "health")
        .unwrap_or_else(|| panic!("{what}: no port named health"));
    assert_eq!(health["containerPort"], 8081, "{what}");
    assert_eq!(
        env(c, "HYPERSAGA_HEALTH__LISTEN").map(|e| &e["value"]),
        Some(&json!("0.0.0.0:8081")),
        "{what}"
    );
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        assert_eq!(
            c[probe]["httpGet"],
            json!({"path": path, "port": "health"}),
            "{what}: {probe}"
        );
    }
    let annotations = &d["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true", "{what}");
    assert_eq!(annotations["prometheus.io/port"], "8081", "{what}");
    assert_eq!(annotations["prometheus.io/path"], "/metrics", "{what}");

    for kind in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                c["resources"][kind][resource].is_string(),
                "{what}: resources.{kind}.{resource}"
            );
        }
    }

    // The restricted Pod Security Standard, and a read-only root.
    let psc = &pod["securityContext"];
    assert_eq!(psc["runAsNonRoot"], true, "{what}");
    assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault", "{what}");
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true, "{what}");
    assert_eq!(sc["allowPrivilegeEscalation"], false, "{what}");
    assert_eq!(sc["readOnlyRootFilesystem"], true, "{what}");
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{what}");
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{what}");
    assert!(
        sc["privileged"].is_null() || sc["privileged"] == false,
        "{what}"
    );

    // Its own nkey, where `nats.credentials_dir` says, and no other role's; the gateway also
    // the auth callout's user and issuer, which it alone holds. No other Secret but its own and
    // the NATS server's CA.
    let keys = secret_keys(pod);
    let seeds: BTreeSet<(&str, &str)> = keys
        .iter()
        .filter(|(_, _, k)| k.ends_with(".nk"))
        .map(|(_, s, k)| (s.as_str(), k.as_str()))
        .collect();
    let own_seed = format!("{role}.nk");
    let mut expected_seeds = BTreeSet::from([(name.as_str(), own_seed.as_str())]);
    if role == "gateway" {
        expected_seeds.extend(CALLOUT_FILES.map(|f| (name.as_str(), f)));
    }
    assert_eq!(seeds, expected_seeds, "{what}: nkeys mounted");
    for (volume, _, key) in keys.iter().filter(|(_, _, k)| k.ends_with(".nk")) {
        assert_eq!(
            mount_path(c, volume),
            "/etc/hypersaga/nats",
            "{what}: {key}"
        );
        let item = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == volume.as_str())
            .and_then(|v| v["secret"]["items"].as_array())
            .and_then(|items| items.iter().find(|i| i["key"] == key.as_str()))
            .unwrap_or_else(|| panic!("{what}: {key}"));
        assert_eq!(
            item["path"],
            key.as_str(),
            "{what}: {key} under its own name"
        );
    }
    for (volume, secret, key) in &keys {
        assert!(
            *secret == name || (secret == "nats-tls" && key == "ca.crt"),
            "{what}: reads {secret}/{key} ({volume}): a role reads only its own Secret and the NATS CA"
        );
    }
    let own: BTreeSet<&str> = keys
        .iter()
        .filter(|(_, s, _)| *s == name)
        .map(|(_, _, k)| k.as_str())
        .collect();
    let mut expected = BTreeSet::from([format!("{role}.nk")]);
    match role {
        "gateway" => expected.extend(
            ["tls.crt", "tls.key"]
                .into_iter()
                .chain(CALLOUT_FILES)
                .map(String::from),
        ),
        "identity" => expected.extend([
            "config.json".into(),
            "federation-key.pem".into(),
            "blob-account-key".into(),
            "signing-keys-account-key".into(),
        ]),
        "network" | "dns" | "nodepool" => {
            expected.extend(["config.json".into(), "federation-key.pem".into()])
        }
        "controlplane" => {
            expected.extend(["signing-keys-account-key".into(), "pull-secret".into()])
        }
        _ => {}
    }
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(own, expected, "{what}: the keys of its Secret it reads");

    // Its configuration file is in a mounted volume.
    let config = strs(&c["args"])
        .windows(2)
        .find(|w| w[0] == "--config")
        .map(|w| w[1].to_owned())
        .expect("--config");
    let file = if TENANT_AZURE_ROLES.contains(&role) {
        "config.json"
    } else {
        "config.toml"
    };
    assert_eq!(config, format!("/etc/hypersaga/config/{file}"), "{what}");
    assert_eq!(mount_path(c, "config"), "/etc/hypersaga/config", "{what}");

    // The federation key, where `federation.signing_key_file` says, for the roles that call
    // Azure as a tenant; no other role has it.
    let federation: Vec<_> = keys
        .iter()
        .filter(|(_, _, k)| k == "federation-key.pem")
        .collect();
    if TENANT_AZURE_ROLES.contains(&role) {
        assert_eq!(federation.len(), 1, "{what}: {federation:?}");
        let volume = &federation[0].0;
        let item = &pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == volume.as_str())
            .unwrap()["secret"]["items"][0];
        assert_eq!(
            format!(
                "{}/{}",
                mount_path(c, volume),
                item["path"].as_str().unwrap()
            ),
            FEDERATION_KEY_FILE,
            "{what}"
        );
    } else {
        assert!(federation.is_empty(), "{what}: {federation:?}");
    }

    let pdb = r.get("PodDisruptionBudget", &name);
    assert_eq!(pdb["spec"]["maxUnavailable"], 1, "{what}");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"], d["spec"]["selector"]["matchLabels"],
        "{what}"
    );
}

fn check_nats(r: &Rendered) {
    let what = r.overlay;
    let sts = r.get("StatefulSet", "nats");
    let servers = if r.production() { 3 } else { 1 };
    assert_eq!(sts["spec"]["replicas"], servers, "{what}");
    assert_eq!(sts["spec"]["serviceName"], "nats-headless", "{what}");
    assert_eq!(sts["spec"]["podManagementPolicy"], "Parallel", "{what}");
    let pod = &sts["spec"]["template"]["spec"];
    let c = container(sts);
    let image = c["image"].as_str().expect("image");
    assert!(image.starts_with("nats:2.12."), "{what}: {image}");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{what}");
    assert_eq!(
        c["securityContext"]["readOnlyRootFilesystem"], true,
        "{what}"
    );
    assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(mount_path(c, "data"), "/data", "{what}");
    assert_eq!(
        sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"], "data",
        "{what}"
    );
    if r.production() {
        let required = &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [0];
        assert_eq!(required["topologyKey"], "kubernetes.io/hostname", "{what}");
    }
    let keys = secret_keys(pod);
    assert!(keys.contains(&(
        "auth".into(),
        "nats-auth".into(),
        "authorization.conf".into()
    )));
    for key in ["tls.crt", "tls.key", "ca.crt"] {
        assert!(
            keys.contains(&("tls".into(), "nats-tls".into(), key.into())),
            "{key}"
        );
    }
    assert_eq!(
        r.get("Service", "nats-headless")["spec"]["clusterIP"],
        "None",
        "{what}"
    );
    assert_eq!(r.get("Service", "nats")["spec"]["ports"][0]["port"], 4222);
    assert_eq!(
        r.get("PodDisruptionBudget", "nats")["spec"]["maxUnavailable"],
        1
    );

    let conf = r.config_map("nats-config")["data"]["nats.conf"]
        .as_str()
        .expect("nats.conf");
    let lines: Vec<&str> = conf.lines().map(str::trim).collect();
    assert!(lines.contains(&"sync_interval: always"), "{what}: {conf}");
    assert!(lines.contains(&"include ../auth/authorization.conf"));
    // The included file declares the system account the auth callout lives in; declared here
    // too, nats-server would refuse the configuration.
    for declared in ["accounts", "system_account"] {
        assert!(
            !lines.iter().any(|l| l.starts_with(declared)),
            "{what}: nats.conf declares {declared} of its own"
        );
    }
    assert!(lines.contains(&"tls {"));
    let routes = lines
        .iter()
        .filter(|l| l.starts_with("tls://nats-"))
        .count();
    assert_eq!(
        routes,
        if servers > 1 { servers } else { 0 },
        "{what}: routes"
    );
    assert_eq!(lines.contains(&"cluster {"), servers > 1, "{what}");
    nats_server_accepts(conf, Layout::Kubernetes);
}

/// An overlay's config.toml with the placeholders that are not valid values (on purpose: a
/// configuration left so does not load) filled in: the admin's token digest.
fn filled_in_config(r: &Rendered) -> String {
    let config = r.config_map("hypersaga-config")["data"]["config.toml"]
        .as_str()
        .expect("config.toml");
    let placeholder = "sha256:REPLACE-with-the-digest-hypersaga-token-new-prints";
    assert_eq!(config.matches(placeholder).count(), 1, "{}", r.overlay);
    config.replace(
        placeholder,
        &hypersaga_config::TokenDigest::of("hsadmin_0123456789abcdef").to_string(),
    )
}

/// A tenant declared in the configuration (the overlays declare none: tenants are onboarded
/// through the admin API), as an operator would append it.
fn declared_tenant(id: &str) -> String {
    format!(
        "\n[[tenants]]\nid = \"{id}\"\ntokens = [\"{}\"]\n[tenants.azure]\n\
         tenant_id = \"d79e5b4a-ebeb-485b-a861-e2838886f47a\"\n\
         subscription_id = \"2c90511f-a4a8-459d-b9a8-5a1d1af778c5\"\n\
         client_id = \"ab9ad434-424f-4e2f-8a70-761d4d41e057\"\n",
        hypersaga_config::TokenDigest::of(&format!("hs_{id}_0123456789abcdef"))
    )
}

/// The `[nats]` section of hypersaga's configuration agrees with the manifests; the file
/// loads in hypersaga (placeholders aside).
fn check_config(r: &Rendered) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, filled_in_config(r)).unwrap();
    let config: Value = serde_json::from_str(&run(hypersaga()
        .env_clear()
        .args(["serve", "gateway", "--dump-config", "--config"])
        .arg(&path)))
    .unwrap();
    let what = r.overlay;
    let nats = &config["nats"];
    assert_eq!(
        nats["replicas"],
        if r.production() { 3 } else { 1 },
        "{what}"
    );
    assert_eq!(nats["url"], "nats://nats:4222", "{what}");
    assert_eq!(nats["credentials_dir"], "/etc/hypersaga/nats", "{what}");
    let gateway = r.get("Deployment", "hypersaga-gateway");
    let c = container(gateway);
    assert_eq!(
        nats["ca_file"],
        format!("{}/ca.crt", mount_path(c, "nats-ca")),
        "{what}"
    );
    let tls = mount_path(c, "tls");
    assert_eq!(
        config["gateway"]["tls"],
        json!({"cert_file": format!("{tls}/tls.crt"), "key_file": format!("{tls}/tls.key"),
               "client_ca_file": null, "require_client_cert": false}),
        "{what}"
    );
    assert_eq!(config["gateway"]["listen"], "0.0.0.0:50051", "{what}");
    assert!(config["kube"]["kubeconfig"].is_null(), "{what}: in-cluster");
    // Tenants are onboarded through the admin API, by its admins; none is declared, so no
    // client secret is anywhere.
    assert_eq!(config["tenants"], json!([]), "{what}");
    let admins = config["gateway"]["admins"].as_array().unwrap();
    assert_eq!(admins.len(), 1, "{what}");
    assert!(
        strs(&admins[0]["tokens"])[0].starts_with("sha256:"),
        "{what}"
    );
    // hypersaga's own issuer, and its key where the roles that call Azure mount it.
    let federation = &config["federation"];
    assert_eq!(
        federation["signing_key_file"], FEDERATION_KEY_FILE,
        "{what}"
    );
    let issuer = federation["issuer"].as_str().unwrap();
    assert!(
        issuer.starts_with("https://") && !issuer.ends_with('/'),
        "{what}: {issuer}"
    );
    assert_eq!(
        federation["audience"], "api://AzureADTokenExchange",
        "{what}"
    );
    assert!(!config.to_string().contains("client_secret"), "{what}");
    let service = r.get("Service", "hypersaga-gateway");
    assert_eq!(service["spec"]["ports"][0]["port"], 50051);
}

/// The label selector of a NetworkPolicy or PDB matches `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let by_labels = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels[k] == *v);
    let by_expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let value = &labels[e["key"].as_str().unwrap()];
            match e["operator"].as_str().unwrap() {
                "In" => e["values"].as_array().unwrap().contains(value),
                "NotIn" => !e["values"].as_array().unwrap().contains(value),
                "Exists" => !value.is_null(),
                "DoesNotExist" => value.is_null(),
                op => panic!("operator {op}"),
            }
        });
    by_labels && by_expressions
}

/// The TCP/UDP ports `labels` may reach (egress) or be reached on (ingress), by the policies
/// that select it. A rule without ports would allow every port: none may have one.
fn allowed_ports(r: &Rendered, labels: &Value, direction: &str) -> BTreeSet<u64> {
    let policy_type = if direction == "egress" {
        "Egress"
    } else {
        "Ingress"
    };
    let mut ports = BTreeSet::new();
    let mut isolated = false;
    for p in r.all("NetworkPolicy") {
        if !selects(&p["spec"]["podSelector"], labels) {
            continue;
        }
        if strs(&p["spec"]["policyTypes"]).contains(&policy_type) {
            isolated = true;
        }
        for rule in p["spec"][direction].as_array().into_iter().flatten() {
            let rule_ports = rule["ports"].as_array().unwrap_or_else(|| {
                panic!("{}: {} allows every port", r.overlay, p["metadata"]["name"])
            });
            ports.extend(rule_ports.iter().map(|p| p["port"].as_u64().unwrap()));
        }
    }
    assert!(
        isolated,
        "{}: {labels} is not isolated for {direction}",
        r.overlay
    );
    ports
}

fn check_network_policies(r: &Rendered) {
    let deny = r.get("NetworkPolicy", "default-deny");
    assert_eq!(deny["spec"]["podSelector"], json!({}));
    assert_eq!(strs(&deny["spec"]["policyTypes"]), ["Ingress", "Egress"]);
    assert!(deny["spec"]["ingress"].is_null() && deny["spec"]["egress"].is_null());
    for role in ROLES {
        let labels = &r.get("Deployment", &format!("hypersaga-{role}"))["spec"]["template"]["metadata"]
            ["labels"];
        let mut egress = BTreeSet::from([53, 4222]);
        if AZURE_ROLES.contains(&role) {
            egress.insert(443);
        }
        if KUBE_ROLES.contains(&role) {
            egress.extend([443, 6443]);
        }
        assert_eq!(
            allowed_ports(r, labels, "egress"),
            egress,
            "{}: {role} egress",
            r.overlay
        );
        let mut ingress = BTreeSet::from([8081]);
        if role == "gateway" {
            ingress.insert(50051);
        }
        assert_eq!(
            allowed_ports(r, labels, "ingress"),
            ingress,
            "{}: {role} ingress",
            r.overlay
        );
    }
    let nats = &r.get("StatefulSet", "nats")["spec"]["template"]["metadata"]["labels"];
    assert_eq!(
        allowed_ports(r, nats, "ingress"),
        BTreeSet::from([4222, 6222])
    );
    assert_eq!(allowed_ports(r, nats, "egress"), BTreeSet::from([53, 6222]));
    // 4222 from the roles only, 6222 from the servers only.
    let policy = r.get("NetworkPolicy", "nats");
    for rule in policy["spec"]["ingress"].as_array().unwrap() {
        let port = &rule["ports"][0]["port"];
        let from = &rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"];
        let expected = if *port == 4222 { "hypersaga" } else { "nats" };
        assert_eq!(from, expected, "{}: nats ingress on {port}", r.overlay);
    }
}

/// What a ClusterRole grants: (API group, resource) → verbs.
fn grants(role: &Value) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for rule in role["rules"].as_array().expect("rules") {
        assert!(rule["nonResourceURLs"].is_null(), "no non-resource URLs");
        for group in strs(&rule["apiGroups"]) {
            for resource in strs(&rule["resources"]) {
                out.entry((group.to_owned(), resource.to_owned()))
                    .or_default()
                    .extend(strs(&rule["verbs"]).into_iter().map(str::to_owned));
            }
        }
    }
    out
}

fn grant(group: &str, resource: &str, verbs: &[&str]) -> ((String, String), BTreeSet<String>) {
    (
        (group.to_owned(), resource.to_owned()),
        verbs.iter().map(|v| (*v).to_owned()).collect(),
    )
}

/// What one service's management-cluster code touches, read from its source and from the
/// shared glue it calls (`crates/stepkit/src/kube.rs`): the kinds of its typed `Api<K>`s and
/// the plurals of its dynamic `ApiResource`s, and which calls beyond get, server-side apply and
/// delete it makes.
fn kube_use(dir: &str) -> (BTreeSet<String>, BTreeSet<&'static str>) {
    const CALLS: [&str; 10] = [
        "ListParams",
        "WatchParams",
        "watcher(",
        "PostParams",
        "delete_collection",
        "patch_status",
        "replace_status",
        "Patch::Merge",
        "Patch::Json",
        "Patch::Strategic",
    ];
    let (mut kinds, mut calls) = (BTreeSet::new(), BTreeSet::new());
    let files = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .chain([root().join("crates/stepkit/src/kube.rs")]);
    for file in files {
        let code = std::fs::read_to_string(file).unwrap();
        for part in code.split("Api<").skip(1) {
            let kind = part.split(['>', '<']).next().unwrap().trim();
            if !["K", "DynamicObject"].contains(&kind) {
                kinds.insert(kind.to_owned());
            }
        }
        for part in code.split("plural: \"").skip(1) {
            kinds.insert(part.split('"').next().unwrap().to_owned());
        }
        calls.extend(CALLS.into_iter().filter(|c| code.contains(c)));
    }
    (kinds, calls)
}

/// The ClusterRoles below are held to this: a kind or a call the code starts using fails
/// here until rbac.yaml grants it and this table says so.
fn kube_code_is_what_the_cluster_roles_grant() {
    let set = |v: &[&str]| {
        v.iter()
            .map(|s| (*s).to_owned())
            .collect::<BTreeSet<String>>()
    };
    assert_eq!(
        kube_use("services/controlplane/src"),
        (
            set(&[
                "ConfigMap",
                "HostedCluster",
                "Namespace",
                "Secret",
                "objectdeployments",
                "objectsets"
            ]),
            BTreeSet::from(["ListParams"])
        ),
        "the controlplane role's kinds and calls: keep hypersaga-controlplane's rules in step"
    );
    assert_eq!(
        kube_use("services/nodepool/src"),
        (
            set(&["NodePool", "machines"]),
            BTreeSet::from(["ListParams"])
        ),
        "the nodepool role's kinds and calls: keep hypersaga-nodepool's rules in step"
    );
}

fn check_rbac(r: &Rendered) {
    let prefix = if r.production() {
        "hypersaga"
    } else {
        "hypersaga-dev"
    };
    let object = ["get", "create", "patch", "delete"];
    // What the sweeper lists by hypersaga's labels, too.
    let listed = ["get", "list", "create", "patch", "delete"];
    let expected = [
        (
            "controlplane",
            BTreeMap::from([
                grant("", "namespaces", &listed),
                grant("", "secrets", &["create", "patch", "delete"]),
                grant("hypershift.openshift.io", "hostedclusters", &listed),
                grant("package-operator.run", "objectdeployments", &object),
                grant("package-operator.run", "objectsets", &["list"]),
                grant("", "configmaps", &["get"]),
            ]),
        ),
        (
            "nodepool",
            BTreeMap::from([
                grant("hypershift.openshift.io", "nodepools", &listed),
                grant("cluster.x-k8s.io", "machines", &["list"]),
            ]),
        ),
    ];
    for (role, want) in expected {
        let name = format!("{prefix}-{role}");
        let cluster_role = r.get("ClusterRole", &name);
        assert!(cluster_role["aggregationRule"].is_null());
        let got = grants(cluster_role);
        assert_eq!(got, want, "{}: ClusterRole {name}", r.overlay);
        for rule in cluster_role["rules"].as_array().unwrap() {
            // Config maps are HyperShift's to keep: one, by name.
            if strs(&rule["resources"]).contains(&"configmaps") {
                assert_eq!(
                    strs(&rule["resourceNames"]),
                    ["supported-versions"],
                    "{}: {name} reads one config map",
                    r.overlay
                );
            }
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(
                    !strs(&rule[field]).contains(&"*"),
                    "{}: {name} has a wildcard",
                    r.overlay
                );
            }
        }
        let binding = r.get("ClusterRoleBinding", &name);
        assert_eq!(binding["roleRef"]["name"], name);
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": format!("hypersaga-{role}"),
                    "namespace": r.namespace()}]),
            "{}",
            r.overlay
        );
    }
    assert_eq!(r.all("ClusterRole").count(), 2, "{}", r.overlay);
    assert_eq!(r.all("ClusterRoleBinding").count(), 2, "{}", r.overlay);
    assert_eq!(r.all("Role").count() + r.all("RoleBinding").count(), 0);
}

fn check_overlay(overlay: &'static str) {
    let r = Rendered::of(overlay);
    for role in ROLES {
        check_role(&r, role);
    }
    check_nats(&r);
    check_config(&r);
    check_network_policies(&r);
    check_rbac(&r);
    let ns = r.get("Namespace", r.namespace());
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    for o in &r.objects {
        let kind = o["kind"].as_str().unwrap();
        if !["Namespace", "ClusterRole", "ClusterRoleBinding"].contains(&kind) {
            assert_eq!(o["metadata"]["namespace"], r.namespace(), "{kind}");
        }
        assert!(
            kind != "Secret",
            "{overlay}: the overlays hold no Secrets; the operator makes them"
        );
    }
}

#[test]
fn the_dev_overlay_renders_one_nats_server_and_one_replica_of_each_role() {
    check_overlay("dev");
}

#[test]
fn the_production_overlay_renders_three_nats_servers_and_two_replicas_of_each_role() {
    check_overlay("production");
}

#[test]
fn the_cluster_roles_cover_what_the_management_cluster_code_does() {
    kube_code_is_what_the_cluster_roles_grant();
}

#[test]
fn the_mgmt_kubeconfig_component_points_controlplane_and_nodepool_at_a_kubeconfig() {
    // An overlay of production with the component, outside the tree (kustomize takes
    // relative paths only).
    let dir = tempfile::tempdir().unwrap();
    let rel = |p: &str| {
        let target = std::fs::canonicalize(root().join(p)).unwrap();
        let up = dir.path().components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(up),
            target.strip_prefix("/").unwrap().display()
        )
    };
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "resources: [{}]\ncomponents: [{}]\n",
            rel("deploy/kustomize/overlays/production"),
            rel("deploy/kustomize/components/mgmt-kubeconfig")
        ),
    )
    .unwrap();
    let r = Rendered {
        overlay: "production+mgmt-kubeconfig",
        objects: yaml_documents(&run(Command::new("kubectl")
            .arg("kustomize")
            .arg(dir.path()))),
    };
    assert_eq!(r.all("ClusterRole").count(), 0);
    assert_eq!(r.all("ClusterRoleBinding").count(), 0);
    for role in KUBE_ROLES {
        let d = r.get("Deployment", &format!("hypersaga-{role}"));
        let c = container(d);
        let path = env(c, "HYPERSAGA_KUBE__KUBECONFIG").unwrap()["value"]
            .as_str()
            .unwrap();
        assert_eq!(format!("{}/kubeconfig", mount_path(c, "kubeconfig")), path);
        assert_eq!(
            d["spec"]["template"]["spec"]["automountServiceAccountToken"],
            false
        );
        let keys = secret_keys(&d["spec"]["template"]["spec"]);
        assert!(keys.contains(&(
            "kubeconfig".into(),
            format!("hypersaga-{role}"),
            "kubeconfig".into()
        )));
    }
}

/// The files an operator gives `create-secrets.sh`, in `d` (deploy/README.md, *Secrets*).
fn operator_files(d: &Path, r: &Rendered) {
    std::fs::write(d.join("config.toml"), filled_in_config(r)).unwrap();
    run(hypersaga()
        .args(["bus", "credentials", "--out"])
        .arg(d.join("bus")));
    run(hypersaga()
        .args(["emulator", "certs", "--name", "hypersaga-gateway", "--out"])
        .arg(d.join("tls")));
    let key = hypersaga_oidc::SigningKey::generate().unwrap();
    std::fs::write(d.join("federation-key.pem"), key.private_key_pem()).unwrap();
    std::fs::write(d.join("blob-account-key"), "a2V5\n").unwrap();
    std::fs::write(d.join("signing-keys-account-key"), "a2V5cw==\n").unwrap();
    std::fs::write(
        d.join("pull-secret.json"),
        r#"{"auths":{"quay.io":{"auth":"dTpw"}}}"#,
    )
    .unwrap();
    std::fs::write(d.join("mgmt.kubeconfig"), "apiVersion: v1\nkind: Config\n").unwrap();
}

/// `create-secrets.sh` run in `d` on `operator_files`, with `extra` arguments: its Secrets by
/// name, or its failure's message.
fn create_secrets(d: &Path, extra: &[&str]) -> Result<BTreeMap<String, Value>, String> {
    let out = Command::new(root().join("deploy/kustomize/create-secrets.sh"))
        .env("HYPERSAGA", env!("CARGO_BIN_EXE_hypersaga"))
        .current_dir(d)
        .args(["--namespace", "hypersaga", "--config", "config.toml"])
        .args(["--bus", "bus", "--federation-key", "federation-key.pem"])
        .args(["--blob-account-key", "blob-account-key"])
        .args(["--signing-keys-account-key", "signing-keys-account-key"])
        .args(["--pull-secret", "pull-secret.json"])
        .args([
            "--gateway-cert",
            "tls/server.pem",
            "--gateway-key",
            "tls/server-key.pem",
        ])
        .args([
            "--nats-cert",
            "tls/server.pem",
            "--nats-key",
            "tls/server-key.pem",
        ])
        .args(["--nats-ca", "tls/ca.pem", "--kubeconfig", "mgmt.kubeconfig"])
        .args(extra)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(yaml_documents(&String::from_utf8(out.stdout).unwrap())
        .into_iter()
        .map(|s| {
            assert_eq!(s["kind"], "Secret");
            assert_eq!(s["metadata"]["namespace"], "hypersaga");
            (s["metadata"]["name"].as_str().unwrap().to_owned(), s)
        })
        .collect())
}

fn secret_data(secrets: &BTreeMap<String, Value>, name: &str, key: &str) -> String {
    base64_decode(
        secrets[name]["data"][key]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no {key}")),
    )
}

/// The Secrets `create-secrets.sh` makes hold exactly what the production overlay reads, and
/// the configuration it gives identity, network, dns and nodepool loads; no Secret holds a
/// client secret (the overlay's configuration declares no tenant, and none was given); the
/// gateway's alone holds the auth callout's user and issuer, and the roles that call Azure
/// as a tenant the federation key.
#[test]
fn create_secrets_makes_the_secrets_the_manifests_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let r = Rendered::of("production");
    operator_files(d, &r);
    let secrets = create_secrets(d, &[]).unwrap_or_else(|e| panic!("{e}"));
    let keys = |name: &str| -> BTreeSet<String> {
        secrets[name]["data"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let data = |name: &str, key: &str| secret_data(&secrets, name, key);
    let file = |path: &str| std::fs::read_to_string(d.join(path)).unwrap();

    // Every key a role reads is in its Secret, and nothing more (the kubeconfig aside, which
    // only the mgmt-kubeconfig component reads).
    for role in ROLES {
        let name = format!("hypersaga-{role}");
        let pod = &r.get("Deployment", &name)["spec"]["template"]["spec"];
        let mut read: BTreeSet<String> = secret_keys(pod)
            .into_iter()
            .filter(|(_, s, _)| *s == name)
            .map(|(_, _, k)| k)
            .collect();
        if KUBE_ROLES.contains(&role) {
            read.insert("kubeconfig".into());
        }
        assert_eq!(keys(&name), read, "{name}");
        assert_eq!(
            data(&name, &format!("{role}.nk")),
            file(&format!("bus/{role}.nk"))
        );
        // The auth callout's files in the gateway's Secret only.
        for callout in CALLOUT_FILES {
            assert_eq!(keys(&name).contains(callout), role == "gateway", "{name}");
        }
        // The federation key in those of the roles that call Azure as a tenant.
        if TENANT_AZURE_ROLES.contains(&role) {
            assert_eq!(
                data(&name, "federation-key.pem"),
                file("federation-key.pem")
            );
            // Their configuration: the ConfigMap's, without any client secret.
            let config = data(&name, "config.json");
            assert!(!config.contains("client_secret"), "{name}: {config}");
        } else {
            assert!(!keys(&name).contains("federation-key.pem"), "{name}");
        }
    }
    for callout in CALLOUT_FILES {
        assert_eq!(
            data("hypersaga-gateway", callout),
            file(&format!("bus/{callout}"))
        );
    }
    assert!(
        secrets
            .values()
            .all(|s| !s["data"].as_object().unwrap().contains_key("audit.nk"))
    );
    assert_eq!(
        keys("nats-auth"),
        BTreeSet::from(["authorization.conf".into()])
    );
    // The server's authorization: the callout block, trusting the issuer the gateway holds.
    let auth = data("nats-auth", "authorization.conf");
    assert_callout_block(&auth, &d.join("bus"));
    assert_eq!(
        keys("nats-tls"),
        BTreeSet::from(["ca.crt".into(), "tls.crt".into(), "tls.key".into()])
    );
    assert_eq!(data("hypersaga-identity", "blob-account-key"), "a2V5");
    assert_eq!(
        data("hypersaga-identity", "signing-keys-account-key"),
        "a2V5cw=="
    );
    // controlplane reads a tenant's key, and cannot publish issuers.
    assert_eq!(
        data("hypersaga-controlplane", "signing-keys-account-key"),
        "a2V5cw=="
    );
    assert!(!keys("hypersaga-controlplane").contains("blob-account-key"));

    // identity's configuration loads as such.
    std::fs::write(
        d.join("config.json"),
        data("hypersaga-identity", "config.json"),
    )
    .unwrap();
    let loaded: Value = serde_json::from_str(&run(hypersaga()
        .env_clear()
        .env("HYPERSAGA_BLOB__ACCOUNT_KEY", "a2V5")
        .env("HYPERSAGA_SIGNING_KEYS__ACCOUNT_KEY", "a2V5cw==")
        .args(["serve", "identity", "--dump-config", "--config"])
        .arg(d.join("config.json"))))
    .unwrap();
    assert_eq!(loaded["tenants"], json!([]));
    assert_eq!(
        loaded["federation"]["signing_key_file"],
        FEDERATION_KEY_FILE
    );
    assert_eq!(loaded["blob"]["account_key"], "***");
    assert_eq!(loaded["signing_keys"]["account_key"], "***");
    assert_eq!(loaded["nats"]["replicas"], 3);
}

/// A tenant declared in config.toml reaches Azure through federation, unless the operator
/// gives its client secret (`--client-secrets`): then that secret is in the configuration of
/// the roles that call Azure, beside its tenant, and nowhere else.
#[test]
fn create_secrets_puts_a_client_secret_only_where_one_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let r = Rendered::of("production");
    operator_files(d, &r);
    let mut config = filled_in_config(&r);
    config.push_str(&declared_tenant("acme"));
    config.push_str(&declared_tenant("globex"));
    std::fs::write(d.join("config.toml"), &config).unwrap();

    // Without --client-secrets: none, anywhere.
    let secrets = create_secrets(d, &[]).unwrap_or_else(|e| panic!("{e}"));
    for role in TENANT_AZURE_ROLES {
        let config: Value = serde_json::from_str(&secret_data(
            &secrets,
            &format!("hypersaga-{role}"),
            "config.json",
        ))
        .unwrap();
        assert_eq!(config["tenants"].as_array().unwrap().len(), 2, "{role}");
        assert!(!config.to_string().contains("client_secret"), "{role}");
    }

    // One tenant's, given: there, beside that tenant only.
    std::fs::create_dir(d.join("client-secrets")).unwrap();
    std::fs::write(d.join("client-secrets/acme"), "s3cr\"et~\n").unwrap();
    let secrets = create_secrets(d, &["--client-secrets", "client-secrets"])
        .unwrap_or_else(|e| panic!("{e}"));
    for role in TENANT_AZURE_ROLES {
        let config: Value = serde_json::from_str(&secret_data(
            &secrets,
            &format!("hypersaga-{role}"),
            "config.json",
        ))
        .unwrap();
        assert_eq!(config["tenants"][0]["id"], "acme", "{role}");
        assert_eq!(
            config["tenants"][0]["azure"]["client_secret"], "s3cr\"et~",
            "{role}"
        );
        assert!(
            config["tenants"][1]["azure"]["client_secret"].is_null(),
            "{role}"
        );
    }
    for (name, secret) in &secrets {
        if !TENANT_AZURE_ROLES
            .iter()
            .any(|r| *name == format!("hypersaga-{r}"))
        {
            for key in secret["data"].as_object().unwrap().keys() {
                assert!(
                    !secret_data(&secrets, name, key).contains("s3cr"),
                    "{name}/{key}"
                );
            }
        }
    }
    // The roles load it, the secret hidden.
    std::fs::write(
        d.join("config.json"),
        secret_data(&secrets, "hypersaga-network", "config.json"),
    )
    .unwrap();
    let loaded: Value = serde_json::from_str(&run(hypersaga()
        .env_clear()
        .args(["serve", "network", "--dump-config", "--config"])
        .arg(d.join("config.json"))))
    .unwrap();
    assert_eq!(loaded["tenants"][0]["azure"]["client_secret"], "***");

    // A file naming no declared tenant is refused (a typo would otherwise go unnoticed).
    std::fs::write(d.join("client-secrets/acmee"), "x\n").unwrap();
    let refused = create_secrets(d, &["--client-secrets", "client-secrets"]).unwrap_err();
    assert!(refused.contains("declares no tenant acmee"), "{refused}");
    std::fs::remove_file(d.join("client-secrets/acmee")).unwrap();

    // So is a configuration that does not say where the federation key is mounted.
    std::fs::write(
        d.join("config.toml"),
        config.replace(FEDERATION_KEY_FILE, "/somewhere/else.pem"),
    )
    .unwrap();
    let refused = create_secrets(d, &[]).unwrap_err();
    assert!(refused.contains("federation.signing_key_file"), "{refused}");
    // And one holding a secret itself.
    std::fs::write(
        d.join("config.toml"),
        config.replace(
            "client_id = \"ab9ad434-424f-4e2f-8a70-761d4d41e057\"\n",
            "client_id = \"ab9ad434-424f-4e2f-8a70-761d4d41e057\"\nclient_secret = \"x\"\n",
        ),
    )
    .unwrap();
    let refused = create_secrets(d, &[]).unwrap_err();
    assert!(refused.contains("holds a secret"), "{refused}");
}

/// The authorization `hypersaga bus credentials` wrote to `bus`: its static users bypass the
/// auth callout, which runs in the system account SYS (declared there, with the callout's
/// user alone) and whose answers must be signed by the issuer whose seed is
/// `bus/callout-issuer.nk`.
fn assert_callout_block(auth: &str, bus: &Path) {
    let issuer = hypersaga_bus::callout::Issuer::load(bus).unwrap();
    let lines: Vec<&str> = auth.lines().map(str::trim).collect();
    assert!(lines.contains(&"system_account: SYS"), "{auth}");
    assert!(lines.contains(&"auth_callout {"), "{auth}");
    assert!(lines.contains(&"account: SYS"), "{auth}");
    assert!(
        lines.contains(&format!("issuer: \"{}\"", issuer.public_key()).as_str()),
        "{auth}"
    );
    let system =
        &auth[auth.find("accounts {").expect("accounts")..auth.find("system_account").unwrap()];
    let users: Vec<&str> = system
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("# "))
        .collect();
    assert_eq!(users, ["# callout"], "the system account's users: {system}");
    let auth_users = lines
        .iter()
        .find_map(|l| l.strip_prefix("auth_users: ["))
        .expect("auth_users");
    // Every static user (the seven roles, the platform's audit reader, the callout's).
    assert_eq!(auth_users.matches("\"U").count(), 9, "{auth_users}");
}

/// Where a nats-server configuration expects its files.
#[derive(Clone, Copy)]
enum Layout {
    /// /etc/nats/{config,auth,tls}/ (the StatefulSet's mounts).
    Kubernetes,
    /// /etc/nats/nats.conf beside the compose volume at /etc/nats/state.
    Compose,
}

/// nats-server accepts `conf` (`-t`) with a real authorization.conf from `hypersaga bus
/// credentials` and real certificates, laid out where the container has them.
fn nats_server_accepts(conf: &str, layout: Layout) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let etc = base.join("etc/nats");
    let (conf_path, auth, tls) = match layout {
        Layout::Kubernetes => (
            etc.join("config/nats.conf"),
            etc.join("auth"),
            etc.join("tls"),
        ),
        Layout::Compose => (
            etc.join("nats.conf"),
            etc.join("state/bus"),
            etc.join("state/tls"),
        ),
    };
    run(hypersaga().args(["bus", "credentials", "--out"]).arg(&auth));
    assert_callout_block(
        &std::fs::read_to_string(auth.join("authorization.conf")).unwrap(),
        &auth,
    );
    run(hypersaga()
        .args(["emulator", "certs", "--name", "nats", "--out"])
        .arg(&tls));
    if let Layout::Kubernetes = layout {
        std::fs::copy(tls.join("server.pem"), tls.join("tls.crt")).unwrap();
        std::fs::copy(tls.join("server-key.pem"), tls.join("tls.key")).unwrap();
        std::fs::copy(tls.join("ca.pem"), tls.join("ca.crt")).unwrap();
    }
    let local = conf
        .replace("/etc/nats/", &format!("{}/", etc.display()))
        .replace("/var/run/nats/", &format!("{}/", base.display()))
        .replace(
            "store_dir: /data",
            &format!("store_dir: {}/data", base.display()),
        );
    std::fs::create_dir_all(conf_path.parent().unwrap()).unwrap();
    std::fs::write(&conf_path, local).unwrap();
    let bin = std::env::var("NATS_SERVER_BIN").unwrap_or_else(|_| "nats-server".into());
    run(Command::new(bin)
        .env("POD_NAME", "nats-0")
        .arg("-t")
        .arg("-c")
        .arg(&conf_path));
}

/// compose.yaml with its merge keys (`<<: *anchor`) applied.
fn compose() -> Value {
    let text = std::fs::read_to_string(root().join("compose.yaml")).unwrap();
    let mut yaml: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    // A merged anchor may hold a merge key itself: apply until none is left.
    for _ in 0..4 {
        yaml.apply_merge().unwrap();
    }
    let value = serde_json::to_value(&yaml).unwrap();
    assert!(!text.is_empty() && !value.to_string().contains("\"<<\""));
    value
}

#[test]
fn every_command_in_compose_is_one_hypersaga_accepts() {
    let compose = compose();
    let services = compose["services"].as_object().unwrap();
    let mut ours = 0;
    for (name, service) in services {
        for volume in strs(&service["volumes"]) {
            if let Some(source) = volume.strip_prefix("./") {
                let file = source.split(':').next().unwrap();
                assert!(root().join(file).exists(), "{name}: {file} does not exist");
            }
        }
        if service["image"] != "hypersaga:dev" {
            continue;
        }
        ours += 1;
        assert_eq!(service["build"]["target"], "dev", "{name}");
        let command = strs(&service["command"]);
        assert!(!command.is_empty(), "{name}: no command");
        // Every flag and value is parsed before --help is acted on: a flag the command lacks
        // or a value it refuses fails here.
        let help = run(hypersaga().args(&command).arg("--help"));
        assert!(help.contains("Usage: hypersaga"), "{name}: {help}");
    }
    assert_eq!(ours, 12, "one-shots, emulators, seven roles and the client");
    for role in ROLES {
        let service = &services[role];
        assert_eq!(
            strs(&service["command"]),
            ["serve", role, "--config", "/etc/hypersaga/config.toml"],
            "{role}"
        );
    }
    assert_eq!(services["coordinator"]["deploy"]["replicas"], 2);
    // The closed bus: the server includes what `hypersaga bus credentials` wrote.
    assert_eq!(
        strs(&services["bus-credentials"]["command"])[..2],
        ["bus", "credentials"]
    );
    for dep in ["certs", "bus-credentials"] {
        assert_eq!(
            services["nats"]["depends_on"][dep]["condition"],
            "service_completed_successfully"
        );
    }
    let image = services["nats"]["image"].as_str().unwrap();
    assert!(image.starts_with("nats:2.12."), "{image}");
}

#[test]
fn the_compose_configurations_load() {
    // hypersaga's: TLS to NATS and the gateway, nkeys, token digests.
    let config: Value = serde_json::from_str(&run(hypersaga()
        .env_clear()
        .args(["serve", "gateway", "--dump-config", "--config"])
        .arg(root().join("deploy/compose/config.toml"))))
    .unwrap();
    assert_eq!(config["nats"]["credentials_dir"], "/var/lib/hypersaga/bus");
    assert_eq!(config["nats"]["ca_file"], "/var/lib/hypersaga/tls/ca.pem");
    assert!(config["gateway"]["tls"]["cert_file"].is_string());
    assert!(
        strs(&config["tenants"][0]["tokens"])[0].starts_with("sha256:"),
        "{config}"
    );
    // The token the compose file's client uses is the tenant's.
    let compose = compose();
    let token = compose["services"]["cli"]["environment"]["HYPERSAGA_TOKEN"]
        .as_str()
        .unwrap();
    assert_eq!(
        strs(&config["tenants"][0]["tokens"])[0],
        hypersaga_config::TokenDigest::of(token).to_string()
    );
    // The admin the compose file's client is, for `tenant …`.
    let admin = compose["services"]["cli"]["environment"]["HYPERSAGA_ADMIN_TOKEN"]
        .as_str()
        .unwrap();
    assert_eq!(
        strs(&config["gateway"]["admins"][0]["tokens"])[0],
        hypersaga_config::TokenDigest::of(admin).to_string()
    );
    // nats-server's: it declares no account of its own (the included file does).
    let conf = std::fs::read_to_string(root().join("deploy/compose/nats.conf")).unwrap();
    assert!(conf.lines().any(|l| l.trim() == "sync_interval: always"));
    assert!(
        !conf
            .lines()
            .any(|l| l.starts_with("accounts") || l.starts_with("system_account")),
        "{conf}"
    );
    nats_server_accepts(&conf, Layout::Compose);
}

/// deploy/config.example.toml loads (its digests and accounts filled in): a tenant without a
/// client secret, an admin, hypersaga's own issuer.
#[test]
fn the_example_configuration_loads() {
    let text = std::fs::read_to_string(root().join("deploy/config.example.toml")).unwrap();
    let mut filled = text
        .replace("<keys-account>", "hypersagakeys")
        .replace("<account>", "hypersagaissuers");
    for (i, placeholder) in [
        "sha256:replace-with-the-digest-hypersaga-token-new-prints",
        "sha256:replace-with-the-digest-of-its-audit-password",
        "sha256:replace-with-the-digest-of-an-admin-token",
    ]
    .into_iter()
    .enumerate()
    {
        assert!(text.contains(placeholder), "{placeholder}");
        filled = filled.replace(
            placeholder,
            &hypersaga_config::TokenDigest::of(&format!("token-{i}")).to_string(),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, filled).unwrap();
    let config: Value = serde_json::from_str(&run(hypersaga()
        .env_clear()
        .args(["serve", "gateway", "--dump-config", "--config"])
        .arg(&path)))
    .unwrap();
    let tenant = &config["tenants"][0];
    assert!(tenant["azure"]["client_secret"].is_null(), "{tenant}");
    assert_eq!(strs(&tenant["audit_credentials"]).len(), 1, "{tenant}");
    assert_eq!(config["gateway"]["admins"][0]["name"], "platform");
    assert_eq!(
        config["federation"]["signing_key_file"],
        FEDERATION_KEY_FILE
    );
    assert!(
        config["federation"]["issuer"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
}

/// The roles given the federation key are exactly those whose code calls Azure as a tenant
/// (builds its ARM clients, `hypersaga_stepkit::ArmClients`, which sign the client
/// assertions): a role that starts to fails here until its manifest mounts the key.
#[test]
fn the_federation_key_goes_to_the_roles_whose_code_calls_azure_as_a_tenant() {
    let mut calling = BTreeSet::new();
    for role in ROLES {
        let dir = root().join("services").join(role).join("src");
        let mut stack = vec![dir];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if std::fs::read_to_string(&path)
                    .unwrap_or_default()
                    .contains("ArmClients")
                {
                    calling.insert(role);
                }
            }
        }
    }
    assert_eq!(calling, BTreeSet::from(TENANT_AZURE_ROLES));
}

/// `deploy/federation-issuer.sh` writes the discovery document and the key set hypersaga's
/// own code makes for the same issuer and keys (`hypersaga_oidc`, which `hypersaga dev`
/// publishes): the key ids its signer puts in every assertion, for a PKCS#1 key and a PKCS#8
/// one (openssl's), both published while rotating.
#[test]
fn federation_issuer_writes_the_documents_hypersagas_signer_is_checked_against() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let new = hypersaga_oidc::SigningKey::generate().unwrap();
    std::fs::write(d.join("new.pem"), new.private_key_pem()).unwrap();
    run(Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(d.join("old.pem")));
    let old_pem = std::fs::read_to_string(d.join("old.pem")).unwrap();
    assert!(old_pem.starts_with("-----BEGIN PRIVATE KEY-----"), "PKCS#8");
    let old = hypersaga_oidc::SigningKey::from_private_key_pem(&old_pem).unwrap();
    let issuer = "https://acct.blob.core.windows.net/hypersaga-federation";
    let script = root().join("deploy/federation-issuer.sh");
    run(Command::new(&script).current_dir(d).args([
        "--issuer", issuer, "--key", "new.pem", "--key", "old.pem", "--out", "issuer",
    ]));
    let read = |path: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("issuer").join(path)).unwrap())
            .unwrap()
    };
    assert_eq!(
        read(hypersaga_oidc::DISCOVERY_PATH),
        hypersaga_oidc::discovery_document(issuer)
    );
    assert_eq!(
        read(hypersaga_oidc::JWKS_PATH),
        hypersaga_oidc::jwks(&[new.public_key(), old.public_key()])
    );
    // What Entra would refuse to match.
    for bad in [
        "https://acct.blob.core.windows.net/hypersaga-federation/",
        "http://acct.blob.core.windows.net/hypersaga-federation",
    ] {
        let out = Command::new(&script)
            .current_dir(d)
            .args(["--issuer", bad, "--key", "new.pem", "--out", "bad"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
    }
}

/// Standard base64 (a Secret's `data`), to UTF-8.
fn base64_decode(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bytes = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET.iter().position(|a| *a == c).expect("base64") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    String::from_utf8(bytes).expect("UTF-8")
}

/// `promtool`, which `scripts/setup.sh` installs (Debian's `prometheus` package).
fn promtool() -> Command {
    let found = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "promtool is not on PATH: run scripts/setup.sh (Debian's prometheus package)"
    );
    Command::new("promtool")
}

#[test]
fn the_alert_rules_load_and_pass_their_unit_tests() {
    let dir = root().join("deploy/prometheus");
    let checked = run(promtool()
        .args(["check", "rules", "rules.yaml"])
        .current_dir(&dir));
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = run(promtool()
        .args(["test", "rules", "rules.test.yaml"])
        .current_dir(&dir));
    assert!(tested.contains("SUCCESS"), "{tested}");
    // Every alert has a unit test.
    let rules: Value =
        serde_norway::from_str(&std::fs::read_to_string(dir.join("rules.yaml")).unwrap()).unwrap();
    let tests = std::fs::read_to_string(dir.join("rules.test.yaml")).unwrap();
    for rule in rules["groups"][0]["rules"].as_array().unwrap() {
        let alert = rule["alert"].as_str().expect("alert rules only");
        assert!(
            tests.contains(&format!("alertname: {alert}")),
            "{alert} has no test in rules.test.yaml"
        );
    }
}

/// The names of the `hypersaga_…` metrics `text` reads, without the suffixes Prometheus adds
/// to histograms.
fn metrics_read(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    let mut at = 0;
    while let Some(found) = text[at..].find("hypersaga_") {
        let start = at + found;
        let end = (start..bytes.len())
            .find(|&i| !(bytes[i].is_ascii_lowercase() || bytes[i] == b'_'))
            .unwrap_or(bytes.len());
        let name = &text[start..end];
        let base = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        names.insert(base.to_owned());
        at = end;
    }
    names
}

#[test]
fn the_dashboard_and_the_rules_read_only_documented_metrics() {
    let dir = root().join("deploy/prometheus");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("dashboard.json")).unwrap())
            .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut exprs = String::new();
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{panel}");
        for target in targets {
            let expr = target["expr"].as_str().expect("expr");
            assert!(expr.contains("hypersaga_"), "{expr}");
            exprs.push_str(expr);
            exprs.push('\n');
        }
    }
    // The metric table of docs/operations.md names every metric a role exports.
    let docs = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let documented: BTreeSet<String> = docs
        .lines()
        .filter(|l| l.starts_with("| `hypersaga_"))
        .flat_map(metrics_read)
        .collect();
    let rules = std::fs::read_to_string(dir.join("rules.yaml")).unwrap();
    for (file, text) in [("dashboard.json", &exprs), ("rules.yaml", &rules)] {
        let unknown: Vec<String> = metrics_read(text)
            .into_iter()
            .filter(|m| !documented.contains(m))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} reads metrics docs/operations.md does not list: {unknown:?}"
        );
    }
}
