//! The `hypersaga` command line against a running system, as a user types it.

use serde_json::Value;

use crate::support::*;

/// What `hypersaga dev` says to try: the lines of its banner after "Try", as the variables
/// to export and the command (without `hypersaga`). Waits for the banner, which follows the
/// endpoints file.
fn banner_command(system: &System) -> (Vec<(String, String)>, Vec<String>) {
    let log = system.dir.path().join("dev.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let banner = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("Ctrl-C stops everything") {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no banner in:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let tried: Vec<&str> = banner
        .lines()
        .skip_while(|l| !l.starts_with("Try"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    let mut env = Vec::new();
    let mut command = Vec::new();
    for line in tried {
        if let Some(assignment) = line.strip_prefix("export ") {
            let (name, value) = assignment.split_once('=').expect("NAME=value");
            env.push((name.to_owned(), value.trim_matches('\'').to_owned()));
        } else {
            command = line.split_whitespace().map(str::to_owned).collect();
        }
    }
    assert_eq!(
        command.first().map(String::as_str),
        Some("hypersaga"),
        "{banner}"
    );
    (env, command[1..].to_vec())
}

/// `hypersaga dev --state-dir D`, then the banner's command pasted as printed (with what it
/// says to export) in another directory, as a second terminal would: the cluster is created,
/// each step shown before the end, and the outcome last.
#[tokio::test]
async fn the_banners_command_as_printed_creates_a_cluster_and_json_output_is_parseable() {
    let system = System::start().await;
    let (env, command) = banner_command(&system);
    assert_eq!(command, ["cluster", "create", "demo", "--wait"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
            .args(&command)
            .env_remove("HYPERSAGA_ENDPOINTS")
            .envs(env)
            .current_dir(elsewhere.path())
            .output()
            .expect("run")
    })
    .await
    .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    for expected in [
        "Creating cluster demo",
        "network.vnet",
        "succeeded",
        "controlplane.hostedcluster",
        "cluster demo is ready",
        "Resources:",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    // The end comes after every step that led to it, and the last line says how it ended.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let progress: Vec<&str> = stdout.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        progress
            .last()
            .is_some_and(|l| l.ends_with("cluster demo is ready")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("Cluster demo is ready (15/15 steps done")),
        "{stdout}"
    );

    // `audit tail | head -1`: one line, then a quiet exit as the reader goes (141, as a
    // shell reports a tool that SIGPIPE stopped), no panic.
    let out = tokio::task::spawn_blocking({
        let endpoints = system.state_dir().join("endpoints.json");
        move || {
            std::process::Command::new("bash")
                .args([
                    "-c",
                    "set -o pipefail; timeout 30 \"$0\" audit tail --from-start | head -1",
                    env!("CARGO_BIN_EXE_hypersaga"),
                ])
                .env("HYPERSAGA_ENDPOINTS", endpoints)
                .output()
                .expect("run bash")
        }
    })
    .await
    .unwrap();
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(141), "{shown}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1,
        "{shown}"
    );
    assert!(!shown.contains("panicked"), "{shown}");

    let out = hypersaga(&system, &["cluster", "get", "demo", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["status"]["phase"], "ready");
    assert_eq!(
        v["status"]["operation"]["steps"].as_array().map(Vec::len),
        Some(15)
    );

    let out = hypersaga(
        &system,
        &["cluster", "list", "-o", "json", "--tenant", "globex"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v, serde_json::json!([]), "the other tenant sees nothing");

    // Invalid input: every violation, with its field path, and a distinct exit code.
    let out = hypersaga(
        &system,
        &[
            "cluster",
            "create",
            "Bad_Name",
            "--node-pool-replicas",
            "999",
            "--subnet-cidr",
            "10.9.0.0/24",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    for field in [
        "name:",
        "spec.node_pools[0].replicas:",
        "spec.network.subnet_cidr:",
    ] {
        assert!(shown.contains(field), "missing {field} in:\n{shown}");
    }

    let out = hypersaga(&system, &["emulator", "requests", "-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v["counts"].as_array().is_some_and(|c| !c.is_empty()));

    // Faults of both kinds are listed while they are in force, and so are the management
    // cluster's.
    let ok = |args: &[&str]| {
        let out = hypersaga(&system, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    ok(&[
        "emulator",
        "fault",
        "add-async",
        "--method",
        "PUT",
        "--type",
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        "--path-contains",
        "nobody",
        "--code",
        "BadRequest",
        "--message",
        "overlapping namespaces",
    ]);
    let faults = ok(&["emulator", "fault", "list"]);
    assert!(
        faults.contains("async") && faults.contains("virtualNetworkLinks"),
        "{faults}"
    );
    ok(&["emulator", "fault", "clear"]);
    ok(&[
        "emulator",
        "cluster-fault",
        "add",
        "--kind",
        "node-pool",
        "--name-contains",
        "nobody",
        "--reason",
        "QuotaExceeded",
    ]);
    let faults = ok(&["emulator", "cluster-fault", "list"]);
    assert!(
        faults.contains("node-pool") && faults.contains("QuotaExceeded"),
        "{faults}"
    );
    ok(&["emulator", "cluster-fault", "clear"]);

    let out = hypersaga(&system, &["cluster", "delete", "demo", "--wait"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("deleted"), "{}", text(&out));
    // A succeeded delete has every step done: undone, or kept by design.
    let ops = ok(&[
        "operation",
        "list",
        "--cluster",
        "demo",
        "-o",
        "wide",
        "--no-headers",
    ]);
    let delete = ops
        .lines()
        .find(|l| l.contains(" delete "))
        .unwrap_or_default();
    assert!(
        delete.contains("succeeded") && delete.contains("15/15"),
        "{ops}"
    );
    let out = hypersaga(&system, &["cluster", "get", "demo"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "not found after delete: {}",
        text(&out)
    );

    let out = hypersaga(
        &system,
        &[
            "audit",
            "tail",
            "--cluster",
            "demo",
            "--from-start",
            "--count",
            "3",
            "-o",
            "json",
        ],
    );
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("{}"),
    )
    .expect("json line");
    assert_eq!(first["type"], "cluster.accepted");
}

/// `-o yaml|wide|name`, `--no-headers`, and an exit code for each way a command can end.
#[tokio::test]
async fn output_formats_and_exit_codes_as_scripts_use_them() {
    let system = System::start().await;
    let op = system.create("acme", "shapes", 1).await;
    let ready = system.watch_to_end("acme", "shapes").await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let ok = |args: &[&str]| {
        let out = hypersaga(&system, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    assert_eq!(ok(&["cluster", "list", "-o", "name"]), "cluster/shapes\n");
    assert_eq!(
        ok(&["cluster", "get", "shapes", "-o", "name"]),
        "cluster/shapes\n"
    );
    assert_eq!(
        ok(&["operation", "get", &op.id, "-o", "name"]),
        format!("operation/{}\n", op.id)
    );

    let table = ok(&["cluster", "list"]);
    assert!(table.starts_with("NAME "), "{table}");
    let bare = ok(&["cluster", "list", "--no-headers"]);
    assert!(
        bare.starts_with("shapes ") && bare.lines().count() == 1,
        "{bare}"
    );
    let wide = ok(&["cluster", "list", "-o", "wide"]);
    for expected in [
        "LOCATION",
        "NODE POOLS",
        "OPERATION",
        "eastus",
        "workers=1×Standard_D4s_v5",
    ] {
        assert!(wide.contains(expected), "missing {expected:?} in:\n{wide}");
    }
    let ops = ok(&["operation", "list", "-o", "wide", "--no-headers"]);
    assert!(ops.starts_with(&op.id) && ops.contains("15/15"), "{ops}");

    let yaml: Value =
        serde_norway::from_str(&ok(&["cluster", "get", "shapes", "-o", "yaml"])).expect("yaml");
    assert_eq!(yaml["status"]["phase"], "ready");
    let json: Value =
        serde_json::from_str(&ok(&["cluster", "get", "shapes", "-o", "json"])).expect("json");
    assert_eq!(yaml, json, "-o yaml is the same document as -o json");
    let yaml: Value =
        serde_norway::from_str(&ok(&["operation", "list", "-o", "yaml"])).expect("yaml");
    assert_eq!(yaml[0]["kind"], "create");

    let code = |args: &[&str]| hypersaga(&system, args).status.code();
    assert_eq!(code(&["cluster", "get", "nope"]), Some(3), "not found");
    assert_eq!(
        code(&["cluster", "create", "shapes"]),
        Some(4),
        "already exists"
    );
    assert_eq!(
        code(&["cluster", "list", "--token", "hs_not_a_token"]),
        Some(5),
        "unauthenticated"
    );
    assert_eq!(
        code(&[
            "cluster",
            "list",
            "--server",
            "https://127.0.0.1:1",
            "--token",
            "t"
        ]),
        Some(7),
        "unreachable"
    );
    assert_eq!(
        code(&["cluster", "list", "--no-such-flag"]),
        Some(2),
        "usage"
    );

    // Each way of not reaching the API says what to do, never the transport's words.
    let failed = |args: &[&str], code: i32, expected: &str| {
        let out = hypersaga(&system, args);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {shown}");
        assert!(
            shown.contains(expected),
            "{args:?}: missing {expected:?} in {shown}"
        );
        for raw in [
            "transport error",
            "h2 protocol error",
            "operation was canceled",
        ] {
            assert!(!shown.contains(raw), "{args:?}: {shown}");
        }
    };
    let token = system.token("acme");
    let address = system.endpoints.grpc.trim_start_matches("https://");
    failed(
        &[
            "cluster",
            "list",
            "--endpoints",
            "/nonexistent/endpoints.json",
        ],
        7,
        "Start `hypersaga dev`",
    );
    failed(
        &[
            "cluster",
            "list",
            "--endpoints",
            "/nonexistent/endpoints.json",
            "--server",
            &system.endpoints.grpc,
        ],
        2,
        "needs a token too: pass --token",
    );
    failed(
        &[
            "cluster",
            "list",
            "--server",
            &format!("http://{address}"),
            "--token",
            &token,
        ],
        7,
        &format!("use https://{address} with --ca FILE"),
    );
    failed(
        &[
            "cluster",
            "list",
            "--server",
            &system.endpoints.grpc,
            "--token",
            &token,
        ],
        7,
        "pass the CA bundle that signed it with --ca FILE",
    );
    failed(
        &["audit", "tail", "--tenant", "nope"],
        1,
        "unknown tenant \"nope\"",
    );
    failed(
        &["cluster", "list", "--tenant", "nope"],
        1,
        "unknown tenant \"nope\"",
    );
}

/// `--wait` outlives its gateway: the stream breaks, the CLI says so, gets it back once the
/// supervisor has restarted the gateway, and follows the create to its end.
#[tokio::test]
async fn wait_reconnects_after_the_gateway_is_killed_and_follows_to_the_end() {
    let system = System::start().await;
    // Hold the create in the middle (the load balancer fails retryably until cleared).
    system.hold_at_the_load_balancer().await;
    let waiting = std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
        .args([
            "cluster",
            "create",
            "steadfast",
            "--node-pool-replicas",
            "1",
            "--wait",
        ])
        .env(
            "HYPERSAGA_ENDPOINTS",
            system.state_dir().join("endpoints.json"),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start hypersaga cluster create --wait");
    system
        .wait_until(
            "acme",
            "steadfast",
            "the load balancer to be retried",
            |c| {
                steps(c)
                    .get("network.load-balancer")
                    .is_some_and(|(s, a)| s == "running" && *a >= 2)
            },
        )
        .await;

    let gateway = system.kill9("gateway-0");
    // Back once the supervisor has started another gateway on the same address.
    let deadline = std::time::Instant::now() + TIMEOUT;
    while system.pids().get("gateway-0") == Some(&gateway) {
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway was not restarted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    system.arm_admin().clear_faults().await.unwrap();

    let out = tokio::task::spawn_blocking(move || waiting.wait_with_output())
        .await
        .unwrap()
        .expect("wait for the CLI");
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Lost the watch on cluster steadfast"),
        "{shown}"
    );
    assert!(stderr.contains("Reconnected after"), "{shown}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("network.load-balancer"), "{shown}");
    assert!(stdout.contains("cluster steadfast is ready"), "{shown}");
}

/// What needs no running system: completion scripts and `serve --check-config`.
#[test]
fn completion_scripts_and_check_config_need_no_system() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
            .args(args)
            .env_clear()
            .envs(env.iter().copied())
            .output()
            .expect("run hypersaga")
    };
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = run(&["completion", shell], &[]);
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("hypersaga")
                && script.contains("operation")
                && script.contains("output"),
            "{shell}: {script}"
        );
    }

    // A port already taken: the check binds nothing, so it does not mind.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let digest = hypersaga_config::TokenDigest::of("0123456789abcdef-acme");
    std::fs::write(
        &config,
        format!(
            r#"
[gateway]
listen = "127.0.0.1:{port}"
[[tenants]]
id = "acme"
tokens = ["{digest}"]
[tenants.azure]
tenant_id = "t"
subscription_id = "s"
client_id = "c"
client_secret = "shh"
"#
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    // The client commands' variables are no settings: exported, they change nothing.
    let client_env = [
        ("HYPERSAGA_ENDPOINTS", "/tmp/endpoints.json"),
        ("HYPERSAGA_TOKEN", "hs_acme_0123"),
    ];
    let out = run(
        &["serve", "gateway", "--check-config", "--config", config],
        &client_env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("The configuration for the gateway role is valid."),
        "{}",
        text(&out)
    );

    // Every problem at once, each with its setting or variable; exit 2.
    let out = run(
        &["serve", "network", "--check-config", "--config", config],
        &[
            ("HYPERSAGA_WORKER__CONCURRENCY", "0"),
            ("HYPERSAGA_COORDINATOR__LEASE_MS", "1000"),
            ("HYPERSAGA_WORKER__ACK_WAIT_S", "30"),
            ("HYPERSAGA_NATS__REPLICAS", "9"),
            ("HYPERSAGA_AZURE__CA_BUNDLE", "/nonexistent/ca.pem"),
            ("HYPERSAGA_LOG_FORMAT", "json"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let shown = text(&out);
    for expected in [
        "the configuration for the network role is invalid (5 problems)",
        "HYPERSAGA_LOG_FORMAT: no setting `log_format`; did you mean HYPERSAGA_LOG__FORMAT?",
        "worker.concurrency: 0 is not allowed",
        "coordinator.lease_ms: 1000 ms is shorter than worker.ack_wait_s (30 s)",
        "nats.replicas: 9 is above the maximum 5",
        "azure.ca_bundle: cannot read /nonexistent/ca.pem",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
}

/// A TCP proxy in front of the gateway that the test can cut: its connections are dropped and
/// it accepts no more, as a network that went away does.
struct Cuttable {
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Cuttable {
    async fn to(upstream: std::net::SocketAddr) -> Cuttable {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut links = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                links.spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Cuttable { addr, task }
    }

    /// Drops every connection (the JoinSet goes with the task) and the listener.
    fn cut(&self) {
        self.task.abort();
    }
}

/// `watch` gives up once the stream stays lost for `--reconnect-timeout`, says why and how
/// to go on, and exits 7; the operation is untouched.
#[tokio::test]
async fn a_watch_that_cannot_reconnect_gives_up_in_bounded_time_with_exit_code_7() {
    let system = System::start().await;
    system.hold_at_the_load_balancer().await;
    system.create("acme", "stranded", 1).await;
    let gateway: std::net::SocketAddr = system
        .endpoints
        .grpc
        .trim_start_matches("https://")
        .parse()
        .expect("the gateway's address");
    let proxy = Cuttable::to(gateway).await;
    let watching = std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
        .args(["cluster", "watch", "stranded", "--reconnect-timeout", "3"])
        .arg("--server")
        .arg(format!("https://{}", proxy.addr))
        .arg("--ca")
        .arg(&system.endpoints.ca_bundle)
        .arg("--token")
        .arg(system.token("acme"))
        .env_remove("HYPERSAGA_ENDPOINTS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start hypersaga cluster watch");
    // Let the watch show the cluster as it is, then take the network away for good.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    proxy.cut();
    let started = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || watching.wait_with_output())
        .await
        .unwrap()
        .expect("wait for the CLI");
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(7), "{shown}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(shown.contains("cluster stranded is "), "{shown}");
    for expected in [
        "Lost the watch on cluster stranded",
        "reconnecting for up to 3 s",
        "could not get it back within 3 s",
        "follow it with `hypersaga cluster watch stranded`",
    ] {
        assert!(
            shown.contains(expected),
            "missing {expected:?} in:\n{shown}"
        );
    }
    let still = system
        .wait_until("acme", "stranded", "the cluster to be there", |_| true)
        .await;
    assert_eq!(
        phase(&still),
        "provisioning",
        "the create goes on: {still:#?}"
    );
}
