//! The real `kubectl` (the first on PATH; `scripts/setup.sh` installs one) against the
//! emulator, asserting on what a user sees: `get` (tables, `-o wide|json|yaml`), `describe`
//! with events, `explain`, `apply --server-side` with conflicts, `wait` and `get -w`, for
//! namespaces, secrets, configmaps, HostedClusters and NodePools.
//!
//! Assertions hold for every kubectl from Debian's 1.20 to 1.33: tables are compared by
//! their cells, `explain` by the lines it prints for fields.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::common::*;
use hypersaga_emulator_mgmt::{Config, Fault, FaultKind, kubeconfig_yaml};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How long one kubectl command may take (the first in a fresh cache directory discovers
/// the API and downloads OpenAPI).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

/// What a kubectl run printed.
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// kubectl with its own kubeconfig and cache directory, removed at the end.
struct Kubectl {
    dir: PathBuf,
}

fn kubectl_on_path() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("kubectl").is_file()))
}

impl Kubectl {
    fn new(h: &Harness) -> Self {
        assert!(
            kubectl_on_path(),
            "kubectl is not on PATH: run scripts/setup.sh (it installs Debian's kubernetes-client)"
        );
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir =
            std::env::temp_dir().join(format!("hypersaga-kubectl-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        std::fs::write(
            dir.join("kubeconfig"),
            kubeconfig_yaml(&h.url, &h.ca_pem, TOKEN),
        )
        .expect("kubeconfig written");
        Self { dir }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str]) -> Out {
        let out = tokio::time::timeout(COMMAND_TIMEOUT, self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish"))
            .expect("kubectl runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs a command that must succeed; its stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed:\n{}\n{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    /// Writes a manifest; its path.
    fn manifest(&self, name: &str, obj: &Value) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, serde_json::to_vec_pretty(obj).expect("json")).expect("written");
        path.to_string_lossy().into_owned()
    }

    /// Runs `args` until stdout contains all of `wanted` (the operator works in the
    /// background); the last stdout.
    async fn until(&self, args: &[&str], wanted: &[&str]) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.run(args).await;
            if out.ok && wanted.iter().all(|w| out.stdout.contains(w)) {
                return out.stdout;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "kubectl {args:?} never showed {wanted:?}:\n{}\n{}",
                out.stdout,
                out.stderr
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A table's cells by row: columns are at least three spaces apart, cells never contain
/// more than one space in a row, and empty cells are left out.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// The row whose first cell is `name`.
fn row<'a>(table: &'a [Vec<String>], name: &str) -> &'a [String] {
    table
        .iter()
        .find(|r| r.first().is_some_and(|c| c == name))
        .unwrap_or_else(|| panic!("no row {name} in {table:?}"))
}

/// Whether `s` is an age as kubectl prints one (`5s`, `2m3s`, …).
fn is_age(s: &str) -> bool {
    s.ends_with(['s', 'm', 'h', 'd']) && s.starts_with(|c: char| c.is_ascii_digit())
}

/// A HostedCluster manifest as `hypershift create cluster` would write it: with `etcd` and
/// `networking`, which the CRD requires (the server defaults them, but older kubectl checks
/// `required` against OpenAPI before sending).
fn hc_manifest(name: &str, ns: &str) -> Value {
    let mut hc = serde_json::to_value(hosted_cluster(name, ns)).expect("json");
    hc["spec"]["etcd"] = json!({"managementType": "Managed", "managed": {"storage": {
        "type": "PersistentVolume", "persistentVolume": {"size": "8Gi"}}}});
    hc["spec"]["networking"] = json!({"networkType": "OVNKubernetes",
        "clusterNetwork": [{"cidr": "10.132.0.0/14"}], "serviceNetwork": [{"cidr": "172.31.0.0/16"}]});
    hc
}

async fn started() -> (Harness, Kubectl) {
    let h = Harness::start(Config::fast(TOKEN, Duration::from_millis(300))).await;

    let k = Kubectl::new(&h);
    (h, k)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_and_discovery() {
    let (_h, k) = started().await;
    let version: Value =
        serde_json::from_str(&k.ok(&["version", "-o", "json"]).await).expect("version json");
    assert_eq!(version["serverVersion"]["gitVersion"], "v1.33.0-hypersaga");
    let resources = rows(&k.ok(&["api-resources", "--no-headers"]).await);
    assert!(
        resources
            .iter()
            .any(|r| r[..2] == ["hostedclusters", "hc,hcs"]
                && r.last().is_some_and(|k| k == "HostedCluster")),
        "{resources:?}"
    );
    assert!(resources.iter().any(|r| r[..2] == ["nodepools", "np,nps"]));
    assert!(resources.iter().any(|r| r[..2] == ["events", "ev"]));
    assert!(resources.iter().any(|r| r[..2] == ["namespaces", "ns"]));
    // HyperShift's CRDs are in no category.
    let all = k.run(&["get", "all", "-A"]).await;
    assert!(!all.stdout.contains("hostedcluster"), "{}", all.stdout);
}

/// `kubectl create namespace|secret|configmap` go through client-go's clientset, which sends
/// protobuf bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_kinds_created_and_printed() {
    let (_h, k) = started().await;
    assert!(
        k.ok(&["create", "namespace", "team"])
            .await
            .contains("namespace/team created")
    );
    k.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "team",
        "--from-literal=password=hunter2",
    ])
    .await;
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ])
    .await;

    let ns = rows(&k.ok(&["get", "namespace", "team"]).await);
    assert_eq!(ns[0], ["NAME", "STATUS", "AGE"]);
    let team = row(&ns, "team");
    assert_eq!(team[1], "Active");
    assert!(is_age(&team[2]), "{team:?}");
    let wide = rows(&k.ok(&["get", "ns", "team", "-o", "wide"]).await);
    assert_eq!(wide[0], ["NAME", "STATUS", "AGE"]);

    let secrets = rows(&k.ok(&["get", "secrets", "-n", "team"]).await);
    assert_eq!(secrets[0], ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(row(&secrets, "creds")[1..3], ["Opaque", "1"]);
    let cms = rows(&k.ok(&["get", "cm", "-n", "team", "-o", "wide"]).await);
    assert_eq!(cms[0], ["NAME", "DATA", "AGE"]);
    assert_eq!(row(&cms, "settings")[1], "2");

    let password = k
        .ok(&[
            "get",
            "secret",
            "creds",
            "-n",
            "team",
            "-o",
            "jsonpath={.data.password}",
        ])
        .await;
    assert_eq!(password, "aHVudGVyMg==");
    let cm: Value = serde_json::from_str(
        &k.ok(&["get", "configmap", "settings", "-n", "team", "-o", "json"])
            .await,
    )
    .expect("json");
    assert_eq!(cm["data"], json!({"a": "1", "b": "2"}));
    let yaml = k.ok(&["get", "namespace", "team", "-o", "yaml"]).await;
    assert!(
        yaml.contains("kind: Namespace") && yaml.contains("phase: Active"),
        "{yaml}"
    );

    let described = k.ok(&["describe", "secret", "creds", "-n", "team"]).await;
    assert!(described.contains("password:  7 bytes"), "{described}");
    let described = k
        .ok(&["describe", "configmap", "settings", "-n", "team"])
        .await;
    assert!(described.contains("Events:  <none>"), "{described}");
    let described = k.ok(&["describe", "namespace", "team"]).await;
    assert!(described.contains("Status:       Active"), "{described}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosted_clusters_and_node_pools_print_their_crd_columns() {
    let (h, k) = started().await;
    k.ok(&["create", "namespace", "clusters"]).await;
    // The pull secrets of the clusters applied here (HyperShift reads them first).
    for cluster in ["demo", "old"] {
        pull_secret(&h.client, "clusters", cluster).await;
    }
    let hc = k.manifest("hc.json", &hc_manifest("demo", "clusters"));
    assert!(
        k.ok(&["apply", "--server-side", "-f", &hc])
            .await
            .contains("hostedcluster.hypershift.openshift.io/demo serverside-applied")
    );
    let waited = k
        .ok(&[
            "wait",
            "--for=condition=Available",
            "hostedcluster/demo",
            "-n",
            "clusters",
            "--timeout=60s",
        ])
        .await;
    assert!(waited.contains("condition met"), "{waited}");

    let table = rows(&k.ok(&["get", "hc", "-n", "clusters"]).await);
    assert_eq!(
        table[0],
        [
            "NAME",
            "VERSION",
            "CP VERSION",
            "KUBECONFIG",
            "PROGRESS",
            "AVAILABLE",
            "PROGRESSING",
            "MESSAGE"
        ]
    );
    assert_eq!(
        row(&table, "demo")[1..],
        [
            "demo-admin-kubeconfig",
            "Partial",
            "True",
            "False",
            "The hosted control plane is available"
        ]
    );
    let wide = rows(
        &k.ok(&["get", "hostedclusters", "-n", "clusters", "-o", "wide"])
            .await,
    );
    assert_eq!(wide[0][8..], ["CP PROGRESS", "DP PROGRESS"]);

    // The release rollout completes once nodes are ready: VERSION fills in.
    let np = serde_json::to_value(node_pool("demo-workers", "clusters", "demo", 2)).expect("json");
    k.ok(&["apply", "--server-side", "-f", &k.manifest("np.json", &np)])
        .await;
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "nodepool/demo-workers",
        "-n",
        "clusters",
        "--timeout=60s",
    ])
    .await;
    let table = rows(
        &k.until(&["get", "hc", "-n", "clusters"], &["Completed"])
            .await,
    );
    assert_eq!(
        row(&table, "demo")[1..],
        [
            "4.19.0",
            "demo-admin-kubeconfig",
            "Completed",
            "True",
            "False",
            "The hosted control plane is available"
        ]
    );
    let pools = rows(&k.ok(&["get", "np", "-n", "clusters"]).await);
    assert_eq!(
        pools[0],
        [
            "NAME",
            "CLUSTER",
            "DESIRED NODES",
            "CURRENT NODES",
            "AUTOSCALING",
            "AUTOREPAIR",
            "VERSION",
            "UPDATINGVERSION",
            "UPDATINGCONFIG",
            "MESSAGE"
        ]
    );
    // AUTOSCALING and UPDATINGVERSION are the operator's conditions (empty columns are
    // gone from the whitespace split: no autorepair, config or message).
    assert_eq!(
        row(&pools, "demo-workers")[1..],
        ["demo", "2", "2", "False", "4.19.0", "False"]
    );

    let json: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "hostedcluster",
            "demo",
            "-n",
            "clusters",
            "-o",
            "json",
        ])
        .await,
    )
    .expect("json");
    assert_eq!(json["kind"], "HostedCluster");
    assert_eq!(
        json["status"]["kubeconfig"]["name"],
        "demo-admin-kubeconfig"
    );
    let yaml = k
        .ok(&["get", "np", "demo-workers", "-n", "clusters", "-o", "yaml"])
        .await;
    assert!(yaml.contains("clusterName: demo"), "{yaml}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_shows_what_the_operator_did() {
    let (h, k) = started().await;
    k.ok(&["create", "namespace", "clusters"]).await;
    // The pull secrets of the clusters applied here (HyperShift reads them first).
    for cluster in ["demo", "old"] {
        pull_secret(&h.client, "clusters", cluster).await;
    }
    k.ok(&[
        "apply",
        "--server-side",
        "-f",
        &k.manifest("hc.json", &hc_manifest("demo", "clusters")),
    ])
    .await;
    let described = k
        .until(
            &["describe", "hc", "demo", "-n", "clusters"],
            &["Available=True: The hosted control plane is available"],
        )
        .await;
    let events = described
        .split("\nEvents:")
        .nth(1)
        .unwrap_or_else(|| panic!("no events in:\n{described}"));
    let events = rows(events);
    assert_eq!(events[0], ["Type", "Reason", "Age", "From", "Message"]);
    assert!(
        events.iter().any(|e| e[0] == "Normal"
            && e[1] == "AsExpected"
            && e[3] == "hostedcluster-controller"
            && e[4] == "Available=True: The hosted control plane is available"),
        "{events:?}"
    );
    let listed = rows(&k.ok(&["get", "events", "-n", "clusters"]).await);
    assert_eq!(
        listed[0],
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert!(
        listed.iter().skip(1).all(|e| e[3] == "hostedcluster/demo"),
        "{listed:?}"
    );

    // A release HyperShift refuses is a warning.
    let mut old = hc_manifest("old", "clusters");
    old["spec"]["release"]["image"] =
        json!("quay.io/openshift-release-dev/ocp-release:4.13.0-x86_64");
    k.ok(&[
        "apply",
        "--server-side",
        "-f",
        &k.manifest("old.json", &old),
    ])
    .await;
    let described = k
        .until(
            &["describe", "hostedcluster", "old", "-n", "clusters"],
            &["InvalidImage"],
        )
        .await;
    assert!(
        described.lines().any(|l| l.contains("Warning")
            && l.contains("InvalidImage")
            && l.contains(
                "ValidReleaseImage=False: the minimum version supported for platform Azure is"
            )),
        "{described}"
    );

    // So is a NodePool held back by an injected failure.
    h.emulator.inject_fault(Fault {
        kind: FaultKind::NodePool,
        name_contains: None,
        reason: "QuotaExceeded".into(),
        message: "Operation could not be completed as it results in exceeding approved quota"
            .into(),
        condition: None,
    });
    let np = serde_json::to_value(node_pool("workers", "clusters", "demo", 1)).expect("json");
    k.ok(&["apply", "--server-side", "-f", &k.manifest("np.json", &np)])
        .await;
    let described = k
        .until(
            &["describe", "np", "workers", "-n", "clusters"],
            &["QuotaExceeded"],
        )
        .await;
    assert!(
        described.lines().any(|l| l.contains("Warning")
            && l.contains("nodepool-controller")
            && l.contains("Ready=False: Operation could not be completed")),
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_reads_the_served_schemas() {
    let (_h, k) = started().await;
    let azure = k
        .ok(&["explain", "hostedcluster.spec.platform.azure"])
        .await;
    for line in [
        "HostedCluster",
        "hypershift.openshift.io",
        "azure defines azure specific settings",
        "subnetID\t<string> -required-",
        "location\t<string> -required-",
        "azureAuthenticationConfig\t<Object> -required-",
        "topology\t<string>",
    ] {
        assert!(azure.contains(line), "{line:?} not in:\n{azure}");
    }
    let spec = k.ok(&["explain", "nodepool.spec"]).await;
    for line in [
        "NodePool",
        "spec is the desired behavior of the NodePool.",
        "clusterName\t<string> -required-",
        "replicas\t<integer>",
        "management\t<Object> -required-",
    ] {
        assert!(spec.contains(line), "{line:?} not in:\n{spec}");
    }
    let name = k.ok(&["explain", "hc.metadata.name"]).await;
    assert!(
        name.contains("Name must be unique within a namespace"),
        "{name}"
    );
    let missing = k.run(&["explain", "nodepool.spec.nope"]).await;
    assert!(!missing.ok);
    assert!(missing.stderr.contains("nope"), "{}", missing.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_conflicts_until_forced() {
    let (h, k) = started().await;
    k.ok(&["create", "namespace", "clusters"]).await;
    // The pull secrets of the clusters applied here (HyperShift reads them first).
    for cluster in ["demo", "old"] {
        pull_secret(&h.client, "clusters", cluster).await;
    }
    let mut hc = hc_manifest("demo", "clusters");
    k.ok(&["apply", "--server-side", "-f", &k.manifest("hc.json", &hc)])
        .await;

    let newer = "quay.io/openshift-release-dev/ocp-release:4.19.1-x86_64";
    hc["spec"]["release"]["image"] = json!(newer);
    let path = k.manifest("hc-newer.json", &hc);
    let refused = k
        .run(&[
            "apply",
            "--server-side",
            "--field-manager=upgrader",
            "-f",
            &path,
        ])
        .await;
    assert!(!refused.ok, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.release.image"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--force-conflicts"),
        "{}",
        refused.stderr
    );

    let forced = k
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=upgrader",
            "--force-conflicts",
            "-f",
            &path,
        ])
        .await;
    assert!(forced.contains("serverside-applied"), "{forced}");
    let image = k
        .ok(&[
            "get",
            "hc",
            "demo",
            "-n",
            "clusters",
            "-o",
            "jsonpath={.spec.release.image}",
        ])
        .await;
    assert_eq!(image, newer);
    let managers = k
        .ok(&[
            "get",
            "hc",
            "demo",
            "-n",
            "clusters",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ])
        .await;
    assert!(managers.split(' ').any(|m| m == "upgrader"), "{managers}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_times_out_while_hypershift_refuses() {
    let (h, k) = started().await;
    h.emulator.inject_fault(Fault {
        kind: FaultKind::HostedCluster,
        name_contains: None,
        reason: "InvalidConfiguration".into(),
        message: "the service account signing key is not a valid RSA key".into(),
        condition: None,
    });
    k.ok(&["create", "namespace", "clusters"]).await;
    // The pull secrets of the clusters applied here (HyperShift reads them first).
    for cluster in ["demo", "old"] {
        pull_secret(&h.client, "clusters", cluster).await;
    }
    k.ok(&[
        "apply",
        "--server-side",
        "-f",
        &k.manifest("hc.json", &hc_manifest("demo", "clusters")),
    ])
    .await;
    let waited = k
        .run(&[
            "wait",
            "--for=condition=Available",
            "hostedcluster/demo",
            "-n",
            "clusters",
            "--timeout=3s",
        ])
        .await;
    assert!(!waited.ok, "{}", waited.stdout);
    assert!(
        waited
            .stderr
            .contains("timed out waiting for the condition"),
        "{}",
        waited.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_streams_changes() {
    let (h, k) = started().await;
    k.ok(&["create", "namespace", "clusters"]).await;
    // The pull secrets of the clusters applied here (HyperShift reads them first).
    for cluster in ["demo", "old"] {
        pull_secret(&h.client, "clusters", cluster).await;
    }
    let mut watch = k
        .command(&[
            "get",
            "hc",
            "-n",
            "clusters",
            "--watch",
            "--output-watch-events",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watch.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    // The watch is established once kubectl has listed; give it a moment, then create.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    k.ok(&[
        "apply",
        "--server-side",
        "-f",
        &k.manifest("hc.json", &hc_manifest("demo", "clusters")),
    ])
    .await;
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push(line.clone());
            let cells = rows(&line);
            let Some(cells) = cells.first() else { continue };
            if cells[0] == "MODIFIED"
                && cells.get(1).is_some_and(|n| n == "demo")
                && cells
                    .iter()
                    .any(|c| c == "The hosted control plane is available")
            {
                return true;
            }
        }
        false
    })
    .await;
    let _ = watch.kill().await;
    assert_eq!(found, Ok(true), "watch printed:\n{}", seen.join("\n"));
    let header = rows(&seen[0]);
    assert_eq!(header[0][..3], ["EVENT", "NAME", "VERSION"], "{seen:?}");
    assert!(
        seen.iter()
            .any(|l| l.starts_with("ADDED") && l.contains("demo")),
        "{seen:?}"
    );
}

/// Package Operator's kinds print their CRDs' columns (`config/crds` of PKO), and
/// `kubectl describe` shows an ObjectDeployment's conditions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_deployments_get_and_describe() {
    let (_h, k) = started().await;
    k.ok(&["create", "namespace", "addons"]).await;
    let od = json!({
        "apiVersion": "package-operator.run/v1alpha1", "kind": "ObjectDeployment",
        "metadata": {"name": "addon", "namespace": "addons"},
        "spec": {
            "selector": {"matchLabels": {"addon": "x"}},
            "template": {"metadata": {"labels": {"addon": "x"}}, "spec": {"phases": [
                {"name": "config", "objects": [{"object": {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "addon-config"}, "data": {"a": "b"}}}]}
            ]}}
        }
    });
    let path = k.manifest("od.json", &od);
    k.ok(&["apply", "--server-side", "-f", &path]).await;
    let table = k
        .until(&["get", "objectdeployments", "-A"], &["True", "False"])
        .await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "NAME",
            "AVAILABLE",
            "PROGRESSING",
            "PAUSED",
            "REVISION",
            "AGE"
        ]
    );
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[..5],
        ["addons", "addon", "True", "False", "1"],
        "{table}"
    );
    let sets = k.ok(&["get", "os", "-n", "addons", "-o", "wide"]).await;
    assert!(
        sets.lines().next().unwrap().contains("INTRANSITION"),
        "{sets}"
    );
    let described = k
        .ok(&["describe", "objectdeployment", "addon", "-n", "addons"])
        .await;
    for wanted in [
        "Latest Revision is Available.",
        "Update concluded.",
        "Template Hash:",
    ] {
        assert!(described.contains(wanted), "{wanted}:\n{described}");
    }
}
