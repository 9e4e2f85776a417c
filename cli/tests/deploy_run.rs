//! The deployment files checked beyond rendering (issue 12's "done when"), offline:
//!
//! * both kustomize overlays, as `kubectl kustomize` renders them, validate against the
//!   Kubernetes 1.32 schemas (PyPI `kubernetes-validate`, which ships them, strict: an
//!   unknown field is an error);
//! * `compose.yaml` validates against the Compose specification's JSON schema (the copy PyPI
//!   `check-jsonschema` vendors as `vendor.compose-spec`);
//! * the roles run exactly as `compose.yaml` runs them — each service's command and
//!   environment, read from the file, in its `depends_on` order, with its `restart` policy and
//!   `deploy.replicas` — as processes on this machine, and the client service creates a
//!   cluster that becomes ready and, as the stack's admin, lists the tenants;
//! * the dev overlay's pods run as the kubelet would run them — each container's command,
//!   arguments and variables (values, Secret keys, the pod's name), its volumes filled from
//!   the ConfigMaps and from the Secrets `create-secrets.sh` prints — every readiness probe
//!   answers, and a create through the gateway's Service becomes ready; the tenant's audit
//!   reader gets onto the bus through the gateway's auth callout, and an admin onboards a
//!   tenant through the admin API. The management
//!   cluster is the emulator (the `mgmt-kubeconfig` component), Azure the ARM emulator and
//!   Azurite, NATS the overlay's own StatefulSet.
//!
//! The validators and PyYAML (which reads compose.yaml here) are installed into `.venv` by
//! `scripts/setup.sh`. The validators run with the proxy variables pointed at a closed port,
//! so any attempt to fetch a schema would fail the test.
//!
//! No container engine or cluster runs here, so both runs translate what a container sees into
//! what a process on this machine sees, and nothing else (see [`Stack`], [`Cluster`]): each
//! path under a mount is rooted in a directory of the service's own, where the mount's
//! source is (a symbolic link to the shared volume, a copy of the bind-mounted file with the
//! same translation); each `host:port` of the compose network, and each `0.0.0.0:port` a
//! service listens on, becomes `127.0.0.1:<a free port>` (for the overlay: each Service's
//! name, at the port of the pod it selects). The hypersaga image's entrypoint is
//! the `hypersaga` binary; the `nats` and `azurite` images' commands are run from `.venv`
//! and `node_modules`. A test fails if anything of the compose network is left untranslated.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A tool `scripts/setup.sh` installs into `.venv`.
fn venv(tool: &str) -> PathBuf {
    let path = root().join(".venv/bin").join(tool);
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup.sh",
        path.display()
    );
    path
}

/// A validator run offline: every proxy variable names a closed port, so a fetch fails.
fn offline(tool: &str) -> Command {
    let mut cmd = Command::new(venv(tool));
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "ALL_PROXY",
    ] {
        cmd.env(var, "http://127.0.0.1:9");
    }
    cmd.env_remove("NO_PROXY").env_remove("no_proxy");
    cmd
}

/// stdout and stderr of a finished command, and whether it succeeded.
fn output(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn render(overlay: &str) -> String {
    let (ok, text) = output(
        Command::new("kubectl")
            .arg("kustomize")
            .arg(root().join("deploy/kustomize/overlays").join(overlay)),
    );
    assert!(ok, "kubectl kustomize {overlay}: {text}");
    text
}

/// The objects of a rendered overlay, as `kind/name` (kubernetes-validate's spelling).
fn objects(rendered: &str) -> BTreeSet<String> {
    rendered
        .split("\n---\n")
        .map(|doc| {
            let top = |key: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(str::trim)
                    .unwrap_or_default()
                    .to_owned()
            };
            let kind = top("kind: ").to_ascii_lowercase();
            // `metadata:` is followed by its indented keys; `name:` is the first at depth 2.
            let name = doc
                .split("\nmetadata:\n")
                .nth(1)
                .and_then(|m| {
                    m.lines()
                        .take_while(|l| l.starts_with("  "))
                        .find_map(|l| l.strip_prefix("  name: "))
                })
                .unwrap_or_default()
                .trim()
                .to_owned();
            assert!(
                !kind.is_empty() && !name.is_empty(),
                "unnamed object:\n{doc}"
            );
            format!("{kind}/{name}")
        })
        .collect()
}

fn kubernetes_validate(file: &Path) -> (bool, String) {
    output(
        offline("kubernetes-validate")
            .args(["--kubernetes-version", "1.32.0", "--strict"])
            .arg(file),
    )
}

#[test]
fn both_overlays_validate_offline_against_the_kubernetes_1_32_schemas() {
    let dir = tempfile::tempdir().unwrap();
    for overlay in ["dev", "production"] {
        let rendered = render(overlay);
        let file = dir.path().join(format!("{overlay}.yaml"));
        std::fs::write(&file, &rendered).unwrap();
        let (ok, report) = kubernetes_validate(&file);
        assert!(ok, "{overlay}: {report}");
        // Each object was validated against 1.32's schema, none skipped for want of one.
        let passed: BTreeSet<String> = report
            .lines()
            .filter_map(|l| l.split(" passed for resource ").nth(1))
            .filter_map(|l| l.strip_suffix(" against version 1.32"))
            .map(str::to_owned)
            .collect();
        let expected = objects(&rendered);
        assert!(expected.len() > 30, "{overlay}: {expected:?}");
        assert_eq!(passed, expected, "{overlay}: {report}");
    }

    // The check has teeth: a field Kubernetes 1.32 does not know, or a wrong type, fails.
    let bad = render("dev").replacen("\nspec:\n", "\nspec:\n  notAField: true\n", 1)
        + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: typo\nspec:\n  replicas: two\n";
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, bad).unwrap();
    let (ok, report) = kubernetes_validate(&file);
    assert!(!ok, "{report}");
    assert!(report.contains("notAField"), "{report}");
    assert!(
        report.contains("'two' is not of type 'integer'"),
        "{report}"
    );
}

#[test]
fn compose_validates_offline_against_the_compose_specification() {
    let check = |file: &Path| {
        output(
            offline("check-jsonschema")
                .args(["--builtin-schema", "vendor.compose-spec"])
                .arg(file),
        )
    };
    let compose = root().join("compose.yaml");
    let (ok, report) = check(&compose);
    assert!(ok && report.contains("ok -- validation done"), "{report}");

    // The check has teeth: a key the specification does not define fails.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("compose.yaml");
    let text = std::fs::read_to_string(&compose).unwrap();
    std::fs::write(
        &bad,
        text.replacen("\n  nats:\n", "\n  nats:\n    hostnme: typo\n", 1),
    )
    .unwrap();
    let (ok, report) = check(&bad);
    assert!(!ok, "{report}");
    assert!(report.contains("hostnme"), "{report}");
}

// ---------------------------------------------------------------------------------------
// compose.yaml, run as processes.

/// compose.yaml as JSON, merge keys (`<<: *anchor`) applied (PyYAML's safe loader).
fn compose() -> Value {
    let (ok, text) = output(
        Command::new(venv("python3"))
            .arg("-c")
            .arg("import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)")
            .arg(root().join("compose.yaml")),
    );
    assert!(ok, "reading compose.yaml: {text}");
    serde_json::from_str(&text).unwrap()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A free loopback port (bound, then released for the process that will listen on it), never
/// one handed out before in this test.
fn free_port() -> u16 {
    hypersaga_procs::free_port().expect("a free loopback port")
}

/// What a container sees, as this machine sees it: each service's mounts under a directory
/// of its own, and each address of the compose network on loopback.
struct Stack {
    compose: Value,
    dir: tempfile::TempDir,
    /// (service, container port) → loopback port.
    ports: Mutex<BTreeMap<(String, u16), u16>>,
}

impl Stack {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("volumes")).unwrap();
        Self {
            compose: compose(),
            dir,
            ports: Mutex::new(BTreeMap::new()),
        }
    }

    fn services(&self) -> &serde_json::Map<String, Value> {
        self.compose["services"].as_object().unwrap()
    }

    fn port(&self, service: &str, port: u16) -> u16 {
        *self
            .ports
            .lock()
            .unwrap()
            .entry((service.to_owned(), port))
            .or_insert_with(free_port)
    }

    /// Where `service`'s container filesystem is rooted here.
    fn root_of(&self, service: &str) -> PathBuf {
        self.dir.path().join("roots").join(service)
    }

    /// Makes `service`'s mounts: a named volume is a symbolic link to one shared directory, a
    /// bind-mounted file a translated copy, a tmpfs an empty directory. Returns the mount
    /// points (container paths).
    fn mount(&self, service: &str) -> Vec<String> {
        let spec = &self.services()[service];
        let base = self.root_of(service);
        let mut targets = Vec::new();
        let mut files = Vec::new();
        for volume in strs(&spec["volumes"]) {
            let parts: Vec<&str> = volume.split(':').collect();
            let (source, target) = (parts[0], parts[1]);
            let at = base.join(target.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            if source.starts_with("./") {
                files.push((root().join(source), at));
            } else {
                assert!(
                    self.compose["volumes"].get(source).is_some(),
                    "{service}: {source} is neither a file nor a named volume"
                );
                let shared = self.dir.path().join("volumes").join(source);
                std::fs::create_dir_all(&shared).unwrap();
                std::os::unix::fs::symlink(&shared, &at).unwrap();
            }
            targets.push(target.to_owned());
        }
        for tmpfs in strs(&spec["tmpfs"]) {
            std::fs::create_dir_all(base.join(tmpfs.trim_start_matches('/'))).unwrap();
            targets.push(tmpfs);
        }
        // Bind-mounted files are translated once every mount point is known.
        for (source, at) in files {
            let text = std::fs::read_to_string(&source)
                .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
            let local = self.translate(service, &targets, &text);
            self.assert_translated(service, &source.display().to_string(), &local);
            std::fs::write(&at, local).unwrap();
        }
        targets
    }

    /// Nothing of the compose network is left in `text`.
    fn assert_translated(&self, service: &str, what: &str, text: &str) {
        let left = host_ports(text, &self.names());
        assert!(
            left.is_empty() && !text.contains("0.0.0.0"),
            "{service}: {what} still names the compose network: {left:?}\n{text}"
        );
    }

    /// Every `<service>:<port>` the compose files name: what some service connects to, so
    /// what that service must be listening on before its dependants start.
    fn connected_to(&self) -> BTreeSet<(String, u16)> {
        let mut texts = Vec::new();
        for spec in self.services().values() {
            texts.extend(strs(&spec["command"]));
            if let Some(env) = spec["environment"].as_object() {
                texts.extend(env.values().map(|v| v.to_string()));
            }
            for volume in strs(&spec["volumes"]) {
                if let Some(source) = volume.split(':').next().filter(|s| s.starts_with("./")) {
                    texts.push(std::fs::read_to_string(root().join(source)).unwrap());
                }
            }
        }
        texts
            .iter()
            .flat_map(|t| host_ports(t, &self.names()))
            .collect()
    }

    /// `text` (a command argument, an environment value, a mounted file) as `service` would
    /// see it here: container paths under its mounts rooted in its directory; compose-network
    /// addresses on loopback.
    fn translate(&self, service: &str, mounts: &[String], text: &str) -> String {
        let out = root_paths(text, mounts, &self.root_of(service));
        // Addresses: `<service>:<port>` of the compose network; what `service` listens on.
        let names: Vec<String> = self.services().keys().cloned().collect();
        let mut text = out;
        for (host, port) in host_ports(&text, &names) {
            let local = self.port(&host, port);
            text = text.replace(&format!("{host}:{port}"), &format!("127.0.0.1:{local}"));
        }
        for port in listen_ports(&text) {
            let local = self.port(service, port);
            text = text
                .replace(&format!("0.0.0.0:{port}"), &format!("127.0.0.1:{local}"))
                .replace(
                    &format!("http_port: {port}"),
                    &format!("http_port: {local}"),
                );
        }
        text
    }

    /// `service`'s command line as this machine runs it, and its environment.
    fn command(&self, service: &str, mounts: &[String], args: &[String]) -> Command {
        let spec = &self.services()[service];
        let image = spec["image"].as_str().unwrap_or_default();
        let mut args: Vec<String> = args
            .iter()
            .map(|a| self.translate(service, mounts, a))
            .collect();
        // Azurite's host and port are separate flags.
        for i in 1..args.len() {
            match args[i - 1].as_str() {
                "--blobHost" if args[i] == "0.0.0.0" => args[i] = "127.0.0.1".into(),
                "--blobPort" => {
                    let port: u16 = args[i].parse().unwrap();
                    args[i] = self.port(service, port).to_string();
                }
                _ => {}
            }
        }
        // The tools the other images run, where scripts/setup.sh installs them.
        let path = format!(
            "{}:{}:{}",
            root().join(".venv/bin").display(),
            root().join("node_modules/.bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = if image.starts_with("hypersaga:") {
            // The image's entrypoint.
            let mut c = Command::new(env!("CARGO_BIN_EXE_hypersaga"));
            c.args(&args);
            c
        } else {
            let program = std::env::split_paths(&path)
                .map(|dir| dir.join(&args[0]))
                .find(|p| p.is_file())
                .unwrap_or_else(|| panic!("{service}: {} not found (scripts/setup.sh)", args[0]));
            let mut c = Command::new(program);
            c.args(&args[1..]);
            c
        };
        cmd.env_clear().env("PATH", path);
        if let Some(env) = spec["environment"].as_object() {
            for (k, v) in env {
                let v = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                cmd.env(k, self.translate(service, mounts, &v));
            }
        }
        std::fs::create_dir_all(self.root_of(service)).unwrap();
        cmd.current_dir(self.root_of(service));
        for arg in &args {
            self.assert_translated(service, "an argument", arg);
        }
        for (k, v) in cmd.get_envs() {
            let v = v
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_default();
            self.assert_translated(service, &k.to_string_lossy(), &v);
        }
        cmd
    }

    fn names(&self) -> Vec<String> {
        self.services().keys().cloned().collect()
    }

    /// The services in an order `depends_on` allows (each after everything it depends on).
    fn order(&self) -> Vec<String> {
        let mut done: Vec<String> = Vec::new();
        let mut left: Vec<String> = self.names();
        while !left.is_empty() {
            let before = left.len();
            left.retain(|s| {
                let deps = self.services()[s]["depends_on"]
                    .as_object()
                    .map(|d| d.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default();
                if deps.iter().all(|d| done.contains(d)) {
                    done.push(s.clone());
                    false
                } else {
                    true
                }
            });
            assert!(left.len() < before, "depends_on has a cycle among {left:?}");
        }
        done
    }
}

/// `text` with every container path under one of `mounts` rooted in `base`, in one pass so
/// that a rewritten path is never rewritten again.
fn root_paths(text: &str, mounts: &[String], base: &Path) -> String {
    let mut out = String::new();
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for target in mounts {
            if let Some(after) = rest.strip_prefix(target.as_str()) {
                let boundary = out.is_empty()
                    || out.ends_with(|c: char| !c.is_alphanumeric() && c != '/' && c != '.');
                if boundary
                    && (after.is_empty() || after.starts_with(['/', '"', '\'', '\n', ' ', ',']))
                {
                    out.push_str(&format!("{}{target}", base.display()));
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `<service>:<port>` occurrences in `text`, for the compose network's service names.
fn host_ports(text: &str, names: &[String]) -> BTreeSet<(String, u16)> {
    let mut found = BTreeSet::new();
    for name in names {
        let needle = format!("{name}:");
        for (i, _) in text.match_indices(&needle) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '.' || c == '_') {
                continue;
            }
            let digits: String = text[i + needle.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(port) = digits.parse() {
                found.insert((name.clone(), port));
            }
        }
    }
    found
}

/// Ports a text listens on: `0.0.0.0:<port>`, and nats-server's `http_port: <port>`.
fn listen_ports(text: &str) -> BTreeSet<u16> {
    let mut found = BTreeSet::new();
    for (prefix, _) in [("0.0.0.0:", ()), ("http_port: ", ())] {
        for (i, _) in text.match_indices(prefix) {
            let digits: String = text[i + prefix.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(port) = digits.parse() {
                found.insert(port);
            }
        }
    }
    found
}

/// A running service: its replicas, restarted as its `restart` policy says.
struct Running {
    service: String,
    replicas: Vec<Child>,
    command: Box<dyn Fn(usize) -> Command + Send>,
    restart_on_failure: bool,
    restarts: usize,
    log_dir: PathBuf,
}

impl Running {
    fn spawn(&self, replica: usize) -> Child {
        let log = |kind: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(
                    self.log_dir
                        .join(format!("{}-{replica}.{kind}", self.service)),
                )
                .unwrap()
        };
        let mut cmd = (self.command)(replica);
        // What was run, first in its log.
        use std::io::Write as _;
        let _ = writeln!(log("out"), "$ {cmd:?}");
        cmd.stdin(Stdio::null())
            .stdout(log("out"))
            .stderr(log("err"))
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.service))
    }

    /// `restart: on-failure`: a replica that exited unsuccessfully is started again.
    fn supervise(&mut self) {
        for i in 0..self.replicas.len() {
            if let Ok(Some(status)) = self.replicas[i].try_wait()
                && self.restart_on_failure
                && !status.success()
            {
                self.restarts += 1;
                self.replicas[i] = self.spawn(i);
            }
        }
    }
}

/// Every long-running service; all of them killed on drop.
struct Processes {
    running: Arc<Mutex<Vec<Running>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    supervisor: Option<std::thread::JoinHandle<()>>,
    log_dir: PathBuf,
}

impl Processes {
    fn new(log_dir: PathBuf) -> Self {
        let running: Arc<Mutex<Vec<Running>>> = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (r, s) = (running.clone(), stop.clone());
        let supervisor = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                for service in r.lock().unwrap().iter_mut() {
                    service.supervise();
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Self {
            running,
            stop,
            supervisor: Some(supervisor),
            log_dir,
        }
    }

    /// Keeps `child` (a stand-in the test started itself) to be killed with the rest; never
    /// restarted.
    fn adopt(&self, service: &str, child: Child) {
        self.running.lock().unwrap().push(Running {
            service: service.to_owned(),
            replicas: vec![child],
            command: Box::new(|_| unreachable!("a stand-in is not restarted")),
            restart_on_failure: false,
            restarts: 0,
            log_dir: self.log_dir.clone(),
        });
    }

    /// The last lines each service wrote, for a failure's message.
    fn logs(&self) -> String {
        let mut out = String::new();
        let mut entries: Vec<_> = std::fs::read_dir(&self.log_dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for path in entries {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            if !tail.is_empty() {
                out.push_str(&format!("--- {}\n{tail}\n", path.display()));
            }
        }
        out
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.join();
        }
        if let Ok(mut running) = self.running.lock() {
            for service in running.iter_mut() {
                for child in &mut service.replicas {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }
}

fn wait_for(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("{what}: not ready within {timeout:?}");
    false
}

/// `docker compose up`, then `docker compose run --rm cli cluster create demo --wait`, as
/// processes: the commands and environment variables are compose.yaml's own.
#[test]
fn the_roles_started_as_compose_starts_them_create_a_cluster() {
    hypersaga_devca::install_crypto_provider();
    let stack = Arc::new(Stack::new());
    let log_dir = stack.dir.path().join("logs");
    std::fs::create_dir_all(&log_dir).unwrap();
    let processes = Processes::new(log_dir.clone());
    macro_rules! fail {
        ($($arg:tt)*) => {
            panic!("{}\n{}", format!($($arg)*), processes.logs())
        };
    }
    let connected_to = stack.connected_to();
    assert!(
        connected_to.contains(&("nats".to_owned(), 4222))
            && connected_to.contains(&("gateway".to_owned(), 50051)),
        "{connected_to:?}"
    );

    let mut started = Vec::new();
    for service in stack.order() {
        let spec = stack.services()[&service].clone();
        if strs(&spec["profiles"]).iter().any(|p| p == "cli") {
            continue; // `docker compose up` leaves profiled services out; run below.
        }
        let mounts = stack.mount(&service);
        let args = strs(&spec["command"]);
        assert!(!args.is_empty(), "{service}: no command");
        // What its dependants wait for.
        let completes = stack
            .services()
            .values()
            .any(|s| s["depends_on"][&service]["condition"] == "service_completed_successfully");
        if completes || spec["restart"] == "no" {
            let mut cmd = stack.command(&service, &mounts, &args);
            let (ok, text) = output(&mut cmd);
            if !ok {
                fail!("{service} (one-shot) failed: {text}");
            }
            started.push(service);
            continue;
        }
        let replicas = spec["deploy"]["replicas"].as_u64().unwrap_or(1) as usize;
        let command = {
            let (stack, service, mounts, args) =
                (stack.clone(), service.clone(), mounts.clone(), args.clone());
            Box::new(move |_replica: usize| stack.command(&service, &mounts, &args))
                as Box<dyn Fn(usize) -> Command + Send>
        };
        let mut running = Running {
            service: service.clone(),
            replicas: Vec::new(),
            command,
            restart_on_failure: spec["restart"] == "on-failure",
            restarts: 0,
            log_dir: log_dir.clone(),
        };
        for i in 0..replicas {
            let child = running.spawn(i);
            running.replicas.push(child);
        }
        processes.running.lock().unwrap().push(running);
        // Compose starts a dependant once this one has started, and `restart: on-failure`
        // covers a dependant that came too early; waiting for its ports keeps that rare.
        let listens: Vec<u16> = connected_to
            .iter()
            .filter(|(s, _)| *s == service)
            .map(|(s, port)| stack.port(s, *port))
            .collect();
        for port in listens {
            if !wait_for(
                &format!("{service} on {port}"),
                Duration::from_secs(60),
                || TcpStream::connect(("127.0.0.1", port)).is_ok(),
            ) {
                fail!(
                    "{service} does not listen on 127.0.0.1:{port} (ports: {:?})",
                    stack.ports.lock().unwrap()
                );
            }
        }
        started.push(service);
    }
    // `deploy.replicas`: two coordinators, each with its own process.
    let replicas: BTreeMap<String, usize> = processes
        .running
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.service.clone(), r.replicas.len()))
        .collect();
    assert_eq!(replicas.get("coordinator"), Some(&2), "{replicas:?}");
    let mut expected: Vec<String> = [
        "certs",
        "bus-credentials",
        "nats",
        "azurite",
        "arm",
        "mgmt",
        "gateway",
        "coordinator",
        "identity",
        "network",
        "dns",
        "controlplane",
        "nodepool",
    ]
    .map(String::from)
    .to_vec();
    expected.sort();
    started.sort();
    assert_eq!(started, expected, "every service of `docker compose up`");

    // The client service, as `docker compose run --rm cli <command>` runs it: its own command
    // first (a listing), then a create that waits for the cluster to be ready.
    let cli = "cli";
    let mounts = stack.mount(cli);
    let run = |args: &[String]| -> (bool, String) {
        let mut cmd = stack.command(cli, &mounts, args);
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let own = strs(&stack.services()[cli]["command"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let listed = loop {
        // The gateway answers once the coordinator has made the streams.
        let (ok, text) = run(&own);
        if ok || Instant::now() > deadline {
            break (ok, text);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    if !listed.0 {
        fail!("cli {own:?}: {}", listed.1);
    }
    let create: Vec<String> = ["cluster", "create", "demo", "--wait"]
        .map(String::from)
        .to_vec();
    let started_at = Instant::now();
    let (ok, text) = run(&create);
    if !ok {
        fail!("cli cluster create demo --wait: {text}");
    }
    let (ok, got) = run(&["cluster", "get", "demo", "-o", "json"].map(String::from));
    assert!(ok, "{got}");
    let cluster: Value = serde_json::from_str(&got).unwrap_or_else(|e| fail!("{e}: {got}"));
    if cluster["status"]["phase"] != "ready" {
        fail!("the cluster is not ready: {cluster}");
    }
    // The admin API, as the stack's admin (the client's HYPERSAGA_ADMIN_TOKEN): the declared
    // tenant is listed.
    let (ok, got) = run(&["tenant", "list", "-o", "json"].map(String::from));
    if !ok || !got.contains("\"acme\"") {
        fail!("cli tenant list: {got}");
    }
    eprintln!(
        "compose stack: create to ready in {:.1} s; restarts: {:?}",
        started_at.elapsed().as_secs_f64(),
        processes
            .running
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.service.clone(), r.restarts))
            .filter(|(_, n)| *n > 0)
            .collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------------
// The dev overlay, run as processes.

/// Every document of a multi-document YAML text, as JSON (PyYAML's safe loader).
fn yaml_documents(text: &str) -> Vec<Value> {
    let mut child = Command::new(venv("python3"))
        .arg("-c")
        .arg("import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Standard base64 (a Secret's `data`).
fn base64_decode(text: &str) -> Vec<u8> {
    let (ok, out) = output(
        Command::new(venv("python3"))
            .arg("-c")
            .arg("import base64, sys; sys.stdout.write(base64.b64decode(sys.argv[1]).hex())")
            .arg(text),
    );
    assert!(ok, "{out}");
    (0..out.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&out[i..i + 2], 16).unwrap())
        .collect()
}

/// Kubernetes quantities of memory (`256Mi`), in bytes, as `resourceFieldRef` gives them.
fn bytes_of(quantity: &str) -> u64 {
    let units = [("Ki", 1u64 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)];
    for (suffix, factor) in units {
        if let Some(n) = quantity.strip_suffix(suffix) {
            return n.parse::<u64>().unwrap() * factor;
        }
    }
    quantity.parse().unwrap()
}

/// The rendered objects, and the Secrets `create-secrets.sh` made, as the cluster would hold
/// them; pods started from them with the files and variables the kubelet would give.
struct Cluster {
    objects: Vec<Value>,
    dir: PathBuf,
    /// (workload, container port) → loopback port.
    ports: Mutex<BTreeMap<(String, u16), u16>>,
}

impl Cluster {
    fn get(&self, kind: &str, name: &str) -> &Value {
        self.objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    fn port(&self, workload: &str, port: u16) -> u16 {
        *self
            .ports
            .lock()
            .unwrap()
            .entry((workload.to_owned(), port))
            .or_insert_with(free_port)
    }

    /// The workload whose pods a Service selects, and the container port it forwards to.
    fn backend(&self, service: &str, port: u16) -> (String, u16) {
        let svc = self.get("Service", service);
        let selector = svc["spec"]["selector"].as_object().unwrap();
        let target = svc["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["port"] == port)
            .unwrap_or_else(|| panic!("Service {service} has no port {port}"))["targetPort"]
            .clone();
        for o in &self.objects {
            if o["kind"] != "Deployment" && o["kind"] != "StatefulSet" {
                continue;
            }
            let labels = &o["spec"]["template"]["metadata"]["labels"];
            if selector.iter().all(|(k, v)| &labels[k] == v) {
                let c = &o["spec"]["template"]["spec"]["containers"][0];
                let container_port = match &target {
                    Value::Number(n) => n.as_u64().unwrap() as u16,
                    Value::String(name) => c["ports"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|p| p["name"] == name.as_str())
                        .unwrap()["containerPort"]
                        .as_u64()
                        .unwrap() as u16,
                    _ => port,
                };
                return (
                    o["metadata"]["name"].as_str().unwrap().to_owned(),
                    container_port,
                );
            }
        }
        panic!("Service {service} selects no workload");
    }

    /// `text` as a pod of `workload` sees it here: its mounts rooted in its directory, the
    /// Services' names on loopback, what it listens on at its own free ports.
    fn translate(&self, workload: &str, mounts: &[String], text: &str) -> String {
        let mut text = root_paths(text, mounts, &self.dir.join("pods").join(workload));
        let services: Vec<String> = self
            .objects
            .iter()
            .filter(|o| o["kind"] == "Service")
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        for (service, port) in host_ports(&text, &services) {
            let (backend, container_port) = self.backend(&service, port);
            let local = self.port(&backend, container_port);
            text = text.replace(&format!("{service}:{port}"), &format!("127.0.0.1:{local}"));
        }
        for port in listen_ports(&text) {
            let local = self.port(workload, port);
            text = text
                .replace(&format!("0.0.0.0:{port}"), &format!("127.0.0.1:{local}"))
                .replace(
                    &format!("http_port: {port}"),
                    &format!("http_port: {local}"),
                );
        }
        text
    }

    /// The data of a ConfigMap or Secret, by key (a Secret's decoded).
    fn data(&self, kind: &str, name: &str) -> BTreeMap<String, Vec<u8>> {
        let o = self.get(kind, name);
        o["data"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let v = v.as_str().unwrap();
                let bytes = if kind == "Secret" {
                    base64_decode(v)
                } else {
                    v.as_bytes().to_vec()
                };
                (k.clone(), bytes)
            })
            .collect()
    }

    /// A pod of `kind`/`name` as a process: its volumes as files under its directory (their
    /// text translated), its variables as the kubelet sets them, its command.
    fn pod(&self, kind: &str, name: &str, pod_name: &str) -> Command {
        let workload = self.get(kind, name);
        let spec = &workload["spec"]["template"]["spec"];
        let c = &spec["containers"][0];
        let base = self.dir.join("pods").join(name);
        let mounts: Vec<String> = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mountPath"].as_str().unwrap().to_owned())
            .collect();
        let volumes = spec["volumes"].as_array().cloned().unwrap_or_default();
        for m in c["volumeMounts"].as_array().unwrap() {
            let at = base.join(m["mountPath"].as_str().unwrap().trim_start_matches('/'));
            std::fs::create_dir_all(&at).unwrap();
            let Some(volume) = volumes.iter().find(|v| v["name"] == m["name"]) else {
                continue; // a volumeClaimTemplate: an empty directory
            };
            // (kind, name, items) of each source; no items: every key.
            let mut sources = Vec::new();
            if volume["configMap"].is_object() {
                sources.push((
                    "ConfigMap",
                    &volume["configMap"]["name"],
                    &volume["configMap"]["items"],
                ));
            }
            if volume["secret"].is_object() {
                sources.push((
                    "Secret",
                    &volume["secret"]["secretName"],
                    &volume["secret"]["items"],
                ));
            }
            for source in volume["projected"]["sources"]
                .as_array()
                .into_iter()
                .flatten()
            {
                for kind in ["ConfigMap", "Secret"] {
                    let key = if kind == "Secret" {
                        "secret"
                    } else {
                        "configMap"
                    };
                    if source[key].is_object() {
                        sources.push((kind, &source[key]["name"], &source[key]["items"]));
                    }
                }
            }
            for (kind, source, items) in sources {
                let data = self.data(kind, source.as_str().unwrap());
                let files: Vec<(String, String)> = match items.as_array() {
                    Some(items) => items
                        .iter()
                        .map(|i| {
                            (
                                i["key"].as_str().unwrap().into(),
                                i["path"].as_str().unwrap().into(),
                            )
                        })
                        .collect(),
                    None => data.keys().map(|k| (k.clone(), k.clone())).collect(),
                };
                for (key, path) in files {
                    let bytes = &data[&key];
                    let content = match std::str::from_utf8(bytes) {
                        Ok(text) => self.translate(name, &mounts, text).into_bytes(),
                        Err(_) => bytes.clone(),
                    };
                    std::fs::write(at.join(path), content).unwrap();
                }
            }
        }
        let args: Vec<String> = strs(&c["command"])
            .into_iter()
            .chain(strs(&c["args"]))
            .map(|a| self.translate(name, &mounts, &a))
            .collect();
        let mut cmd = if c["image"]
            .as_str()
            .unwrap_or_default()
            .starts_with("hypersaga")
        {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_hypersaga"));
            cmd.args(&args);
            cmd
        } else {
            let program = root().join(".venv/bin").join(&args[0]);
            assert!(
                program.is_file(),
                "{}: run scripts/setup.sh",
                program.display()
            );
            let mut cmd = Command::new(program);
            cmd.args(&args[1..]);
            cmd
        };
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(&base);
        for e in c["env"].as_array().into_iter().flatten() {
            let var = e["name"].as_str().unwrap();
            let from = &e["valueFrom"];
            let value = if let Some(v) = e["value"].as_str() {
                self.translate(name, &mounts, v)
            } else if from["secretKeyRef"].is_object() {
                let r = &from["secretKeyRef"];
                let data = self.data("Secret", r["name"].as_str().unwrap());
                String::from_utf8(data[r["key"].as_str().unwrap()].clone()).unwrap()
            } else if from["fieldRef"]["fieldPath"] == "metadata.name" {
                pod_name.to_owned()
            } else if from["resourceFieldRef"]["resource"] == "limits.memory" {
                bytes_of(c["resources"]["limits"]["memory"].as_str().unwrap()).to_string()
            } else {
                panic!("{name}: {var} is set in a way this test does not know: {e}");
            };
            cmd.env(var, value);
        }
        for arg in &args {
            assert!(!arg.contains("0.0.0.0"), "{name}: {arg}");
        }
        cmd
    }
}

/// The dev overlay with the mgmt-kubeconfig component (the management cluster is the
/// emulator, not the cluster the pods would run in), rendered outside the tree.
fn render_dev_with_a_kubeconfig(dir: &Path) -> String {
    let k = dir.join("kustomization");
    std::fs::create_dir_all(&k).unwrap();
    let rel = |p: &str| {
        let target = std::fs::canonicalize(root().join(p)).unwrap();
        let up = k.canonicalize().unwrap().components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(up),
            target.strip_prefix("/").unwrap().display()
        )
    };
    std::fs::write(
        k.join("kustomization.yaml"),
        format!(
            "resources: [{}]\ncomponents: [{}]\n",
            rel("deploy/kustomize/overlays/dev"),
            rel("deploy/kustomize/components/mgmt-kubeconfig")
        ),
    )
    .unwrap();
    let (ok, text) = output(Command::new("kubectl").arg("kustomize").arg(&k));
    assert!(ok, "{text}");
    text
}

/// The dev overlay's pods started as the kubelet would start them — each container's command
/// and arguments, its variables (values, Secret keys, its pod's name), its volumes (the
/// ConfigMaps, and the Secrets `create-secrets.sh` printed) — with the emulators and Azurite
/// standing in for Azure and the management cluster; every role ready by its readiness probe;
/// then a create through the gateway's Service to `ready`; then the tenant's audit reader, let
/// in by the auth callout, and `hypersaga tenant add` as an admin. The operator's part is done
/// as deploy/README.md says: the overlay's config.toml filled in (here with the emulators'
/// endpoints and CA, and a declared tenant with a client secret), `hypersaga bus credentials`,
/// a federation key, `create-secrets.sh`.
#[test]
fn the_roles_started_as_the_dev_overlay_starts_them_create_a_cluster() {
    hypersaga_devca::install_crypto_provider();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Not under /tmp, which the pods mount (an emptyDir): the emulators' CA, which stands in
    // for the public roots Azure's certificates chain to, must be outside every mount. The
    // target directory is, unless the checkout itself lies under /tmp (as a CI clone may);
    // then /var/tmp, which no pod mounts.
    let target_tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let outside_mounts = if target_tmp.starts_with("/tmp") {
        Path::new("/var/tmp")
    } else {
        target_tmp
    };
    let tmp = tempfile::tempdir_in(outside_mounts).unwrap();
    let d = tmp.path().to_path_buf();
    let hs = || Command::new(env!("CARGO_BIN_EXE_hypersaga"));
    let objects = yaml_documents(&render_dev_with_a_kubeconfig(&d));
    let log_dir = d.join("logs");
    std::fs::create_dir_all(&log_dir).unwrap();
    let processes = Processes::new(log_dir.clone());
    macro_rules! fail {
        ($($arg:tt)*) => {
            panic!("{}\n{}", format!($($arg)*), processes.logs())
        };
    }
    let ok = |cmd: &mut Command| {
        let (ok, text) = output(cmd);
        assert!(ok, "{cmd:?}: {text}");
        text
    };

    // The stand-ins: Azurite, the management cluster, and (once the configuration is made)
    // ARM and Entra ID, each on its own free ports.
    ok(hs()
        .args([
            "emulator",
            "certs",
            "--name",
            "nats,hypersaga-gateway,localhost,127.0.0.1",
            "--out",
        ])
        .arg(d.join("tls")));
    ok(hs()
        .args(["bus", "credentials", "--out"])
        .arg(d.join("bus")));
    let azurite = rt
        .block_on(hypersaga_procs::Azurite::start())
        .expect("Azurite (scripts/setup.sh)");
    let (mgmt, mgmt_admin) = (free_port(), free_port());
    let serve_mgmt = hs()
        .args([
            "emulator",
            "serve-mgmt",
            "--listen",
            &format!("127.0.0.1:{mgmt}"),
        ])
        .args(["--admin-listen", &format!("127.0.0.1:{mgmt_admin}")])
        .arg("--tls-cert")
        .arg(d.join("tls/server.pem"))
        .arg("--tls-key")
        .arg(d.join("tls/server-key.pem"))
        .arg("--ca-file")
        .arg(d.join("tls/ca.pem"))
        .args(["--server-url", &format!("https://127.0.0.1:{mgmt}")])
        .arg("--kubeconfig-out")
        .arg(d.join("mgmt.kubeconfig"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    processes.adopt("mgmt", serve_mgmt);

    // The operator's part (deploy/README.md, *Secrets*): the overlay's config.toml filled in,
    // with its admin, and a tenant declared in it (the overlays declare none), whose Azure
    // access is a client secret: the ARM emulator knows its principals by their secrets, not
    // by federated credentials. Its audit reader's password is declared too.
    let token = "hs_acme_deploy_run_0123456789abcdef";
    let admin_token = "hsadmin_deploy_run_0123456789abcdef";
    let audit_password = "audit_acme_deploy_run_0123456789abcdef";
    let (arm, arm_admin) = (free_port(), free_port());
    let arm_url = format!("https://127.0.0.1:{arm}");
    let config_map = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["data"]["config.toml"].is_string())
        .unwrap();
    let declared = format!(
        "\n[[tenants]]\nid = \"acme\"\ntokens = [\"{}\"]\naudit_credentials = [\"{}\"]\n\
         [tenants.azure]\ntenant_id = \"d79e5b4a-ebeb-485b-a861-e2838886f47a\"\n\
         subscription_id = \"2c90511f-a4a8-459d-b9a8-5a1d1af778c5\"\n\
         client_id = \"ab9ad434-424f-4e2f-8a70-761d4d41e057\"\n",
        hypersaga_config::TokenDigest::of(token),
        hypersaga_config::TokenDigest::of(audit_password),
    );
    let config = (config_map["data"]["config.toml"]
        .as_str()
        .unwrap()
        .to_owned()
        + &declared)
        .replace(
            "sha256:REPLACE-with-the-digest-hypersaga-token-new-prints",
            &hypersaga_config::TokenDigest::of(admin_token).to_string(),
        )
        .replace("https://management.azure.com", &arm_url)
        .replace(
            "authority_host = \"https://login.microsoftonline.com\"",
            // The emulators' CA (Azure's chain to public roots), and their pace.
            &format!(
                "authority_host = \"{arm_url}\"\nca_bundle = \"{}\"\nlro_poll_interval_ms = 500",
                d.join("tls/ca.pem").display()
            ),
        )
        .replace(
            "https://REPLACE-account.blob.core.windows.net",
            &azurite.blob_endpoint(),
        )
        .replace("REPLACE-account", hypersaga_procs::AZURITE_ACCOUNT)
        .replace(
            "https://REPLACE-keys-account.blob.core.windows.net",
            &azurite.key_store_endpoint(),
        )
        .replace(
            "REPLACE-keys-account",
            hypersaga_procs::AZURITE_KEY_STORE_ACCOUNT,
        )
        // The emulator's pace (as compose's configuration has it), not Azure's.
        .replace(
            "[kube]\n",
            "[kube]\navailable_timeout_s = 600\nrecheck_interval_ms = 1000\n",
        );
    assert!(
        !config
            .lines()
            .any(|l| !l.starts_with('#') && l.contains("REPLACE")),
        "{config}"
    );
    std::fs::write(d.join("config.toml"), &config).unwrap();
    std::fs::create_dir_all(d.join("client-secrets")).unwrap();
    std::fs::write(
        d.join("client-secrets/acme"),
        "fa3cc344859480210bd8c345817258dfaa9cfd84\n",
    )
    .unwrap();
    // hypersaga's own issuer key (the tenant above does not use it; one onboarded would).
    let federation_key = hypersaga_oidc::SigningKey::generate().unwrap();
    std::fs::write(
        d.join("federation-key.pem"),
        federation_key.private_key_pem(),
    )
    .unwrap();
    std::fs::write(d.join("blob-account-key"), hypersaga_procs::AZURITE_KEY).unwrap();
    std::fs::write(d.join("signing-keys-account-key"), azurite.key_store_key()).unwrap();
    std::fs::write(
        d.join("pull-secret.json"),
        r#"{"auths":{"registry.example.com":{"auth":"ZGV2OmRldg=="}}}"#,
    )
    .unwrap();
    if !wait_for("mgmt", Duration::from_secs(60), || {
        d.join("mgmt.kubeconfig").is_file()
    }) {
        fail!("the management-cluster emulator wrote no kubeconfig");
    }
    let secrets = ok(
        Command::new(root().join("deploy/kustomize/create-secrets.sh"))
            .env("HYPERSAGA", env!("CARGO_BIN_EXE_hypersaga"))
            .current_dir(&d)
            .args([
                "--namespace",
                "hypersaga-dev",
                "--config",
                "config.toml",
                "--bus",
                "bus",
                "--federation-key",
                "federation-key.pem",
            ])
            .args([
                "--client-secrets",
                "client-secrets",
                "--blob-account-key",
                "blob-account-key",
            ])
            .args(["--signing-keys-account-key", "signing-keys-account-key"])
            .args([
                "--pull-secret",
                "pull-secret.json",
                "--kubeconfig",
                "mgmt.kubeconfig",
            ])
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
            .args(["--nats-ca", "tls/ca.pem"]),
    );
    // The overlay as rendered after the operator filled in its config.toml.
    let mut all = objects.clone();
    for o in &mut all {
        if o["kind"] == "ConfigMap" && o["data"]["config.toml"].is_string() {
            o["data"]["config.toml"] = Value::String(config.clone());
        }
    }
    all.extend(yaml_documents(&secrets));
    let cluster = Cluster {
        objects: all,
        dir: d.clone(),
        ports: Mutex::new(BTreeMap::new()),
    };

    // ARM and Entra ID know the tenant's principal as the roles' configuration names it. (The
    // emulator, on this machine, reads the federation key where the file is here, not where
    // the pods mount it.)
    let identity_config = d.join("identity-config.json");
    let mut emulated: Value =
        serde_json::from_slice(&cluster.data("Secret", "hypersaga-identity")["config.json"])
            .unwrap();
    emulated["federation"]["signing_key_file"] =
        Value::String(d.join("federation-key.pem").display().to_string());
    std::fs::write(&identity_config, emulated.to_string()).unwrap();
    let child = hs()
        .args(["emulator", "serve-arm", "--config"])
        .arg(&identity_config)
        .args([
            "--listen",
            &format!("127.0.0.1:{arm}"),
            "--admin-listen",
            &format!("127.0.0.1:{arm_admin}"),
        ])
        .arg("--tls-cert")
        .arg(d.join("tls/server.pem"))
        .arg("--tls-key")
        .arg(d.join("tls/server-key.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    processes.adopt("arm", child);
    if !wait_for("arm", Duration::from_secs(60), || {
        TcpStream::connect(("127.0.0.1", arm)).is_ok()
    }) {
        fail!("the ARM emulator does not listen");
    }

    // NATS, then every role, as their workloads say; Kubernetes restarts what exits.
    let mut workloads = vec![("StatefulSet", "nats".to_owned(), "nats-0".to_owned())];
    for o in &cluster.objects {
        if o["kind"] == "Deployment" {
            let name = o["metadata"]["name"].as_str().unwrap().to_owned();
            workloads.push(("Deployment", name.clone(), format!("{name}-0")));
        }
    }
    assert_eq!(workloads.len(), 8, "NATS and seven roles");
    let cluster = Arc::new(cluster);
    for (kind, name, pod) in &workloads {
        let (c, kind, name2, pod2) = (cluster.clone(), *kind, name.clone(), pod.clone());
        let mut running = Running {
            service: name.clone(),
            replicas: Vec::new(),
            command: Box::new(move |_| c.pod(kind, &name2, &pod2)),
            restart_on_failure: true,
            restarts: 0,
            log_dir: log_dir.clone(),
        };
        let child = running.spawn(0);
        running.replicas.push(child);
        processes.running.lock().unwrap().push(running);
        if name == "nats" {
            let port = cluster.port("nats", 4222);
            if !wait_for("nats", Duration::from_secs(30), || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            }) {
                fail!("nats-server does not listen");
            }
        }
    }
    // Each role's readiness probe, as the kubelet asks it.
    for (kind, name, _) in &workloads {
        let o = cluster.get(kind, name);
        let c = &o["spec"]["template"]["spec"]["containers"][0];
        let Some(probe) = c["readinessProbe"]["httpGet"].as_object() else {
            continue;
        };
        let named = probe["port"].as_str().unwrap();
        let container_port = c["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == named)
            .unwrap()["containerPort"]
            .as_u64()
            .unwrap() as u16;
        let url = format!(
            "http://127.0.0.1:{}{}",
            cluster.port(name, container_port),
            probe["path"].as_str().unwrap()
        );
        let ready = wait_for(&url, Duration::from_secs(90), || {
            rt.block_on(async {
                reqwest::get(&url)
                    .await
                    .map(|r| r.status() == 200)
                    .unwrap_or(false)
            })
        });
        if !ready {
            fail!("{name} is not ready ({url})");
        }
    }

    // A caller, through the gateway's Service, with the tenant's token and the CA.
    let gateway = cluster.backend("hypersaga-gateway", 50051);
    let server = format!("https://127.0.0.1:{}", cluster.port(&gateway.0, gateway.1));
    let client = |args: &[&str]| {
        output(
            hs().env_clear()
                .env("HYPERSAGA_SERVER", &server)
                .env("HYPERSAGA_CA", d.join("tls/ca.pem"))
                .env("HYPERSAGA_TOKEN", token)
                .args(args),
        )
    };
    let started = Instant::now();
    let (created, text) = client(&["cluster", "create", "demo", "--wait"]);
    if !created {
        fail!("cluster create demo --wait: {text}");
    }
    let (got, text) = client(&["cluster", "get", "demo", "-o", "json"]);
    assert!(got, "{text}");
    let status: Value = serde_json::from_str(&text).unwrap_or_else(|e| fail!("{e}: {text}"));
    if status["status"]["phase"] != "ready" {
        fail!("the cluster is not ready: {status}");
    }
    eprintln!(
        "dev overlay: create to ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The tenant's audit reader, on the bus through NATS's Service, as user audit-acme with
    // its password: let in by the gateway's auth callout (nats-auth's auth_callout, the
    // gateway's callout.nk and callout-issuer.nk), it reads the tenant's audit events.
    let reader = d.join("audit-reader");
    std::fs::create_dir_all(&reader).unwrap();
    std::fs::write(reader.join("audit-acme.secret"), audit_password).unwrap();
    let nats = cluster.backend("nats", 4222);
    let (read, text) = output(
        hs().env_clear()
            .args([
                "audit",
                "tail",
                "--tenant",
                "acme",
                "--from-start",
                "--count",
                "1",
            ])
            .args([
                "--nats-url",
                &format!("nats://127.0.0.1:{}", cluster.port(&nats.0, nats.1)),
            ])
            .arg("--credentials-dir")
            .arg(&reader)
            .arg("--nats-ca")
            .arg(d.join("tls/ca.pem")),
    );
    if !read || !text.contains("demo") {
        fail!("audit tail as audit-acme: {text}");
    }

    // The admin API on the gateway's Service, as the configuration's admin: a tenant
    // onboarded live, told the federated credential to add (hypersaga's issuer), is listed
    // beside the declared one.
    let admin = |args: &[&str]| {
        output(
            hs().env_clear()
                .env("HYPERSAGA_SERVER", &server)
                .env("HYPERSAGA_CA", d.join("tls/ca.pem"))
                .env("HYPERSAGA_ADMIN_TOKEN", admin_token)
                .args(args),
        )
    };
    let (added, text) = admin(&[
        "tenant",
        "add",
        "globex",
        "--azure-tenant-id",
        "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "--subscription-id",
        "0b1f6471-1bf0-4dda-aec3-cb9272f09590",
        "--client-id",
        "9d3a2f5e-7c41-4b8a-a6f0-5e2b1c8d4f17",
        "-o",
        "json",
    ]);
    if !added {
        fail!("tenant add globex: {text}");
    }
    let onboarded: Value = serde_json::from_str(&text).unwrap_or_else(|e| fail!("{e}: {text}"));
    let issuer = format!("{}/hypersaga-federation", azurite.blob_endpoint());
    if !onboarded.to_string().contains(&issuer) {
        fail!("tenant add globex does not name the issuer {issuer}: {onboarded}");
    }
    let (listed, text) = admin(&["tenant", "list", "-o", "json"]);
    if !listed || !text.contains("\"acme\"") || !text.contains("\"globex\"") {
        fail!("tenant list: {text}");
    }
    drop(processes);
    drop(azurite);
}
